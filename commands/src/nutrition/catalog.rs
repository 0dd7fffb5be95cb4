//! The curated catalog: recipes and meal plans written by editors, each in a partition
//! of its own, carrying the sparse `catalog` index keys (`CATALOG#<kind>#<category>`,
//! `<name>#<id>`), and the browse query over that index.

use super::NutritionCommands;
use crate::idempotency::{self, Committed};
use crate::items::to_item;
use crate::meta::{CommandMeta, Outcome};
use crate::{CommandError, validate};
use events_schema::envelope::EventEnvelope;
use events_schema::events::nutrition::{MealPlanCurated, Nutrients, RecipeCurated};
use events_schema::ids::{MealPlanId, RecipeId};
use events_schema::keys::{PartitionKey, SortKey};
use infra::store::{Condition, Cursor, IndexQuery, Item, Key, Page};
use infra::table::Action;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatalogKind {
    Recipe,
    MealPlan,
}

impl CatalogKind {
    fn tag(self) -> &'static str {
        match self {
            CatalogKind::Recipe => "RECIPE",
            CatalogKind::MealPlan => "MEAL_PLAN",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurateRecipe {
    pub name: String,
    pub category: String,
    pub nutrients: Nutrients,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurateMealPlan {
    pub name: String,
    pub category: String,
    pub recipes: Vec<RecipeId>,
}

/// Categories are lowercase slugs: they are part of an index key.
fn category(raw: &str) -> Result<String, CommandError> {
    let ok = (1..=40).contains(&raw.len())
        && raw
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(raw.to_owned())
    } else {
        Err(CommandError::invalid(
            "category",
            "must be 1 to 40 of a-z, 0-9 and -",
        ))
    }
}

fn index_keys(item: &mut Item, kind: CatalogKind, category: &str, name: &str, id: &str) {
    item.insert(
        "catalog_pk".into(),
        format!("CATALOG#{}#{category}", kind.tag()).into(),
    );
    item.insert(
        "catalog_sk".into(),
        format!("{}#{id}", name.to_lowercase()).into(),
    );
}

impl NutritionCommands {
    /// Writes a catalog item and its event in the item's own partition. The editor's
    /// idempotency record lives in the editor's partition; a retry returns the first id.
    async fn curate<T: Serialize + serde::de::DeserializeOwned>(
        &self,
        meta: &CommandMeta,
        request: &impl Serialize,
        key: Key,
        mut item: Item,
        event: EventEnvelope,
        id: T,
    ) -> Result<Outcome<T>, CommandError> {
        item.insert("pk".into(), key.pk.clone().into());
        item.insert("sk".into(), key.sk.into());
        let event_item = crate::outbox::event_item(&key.pk, &event)?;
        let actions = vec![
            Action::Put {
                item,
                condition: Some(Condition::ItemNotExists),
            },
            Action::Put {
                item: event_item,
                condition: Some(Condition::ItemNotExists),
            },
        ];
        match idempotency::commit(&self.table, meta, &meta.user_pk(), request, actions, id).await? {
            Committed::Done(outcome) => Ok(outcome),
            Committed::Cancelled(reasons) => Err(idempotency::unexpected(&reasons)),
        }
    }

    fn catalog_event<P: events_schema::envelope::EventPayload>(
        &self,
        payload: &P,
    ) -> Result<EventEnvelope, CommandError> {
        // Catalog events belong to no user.
        EventEnvelope::new(None, self.clock.now(), payload)
            .map_err(|e| CommandError::Internal(format!("event does not serialize: {e}")))
    }

    pub async fn curate_recipe(
        &self,
        meta: &CommandMeta,
        input: CurateRecipe,
    ) -> Result<Outcome<RecipeId>, CommandError> {
        let name = validate::text("name", &input.name, 1, 120)?;
        let category = category(&input.category)?;
        let n = input.nutrients;
        let grams =
            |field, value| validate::decimal(field, value, Decimal::ZERO, Decimal::from(1000), 1);
        let nutrients = Nutrients {
            calories: validate::decimal(
                "calories",
                n.calories,
                Decimal::ZERO,
                Decimal::from(10_000),
                1,
            )?,
            protein_g: grams("protein_g", n.protein_g)?,
            carbs_g: grams("carbs_g", n.carbs_g)?,
            fat_g: grams("fat_g", n.fat_g)?,
        };
        let id = RecipeId::generate();
        let payload = RecipeCurated {
            recipe_id: id.clone(),
            name: name.clone(),
            category: category.clone(),
            nutrients,
        };
        let mut item = to_item(&Key::new("x", "x"), &payload)?;
        index_keys(
            &mut item,
            CatalogKind::Recipe,
            &category,
            &name,
            id.as_str(),
        );
        let event = self.catalog_event(&payload)?;
        self.curate(
            meta,
            &input,
            Key::new(
                PartitionKey::Recipe(id.clone()).to_string(),
                SortKey::Recipe.to_string(),
            ),
            item,
            event,
            id.clone(),
        )
        .await
    }

    pub async fn curate_meal_plan(
        &self,
        meta: &CommandMeta,
        input: CurateMealPlan,
    ) -> Result<Outcome<MealPlanId>, CommandError> {
        let name = validate::text("name", &input.name, 1, 120)?;
        let category = category(&input.category)?;
        if input.recipes.is_empty() || input.recipes.len() > 50 {
            return Err(CommandError::invalid(
                "recipes",
                "must list 1 to 50 recipes",
            ));
        }
        for recipe in &input.recipes {
            // A plan lists only recipes of the catalog.
            self.recipe(recipe).await?;
        }
        let id = MealPlanId::generate();
        let payload = MealPlanCurated {
            meal_plan_id: id.clone(),
            name: name.clone(),
            category: category.clone(),
            recipes: input.recipes.clone(),
        };
        let mut item = to_item(&Key::new("x", "x"), &payload)?;
        index_keys(
            &mut item,
            CatalogKind::MealPlan,
            &category,
            &name,
            id.as_str(),
        );
        let event = self.catalog_event(&payload)?;
        self.curate(
            meta,
            &input,
            Key::new(
                PartitionKey::MealPlan(id.clone()).to_string(),
                SortKey::MealPlan.to_string(),
            ),
            item,
            event,
            id.clone(),
        )
        .await
    }

    /// One page of a catalog category, by name, through the sparse `catalog` index.
    pub async fn browse_catalog(
        &self,
        kind: CatalogKind,
        raw_category: &str,
        limit: usize,
        cursor: Option<Cursor>,
    ) -> Result<Page, CommandError> {
        let category = category(raw_category)?;
        let query = IndexQuery::partition("catalog", format!("CATALOG#{}#{category}", kind.tag()))
            .limit(limit.clamp(1, 100))
            .after(cursor);
        Ok(self.table.query_index(&query).await?)
    }
}

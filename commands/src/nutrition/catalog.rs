//! The curated catalog: recipes and meal plans written by editors, each in a partition
//! of its own, carrying the sparse `catalog` index keys (`CATALOG#<kind>#<category>`,
//! `<name>#<id>`), and the browse query over that index.

use super::NutritionCommands;
use crate::items::to_item;
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic;
use crate::{CommandError, validate};
use events_schema::envelope::EventEnvelope;
use events_schema::events::nutrition::{MealPlanCurated, Nutrients, RecipeCurated};
use events_schema::ids::{MealPlanId, RecipeId};
use events_schema::keys::{PartitionKey, SortKey};
use infra::store::{Condition, Cursor, IndexQuery, Item, Key, Page};
use infra::table::Action;
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

/// A catalog item: `payload` stored under `key`, with the sparse `catalog` index keys
/// (`CATALOG#<kind>#<category>`, `<lowercased name>#<id>`).
fn catalog_item(
    key: &Key,
    payload: &impl Serialize,
    kind: CatalogKind,
    category: &str,
    name: &str,
    id: &str,
) -> Result<Item, CommandError> {
    let mut item = to_item(key, payload)?;
    item.insert(
        "catalog_pk".into(),
        format!("CATALOG#{}#{category}", kind.tag()).into(),
    );
    item.insert(
        "catalog_sk".into(),
        format!("{}#{id}", name.to_lowercase()).into(),
    );
    Ok(item)
}

/// The recipe `input` curates under `id`, and its catalog item: a name of 1 to 120
/// characters, a slug category, nutrients in range (calories to 10,000, grams to
/// 1,000, one decimal); an invalid-field error otherwise.
fn curated_recipe(
    input: &CurateRecipe,
    id: RecipeId,
) -> Result<(RecipeCurated, Key, Item), CommandError> {
    let name = validate::text("name", &input.name, 1, 120)?;
    let category = category(&input.category)?;
    let nutrients = super::meals::valid_nutrients(input.nutrients)?;
    let key = Key::new(
        PartitionKey::Recipe(id.clone()).to_string(),
        SortKey::Recipe.to_string(),
    );
    let payload = RecipeCurated {
        recipe_id: id,
        name,
        category,
        nutrients,
    };
    let item = catalog_item(
        &key,
        &payload,
        CatalogKind::Recipe,
        &payload.category,
        &payload.name,
        payload.recipe_id.as_str(),
    )?;
    Ok((payload, key, item))
}

/// The meal plan `input` curates under `id`, and its catalog item: a name, a slug
/// category, 1 to 50 recipes (that they exist is read, not decided).
fn curated_meal_plan(
    input: &CurateMealPlan,
    id: MealPlanId,
) -> Result<(MealPlanCurated, Key, Item), CommandError> {
    let name = validate::text("name", &input.name, 1, 120)?;
    let category = category(&input.category)?;
    if input.recipes.is_empty() || input.recipes.len() > 50 {
        return Err(CommandError::invalid(
            "recipes",
            "must list 1 to 50 recipes",
        ));
    }
    let key = Key::new(
        PartitionKey::MealPlan(id.clone()).to_string(),
        SortKey::MealPlan.to_string(),
    );
    let payload = MealPlanCurated {
        meal_plan_id: id,
        name,
        category,
        recipes: input.recipes.clone(),
    };
    let item = catalog_item(
        &key,
        &payload,
        CatalogKind::MealPlan,
        &payload.category,
        &payload.name,
        payload.meal_plan_id.as_str(),
    )?;
    Ok((payload, key, item))
}

impl NutritionCommands {
    /// Writes a catalog item and its event in the item's own partition. The editor's
    /// idempotency record lives in the editor's partition; a retry returns the first id.
    async fn curate<T: Serialize + serde::de::DeserializeOwned + Clone>(
        &self,
        meta: &CommandMeta,
        request: &impl Serialize,
        key: Key,
        item: Item,
        event: EventEnvelope,
        id: T,
    ) -> Result<Outcome<T>, CommandError> {
        let actions = vec![
            Action::Put {
                item,
                condition: Some(Condition::ItemNotExists),
            },
            crate::outbox::event_action(&key.pk, &event)?,
        ];
        let pk = meta.user_pk();
        optimistic::commit_through_conflicts(&self.table, meta, &pk, request, actions, id)
            .await?
            .or_unexpected()
    }

    fn catalog_event<P: events_schema::envelope::EventPayload>(
        &self,
        payload: &P,
    ) -> Result<EventEnvelope, CommandError> {
        // Catalog events belong to no user; recorded by the handler's clock, as the
        // users' events are (`outbox::envelope`).
        let now = self.clock.now();
        let mut event = EventEnvelope::new(None, now, payload)
            .map_err(|e| CommandError::Internal(format!("event does not serialize: {e}")))?;
        event.recorded_at = now;
        Ok(event)
    }

    pub async fn curate_recipe(
        &self,
        meta: &CommandMeta,
        input: CurateRecipe,
    ) -> Result<Outcome<RecipeId>, CommandError> {
        let (payload, key, item) = curated_recipe(&input, RecipeId::generate())?;
        let event = self.catalog_event(&payload)?;
        self.curate(meta, &input, key, item, event, payload.recipe_id)
            .await
    }

    pub async fn curate_meal_plan(
        &self,
        meta: &CommandMeta,
        input: CurateMealPlan,
    ) -> Result<Outcome<MealPlanId>, CommandError> {
        let (payload, key, item) = curated_meal_plan(&input, MealPlanId::generate())?;
        for recipe in &input.recipes {
            // A plan lists only recipes of the catalog.
            self.recipe(recipe).await?;
        }
        let event = self.catalog_event(&payload)?;
        self.curate(meta, &input, key, item, event, payload.meal_plan_id)
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

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::Nutrition as NUTRITION;
    use infra::access::{AccessPattern as P, Action::*, Written as W};

    /// The catalog's editors' calls (curated rows, no user's partition).
    pub static ACCESS: &[P] = &[
        P::transact(
            "curate a recipe",
            command_tx!(
                Nutrition,
                "USER#",
                [
                    W::new(Put, NUTRITION, "RECIPE#", "RECIPE"),
                    W::new(Put, NUTRITION, "RECIPE#", "EVT#"),
                ]
            ),
            "vitals admin curate-recipe (editors; not per user)",
        )
        .volume(0.0)
        .size(2, 1500),
        P::transact(
            "curate a meal plan",
            command_tx!(
                Nutrition,
                "USER#",
                [
                    W::new(Put, NUTRITION, "MEAL_PLAN#", "MEAL_PLAN"),
                    W::new(Put, NUTRITION, "MEAL_PLAN#", "EVT#"),
                ]
            ),
            "vitals admin curate-meal-plan (editors; not per user)",
        )
        .volume(0.0)
        .size(2, 2000),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal::Decimal;

    fn soup() -> CurateRecipe {
        CurateRecipe {
            name: "Lentil Soup".into(),
            category: "soups".into(),
            nutrients: Nutrients {
                calories: Decimal::from(450),
                protein_g: Decimal::from(25),
                carbs_g: Decimal::from(60),
                fat_g: Decimal::new(85, 1),
            },
        }
    }

    #[test]
    fn a_recipe_lives_in_its_own_partition_indexed_by_category_and_name() {
        let id = RecipeId::generate();
        let (recipe, key, item) = curated_recipe(&soup(), id.clone()).expect("valid");
        assert_eq!(recipe.recipe_id, id);
        assert_eq!(key.pk, PartitionKey::Recipe(id.clone()).to_string());
        assert_eq!(item["pk"], key.pk.as_str());
        assert_eq!(item["sk"], key.sk.as_str());
        assert_eq!(item["catalog_pk"], "CATALOG#RECIPE#soups");
        assert_eq!(
            item["catalog_sk"],
            format!("lentil soup#{}", id.as_str()).as_str()
        );
        assert_eq!(item["name"], "Lentil Soup");
    }

    #[test]
    fn a_recipe_out_of_range_names_its_field() {
        type Spoil = fn(&mut CurateRecipe);
        let cases: [(Spoil, &str); 5] = [
            (|r| r.category = "Soups".into(), "category"),
            (|r| r.category = String::new(), "category"),
            (|r| r.name = String::new(), "name"),
            (|r| r.nutrients.calories = Decimal::from(10_001), "calories"),
            (|r| r.nutrients.fat_g = Decimal::new(1, 2), "fat_g"),
        ];
        for (spoil, field) in cases {
            let mut input = soup();
            spoil(&mut input);
            let error = curated_recipe(&input, RecipeId::generate()).expect_err(field);
            assert!(error.to_string().contains(field), "{error} names {field}");
        }
    }

    #[test]
    fn a_meal_plan_lists_one_to_fifty_recipes() {
        let plan = |recipes: usize| CurateMealPlan {
            name: "Winter Week".into(),
            category: "winter".into(),
            recipes: (0..recipes).map(|_| RecipeId::generate()).collect(),
        };
        let id = MealPlanId::generate();
        let (payload, key, item) = curated_meal_plan(&plan(3), id.clone()).expect("valid");
        assert_eq!(
            (payload.meal_plan_id, payload.recipes.len()),
            (id.clone(), 3)
        );
        assert_eq!(key.pk, PartitionKey::MealPlan(id.clone()).to_string());
        assert_eq!(item["catalog_pk"], "CATALOG#MEAL_PLAN#winter");
        assert_eq!(
            item["catalog_sk"],
            format!("winter week#{}", id.as_str()).as_str()
        );
        for count in [0, 51] {
            let error = curated_meal_plan(&plan(count), MealPlanId::generate()).expect_err("count");
            assert!(error.to_string().contains("recipes"), "{error}");
        }
    }
}

//! Quantities as the app is shown them: JSON numbers that print as the decimals stored
//! ([`Amount`]), and a meal's or a day's nutrients in them ([`NutrientsView`]).

use events_schema::events::nutrition::Nutrients;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use serde::Serialize;

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

/// A quantity as a JSON number: `650`, `30.5`. Stored exactly as a decimal (at most a
/// few decimal places, fewer than 15 significant digits), written as the integer it is
/// or as the double nearest it, which prints as the same decimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(
    feature = "openapi",
    derive(ToSchema),
    schema(value_type = f64, example = 30.5)
)]
pub struct Amount(pub Decimal);

impl Amount {
    /// The amount as a double (for clients and tests that add numbers up).
    pub fn as_f64(self) -> f64 {
        self.0.to_f64().unwrap_or(0.0)
    }
}

impl Serialize for Amount {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = self.0.normalize();
        match (value.scale(), value.to_i64()) {
            (0, Some(whole)) => serializer.serialize_i64(whole),
            _ => serializer.serialize_f64(value.to_f64().unwrap_or(0.0)),
        }
    }
}

/// A decimal as a quantity of a view.
pub fn number(value: Decimal) -> Amount {
    Amount(value)
}

/// Energy and macronutrients.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct NutrientsView {
    /// kcal.
    pub calories: Amount,
    pub protein_g: Amount,
    pub carbs_g: Amount,
    pub fat_g: Amount,
}

impl From<Nutrients> for NutrientsView {
    fn from(n: Nutrients) -> Self {
        Self {
            calories: number(n.calories),
            protein_g: number(n.protein_g),
            carbs_g: number(n.carbs_g),
            fat_g: number(n.fat_g),
        }
    }
}

//! The wire formats of the API that are not plain serde: quantities read exactly from
//! JSON numbers (or, for compatibility, strings holding one), and dates in query strings
//! with errors that say what is wrong.

use super::error::ApiError;
use events_schema::time::Day;
use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer};
use std::str::FromStr;

/// A quantity as the app sends it: a JSON number such as `30.5` (a string such as
/// `"30.5"` is accepted too). Read from the request's text, exactly: a value with more
/// digits than can be stored is refused, never rounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity(pub Decimal);

/// Why a quantity was refused (the message follows the field's name).
const NOT_A_QUANTITY: &str = "must be a number, such as 30.5";

impl Quantity {
    /// The exact decimal a JSON number (or a string holding one) writes.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.is_empty() || text.len() > 64 {
            return None;
        }
        let exact = if text.contains(['e', 'E']) {
            Decimal::from_scientific(text).ok()
        } else {
            Decimal::from_str_exact(text).ok()
        }?;
        // Whatever a client means by "+5" or "05", JSON has no such numbers.
        let canonical_digits = text.trim_start_matches('-');
        if text.starts_with('+')
            || (canonical_digits.len() > 1
                && canonical_digits.starts_with('0')
                && !canonical_digits.starts_with("0."))
        {
            return None;
        }
        Some(Self(exact))
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The raw text of the value: a number is read from its digits, not from the
        // double a JSON parser would make of it.
        let raw = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        let text = raw.get();
        let digits = if text.starts_with('"') {
            serde_json::from_str::<String>(text).map_err(serde::de::Error::custom)?
        } else {
            text.to_owned()
        };
        Self::parse(&digits).ok_or_else(|| serde::de::Error::custom(NOT_A_QUANTITY))
    }
}

/// A whole number as the app sends it: `55`, or `55.0` (the same number in JSON), read
/// exactly; anything with a fraction or out of range is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Whole(pub u64);

const NOT_WHOLE: &str = "must be a whole number of at least 0";

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use rust_decimal::prelude::ToPrimitive;
        let Quantity(value) =
            Quantity::deserialize(deserializer).map_err(|_| serde::de::Error::custom(NOT_WHOLE))?;
        let value = value.normalize();
        match (value.scale(), value.to_u64()) {
            (0, Some(whole)) => Ok(Self(whole)),
            _ => Err(serde::de::Error::custom(NOT_WHOLE)),
        }
    }
}

impl Whole {
    /// As a `T`, or the field's rule when it does not fit.
    pub fn within<T: TryFrom<u64>>(self, field: &str, max: u64) -> Result<T, ApiError> {
        if self.0 > max {
            return Err(ApiError::validation(
                field,
                format!("must be at most {max}"),
            ));
        }
        T::try_from(self.0)
            .map_err(|_| ApiError::validation(field, format!("must be at most {max}")))
    }
}

/// A `YYYY-MM-DD` query parameter.
pub fn day(field: &'static str, raw: &str) -> Result<Day, ApiError> {
    Day::from_str(raw).map_err(|e| ApiError::validation(field, e.to_string()))
}

/// The OpenAPI schema of a timezone field: the IANA names the server knows (the tz
/// database of `chrono-tz`), so a client or a fuzzer can tell a valid name from the
/// document alone. Only documentation: the handlers check names themselves.
pub struct TimezoneName;

impl utoipa::PartialSchema for TimezoneName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some("An IANA timezone name, such as `Europe/Paris`."))
            .enum_values(Some(chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name())))
            .examples(["Europe/Paris"])
            .into()
    }
}

impl utoipa::ToSchema for TimezoneName {
    fn name() -> std::borrow::Cow<'static, str> {
        "Timezone".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Body {
        calories: Quantity,
    }

    fn read(json: &str) -> Result<Decimal, String> {
        serde_json::from_str::<Body>(json)
            .map(|b| b.calories.0)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn numbers_and_strings_read_exactly() {
        for (json, value) in [
            (r#"{"calories": 500}"#, "500"),
            (r#"{"calories": 12.5}"#, "12.5"),
            (r#"{"calories": "12.5"}"#, "12.5"),
            (r#"{"calories": 0.1}"#, "0.1"),
            (r#"{"calories": 1e2}"#, "100"),
            (r#"{"calories": -3}"#, "-3"),
        ] {
            assert_eq!(
                read(json),
                Ok(Decimal::from_str(value).expect("decimal")),
                "{json}"
            );
        }
    }

    #[test]
    fn whole_numbers_may_be_written_as_floats_without_a_fraction() {
        #[derive(Debug, Deserialize)]
        struct Body {
            n: Whole,
        }
        let read = |json: &str| {
            serde_json::from_str::<Body>(json)
                .map(|b| b.n.0)
                .map_err(|e| e.to_string())
        };
        assert_eq!(read(r#"{"n": 55}"#), Ok(55));
        assert_eq!(read(r#"{"n": 55.0}"#), Ok(55));
        for bad in [
            r#"{"n": 55.5}"#,
            r#"{"n": -1}"#,
            r#"{"n": "x"}"#,
            r#"{"n": 1e30}"#,
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn more_digits_than_can_be_stored_are_refused_not_rounded() {
        for json in [
            r#"{"calories": "1.0000000000000000000000000000001"}"#,
            r#"{"calories": 1.0000000000000000000000000000001}"#,
            r#"{"calories": "abc"}"#,
            r#"{"calories": true}"#,
            r#"{"calories": null}"#,
            r#"{"calories": "+5"}"#,
            r#"{"calories": "05"}"#,
            r#"{"calories": [1]}"#,
        ] {
            let refused = read(json).expect_err(json);
            assert!(
                refused.contains("must be a number") || refused.contains("invalid"),
                "{json}: {refused}"
            );
        }
    }
}

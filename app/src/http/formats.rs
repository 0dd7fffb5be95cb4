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
        // Scientific notation is held to the plain form's rules (rust_decimal's own
        // reading of it rounds what does not fit: 1.00000000000000000000000000001e0
        // would be 1): written out plainly first, then read exactly.
        let exact = if text.contains(['e', 'E']) {
            Decimal::from_str_exact(&plain_of_scientific(text)?).ok()
        } else if is_plain_number(text) {
            Decimal::from_str_exact(text).ok()
        } else {
            // rust_decimal also reads "1_000" and "1.": no JSON number is written so.
            None
        }?;
        // Whatever a client means by "+5" or "05", JSON has no such numbers.
        let mantissa = text.split_once(['e', 'E']).map_or(text, |(m, _)| m);
        let canonical_digits = mantissa.trim_start_matches('-');
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

/// A JSON number without an exponent: `-?digits(.digits)?` (the leading zeros are
/// checked apart).
fn is_plain_number(text: &str) -> bool {
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    match unsigned.split_once('.') {
        Some((whole, fraction)) => digits(whole) && digits(fraction),
        None => digits(unsigned),
    }
}

/// The most integer digits and decimal places a stored quantity can have (rust_decimal:
/// a 96-bit integer, at most 28 places).
const MAX_INTEGER_DIGITS: i64 = 29;
const MAX_SCALE: i64 = 28;

/// The plain decimal text of a JSON number in scientific notation (`1.5e2`: `150`,
/// `-25e-1`: `-2.5`), without the zeros that do not change its value, so that the exact
/// reading of the plain form decides whether it can be stored. `None` when the text is
/// not such a number, or its first significant digit lies beyond what can be stored.
fn plain_of_scientific(text: &str) -> Option<String> {
    let is_digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let (mantissa, exponent) = text.split_once(['e', 'E'])?;
    let (negative, unsigned) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa),
    };
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((whole, fraction)) if is_digits(fraction) => (whole, fraction),
        Some(_) => return None,
        None => (unsigned, ""),
    };
    if !is_digits(whole) {
        return None;
    }
    let unsigned_exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    if !is_digits(unsigned_exponent) {
        return None;
    }
    // An exponent too long for an i64 is far beyond anything storable, unless the
    // mantissa is zero: refused either way, as the plain form of such a zero is.
    let exponent: i64 = exponent.parse().ok()?;
    // The value is 0.<digits> x 10^point, with no leading or trailing zero in digits.
    let digits = format!("{whole}{fraction}");
    let leading = digits.len() - digits.trim_start_matches('0').len();
    let digits = digits.trim_matches('0');
    if digits.is_empty() {
        return Some("0".to_owned());
    }
    let point = i64::try_from(whole.len())
        .ok()?
        .checked_sub(i64::try_from(leading).ok()?)?
        .checked_add(exponent)?;
    if !(-MAX_SCALE..=MAX_INTEGER_DIGITS).contains(&point) {
        return None;
    }
    let sign = if negative { "-" } else { "" };
    let shift = usize::try_from(point.unsigned_abs()).ok()?;
    Some(if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat(shift))
    } else if shift >= digits.len() {
        format!("{sign}{digits}{}", "0".repeat(shift - digits.len()))
    } else {
        let (whole, fraction) = digits.split_at(shift);
        format!("{sign}{whole}.{fraction}")
    })
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
            (r#"{"calories": 1.5e2}"#, "150"),
            (r#"{"calories": 1.5E+2}"#, "150"),
            (r#"{"calories": 15e-1}"#, "1.5"),
            (r#"{"calories": -2.5e-3}"#, "-0.0025"),
            (r#"{"calories": 0e5}"#, "0"),
            (r#"{"calories": 0.001e3}"#, "1"),
            (r#"{"calories": 1e-28}"#, "0.0000000000000000000000000001"),
            (
                r#"{"calories": 7.9228162514264337593543950335e28}"#,
                "79228162514264337593543950335",
            ),
            (
                r#"{"calories": 1.0000000000000000000000000001e0}"#,
                "1.0000000000000000000000000001",
            ),
            (r#"{"calories": "2.5e1"}"#, "25"),
            // Zeros that do not change the value do not count against the digits.
            (
                r#"{"calories": 1.0000000000000000000000000000000000e0}"#,
                "1",
            ),
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
            // Scientific notation is held to the plain form's limits: these would be
            // 1 and 100 if rounded.
            r#"{"calories": 1.00000000000000000000000000001e0}"#,
            r#"{"calories": 99.99999999999999999999999999999e0}"#,
            r#"{"calories": "1.00000000000000000000000000001e0"}"#,
            r#"{"calories": 1e-29}"#,
            r#"{"calories": 1e30}"#,
            r#"{"calories": 1e999999999}"#,
            r#"{"calories": 1e99999999999999999999}"#,
            r#"{"calories": "05e1"}"#,
            r#"{"calories": "1e"}"#,
            r#"{"calories": "1.5e+"}"#,
            r#"{"calories": "e5"}"#,
            r#"{"calories": "1e2.5"}"#,
            r#"{"calories": "1.e2"}"#,
            r#"{"calories": ".5e2"}"#,
            // rust_decimal reads these; no JSON number is written so.
            r#"{"calories": "1_000"}"#,
            r#"{"calories": "1."}"#,
            r#"{"calories": ".5"}"#,
            r#"{"calories": "-"}"#,
        ] {
            let refused = read(json).expect_err(json);
            assert!(
                refused.contains("must be a number") || refused.contains("invalid"),
                "{json}: {refused}"
            );
        }
    }
}

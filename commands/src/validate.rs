//! Input validation shared by the handlers. Each check names the field and the reason.

use crate::CommandError;
use chrono_tz::Tz;
use events_schema::time::{Day, Timestamp};
use rust_decimal::Decimal;

/// Trimmed text of `min..=max` characters without control characters.
pub fn text(
    field: &'static str,
    value: &str,
    min: usize,
    max: usize,
) -> Result<String, CommandError> {
    let trimmed = value.trim();
    let count = trimmed.chars().count();
    if count < min || count > max {
        return Err(CommandError::invalid(
            field,
            format!("must be {min} to {max} characters"),
        ));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(CommandError::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok(trimmed.to_owned())
}

/// A decimal within `[min, max]` with at most `scale` decimal places.
pub fn decimal(
    field: &'static str,
    value: Decimal,
    min: Decimal,
    max: Decimal,
    scale: u32,
) -> Result<Decimal, CommandError> {
    if value < min || value > max {
        return Err(CommandError::invalid(
            field,
            format!("must be between {min} and {max}"),
        ));
    }
    if value.normalize().scale() > scale {
        return Err(CommandError::invalid(
            field,
            format!("must have at most {scale} decimal places"),
        ));
    }
    Ok(value.normalize())
}

/// An IANA timezone name.
pub fn timezone(field: &'static str, name: &str) -> Result<Tz, CommandError> {
    name.parse::<Tz>()
        .map_err(|_| CommandError::invalid(field, "must be an IANA timezone such as Europe/Paris"))
}

/// The calendar day of `at` in `tz`.
pub fn day_in(at: Timestamp, tz: Tz) -> Day {
    Day::new(at.datetime().with_timezone(&tz).date_naive())
}

/// An instant no earlier than 2000 and no later than a day after `now`.
pub fn instant(
    field: &'static str,
    at: Timestamp,
    now: Timestamp,
) -> Result<Timestamp, CommandError> {
    let earliest = Timestamp::parse("2000-01-01T00:00:00.000Z")
        .map_err(|e| CommandError::invalid(field, e.to_string()))?;
    let latest = now.millis() + 24 * 3600 * 1000;
    if at < earliest || at.millis() > latest {
        return Err(CommandError::invalid(
            field,
            "must be between 2000-01-01 and tomorrow",
        ));
    }
    Ok(at)
}

/// A normalized email: trimmed, lowercased, one `@` with text on both sides, no spaces,
/// at most 254 characters.
pub fn email(field: &'static str, raw: &str) -> Result<String, CommandError> {
    let email = raw.trim().to_lowercase();
    let bad = || CommandError::invalid(field, "must be an email address");
    if email.len() > 254 || email.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad());
    }
    match email.split_once('@') {
        Some((local, domain))
            if !local.is_empty()
                && domain.contains('.')
                && !domain.contains('@')
                && !domain.starts_with('.')
                && !domain.ends_with('.') =>
        {
            Ok(email)
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn emails_are_normalized() {
        assert_eq!(
            email("email", "  Ana@Example.COM ").expect("valid"),
            "ana@example.com"
        );
        for bad in [
            "", "a", "a@b", "@b.c", "a@.c", "a b@c.d", "a@b@c.d", "a@b.c.",
        ] {
            assert!(email("email", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn days_follow_the_timezone() {
        let at = Timestamp::parse("2026-01-01T23:30:00.000Z").expect("valid");
        assert_eq!(
            day_in(at, timezone("tz", "UTC").expect("tz")).to_string(),
            "2026-01-01"
        );
        assert_eq!(
            day_in(at, timezone("tz", "Europe/Paris").expect("tz")).to_string(),
            "2026-01-02"
        );
        assert_eq!(
            day_in(at, timezone("tz", "America/New_York").expect("tz")).to_string(),
            "2026-01-01"
        );
        assert!(timezone("tz", "Mars/Olympus").is_err());
    }

    proptest! {
        #[test]
        fn validators_never_panic(s in any::<String>(), mantissa in any::<i64>(), scale in 0u32..28) {
            let _ = text("f", &s, 1, 50);
            let _ = email("f", &s);
            let _ = timezone("f", &s);
            let d = Decimal::new(mantissa, scale);
            let _ = decimal("f", d, Decimal::ZERO, Decimal::from(10_000), 2);
        }
    }
}

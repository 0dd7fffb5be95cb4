//! Calendar values that appear inside keys. Each has one fixed-width text form, so
//! byte order of keys is chronological order.

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, Timelike, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Why a calendar value did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{raw:?} is {}", if *.real_shape { format!("not a real {what}") } else { format!("not a {what} ({form})") })]
pub struct TimeFormatError {
    pub what: &'static str,
    pub form: &'static str,
    pub raw: String,
    /// The text has the right shape but names no such day or instant (`2026-02-30`).
    pub real_shape: bool,
}

/// A calendar day in the user's timezone, written `YYYY-MM-DD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(value_type = String, format = Date, example = "2026-03-01")
)]
pub struct Day(NaiveDate);

impl Day {
    pub fn new(date: NaiveDate) -> Self {
        Self(date)
    }

    pub fn date(self) -> NaiveDate {
        self.0
    }

    pub fn parse(raw: &str) -> Result<Self, TimeFormatError> {
        // chrono accepts years of any width; keys need exactly ten characters.
        let err = |real_shape| TimeFormatError {
            what: "date",
            form: "YYYY-MM-DD",
            raw: raw.to_owned(),
            real_shape,
        };
        let shaped = raw.len() == 10
            && raw.bytes().enumerate().all(|(i, b)| match i {
                4 | 7 => b == b'-',
                _ => b.is_ascii_digit(),
            });
        if !shaped {
            return Err(err(false));
        }
        // Only the canonical form is accepted, so text and value are one to one.
        NaiveDate::parse_from_str(raw, "%Y-%m-%d")
            .map(Self)
            .ok()
            .filter(|day| day.to_string() == raw)
            .ok_or_else(|| err(true))
    }
}

impl fmt::Display for Day {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.format("%Y-%m-%d"))
    }
}

impl FromStr for Day {
    type Err = TimeFormatError;
    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        Self::parse(raw)
    }
}

impl TryFrom<String> for Day {
    type Error = TimeFormatError;
    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::parse(&raw)
    }
}

impl From<Day> for String {
    fn from(day: Day) -> String {
        day.to_string()
    }
}

/// An instant, stored in UTC to the millisecond and always written
/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (the form keys sort by). Read from any RFC 3339 date-time
/// (an offset or `Z`, with or without fractional seconds; digits past the millisecond
/// are dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(value_type = String, format = DateTime, example = "2026-03-01T08:00:00.000Z")
)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    pub fn now() -> Self {
        Self::from_datetime(Utc::now())
    }

    /// Truncates to milliseconds, the precision of the text form.
    pub fn from_datetime(at: DateTime<Utc>) -> Self {
        let millis = at.timestamp_millis();
        Self(DateTime::from_timestamp_millis(millis).unwrap_or(at))
    }

    pub fn from_millis(millis: i64) -> Option<Self> {
        DateTime::from_timestamp_millis(millis).map(Self)
    }

    pub fn datetime(self) -> DateTime<Utc> {
        self.0
    }

    pub fn millis(self) -> i64 {
        self.0.timestamp_millis()
    }

    /// Whole minutes from this instant to `end` (0 when `end` is not later): how long a
    /// sleep session lasted.
    pub fn minutes_until(self, end: Timestamp) -> i64 {
        ((end.millis() - self.millis()) / 60_000).max(0)
    }

    /// The canonical form only (`YYYY-MM-DDTHH:MM:SS.mmmZ`): keys hold it, and a key
    /// must parse back to the very same text.
    pub fn parse(raw: &str) -> Result<Self, TimeFormatError> {
        let err = || TimeFormatError {
            what: "timestamp",
            form: "YYYY-MM-DDTHH:MM:SS.mmmZ",
            raw: raw.to_owned(),
            real_shape: false,
        };
        if raw.len() != 24 || !raw.ends_with('Z') {
            return Err(err());
        }
        let body = raw.get(..23).ok_or_else(err)?;
        NaiveDateTime::parse_from_str(body, "%Y-%m-%dT%H:%M:%S%.3f")
            .map(|naive| Self(naive.and_utc()))
            .ok()
            .filter(|ts| ts.to_string() == raw)
            .ok_or_else(err)
    }

    /// Any RFC 3339 date-time: `2026-09-02T05:30:00Z`, `2026-09-02T07:30:00+02:00`,
    /// `2026-09-02T05:30:00.123456Z`... Digits past the millisecond are dropped.
    pub fn parse_rfc3339(raw: &str) -> Result<Self, TimeFormatError> {
        DateTime::parse_from_rfc3339(raw)
            .map(|at| Self::from_datetime(at.with_timezone(&Utc)))
            .map_err(|e| TimeFormatError {
                what: "date-time",
                form: "RFC 3339, such as 2026-03-01T08:00:00Z",
                raw: raw.to_owned(),
                // chrono says "out of range" for a well-formed text naming no instant.
                real_shape: e.kind() == chrono::format::ParseErrorKind::OutOfRange,
            })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true))
    }
}

impl FromStr for Timestamp {
    type Err = TimeFormatError;
    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        Self::parse(raw)
    }
}

impl TryFrom<String> for Timestamp {
    type Error = TimeFormatError;
    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::parse_rfc3339(&raw)
    }
}

impl From<Timestamp> for String {
    fn from(ts: Timestamp) -> String {
        ts.to_string()
    }
}

/// Where "now" comes from: the system clock, or a clock a test (or a simulation) sets and
/// advances. Handlers hold one, so time-dependent rules of the domain (a meal may be at
/// most a day in the future, a goal counts from the day it was set) can be tested at any
/// moment. Transport and storage checks (a webhook's freshness, token expiry, TTLs) keep
/// to real time.
#[derive(Debug, Clone, Default)]
pub enum Clock {
    #[default]
    System,
    /// Milliseconds since the epoch, shared by every clone.
    Manual(std::sync::Arc<std::sync::atomic::AtomicI64>),
}

impl Clock {
    /// A manual clock showing `at`.
    pub fn manual(at: Timestamp) -> Self {
        Clock::Manual(std::sync::Arc::new(std::sync::atomic::AtomicI64::new(
            at.millis(),
        )))
    }

    pub fn now(&self) -> Timestamp {
        match self {
            Clock::System => Timestamp::now(),
            Clock::Manual(millis) => {
                Timestamp::from_millis(millis.load(std::sync::atomic::Ordering::SeqCst))
                    .unwrap_or_else(Timestamp::now)
            }
        }
    }

    /// Sets a manual clock (a system clock ignores it).
    pub fn set(&self, at: Timestamp) {
        if let Clock::Manual(millis) = self {
            millis.store(at.millis(), std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// An hour bucket in UTC, written `YYYY-MM-DDTHH`, used by the environment cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hour(DateTime<Utc>);

impl Hour {
    pub fn containing(at: DateTime<Utc>) -> Self {
        let floored = at
            .with_nanosecond(0)
            .and_then(|t| t.with_second(0))
            .and_then(|t| t.with_minute(0))
            .unwrap_or(at);
        Self(floored)
    }

    pub fn start(self) -> DateTime<Utc> {
        self.0
    }

    pub fn parse(raw: &str) -> Result<Self, TimeFormatError> {
        let err = || TimeFormatError {
            what: "hour",
            form: "YYYY-MM-DDTHH",
            raw: raw.to_owned(),
            real_shape: false,
        };
        if raw.len() != 13 {
            return Err(err());
        }
        NaiveDateTime::parse_from_str(&format!("{raw}:00:00"), "%Y-%m-%dT%H:%M:%S")
            .map(|naive| Self(naive.and_utc()))
            .ok()
            .filter(|hour| hour.to_string() == raw)
            .ok_or_else(err)
    }
}

impl fmt::Display for Hour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.format("%Y-%m-%dT%H"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The canary of `scripts/test-at-instants`: run under libfaketime with
    /// `VITALS_EXPECT_WALL_CLOCK_DAY` set, the system clock shows that day (UTC), so the
    /// faked instant is the one the suites run at. Without the variable there is nothing
    /// to expect, and the script counts a run that did not say "1 passed" as failed.
    #[test]
    fn the_wall_clock_shows_the_day_a_run_expects() {
        let Ok(expected) = std::env::var("VITALS_EXPECT_WALL_CLOCK_DAY") else {
            return;
        };
        let today = Clock::System.now().datetime().date_naive().to_string();
        assert_eq!(today, expected, "the wall clock is not on the expected day");
    }

    #[test]
    fn day_round_trips_and_rejects_loose_forms() {
        let day = Day::parse("2026-03-09").expect("valid day");
        assert_eq!(day.to_string(), "2026-03-09");
        for bad in [
            "2026-3-9",
            "2026-02-30",
            "26-03-09",
            "2026-03-09T",
            "+02026-03-0",
        ] {
            assert!(Day::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn minutes_until_counts_whole_minutes_and_never_goes_negative() {
        let start = Timestamp::parse("2026-03-01T22:30:00.000Z").expect("valid");
        let end = Timestamp::parse("2026-03-02T06:29:59.999Z").expect("valid");
        assert_eq!(start.minutes_until(end), 479);
        assert_eq!(end.minutes_until(start), 0);
        assert_eq!(start.minutes_until(start), 0);
    }

    #[test]
    fn timestamp_text_is_fixed_width_and_sorts_chronologically() {
        let early = Timestamp::parse("2026-01-02T03:04:05.006Z").expect("valid");
        let late = Timestamp::from_millis(early.millis() + 1).expect("in range");
        assert_eq!(early.to_string(), "2026-01-02T03:04:05.006Z");
        assert!(early.to_string() < late.to_string());
        assert!(Timestamp::parse("2026-01-02T03:04:05Z").is_err());
    }

    #[test]
    fn any_rfc3339_instant_reads_into_the_canonical_form() {
        for (raw, canonical) in [
            ("2026-09-02T05:30:00Z", "2026-09-02T05:30:00.000Z"),
            ("2026-09-02T07:30:00+02:00", "2026-09-02T05:30:00.000Z"),
            ("2026-09-02T05:30:00.5Z", "2026-09-02T05:30:00.500Z"),
            (
                "2026-09-02T05:30:00.123456789-00:00",
                "2026-09-02T05:30:00.123Z",
            ),
            ("2026-09-02t05:30:00z", "2026-09-02T05:30:00.000Z"),
        ] {
            let at: Timestamp = serde_json::from_value(serde_json::json!(raw)).expect(raw);
            assert_eq!(at.to_string(), canonical, "{raw}");
        }
        for bad in [
            "2026-09-02",
            "2026-09-02 05:30:00",
            "yesterday",
            "2026-02-30T00:00:00Z",
        ] {
            assert!(Timestamp::parse_rfc3339(bad).is_err(), "{bad}");
        }
        let not_real = Timestamp::parse_rfc3339("2026-02-30T00:00:00Z").expect_err("no such day");
        assert!(not_real.to_string().contains("not a real"), "{not_real}");
    }

    #[test]
    fn a_day_that_does_not_exist_is_told_apart_from_a_bad_form() {
        let not_real = Day::parse("2026-02-30").expect_err("no such day");
        assert_eq!(not_real.to_string(), "\"2026-02-30\" is not a real date");
        let bad_form = Day::parse("2026-2-3").expect_err("bad form");
        assert_eq!(
            bad_form.to_string(),
            "\"2026-2-3\" is not a date (YYYY-MM-DD)"
        );
    }

    #[test]
    fn hour_floors_and_round_trips() {
        let at = Timestamp::parse("2026-01-02T03:04:05.006Z")
            .expect("valid")
            .datetime();
        let hour = Hour::containing(at);
        assert_eq!(hour.to_string(), "2026-01-02T03");
        assert_eq!(Hour::parse("2026-01-02T03"), Ok(hour));
    }

    proptest! {
        #[test]
        fn parsers_never_panic(raw in any::<String>()) {
            let _ = Day::parse(&raw);
            let _ = Timestamp::parse(&raw);
            let _ = Hour::parse(&raw);
        }

        #[test]
        fn timestamp_order_is_text_order(a in 0i64..4_102_444_800_000, b in 0i64..4_102_444_800_000) {
            let (ta, tb) = (Timestamp::from_millis(a).expect("range"), Timestamp::from_millis(b).expect("range"));
            prop_assert_eq!(ta.cmp(&tb), ta.to_string().cmp(&tb.to_string()));
            prop_assert_eq!(Timestamp::parse(&ta.to_string()), Ok(ta));
        }
    }
}

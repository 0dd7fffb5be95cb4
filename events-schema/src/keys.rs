//! Builders and parsers for every key of the key map in DESIGN.md, and of the few
//! bookkeeping items the commands add to it (`MEAL_REF#`, `IDEMPOTENCY#`, `DELIVERY#`,
//! `PROVIDER_USER#`).
//!
//! Keys are strings made of a kind tag and `#`-separated parts. Ids and calendar values
//! can never contain `#`, so every key built here parses back to the same value, and a
//! malformed key is a [`KeyError`], never a panic.

use crate::ids::{
    ConsumerName, DeliveryId, EventId, ExternalId, Geohash, GoalId, IdError, MealId, MealPlanId,
    OAuthState, OperationName, ProviderName, ProviderUserId, RecipeId, RequestKey, ScheduledMealId,
    SessionId, SleepId, TrainingBlockId, UserId, WorkoutId,
};
use crate::time::{Day, Hour, TimeFormatError, Timestamp};
use std::fmt;
use std::str::FromStr;

/// The delimiter between the parts of a key.
pub const DELIMITER: char = '#';

/// Why a key did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("unknown key kind in {0:?}")]
    UnknownKind(String),
    #[error("key {key:?} should have {expected} parts after its kind")]
    WrongArity { key: String, expected: usize },
    #[error("bad id in key: {0}")]
    Id(#[from] IdError),
    #[error("bad time in key: {0}")]
    Time(#[from] TimeFormatError),
    #[error("bad email in key: {0:?}")]
    Email(String),
}

/// A partition key (`pk`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PartitionKey {
    /// `USER#<id>`: every user-owned item of every context.
    User(UserId),
    /// `EMAIL#<normalized email>`: the identity context's email reservation.
    Email(String),
    /// `RECIPE#<id>`: a curated catalog recipe.
    Recipe(RecipeId),
    /// `MEAL_PLAN#<id>`: a curated catalog meal plan.
    MealPlan(MealPlanId),
    /// `OAUTH_STATE#<state>`: a pending OAuth connect.
    OAuthState(OAuthState),
    /// `WEATHER#<geohash>#<hour>`: cached weather.
    Weather(Geohash, Hour),
    /// `AIR#<geohash>#<hour>`: cached air quality.
    Air(Geohash, Hour),
    /// `PROVIDER_USER#<provider>#<provider-user-id>`: which user a provider's webhook is about.
    ProviderUser(ProviderName, ProviderUserId),
    /// `ERASED#<digest>`: an erased account's tombstone in each context's table. The
    /// digest (see [`erased`]) names the user without holding their id.
    Erased(Digest),
    /// `TRIES#<digest>#<minute>`: how many times a credential of one subject (an
    /// account's email, a user's password) was tried in one minute since the epoch,
    /// counted by every process together. The digest names the subject without holding
    /// it.
    Tries(Digest, u64),
    /// `JOB#readiness`: the nightly readiness job's progress, a `RUN#<date>` item per day
    /// (insights table): how far through the day's active users it is.
    ReadinessJob,
}

/// A SHA-256 (hex) naming what a key must not hold: an erased account's user id (its
/// tombstone, [`Digest::erasure`]), a subject whose credential is tried
/// ([`Digest::tries`]). Each is hashed under a purpose of its own, so no digest of one
/// is a digest of the other.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Digest(String);

impl Digest {
    /// Names an erased account's tombstone. A user id is a random ULID, so once the
    /// account is gone nothing links the digest to a person; the digest still lets every
    /// context check "is this user erased?" in one read.
    pub fn erasure(user: &UserId) -> Self {
        Self::of(&format!("vitals-erasure:{user}"))
    }

    /// Names a subject whose credential is tried (see [`PartitionKey::Tries`]).
    pub fn tries(subject: &str) -> Self {
        Self::of(&format!("vitals-tries:{subject}"))
    }

    fn of(text: &str) -> Self {
        use sha2::{Digest as _, Sha256};
        use std::fmt::Write as _;
        let digest = Sha256::digest(text.as_bytes());
        let mut hex = String::with_capacity(2 * digest.len());
        for byte in digest {
            // Writing to a String cannot fail.
            let _ = write!(hex, "{byte:02x}");
        }
        Self(hex)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Digest {
    type Err = KeyError;

    fn from_str(raw: &str) -> Result<Self, KeyError> {
        let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        if raw.len() == 64 && raw.bytes().all(hex) {
            Ok(Self(raw.to_owned()))
        } else {
            Err(KeyError::UnknownKind(format!("not a digest: {raw}")))
        }
    }
}

/// The tombstone key of an erased (or being erased) user, the same in every table.
pub fn erased(user: &UserId) -> (PartitionKey, SortKey) {
    (
        PartitionKey::Erased(Digest::erasure(user)),
        SortKey::Tombstone,
    )
}

/// A sort key (`sk`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SortKey {
    Profile,
    /// The email reservation item's sort key.
    Email,
    Meal(Day, MealId),
    DailySummary(Day),
    ScheduledMeal(Day, ScheduledMealId),
    TrainingLoad(Day),
    Workout(Day, WorkoutId),
    External(ProviderName, ExternalId),
    TrainingBlock(Day, TrainingBlockId),
    Intake(Day),
    Sleep(Day, SleepId),
    Goal(GoalId),
    Progress(GoalId, Timestamp),
    ActWorkout(Day, WorkoutId),
    NutDaily(Day),
    SleepNight(Day),
    Connection(ProviderName),
    ActiveDay(Day),
    Readiness(Day),
    Daily(Day),
    RecentWorkout(Day, WorkoutId),
    RecentMeal(Day, MealId),
    ActiveGoal(GoalId),
    Event(EventId),
    Dedup(ConsumerName, EventId),
    /// The single item of a `RECIPE#` partition.
    Recipe,
    /// The single item of a `MEAL_PLAN#` partition.
    MealPlan,
    /// The single item of an `OAUTH_STATE#` partition.
    OAuthState,
    /// The single item of a `WEATHER#` partition.
    Weather,
    /// The single item of an `AIR#` partition.
    Air,
    /// `MEAL_REF#<meal-id>`: the day a meal is filed under, so it is found by id alone.
    MealRef(MealId),
    /// `IDEMPOTENCY#<key>`: a request recorded under its idempotency key.
    Idempotency(RequestKey),
    /// `IDEMPOTENCY#<operation>#<key>`: a request recorded under its idempotency key,
    /// which is the caller's for that operation only.
    ScopedIdempotency(OperationName, RequestKey),
    /// `DELIVERY#<provider>#<delivery-id>`: a webhook delivery, recorded once.
    Delivery(ProviderName, DeliveryId),
    /// The single item of a `PROVIDER_USER#` partition.
    ProviderUser,
    /// The tombstone item of an `ERASED#` partition.
    Tombstone,
    /// The single item of a `TRIES#` partition.
    Tries,
    /// `RUN#<date>` in the `JOB#` partition: one day's run of the job.
    JobRun(Day),
    /// `OAUTH_STATE#<state>` in a user's partition: points at a pending connect's state
    /// item, so erasing the account finds it.
    OAuthStateRef(OAuthState),
    /// `SESSION#<session-id>`: a signed-in session's current refresh token (its hash).
    Session(SessionId),
    /// `~MEAL#<date>#<id>`: the meal history (dashboard table). History kinds start with
    /// `~`, after every other kind of the dashboard partition, so the home screen reads
    /// `sk < "~"`: one Query whose cost does not grow with the history.
    MealLog(Day, MealId),
    /// `~WORKOUT#<date>#<id>`: the workout history (dashboard table).
    WorkoutLog(Day, WorkoutId),
    /// `~SLEEP#<night>#<id>`: the sleep history (dashboard table).
    SleepLog(Day, SleepId),
}

/// Sort-key prefixes for `begins_with` queries. Each ends with the delimiter, so
/// `MEAL#` never matches `MEAL_PLAN`.
pub mod prefix {
    use crate::time::Day;

    pub const MEAL: &str = "MEAL#";
    pub const DAILY_SUMMARY: &str = "DAILY_SUMMARY#";
    pub const SCHEDULED_MEAL: &str = "SCHEDULED_MEAL#";
    pub const WORKOUT: &str = "WORKOUT#";
    pub const TRAINING_BLOCK: &str = "TRAINING_BLOCK#";
    pub const SLEEP: &str = "SLEEP#";
    pub const GOAL: &str = "GOAL#";
    pub const PROGRESS: &str = "PROGRESS#";
    pub const ACT_WORKOUT: &str = "ACT_WORKOUT#";
    pub const DAILY: &str = "DAILY#";
    pub const RECENT_WORKOUT: &str = "RECENT_WORKOUT#";
    pub const RECENT_MEAL: &str = "RECENT_MEAL#";
    pub const ACTIVE_GOAL: &str = "ACTIVE_GOAL#";
    pub const EVENT: &str = "EVT#";
    pub const DEDUP: &str = "DEDUP#";
    pub const OAUTH_STATE: &str = "OAUTH_STATE#";
    pub const SESSION: &str = "SESSION#";
    pub const MEAL_LOG: &str = "~MEAL#";
    pub const WORKOUT_LOG: &str = "~WORKOUT#";
    pub const SLEEP_LOG: &str = "~SLEEP#";
    /// Every history row sorts at or after this; every dashboard row before it.
    pub const HISTORY: &str = "~";

    /// `<kind>#<day>#`: the items of one kind on one day.
    pub fn on_day(kind_prefix: &str, day: Day) -> String {
        format!("{kind_prefix}{day}#")
    }

    /// The greatest sort key of `kind` on `day` (`<kind><day>#` and the highest code
    /// point): the inclusive upper bound of a range that ends with the whole day, rows
    /// keyed `<kind><day>` and `<kind><day>#<id>` alike.
    pub fn day_end(kind_prefix: &str, day: Day) -> String {
        format!("{}\u{10FFFF}", on_day(kind_prefix, day))
    }

    /// `PROGRESS#<goal-id>#`: the progress entries of one goal.
    pub fn progress_of(goal: &crate::ids::GoalId) -> String {
        format!("{PROGRESS}{goal}#")
    }
}

impl fmt::Display for PartitionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionKey::User(id) => write!(f, "USER#{id}"),
            PartitionKey::Email(email) => write!(f, "EMAIL#{email}"),
            PartitionKey::Recipe(id) => write!(f, "RECIPE#{id}"),
            PartitionKey::MealPlan(id) => write!(f, "MEAL_PLAN#{id}"),
            PartitionKey::OAuthState(state) => write!(f, "OAUTH_STATE#{state}"),
            PartitionKey::Weather(cell, hour) => write!(f, "WEATHER#{cell}#{hour}"),
            PartitionKey::Air(cell, hour) => write!(f, "AIR#{cell}#{hour}"),
            PartitionKey::ProviderUser(provider, user) => {
                write!(f, "PROVIDER_USER#{provider}#{user}")
            }
            PartitionKey::Erased(digest) => write!(f, "ERASED#{digest}"),
            PartitionKey::Tries(digest, minute) => write!(f, "TRIES#{digest}#{minute}"),
            PartitionKey::ReadinessJob => f.write_str("JOB#readiness"),
        }
    }
}

impl fmt::Display for SortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SortKey::Profile => f.write_str("PROFILE"),
            SortKey::Email => f.write_str("EMAIL"),
            SortKey::Meal(day, id) => write!(f, "MEAL#{day}#{id}"),
            SortKey::DailySummary(day) => write!(f, "DAILY_SUMMARY#{day}"),
            SortKey::ScheduledMeal(day, id) => write!(f, "SCHEDULED_MEAL#{day}#{id}"),
            SortKey::TrainingLoad(day) => write!(f, "TRAINING_LOAD#{day}"),
            SortKey::Workout(day, id) => write!(f, "WORKOUT#{day}#{id}"),
            SortKey::External(provider, id) => write!(f, "EXTERNAL#{provider}#{id}"),
            SortKey::TrainingBlock(day, id) => write!(f, "TRAINING_BLOCK#{day}#{id}"),
            SortKey::Intake(day) => write!(f, "INTAKE#{day}"),
            SortKey::Sleep(day, id) => write!(f, "SLEEP#{day}#{id}"),
            SortKey::Goal(id) => write!(f, "GOAL#{id}"),
            SortKey::Progress(goal, at) => write!(f, "PROGRESS#{goal}#{at}"),
            SortKey::ActWorkout(day, id) => write!(f, "ACT_WORKOUT#{day}#{id}"),
            SortKey::NutDaily(day) => write!(f, "NUT_DAILY#{day}"),
            SortKey::SleepNight(day) => write!(f, "SLEEP_NIGHT#{day}"),
            SortKey::Connection(provider) => write!(f, "CONNECTION#{provider}"),
            SortKey::ActiveDay(day) => write!(f, "ACTIVE_DAY#{day}"),
            SortKey::Readiness(day) => write!(f, "READINESS#{day}"),
            SortKey::Daily(day) => write!(f, "DAILY#{day}"),
            SortKey::RecentWorkout(day, id) => write!(f, "RECENT_WORKOUT#{day}#{id}"),
            SortKey::RecentMeal(day, id) => write!(f, "RECENT_MEAL#{day}#{id}"),
            SortKey::ActiveGoal(id) => write!(f, "ACTIVE_GOAL#{id}"),
            SortKey::Event(id) => write!(f, "EVT#{id}"),
            SortKey::Dedup(consumer, id) => write!(f, "DEDUP#{consumer}#{id}"),
            SortKey::Recipe => f.write_str("RECIPE"),
            SortKey::MealPlan => f.write_str("MEAL_PLAN"),
            SortKey::OAuthState => f.write_str("OAUTH_STATE"),
            SortKey::Weather => f.write_str("WEATHER"),
            SortKey::Air => f.write_str("AIR"),
            SortKey::MealRef(id) => write!(f, "MEAL_REF#{id}"),
            SortKey::Idempotency(key) => write!(f, "IDEMPOTENCY#{key}"),
            SortKey::ScopedIdempotency(operation, key) => {
                write!(f, "IDEMPOTENCY#{operation}#{key}")
            }
            SortKey::Delivery(provider, id) => write!(f, "DELIVERY#{provider}#{id}"),
            SortKey::ProviderUser => f.write_str("PROVIDER_USER"),
            SortKey::Tombstone => f.write_str("TOMBSTONE"),
            SortKey::Tries => f.write_str("TRIES"),
            SortKey::JobRun(day) => write!(f, "RUN#{day}"),
            SortKey::OAuthStateRef(state) => write!(f, "OAUTH_STATE#{state}"),
            SortKey::Session(id) => write!(f, "SESSION#{id}"),
            SortKey::MealLog(day, id) => write!(f, "~MEAL#{day}#{id}"),
            SortKey::WorkoutLog(day, id) => write!(f, "~WORKOUT#{day}#{id}"),
            SortKey::SleepLog(day, id) => write!(f, "~SLEEP#{day}#{id}"),
        }
    }
}

/// Splits `raw` into its kind and exactly `N` parts.
fn parts<'a, const N: usize>(raw: &'a str, rest: &'a str) -> Result<[&'a str; N], KeyError> {
    let wrong = || KeyError::WrongArity {
        key: raw.to_owned(),
        expected: N,
    };
    let mut out = [""; N];
    let mut split = rest.split(DELIMITER);
    for slot in out.iter_mut() {
        *slot = split.next().ok_or_else(wrong)?;
    }
    if split.next().is_some() {
        return Err(wrong());
    }
    Ok(out)
}

/// A normalized email may not be empty and must contain `@`; it may contain `#`
/// (RFC 5321 allows it), which is safe because it is the last part of its key.
fn email_part(raw: &str) -> Result<String, KeyError> {
    if raw.is_empty() || !raw.contains('@') || raw.chars().any(char::is_control) {
        return Err(KeyError::Email(raw.to_owned()));
    }
    Ok(raw.to_owned())
}

impl FromStr for PartitionKey {
    type Err = KeyError;

    fn from_str(raw: &str) -> Result<Self, KeyError> {
        let (kind, rest) = raw
            .split_once(DELIMITER)
            .ok_or_else(|| KeyError::UnknownKind(raw.to_owned()))?;
        Ok(match kind {
            "USER" => PartitionKey::User(rest.parse()?),
            "EMAIL" => PartitionKey::Email(email_part(rest)?),
            "RECIPE" => PartitionKey::Recipe(rest.parse()?),
            "MEAL_PLAN" => PartitionKey::MealPlan(rest.parse()?),
            "OAUTH_STATE" => PartitionKey::OAuthState(rest.parse()?),
            "ERASED" => PartitionKey::Erased(rest.parse()?),
            "JOB" if rest == "readiness" => PartitionKey::ReadinessJob,
            "TRIES" => {
                let [digest, minute] = parts::<2>(raw, rest)?;
                let minute = minute
                    .parse()
                    .map_err(|_| KeyError::UnknownKind(raw.to_owned()))?;
                PartitionKey::Tries(digest.parse()?, minute)
            }
            "PROVIDER_USER" => {
                let [provider, user] = parts::<2>(raw, rest)?;
                PartitionKey::ProviderUser(provider.parse()?, user.parse()?)
            }
            "WEATHER" | "AIR" => {
                let [cell, hour] = parts::<2>(raw, rest)?;
                let (cell, hour) = (cell.parse()?, Hour::parse(hour)?);
                if kind == "WEATHER" {
                    PartitionKey::Weather(cell, hour)
                } else {
                    PartitionKey::Air(cell, hour)
                }
            }
            _ => return Err(KeyError::UnknownKind(raw.to_owned())),
        })
    }
}

/// A sort key of one word, no parts (`OAUTH_STATE` only when nothing follows it).
fn unit_sort_key(kind: &str, rest: &str) -> Option<SortKey> {
    Some(match kind {
        "PROFILE" => SortKey::Profile,
        "EMAIL" => SortKey::Email,
        "RECIPE" => SortKey::Recipe,
        "MEAL_PLAN" => SortKey::MealPlan,
        "OAUTH_STATE" if rest.is_empty() => SortKey::OAuthState,
        "WEATHER" => SortKey::Weather,
        "AIR" => SortKey::Air,
        "PROVIDER_USER" => SortKey::ProviderUser,
        "TOMBSTONE" => SortKey::Tombstone,
        "TRIES" => SortKey::Tries,
        _ => return None,
    })
}

/// Builds a sort key of a day and an id.
type Dated = fn(Day, &str) -> Result<SortKey, KeyError>;

/// The sort keys of a day and an id (`MEAL#<day>#<meal-id>` and the like).
fn dated_sort_key(kind: &str) -> Option<Dated> {
    let dated: Dated = match kind {
        "MEAL" => |d, id| Ok(SortKey::Meal(d, id.parse()?)),
        "SCHEDULED_MEAL" => |d, id| Ok(SortKey::ScheduledMeal(d, id.parse()?)),
        "WORKOUT" => |d, id| Ok(SortKey::Workout(d, id.parse()?)),
        "TRAINING_BLOCK" => |d, id| Ok(SortKey::TrainingBlock(d, id.parse()?)),
        "SLEEP" => |d, id| Ok(SortKey::Sleep(d, id.parse()?)),
        "ACT_WORKOUT" => |d, id| Ok(SortKey::ActWorkout(d, id.parse()?)),
        "RECENT_WORKOUT" => |d, id| Ok(SortKey::RecentWorkout(d, id.parse()?)),
        "RECENT_MEAL" => |d, id| Ok(SortKey::RecentMeal(d, id.parse()?)),
        "~MEAL" => |d, id| Ok(SortKey::MealLog(d, id.parse()?)),
        "~WORKOUT" => |d, id| Ok(SortKey::WorkoutLog(d, id.parse()?)),
        "~SLEEP" => |d, id| Ok(SortKey::SleepLog(d, id.parse()?)),
        _ => return None,
    };
    Some(dated)
}

/// The sort keys of one day (`DAILY#<day>` and the like).
fn daily_sort_key(kind: &str) -> Option<fn(Day) -> SortKey> {
    Some(match kind {
        "DAILY_SUMMARY" => SortKey::DailySummary,
        "TRAINING_LOAD" => SortKey::TrainingLoad,
        "INTAKE" => SortKey::Intake,
        "NUT_DAILY" => SortKey::NutDaily,
        "SLEEP_NIGHT" => SortKey::SleepNight,
        "ACTIVE_DAY" => SortKey::ActiveDay,
        "READINESS" => SortKey::Readiness,
        "DAILY" => SortKey::Daily,
        "RUN" => SortKey::JobRun,
        _ => return None,
    })
}

impl FromStr for SortKey {
    type Err = KeyError;

    fn from_str(raw: &str) -> Result<Self, KeyError> {
        let (kind, rest) = raw.split_once(DELIMITER).unwrap_or((raw, ""));
        if let Some(key) = unit_sort_key(kind, rest) {
            return if rest.is_empty() && !raw.contains(DELIMITER) {
                Ok(key)
            } else {
                Err(KeyError::WrongArity {
                    key: raw.to_owned(),
                    expected: 0,
                })
            };
        }
        if let Some(dated) = dated_sort_key(kind) {
            let [day, id] = parts::<2>(raw, rest)?;
            return dated(Day::parse(day)?, id);
        }
        if let Some(daily) = daily_sort_key(kind) {
            let [day] = parts::<1>(raw, rest)?;
            return Ok(daily(Day::parse(day)?));
        }
        let one = || parts::<1>(raw, rest).map(|[a]| a);
        let two = || parts::<2>(raw, rest);
        Ok(match kind {
            "OAUTH_STATE" => SortKey::OAuthStateRef(one()?.parse()?),
            "MEAL_REF" => SortKey::MealRef(one()?.parse()?),
            "SESSION" => SortKey::Session(one()?.parse()?),
            "IDEMPOTENCY" if rest.contains(DELIMITER) => {
                let [operation, key] = two()?;
                SortKey::ScopedIdempotency(operation.parse()?, key.parse()?)
            }
            "IDEMPOTENCY" => SortKey::Idempotency(one()?.parse()?),
            "DELIVERY" => {
                let [provider, id] = two()?;
                SortKey::Delivery(provider.parse()?, id.parse()?)
            }
            "GOAL" => SortKey::Goal(one()?.parse()?),
            "ACTIVE_GOAL" => SortKey::ActiveGoal(one()?.parse()?),
            "CONNECTION" => SortKey::Connection(one()?.parse()?),
            "EVT" => SortKey::Event(one()?.parse()?),
            "PROGRESS" => {
                let [goal, at] = two()?;
                SortKey::Progress(goal.parse()?, Timestamp::parse(at)?)
            }
            "EXTERNAL" => {
                let [provider, id] = two()?;
                SortKey::External(provider.parse()?, id.parse()?)
            }
            "DEDUP" => {
                let [consumer, id] = two()?;
                SortKey::Dedup(consumer.parse()?, id.parse()?)
            }
            _ => return Err(KeyError::UnknownKind(raw.to_owned())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn day(raw: &str) -> Day {
        Day::parse(raw).expect("valid day")
    }

    fn every_sort_key() -> Vec<SortKey> {
        let d = day("2026-02-03");
        let ts = Timestamp::parse("2026-02-03T04:05:06.007Z").expect("valid");
        vec![
            SortKey::Profile,
            SortKey::Email,
            SortKey::Meal(d, MealId::generate()),
            SortKey::DailySummary(d),
            SortKey::ScheduledMeal(d, ScheduledMealId::generate()),
            SortKey::TrainingLoad(d),
            SortKey::Workout(d, WorkoutId::generate()),
            SortKey::External("garmin".parse().expect("id"), "ext-1".parse().expect("id")),
            SortKey::TrainingBlock(d, TrainingBlockId::generate()),
            SortKey::Intake(d),
            SortKey::Sleep(d, SleepId::generate()),
            SortKey::Goal(GoalId::generate()),
            SortKey::Progress(GoalId::generate(), ts),
            SortKey::ActWorkout(d, WorkoutId::generate()),
            SortKey::NutDaily(d),
            SortKey::SleepNight(d),
            SortKey::Connection("garmin".parse().expect("id")),
            SortKey::ActiveDay(d),
            SortKey::Readiness(d),
            SortKey::Daily(d),
            SortKey::RecentWorkout(d, WorkoutId::generate()),
            SortKey::RecentMeal(d, MealId::generate()),
            SortKey::ActiveGoal(GoalId::generate()),
            SortKey::Event(EventId::generate()),
            SortKey::Dedup("dashboard".parse().expect("id"), EventId::generate()),
            SortKey::Recipe,
            SortKey::MealPlan,
            SortKey::OAuthState,
            SortKey::Weather,
            SortKey::Air,
            SortKey::MealRef(MealId::generate()),
            SortKey::Idempotency("req-1".parse().expect("id")),
            SortKey::ScopedIdempotency(
                "log_meal".parse().expect("op"),
                "req-1".parse().expect("id"),
            ),
            SortKey::Delivery("garmin".parse().expect("id"), "d-1".parse().expect("id")),
            SortKey::ProviderUser,
            SortKey::Tombstone,
            SortKey::Tries,
            SortKey::JobRun(d),
            SortKey::OAuthStateRef("ab12".parse().expect("state")),
            SortKey::MealLog(d, MealId::generate()),
            SortKey::WorkoutLog(d, WorkoutId::generate()),
            SortKey::SleepLog(d, SleepId::generate()),
            SortKey::Session(SessionId::generate()),
        ]
    }

    #[test]
    fn erased_keys_round_trip_and_do_not_hold_the_user_id() {
        let user = UserId::generate();
        let (pk, sk) = erased(&user);
        let text = pk.to_string();
        assert!(
            text.starts_with("ERASED#") && text.len() == 7 + 64,
            "{text}"
        );
        assert!(!text.contains(&user.to_string()));
        assert_eq!(text.parse::<PartitionKey>(), Ok(pk));
        assert_eq!(sk.to_string(), "TOMBSTONE");
        assert_ne!(erased(&UserId::generate()).0.to_string(), text);
        assert!("ERASED#not-hex".parse::<PartitionKey>().is_err());
    }

    #[test]
    fn tries_keys_name_their_subject_by_digest_only() {
        let text = PartitionKey::Tries(Digest::tries("ana@example.com"), 7).to_string();
        assert!(
            text.starts_with("TRIES#") && !text.contains("ana"),
            "{text}"
        );
        assert_ne!(
            Digest::tries("bob@example.com"),
            Digest::tries("ana@example.com")
        );
        assert!("TRIES#abc#7".parse::<PartitionKey>().is_err());
        let digest = Digest::tries("ana@example.com");
        assert!(format!("TRIES#{digest}#x").parse::<PartitionKey>().is_err());
        assert!(format!("TRIES#{digest}").parse::<PartitionKey>().is_err());
    }

    #[test]
    fn every_sort_key_round_trips() {
        for key in every_sort_key() {
            let text = key.to_string();
            assert_eq!(text.parse::<SortKey>(), Ok(key), "{text}");
        }
    }

    #[test]
    fn every_partition_key_round_trips() {
        let hour = Hour::parse("2026-02-03T04").expect("valid");
        let keys = [
            PartitionKey::User(UserId::generate()),
            PartitionKey::Email("a#b@example.com".to_owned()),
            PartitionKey::Recipe(RecipeId::generate()),
            PartitionKey::MealPlan(MealPlanId::generate()),
            PartitionKey::OAuthState("s".parse().expect("id")),
            PartitionKey::Weather("u4pruyd".parse().expect("id"), hour),
            PartitionKey::Air("u4pruyd".parse().expect("id"), hour),
            PartitionKey::ProviderUser("garmin".parse().expect("id"), "pu-1".parse().expect("id")),
            PartitionKey::Tries(Digest::tries("ana@example.com"), 29_530_000),
            PartitionKey::ReadinessJob,
        ];
        for key in keys {
            let text = key.to_string();
            assert_eq!(text.parse::<PartitionKey>(), Ok(key), "{text}");
        }
    }

    #[test]
    fn documented_forms() {
        let user = UserId::parse("01ABC").expect("id");
        assert_eq!(PartitionKey::User(user).to_string(), "USER#01ABC");
        let meal = SortKey::Meal(day("2026-01-31"), MealId::parse("M1").expect("id"));
        assert_eq!(meal.to_string(), "MEAL#2026-01-31#M1");
        assert_eq!(
            prefix::on_day(prefix::MEAL, day("2026-01-31")),
            "MEAL#2026-01-31#"
        );
    }

    #[test]
    fn malformed_keys_are_typed_errors() {
        assert!(matches!(
            "MEAL#2026-01-31".parse::<SortKey>(),
            Err(KeyError::WrongArity { .. })
        ));
        assert!(matches!(
            "MEAL#2026-01-31#a#b".parse::<SortKey>(),
            Err(KeyError::WrongArity { .. })
        ));
        assert!(matches!(
            "MEAL#2026-13-31#a".parse::<SortKey>(),
            Err(KeyError::Time(_))
        ));
        assert!(matches!("GOAL#".parse::<SortKey>(), Err(KeyError::Id(_))));
        assert!(matches!(
            "PROFILE#x".parse::<SortKey>(),
            Err(KeyError::WrongArity { .. })
        ));
        // Each table of kinds checks its own arity: a unit kind takes no part (not even
        // an empty one), a dated kind two, a daily kind one.
        for (raw, expected) in [
            ("PROFILE#", 0),
            ("DAILY#2026-01-31#x", 1),
            ("~SLEEP#2026-01-31", 2),
        ] {
            assert!(
                matches!(raw.parse::<SortKey>(), Err(KeyError::WrongArity { expected: e, .. }) if e == expected),
                "{raw}"
            );
        }
        for raw in ["DAILY#31-01-2026", "DAILY"] {
            assert!(
                matches!(raw.parse::<SortKey>(), Err(KeyError::Time(_))),
                "{raw}"
            );
        }
        assert_eq!("OAUTH_STATE".parse::<SortKey>(), Ok(SortKey::OAuthState));
        assert!(matches!(
            "OAUTH_STATE#abc".parse::<SortKey>(),
            Ok(SortKey::OAuthStateRef(_))
        ));
        assert!(matches!(
            "NOPE#1".parse::<SortKey>(),
            Err(KeyError::UnknownKind(_))
        ));
        assert!(matches!(
            "USER".parse::<PartitionKey>(),
            Err(KeyError::UnknownKind(_))
        ));
        assert!(matches!(
            "EMAIL#nobody".parse::<PartitionKey>(),
            Err(KeyError::Email(_))
        ));
    }

    #[test]
    fn history_rows_sort_after_every_other_row() {
        let history = [
            SortKey::MealLog(day("2026-01-01"), MealId::generate()),
            SortKey::WorkoutLog(day("2026-01-01"), WorkoutId::generate()),
            SortKey::SleepLog(day("2026-01-01"), SleepId::generate()),
        ];
        for key in every_sort_key() {
            let text = key.to_string();
            if history
                .iter()
                .any(|h| std::mem::discriminant(h) == std::mem::discriminant(&key))
            {
                assert!(text.as_str() >= prefix::HISTORY, "{text}");
            } else {
                assert!(text.as_str() < prefix::HISTORY, "{text}");
            }
        }
    }

    #[test]
    fn meal_prefix_does_not_match_meal_plan() {
        assert!(!SortKey::MealPlan.to_string().starts_with(prefix::MEAL));
    }

    proptest! {
        #[test]
        fn parsing_arbitrary_text_never_panics(raw in any::<String>()) {
            let _ = raw.parse::<SortKey>();
            let _ = raw.parse::<PartitionKey>();
        }

        #[test]
        fn keyish_text_never_panics(kind in "(MEAL|GOAL|PROGRESS|EVT|DEDUP|USER|WEATHER|EXTERNAL)", rest in "[#0-9A-Z:.T-]{0,40}") {
            let raw = format!("{kind}#{rest}");
            if let Ok(key) = raw.parse::<SortKey>() {
                prop_assert_eq!(key.to_string(), raw.clone());
            }
            let _ = raw.parse::<PartitionKey>();
        }
    }
}

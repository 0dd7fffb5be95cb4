//! Schema-only mirrors of the wire types the HTTP API borrows from other crates (command
//! inputs, events, stored rows), so the domain crates stay free of HTTP concerns. Nothing
//! here is ever built at run time; the tests at the bottom fail to compile or fail when a
//! mirror and the type it describes stop having the same JSON fields.

use utoipa::ToSchema;

/// An instant in UTC, always with milliseconds: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
#[derive(ToSchema)]
#[schema(value_type = String, format = DateTime, example = "2026-03-01T08:00:00.000Z")]
pub struct Timestamp(pub String);

/// A calendar day in the user's timezone: `YYYY-MM-DD`.
#[derive(ToSchema)]
#[schema(value_type = String, format = Date, example = "2026-03-01")]
pub struct Day(pub String);

/// A decimal number written as a JSON string (numbers are rejected), such as `"30.5"`.
#[derive(ToSchema)]
#[schema(value_type = String, format = "decimal", example = "30.5")]
pub struct Decimal(pub String);

/// An opaque id: 1 to 128 bytes, never `#` or a control character. The ids the API
/// generates are ULIDs.
#[derive(ToSchema)]
#[schema(value_type = String, example = "01JNM7Q3W8X9Y2Z4A5B6C7D8E9")]
pub struct Id(pub String);

/// Units the app displays.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum Units {
    Metric,
    Imperial,
}

/// `POST /v1/auth/register`.
#[derive(ToSchema)]
pub struct Register {
    /// Compared case-insensitively; unique across accounts.
    #[schema(example = "ana@example.com")]
    pub email: String,
    #[schema(format = Password, example = "correct horse battery")]
    pub password: String,
    /// 1 to 80 characters.
    #[schema(example = "Ana")]
    pub display_name: String,
    /// IANA timezone name.
    #[schema(example = "Europe/Paris")]
    pub timezone: String,
    /// `metric` when absent.
    #[schema(required = false)]
    pub units: Units,
}

/// `PATCH /v1/me/profile`: only the fields present change.
#[derive(ToSchema)]
pub struct UpdateProfile {
    pub display_name: Option<String>,
    /// IANA timezone name.
    pub timezone: Option<String>,
    pub units: Option<Units>,
}

/// The public part of a profile, after the change.
#[derive(ToSchema)]
pub struct ProfileState {
    pub email: String,
    pub display_name: String,
    /// IANA timezone name, such as `Europe/Paris`.
    pub timezone: String,
    pub units: Units,
    /// Increases with every profile change.
    pub version: u64,
}

/// The profile row of the caller's dashboard partition.
#[derive(ToSchema)]
pub struct ProfileRow {
    /// Storage key (`USER#<user-id>`); clients should ignore it.
    pub pk: String,
    /// Storage key (`PROFILE`); clients should ignore it.
    pub sk: String,
    pub email: String,
    pub display_name: String,
    pub timezone: String,
    pub units: Units,
    pub version: u64,
}

/// Energy and macronutrients.
#[derive(ToSchema)]
pub struct Nutrients {
    pub calories: Decimal,
    pub protein_g: Decimal,
    pub carbs_g: Decimal,
    pub fat_g: Decimal,
}

/// A day's nutrition summary (`DAILY_SUMMARY#<date>`): always the sum of its meals.
#[derive(ToSchema)]
pub struct DailySummaryRow {
    /// Storage key; clients should ignore it.
    pub pk: String,
    /// Storage key; clients should ignore it.
    pub sk: String,
    pub day: Day,
    /// How many meals the day has.
    pub meals: u32,
    pub totals: Nutrients,
    pub version: u64,
}

/// Where a workout or sleep session came from.
#[derive(serde::Serialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// Entered in the app.
    Manual,
    /// Synced from a wearable provider, with the provider's id for it.
    Provider {
        provider: String,
        external_id: String,
    },
}

/// A workout as the activity context stores it (`WORKOUT#<date>#<id>`).
#[derive(ToSchema)]
pub struct WorkoutRow {
    /// Storage key; clients should ignore it.
    pub pk: String,
    /// Storage key; clients should ignore it.
    pub sk: String,
    pub workout_id: Id,
    /// The day it started, in the user's timezone.
    pub day: Day,
    pub started_at: Timestamp,
    /// Such as `run`, `ride`, `strength`.
    pub sport: String,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
    pub source: Source,
    pub version: u64,
}

/// A training block (`TRAINING_BLOCK#<start-date>#<id>`).
#[derive(ToSchema)]
pub struct TrainingBlockRow {
    /// Storage key; clients should ignore it.
    pub pk: String,
    /// Storage key; clients should ignore it.
    pub sk: String,
    pub training_block_id: Id,
    pub start_day: Day,
    pub weeks: u8,
    pub focus: String,
}

/// `PATCH /v1/me/goals/{id}`.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum GoalStatus {
    Active,
    Paused,
    Completed,
    Abandoned,
}

#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum GoalKind {
    WeeklyWorkoutCount,
    WeeklyActiveMinutes,
    DailyProteinGrams,
    WeeklyDistanceKm,
    NightlySleepHours,
}

/// Set by the goal's kind.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum GoalPeriod {
    Daily,
    Weekly,
}

/// `POST /v1/me/goals`.
#[derive(ToSchema)]
pub struct CreateGoal {
    pub kind: GoalKind,
    /// Positive, and at most a sensible maximum for the kind.
    pub target: Decimal,
    /// 1 to 80 characters.
    pub title: String,
    /// IANA timezone: the goal counts from the period holding today there; the token's
    /// timezone (or UTC) if absent.
    pub timezone: Option<String>,
}

/// A goal.
#[derive(ToSchema)]
pub struct Goal {
    pub goal_id: Id,
    pub kind: GoalKind,
    pub target: Decimal,
    pub period: GoalPeriod,
    pub status: GoalStatus,
    pub title: String,
    pub version: u64,
    /// The user's day when the goal was set: progress counts from its period.
    pub created_on: Option<Day>,
}

/// A goal as the goals context stores it (`GOAL#<goal-id>`), with its index keys and,
/// once a fact counted towards it, its latest period's value.
#[derive(ToSchema)]
pub struct GoalRow {
    /// Storage key; clients should ignore it.
    pub pk: String,
    /// Storage key; clients should ignore it.
    pub sk: String,
    /// Index key; clients should ignore it.
    pub status_pk: String,
    /// Index key; clients should ignore it.
    pub status_sk: String,
    pub goal_id: Id,
    pub kind: GoalKind,
    pub target: Decimal,
    pub period: GoalPeriod,
    pub status: GoalStatus,
    pub title: String,
    pub version: u64,
    /// The latest period's value.
    #[schema(required = false)]
    pub current_value: Decimal,
    /// The first day of the latest period.
    #[schema(required = false)]
    pub current_period_start: Day,
    /// Orders periods; clients should ignore it.
    #[schema(required = false)]
    pub current_period_rank: u64,
    /// The user's day when the goal was set: progress counts from its period.
    #[schema(required = false)]
    pub created_on: Day,
    /// Counts changes of the goal's progress; clients should ignore it.
    #[schema(required = false)]
    pub progress_rev: u64,
}

/// A goal's value for one period (`PROGRESS#<goal-id>#<period-start>`).
#[derive(ToSchema)]
pub struct GoalProgressRow {
    /// Storage key; clients should ignore it.
    pub pk: String,
    /// Storage key; clients should ignore it.
    pub sk: String,
    pub goal_id: Id,
    /// The first day of the period.
    pub period_start: Day,
    pub value: Decimal,
    pub target: Decimal,
    /// Whether `value` reached `target`.
    pub met: bool,
}

/// Minutes spent in each sleep stage.
#[derive(ToSchema)]
pub struct SleepStages {
    pub awake_min: u32,
    pub light_min: u32,
    pub deep_min: u32,
    pub rem_min: u32,
}

/// The app's home screen for one day: one query of the caller's dashboard partition.
/// Projections are asynchronous, so a fact recorded a moment ago may not show yet.
#[derive(ToSchema)]
pub struct DashboardView {
    pub profile: Option<ProfileRow>,
    /// The requested day's totals, when anything happened on it.
    pub day: Option<DashboardDayRow>,
    /// Newest first.
    pub recent_meals: Vec<RecentMealRow>,
    /// Newest first.
    pub recent_workouts: Vec<RecentWorkoutRow>,
    pub active_goals: Vec<ActiveGoalRow>,
    pub connections: Vec<ConnectionRow>,
}

/// `DAILY#<date>`: one attribute group per context, each present once that context
/// reported something for the day.
#[derive(ToSchema)]
pub struct DashboardDayRow {
    /// Storage key; clients should ignore it.
    pub pk: String,
    /// Storage key; clients should ignore it.
    pub sk: String,
    pub day: Day,
    #[schema(required = false)]
    pub nutrition: DayNutrition,
    #[schema(required = false)]
    pub nutrition_version: u64,
    #[schema(required = false)]
    pub activity: DayActivity,
    /// The workouts the activity group is made of; clients should ignore it.
    #[schema(required = false)]
    pub activity_entries: Object,
    /// Orders changes of the activity group; clients should ignore it.
    #[schema(required = false)]
    pub activity_rev: u64,
    #[schema(required = false)]
    pub sleep: DaySleep,
    /// The sessions the sleep group is made of; clients should ignore it.
    #[schema(required = false)]
    pub sleep_entries: Object,
    /// Orders changes of the sleep group; clients should ignore it.
    #[schema(required = false)]
    pub sleep_rev: u64,
}

/// A JSON object.
#[derive(ToSchema)]
pub struct Object {}

#[derive(ToSchema)]
pub struct DayNutrition {
    pub meals: u32,
    pub totals: Nutrients,
}

#[derive(ToSchema)]
pub struct DayActivity {
    pub workouts: u32,
    pub active_minutes: u64,
}

/// The night's sessions: how many, their minutes in all, and the score and stages of
/// the longest.
#[derive(ToSchema)]
pub struct DaySleep {
    pub sessions: u32,
    pub minutes: i64,
    #[schema(required = false)]
    pub sleep_id: Id,
    #[schema(required = false)]
    pub score: u8,
    #[schema(required = false)]
    pub stages: SleepStages,
}

/// `RECENT_MEAL#<date>#<id>`.
#[derive(ToSchema)]
pub struct RecentMealRow {
    /// Storage key; clients should ignore it.
    pub pk: String,
    /// Storage key; clients should ignore it.
    pub sk: String,
    pub meal_id: Id,
    pub day: Day,
    pub name: String,
    pub eaten_at: Timestamp,
    pub nutrients: Nutrients,
    pub version: u64,
}

/// `RECENT_WORKOUT#<date>#<id>`.
#[derive(ToSchema)]
pub struct RecentWorkoutRow {
    /// Storage key; clients should ignore it.
    pub pk: String,
    /// Storage key; clients should ignore it.
    pub sk: String,
    pub workout_id: Id,
    pub day: Day,
    pub sport: String,
    pub started_at: Timestamp,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
    pub version: u64,
}

/// `ACTIVE_GOAL#<goal-id>`: present while the goal is active.
#[derive(ToSchema)]
pub struct ActiveGoalRow {
    /// Storage key; clients should ignore it.
    pub pk: String,
    /// Storage key; clients should ignore it.
    pub sk: String,
    pub goal_id: Id,
    pub kind: GoalKind,
    pub title: String,
    pub target: Decimal,
    pub period: GoalPeriod,
    pub version: u64,
}

/// `CONNECTION#<provider>`: `connected_at` and `scopes` only while connected.
#[derive(ToSchema)]
pub struct ConnectionRow {
    /// Storage key; clients should ignore it.
    pub pk: String,
    /// Storage key; clients should ignore it.
    pub sk: String,
    pub provider: String,
    pub connected: bool,
    #[schema(required = false)]
    pub connected_at: Timestamp,
    #[schema(required = false)]
    pub scopes: Vec<String>,
    pub version: u64,
}

/// Where to send the user to authorize the provider.
#[derive(ToSchema)]
pub struct ConnectStarted {
    #[schema(
        example = "https://sandbox.vitals.invalid/oauth/authorize?client_id=vitals&state=9f1c"
    )]
    pub authorize_url: String,
    /// Single use, valid for ten minutes; the callback must bring it back.
    pub state: String,
}

/// A provider's signed webhook delivery. The signature is
/// `hex(HMAC-SHA256(secret, "<X-Vitals-Timestamp>.<raw body>"))`.
#[derive(ToSchema)]
pub struct WebhookPayload {
    /// Unique per delivery; a redelivery with the same id publishes nothing new.
    pub delivery_id: String,
    /// The provider's id of the connected user.
    pub provider_user_id: String,
    #[schema(required = false)]
    pub workouts: Vec<ProviderWorkout>,
    #[schema(required = false)]
    pub sleep: Vec<ProviderSleep>,
}

/// A workout as a provider describes it.
#[derive(ToSchema)]
pub struct ProviderWorkout {
    pub external_id: String,
    pub sport: String,
    pub started_at: Timestamp,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
    /// When the provider last changed this record: an older delivery of it changes
    /// nothing.
    pub updated_at: Option<Timestamp>,
}

/// A sleep session as a provider describes it.
#[derive(ToSchema)]
pub struct ProviderSleep {
    pub external_id: String,
    pub start: Timestamp,
    pub end: Timestamp,
    pub score: u8,
    pub stages: SleepStages,
    /// When the provider last changed this record: an older delivery of it changes
    /// nothing.
    pub updated_at: Option<Timestamp>,
}

#[cfg(test)]
mod tests {
    //! Each mirror against the type it describes: the domain values are written as
    //! struct literals and exhaustive matches, so a field or variant added there stops
    //! this compiling; the JSON they serialize to must have exactly the mirror's fields.

    use commands::goals::CreateGoal;
    use commands::identity::{Register, UpdateProfile};
    use commands::integrations::{ConnectStarted, WebhookPayload};
    use commands::nutrition::SummaryRecord;
    use events_schema::events::Source;
    use events_schema::events::activity::{TrainingBlockStarted, Workout};
    use events_schema::events::goals::{Goal, GoalKind, GoalPeriod, GoalStatus};
    use events_schema::events::identity::{ProfileState, Units};
    use events_schema::events::integrations::{ProviderSleep, ProviderWorkout};
    use events_schema::events::nutrition::Nutrients;
    use events_schema::events::sleep::SleepStages;
    use events_schema::ids::{ExternalId, GoalId, ProviderName, TrainingBlockId, WorkoutId};
    use events_schema::time::{Day, Timestamp};
    use rust_decimal::Decimal;
    use serde::Serialize;
    use serde_json::Value;
    use std::collections::BTreeSet;

    fn schema(name: &str) -> Value {
        let document: Value =
            serde_json::from_str(&super::super::document()).expect("the document is JSON");
        document["components"]["schemas"][name].clone()
    }

    fn names(object: &Value) -> BTreeSet<String> {
        object
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// `value`'s fields, plus `stored` (keys a stored row adds), are the schema's.
    #[track_caller]
    fn same_fields(name: &str, value: impl Serialize, stored: &[&str]) {
        let mut fields = names(&serde_json::to_value(value).expect("serializes"));
        fields.extend(stored.iter().map(|s| s.to_string()));
        assert_eq!(fields, names(&schema(name)["properties"]), "{name}");
    }

    /// The strings `variants` serialize to are the schema's enum.
    #[track_caller]
    fn same_variants<T: Serialize>(name: &str, variants: impl IntoIterator<Item = T>) {
        let values: BTreeSet<String> = variants
            .into_iter()
            .map(|v| serde_json::to_value(v).expect("serializes").to_string())
            .collect();
        let documented: BTreeSet<String> = schema(name)["enum"]
            .as_array()
            .expect("an enum")
            .iter()
            .map(Value::to_string)
            .collect();
        assert_eq!(values, documented, "{name}");
    }

    fn units() -> Vec<Units> {
        let all = [Units::Metric, Units::Imperial];
        for u in all {
            match u {
                Units::Metric | Units::Imperial => {}
            }
        }
        all.to_vec()
    }

    fn statuses() -> Vec<GoalStatus> {
        use GoalStatus::*;
        let all = [Active, Paused, Completed, Abandoned];
        for s in all {
            match s {
                Active | Paused | Completed | Abandoned => {}
            }
        }
        all.to_vec()
    }

    fn kinds() -> Vec<GoalKind> {
        use GoalKind::*;
        let all = [
            WeeklyWorkoutCount,
            WeeklyActiveMinutes,
            DailyProteinGrams,
            WeeklyDistanceKm,
            NightlySleepHours,
        ];
        for k in all {
            match k {
                WeeklyWorkoutCount | WeeklyActiveMinutes | DailyProteinGrams | WeeklyDistanceKm
                | NightlySleepHours => {}
            }
        }
        all.to_vec()
    }

    fn periods() -> Vec<GoalPeriod> {
        let all = [GoalPeriod::Daily, GoalPeriod::Weekly];
        for p in all {
            match p {
                GoalPeriod::Daily | GoalPeriod::Weekly => {}
            }
        }
        all.to_vec()
    }

    fn day() -> Day {
        Day::parse("2026-03-01").expect("a day")
    }

    fn at() -> Timestamp {
        Timestamp::parse("2026-03-01T08:00:00.000Z").expect("a timestamp")
    }

    fn stages() -> SleepStages {
        SleepStages {
            awake_min: 1,
            light_min: 2,
            deep_min: 3,
            rem_min: 4,
        }
    }

    fn goal() -> Goal {
        Goal {
            goal_id: GoalId::generate(),
            kind: GoalKind::DailyProteinGrams,
            target: Decimal::from(50),
            period: GoalPeriod::Daily,
            status: GoalStatus::Active,
            title: "Protein".into(),
            version: 1,
            created_on: Some(day()),
        }
    }

    fn external_id() -> ExternalId {
        ExternalId::parse("run-1").expect("an id")
    }

    #[test]
    fn enums_have_the_domain_variants() {
        same_variants("Units", units());
        same_variants("GoalStatus", statuses());
        same_variants("GoalKind", kinds());
        same_variants("GoalPeriod", periods());
    }

    #[test]
    fn request_bodies_have_the_domain_fields() {
        same_fields(
            "Register",
            Register {
                email: "ana@example.com".into(),
                password: "correct horse battery".into(),
                display_name: "Ana".into(),
                timezone: "UTC".into(),
                units: Units::Metric,
            },
            &[],
        );
        same_fields(
            "UpdateProfile",
            UpdateProfile {
                display_name: Some("Ana".into()),
                timezone: Some("UTC".into()),
                units: Some(Units::Imperial),
            },
            &[],
        );
        same_fields(
            "CreateGoal",
            CreateGoal {
                kind: GoalKind::WeeklyWorkoutCount,
                target: Decimal::from(3),
                title: "Move".into(),
                timezone: None,
            },
            &[],
        );
        same_fields("SleepStages", stages(), &[]);
        let workout = ProviderWorkout {
            external_id: external_id(),
            sport: "run".into(),
            started_at: at(),
            duration_s: 60,
            distance_m: None,
            calories: None,
            updated_at: Some(at()),
        };
        let sleep = ProviderSleep {
            external_id: external_id(),
            start: at(),
            end: at(),
            score: 80,
            stages: stages(),
            updated_at: Some(at()),
        };
        same_fields("ProviderWorkout", &workout, &[]);
        same_fields("ProviderSleep", &sleep, &[]);
        same_fields(
            "WebhookPayload",
            WebhookPayload {
                delivery_id: "d-1".into(),
                provider_user_id: "ana-watch".into(),
                workouts: vec![workout],
                sleep: vec![sleep],
            },
            &[],
        );
    }

    #[test]
    fn replies_and_rows_have_the_domain_fields() {
        let keys = ["pk", "sk"];
        same_fields(
            "ProfileState",
            ProfileState {
                email: "ana@example.com".into(),
                display_name: "Ana".into(),
                timezone: "UTC".into(),
                units: Units::Metric,
                version: 1,
            },
            &[],
        );
        same_fields("Goal", goal(), &[]);
        // Keys, index keys, and what the goals projector sets when progress moves.
        let goal_row = [
            "pk",
            "sk",
            "status_pk",
            "status_sk",
            "current_value",
            "current_period_start",
            "current_period_rank",
            "progress_rev",
        ];
        same_fields("GoalRow", goal(), &goal_row);
        let nutrients = Nutrients {
            calories: Decimal::from(1),
            protein_g: Decimal::from(2),
            carbs_g: Decimal::from(3),
            fat_g: Decimal::from(4),
        };
        same_fields("Nutrients", nutrients, &[]);
        same_fields(
            "DailySummaryRow",
            SummaryRecord {
                day: day(),
                meals: 1,
                totals: nutrients,
                version: 1,
            },
            &keys,
        );
        same_fields(
            "WorkoutRow",
            Workout {
                workout_id: WorkoutId::generate(),
                day: day(),
                started_at: at(),
                sport: "run".into(),
                duration_s: 60,
                distance_m: None,
                calories: None,
                source: Source::Manual,
                version: 1,
            },
            &keys,
        );
        same_fields(
            "TrainingBlockRow",
            TrainingBlockStarted {
                training_block_id: TrainingBlockId::generate(),
                start_day: day(),
                weeks: 4,
                focus: "base".into(),
            },
            &keys,
        );
        same_fields(
            "ConnectStarted",
            ConnectStarted {
                authorize_url: "https://sandbox.vitals.invalid/".into(),
                state: "s".into(),
            },
            &[],
        );
        same_fields("DashboardView", readmodels::DashboardView::default(), &[]);
    }

    #[test]
    fn source_has_the_domain_variants() {
        let variants = [
            Source::Manual,
            Source::Provider {
                provider: ProviderName::parse("sandbox").expect("a name"),
                external_id: external_id(),
            },
        ];
        let documented = schema("Source")["oneOf"]
            .as_array()
            .expect("one of")
            .iter()
            .map(|v| names(&v["properties"]))
            .collect::<Vec<_>>();
        for variant in &variants {
            match variant {
                Source::Manual | Source::Provider { .. } => {}
            }
            let fields = names(&serde_json::to_value(variant).expect("serializes"));
            assert!(documented.contains(&fields), "{fields:?} in {documented:?}");
        }
        assert_eq!(documented.len(), variants.len());
    }
}

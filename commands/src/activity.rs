//! Activity: workouts (entered or synced from a wearable by external id) and training
//! blocks. Items: `WORKOUT#<date>#<id>`, `EXTERNAL#<provider>#<external-id>`,
//! `TRAINING_BLOCK#<start-date>#<id>`.

use crate::external_sync;
use crate::idempotency::{self, Committed};
use crate::items::{from_item, to_item};
use crate::meta::{CommandMeta, Outcome};
use crate::optimistic;
use crate::outbox::event_action;
use crate::{CommandError, validate};
use events_schema::events::Source;
use events_schema::events::activity::{
    TrainingBlockEnded, TrainingBlockStarted, Workout, WorkoutRecorded, WorkoutUpdated,
};
use events_schema::events::integrations::ProviderWorkout;
use events_schema::ids::{ProviderName, TrainingBlockId, WorkoutId};
use events_schema::keys::SortKey;
use events_schema::time::{Day, Timestamp};
use infra::store::{CancelReason, Condition, Item, Key, Update};
use infra::table::{Action, contexts::Activity};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordWorkout {
    pub sport: String,
    pub started_at: Timestamp,
    pub timezone: String,
    pub duration_s: u32,
    pub distance_m: Option<u32>,
    pub calories: Option<u32>,
    /// How hard it felt, 1 to 10. Left out of the serialized request when absent, so a
    /// request made before it existed keeps its idempotency fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perceived_effort: Option<u8>,
}

/// A training block as it ended: its start, and its last day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndedBlock {
    pub block: TrainingBlockStarted,
    pub ended_on: Day,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartTrainingBlock {
    pub start_day: Day,
    pub weeks: u8,
    pub focus: String,
}

struct ValidWorkout {
    sport: String,
    started_at: Timestamp,
    day: Day,
    duration_s: u32,
    distance_m: Option<u32>,
    calories: Option<u32>,
    perceived_effort: Option<u8>,
}

/// The range of a perceived effort (session RPE, CR-10 scale).
pub const PERCEIVED_EFFORT: std::ops::RangeInclusive<u8> = 1..=10;

fn validate_workout(
    now: Timestamp,
    sport: &str,
    started_at: Timestamp,
    timezone: &str,
    duration_s: u32,
    distance_m: Option<u32>,
    calories: Option<u32>,
) -> Result<ValidWorkout, CommandError> {
    let sport = validate::text("sport", sport, 1, 40)?.to_lowercase();
    let started_at = validate::instant("started_at", started_at, now)?;
    let tz = validate::timezone("timezone", timezone)?;
    if !(1..=86_400).contains(&duration_s) {
        return Err(CommandError::invalid(
            "duration_s",
            "must be 1 to 86400 seconds",
        ));
    }
    if distance_m.is_some_and(|d| d > 1_000_000) {
        return Err(CommandError::invalid(
            "distance_m",
            "must be at most 1000000 metres",
        ));
    }
    if calories.is_some_and(|c| c > 20_000) {
        return Err(CommandError::invalid("calories", "must be at most 20000"));
    }
    Ok(ValidWorkout {
        sport,
        started_at,
        day: validate::day_in(started_at, tz),
        duration_s,
        distance_m,
        calories,
        perceived_effort: None,
    })
}

fn workout(id: WorkoutId, valid: &ValidWorkout, source: Source, version: u64) -> Workout {
    Workout {
        workout_id: id,
        day: valid.day,
        started_at: valid.started_at,
        sport: valid.sport.clone(),
        duration_s: valid.duration_s,
        distance_m: valid.distance_m,
        calories: valid.calories,
        perceived_effort: valid.perceived_effort,
        source,
        version,
    }
}

impl external_sync::Synced for Workout {
    type Recorded = WorkoutRecorded;
    type Updated = WorkoutUpdated;
    fn began(&self) -> Timestamp {
        self.started_at
    }
    fn day(&self) -> Day {
        self.day
    }
    fn sort_key(&self) -> SortKey {
        SortKey::Workout(self.day, self.workout_id.clone())
    }
    fn recorded(&self) -> WorkoutRecorded {
        WorkoutRecorded {
            workout: self.clone(),
        }
    }
    fn updated(&self, moved_from: Option<Day>) -> WorkoutUpdated {
        WorkoutUpdated {
            workout: self.clone(),
            previous_day: moved_from,
        }
    }
}

/// The activity context's commands: workouts (entered or synced) and training blocks.
pub type ActivityCommands = crate::handlers::Handlers<Activity>;

impl ActivityCommands {
    /// Records a workout entered in the app.
    pub async fn record_workout(
        &self,
        meta: &CommandMeta,
        input: RecordWorkout,
    ) -> Result<Outcome<Workout>, CommandError> {
        let w = new_workout(self.clock.now(), &input, WorkoutId::generate())?;
        self.record_entered(meta, w, &input).await
    }

    /// Syncs a workout from a wearable. A retry returns the original id and writes
    /// nothing (one request); changed fields make the next version of the same workout.
    pub async fn sync_workout(
        &self,
        meta: &CommandMeta,
        provider: &ProviderName,
        timezone: &str,
        input: &ProviderWorkout,
    ) -> Result<Outcome<WorkoutId>, CommandError> {
        let valid = validate_workout(
            self.clock.now(),
            &input.sport,
            input.started_at,
            timezone,
            input.duration_s,
            input.distance_m,
            input.calories,
        )?;
        self.sync_entity(meta, provider, timezone, input, |id, source, version| {
            workout(id, &valid, source, version)
        })
        .await
    }

    pub async fn start_training_block(
        &self,
        meta: &CommandMeta,
        input: StartTrainingBlock,
    ) -> Result<Outcome<TrainingBlockStarted>, CommandError> {
        let payload = new_training_block(&input)?;
        let key = Key::new(
            meta.user_pk(),
            SortKey::TrainingBlock(input.start_day, payload.training_block_id.clone()).to_string(),
        );
        let item = to_item(&key, &payload)?;
        let now = self.clock.now();
        self.create(meta, item, (now, &payload), &input, payload.clone())
            .await
    }

    /// Ends a training block early: `ended_on` (from its first to its planned last day)
    /// becomes its last day. A block ends once.
    pub async fn end_training_block(
        &self,
        meta: &CommandMeta,
        start_day: Day,
        id: &TrainingBlockId,
        ended_on: Day,
    ) -> Result<Outcome<EndedBlock>, CommandError> {
        let _writer = self.writers.user(&meta.user).await;
        let pk = meta.user_pk();
        let request = (start_day, id, ended_on);
        if let Some(first) = idempotency::replayed(&self.table, meta, &request).await? {
            return Ok(first);
        }
        let key = Key::new(
            &pk,
            SortKey::TrainingBlock(start_day, id.clone()).to_string(),
        );
        let item = self.existing(&key, "training block").await?;
        let (ending, block) = block_ending(key, item, ended_on)?;
        let payload = TrainingBlockEnded {
            training_block_id: id.clone(),
            start_day,
            ended_on,
        };
        let event = self.event_now(meta, &payload)?;
        let actions = vec![ending, event_action(&pk, &event)?];
        let ended = EndedBlock { block, ended_on };
        let committed =
            optimistic::commit_through_conflicts(&self.table, meta, &pk, &request, actions, ended);
        match committed.await? {
            Committed::Cancelled(reasons) if CancelReason::failed_condition(&reasons) => Err(
                CommandError::Conflict("the training block has ended already".into()),
            ),
            committed => committed.or_unexpected(),
        }
    }
}

// A wearable's workout, versioned by `sync_workout`.
external_sync::delivered!(ProviderWorkout, began: started_at);

/// The workout `input` records under `id`, told apart from now: its day in the user's
/// timezone, a lower-case sport, version 1 of an entered workout; an invalid-field error
/// otherwise.
fn new_workout(
    now: Timestamp,
    input: &RecordWorkout,
    id: WorkoutId,
) -> Result<Workout, CommandError> {
    let mut valid = validate_workout(
        now,
        &input.sport,
        input.started_at,
        &input.timezone,
        input.duration_s,
        input.distance_m,
        input.calories,
    )?;
    if let Some(effort) = input.perceived_effort {
        if !PERCEIVED_EFFORT.contains(&effort) {
            return Err(CommandError::invalid("perceived_effort", "must be 1 to 10"));
        }
        valid.perceived_effort = Some(effort);
    }
    Ok(workout(id, &valid, Source::Manual, 1))
}

/// The training block `input` starts: a new id, a focus of 1 to 80 characters, 1 to 52
/// weeks; an invalid-field error otherwise.
fn new_training_block(input: &StartTrainingBlock) -> Result<TrainingBlockStarted, CommandError> {
    let focus = validate::text("focus", &input.focus, 1, 80)?;
    if !(1..=52).contains(&input.weeks) {
        return Err(CommandError::invalid("weeks", "must be 1 to 52"));
    }
    let started = TrainingBlockStarted {
        training_block_id: TrainingBlockId::generate(),
        start_day: input.start_day,
        weeks: input.weeks,
        focus,
    };
    // A day is written `YYYY-MM-DD`: a block ending after 9999 could not be read back.
    let planned = (input.start_day.date())
        .checked_add_days(chrono::Days::new(u64::from(input.weeks) * 7 - 1));
    if planned.is_none_or(|last| chrono::Datelike::year(&last) > 9999) {
        return Err(CommandError::invalid(
            "start_day",
            "the block would end after 9999-12-31",
        ));
    }
    Ok(started)
}

/// Ending the block stored as `item` under `key` on `ended_on`: the write (only if it
/// still exists and has not ended) and the block; a conflict when it has ended already,
/// an invalid `ended_on` outside its planned days.
fn block_ending(
    key: Key,
    item: Item,
    ended_on: Day,
) -> Result<(Action, TrainingBlockStarted), CommandError> {
    if item.contains_key("ended_on") {
        return Err(CommandError::Conflict(
            "the training block has ended already".into(),
        ));
    }
    let block: TrainingBlockStarted = from_item(item)?;
    let planned_end = block.planned_last_day();
    if ended_on < block.start_day || ended_on > planned_end {
        return Err(CommandError::invalid(
            "ended_on",
            format!("must be from {} to {planned_end}", block.start_day),
        ));
    }
    let ending = Action::Update {
        key,
        update: Update::default().set("ended_on", serde_json::json!(ended_on)),
        condition: Some(Condition::All(vec![
            Condition::ItemExists,
            Condition::AttributeNotExists("ended_on".into()),
        ])),
    };
    Ok((ending, block))
}

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::Activity as ACTIVITY;
    use infra::access::{AccessPattern as P, Action::*, Op, Sk, Written as W};

    const EVENT: W = W::new(Put, ACTIVITY, "USER#", "EVT#");

    /// The activity commands' calls.
    pub static ACCESS: &[P] = &[
        P::transact(
            "log a workout",
            command_tx!(
                Activity,
                "USER#",
                [W::new(Put, ACTIVITY, "USER#", "WORKOUT#"), EVENT]
            ),
            "POST /v1/me/workouts",
        )
        .volume(0.5)
        .size(2, 600),
        P::transact(
            "start a training block",
            command_tx!(
                Activity,
                "USER#",
                [W::new(Put, ACTIVITY, "USER#", "TRAINING_BLOCK#"), EVENT,]
            ),
            "POST /v1/me/training-blocks",
        )
        .volume(0.02)
        .size(2, 500),
        P::new(
            "a training block, to end it",
            ACTIVITY,
            Op::get(true),
            "USER#",
            Sk::exact("TRAINING_BLOCK#"),
            "POST /v1/me/training-blocks/{start_day}/{id}/end",
        )
        .volume(0.02)
        .size(1, 400),
        P::transact(
            "end a training block",
            command_tx!(
                Activity,
                "USER#",
                [W::new(Update, ACTIVITY, "USER#", "TRAINING_BLOCK#"), EVENT,]
            ),
            "POST /v1/me/training-blocks/{start_day}/{id}/end",
        )
        .volume(0.02)
        .size(2, 500),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> Day {
        Day::parse(text).expect("day")
    }

    fn stored_block(weeks: u8) -> (Key, Item) {
        let block = new_training_block(&StartTrainingBlock {
            start_day: day("2026-03-02"),
            weeks,
            focus: "base".into(),
        })
        .expect("valid");
        let key = Key::new("USER#u", "TRAINING_BLOCK#2026-03-02#b");
        let item = to_item(&key, &block).expect("item");
        (key, item)
    }

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).expect("timestamp")
    }

    fn entered_run() -> RecordWorkout {
        RecordWorkout {
            sport: "Run".into(),
            started_at: at("2026-03-01T23:30:00.000Z"),
            timezone: "Europe/Berlin".into(),
            duration_s: 2400,
            distance_m: Some(8000),
            calories: Some(520),
            perceived_effort: Some(6),
        }
    }

    #[test]
    fn an_entered_workout_is_version_one_on_its_local_day() {
        // Given a run started at 23:30 UTC, entered from Berlin,
        let now = at("2026-03-02T08:00:00.000Z");
        let id = WorkoutId::generate();
        // when it is recorded, then it is the first version of a manual workout, on the
        // next day in Berlin (00:30 local), its sport in lower case.
        let w = new_workout(now, &entered_run(), id.clone()).expect("valid");
        assert_eq!(w.workout_id, id);
        assert_eq!(w.day, Day::parse("2026-03-02").expect("day"));
        assert_eq!((w.sport.as_str(), w.version), ("run", 1));
        assert_eq!(w.source, Source::Manual);
        assert_eq!(
            (w.duration_s, w.distance_m, w.calories),
            (2400, Some(8000), Some(520))
        );
        assert_eq!(w.perceived_effort, Some(6));
    }

    #[test]
    fn an_entered_workout_out_of_range_names_its_field() {
        let now = at("2026-03-02T08:00:00.000Z");
        type Spoil = fn(&mut RecordWorkout);
        let cases: [(Spoil, &str); 7] = [
            (|w| w.perceived_effort = Some(0), "perceived_effort"),
            (|w| w.perceived_effort = Some(11), "perceived_effort"),
            (|w| w.duration_s = 0, "duration_s"),
            (|w| w.distance_m = Some(1_000_001), "distance_m"),
            (|w| w.calories = Some(20_001), "calories"),
            (|w| w.timezone = "Mars/Olympus".into(), "timezone"),
            (|w| w.sport = String::new(), "sport"),
        ];
        for (spoil, field) in cases {
            let mut input = entered_run();
            spoil(&mut input);
            let error = new_workout(now, &input, WorkoutId::generate()).expect_err(field);
            assert!(error.to_string().contains(field), "{error} names {field}");
        }
    }

    #[test]
    fn a_training_block_is_one_to_fifty_two_weeks_with_a_focus() {
        let start = |weeks, focus: &str| StartTrainingBlock {
            start_day: day("2026-03-02"),
            weeks,
            focus: focus.into(),
        };
        let block = new_training_block(&start(4, "base")).expect("valid");
        assert_eq!((block.weeks, block.focus.as_str()), (4, "base"));
        for (input, field) in [
            (start(0, "base"), "weeks"),
            (start(53, "base"), "weeks"),
            (start(4, ""), "focus"),
        ] {
            let error = new_training_block(&input).expect_err("invalid");
            assert!(error.to_string().contains(field), "{error} names {field}");
        }
        // A block must end by 9999-12-31, the last day a `YYYY-MM-DD` can name.
        let late = |from: &str, weeks| StartTrainingBlock {
            start_day: day(from),
            ..start(weeks, "base")
        };
        let last_week = new_training_block(&late("9999-12-25", 1)).expect("ends on the 31st");
        assert_eq!(last_week.planned_last_day(), day("9999-12-31"));
        let error = new_training_block(&late("9999-12-26", 1)).expect_err("ends in 10000");
        assert!(error.to_string().contains("start_day"), "{error}");
    }

    #[test]
    fn a_block_ends_within_its_planned_days_once() {
        // Given a two-week block from Monday the 2nd (planned last day: the 15th),
        let (key, item) = stored_block(2);
        // when it ends on the 10th, then it is marked only if it still has not ended;
        let (ending, block) =
            block_ending(key.clone(), item.clone(), day("2026-03-10")).expect("within its days");
        assert_eq!(block.planned_last_day(), day("2026-03-15"));
        match ending {
            Action::Update {
                key: written,
                update,
                condition,
            } => {
                assert_eq!(written, key);
                assert_eq!(update.set["ended_on"], serde_json::json!("2026-03-10"));
                assert_eq!(
                    condition,
                    Some(Condition::All(vec![
                        Condition::ItemExists,
                        Condition::AttributeNotExists("ended_on".into()),
                    ]))
                );
            }
            other => panic!("not an update: {other:?}"),
        }
        // a day outside the block is refused, naming the field;
        for outside in ["2026-03-01", "2026-03-16"] {
            let error = block_ending(key.clone(), item.clone(), day(outside)).expect_err("outside");
            assert!(error.to_string().contains("ended_on"), "{error}");
        }
        // and a block that has ended does not end again.
        let mut ended = item;
        ended.insert("ended_on".into(), serde_json::json!("2026-03-10"));
        assert!(matches!(
            block_ending(key, ended, day("2026-03-11")),
            Err(CommandError::Conflict(_))
        ));
    }
}

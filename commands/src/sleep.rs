//! Sleep: sessions entered in the app or synced from a wearable by external id.
//! Items: `SLEEP#<date>#<id>`, `EXTERNAL#<provider>#<external-id>`.

use crate::external_sync;
use crate::meta::{CommandMeta, Outcome};
use crate::{CommandError, validate};
use events_schema::events::Source;
use events_schema::events::integrations::ProviderSleep;
use events_schema::events::sleep::{SleepRecorded, SleepSession, SleepStages, SleepUpdated};
use events_schema::ids::{ProviderName, SleepId};
use events_schema::keys::SortKey;
use events_schema::time::{Day, Timestamp};
use infra::table::contexts::Sleep;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordSleep {
    pub start: Timestamp,
    pub end: Timestamp,
    pub timezone: String,
    pub score: u8,
    #[serde(default)]
    pub stages: SleepStages,
}

struct ValidSleep {
    night: Day,
    start: Timestamp,
    end: Timestamp,
    score: u8,
    stages: SleepStages,
}

fn validate_sleep(
    now: Timestamp,
    start: Timestamp,
    end: Timestamp,
    timezone: &str,
    score: u8,
    stages: SleepStages,
) -> Result<ValidSleep, CommandError> {
    let start = validate::instant("start", start, now)?;
    let end = validate::instant("end", end, now)?;
    let tz = validate::timezone("timezone", timezone)?;
    let minutes = (end.millis() - start.millis()) / 60_000;
    if end <= start || minutes > 24 * 60 {
        return Err(CommandError::invalid(
            "end",
            "must be after start, at most 24 hours later",
        ));
    }
    if score > 100 {
        return Err(CommandError::invalid("score", "must be 0 to 100"));
    }
    let staged = [
        stages.awake_min,
        stages.light_min,
        stages.deep_min,
        stages.rem_min,
    ]
    .iter()
    .map(|m| u64::from(*m))
    .sum::<u64>();
    if staged > minutes as u64 + 1 {
        return Err(CommandError::invalid(
            "stages",
            "add up to more than the session",
        ));
    }
    Ok(ValidSleep {
        night: validate::day_in(start, tz),
        start,
        end,
        score,
        stages,
    })
}

fn session(id: SleepId, valid: &ValidSleep, source: Source, version: u64) -> SleepSession {
    SleepSession {
        sleep_id: id,
        night: valid.night,
        start: valid.start,
        end: valid.end,
        score: valid.score,
        stages: valid.stages,
        source,
        version,
    }
}

/// The session `input` records under `id`, told apart from now: the night it began in
/// the user's timezone, version 1 of an entered session; an invalid-field error
/// otherwise.
fn new_session(
    now: Timestamp,
    input: &RecordSleep,
    id: SleepId,
) -> Result<SleepSession, CommandError> {
    let valid = validate_sleep(
        now,
        input.start,
        input.end,
        &input.timezone,
        input.score,
        input.stages,
    )?;
    Ok(session(id, &valid, Source::Manual, 1))
}

impl external_sync::Synced for SleepSession {
    type Recorded = SleepRecorded;
    type Updated = SleepUpdated;
    fn began(&self) -> Timestamp {
        self.start
    }
    fn day(&self) -> Day {
        self.night
    }
    fn sort_key(&self) -> SortKey {
        SortKey::Sleep(self.night, self.sleep_id.clone())
    }
    fn recorded(&self) -> SleepRecorded {
        SleepRecorded {
            session: self.clone(),
        }
    }
    fn updated(&self, moved_from: Option<Day>) -> SleepUpdated {
        SleepUpdated {
            session: self.clone(),
            previous_night: moved_from,
        }
    }
}

/// The sleep context's commands: nights entered in the app or synced from a wearable.
pub type SleepCommands = crate::handlers::Handlers<Sleep>;

impl SleepCommands {
    pub async fn record_sleep(
        &self,
        meta: &CommandMeta,
        input: RecordSleep,
    ) -> Result<Outcome<SleepSession>, CommandError> {
        let s = new_session(self.clock.now(), &input, SleepId::generate())?;
        self.record_entered(meta, s, &input).await
    }

    /// Syncs a session from a wearable, idempotent by external id like workouts.
    pub async fn sync_sleep(
        &self,
        meta: &CommandMeta,
        provider: &ProviderName,
        timezone: &str,
        input: &ProviderSleep,
    ) -> Result<Outcome<SleepId>, CommandError> {
        let valid = validate_sleep(
            self.clock.now(),
            input.start,
            input.end,
            timezone,
            input.score,
            input.stages,
        )?;
        self.sync_entity(meta, provider, timezone, input, |id, source, version| {
            session(id, &valid, source, version)
        })
        .await
    }
}

// A wearable's night, versioned by `sync_sleep`.
external_sync::delivered!(ProviderSleep, began: start);

/// The calls this module makes, as declared access patterns (see `infra::access`).
pub(crate) mod access {
    use crate::idempotency::command_tx;
    use events_schema::Context::Sleep as SLEEP;
    use infra::access::{AccessPattern as P, Action::*, Written as W};

    /// The sleep command's call.
    pub static ACCESS: &[P] = &[P::transact(
        "record a night's sleep",
        command_tx!(
            Sleep,
            "USER#",
            [
                W::new(Put, SLEEP, "USER#", "SLEEP#"),
                W::new(Put, SLEEP, "USER#", "EVT#"),
            ]
        ),
        "POST /v1/me/sleep",
    )
    .volume(0.5)
    .size(2, 500)];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).expect("timestamp")
    }

    fn night() -> RecordSleep {
        RecordSleep {
            start: at("2026-03-01T21:30:00.000Z"),
            end: at("2026-03-02T05:30:00.000Z"),
            timezone: "America/New_York".into(),
            score: 82,
            stages: SleepStages {
                awake_min: 20,
                light_min: 250,
                deep_min: 90,
                rem_min: 120,
            },
        }
    }

    #[test]
    fn an_entered_session_is_version_one_of_the_night_it_began() {
        // Given eight hours from 16:30 in New York,
        let now = at("2026-03-02T12:00:00.000Z");
        let id = SleepId::generate();
        // when it is recorded, then it is the first version of a manual session of the
        // 1st (local), with its score and stages.
        let s = new_session(now, &night(), id.clone()).expect("valid");
        assert_eq!(s.sleep_id, id);
        assert_eq!(s.night, Day::parse("2026-03-01").expect("day"));
        assert_eq!(
            (s.score, s.version, s.source.clone()),
            (82, 1, Source::Manual)
        );
        assert_eq!(s.stages, night().stages);
        assert_eq!((s.start, s.end), (night().start, night().end));
    }

    #[test]
    fn an_entered_session_out_of_range_names_its_field() {
        let now = at("2026-03-02T12:00:00.000Z");
        type Spoil = fn(&mut RecordSleep);
        let cases: [(Spoil, &str); 6] = [
            (|s| s.end = s.start, "end"),
            (|s| s.end = at("2026-03-02T21:31:00.000Z"), "end"),
            (|s| s.score = 101, "score"),
            (|s| s.stages.light_min = 480, "stages"),
            (|s| s.timezone = "Nowhere/Else".into(), "timezone"),
            (|s| s.start = at("2026-03-03T00:00:00.000Z"), "start"),
        ];
        for (spoil, field) in cases {
            let mut input = night();
            spoil(&mut input);
            let error = new_session(now, &input, SleepId::generate()).expect_err(field);
            assert!(error.to_string().contains(field), "{error} names {field}");
        }
    }
}

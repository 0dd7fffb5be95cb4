//! The entry-merged groups of the dashboard's `DAILY#<date>` row: what a workout adds
//! to its day's activity ([`WorkoutEntry`]) and a session to its night's sleep
//! ([`SleepEntry`]), and what the group derives from them ([`activity_of`],
//! [`sleep_of_night`]), as pure typed functions. The entries are stored as JSON in the
//! row (`<group>_entries`, see `rows::merge_group_entry`) and decoded with
//! `convert::live_decoded`.

use crate::convert::{item_of, live_decoded};
use events_schema::events::sleep::SleepStages;
use events_schema::ids::SleepId;
use events_schema::rows::{DailyGroup, DayActivity, NightSleep};
use infra::store::Item;
use serde::{Deserialize, Serialize};

/// A workout's entry in its day's `activity` group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkoutEntry {
    #[serde(default)]
    pub duration_s: u64,
}

/// A session's entry in its night's `sleep` group. Every session has its minutes, score
/// and stages; they are optional here so that a set stored by any release decodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SleepEntry {
    #[serde(default)]
    pub minutes: Option<i64>,
    #[serde(default)]
    pub score: Option<u8>,
    #[serde(default)]
    pub stages: Option<SleepStages>,
}

/// A day's activity from its live workouts.
pub fn activity_of(workouts: &[WorkoutEntry]) -> DayActivity {
    let seconds: u64 = workouts.iter().map(|w| w.duration_s).sum();
    DayActivity {
        workouts: workouts.len() as u32,
        active_minutes: seconds / 60,
    }
}

/// A night's sleep from its live sessions (by id): how many, their minutes in all, and
/// the score and stages of the main session (the longest; of equals, the greatest id).
pub fn sleep_of_night(sessions: &[(&str, SleepEntry)]) -> NightSleep {
    let length = |s: &SleepEntry| s.minutes.and_then(|m| u64::try_from(m).ok());
    let minutes: u64 = sessions.iter().filter_map(|(_, s)| length(s)).sum();
    let main = sessions
        .iter()
        .max_by(|(a_id, a), (b_id, b)| length(a).cmp(&length(b)).then_with(|| a_id.cmp(b_id)));
    NightSleep {
        sessions: sessions.len() as u32,
        minutes: minutes as i64,
        sleep_id: main.and_then(|(id, _)| SleepId::parse(id).ok()),
        score: main.and_then(|(_, s)| s.score),
        stages: main.and_then(|(_, s)| s.stages),
    }
}

/// What a merged group's attribute becomes, from its stored entries.
pub fn derive(group: DailyGroup, entries: &Item) -> Item {
    match group {
        DailyGroup::Activity => {
            let workouts: Vec<WorkoutEntry> =
                live_decoded(entries).into_iter().map(|(_, w)| w).collect();
            item_of(&activity_of(&workouts))
        }
        DailyGroup::Sleep => item_of(&sleep_of_night(&live_decoded(entries))),
        // Written whole, never merged (see `DashboardRows::daily_group`).
        DailyGroup::Nutrition => Item::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(minutes: i64, score: Option<u8>) -> SleepEntry {
        SleepEntry {
            minutes: Some(minutes),
            score,
            stages: None,
        }
    }

    #[test]
    fn a_days_activity_counts_its_workouts_and_whole_minutes() {
        assert_eq!(
            activity_of(&[]),
            DayActivity {
                workouts: 0,
                active_minutes: 0
            }
        );
        let workouts = [
            WorkoutEntry { duration_s: 1_799 },
            WorkoutEntry { duration_s: 61 },
        ];
        assert_eq!(
            activity_of(&workouts),
            DayActivity {
                workouts: 2,
                active_minutes: 31
            }
        );
    }

    #[test]
    fn a_nights_sleep_is_its_sessions_minutes_and_its_longest_sessions_score() {
        let long = "01J00000000000000000000002";
        let short = "01J00000000000000000000001";
        let night = sleep_of_night(&[
            (short, session(40, Some(50))),
            (long, session(420, Some(88))),
        ]);
        assert_eq!(
            (night.sessions, night.minutes, night.score),
            (2, 460, Some(88))
        );
        assert_eq!(
            night.sleep_id.map(|id| id.to_string()),
            Some(long.to_owned())
        );
        // Of two as long, the greatest id is the main one, whatever the order.
        let tied = [(long, session(60, Some(1))), (short, session(60, Some(2)))];
        assert_eq!(sleep_of_night(&tied).score, Some(1));
        let reversed = [tied[1], tied[0]];
        assert_eq!(sleep_of_night(&reversed).score, Some(1));
        // A session without minutes counts, adds none, and is never the main one.
        let odd = [(short, SleepEntry::default()), (long, session(30, None))];
        let night = sleep_of_night(&odd);
        assert_eq!((night.sessions, night.minutes), (2, 30));
        assert_eq!(
            night.sleep_id.map(|id| id.to_string()),
            Some(long.to_owned())
        );
        assert_eq!(sleep_of_night(&[]).sleep_id, None);
    }

    #[test]
    fn entries_are_stored_as_they_always_were() {
        use crate::convert::value_of;
        let value = value_of(&SleepEntry {
            minutes: Some(480),
            score: None,
            stages: None,
        });
        assert_eq!(
            value,
            serde_json::json!({"minutes": 480, "score": null, "stages": null})
        );
        assert_eq!(
            value_of(&WorkoutEntry { duration_s: 600 }),
            serde_json::json!({"duration_s": 600})
        );
    }
}

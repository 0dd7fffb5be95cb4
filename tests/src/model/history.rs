//! Random per-user histories: what a few users do over some weeks, as a phone would ask
//! it. Generated from a seed, so a failing case is reproduced from the seed alone.
//! Indices into "the user's meals" or "their goals" are resolved when the history runs
//! (modulo how many there are then), so every generated history is runnable.

use events_schema::events::goals::{GoalKind, GoalStatus};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Timezones far enough apart that a user's day is often not the UTC day: the first and
/// the last to start a day (UTC+14, UTC-12), a half-hour offset, and two that change
/// their clocks on different dates (Europe/Paris, America/New_York).
pub const TIMEZONES: [&str; 7] = [
    "UTC",
    "Pacific/Kiritimati",
    "Etc/GMT+12",
    "Asia/Kolkata",
    "America/New_York",
    "Europe/Paris",
    "Pacific/Pago_Pago",
];

/// Minutes of the UTC day where some user's day, or clock, changes: midnight in UTC,
/// UTC+14 (10:00), UTC-12 (12:00), Kolkata (18:30), Paris (23:00 in winter, 22:00 in
/// summer), New York (05:00, 04:00); Paris changes its clocks at 01:00 UTC, New York
/// at 07:00 (spring) and 06:00 (autumn).
const EDGES: [i64; 11] = [0, 600, 720, 1110, 1380, 1320, 300, 240, 60, 420, 360];

const KINDS: [GoalKind; 5] = [
    GoalKind::WeeklyWorkoutCount,
    GoalKind::WeeklyActiveMinutes,
    GoalKind::DailyProteinGrams,
    GoalKind::WeeklyDistanceKm,
    GoalKind::NightlySleepHours,
];

/// When a fact happened, relative to the history's "now": that many days back, at that
/// minute of the (UTC) day.
#[derive(Debug, Clone, Copy)]
pub struct When {
    pub days_ago: i64,
    pub minute: i64,
}

/// What a provider says about one of its records, at one of its revisions.
#[derive(Debug, Clone)]
pub enum Synced {
    Workout {
        when: When,
        duration_s: u32,
        distance_m: Option<u32>,
    },
    Sleep {
        when: When,
        minutes: i64,
        score: u8,
    },
}

impl Synced {
    fn keep_start_of(&mut self, previous: &Synced) {
        match (self, previous) {
            (Synced::Workout { when, .. }, Synced::Workout { when: before, .. })
            | (Synced::Sleep { when, .. }, Synced::Sleep { when: before, .. }) => *when = *before,
            _ => {}
        }
    }
}

#[derive(Debug, Clone)]
pub enum Op {
    /// Time passes.
    Advance {
        minutes: i64,
    },
    LogMeal {
        when: When,
        tz: usize,
        protein: u32,
        calories: u32,
    },
    EditMeal {
        meal: usize,
        when: When,
        tz: usize,
        protein: u32,
        calories: u32,
    },
    DeleteMeal {
        meal: usize,
    },
    /// Logs a deleted meal again, as it was (deleted by mistake).
    LogAgain {
        meal: usize,
    },
    RecordWorkout {
        when: When,
        duration_s: u32,
        distance_m: Option<u32>,
    },
    RecordSleep {
        when: When,
        minutes: i64,
        score: u8,
    },
    /// Connects the sandbox provider as the user's watch number `watch` (0 or 1).
    Connect {
        watch: usize,
    },
    Disconnect,
    /// A webhook delivery of revision `revision` of provider record `record` (the
    /// user's, by number); `record` decides workout or sleep.
    Deliver {
        record: usize,
        revision: usize,
    },
    CreateGoal {
        kind: GoalKind,
        target: u32,
    },
    ChangeGoal {
        goal: usize,
        status: GoalStatus,
    },
    ChangeTimezone {
        tz: usize,
    },
    /// The account's deletion; the user does nothing after it.
    DeleteAccount,
}

/// One user's provider records: for each, its revisions in the order the provider made
/// them (revision i has updated_at = i + 1 minutes into the history).
#[derive(Debug, Clone)]
pub struct ProviderRecords {
    pub records: Vec<Vec<Synced>>,
}

#[derive(Debug, Clone)]
pub struct Step {
    pub user: usize,
    pub op: Op,
}

#[derive(Debug, Clone)]
pub struct History {
    pub seed: u64,
    pub users: usize,
    /// Each user's timezone at registration.
    pub timezones: Vec<usize>,
    pub provider: Vec<ProviderRecords>,
    pub steps: Vec<Step>,
}

/// Mostly today or the last days (what a goal set recently counts), sometimes weeks back;
/// at any minute, or (a third of the time) within twenty minutes of an edge where some
/// user's day or clock changes.
fn when(rng: &mut StdRng) -> When {
    let days_ago = match rng.gen_range(0..100) {
        0..=59 => 0,
        60..=84 => rng.gen_range(1..=2),
        _ => rng.gen_range(3..=12),
    };
    let minute = if rng.gen_bool(0.35) {
        let edge = EDGES[rng.gen_range(0..EDGES.len())];
        (edge + rng.gen_range(-20..=20)).rem_euclid(24 * 60)
    } else {
        rng.gen_range(0..24 * 60)
    };
    When { days_ago, minute }
}

fn synced(rng: &mut StdRng, workout: bool) -> Synced {
    if workout {
        Synced::Workout {
            when: when(rng),
            duration_s: rng.gen_range(1..=7200),
            distance_m: rng.gen_bool(0.7).then(|| rng.gen_range(0..40_000)),
        }
    } else {
        Synced::Sleep {
            when: when(rng),
            minutes: rng.gen_range(1..=720),
            score: rng.gen_range(0..=100),
        }
    }
}

impl History {
    /// A history of `users` users and about `steps` steps.
    pub fn generate(seed: u64, users: usize, steps: usize) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let timezones = (0..users)
            .map(|_| rng.gen_range(0..TIMEZONES.len()))
            .collect();
        // Each user's provider records: a few, each with 1 to 4 revisions (a later
        // revision may move the record to another day).
        let provider = (0..users)
            .map(|_| ProviderRecords {
                records: (0..rng.gen_range(1..=4))
                    .map(|r| {
                        let workout = r % 2 == 0;
                        let mut revisions: Vec<Synced> = Vec::new();
                        for _ in 0..rng.gen_range(1..=4) {
                            let mut next = synced(&mut rng, workout);
                            // Half the later revisions correct the record in place (same
                            // start, other fields); the others move it.
                            if let Some(previous) = revisions.last()
                                && rng.gen_bool(0.5)
                            {
                                next.keep_start_of(previous);
                            }
                            revisions.push(next);
                        }
                        revisions
                    })
                    .collect(),
            })
            .collect();
        let mut generated = Vec::with_capacity(steps);
        // Goals first, for most users: the facts that follow count towards them.
        for user in 0..users {
            for _ in 0..rng.gen_range(0..=3) {
                generated.push(Step {
                    user,
                    op: Op::CreateGoal {
                        kind: KINDS[rng.gen_range(0..KINDS.len())],
                        target: rng.gen_range(1..=20),
                    },
                });
            }
        }
        while generated.len() < steps {
            let user = rng.gen_range(0..users);
            generated.push(Step {
                user,
                op: next_op(&mut rng),
            });
        }
        // In half the histories the first user deletes their account late on (and
        // does nothing after): the others' rows must not notice, and nothing of theirs
        // may remain.
        if rng.gen_bool(0.5) {
            let at = rng.gen_range(generated.len() * 2 / 3..=generated.len());
            generated.insert(
                at,
                Step {
                    user: 0,
                    op: Op::DeleteAccount,
                },
            );
        }
        Self {
            seed,
            users,
            timezones,
            provider,
            steps: generated,
        }
    }
}

fn next_op(rng: &mut StdRng) -> Op {
    let tz = rng.gen_range(0..TIMEZONES.len());
    match rng.gen_range(0..100) {
        // Mostly hours, sometimes a week or more (past the dashboard's window).
        0..=4 => Op::Advance {
            minutes: if rng.gen_bool(0.75) {
                rng.gen_range(30..=24 * 60)
            } else {
                rng.gen_range(3 * 24 * 60..=10 * 24 * 60)
            },
        },
        5..=9 => Op::LogAgain {
            meal: rng.gen_range(0..100),
        },
        // Round quantities, as people log them: the same totals come back often (a
        // meal deleted and logged again), which is what once stopped progress.
        10..=29 => Op::LogMeal {
            when: when(rng),
            tz: if rng.gen_bool(0.7) { usize::MAX } else { tz },
            protein: 10 * rng.gen_range(0..=6),
            calories: 100 * rng.gen_range(0..=12),
        },
        30..=36 => Op::EditMeal {
            meal: rng.gen_range(0..100),
            when: when(rng),
            tz,
            protein: 10 * rng.gen_range(0..=6),
            calories: 100 * rng.gen_range(0..=12),
        },
        37..=40 => Op::DeleteMeal {
            meal: rng.gen_range(0..100),
        },
        42..=49 => Op::RecordWorkout {
            when: when(rng),
            duration_s: rng.gen_range(1..=7200),
            distance_m: rng.gen_bool(0.6).then(|| rng.gen_range(0..30_000)),
        },
        50..=55 => Op::RecordSleep {
            when: when(rng),
            minutes: rng.gen_range(1..=720),
            score: rng.gen_range(0..=100),
        },
        56..=60 => Op::Connect {
            watch: rng.gen_range(0..2),
        },
        61..=62 => Op::Disconnect,
        63..=77 => Op::Deliver {
            record: rng.gen_range(0..4),
            revision: rng.gen_range(0..4),
        },
        78..=87 => Op::CreateGoal {
            kind: KINDS[rng.gen_range(0..KINDS.len())],
            target: rng.gen_range(1..=20),
        },
        88..=93 => Op::ChangeGoal {
            goal: rng.gen_range(0..100),
            status: [
                GoalStatus::Active,
                GoalStatus::Paused,
                GoalStatus::Completed,
                GoalStatus::Abandoned,
            ][rng.gen_range(0..4)],
        },
        _ => Op::ChangeTimezone { tz },
    }
}

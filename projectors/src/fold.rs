//! Folding a user's records of a Lambda batch: the records are applied in order by the
//! subscriptions' own code on an [`infra::folded::Folded`] view of their tables, then
//! each changed row is written once, conditioned on being as read, and the user's
//! tombstone is looked up once, strongly consistent, after the writes (a user erased
//! meanwhile has the rows just written swept, as [`crate::erasure::Guarded`] would).
//!
//! A fold is only tried where it can only help: two or more records of the user, every
//! subscription they reach among [`crate::registry::foldable`], every record decoding.
//! Any failure (a projection's error, a store error, a row another worker changed
//! since it was read) abandons the fold, and the caller applies the user's records one
//! at a time as before, with their retries and dead letters: a projection converges
//! under re-application, so what a half-written flush left is harmless.

use crate::projector::Projector;
use crate::runtime::Handler;
use events_schema::Context;
use events_schema::envelope::EventEnvelope;
use events_schema::ids::UserId;
use events_schema::keys::PartitionKey;
use events_schema::time::Clock;
use infra::feed::FeedRecord;
use infra::folded::Folded;
use infra::{Store, StoreError};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tracing::Instrument as _;

/// Folds of a user's records tried before they are applied one at a time: a fold that
/// met another writer's change (another lane's batch of the same user: the stream's
/// partition key is the item's, so a user's records spread over the lanes) reads the
/// rows again and folds anew; what its first flush wrote is then already as folded.
const ATTEMPTS: u32 = 3;

/// Why a fold did not apply.
#[derive(Debug)]
enum Failure {
    /// A row changed since it was read: worth folding again.
    Raced(String),
    Other(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Raced(why) | Failure::Other(why) => f.write_str(why),
        }
    }
}

/// What a consumer folds with: the store its handlers write, the clock its projections
/// tell time by, and the names of the subscriptions that fold.
#[derive(Clone)]
pub struct Folding {
    base: Arc<dyn Store>,
    clock: Clock,
    names: Arc<BTreeSet<&'static str>>,
    tally: Arc<Tally>,
}

/// How many folds applied, were tried again and were abandoned, since the [`Folding`] was made
/// (its clones count together).
#[derive(Debug, Default)]
pub struct Tally {
    pub applied: std::sync::atomic::AtomicU64,
    /// Folds tried again after a flush met another writer's change.
    pub retried: std::sync::atomic::AtomicU64,
    pub abandoned: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Folding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Folding")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// What became of a user's records.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Applied, folded.
    Applied,
    /// Not worth or not fit for a fold (nothing was read or written).
    Unfit,
    /// Tried and given up (the caller applies the records one at a time).
    Abandoned,
}

/// A record's event, and the handlers it reaches.
struct Step<'a> {
    event: EventEnvelope,
    handlers: Vec<&'a Handler>,
}

impl Folding {
    /// Folds on `base` (the store the consumer's handlers write), telling time by
    /// `clock` as the handlers' projections do.
    pub fn new(base: Arc<dyn Store>, clock: Clock) -> Self {
        let names = crate::registry::foldable(base.clone(), &clock)
            .iter()
            .map(|p| p.name())
            .collect();
        Self {
            base,
            clock,
            names: Arc::new(names),
            tally: Arc::default(),
        }
    }

    /// The folds applied and abandoned so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// The user's records as events with the handlers each reaches, when a fold fits:
    /// two or more records, all decoding, of one user, reaching only foldable
    /// subscriptions (at least one).
    fn plan<'a>(
        &self,
        handlers: &'a [Handler],
        records: &[&FeedRecord],
    ) -> Option<(UserId, Vec<Step<'a>>)> {
        if records.len() < 2 {
            return None;
        }
        let mut user = None;
        let mut steps = Vec::new();
        for record in records {
            let event = match record.envelope() {
                None => continue,
                Some(Ok(event)) => event,
                Some(Err(_)) => return None,
            };
            let reached: Vec<&Handler> = handlers
                .iter()
                .filter(|h| {
                    let p = h.projector();
                    p.source() == record.table && p.consumes().contains(&event.event_type.as_str())
                })
                .collect();
            if reached
                .iter()
                .any(|h| !self.names.contains(h.projector().name()))
            {
                return None;
            }
            let id = event.user_id.clone()?;
            if user.get_or_insert_with(|| id.clone()) != &id {
                return None;
            }
            steps.push(Step {
                event,
                handlers: reached,
            });
        }
        let reached: usize = steps.iter().map(|s| s.handlers.len()).sum();
        (reached > 0).then_some(())?;
        Some((user?, steps))
    }

    /// Applies the user's `records` folded, if a fold fits; see the module docs.
    pub async fn apply(&self, handlers: &[Handler], records: &[&FeedRecord]) -> Outcome {
        let Some((user, steps)) = self.plan(handlers, records) else {
            return Outcome::Unfit;
        };
        let mut attempt = 1;
        let folded = loop {
            match self.fold(&user, &steps).await {
                Err(Failure::Raced(_)) if attempt < ATTEMPTS => {
                    attempt += 1;
                    self.tally.retried.fetch_add(1, Ordering::Relaxed);
                }
                other => break other,
            }
        };
        match folded {
            Ok(()) => {
                for step in &steps {
                    for handler in &step.handlers {
                        handler.metrics().processed.fetch_add(1, Ordering::Relaxed);
                        handler.observe_lag(&step.event);
                        // As one at a time says it: each subscription's application of
                        // each event, in the event's span (the request's trace).
                        handler
                            .event_span(&step.event)
                            .in_scope(|| tracing::info!(folded = true, "event applied"));
                    }
                }
                self.tally.applied.fetch_add(1, Ordering::Relaxed);
                Outcome::Applied
            }
            Err(reason) => {
                self.tally.abandoned.fetch_add(1, Ordering::Relaxed);
                tracing::info!(%reason, records = records.len(), "a fold was abandoned: applying the records one at a time");
                Outcome::Abandoned
            }
        }
    }

    async fn fold(&self, user: &UserId, steps: &[Step<'_>]) -> Result<(), Failure> {
        let targets: BTreeSet<Context> = steps
            .iter()
            .flat_map(|s| &s.handlers)
            .map(|h| h.projector().target())
            .collect();
        let view = Arc::new(Folded::new(self.base.clone(), targets.iter().copied()));
        let projectors: HashMap<&'static str, Arc<dyn Projector>> =
            crate::registry::foldable(view.clone(), &self.clock)
                .into_iter()
                .map(|p| (p.name(), p))
                .collect();
        for step in steps {
            for handler in &step.handlers {
                let name = handler.projector().name();
                let projector = projectors
                    .get(name)
                    .ok_or_else(|| Failure::Other(format!("{name} does not fold")))?;
                let apply = projector
                    .apply(&step.event)
                    .instrument(handler.event_span(&step.event));
                let applied = match step.event.correlation_id.clone() {
                    Some(id) => commands::correlation::scope(id, apply).await,
                    None => apply.await,
                };
                applied.map_err(|e| Failure::Other(format!("{name}: {e}")))?;
            }
        }
        let written = view.flush().await.map_err(|e| match e {
            StoreError::ConditionFailed { .. } => Failure::Raced(format!("flush: {e}")),
            other => Failure::Other(format!("flush: {other}")),
        })?;
        tracing::debug!(
            events = steps.len(),
            rows_read = view.rows_read(),
            written,
            "folded"
        );
        self.sweep_if_erased(user, steps, &targets)
            .await
            .map_err(Failure::Other)
    }

    /// The one look at the user's tombstone per table, after the writes: whatever a
    /// fold wrote for a user erased meanwhile is drained (the guarded projection's
    /// second look; its first look only spares work, and a fold of an erased user's
    /// records is rare).
    async fn sweep_if_erased(
        &self,
        user: &UserId,
        steps: &[Step<'_>],
        targets: &BTreeSet<Context>,
    ) -> Result<(), String> {
        let pk = PartitionKey::User(user.clone()).to_string();
        for target in targets {
            let guarded = steps
                .iter()
                .flat_map(|s| &s.handlers)
                .find(|h| h.projector().target() == *target)
                .ok_or_else(|| format!("no subscription writes {target}"))?;
            if guarded
                .projector()
                .erased(user)
                .await
                .map_err(|e| e.to_string())?
            {
                infra::store::drain_partition(&*self.base, *target, &pk)
                    .await
                    .map_err(|e| e.to_string())?;
                tracing::info!(%target, "swept what a fold wrote for an erased user");
            }
        }
        Ok(())
    }
}

/// A fold's own calls, generated from the folded subscriptions' declared writes: each
/// row of a kind they write read once (strongly consistent), then written once,
/// conditioned on being as read (created, changed or deleted).
pub fn fold_access() -> Vec<&'static infra::access::AccessPattern> {
    use infra::access::{AccessPattern as P, Op, Sk};
    static PATTERNS: std::sync::OnceLock<Vec<P>> = std::sync::OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        let mut patterns = Vec::new();
        for projector in crate::registry::described_foldable() {
            let subscription = projector.subscription();
            for kind in subscription.writes {
                let kind = infra::access::intern(kind);
                let ops = [
                    ("a row read once for a fold", Op::get(true)),
                    ("a folded row created", Op::Put),
                    ("a folded row changed", Op::Update),
                    ("a folded row deleted", Op::Delete),
                ];
                for (name, op) in ops {
                    let feature =
                        "a Lambda batch's records of one user, folded (projector Lambdas)";
                    let pattern = P::new(
                        name,
                        subscription.target,
                        op,
                        "USER#",
                        Sk::exact(kind),
                        feature,
                    )
                    .volume(0.0)
                    .size(1, 400);
                    if !patterns.iter().any(|p: &P| p.shape == pattern.shape) {
                        patterns.push(pattern);
                    }
                }
            }
        }
        patterns
    });
    patterns.iter().collect()
}

//! The erasure chain: the order in which the contexts erase a user, which event sets off
//! each link, and the names of erasure's subscriptions.

use events_schema::Context;

/// The order in which the contexts erase a user: the first link's eraser is set off by
/// identity's `AccountDeletionRequested`, every other by the `PartitionDrained` of the
/// link before it (read from that context's stream), and identity's [`Completer`](super::Completer) by the
/// last link's. Every context that holds a user's data drains, identity last; not
/// environment, which holds none (weather and air per place and hour) and publishes no
/// changes.
///
/// Why this order. In production a stream consumer writes one table, with an event
/// source mapping per stream it reads; a shard serves 5 `GetRecords` calls a second to
/// all of them and a mapping polls about once a second, so at most 4 target tables read
/// any stream (a call a second is left for redrive or an operator). Erasers all set off
/// by identity's request had 7 target tables read identity's stream, and completers on
/// every context's stream put an identity reader on each (5 on nutrition and activity).
/// Here each link reads one stream for one table, and rides a (source -> target) pair
/// that exists already (a projection's, or identity -> integrations and dashboard ->
/// identity, an eraser's and the completer's before), except goals -> sleep and
/// insights -> dashboard, which land on streams with room. The target tables reading
/// each stream:
///
/// | stream | target tables |
/// |---|---|
/// | identity | dashboard, integrations |
/// | nutrition | activity, dashboard, goals, insights |
/// | activity | dashboard, goals, insights, nutrition |
/// | sleep | dashboard, goals, insights |
/// | goals | dashboard, goals, sleep |
/// | integrations | activity, dashboard, sleep |
/// | insights | dashboard |
/// | dashboard | identity |
pub const ERASURE_CHAIN: [Context; 7] = [
    Context::Integrations,
    Context::Activity,
    Context::Nutrition,
    Context::Goals,
    Context::Sleep,
    Context::Insights,
    Context::Dashboard,
];

/// The chain's last link: its `PartitionDrained` is what the [`Completer`](super::Completer) reads.
pub const LAST: Context = ERASURE_CHAIN[ERASURE_CHAIN.len() - 1];

/// The context whose event sets off `context`'s eraser: identity (its deletion request)
/// for the chain's first link, the link before for the others; `None` for a context
/// outside the chain.
pub fn set_off_by(context: Context) -> Option<Context> {
    let at = ERASURE_CHAIN.iter().position(|c| *c == context)?;
    Some(
        at.checked_sub(1)
            .map_or(Context::Identity, |i| ERASURE_CHAIN[i]),
    )
}

/// Whether `name` is one of erasure's subscriptions (an eraser or the completer), by
/// the names given here.
pub fn is_erasure_subscription(name: &str) -> bool {
    Context::ALL
        .into_iter()
        .any(|c| eraser_name(c) == name || completer_name(c) == name)
}

pub(crate) fn eraser_name(context: Context) -> &'static str {
    match context {
        Context::Identity => "erase-identity",
        Context::Nutrition => "erase-nutrition",
        Context::Activity => "erase-activity",
        Context::Sleep => "erase-sleep",
        Context::Goals => "erase-goals",
        Context::Integrations => "erase-integrations",
        Context::Environment => "erase-environment",
        Context::Insights => "erase-insights",
        Context::Dashboard => "erase-dashboard",
    }
}

pub(super) fn completer_name(context: Context) -> &'static str {
    match context {
        Context::Identity => "identity-from-identity-erasure",
        Context::Nutrition => "identity-from-nutrition-erasure",
        Context::Activity => "identity-from-activity-erasure",
        Context::Sleep => "identity-from-sleep-erasure",
        Context::Goals => "identity-from-goals-erasure",
        Context::Integrations => "identity-from-integrations-erasure",
        Context::Environment => "identity-from-environment-erasure",
        Context::Insights => "identity-from-insights-erasure",
        Context::Dashboard => "identity-from-dashboard-erasure",
    }
}

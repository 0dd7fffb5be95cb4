//! `vitals cost`: what one user costs on the AWS shape, and what the stack costs at rest.
//!
//! A realistic user-day runs through the real HTTP router, command handlers and
//! projectors, on an embedded store that counts every request and prices it as DynamoDB
//! bills it ([`infra::counting`], [`infra::capacity`]). After each request every outbox
//! event it wrote is applied by every subscription of its stream, as the stream
//! consumers do (no checkpoints: on AWS the event source mapping keeps the position).
//! The figures are then priced at on-demand list prices ([`Prices`], which a JSON file
//! can override), and the stack's fixed monthly floor is read from the generated
//! template. The output for the default workload is committed as `docs/cost.md`.
//!
//! Assumptions, stated in the output: one projector invocation per outbox event and
//! function it is delivered to (each projector function's mapping passes only the event
//! types its subscriptions apply; an upper bound: a mapping batches up to 100 records of
//! many users into one invocation), a
//! Lambda duration per invocation, and Kinesis bytes of one KB per change-data-capture
//! unit (an upper bound).
//!
//! Layout:
//! - `pricing`: the list prices, the stack's fixed parts read from the template, and
//!   what some usage costs in dollars.
//! - `usage`: what requests used (counts, capacity units, projector invocations), and
//!   the lines of the user-day.
//! - `model`: the app on a counting embedded store, with every subscription applied
//!   after each request.
//! - `scenario`: the user-day itself, request by request.
//! - `report`: the Markdown report (`docs/cost.md`).

mod model;
mod pricing;
mod report;
mod scenario;
mod usage;

pub use self::pricing::{Dollars, Prices, Stack};
pub use self::report::{render, stream_readers};
pub use self::scenario::user_day;
pub use self::usage::{Line, Usage};

/// `vitals cost`: the report for the default workload at `prices`.
pub async fn report(prices: &Prices) -> anyhow::Result<String> {
    let (lines, setup) = user_day().await?;
    let plan = crate::deploy::plan::plan();
    let template = crate::deploy::template::render(&plan);
    let stack = Stack::from_template(&template);
    let mut out = render(&lines, &setup, prices, &stack);
    out.push_str(&stream_readers(&plan, prices, &stack));
    Ok(out)
}

//! The AWS shape as code: `vitals deploy template` renders the CloudFormation stack from
//! the table definitions and the subscription registry, so the two cannot drift (the
//! output is committed as `deploy/template.json` and a test compares them).
//!
//! - [`plan`]: what runs where: published tables, one consumer per stream and what it
//!   fans out to, what each function reads and writes (and why one consumer per stream).
//! - [`iam`]: the trust policy the roles share.
//! - [`names`]: the logical ids the template's parts share.
//! - [`template`]: the CloudFormation JSON rendered from the plan.
//! - [`grafana`]: the self-hosted shape's Grafana dashboard, from the `/metrics` families.
//! - [`dashboard`]: the CloudWatch dashboard an operator looks at first.
//! - [`rollout`]: versions, `live` aliases and CodeDeploy's gradual, self-rolling-back deployments.
//! - [`alarms`]: the alarms (each on a metric something emits) and the topic they notify.
//! - [`matrix`]: the access matrix read back from the template's roles (`vitals deploy
//!   matrix`, committed as `docs/access-matrix.md`).

pub mod alarms;
pub mod api_functions;
pub mod dashboard;
pub mod grafana;
pub mod iam;
pub mod matrix;
pub mod names;
pub mod plan;
pub mod rollout;
pub mod template;

/// The stack's template, as committed (pretty JSON, newline-terminated).
pub fn template_text() -> String {
    let template = template::render(&plan::plan());
    format!(
        "{}\n",
        serde_json::to_string_pretty(&template).unwrap_or_default()
    )
}

/// The tables-only template a restore adopts restored tables with (pretty JSON).
pub fn tables_text() -> String {
    format!(
        "{}\n",
        serde_json::to_string_pretty(&template::render_tables()).unwrap_or_default()
    )
}

/// The access matrix of the stack's roles, as committed (`docs/access-matrix.md`).
pub fn matrix_text() -> String {
    matrix::document(&template::render(&plan::plan()))
}

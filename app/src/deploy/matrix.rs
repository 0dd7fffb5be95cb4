//! The access matrix (`vitals deploy matrix`, committed as `docs/access-matrix.md`): read
//! back from the rendered template itself, not from the plan, so it shows what the roles
//! grant. Every function's role statements are resolved from their CloudFormation forms
//! (`Fn::GetAtt [XTable, Arn]`, `Fn::Sub ${XTable.Arn}/index/*`, a log group's ARN,
//! `Ref` to a secret) to the logical resources they name, their actions grouped.

use super::template::table_id;
use events_schema::Context;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// What an action does, in the order the document lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Read,
    Write,
    Describe,
    Stream,
    Queue,
    Secret,
    Logs,
    Other,
}

impl Group {
    pub fn of(action: &str) -> Group {
        let (service, name) = action.split_once(':').unwrap_or(("", action));
        match service {
            "dynamodb" if name.starts_with("Describe") => Group::Describe,
            "dynamodb" => match name {
                "GetItem" | "BatchGetItem" | "Query" | "Scan" | "ConditionCheckItem" => Group::Read,
                "PutItem" | "UpdateItem" | "DeleteItem" | "BatchWriteItem" => Group::Write,
                _ => Group::Other,
            },
            "kinesis" => Group::Stream,
            "sqs" => Group::Queue,
            "secretsmanager" => Group::Secret,
            "logs" => Group::Logs,
            _ => Group::Other,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Group::Read => "read",
            Group::Write => "write",
            Group::Describe => "describe",
            Group::Stream => "stream",
            Group::Queue => "queue",
            Group::Secret => "secret",
            Group::Logs => "logs",
            Group::Other => "other",
        }
    }
}

/// A resource a statement names, resolved to the template's logical resource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// A context's table (`indexes`: its indexes, `<table ARN>/index/*`).
    Table {
        context: Context,
        indexes: bool,
    },
    Stream(String),
    Queue(String),
    Secret(String),
    Logs(String),
    /// A form this module does not resolve (the test requires there is none).
    Unresolved(String),
}

impl Target {
    fn label(&self) -> String {
        match self {
            Target::Table {
                context,
                indexes: false,
            } => format!("`{context}` table (`{}`)", table_id(*context)),
            Target::Table {
                context,
                indexes: true,
            } => format!(
                "`{context}` table's indexes (`{}/index/*`)",
                table_id(*context)
            ),
            Target::Stream(id) => format!("Kinesis stream `{id}`"),
            Target::Queue(id) => format!("SQS queue `{id}`"),
            Target::Secret(id) => format!("secret `{id}`"),
            Target::Logs(id) => format!("log group `{id}`"),
            Target::Unresolved(raw) => format!("unresolved `{raw}`"),
        }
    }

    /// The context table this is (a table or its indexes).
    fn context(&self) -> Option<Context> {
        match self {
            Target::Table { context, .. } => Some(*context),
            _ => None,
        }
    }
}

/// The actions granted in one group, and the statements (`Sid`) granting them.
pub type Granted = (BTreeSet<String>, BTreeSet<String>);

/// One function: its logical id, its role's logical id and what the role grants.
#[derive(Debug, Clone)]
pub struct Access {
    pub function: String,
    pub role: String,
    pub grants: BTreeMap<Target, BTreeMap<Group, Granted>>,
}

impl Access {
    /// Whether the function may act on `context`'s table (or its indexes) in `group`.
    pub fn may(&self, context: Context, group: Group) -> bool {
        self.grants
            .iter()
            .any(|(t, groups)| t.context() == Some(context) && groups.contains_key(&group))
    }

    pub fn writes(&self) -> Vec<Context> {
        Context::ALL
            .into_iter()
            .filter(|c| self.may(*c, Group::Write))
            .collect()
    }
}

fn context_of_table(id: &str) -> Option<Context> {
    Context::ALL.into_iter().find(|c| table_id(*c) == id)
}

fn one_or_many(value: &Value) -> Vec<Value> {
    match value {
        Value::Array(all) => all.clone(),
        Value::Null => Vec::new(),
        one => vec![one.clone()],
    }
}

/// The logical resource a statement's resource names.
fn resolve(resources: &Map<String, Value>, resource: &Value) -> Target {
    let kind = |id: &str| {
        resources
            .get(id)
            .map(|r| r["Type"].as_str().unwrap_or_default())
    };
    let by_id = |id: &str| match (kind(id), context_of_table(id)) {
        (Some("AWS::DynamoDB::Table"), Some(context)) => Some(Target::Table {
            context,
            indexes: false,
        }),
        (Some("AWS::Kinesis::Stream"), _) => Some(Target::Stream(id.to_owned())),
        (Some("AWS::SQS::Queue"), _) => Some(Target::Queue(id.to_owned())),
        (Some("AWS::SecretsManager::Secret"), _) => Some(Target::Secret(id.to_owned())),
        _ => None,
    };
    let resolved = if let Some(id) = resource["Fn::GetAtt"][0].as_str() {
        (resource["Fn::GetAtt"][1] == "Arn")
            .then(|| by_id(id))
            .flatten()
    } else if let Some(id) = resource["Ref"].as_str() {
        by_id(id)
    } else if let Some(sub) = resource["Fn::Sub"].as_str() {
        if let Some(table) = sub
            .strip_prefix("${")
            .and_then(|s| s.strip_suffix(".Arn}/index/*"))
        {
            context_of_table(table)
                .filter(|_| kind(table) == Some("AWS::DynamoDB::Table"))
                .map(|context| Target::Table {
                    context,
                    indexes: true,
                })
        } else if let Some(group) = sub
            .split_once(":log-group:")
            .and_then(|(_, g)| g.strip_suffix(":*"))
        {
            resources
                .iter()
                .find(|(_, r)| {
                    r["Type"] == "AWS::Logs::LogGroup"
                        && r["Properties"]["LogGroupName"]["Fn::Sub"] == group
                })
                .map(|(id, _)| Target::Logs(id.clone()))
        } else {
            None
        }
    } else {
        None
    };
    resolved.unwrap_or_else(|| Target::Unresolved(resource.to_string()))
}

/// The order functions are listed in: the API functions and the projectors, each by the
/// context whose table it writes (the read-only API last of its kind), the nightly job,
/// anything else.
fn function_rank(function: &Value) -> (u8, usize) {
    let variables = &function["Properties"]["Environment"]["Variables"];
    let written = |name: &str| {
        Context::ALL
            .iter()
            .position(|c| variables[name] == c.as_str())
            .unwrap_or(Context::ALL.len())
    };
    match variables["VITALS_ROLE"].as_str() {
        Some("api") => (0, written("VITALS_API_WRITES")),
        Some("stream") => (1, written("VITALS_TARGET")),
        Some("nightly") => (2, 0),
        _ => (3, 0),
    }
}

/// Every function of `template` and what its role grants.
pub fn accesses(template: &Value) -> Vec<Access> {
    let empty = Map::new();
    let resources = template["Resources"].as_object().unwrap_or(&empty);
    let mut functions: Vec<(&String, &Value)> = resources
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::Lambda::Function")
        .collect();
    functions.sort_by_key(|(id, f)| (function_rank(f), id.to_owned()));
    functions
        .into_iter()
        .map(|(id, function)| {
            let role = function["Properties"]["Role"]["Fn::GetAtt"][0]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let mut access = Access {
                function: id.clone(),
                role: role.clone(),
                grants: BTreeMap::new(),
            };
            let policies = one_or_many(
                &resources.get(&role).unwrap_or(&Value::Null)["Properties"]["Policies"],
            );
            for statement in policies
                .iter()
                .flat_map(|p| one_or_many(&p["PolicyDocument"]["Statement"]))
                .filter(|s| s["Effect"] == "Allow")
            {
                let sid = statement["Sid"].as_str().unwrap_or("(no Sid)").to_owned();
                let actions = one_or_many(&statement["Action"]);
                for resource in one_or_many(&statement["Resource"]) {
                    let target = resolve(resources, &resource);
                    for action in actions.iter().filter_map(Value::as_str) {
                        let (granted, sids) = access
                            .grants
                            .entry(target.clone())
                            .or_default()
                            .entry(Group::of(action))
                            .or_default();
                        granted.insert(action.to_owned());
                        sids.insert(sid.clone());
                    }
                }
            }
            access
        })
        .collect()
}

/// Why each API function reads the tables of other contexts it reads (a projector and
/// the nightly job read only the table they write).
fn read_reasons() -> String {
    let mut out = String::from(
        "\n## Why a function reads another context's table\n\n\
         A projector function reads only the table it writes, the nightly job only insights. \
         The API functions' reads beyond their own table:\n\n",
    );
    for api in super::api_functions::api_functions() {
        for (table, reasons) in &api.reads {
            if Some(*table) == api.writes {
                continue;
            }
            let _ = writeln!(
                out,
                "- `{}` reads `{table}`: {}",
                api.name,
                reasons.join("; ")
            );
        }
    }
    out
}

/// The document's title and introduction.
const INTRODUCTION: &str = "# Access matrix\n\n\
    <!-- Generated by `vitals deploy matrix` from the stack's template; do not edit. \
    Regenerate with `cargo run -p vitals -- deploy matrix > docs/access-matrix.md` \
    (a test in app/tests/deploy_template.rs fails when it drifts). -->\n\n\
    What each function of the stack may do, read back from the IAM roles of the \
    generated template (the one committed as `deploy/template.json`; every `Fn::GetAtt`/`Fn::Sub`/`Ref` resolved to the logical \
    resource it names). Every call the stack run makes is checked against these roles \
    by `scripts/iam_check.py` (see README, \"IAM is enforced\").\n\n\
    The design wants one writable context table per function, and the stack keeps it: \
    every function below may write at most one context table (a test in \
    app/tests/deploy_template.rs fails otherwise). The HTTP API runs as one function \
    per context that owns commands (API Gateway routes each operation to the function \
    owning the table it writes) and a read-only one; each projector function runs \
    the subscriptions writing one table, fed by a mapping on each stream they read. \
    The identity projector's writes are the erasure's completion (the last context \
    of the erasure chain reports its partition drained).\n\n";

/// Appends the summary table: a row per function, an `R`/`W`/`RW` cell per context.
fn write_summary(out: &mut String, accesses: &[Access]) {
    out.push_str("## Summary\n\n");
    out.push_str(
        "`R`: may read the context's table (and its indexes); `W`: may write it; `RW`: both.\n\n",
    );
    out.push_str("| Function |");
    for c in Context::ALL {
        let _ = write!(out, " {c} |");
    }
    out.push_str("\n|---|");
    for _ in Context::ALL {
        out.push_str(":-:|");
    }
    out.push('\n');
    for a in accesses {
        let _ = write!(out, "| `{}` |", a.function);
        for c in Context::ALL {
            let cell = match (a.may(c, Group::Read), a.may(c, Group::Write)) {
                (true, true) => "RW",
                (true, false) => "R",
                (false, true) => "W",
                (false, false) => "",
            };
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out.push('\n');
}

/// Appends a line per function saying which context tables it may write.
fn write_counts(out: &mut String, accesses: &[Access]) {
    for a in accesses {
        let writes = a.writes();
        let names: Vec<String> = writes.iter().map(|c| format!("`{c}`")).collect();
        let _ = writeln!(
            out,
            "- `{}` may write {} context table{}{}{}",
            a.function,
            writes.len(),
            if writes.len() == 1 { "" } else { "s" },
            if writes.is_empty() { "" } else { ": " },
            names.join(", ")
        );
    }
}

/// Appends a function's section: a row per resource and group of actions its role grants.
fn write_role(out: &mut String, a: &Access) {
    let _ = write!(
        out,
        "\n## `{}` (role `{}`)\n\n| Resource | Access | Actions | Statement |\n|---|---|---|---|\n",
        a.function, a.role
    );
    for (target, groups) in &a.grants {
        for (group, (actions, sids)) in groups {
            let actions: Vec<String> = actions.iter().map(|x| format!("`{x}`")).collect();
            let sids: Vec<&str> = sids.iter().map(String::as_str).collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                target.label(),
                group.name(),
                actions.join(", "),
                sids.join(", ")
            );
        }
    }
}

/// The Markdown document.
pub fn document(template: &Value) -> String {
    let accesses = accesses(template);
    let mut out = String::from(INTRODUCTION);
    write_summary(&mut out, &accesses);
    write_counts(&mut out, &accesses);
    out.push_str(&read_reasons());
    for a in &accesses {
        write_role(&mut out, a);
    }
    out
}

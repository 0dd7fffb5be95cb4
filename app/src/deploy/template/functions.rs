//! What every function of the stack shares: its definition running the one package with
//! its log group, its role (its own logs, then its statements), the DynamoDB statements
//! of what it reads and writes, its alarms added under their ids, and its rollout.

use crate::deploy::alarms::Alarm;
use crate::deploy::iam;
use crate::deploy::names::table_id;
use crate::deploy::rollout::{self, Rollout};
use events_schema::Context;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// How long the functions' and the API's logs are kept.
pub(super) const LOG_RETENTION_DAYS: u32 = 14;

/// A function's physical name: `${Prefix}<suffix>`.
fn function_name(suffix: &str) -> Value {
    json!({"Fn::Sub": format!("${{Prefix}}{suffix}")})
}

/// A function running the package as `role`, with its log group and role ids.
pub(super) fn function(
    id: &str,
    suffix: &str,
    role: &str,
    memory: u32,
    timeout: u32,
    env: Value,
) -> Map<String, Value> {
    let mut variables = json!({
        "VITALS_ROLE": role,
        "VITALS_BACKEND": "dynamodb",
        "VITALS_TABLE_PREFIX": {"Ref": "Prefix"},
        "RUST_LOG": "info"
    });
    if let (Some(all), Value::Object(extra)) = (variables.as_object_mut(), env) {
        all.extend(extra);
    }
    let mut resources = Map::new();
    resources.insert(
        format!("{id}Logs"),
        json!({
            "Type": "AWS::Logs::LogGroup",
            "Properties": {
                "LogGroupName": {"Fn::Sub": format!("/aws/lambda/${{Prefix}}{suffix}")},
                "RetentionInDays": LOG_RETENTION_DAYS
            }
        }),
    );
    resources.insert(
        id.to_owned(),
        json!({
            "Type": "AWS::Lambda::Function",
            "DependsOn": [format!("{id}Logs")],
            "Properties": {
                "FunctionName": function_name(suffix),
                "Runtime": "provided.al2023",
                "Handler": "bootstrap",
                "Architectures": [{"Ref": "Architecture"}],
                "Code": {"S3Bucket": {"Ref": "CodeBucket"}, "S3Key": {"Ref": "CodeKey"}},
                "MemorySize": memory,
                "Timeout": timeout,
                "Role": {"Fn::GetAtt": [format!("{id}Role"), "Arn"]},
                "Environment": {"Variables": variables}
            }
        }),
    );
    resources
}

/// The role of function `id`: its own log group, and `statements`.
pub(super) fn role(id: &str, suffix: &str, mut statements: Vec<Value>) -> Value {
    statements.insert(
        0,
        json!({
            "Sid": "OwnLogs",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": {"Fn::Sub": format!(
                "arn:${{AWS::Partition}}:logs:${{AWS::Region}}:${{AWS::AccountId}}:log-group:/aws/lambda/${{Prefix}}{suffix}:*"
            )}
        }),
    );
    json!({
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": iam::assumed_by("lambda.amazonaws.com"),
            "Policies": [{
                "PolicyName": format!("{id}Access"),
                "PolicyDocument": {"Version": "2012-10-17", "Statement": statements}
            }]
        }
    })
}

/// The DynamoDB actions a function needs on what it reads and what it writes (every
/// index of those tables with them). A table written may also be batch-written: the
/// partition drain (account deletion, the erased-user sweep, the nightly job) deletes in
/// `BatchWriteItem` pages.
pub fn dynamodb_statements(reads: &BTreeSet<Context>, writes: &BTreeSet<Context>) -> Vec<Value> {
    let resources = |tables: &BTreeSet<Context>| -> Vec<Value> {
        tables
            .iter()
            .flat_map(|c| {
                [
                    json!({"Fn::GetAtt": [table_id(*c), "Arn"]}),
                    json!({"Fn::Sub": format!("${{{}.Arn}}/index/*", table_id(*c))}),
                ]
            })
            .collect()
    };
    let mut statements = vec![json!({
        "Sid": "ReadTables",
        "Effect": "Allow",
        "Action": ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:ConditionCheckItem"],
        "Resource": resources(reads)
    })];
    if !writes.is_empty() {
        statements.push(json!({
            "Sid": "WriteTables",
            "Effect": "Allow",
            "Action": ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
                       "dynamodb:BatchWriteItem"],
            "Resource": resources(writes)
        }));
    }
    statements
}

/// Adds `alarms` to `resources` under their logical ids.
pub(super) fn insert_alarms(resources: &mut Map<String, Value>, alarms: Vec<(String, Alarm)>) {
    for (id, alarm) in alarms {
        resources.insert(id, alarm.resource());
    }
}

/// Function `id`'s version, alias and deployment group (see [`rollout::resources`]),
/// rolled out as `kind`, rolled back on `rollback`: added to `resources`, which holds the
/// function's definition.
pub(super) fn insert_rollout(
    resources: &mut Map<String, Value>,
    id: &str,
    kind: Rollout,
    rollback: &[String],
) {
    let definition = resources[id].clone();
    resources.extend(rollout::resources(id, &definition, kind, rollback));
}

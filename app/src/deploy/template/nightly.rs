//! The nightly readiness job: its function, its role on the tables it reads and writes,
//! the hourly schedule invoking it, its alarms and its rollout (all at once).

use super::functions::{dynamodb_statements, function, insert_alarms, role};
use crate::deploy::alarms;
use crate::deploy::plan::NIGHTLY_WRITES;
use crate::deploy::rollout::{self, Rollout};
use events_schema::Context;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The nightly job's function, role, schedule, alarms and rollout.
pub(super) fn nightly_resources() -> Map<String, Value> {
    let id = "NightlyFunction";
    let mut resources = function(id, "nightly", "nightly", 256, 900, json!({}));
    let writes: BTreeSet<Context> = NIGHTLY_WRITES.into_iter().collect();
    let statements = dynamodb_statements(&writes, &writes);
    resources.insert(format!("{id}Role"), role(id, "nightly", statements));
    resources.insert(
        "NightlySchedule".into(),
        json!({
            "Type": "AWS::Events::Rule",
            "Properties": {
                "Description": "Scores readiness for the days that have ended in every timezone, going on from where the last run stopped.",
                // Hourly: a run finds the days ended everywhere itself (UTC-12 ends a day at
                // 12:00 UTC the next day) and does nothing once they are finished; a day
                // that one invocation's 15 minutes did not finish goes on an hour later,
                // and the timeout being shorter than the hour keeps runs from overlapping.
                "ScheduleExpression": "cron(5 * * * ? *)",
                "Targets": [{"Id": "nightly", "Arn": {"Ref": rollout::alias_id(id)}}]
            }
        }),
    );
    resources.insert(
        "NightlyScheduleInvokes".into(),
        json!({
            "Type": "AWS::Lambda::Permission",
            "Properties": {
                "FunctionName": {"Ref": rollout::alias_id(id)},
                "Action": "lambda:InvokeFunction",
                "Principal": "events.amazonaws.com",
                "SourceArn": {"Fn::GetAtt": ["NightlySchedule", "Arn"]}
            }
        }),
    );
    insert_alarms(&mut resources, alarms::nightly_alarms(id));
    let definition = resources[id].clone();
    let rollback = [format!("{id}Errors")];
    resources.extend(rollout::resources(
        id,
        &definition,
        Rollout::AllAtOnce,
        &rollback,
    ));
    resources
}

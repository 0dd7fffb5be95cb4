//! The template's rollouts, structurally (the local emulator has no CodeDeploy: the
//! stack run checks that a new package publishes a new version the alias serves):
//! - every function is invoked only through its `live` alias: the API's integrations,
//!   the event source mappings, the schedule and every invoke permission name the alias;
//! - the alias points at a published version whose description changes with the package
//!   and the function's definition (so an update publishes), kept when replaced;
//! - CodeDeploy shifts each alias (canary for the API, linear for the projectors, at once
//!   for the hourly job), rolling back on failure and on alarms that exist and watch that
//!   function (or the API it serves).

use serde_json::{Value, json};
use vitals::deploy::rollout::alias_id;

fn template() -> Value {
    serde_json::from_str(&vitals::deploy::template_text()).expect("the template is JSON")
}

fn of_type<'a>(template: &'a Value, kind: &str) -> Vec<(&'a String, &'a Value)> {
    template["Resources"]
        .as_object()
        .expect("resources")
        .iter()
        .filter(|(_, r)| r["Type"] == kind)
        .collect()
}

#[test]
fn every_invoker_calls_the_live_alias() {
    let template = template();
    let functions: Vec<&String> = of_type(&template, "AWS::Lambda::Function")
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(functions.len(), 17);
    let aliases: Vec<Value> = functions
        .iter()
        .map(|id| json!({"Ref": alias_id(id)}))
        .collect();
    let bare = |value: &Value| {
        functions
            .iter()
            .any(|id| *value == json!({"Ref": id}) || *value == json!({"Fn::GetAtt": [id, "Arn"]}))
    };
    let mut invokers = 0;
    for (id, mapping) in of_type(&template, "AWS::Lambda::EventSourceMapping") {
        let target = &mapping["Properties"]["FunctionName"];
        assert!(
            aliases.contains(target) && !bare(target),
            "{id} invokes {target}"
        );
        invokers += 1;
    }
    for (id, integration) in of_type(&template, "AWS::ApiGatewayV2::Integration") {
        let target = &integration["Properties"]["IntegrationUri"];
        assert!(aliases.contains(target), "{id} invokes {target}");
        invokers += 1;
    }
    for (id, permission) in of_type(&template, "AWS::Lambda::Permission") {
        let target = &permission["Properties"]["FunctionName"];
        assert!(aliases.contains(target), "{id} lets {target} be invoked");
        invokers += 1;
    }
    for (id, rule) in of_type(&template, "AWS::Events::Rule") {
        for target in rule["Properties"]["Targets"].as_array().expect("targets") {
            assert!(
                aliases.contains(&target["Arn"]),
                "{id} invokes {}",
                target["Arn"]
            );
            invokers += 1;
        }
    }
    assert!(invokers >= 30, "{invokers} invokers");
}

#[test]
fn every_alias_is_shifted_by_codedeploy_and_rolled_back_on_its_alarms() {
    let template = template();
    let resources = template["Resources"].as_object().expect("resources");
    for (id, function) in of_type(&template, "AWS::Lambda::Function") {
        let alias = &resources[&alias_id(id)];
        assert_eq!(alias["Type"], "AWS::Lambda::Alias", "{id}");
        assert_eq!(alias["Properties"]["Name"], "live");
        let version_id = alias["Properties"]["FunctionVersion"]["Fn::GetAtt"][0]
            .as_str()
            .expect("a version of the template");
        let version = &resources[version_id];
        assert_eq!(version["Type"], "AWS::Lambda::Version");
        assert_eq!(version["Properties"]["FunctionName"], json!({"Ref": id}));
        assert_eq!(
            version["UpdateReplacePolicy"], "Retain",
            "{id}: old versions stay for rollback"
        );
        let description = version["Properties"]["Description"]["Fn::Sub"]
            .as_str()
            .expect("a description");
        assert!(
            description.contains("${CodeKey}"),
            "{id}: a new package publishes"
        );
        let definition = {
            use sha2::Digest as _;
            format!(
                "{:x}",
                sha2::Sha256::digest(function.to_string().as_bytes())
            )
        };
        assert!(
            description.contains(&definition[..16]),
            "{id}: a new definition publishes"
        );

        let update = &alias["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"];
        assert_eq!(update["ApplicationName"], json!({"Ref": "Deployments"}));
        let group_id = update["DeploymentGroupName"]["Ref"]
            .as_str()
            .expect("a group");
        let group = &resources[group_id]["Properties"];
        let config = group["DeploymentConfigName"].as_str().expect("a config");
        let expected = match (id.as_str(), id.ends_with("Projector")) {
            ("NightlyFunction", _) => "CodeDeployDefault.LambdaAllAtOnce",
            (_, true) => "CodeDeployDefault.LambdaLinear10PercentEvery1Minute",
            _ => "CodeDeployDefault.LambdaCanary10Percent5Minutes",
        };
        assert_eq!(config, expected, "{id}");
        assert_eq!(group["AutoRollbackConfiguration"]["Enabled"], true);
        let events = group["AutoRollbackConfiguration"]["Events"].to_string();
        assert!(
            events.contains("DEPLOYMENT_STOP_ON_ALARM") && events.contains("DEPLOYMENT_FAILURE")
        );
        let alarms = group["AlarmConfiguration"]["Alarms"]
            .as_array()
            .expect("alarms");
        assert!(!alarms.is_empty(), "{id}: no alarm rolls it back");
        let mut watches_itself = false;
        for alarm in alarms {
            let alarm_id = alarm["Name"]["Ref"]
                .as_str()
                .expect("an alarm of the template");
            let resource = &resources[alarm_id];
            assert_eq!(
                resource["Type"], "AWS::CloudWatch::Alarm",
                "{id}: {alarm_id}"
            );
            let dimensions = resource["Properties"]["Dimensions"].to_string();
            watches_itself |= dimensions.contains(&format!("\"{id}\""));
        }
        assert!(
            watches_itself,
            "{id}: none of its rollback alarms watches it"
        );
    }
    assert_eq!(
        resources["Deployments"]["Properties"]["ComputePlatform"],
        "Lambda"
    );
}

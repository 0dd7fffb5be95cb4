//! Safe rollouts: every function is invoked through its `live` alias (by API Gateway,
//! its event source mappings, the schedule), which points at a published version; a
//! stack update with a new package publishes a new version, and CodeDeploy shifts the
//! alias to it (the API's functions a canary of 10% for 5 minutes, the projectors 10%
//! more each minute, the nightly job at once), rolling back by itself when one of the
//! function's alarms fires meanwhile. The old versions are kept, so a rollback has
//! something to go back to.
//!
//! Why the version's description names the package and a digest of the function's
//! definition: `AWS::Lambda::Version` publishes only when one of its own properties
//! changes, and the code or configuration it snapshots is not one of them.

use serde_json::{Map, Value, json};

/// The CodeDeploy application every function's deployment group belongs to.
pub const APPLICATION_ID: &str = "Deployments";
/// The role CodeDeploy shifts the aliases with.
pub const ROLE_ID: &str = "DeploymentsRole";
/// The alias every caller invokes.
pub const ALIAS: &str = "live";

/// How a function's new version takes over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rollout {
    /// 10% of invocations for 5 minutes, then all (the API's functions).
    Canary,
    /// 10% more every minute (the projectors: a batch at a time is routed by weight).
    Linear,
    /// At once (the hourly job: a canary of an hourly run would see one run).
    AllAtOnce,
}

impl Rollout {
    pub fn config(self) -> &'static str {
        match self {
            Rollout::Canary => "CodeDeployDefault.LambdaCanary10Percent5Minutes",
            Rollout::Linear => "CodeDeployDefault.LambdaLinear10PercentEvery1Minute",
            Rollout::AllAtOnce => "CodeDeployDefault.LambdaAllAtOnce",
        }
    }
}

/// The logical id of function `id`'s `live` alias: what every caller refers to (`Ref`
/// of an alias is its ARN).
pub fn alias_id(id: &str) -> String {
    format!("{id}Live")
}

/// Function `id`'s published version, described by the package and a digest of the
/// function's definition `function` (so that a changed definition publishes anew).
fn version(id: &str, function: &Value) -> Value {
    use sha2::Digest as _;
    let definition = sha2::Sha256::digest(function.to_string().as_bytes());
    let digest: String = format!("{definition:x}").chars().take(16).collect();
    json!({
        "Type": "AWS::Lambda::Version",
        // A new version replaces the resource; the old version stays for rollback.
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
        "Properties": {
            "FunctionName": {"Ref": id},
            "Description": {"Fn::Sub": format!(
                "${{CodeBucket}}/${{CodeKey}} ${{Architecture}} ${{Prefix}} definition {digest}"
            )}
        }
    })
}

/// Function `id`'s `live` alias on the version `version`, shifted by the deployment
/// group `group`.
fn alias(id: &str, version: &str, group: &str) -> Value {
    json!({
        "Type": "AWS::Lambda::Alias",
        "UpdatePolicy": {"CodeDeployLambdaAliasUpdate": {
            "ApplicationName": {"Ref": APPLICATION_ID},
            "DeploymentGroupName": {"Ref": group}
        }},
        "Properties": {
            "FunctionName": {"Ref": id},
            "FunctionVersion": {"Fn::GetAtt": [version, "Version"]},
            "Name": ALIAS
        }
    })
}

/// A deployment group rolling out as `rollout`, rolled back on `alarms` (logical ids).
fn deployment_group(rollout: Rollout, alarms: &[String]) -> Value {
    json!({
        "Type": "AWS::CodeDeploy::DeploymentGroup",
        "Properties": {
            "ApplicationName": {"Ref": APPLICATION_ID},
            "ServiceRoleArn": {"Fn::GetAtt": [ROLE_ID, "Arn"]},
            "DeploymentConfigName": rollout.config(),
            "DeploymentStyle": {"DeploymentType": "BLUE_GREEN", "DeploymentOption": "WITH_TRAFFIC_CONTROL"},
            "AutoRollbackConfiguration": {
                "Enabled": true,
                "Events": ["DEPLOYMENT_FAILURE", "DEPLOYMENT_STOP_ON_ALARM"]
            },
            "AlarmConfiguration": {
                "Enabled": true,
                "Alarms": alarms.iter().map(|a| json!({"Name": {"Ref": a}})).collect::<Vec<_>>()
            }
        }
    })
}

/// The version, alias and deployment group of function `id` (whose definition is
/// `function`), rolled out as `rollout`, rolled back on `alarms` (logical ids).
pub fn resources(
    id: &str,
    function: &Value,
    rollout: Rollout,
    alarms: &[String],
) -> Map<String, Value> {
    let version_id = format!("{id}Version");
    let group = format!("{id}Deployments");
    let mut resources = Map::new();
    resources.insert(version_id.clone(), version(id, function));
    resources.insert(alias_id(id), alias(id, &version_id, &group));
    resources.insert(group, deployment_group(rollout, alarms));
    resources
}

/// The CodeDeploy application and the role it shifts aliases with (AWS's managed
/// policy for Lambda deployments).
pub fn shared_resources() -> Map<String, Value> {
    let mut resources = Map::new();
    resources.insert(
        APPLICATION_ID.into(),
        json!({
            "Type": "AWS::CodeDeploy::Application",
            "Properties": {"ApplicationName": {"Fn::Sub": "${Prefix}vitals"}, "ComputePlatform": "Lambda"}
        }),
    );
    resources.insert(
        ROLE_ID.into(),
        json!({
            "Type": "AWS::IAM::Role",
            "Properties": {
                "AssumeRolePolicyDocument": super::iam::assumed_by("codedeploy.amazonaws.com"),
                "ManagedPolicyArns": [
                    {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/service-role/AWSCodeDeployRoleForLambda"}
                ]
            }
        }),
    );
    resources
}

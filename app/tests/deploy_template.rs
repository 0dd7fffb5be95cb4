//! The committed stack (`deploy/template.json`) is what `vitals deploy template`
//! generates, and it matches what the code defines, checked here from the sources of
//! truth rather than from the generator's plan:
//! - its tables are the table definitions (keys, indexes, TTL, on-demand, recovery,
//!   protection, encryption), and exactly the tables something consumes publish;
//! - every subscription of the registry runs in exactly one stream consumer, on its
//!   source's stream, through one mapping with partial batch failures, bisect, finite
//!   retries and age, an on-failure queue of its own and the outbox filter;
//! - every role is least privilege: a consumer writes only its subscriptions' tables,
//!   reads only its own stream, sends only to its own queue; no secret is in the template.
//!
//! After changing the registry, a table or the generator, regenerate the template (and
//! `docs/access-matrix.md`, what `vitals deploy matrix` prints) with
//! `VITALS_WRITE_TEMPLATE=1 cargo test -p vitals --test deploy_template`. cfn-lint checks
//! it in `scripts/test-all` (scripts/lint-template).

mod support;

use events_schema::Context;
use events_schema::tables::{TABLES, TableDef};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;
use support::Case;
use vitals::deploy::template::{consumer_id, outbox_filter, stream_id, table_id};

const REGENERATE: &str = "VITALS_WRITE_TEMPLATE=1 cargo test -p vitals --test deploy_template";

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/template.json")
}

/// The committed template (what is deployed), parsed.
fn template() -> Value {
    let text = std::fs::read_to_string(committed_path()).expect("deploy/template.json");
    serde_json::from_str(&text).expect("the template is JSON")
}

fn resources(template: &Value) -> &serde_json::Map<String, Value> {
    template["Resources"].as_object().expect("resources")
}

fn of_type<'a>(template: &'a Value, kind: &str) -> Vec<(&'a String, &'a Value)> {
    resources(template)
        .iter()
        .filter(|(_, r)| r["Type"] == kind)
        .collect()
}

#[test]
fn the_committed_template_is_the_generated_one() {
    let generated = vitals::deploy::template_text();
    if std::env::var_os("VITALS_WRITE_TEMPLATE").is_some() {
        std::fs::create_dir_all(committed_path().parent().expect("deploy/")).expect("deploy/");
        std::fs::write(committed_path(), &generated).expect("template written");
        return;
    }
    let committed = std::fs::read_to_string(committed_path()).unwrap_or_default();
    assert!(
        committed == generated,
        "deploy/template.json differs from the generated stack; regenerate with {REGENERATE}"
    );
}

fn committed_matrix_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/access-matrix.md")
}

/// `docs/access-matrix.md` is what `vitals deploy matrix` prints, every resource of every
/// role resolved to the logical resource it names.
#[test]
fn the_committed_access_matrix_is_the_generated_one() {
    let generated = vitals::deploy::matrix_text();
    assert!(
        !generated.contains("unresolved"),
        "every role's resource resolves to a logical resource:\n{generated}"
    );
    if std::env::var_os("VITALS_WRITE_TEMPLATE").is_some() {
        std::fs::write(committed_matrix_path(), &generated).expect("access matrix written");
        return;
    }
    let committed = std::fs::read_to_string(committed_matrix_path()).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/access-matrix.md differs from the generated matrix; regenerate with \
         `cargo run -p vitals -- deploy matrix > docs/access-matrix.md` (or {REGENERATE})"
    );
}

/// Each table of the stack against its definition, then the streams: named cases, in
/// order, each saying its name when it fails.
#[test]
fn the_tables_are_the_table_definitions() {
    let template = template();
    let consumed: BTreeSet<Context> = projectors::registry::described()
        .iter()
        .map(|s| s.source())
        .collect();
    one_table_per_definition(&template);
    for def in &TABLES {
        let table = &resources(&template)[&table_id(def.context)];
        a_table_has_its_definitions_name_keys_and_indexes(table, def);
        a_table_expires_recovers_and_outlives_the_stack(table, def);
        a_table_publishes_exactly_when_something_consumes_it(&template, table, def, &consumed);
    }
    one_stream_per_consumed_table_its_shards_a_parameter(&template, &consumed);
}

/// As many tables in the stack as table definitions.
fn one_table_per_definition(template: &Value) {
    let _case = Case("one table per definition");
    assert_eq!(
        of_type(template, "AWS::DynamoDB::Table").len(),
        TABLES.len()
    );
}

/// The table's name, on-demand billing, key schema and indexes are its definition's.
fn a_table_has_its_definitions_name_keys_and_indexes(table: &Value, def: &TableDef) {
    let _case = Case("a table has its definition's name, keys and indexes");
    let p = &table["Properties"];
    assert_eq!(
        p["TableName"],
        json!({"Fn::Sub": format!("${{Prefix}}{}", def.context)})
    );
    assert_eq!(p["BillingMode"], "PAY_PER_REQUEST");
    assert_eq!(
        p["KeySchema"],
        json!([{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}])
    );
    let indexes: Vec<(String, Value)> = p["GlobalSecondaryIndexes"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|i| {
                    (
                        i["IndexName"].as_str().unwrap_or_default().to_owned(),
                        i["KeySchema"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let defined: Vec<(String, Value)> = def
        .gsis
        .iter()
        .map(|g| {
            let mut keys = vec![json!({"AttributeName": g.partition_key, "KeyType": "HASH"})];
            keys.extend(
                g.sort_key
                    .map(|s| json!({"AttributeName": s, "KeyType": "RANGE"})),
            );
            (g.name.to_owned(), json!(keys))
        })
        .collect();
    assert_eq!(indexes, defined, "{}: indexes", def.context);
}

/// TTL on the definition's attribute, point-in-time recovery, deletion protection,
/// encryption, and users' data retained when the stack goes.
fn a_table_expires_recovers_and_outlives_the_stack(table: &Value, def: &TableDef) {
    let _case = Case("a table expires, recovers and outlives the stack");
    let p = &table["Properties"];
    assert_eq!(
        p["TimeToLiveSpecification"],
        json!({"AttributeName": def.ttl_attribute(), "Enabled": true})
    );
    assert_eq!(
        p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"],
        true
    );
    assert_eq!(p["DeletionProtectionEnabled"], true);
    assert_eq!(p["SSESpecification"]["SSEEnabled"], true);
    assert_eq!(
        table["DeletionPolicy"], "Retain",
        "{}: users' data outlives the stack",
        def.context
    );
}

/// A table publishes to its stream exactly when something consumes it.
fn a_table_publishes_exactly_when_something_consumes_it(
    template: &Value,
    table: &Value,
    def: &TableDef,
    consumed: &BTreeSet<Context>,
) {
    let _case = Case("a table publishes exactly when something consumes it");
    let p = &table["Properties"];
    let publishes = p.get("KinesisStreamSpecification").is_some();
    assert_eq!(
        publishes,
        def.stream && consumed.contains(&def.context),
        "{}: publishes exactly when something consumes it",
        def.context
    );
    if publishes {
        assert_eq!(
            p["KinesisStreamSpecification"]["StreamArn"],
            json!({"Fn::GetAtt": [stream_id(def.context), "Arn"]})
        );
        let stream = &resources(template)[&stream_id(def.context)]["Properties"];
        // Provisioned with the `StreamShards` parameter's shards, on demand when it is 0.
        assert_eq!(
            stream["StreamModeDetails"],
            json!({"Fn::If": ["OnDemandStreams", {"StreamMode": "ON_DEMAND"}, {"StreamMode": "PROVISIONED"}]})
        );
        assert_eq!(
            stream["ShardCount"],
            json!({"Fn::If": ["OnDemandStreams", {"Ref": "AWS::NoValue"}, {"Ref": "StreamShards"}]})
        );
    }
}

/// One stream per consumed table; `StreamShards` (0: on demand) provisions one shard or
/// more by default.
fn one_stream_per_consumed_table_its_shards_a_parameter(
    template: &Value,
    consumed: &BTreeSet<Context>,
) {
    let _case = Case("one stream per consumed table, its shards a parameter");
    assert_eq!(
        of_type(template, "AWS::Kinesis::Stream").len(),
        consumed.len()
    );
    assert_eq!(
        template["Conditions"]["OnDemandStreams"],
        json!({"Fn::Equals": [{"Ref": "StreamShards"}, "0"]})
    );
    let shards = &template["Parameters"]["StreamShards"];
    assert_eq!(shards["Type"], "Number");
    assert!(
        shards["Default"].as_u64().is_some_and(|n| n >= 1),
        "provisioned by default: {shards}"
    );
}

/// The consumer functions: (logical id, source context from its environment).
fn consumers(template: &Value) -> Vec<(String, Context)> {
    of_type(template, "AWS::Lambda::Function")
        .into_iter()
        .filter(|(_, f)| f["Properties"]["Environment"]["Variables"]["VITALS_ROLE"] == "stream")
        .map(|(id, f)| {
            let source = f["Properties"]["Environment"]["Variables"]["VITALS_SOURCE"]
                .as_str()
                .expect("a consumer names its source");
            let source = Context::ALL
                .into_iter()
                .find(|c| c.to_string() == source)
                .expect("a context");
            (id.clone(), source)
        })
        .collect()
}

#[test]
fn every_subscription_runs_in_exactly_one_consumer_on_its_sources_stream() {
    let template = template();
    let consumers = consumers(&template);
    for subscription in projectors::registry::described() {
        let running: Vec<_> = consumers
            .iter()
            .filter(|(_, source)| *source == subscription.source())
            .collect();
        assert_eq!(
            running.len(),
            1,
            "{} runs in {running:?}",
            subscription.name()
        );
    }
    let mappings = of_type(&template, "AWS::Lambda::EventSourceMapping");
    assert_eq!(mappings.len(), consumers.len(), "one mapping per consumer");
    for (id, source) in &consumers {
        assert_eq!(id, &consumer_id(*source));
        let on_it: Vec<_> = mappings
            .iter()
            .filter(|(_, m)| m["Properties"]["FunctionName"] == json!({"Ref": id}))
            .collect();
        assert_eq!(on_it.len(), 1, "{id}: one mapping");
        let m = &on_it[0].1["Properties"];
        assert_eq!(
            m["EventSourceArn"],
            json!({"Fn::GetAtt": [stream_id(*source), "Arn"]})
        );
        assert_eq!(
            m["FunctionResponseTypes"],
            json!(["ReportBatchItemFailures"])
        );
        assert_eq!(m["BisectBatchOnFunctionError"], true);
        let retries = m["MaximumRetryAttempts"].as_i64().expect("finite retries");
        assert!((0..=10).contains(&retries), "{id}: {retries} retries");
        let age = m["MaximumRecordAgeInSeconds"].as_i64().expect("finite age");
        assert!(
            (60..=6 * 3600).contains(&age),
            "{id}: age {age} s, within the stream's retention"
        );
        assert_eq!(
            m["FilterCriteria"],
            json!({"Filters": [{"Pattern": outbox_filter()}]})
        );
        let queue = m["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
            .as_str()
            .expect("an on-failure queue");
        assert_eq!(resources(&template)[queue]["Type"], "AWS::SQS::Queue");
        assert_eq!(
            resources(&template)[queue]["Properties"]["QueueName"],
            json!({"Fn::Sub": vitals::admin::failure_queue("${Prefix}", *source)}),
            "`vitals redrive-failures` finds {queue}"
        );
        let queue_users = mappings
            .iter()
            .filter(|(_, other)| {
                other["Properties"]["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"]
                    [0]
                    == queue
            })
            .count();
        assert_eq!(queue_users, 1, "{queue} is {id}'s own");
        assert!(
            m["BatchSize"]
                .as_i64()
                .is_some_and(|b| (1..=10_000).contains(&b))
        );
        assert!(
            m["ParallelizationFactor"]
                .as_i64()
                .is_some_and(|p| (1..=10).contains(&p))
        );
    }
}

/// The table logical ids a statement's resources name (`Fn::GetAtt` of a table's ARN or
/// `Fn::Sub` of its indexes), and whether every table has its indexes with it.
fn tables_named(statement: &Value) -> BTreeSet<String> {
    let resources = statement["Resource"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let tables: BTreeSet<String> = resources
        .iter()
        .filter_map(|r| r["Fn::GetAtt"][0].as_str().map(str::to_owned))
        .collect();
    let indexes: BTreeSet<String> = resources
        .iter()
        .filter_map(|r| r["Fn::Sub"].as_str())
        .filter_map(|s| {
            s.strip_prefix("${")
                .and_then(|s| s.split('.').next())
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(tables, indexes, "every table's indexes with it");
    tables
}

fn statements(template: &Value, role: &str) -> Vec<Value> {
    let policies = resources(template)[role]["Properties"]["Policies"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    policies
        .iter()
        .flat_map(|p| {
            p["PolicyDocument"]["Statement"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

fn statement(statements: &[Value], sid: &str) -> Option<Value> {
    statements.iter().find(|s| s["Sid"] == sid).cloned()
}

fn ids(contexts: impl IntoIterator<Item = Context>) -> BTreeSet<String> {
    contexts.into_iter().map(table_id).collect()
}

#[test]
fn every_consumer_role_holds_exactly_what_its_subscriptions_need() {
    let template = template();
    let registry = projectors::registry::described();
    for (id, source) in consumers(&template) {
        let role = format!("{id}Role");
        assert_eq!(
            resources(&template)[&id]["Properties"]["Role"],
            json!({"Fn::GetAtt": [role, "Arn"]}),
            "{id} has its own role"
        );
        let statements = statements(&template, &role);
        let targets = ids(registry
            .iter()
            .filter(|s| s.source() == source)
            .map(|s| s.target()));
        let writes = statement(&statements, "WriteTables").expect("writes");
        assert_eq!(
            tables_named(&writes),
            targets,
            "{id} writes its subscriptions' tables only"
        );
        let reads = tables_named(&statement(&statements, "ReadTables").expect("reads"));
        let mut expected_reads = targets.clone();
        expected_reads.insert(table_id(Context::Identity));
        assert_eq!(
            reads, expected_reads,
            "{id} reads its tables and the erasure tombstones"
        );
        let stream = statement(&statements, "OwnStream").expect("stream access");
        assert_eq!(
            stream["Resource"],
            json!({"Fn::GetAtt": [stream_id(source), "Arn"]})
        );
        let queue = statement(&statements, "OwnFailureQueue").expect("queue access");
        assert_eq!(
            queue["Resource"],
            json!({"Fn::GetAtt": [format!("{id}Failures"), "Arn"]})
        );
        assert_eq!(queue["Action"], json!(["sqs:SendMessage"]));
        let sids: BTreeSet<&str> = statements
            .iter()
            .filter_map(|s| s["Sid"].as_str())
            .collect();
        assert_eq!(
            sids,
            BTreeSet::from([
                "OwnLogs",
                "ReadTables",
                "WriteTables",
                "OwnStream",
                "OwnFailureQueue"
            ]),
            "{id}: nothing else"
        );
        for s in &statements {
            assert_ne!(s["Resource"], "*", "{id}: no wildcard resource");
        }
    }
}

#[test]
fn the_api_and_the_nightly_job_hold_no_stream_and_write_no_projection_but_their_own() {
    let template = template();
    let api = statements(&template, "ApiFunctionRole");
    let writes = tables_named(&statement(&api, "WriteTables").expect("api writes"));
    assert!(
        !writes.contains(&table_id(Context::Dashboard)),
        "the API never writes dashboard rows"
    );
    assert!(!writes.contains(&table_id(Context::Insights)));
    assert!(statement(&api, "OwnStream").is_none());
    let nightly = statements(&template, "NightlyFunctionRole");
    let writes = tables_named(&statement(&nightly, "WriteTables").expect("nightly writes"));
    assert_eq!(writes, ids([Context::Insights]));
    let rule = &resources(&template)["NightlySchedule"]["Properties"];
    assert!(
        rule["ScheduleExpression"]
            .as_str()
            .is_some_and(|s| s.starts_with("cron("))
    );
    assert_eq!(
        rule["Targets"][0]["Arn"],
        json!({"Fn::GetAtt": ["NightlyFunction", "Arn"]})
    );
}

/// Every role that writes a table may also empty partitions of it: the partition drain
/// (account deletion, the erased-user sweep of every consumer, the nightly job) deletes
/// in `BatchWriteItem` pages.
#[test]
fn every_role_that_writes_a_table_may_batch_write_it() {
    let template = template();
    let mut roles = 0;
    for (id, _) in of_type(&template, "AWS::IAM::Role") {
        let statements = statements(&template, id);
        let Some(writes) = statement(&statements, "WriteTables") else {
            continue;
        };
        roles += 1;
        let actions = writes["Action"].as_array().cloned().unwrap_or_default();
        assert!(
            actions.contains(&json!("dynamodb:BatchWriteItem")),
            "{id} may BatchWriteItem the tables it writes: {actions:?}"
        );
    }
    assert!(
        roles > 2,
        "the consumers, the API and the nightly job write"
    );
}

/// `/healthz` describes the identity table; only the API serves it.
#[test]
fn the_api_may_describe_the_identity_table_and_no_other_role_any() {
    let template = template();
    let identity = json!({"Fn::GetAtt": [table_id(Context::Identity), "Arn"]});
    for (id, _) in of_type(&template, "AWS::IAM::Role") {
        let describing: Vec<Value> = statements(&template, id)
            .into_iter()
            .filter(|s| {
                s["Action"]
                    .as_array()
                    .is_some_and(|a| a.contains(&json!("dynamodb:DescribeTable")))
            })
            .collect();
        if id == "ApiFunctionRole" {
            assert_eq!(describing.len(), 1, "{id}: {describing:?}");
            assert_eq!(describing[0]["Action"], json!(["dynamodb:DescribeTable"]));
            assert_eq!(describing[0]["Resource"], identity);
        } else {
            assert!(
                describing.is_empty(),
                "{id} describes no table: {describing:?}"
            );
        }
    }
}

#[test]
fn no_secret_is_in_the_template() {
    let template = template();
    for (id, function) in of_type(&template, "AWS::Lambda::Function") {
        let variables = function["Properties"]["Environment"]["Variables"]
            .as_object()
            .expect("env");
        for (name, value) in variables {
            if name.contains("SECRET") {
                assert!(
                    name.ends_with("_ARN"),
                    "{id}: {name} must name a secret, not hold one"
                );
                let secret = value["Ref"].as_str().expect("a reference to a secret");
                assert_eq!(
                    resources(&template)[secret]["Type"],
                    "AWS::SecretsManager::Secret"
                );
                assert!(
                    resources(&template)[secret]["Properties"]
                        .get("SecretString")
                        .is_none(),
                    "{secret} is generated, never written in the template"
                );
                // The function refuses a secret shorter than 32 bytes at start.
                let generated = &resources(&template)[secret]["Properties"]["GenerateSecretString"];
                assert!(
                    generated["PasswordLength"]
                        .as_u64()
                        .is_some_and(|length| length >= 32),
                    "{secret} is generated at least 32 characters long: {generated}"
                );
            }
        }
    }
    let text = template.to_string().to_lowercase();
    for leaked in [
        "sandbox-webhook-secret",
        "begin private key",
        "\"secretstring\"",
    ] {
        assert!(!text.contains(leaked), "the template holds {leaked:?}");
    }
}

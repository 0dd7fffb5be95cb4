//! The committed stack (`deploy/template.json`) is what `vitals deploy template`
//! generates, and it matches what the code defines, checked here from the sources of
//! truth rather than from the generator's plan:
//! - its tables are the table definitions (keys, indexes, TTL, on-demand, recovery,
//!   protection, encryption), and exactly the tables something consumes publish;
//! - every subscription of the registry runs in exactly one projector function (the one
//!   writing its target), fed by a mapping on its source's stream with partial batch
//!   failures, bisect, finite retries and age, the function's own on-failure queue and
//!   an outbox filter passing the event types it applies; no stream has more mappings
//!   than Kinesis' reads allow with one to spare;
//! - every role is least privilege: a projector writes and reads only its own table,
//!   reads only the streams it is fed by, sends only to its own queue; no secret is in
//!   the template.
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
use vitals::deploy::rollout::alias_id;
use vitals::deploy::template::{consumer_id, stream_id, table_id};

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

/// The tables a restore adopts (`vitals deploy tables`) are the stack's tables exactly,
/// but for the stream the stack's update attaches after: the update then changes nothing
/// else of them.
#[test]
fn the_tables_a_restore_adopts_are_the_stacks_tables_without_their_stream() {
    let full = template();
    let tables: Value = serde_json::from_str(&vitals::deploy::tables_text()).expect("JSON");
    let adopted = resources(&tables);
    assert_eq!(adopted.len(), 9);
    for (id, table) in adopted {
        let mut expected = resources(&full)[id].clone();
        if let Some(properties) = expected["Properties"].as_object_mut() {
            properties.remove("KinesisStreamSpecification");
        }
        assert_eq!(table, &expected, "{id}");
        assert_eq!(
            table["DeletionPolicy"], "Retain",
            "{id}: an import needs it"
        );
    }
    assert_eq!(tables["Parameters"]["Prefix"], full["Parameters"]["Prefix"]);
}

/// The webhook secret is held by the one function that takes the providers' webhooks:
/// only its role may read it, only its environment names it.
#[test]
fn only_the_webhook_function_may_read_the_webhook_secret() {
    let template = template();
    let secret = json!({"Ref": "WebhookSecret"});
    let mut holders = Vec::new();
    for (id, function) in of_type(&template, "AWS::Lambda::Function") {
        let named = function["Properties"]["Environment"]["Variables"]
            .get("VITALS_WEBHOOK_SECRET_ARN")
            .is_some();
        let role = function["Properties"]["Role"]["Fn::GetAtt"][0]
            .as_str()
            .expect("a role");
        let statements =
            &resources(&template)[role]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"];
        let may_read = statements.as_array().expect("statements").iter().any(|s| {
            s["Resource"]
                .as_array()
                .is_some_and(|r| r.contains(&secret))
                || s["Resource"] == secret
        });
        assert_eq!(
            named, may_read,
            "{id}: names the secret iff its role may read it"
        );
        if may_read {
            holders.push(id.clone());
        }
    }
    let webhook_function: Vec<String> = vitals::deploy::api_functions::api_functions()
        .into_iter()
        .filter(|f| {
            f.routes
                .iter()
                .any(|r| r == vitals::deploy::api_functions::WEBHOOK_ROUTE)
        })
        .map(|f| f.name.to_owned())
        .collect();
    assert_eq!(holders, webhook_function);
    assert_eq!(holders, ["IntegrationsApi"]);
}

/// `deploy/grafana/vitals.json` is what `vitals deploy grafana` prints. (Its queries are
/// checked against a real Prometheus scraping both shapes: `prometheus_scrape.rs`.)
#[test]
fn the_committed_grafana_dashboard_is_the_generated_one() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/grafana/vitals.json");
    let generated = vitals::deploy::grafana::dashboard_text();
    if std::env::var_os("VITALS_WRITE_TEMPLATE").is_some() {
        std::fs::write(&path, &generated).expect("dashboard written");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "deploy/grafana/vitals.json differs from the generated dashboard; regenerate with \
         `cargo run -p vitals -- deploy grafana > deploy/grafana/vitals.json` (or {REGENERATE})"
    );
}

/// Each table of the stack against its definition, then the streams: named cases, in
/// order, each saying its name when it fails.
/// The design's isolation, read back from the roles as the access matrix shows them: no
/// function may write two context tables.
#[test]
fn no_function_may_write_two_context_tables() {
    let accesses = vitals::deploy::matrix::accesses(&template());
    assert!(accesses.len() > 3, "{accesses:?}");
    for access in &accesses {
        assert!(
            access.writes().len() <= 1,
            "{} may write {:?}",
            access.function,
            access.writes()
        );
    }
}

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
            let target = f["Properties"]["Environment"]["Variables"]["VITALS_TARGET"]
                .as_str()
                .expect("a projector names the table it writes");
            let target = Context::ALL
                .into_iter()
                .find(|c| c.to_string() == target)
                .expect("a context");
            (id.clone(), target)
        })
        .collect()
}

/// The mappings feeding function `id` (through its `live` alias).
fn mappings_of<'a>(template: &'a Value, id: &str) -> Vec<(&'a String, &'a Value)> {
    of_type(template, "AWS::Lambda::EventSourceMapping")
        .into_iter()
        .filter(|(_, m)| m["Properties"]["FunctionName"] == json!({"Ref": alias_id(id)}))
        .collect()
}

/// The event types a mapping's filter passes (outbox items only).
fn filtered_types(mapping: &Value) -> BTreeSet<String> {
    let filters = &mapping["Properties"]["FilterCriteria"]["Filters"];
    assert_eq!(filters.as_array().map(Vec::len), Some(1), "one filter");
    let pattern: Value =
        serde_json::from_str(filters[0]["Pattern"].as_str().expect("a pattern")).expect("JSON");
    let record = &pattern["data"]["dynamodb"];
    assert_eq!(
        record["Keys"]["sk"]["S"],
        json!([{"prefix": "EVT#"}]),
        "outbox items only"
    );
    record["NewImage"]["event_type"]["S"]
        .as_array()
        .expect("event types")
        .iter()
        .map(|t| t.as_str().expect("a type").to_owned())
        .collect()
}

/// Each subscription runs in the one projector writing its target, fed by a mapping on
/// its source's stream that passes every event type it applies.
#[test]
fn every_subscription_runs_in_exactly_one_projector_on_its_sources_stream() {
    let template = template();
    let consumers = consumers(&template);
    for subscription in projectors::registry::described() {
        let running: Vec<_> = consumers
            .iter()
            .filter(|(_, target)| *target == subscription.target())
            .collect();
        assert_eq!(
            running.len(),
            1,
            "{} runs in {running:?}",
            subscription.name()
        );
        let (id, _) = running[0];
        let stream = json!({"Fn::GetAtt": [stream_id(subscription.source()), "Arn"]});
        let on_source: Vec<_> = mappings_of(&template, id)
            .into_iter()
            .filter(|(_, m)| m["Properties"]["EventSourceArn"] == stream)
            .collect();
        assert_eq!(on_source.len(), 1, "{id}: one mapping on {stream}");
        let passed = filtered_types(on_source[0].1);
        for event_type in subscription.consumes() {
            assert!(
                passed.contains(*event_type),
                "{id}'s mapping drops {event_type}, which {} applies",
                subscription.name()
            );
        }
    }
}

/// Every mapping: partial batch failures, bisect, finite retries and age, the function's
/// own on-failure queue (the one `vitals redrive-failures TARGET` reads); and no stream
/// has more mappings than a shard's reads allow with one to spare.
#[test]
fn every_mapping_fails_over_to_its_projectors_own_queue_within_kinesis_limits() {
    let template = template();
    let consumers = consumers(&template);
    let mappings = of_type(&template, "AWS::Lambda::EventSourceMapping");
    let mut per_stream = std::collections::BTreeMap::<String, usize>::new();
    for (id, target) in &consumers {
        assert_eq!(id, &consumer_id(*target));
        let mine = mappings_of(&template, id);
        assert!(!mine.is_empty(), "{id} is fed");
        let queue = format!("{id}Failures");
        for (mapping_id, m) in mine {
            let m = &m["Properties"];
            *per_stream
                .entry(m["EventSourceArn"]["Fn::GetAtt"][0].to_string())
                .or_default() += 1;
            assert_eq!(
                m["FunctionResponseTypes"],
                json!(["ReportBatchItemFailures"])
            );
            assert_eq!(m["BisectBatchOnFunctionError"], true);
            let retries = m["MaximumRetryAttempts"].as_i64().expect("finite retries");
            assert!(
                (0..=10).contains(&retries),
                "{mapping_id}: {retries} retries"
            );
            let age = m["MaximumRecordAgeInSeconds"].as_i64().expect("finite age");
            assert!(
                (60..=6 * 3600).contains(&age),
                "{mapping_id}: age {age} s, within the stream's retention"
            );
            assert_eq!(
                m["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0],
                json!(queue),
                "{mapping_id} fails over to its function's queue"
            );
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
        assert_eq!(resources(&template)[&queue]["Type"], "AWS::SQS::Queue");
        assert_eq!(
            resources(&template)[&queue]["Properties"]["QueueName"],
            json!({"Fn::Sub": vitals::admin::failure_queue("${Prefix}", *target)}),
            "`vitals redrive-failures` finds {queue}"
        );
    }
    let queue_users = mappings
        .iter()
        .filter(|(_, m)| {
            let queue =
                m["Properties"]["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
                    .as_str()
                    .unwrap_or_default();
            let alias = m["Properties"]["FunctionName"]["Ref"]
                .as_str()
                .unwrap_or("?");
            let function = alias.strip_suffix("Live").unwrap_or("?");
            queue != format!("{function}Failures")
        })
        .count();
    assert_eq!(queue_users, 0, "every queue is one function's own");
    for (stream, readers) in per_stream {
        assert!(
            readers <= vitals::deploy::plan::MAX_MAPPINGS_PER_STREAM,
            "{stream} has {readers} mappings: a shard serves 5 GetRecords a second"
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

/// A projector's role writes (and reads) exactly the one table its subscriptions write,
/// reads only the streams it is fed by, and sends only to its own queue.
#[test]
fn every_projector_role_holds_exactly_what_its_subscriptions_need() {
    let template = template();
    let registry = projectors::registry::described();
    for (id, target) in consumers(&template) {
        let role = format!("{id}Role");
        assert_eq!(
            resources(&template)[&id]["Properties"]["Role"],
            json!({"Fn::GetAtt": [role, "Arn"]}),
            "{id} has its own role"
        );
        let statements = statements(&template, &role);
        let writes = statement(&statements, "WriteTables").expect("writes");
        assert_eq!(
            tables_named(&writes),
            ids([target]),
            "{id} writes its own table only"
        );
        let reads = tables_named(&statement(&statements, "ReadTables").expect("reads"));
        assert_eq!(reads, ids([target]), "{id} reads its own table only");
        let sources: BTreeSet<Context> = registry
            .iter()
            .filter(|s| s.target() == target)
            .map(|s| s.source())
            .collect();
        let streams = statement(&statements, "ReadStreams").expect("stream access");
        let expected: Vec<Value> = sources
            .iter()
            .map(|s| json!({"Fn::GetAtt": [stream_id(*s), "Arn"]}))
            .collect();
        assert_eq!(
            streams["Resource"],
            json!(expected),
            "{id} reads its sources"
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
                "ReadStreams",
                "OwnFailureQueue"
            ]),
            "{id}: nothing else"
        );
        for s in &statements {
            assert_ne!(s["Resource"], "*", "{id}: no wildcard resource");
        }
    }
}

/// The API's functions hold no stream and write no projection, each at most the table
/// its commands own; every operation is routed to exactly one of them; the nightly job
/// writes insights only.
#[test]
fn the_api_and_the_nightly_job_hold_no_stream_and_write_no_projection_but_their_own() {
    let template = template();
    let functions = vitals::deploy::api_functions::api_functions();
    for api in &functions {
        let role = statements(&template, &format!("{}Role", api.name));
        let writes = statement(&role, "WriteTables")
            .map(|w| tables_named(&w))
            .unwrap_or_default();
        assert_eq!(
            writes,
            ids(api.writes),
            "{} writes its own table only",
            api.name
        );
        assert!(!writes.contains(&table_id(Context::Dashboard)));
        assert!(!writes.contains(&table_id(Context::Insights)));
        assert!(statement(&role, "ReadStreams").is_none());
    }
    let routes: Vec<(String, String)> = of_type(&template, "AWS::ApiGatewayV2::Route")
        .into_iter()
        .map(|(_, r)| {
            let key = r["Properties"]["RouteKey"]
                .as_str()
                .expect("a key")
                .to_owned();
            let target = r["Properties"]["Target"]["Fn::Sub"]
                .as_str()
                .expect("a target");
            (key, target.to_owned())
        })
        .collect();
    let keys: BTreeSet<&String> = routes.iter().map(|(k, _)| k).collect();
    assert_eq!(keys.len(), routes.len(), "a route key is routed once");
    let document: Value =
        serde_json::from_str(&vitals::http::openapi::document()).expect("the document");
    let methods = ["get", "put", "post", "delete", "patch"];
    for (path, operations) in document["paths"].as_object().expect("paths") {
        for method in methods.iter().filter(|m| operations.get(**m).is_some()) {
            let key = format!("{} {path}", method.to_uppercase());
            assert!(keys.contains(&key), "{key} reaches no function");
        }
    }
    assert!(keys.contains(&"$default".to_owned()));
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
        json!({"Ref": alias_id("NightlyFunction")})
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

/// `/healthz` describes the identity table; only the API function serving it may.
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
        if id == "QueryApiRole" {
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

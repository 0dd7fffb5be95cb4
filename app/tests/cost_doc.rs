//! `docs/cost.md` is what `vitals cost` prints for the default workload and prices
//! (`VITALS_WRITE_COST=1` rewrites it), and `--prices` overrides prices, refusing a
//! file it cannot read whole.

use std::process::Command;

fn vitals_cost(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_vitals"))
        .arg("cost")
        .args(args)
        .env("RUST_LOG", "error")
        .output()
        .expect("vitals cost runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `vitals cost --prices FILE`, `prices` written to `file` in `dir` first.
fn with_prices(dir: &tempfile::TempDir, file: &str, prices: &str) -> (bool, String, String) {
    let path = dir.path().join(file);
    std::fs::write(&path, prices).expect("write");
    vitals_cost(&["--prices", path.to_str().expect("utf-8")])
}

#[test]
fn the_committed_cost_document_is_what_vitals_cost_prints() {
    let (ok, printed, errors) = vitals_cost(&[]);
    assert!(ok, "{errors}");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cost.md");
    if std::env::var("VITALS_WRITE_COST").as_deref() == Ok("1") {
        std::fs::write(path, &printed).expect("writes docs/cost.md");
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == printed,
        "docs/cost.md is stale: run `VITALS_WRITE_COST=1 cargo test -p vitals --test cost_doc`"
    );
}

/// The dollars of a labelled row of the month table.
fn dollars(report: &str, label: &str) -> f64 {
    report
        .lines()
        .find(|l| l.starts_with(&format!("| {label} |")))
        .and_then(|l| l.rsplit('$').next())
        .and_then(|v| v.trim_end_matches(" |").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {label} in {report}"))
}

#[test]
fn prices_can_be_overridden_and_a_bad_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, default, _) = vitals_cost(&[]);
    let (ok, report, errors) = with_prices(
        &dir,
        "prices.json",
        r#"{"api_gateway_per_million_requests": 2.0}"#,
    );
    assert!(ok, "{errors}");
    let (before, after) = (
        dollars(&default, "API Gateway (HTTP API)"),
        dollars(&report, "API Gateway (HTTP API)"),
    );
    assert!((after - 2.0 * before).abs() < 0.0001, "{before} -> {after}");
    assert_eq!(dollars(&default, "DynamoDB"), dollars(&report, "DynamoDB"));

    let (ok, report, errors) = with_prices(
        &dir,
        "typo.json",
        r#"{"dynamodb_per_milion_write_units": 1}"#,
    );
    assert!(!ok && report.is_empty(), "{report}");
    assert!(errors.contains("unknown field"), "{errors}");
}

/// The first and second `**$X a month**` of the report: the deployed stack's floor and
/// the same stack with on-demand streams.
fn floors(report: &str) -> Vec<f64> {
    report
        .split("**$")
        .skip(1)
        .filter_map(|rest| rest.split_once(" a month**"))
        .filter_map(|(value, _)| value.parse().ok())
        .collect()
}

#[test]
fn the_floor_prices_provisioned_shards_and_shows_the_on_demand_alternative() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, default, _) = vitals_cost(&[]);
    let (ok, report, errors) =
        with_prices(&dir, "prices.json", r#"{"kinesis_per_shard_hour": 0.030}"#);
    assert!(ok, "{errors}");
    let (before, after) = (floors(&default), floors(&report));
    assert_eq!((before.len(), after.len()), (2, 2), "{default}");
    // 8 streams of one shard, $0.015 more an hour each, 730 hours.
    assert!(
        (after[0] - before[0] - 8.0 * 0.015 * 730.0).abs() < 0.01,
        "{before:?} -> {after:?}"
    );
    assert_eq!(before[1], after[1], "the on-demand floor has no shards");
    assert!(
        before[0] < before[1],
        "provisioned is the cheaper floor: {before:?}"
    );
}

//! The aws-local shape for black-box tests: the emulator named by
//! `VITALS_TEST_DYNAMODB_ENDPOINT` (required: these suites never pass by skipping), a
//! test's own tables on it, `vitals bootstrap`, and `vitals work` as a child process.

use events_schema::ids::UserId;
use infra::Store;
use infra::aws_client::AwsSettings;
use infra::dynamodb::DynamoStore;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;
use vitals::cli::AwsArgs;

/// `--bridge` when `VITALS_TEST_FORWARDING=bridge` (moto, which cannot forward table
/// streams to Kinesis: `vitals bootstrap` creates them without forwarding and `vitals
/// work` forwards them); nothing otherwise.
pub fn forwarding() -> &'static [&'static str] {
    let bridge = std::env::var("VITALS_TEST_FORWARDING").is_ok_and(|f| f == "bridge");
    if bridge { &["--bridge"] } else { &[] }
}

/// One test's tables on the emulator: a table prefix of its own.
pub struct Tables {
    pub endpoint: String,
    pub prefix: String,
}

impl Tables {
    /// Fresh tables, their prefix starting with `letter`.
    pub fn new(letter: &str) -> Self {
        Self {
            endpoint: vitals_tests::backends::dynamodb_endpoint(),
            prefix: format!("{letter}{}-", UserId::generate().as_str().to_lowercase()),
        }
    }

    /// `--endpoint-url URL --table-prefix PREFIX`.
    pub fn args(&self) -> [&str; 4] {
        [
            "--endpoint-url",
            self.endpoint.as_str(),
            "--table-prefix",
            self.prefix.as_str(),
        ]
    }

    /// The store flags of `vitals serve`, `replay` and `admin`: `--backend dynamodb` and
    /// `args`.
    pub fn store_args(&self) -> Vec<&str> {
        ["--backend", "dynamodb"]
            .iter()
            .copied()
            .chain(self.args())
            .collect()
    }

    /// `vitals bootstrap --kinesis --dlq-queues <extra>` on these tables; what it printed.
    pub fn bootstrap(&self, extra: &[&str]) -> String {
        let args = [&["bootstrap", "--kinesis", "--dlq-queues"][..], extra].concat();
        super::vitals(&args, &self.args())
    }

    /// The SDK settings for the emulator.
    pub fn settings(&self) -> AwsSettings {
        AwsSettings {
            endpoint_url: Some(self.endpoint.clone()),
            ..AwsSettings::default()
        }
    }

    /// The AWS flags of the admin commands (`vitals migrate`, `redrive-failures`) as
    /// parsed: the emulator and these tables' prefix.
    pub fn aws_args(&self) -> AwsArgs {
        AwsArgs {
            endpoint_url: Some(self.endpoint.clone()),
            region: None,
            table_prefix: self.prefix.clone(),
        }
    }

    /// These tables as a store.
    pub async fn store(&self) -> Arc<dyn Store> {
        Arc::new(DynamoStore::connect(&self.settings(), &self.prefix).await)
    }
}

/// A running `vitals work`, killed if the test fails before stopping it.
pub struct Worker(Child);

impl Worker {
    /// Starts `vitals work <args>` (its metrics on a free port, its log on stderr).
    pub fn spawn(args: &[&str]) -> Self {
        Self(
            Command::new(env!("CARGO_BIN_EXE_vitals"))
                .arg("work")
                .args(["--metrics-listen", "127.0.0.1:0"])
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("vitals work starts"),
        )
    }

    /// Sends SIGTERM and waits, with a deadline, for it to exit; how it exited. The wait
    /// blocks its thread: async tests call it inside `tokio::task::block_in_place`.
    pub fn stop(&mut self) -> ExitStatus {
        super::terminate(
            &mut self.0,
            Duration::from_secs(30),
            Duration::from_millis(50),
        )
        .expect("vitals work did not stop on SIGTERM")
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The address (`host:port`) of the metrics a `vitals work` started with piped standard
/// output says it serves, on its first line.
pub fn metrics_address(work: &mut Child) -> String {
    use std::io::{BufRead as _, BufReader};
    let mut line = String::new();
    BufReader::new(work.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("the metrics address line");
    line.trim()
        .strip_prefix("metrics on http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned()
}

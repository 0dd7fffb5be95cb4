//! Whether this process runs inside AWS Lambda: the variables the runtime sets, checked
//! before it starts (its client panics on a missing one), so a Lambda command run
//! elsewhere stops with [`Exit::Config`] and a message naming what is missing.

use crate::cli::exit::Exit;

/// The variables the Lambda runtime sets and its client reads at start (it panics on a
/// missing one).
pub const RUNTIME_VARIABLES: [&str; 4] = [
    "AWS_LAMBDA_RUNTIME_API",
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "AWS_LAMBDA_FUNCTION_VERSION",
];

/// Whether `env` is a Lambda function's: every one of [`RUNTIME_VARIABLES`] set (the
/// memory size a number). Checked before the runtime starts, so `vitals lambda` or
/// `api-lambda` run on a laptop stops with [`Exit::Config`] and a message naming what is
/// missing.
pub fn runtime_environment(env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<()> {
    let missing: Vec<&str> = RUNTIME_VARIABLES
        .into_iter()
        .filter(|name| env(name).is_none_or(|v| v.trim().is_empty()))
        .collect();
    if !missing.is_empty() {
        return Err(Exit::Config.error(format!(
            "not inside AWS Lambda: {} not set (the Lambda runtime sets them; to serve the \
             API here, run `vitals serve`)",
            missing.join(", ")
        )));
    }
    let memory = env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE").unwrap_or_default();
    if memory.trim().parse::<i32>().is_err() {
        return Err(Exit::Config.error(format!(
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE is {memory:?}, not a number of megabytes"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lambda_boot::test_env as env;

    #[test]
    fn outside_lambda_the_runtime_is_not_started() {
        let error = |pairs: &[(&str, &str)]| {
            runtime_environment(&env(pairs))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let outside = error(&[]);
        for name in RUNTIME_VARIABLES {
            assert!(outside.contains(name), "{outside}");
        }
        let half = error(&[("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")]);
        assert!(half.contains("AWS_LAMBDA_FUNCTION_NAME"), "{half}");
        assert!(!half.contains("AWS_LAMBDA_RUNTIME_API"), "{half}");
        let mut whole = vec![
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("AWS_LAMBDA_FUNCTION_NAME", "vitals-QueryApi"),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "a lot"),
        ];
        assert!(error(&whole).contains("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"));
        whole.pop();
        whole.push(("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512"));
        assert!(runtime_environment(&env(&whole)).is_ok());
    }
}

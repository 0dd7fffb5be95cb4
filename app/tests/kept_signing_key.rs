//! Sessions survive a restart of `vitals serve` on the embedded store without
//! `VITALS_JWT_SECRET` (issue 39, finding 4): the key it generated on its first start is
//! kept in the data directory (0600) and signs at every later start; its start line
//! says which key signs.

mod support;

use std::process::Stdio;

/// The serving line of a server's log (standard error, captured to a file).
fn start_line(log: &std::path::Path) -> String {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .find(|l| l.contains("vitals serving"))
        .unwrap_or_default()
        .to_owned()
}

fn serve(data: &std::path::Path, log: &std::path::Path) -> support::Server {
    let stderr = std::fs::File::create(log).expect("a log file");
    support::start_logging_to(
        &["--data-dir", data.to_str().expect("a path")],
        &[
            support::GENEROUS_LIMITS.as_slice(),
            &[("VITALS_LOG_FORMAT", "text")],
        ]
        .concat(),
        Stdio::from(stderr),
    )
}

fn stop(mut server: support::Server) {
    let _ = server.child.kill();
    let _ = server.child.wait();
}

#[test]
fn a_token_issued_before_a_restart_is_honoured_after_it() {
    let dir = tempfile::tempdir().expect("a directory");
    let data = dir.path().join("data");
    let log = dir.path().join("first.log");
    let first = serve(&data, &log);
    let registration = br#"{"email":"kept@example.com","password":"correct horse battery","display_name":"Kept","timezone":"UTC"}"#;
    let (status, body) = support::send(
        &first.address,
        "POST",
        "/v1/auth/register",
        &[("content-type", "application/json")],
        Some(registration),
    );
    assert_eq!(status, 201, "{body}");
    let token = serde_json::from_str::<serde_json::Value>(&body).expect("JSON")["access_token"]
        .as_str()
        .expect("a token")
        .to_owned();
    let key_file = data.join(vitals::setup::KEPT_KEY_FILE);
    assert!(
        start_line(&log).contains("a new key, kept in"),
        "{}",
        start_line(&log)
    );
    stop(first);

    let log = dir.path().join("second.log");
    let second = serve(&data, &log);
    assert!(
        start_line(&log).contains(&format!("the key kept in {}", key_file.display())),
        "{}",
        start_line(&log)
    );
    let bearer = format!("Bearer {token}");
    // The token is honoured (never 401); the profile is a projection, which the second
    // server's workers may still be writing: wait for it, with a deadline.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let (status, body) = loop {
        let (status, body) = support::send(
            &second.address,
            "GET",
            "/v1/me/profile",
            &[("authorization", bearer.as_str())],
            None,
        );
        if status != 404 || std::time::Instant::now() > deadline {
            break (status, body);
        }
        std::thread::yield_now();
    };
    stop(second);
    assert_eq!(status, 200, "the session outlives the restart: {body}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key_file)
            .expect("the kept key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

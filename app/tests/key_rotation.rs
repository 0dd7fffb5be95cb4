//! Rotating the token signing key of `vitals serve` signs no one out: the server
//! restarted with `VITALS_JWT_SECRET` the new key and `VITALS_JWT_PREVIOUS_SECRET` the
//! old one accepts the tokens the old key signed and signs new ones with the new key
//! (another `kid`); once the old key is dropped, only its tokens are refused.

mod support;

use support::Client;

const OLD: &str = "the-signing-key-before-the-rotation-0123456789";
const NEW: &str = "the-signing-key-after-the-rotation-9876543210";

/// The `kid` a token's header names.
fn kid(token: &str) -> String {
    use base64::Engine as _;
    let header = token.split('.').next().expect("a header");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .expect("base64url");
    let header: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    header["kid"].as_str().expect("a kid").to_owned()
}

fn serve(data_dir: &str, keys: &[(&'static str, &'static str)]) -> support::Server {
    let mut env: Vec<(&str, &str)> = support::GENEROUS_LIMITS.to_vec();
    env.push(("VITALS_WEBHOOK_SECRET", support::WEBHOOK_SECRET_TEXT));
    env.extend_from_slice(keys);
    support::start_with_exact_env(&["--data-dir", data_dir], &env)
}

fn profile(client: &Client) -> u16 {
    client.call("GET", "/v1/me/profile", None, &[]).0
}

#[test]
fn rotating_the_signing_key_signs_no_one_out() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data_dir = dir.path().join("data");
    let data_dir = data_dir.to_str().expect("utf-8 path");

    let before = serve(data_dir, &[("VITALS_JWT_SECRET", OLD)]);
    let ana = support::register(&before.address, "ana@example.com");
    let old_token = ana.token.clone().expect("a token");
    before.stop();

    let during = serve(
        data_dir,
        &[
            ("VITALS_JWT_SECRET", NEW),
            ("VITALS_JWT_PREVIOUS_SECRET", OLD),
        ],
    );
    let ana_during = ana.on(&during.address);
    assert_eq!(profile(&ana_during), 200, "the old key's token still holds");
    let login =
        serde_json::json!({"email": "ana@example.com", "password": "correct horse battery"});
    let (status, reply) =
        Client::anonymous(&during.address).call("POST", "/v1/auth/login", Some(login), &[]);
    assert_eq!(status, 200, "{reply}");
    let fresh = Client::signed_in(&during.address, &reply);
    let new_token = fresh.token.clone().expect("a token");
    assert_ne!(kid(&new_token), kid(&old_token), "signed with the new key");
    assert_eq!(profile(&fresh), 200);
    during.stop();

    let after = serve(data_dir, &[("VITALS_JWT_SECRET", NEW)]);
    assert_eq!(
        profile(&ana.on(&after.address)),
        401,
        "the retired key's token"
    );
    assert_eq!(
        profile(&fresh.on(&after.address)),
        200,
        "the new key's token"
    );
    after.stop();
}

#[test]
fn a_short_previous_key_or_one_without_a_current_key_stops_the_start() {
    for (keys, named) in [
        (
            vec![
                ("VITALS_JWT_SECRET", NEW),
                ("VITALS_JWT_PREVIOUS_SECRET", "short"),
            ],
            "VITALS_JWT_PREVIOUS_SECRET",
        ),
        (vec![("VITALS_JWT_PREVIOUS_SECRET", OLD)], "jwt-secret"),
    ] {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_vitals"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path().join("data"))
            .env_clear()
            .envs(keys.iter().copied());
        let run = support::run_to_end(command, &[]);
        assert_ne!(run.code, Some(0), "{named}: {}", run.stderr);
        assert!(run.stderr.contains(named), "{named}: {}", run.stderr);
        assert!(
            !run.stderr.contains(OLD),
            "no secret in the message: {}",
            run.stderr
        );
    }
}

//! Authentication as configured from the command line, black-box: tokens of an external
//! identity provider (RS256, keys from a JWKS document) and the per-user rate limit.

mod support;

use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde::Serialize;
use serde_json::{Value, json};
use support::{Case, Client, Server, start};

const ISSUER: &str = "https://id.example.com/";
const AUDIENCE: &str = "vitals-mobile";

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/jwks/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[derive(Serialize)]
struct ExternalClaims<'a> {
    sub: &'a str,
    iss: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
}

struct Token<'a> {
    kid: Option<&'a str>,
    iss: &'a str,
    aud: &'a str,
    expires_in: i64,
}

impl Default for Token<'_> {
    fn default() -> Self {
        Self {
            kid: Some("test-key-1"),
            iss: ISSUER,
            aud: AUDIENCE,
            expires_in: 600,
        }
    }
}

fn rs256(user: &str, token: Token<'_>) -> String {
    let pem = std::fs::read(fixture("idp-private.pem")).expect("test key");
    let key = EncodingKey::from_rsa_pem(&pem).expect("RSA key");
    let mut header = Header::new(Algorithm::RS256);
    header.kid = token.kid.map(str::to_owned);
    let now = chrono::Utc::now().timestamp();
    let claims = ExternalClaims {
        sub: user,
        iss: token.iss,
        aud: token.aud,
        iat: now - 10,
        exp: now + token.expires_in,
    };
    encode(&header, &claims, &key).expect("signs")
}

/// Logs a meal with `token` as the bearer; (status, JSON reply or null).
fn log_meal(server: &Server, token: &str) -> (u16, Value) {
    let client = Client {
        address: server.address.clone(),
        token: Some(token.to_owned()),
        user_id: String::new(),
    };
    let meal = json!({"name": "Oats", "eaten_at": "2026-12-01T08:00:00.000Z", "timezone": "UTC",
        "calories": "350", "protein_g": "12", "carbs_g": "60", "fat_g": "6"});
    client.call("POST", "/v1/me/meals", Some(meal), &[])
}

fn external_server() -> (tempfile::TempDir, Server) {
    let jwks = fixture("jwks.json");
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().to_string_lossy().into_owned();
    let server = start(&[
        "--data-dir",
        &data_dir,
        "--jwks-file",
        &jwks,
        "--jwt-issuer",
        ISSUER,
        "--jwt-audience",
        AUDIENCE,
    ]);
    (dir, server)
}

/// One server trusting the provider's keys, one user: the provider's token is accepted,
/// every other refused; named cases, in order, each saying its name when it fails.
#[test]
fn tokens_of_the_external_provider_are_accepted_and_only_those() {
    let (_dir, server) = external_server();
    let user = ulid::Ulid::new().to_string();
    a_valid_provider_token_is_accepted(&server, &user);
    tokens_for_another_issuer_or_audience_are_refused(&server, &user);
    tokens_of_no_published_key_are_refused(&server, &user);
    an_expired_token_is_refused(&server, &user);
    forged_signatures_are_refused(&server, &user);
    assert!(server.stop().success());
}

/// A meal logged with `token` is refused as unauthorized.
fn assert_refused(server: &Server, case: &str, token: &str) {
    let (status, body) = log_meal(server, token);
    assert_eq!(status, 401, "{case}: {body}");
    assert_eq!(body["error"]["code"], "unauthorized", "{case}");
}

fn a_valid_provider_token_is_accepted(server: &Server, user: &str) {
    let _case = Case("a valid provider token is accepted");
    let (status, body) = log_meal(server, &rs256(user, Token::default()));
    assert_eq!(status, 201, "a valid provider token: {body}");
    assert!(body["meal_id"].is_string());
}

fn tokens_for_another_issuer_or_audience_are_refused(server: &Server, user: &str) {
    let _case = Case("tokens for another issuer or audience are refused");
    let wrong_issuer = Token {
        iss: "https://evil.example.com/",
        ..Token::default()
    };
    assert_refused(server, "wrong issuer", &rs256(user, wrong_issuer));
    let wrong_audience = Token {
        aud: "someone-else",
        ..Token::default()
    };
    assert_refused(server, "wrong audience", &rs256(user, wrong_audience));
}

fn tokens_of_no_published_key_are_refused(server: &Server, user: &str) {
    let _case = Case("tokens of no published key are refused");
    let unknown = Token {
        kid: Some("rotated-away"),
        ..Token::default()
    };
    assert_refused(server, "unknown key id", &rs256(user, unknown));
    let none = Token {
        kid: None,
        ..Token::default()
    };
    assert_refused(server, "no key id", &rs256(user, none));
}

fn an_expired_token_is_refused(server: &Server, user: &str) {
    let _case = Case("an expired token is refused");
    let expired = Token {
        expires_in: -3600,
        ..Token::default()
    };
    assert_refused(server, "expired", &rs256(user, expired));
}

/// A provider token with its signature altered, and an HS256 token whose secret is the
/// provider's public keys (the algorithm-confusion attack).
fn forged_signatures_are_refused(server: &Server, user: &str) {
    let _case = Case("forged signatures are refused");
    let tampered = {
        let token = rs256(user, Token::default());
        let (rest, signature) = token.rsplit_once('.').expect("three parts");
        let flipped = if signature.starts_with('A') { "B" } else { "A" };
        format!("{rest}.{flipped}{}", &signature[1..])
    };
    assert_refused(server, "tampered", &tampered);
    let public_key_as_secret = {
        let jwks = std::fs::read(fixture("jwks.json")).expect("jwks");
        let claims = ExternalClaims {
            sub: user,
            iss: ISSUER,
            aud: AUDIENCE,
            iat: 0,
            exp: i64::MAX / 2,
        };
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("test-key-1".into());
        encode(&header, &claims, &EncodingKey::from_secret(&jwks)).expect("signs")
    };
    assert_refused(
        server,
        "HS256 with the public key as secret",
        &public_key_as_secret,
    );
}

#[test]
fn each_user_is_rate_limited_on_their_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().to_string_lossy().into_owned();
    const GOALS: &str = "/v1/me/goals";
    let server = start(&["--data-dir", &data_dir, "--rate-limit", "1"]);
    let busy = support::register(&server.address, "busy@example.com");
    let quiet = support::register(&server.address, "quiet@example.com");

    // One request per second per user: twenty back-to-back requests cannot all pass.
    // The goals list answers 200 from the first moment of an account (an empty index
    // query); the profile is a projection, 404 until the pipeline has written it, which
    // a request right after sign-up can beat.
    let statuses: Vec<u16> = (0..20)
        .map(|_| {
            let (status, body) = busy.call("GET", GOALS, None, &[]);
            if status == 429 {
                assert_eq!(body["error"]["code"], "rate_limited", "{body}");
            }
            status
        })
        .collect();
    assert!(
        statuses.contains(&429),
        "no request was limited: {statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 429),
        "{statuses:?}"
    );

    // The other user's budget is untouched.
    let (status, body) = quiet.call("GET", GOALS, None, &[]);
    assert_eq!(status, 200, "{body}");
    assert!(server.stop().success());
}

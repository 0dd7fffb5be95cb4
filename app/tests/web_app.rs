//! The reference web app `vitals serve` serves at `/` (issue 42) and the API reference at
//! `/docs` (issue 41): their pages, scripts and styles come from the binary, same-origin
//! only, with a policy that lets a page load nothing from elsewhere. (Their behaviour in
//! a browser is tested by `clients/web/test/browser.ts`, run by `scripts/client-test`.)

mod support;

#[test]
fn the_page_its_script_and_style_are_served_from_the_binary() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data_dir = dir.path().join("data");
    let server = support::start_with_env(&["--data-dir", data_dir.to_str().expect("utf-8")], &[]);
    const HTML: &str = "text/html; charset=utf-8";
    const JS: &str = "text/javascript; charset=utf-8";
    const CSS: &str = "text/css; charset=utf-8";
    // (path, type, what it holds, whether it is ours: Swagger UI's bundle names its
    // authors' sites in its text, and asks none of them with our settings)
    let cases = [
        ("/", HTML, "/app/app.js", true),
        ("/app/app.js", JS, "/v1/me/dashboard", true),
        ("/app/app.css", CSS, ".card", true),
        ("/docs", HTML, "/docs/swagger-ui-bundle.js", true),
        ("/docs/docs.js", JS, "\"/openapi.json\"", true),
        ("/docs/swagger-ui-bundle.js", JS, "SwaggerUIBundle", false),
        ("/docs/swagger-ui.css", CSS, ".swagger-ui", false),
    ];
    for (path, content_type, holds, ours) in cases {
        let (status, headers, body) = support::exchange(&server.address, "GET", path, &[], None);
        assert_eq!(status, 200, "{path}: {body}");
        let header = |name: &str| headers.get(name).map(String::as_str);
        assert_eq!(header("content-type"), Some(content_type), "{path}");
        assert!(body.contains(holds), "{path} holds {holds}");
        let policy = header("content-security-policy").unwrap_or_default();
        assert!(
            policy.contains("default-src 'self'") && policy.contains("frame-ancestors 'none'"),
            "{path}: {policy}"
        );
        assert_eq!(header("x-content-type-options"), Some("nosniff"), "{path}");
        // Nothing is fetched from elsewhere at run time: no other origin is named but
        // the SVG namespace.
        let elsewhere: Vec<String> = body
            .match_indices("http")
            .map(|(at, _)| body[at..].chars().take(30).collect::<String>())
            .filter(|s| {
                (s.starts_with("http://") || s.starts_with("https://"))
                    && !s.starts_with("http://www.w3.org/2000/svg")
            })
            .collect();
        assert!(
            !ours || elsewhere.is_empty(),
            "{path} names other origins: {elsewhere:?}"
        );
    }
    let (status, _, _) = support::exchange(&server.address, "GET", "/app/other.js", &[], None);
    assert_eq!(status, 404, "only the app's own files");
    assert!(server.stop().success());
}

/// The first command of the README says where the app is: its second line names the
/// page on the address of the first.
#[test]
fn serve_says_where_the_app_is() {
    use std::io::{BufRead as _, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().expect("temporary directory");
    let data_dir = dir.path().join("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_vitals"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("vitals starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut next = || lines.next().expect("a line").expect("utf-8");
    let (first, second) = (next(), next());
    let address = first
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    // Stopped (and killed if the test fails first) as every test server is.
    let server = support::Server { child, address };
    assert!(
        second.starts_with(&format!("the app: http://{}/ ", server.address)),
        "{first} / {second}"
    );
    let (status, _, page) = support::exchange(&server.address, "GET", "/", &[], None);
    assert_eq!(status, 200, "{page}");
    assert!(server.stop().success());
}

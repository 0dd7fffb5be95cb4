//! The checks of option values that clap's own parsers cannot express: timeouts with
//! their unit, rate limits of at least 1, addresses to listen on, the connect's return
//! URL. Each answers the message the command line shows for a refused value.

use std::net::SocketAddr;

/// A timeout as the command line gives it: `10s`, `500ms`, `2m` (humantime's forms), or
/// whole seconds (`10`, as an environment variable often says it); more than zero.
pub(super) fn timeout(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let duration = match text.parse::<u64>() {
        Ok(seconds) => std::time::Duration::from_secs(seconds),
        Err(_) => humantime::parse_duration(text)
            .map_err(|e| format!("{text:?} is not a duration such as 10s, 500ms or 2m: {e}"))?,
    };
    if duration.is_zero() {
        return Err("a timeout is longer than zero".to_owned());
    }
    // A bound keeps a deadline (an Instant plus the timeout) from overflowing.
    if duration > std::time::Duration::from_secs(24 * 3600) {
        return Err(format!("{text:?}: a timeout is at most a day"));
    }
    Ok(duration)
}

/// A rate limit: at least 1 (0 is refused: there is no setting for "no limit", and
/// none for "nothing allowed").
pub(super) fn rate_limit(text: &str) -> Result<u32, String> {
    let limit: u32 = text
        .trim()
        .parse()
        .map_err(|e| format!("{text:?} is not a whole number: {e}"))?;
    if limit == 0 {
        return Err(
            "a rate limit is at least 1 (0 is refused: it would read as no limit, or \
                    as nothing allowed)"
                .to_owned(),
        );
    }
    Ok(limit)
}

/// An address to listen on, as written: `IP:PORT`, `[IPv6]:PORT` or `HOST:PORT` with a
/// host name (resolved at start: see `vitals serve`).
pub(super) fn listen_address(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.parse::<SocketAddr>().is_ok() {
        return Ok(text.to_owned());
    }
    let refused = || {
        format!(
            "{text:?} is not an address to listen on: HOST:PORT, such as 127.0.0.1:8080, \
             [::]:8080 or localhost:8080"
        )
    };
    let (host, port) = text.rsplit_once(':').ok_or_else(refused)?;
    port.parse::<u16>().map_err(|_| refused())?;
    let host_name = !host.is_empty()
        && host.len() <= 253
        && host
            .split('.')
            .all(|label| !label.is_empty() && label.len() <= 63)
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    if !host_name {
        return Err(refused());
    }
    Ok(text.to_owned())
}

/// An absolute URL (a scheme, then `:`) that fits in a `Location` header, without a
/// fragment: the callback appends its query, which after a `#` the app would not read.
pub(super) fn return_url(value: &str) -> Result<String, String> {
    let uri: axum::http::Uri = value.parse().map_err(|e| format!("not a URL: {e}"))?;
    if uri.scheme().is_none() {
        return Err("an absolute URL, with a scheme, is needed".into());
    }
    if value.contains('#') {
        return Err("a URL without a fragment (`#...`) is needed".into());
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn timeouts_are_read_with_their_unit() {
        use std::time::Duration;
        assert_eq!(super::timeout("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(super::timeout("10"), Ok(Duration::from_secs(10)));
        assert_eq!(super::timeout("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(super::timeout("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(super::timeout("1.5s"), Ok(Duration::from_millis(1500)));
        for refused in [
            "0s",
            "0",
            "",
            "s",
            "-1s",
            "10 parsecs",
            "18446744073709551615",
            "25h",
            "99999999999999999999999s",
        ] {
            assert!(super::timeout(refused).is_err(), "{refused:?}");
        }
    }

    use super::return_url;

    #[test]
    fn a_listen_address_is_an_ip_or_a_host_name_and_a_port() {
        for good in [
            "127.0.0.1:8080",
            "[::]:0",
            "localhost:8080",
            "api.internal.example:443",
        ] {
            assert_eq!(super::listen_address(good).as_deref(), Ok(good));
        }
        for bad in [
            "localhost",
            "localhost:http",
            "localhost:65536",
            ":8080",
            "not an address:80",
            "a..b:80",
            "::1:80",
        ] {
            assert!(super::listen_address(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_rate_limit_is_at_least_1() {
        assert_eq!(super::rate_limit("1"), Ok(1));
        assert_eq!(super::rate_limit("50"), Ok(50));
        for bad in ["0", "-1", "", "ten"] {
            assert!(super::rate_limit(bad).is_err(), "{bad}");
        }
        assert!(
            super::rate_limit("0")
                .err()
                .unwrap_or_default()
                .contains("at least 1")
        );
    }

    #[test]
    fn a_return_url_is_absolute_and_has_no_fragment() {
        for good in [
            "vitals://integrations/callback",
            "https://app.example/connect?from=settings",
        ] {
            assert_eq!(return_url(good).as_deref(), Ok(good));
        }
        for bad in ["/relative", "https://app.example/x#y", "vitals://cb#"] {
            assert!(return_url(bad).is_err(), "{bad}");
        }
    }
}

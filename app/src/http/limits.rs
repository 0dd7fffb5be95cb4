//! Rate limits, answered with `429 rate_limited` and a `Retry-After`:
//! - authenticated requests, per user (the token's subject);
//! - the unauthenticated routes (register, login, the OAuth callback), per client
//!   address, and login and register also per account (the normalized email): from one
//!   address at the account's rate, from all addresses together at ten times it, so a
//!   password can be guessed neither quickly from one address nor from many at once,
//!   and one address spending the account's tries does not lock its owner out (a
//!   password change checks the current password: per account too). The counts across
//!   addresses are kept in the identity table ([`Tried`]), shared by every process: in
//!   memory, N processes (Lambda execution environments) would allow N times them.
//!   Once an account's tries from all addresses are spent, a sign-in from an address
//!   that has not failed at it lately still has its password checked, on a small
//!   allowance of its own ([`Limits::sign_in`]): guessers spending the tries do not lock
//!   the owner out;
//! - provider webhooks, per client address, with a higher allowance (providers send in
//!   bursts from few addresses);
//! - the operations routes (`/healthz`, `/metrics`, `/openapi.json`), and the web app's
//!   and the API reference's pages and assets (`/`, `/app/...`, `/docs...`), per
//!   client address: they answer without a token, and health and metrics read the
//!   store.
//!
//! The client address is the socket's peer, or behind API Gateway the `sourceIp` of the
//! request context; an IPv6 address counts by its /64 (a host's usual allocation), an
//! IPv4-mapped one (a dual-stack listener's IPv4 peer) as its IPv4 address.
//! Keyed state is pruned as it goes, so a flood of addresses does not grow memory
//! without bound.

use super::error::ApiError;
use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use commands::CommandError;
use commands::identity::{IdentityCommands, SignedIn, Tried};
use events_schema::ids::UserId;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};

/// The allowances, from the command line.
#[derive(Debug, Clone, Copy)]
pub struct LimitSettings {
    /// Requests per second per user.
    pub user_per_second: u32,
    /// Register, login and callback requests per minute per client address.
    pub auth_per_minute: u32,
    /// Login and register attempts per minute per account.
    pub account_per_minute: u32,
    /// Webhook deliveries per second per client address.
    pub webhook_per_second: u32,
    /// Operations requests (health, metrics, the OpenAPI document) per second per
    /// client address.
    pub operations_per_second: u32,
}

impl Default for LimitSettings {
    fn default() -> Self {
        Self {
            user_per_second: 50,
            auth_per_minute: 30,
            account_per_minute: 10,
            webhook_per_second: 100,
            operations_per_second: 50,
        }
    }
}

/// One keyed limiter.
struct Limiter<K: std::hash::Hash + Eq + Clone> {
    limiter: DefaultKeyedRateLimiter<K>,
    checks: AtomicU64,
}

/// How often (in checks) a limiter forgets keys whose allowance is full again.
const PRUNE_EVERY: u64 = 1024;

impl<K: std::hash::Hash + Eq + Clone> Limiter<K> {
    fn new(quota: Quota) -> Self {
        Self {
            limiter: RateLimiter::keyed(quota),
            checks: AtomicU64::new(0),
        }
    }

    fn check(&self, key: &K) -> Result<(), ApiError> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
        self.limiter.check_key(key).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            // Whole seconds, rounded up: a client that waits that long gets through.
            ApiError::rate_limited(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
        })
    }
}

fn non_zero(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n.max(1)).unwrap_or(NonZeroU32::MIN)
}

/// Every limiter of the API.
pub struct Limits {
    per_user: Limiter<String>,
    per_address: Limiter<IpAddr>,
    /// Sign-in and sign-up tries of one account from one address; password changes.
    per_account: Limiter<String>,
    /// Tries a minute of one account's credential from every address and process
    /// together (counted in the store).
    account_everywhere: u32,
    /// Sign-ins a minute of one account, once `account_everywhere` are spent, from
    /// addresses that have not failed at it lately (counted in the store too).
    account_afresh: u32,
    /// Password checks a minute of one user (counted in the store too).
    password_everywhere: u32,
    webhooks: Limiter<IpAddr>,
    operations: Limiter<IpAddr>,
}

/// How many times an account's per-address allowance all addresses share.
const ADDRESSES_SHARE: u32 = 10;

/// The part of an account's per-address allowance left, once every address's tries are
/// spent, to the addresses that have not failed at it lately (3 a minute by default).
const AFRESH_PART: u32 = 3;

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Limits")
    }
}

impl Limits {
    pub fn new(settings: LimitSettings) -> Self {
        Self {
            per_user: Limiter::new(Quota::per_second(non_zero(settings.user_per_second))),
            per_address: Limiter::new(Quota::per_minute(non_zero(settings.auth_per_minute))),
            per_account: Limiter::new(Quota::per_minute(non_zero(settings.account_per_minute))),
            account_everywhere: settings
                .account_per_minute
                .saturating_mul(ADDRESSES_SHARE)
                .max(1),
            account_afresh: (settings.account_per_minute / AFRESH_PART).max(1),
            password_everywhere: settings.account_per_minute.max(1),
            webhooks: Limiter::new(Quota::per_second(non_zero(settings.webhook_per_second))),
            operations: Limiter::new(Quota::per_second(non_zero(settings.operations_per_second))),
        }
    }

    pub fn user(&self, subject: &str) -> Result<(), ApiError> {
        self.per_user.check(&subject.to_owned())
    }

    /// An unauthenticated request (register, login, callback) from `client`.
    pub fn unauthenticated(&self, client: ClientAddress) -> Result<(), ApiError> {
        self.per_address.check(&client.bucket())
    }

    /// A sign-up attempt for `email` (compared as the identity context normalizes it)
    /// from `client`: this address's allowance first (in memory), then every address's
    /// and process's together (in the store, through `identity`).
    pub async fn account(
        &self,
        identity: &IdentityCommands,
        email: &str,
        client: ClientAddress,
    ) -> Result<(), ApiError> {
        let email = self.this_address_allows(email, client)?;
        let tried = identity.count_try(Tried::SignIn(&email), self.account_everywhere);
        Ok(tried.await?)
    }

    /// `email` as the limits count it (normalized, cut at an email's 254 characters: a
    /// longer key is no account's, and cut there it cannot make a limiter's keys grow
    /// with the request), once this address's allowance for it (in memory) lets a try
    /// through.
    fn this_address_allows(&self, email: &str, client: ClientAddress) -> Result<String, ApiError> {
        let email: String = email.trim().to_lowercase().chars().take(254).collect();
        self.per_account
            .check(&format!("email:{email} from:{}", client.bucket()))?;
        Ok(email)
    }

    /// A sign-in of `email` with `password` from `client`, limited as [`Limits::account`]
    /// limits it, a wrong password counted against the address: the account signed in.
    ///
    /// When every address's tries together are spent, the account is under attack from
    /// many addresses. Refusing every try then (as before) let strangers lock the owner
    /// out for as long as they kept guessing: ten addresses sufficed. Counting only
    /// failed tries would not do either: an allowance the guessers share with the owner
    /// is theirs to spend. So the addresses are told apart by their record: one that has
    /// failed at the account this minute or the last stays refused, and one that has not
    /// (the owner's phone, likely) still has its password checked, on an allowance of
    /// its own, a third of one address's a minute, counted by every process together.
    /// Guessing stays slow: the guessers' addresses get nothing more, and each new one
    /// gets one guess (then it has failed) out of those few a minute, shared with the
    /// owner. A guesser with a new address for every try can still spend them, at a
    /// handful of guesses a minute: telling the owner from that takes more than an
    /// address (a known device, a second factor).
    pub async fn sign_in(
        &self,
        identity: &IdentityCommands,
        email: &str,
        password: &str,
        client: ClientAddress,
    ) -> Result<SignedIn, ApiError> {
        let key = self.this_address_allows(email, client)?;
        let from = client.bucket();
        match identity
            .count_try(Tried::SignIn(&key), self.account_everywhere)
            .await
        {
            Ok(()) => {}
            Err(spent @ CommandError::TooManyTries { .. }) => {
                if identity.has_failed(&key, from).await? {
                    return Err(spent.into());
                }
                let afresh = Tried::SignInAfresh(&key);
                identity.count_try(afresh, self.account_afresh).await?;
            }
            Err(other) => return Err(other.into()),
        }
        match identity.login(email, password).await {
            Err(CommandError::InvalidCredentials) => {
                identity.count_failure(&key, from).await?;
                Err(CommandError::InvalidCredentials.into())
            }
            proved => Ok(proved?),
        }
    }

    /// A password check on a signed-in account (changing the password proves the
    /// current one): an allowance of its own, as small as a sign-in's, so a stolen
    /// access token cannot guess the password faster than a sign-in could. Keyed by the
    /// user's id (prefixed, so no email's key can be the same); counted per process,
    /// then by every process together.
    pub async fn password_check(
        &self,
        identity: &IdentityCommands,
        user: &UserId,
    ) -> Result<(), ApiError> {
        self.per_account.check(&format!("user:{user}"))?;
        let tried = identity.count_try(Tried::Password(user), self.password_everywhere);
        Ok(tried.await?)
    }

    /// A request for the health, the metrics or the OpenAPI document from `client`.
    pub fn operations(&self, client: ClientAddress) -> Result<(), ApiError> {
        self.operations.check(&client.bucket())
    }

    pub fn webhook(&self, client: ClientAddress) -> Result<(), ApiError> {
        self.webhooks.check(&client.bucket())
    }
}

/// The address a request came from (unspecified when the transport does not say).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

impl ClientAddress {
    pub fn of(parts: &Parts) -> Self {
        if let Some(ConnectInfo(peer)) = parts.extensions.get::<ConnectInfo<SocketAddr>>() {
            return Self(peer.ip());
        }
        use lambda_http::request::RequestContext;
        let source = match parts.extensions.get::<RequestContext>() {
            Some(RequestContext::ApiGatewayV2(context)) => context.http.source_ip.clone(),
            Some(RequestContext::ApiGatewayV1(context)) => context.identity.source_ip.clone(),
            _ => None,
        };
        Self(
            source
                .and_then(|ip| ip.parse().ok())
                .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        )
    }

    /// The address limits count by: an IPv4 address itself, an IPv6 address's /64 (one
    /// host is usually given a whole /64, so counting its addresses one by one would
    /// let it take endless allowances). An IPv4-mapped address (`::ffff:a.b.c.d`, how a
    /// dual-stack `[::]` listener sees an IPv4 peer) is its IPv4 address: as an IPv6
    /// address its /64 would be every IPv4 client's at once.
    fn bucket(self) -> IpAddr {
        match self.0.to_canonical() {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !u128::from(u64::MAX);
                IpAddr::V6(std::net::Ipv6Addr::from(prefix))
            }
        }
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::of(parts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Limits allowing an account two tries a minute, and the identity commands they
    /// count the tries across addresses with (on a store of their own).
    fn two_tries_a_minute() -> (Limits, IdentityCommands, tempfile::TempDir) {
        let limits = Limits::new(LimitSettings {
            account_per_minute: 2,
            ..LimitSettings::default()
        });
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = infra::embedded::EmbeddedStore::open(dir.path()).expect("store");
        let identity = IdentityCommands::new(infra::table::Table::new(std::sync::Arc::new(store)));
        (limits, identity, dir)
    }

    #[tokio::test]
    async fn an_exhausted_allowance_says_when_to_come_back() {
        let (limits, identity, _dir) = two_tries_a_minute();
        let here = ClientAddress("10.0.0.1".parse().expect("ip"));
        let tried = |email: &'static str| limits.account(&identity, email, here);
        assert!(tried("Ana@Example.com").await.is_ok());
        assert!(tried("ana@example.com ").await.is_ok());
        let refused = tried("ana@example.com").await.expect_err("third try");
        assert_eq!(refused.status, axum::http::StatusCode::TOO_MANY_REQUESTS);
        let wait = refused.retry_after.expect("Retry-After");
        assert!((1..=60).contains(&wait), "{wait}");
        assert!(tried("bob@example.com").await.is_ok(), "per account");
    }

    #[tokio::test]
    async fn one_address_spending_an_accounts_tries_does_not_lock_out_the_others() {
        let (limits, identity, _dir) = two_tries_a_minute();
        let ip = |n: u8| ClientAddress(IpAddr::V4(Ipv4Addr::new(10, 0, 1, n)));
        let from = |n: u8| limits.account(&identity, "ana@example.com", ip(n));
        // Given an attacker that spent Ana's tries from one address,
        assert!(from(1).await.is_ok());
        assert!(from(1).await.is_ok());
        assert!(from(1).await.is_err());
        // Ana signs in from her own;
        assert!(from(2).await.is_ok());
        // but many addresses together get ten times one address's tries, no more.
        let mut tried = 0;
        for n in 3..=30 {
            tried += usize::from(from(n).await.is_ok());
        }
        assert_eq!(tried + 3, 20, "{tried} more from other addresses");
    }

    #[tokio::test]
    async fn a_password_is_checked_no_faster_than_a_sign_in() {
        let (limits, identity, _dir) = two_tries_a_minute();
        let user = UserId::generate();
        assert!(limits.password_check(&identity, &user).await.is_ok());
        assert!(limits.password_check(&identity, &user).await.is_ok());
        let refused = limits.password_check(&identity, &user).await;
        assert!(refused.is_err(), "a third check this minute");
    }

    #[test]
    fn an_ipv6_host_is_counted_by_its_64() {
        let limits = Limits::new(LimitSettings {
            auth_per_minute: 1,
            ..LimitSettings::default()
        });
        let at = |ip: &str| ClientAddress(ip.parse().expect("ip"));
        assert!(limits.unauthenticated(at("2001:db8:1:2::1")).is_ok());
        // Another address of the same /64 is the same host;
        let same = limits.unauthenticated(at("2001:db8:1:2:ffff::9"));
        assert!(same.is_err(), "the /64 has spent its allowance");
        // another /64 is another.
        assert!(limits.unauthenticated(at("2001:db8:1:3::1")).is_ok());
    }

    /// A dual-stack (`[::]`) listener sees an IPv4 peer as `::ffff:a.b.c.d`, whose /64 is
    /// the same for every IPv4 address.
    #[test]
    fn an_ipv4_mapped_address_counts_as_its_ipv4_address() {
        let at = |ip: &str| ClientAddress(ip.parse().expect("ip"));
        assert_eq!(at("::ffff:10.0.0.1").bucket(), at("10.0.0.1").bucket());
        assert_ne!(
            at("::ffff:10.0.0.1").bucket(),
            at("::ffff:10.0.0.2").bucket()
        );
        let limits = Limits::new(LimitSettings {
            auth_per_minute: 1,
            ..LimitSettings::default()
        });
        assert!(limits.unauthenticated(at("::ffff:192.0.2.1")).is_ok());
        assert!(
            limits.unauthenticated(at("192.0.2.1")).is_err(),
            "the same address"
        );
        assert!(
            limits.unauthenticated(at("::ffff:192.0.2.2")).is_ok(),
            "another IPv4 address is another client"
        );
        // An IPv6 address is still counted by its /64.
        assert_eq!(at("2001:db8::1").bucket(), at("2001:db8::2").bucket());
    }

    #[test]
    fn addresses_are_limited_apart() {
        let limits = Limits::new(LimitSettings {
            auth_per_minute: 1,
            ..LimitSettings::default()
        });
        let a = ClientAddress("10.0.0.1".parse().expect("ip"));
        let b = ClientAddress("10.0.0.2".parse().expect("ip"));
        assert!(limits.unauthenticated(a).is_ok());
        assert!(limits.unauthenticated(a).is_err());
        assert!(limits.unauthenticated(b).is_ok());
    }
}

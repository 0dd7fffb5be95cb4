//! Identity command specifications.

use super::{Held, World, assert_invalid, meanwhile, row_of, value, with_retry};
use crate::faults::{ConflictOnce, writes_sort_key};
use commands::identity::{Register, UpdateProfile};
use commands::{CommandError, Outcome};
use events_schema::Context;
use events_schema::events::identity::{ProfileUpdated, Units, UserRegistered};
use events_schema::ids::UserId;
use infra::Store;
use infra::observed::Row;
use infra::store::{IndexQuery, Query};
use std::sync::Arc;

/// A sign-up of `email` with the sample details.
pub(super) fn registration(email: &str) -> Register {
    Register {
        email: email.to_owned(),
        password: PASSWORD.into(),
        display_name: "Ana".to_owned(),
        timezone: "Europe/Paris".to_owned(),
        units: Units::Metric,
    }
}

/// The sample password of every registration here.
pub(super) const PASSWORD: &str = "correct horse battery";

/// Registers `email` with the sample details (as the world's meta, without a key).
async fn register(world: &World, email: &str) -> Result<Outcome<UserId>, CommandError> {
    world
        .identity
        .register(&world.meta, registration(email))
        .await
}

/// Logs in as `email` with the sample password.
async fn login(world: &World, email: &str) -> Result<UserId, CommandError> {
    let signed_in = world.identity.login(email, PASSWORD).await;
    signed_in.map(|signed_in| signed_in.user)
}

/// How many profiles the email index names for `email`.
async fn profiles_of(store: &dyn Store, email: &str) -> usize {
    let query = IndexQuery::partition("by-email", email);
    let page = store.query_index(Context::Identity, &query).await;
    page.expect("query").items.len()
}

fn unique_email() -> String {
    format!("{}@example.com", UserId::generate().as_str().to_lowercase())
}

async fn everything_in(store: &dyn Store, pk: &str) -> usize {
    store
        .query(Context::Identity, &Query::partition(pk).consistent())
        .await
        .expect("query")
        .items
        .len()
}

pub async fn register_writes_profile_reservation_and_event(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let email = unique_email();
    let user = world
        .identity
        .register(
            &world.meta,
            registration(&format!("  {} ", email.to_uppercase())),
        )
        .await
        .expect("registers")
        .value;
    let profile = world.identity.profile(&user).await.expect("profile");
    assert_eq!(profile.email, email, "email is trimmed and lowercased");
    assert_ne!(profile.password_hash.expose(), PASSWORD);
    let reservation = row_of(
        &*store,
        Context::Identity,
        format!("EMAIL#{email}"),
        "EMAIL",
    )
    .await;
    assert_eq!(
        reservation.expect("reserved")["user_id"],
        serde_json::json!(user)
    );
    let events = world.as_user(user.clone()).events(Context::Identity).await;
    assert_eq!(events.len(), 1);
    let registered: UserRegistered = events[0].decode().expect("typed");
    assert_eq!(registered.profile.email, email);
    assert!(
        !events[0].payload.to_string().contains("argon2"),
        "no password hash in events"
    );
}

pub async fn register_with_a_taken_email_fails_and_writes_nothing(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let email = unique_email();
    register(&world, &email).await.expect("first");
    let second = register(&world, &email.to_uppercase()).await;
    assert!(
        matches!(second, Err(CommandError::EmailTaken)),
        "{second:?}"
    );
    assert_eq!(
        profiles_of(&*store, &email).await,
        1,
        "one profile for the email"
    );
}

/// Five sign-ups of one email at once (`register` takes no writer lock): one account is
/// created, every other sign-up is `EmailTaken`, and the email names one profile. On
/// the stores the suite runs (embedded, ministack, moto) a losing transaction is
/// cancelled on the email's reservation; DynamoDB may cancel it as a conflict instead,
/// which `register` tries again (see the next case), and is then `EmailTaken`.
pub async fn racing_sign_ups_of_one_email_create_one_account(store: Arc<dyn Store>) {
    let email = unique_email();
    let mut sign_ups = tokio::task::JoinSet::new();
    for _ in 0..5 {
        let (world, email) = (World::new(store.clone()), email.clone());
        sign_ups.spawn(async move { register(&world, &email).await });
    }
    let outcomes = sign_ups.join_all().await;
    let created = outcomes.iter().filter(|o| o.is_ok()).count();
    let taken = outcomes
        .iter()
        .filter(|o| matches!(o, Err(CommandError::EmailTaken)))
        .count();
    assert_eq!((created, taken), (1, 4), "{outcomes:?}");
    assert_eq!(
        profiles_of(&*store, &email).await,
        1,
        "one profile for the email"
    );
}

/// A sign-up whose transaction is cancelled as a conflict (nothing written) is tried
/// again and creates the account, where it answered `Contention`.
pub async fn a_sign_up_cancelled_as_a_conflict_is_tried_again(store: Arc<dyn Store>) {
    let world = World::new(ConflictOnce::on(store.clone()));
    let email = unique_email();
    let user = register(&world, &email).await.expect("signed up").value;
    assert_eq!(world.store.counts().transactions, 2);
    assert_eq!(profiles_of(&*store, &email).await, 1);
    assert_eq!(login(&world, &email).await.expect("signs in"), user);
}

/// Starting a session, refreshing it and changing the password when the transaction is
/// cancelled as a conflict (nothing written) go through on the next attempt, where they
/// answered "account deleted", a refused token and `Contention`.
pub async fn sessions_cancelled_as_a_conflict_go_through_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let email = unique_email();
    let user = value(register(&world, &email).await);
    let signing_in = World::new(ConflictOnce::on(store.clone()));
    let proved = signing_in.identity.login(&email, PASSWORD).await;
    let started = signing_in
        .identity
        .start_session(&proved.expect("signs in"))
        .await;
    let token = started.expect("started on the second attempt");
    let refreshing = World::new(ConflictOnce::on(store.clone()));
    let refreshed = refreshing.identity.refresh_session(token.expose()).await;
    let (access, next) = refreshed.expect("refreshed on the second attempt");
    assert_eq!(access.user, user);
    assert_ne!(next.expose(), token.expose());
    let changing = World::new(ConflictOnce::on(store)).as_user(user.clone());
    let new_password = "a new horse battery";
    let changed = changing
        .identity
        .change_password(&changing.meta, PASSWORD, new_password);
    changed.await.expect("changed on the second attempt");
    let signed_in = changing.identity.login(&email, new_password).await;
    assert_eq!(signed_in.expect("the new password signs in").user, user);
    assert_eq!(
        changing.event_types(Context::Identity).await,
        vec!["UserRegistered", "PasswordChanged"]
    );
    let transactions = |w: &World| w.store.counts().transactions;
    assert_eq!(
        (
            transactions(&signing_in),
            transactions(&refreshing),
            transactions(&changing)
        ),
        (2, 2, 2)
    );
}

/// One refresh token presented twice at once (a stolen copy and its owner, say): the
/// first rotation lands, the held one finds the secret rotated under it and, as a reuse
/// presented a moment later would, ends the session: the winner's new token is refused
/// too, and only signing in again goes on.
pub async fn a_refresh_token_presented_twice_at_once_ends_its_session(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let email = unique_email();
    value(register(&world, &email).await);
    let signed_in = world.identity.login(&email, PASSWORD).await;
    let signed_in = signed_in.expect("signs in");
    let token = world
        .identity
        .start_session(&signed_in)
        .await
        .expect("signed in");
    let at_session = |row: &Row<'_>| writes_sort_key(row, "SESSION#", "secret_hash");
    let presented = token.expose().to_owned();
    let held = Held::start(&store, at_session, move |world| async move {
        world.identity.refresh_session(&presented).await
    })
    .await;
    // Meanwhile the same token is presented elsewhere: its rotation lands first.
    let other = World::in_another_process(store.clone());
    let first = meanwhile(other.identity.refresh_session(token.expose())).await;
    let (_, winners) = first.expect("the first presentation rotates the token");
    let held = held.release().await;
    assert!(
        matches!(held, Err(CommandError::InvalidSession)),
        "{held:?}"
    );
    let after = other.identity.refresh_session(winners.expose()).await;
    assert!(
        matches!(after, Err(CommandError::InvalidSession)),
        "the session ended with the reuse: {after:?}"
    );
    let again = world.identity.start_session(&signed_in).await;
    again.expect("signing in again starts a new session");
}

/// A sign-in whose credentials change before its session commits (a password or an
/// email changed in between, or read stale from the email index): the session does not
/// start, and nothing of it is written.
pub async fn a_sign_in_whose_credentials_changed_before_its_session_is_refused(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let email = unique_email();
    let user = value(register(&world, &email).await);
    let me = world.as_user(user.clone());
    let sessions =
        || async { super::items_of(&*store, Context::Identity, &me.pk(), "SESSION#").await };
    // Checked against the password, which then changes:
    let proved = me.identity.login(&email, PASSWORD).await.expect("signs in");
    let changed = me
        .identity
        .change_password(&me.meta, PASSWORD, "a new horse battery");
    changed.await.expect("the password changes");
    let refused = me.identity.start_session(&proved).await;
    assert!(
        matches!(refused, Err(CommandError::InvalidCredentials)),
        "{refused:?}"
    );
    assert!(sessions().await.is_empty(), "no session was written");
    // checked against the email, which then changes:
    let proved = me.identity.login(&email, "a new horse battery").await;
    let proved = proved.expect("signs in with the new password");
    let (new_password, new_email) = ("a new horse battery", unique_email());
    let moved = me.identity.change_email(&me.meta, &new_email, new_password);
    moved.await.expect("the email changes");
    let refused = me.identity.start_session(&proved).await;
    assert!(
        matches!(refused, Err(CommandError::InvalidCredentials)),
        "{refused:?}"
    );
    // checked against the email, which then changes and changes back: the credentials
    // are as checked, but a generation on (two), and tokens of the one checked are
    // refused: no session starts on it either.
    let profile = me.identity.profile(&user).await.expect("profile");
    let proved = me.identity.login(&profile.email, new_password).await;
    let proved = proved.expect("signs in with the email as it is");
    for email in [unique_email(), profile.email.clone()] {
        let moved = me.identity.change_email(&me.meta, &email, new_password);
        moved.await.expect("the email changes");
    }
    let refused = me.identity.start_session(&proved).await;
    assert!(
        matches!(refused, Err(CommandError::InvalidCredentials)),
        "{refused:?}"
    );
    assert!(sessions().await.is_empty(), "no session was written");
}

/// A change that ends every session (`change`, held at the store at its profile write,
/// which `paused` matches) while another process signs in with the credentials as
/// they still are: that session started after the change read the sessions to end, so
/// the change, finding a session newer than its read, reads again and ends it too.
async fn a_session_started_meanwhile_ends_with<Fut>(
    store: &Arc<dyn Store>,
    paused: fn(&Row<'_>) -> bool,
    change: impl FnOnce(Arc<World>, commands::CommandMeta) -> Fut,
) where
    Fut: Future<Output = Result<(), CommandError>> + Send + 'static,
{
    let world = World::new(store.clone());
    let email = unique_email();
    let user = value(register(&world, &email).await);
    let meta = commands::CommandMeta::new(user.clone());
    let held = Held::start(store, paused, move |world| change(world, meta)).await;
    // Meanwhile another process signs in with the credentials as they still are.
    let other = World::in_another_process(store.clone());
    let started = meanwhile(async {
        let proved = other.identity.login(&email, PASSWORD).await?;
        other.identity.start_session(&proved).await
    })
    .await;
    let token = started.expect("a session starts before the change commits");
    held.release().await.expect("the change commits");
    let refreshed = other.identity.refresh_session(token.expose()).await;
    assert!(
        matches!(refreshed, Err(CommandError::InvalidSession)),
        "the session started meanwhile ended with the change: {refreshed:?}"
    );
}

/// A password change and an email change, each racing a sign-in from another process
/// ([`a_session_started_meanwhile_ends_with`]).
pub async fn a_session_started_while_the_password_or_email_changes_ends_with_the_others(
    store: Arc<dyn Store>,
) {
    let at_password = |row: &Row<'_>| writes_sort_key(row, "PROFILE", "password_hash");
    a_session_started_meanwhile_ends_with(&store, at_password, |world, meta| async move {
        let new = "a new horse battery";
        world.identity.change_password(&meta, PASSWORD, new).await
    })
    .await;
    let at_email = |row: &Row<'_>| writes_sort_key(row, "PROFILE", "email");
    a_session_started_meanwhile_ends_with(&store, at_email, |world, meta| async move {
        let new_email = unique_email();
        let moved = world.identity.change_email(&meta, &new_email, PASSWORD);
        moved.await.map(|_| ())
    })
    .await;
}

/// A profile update and an email change whose transaction is cancelled as a conflict
/// read again and commit on the next attempt (they read a conflict as a lost race).
pub async fn profile_changes_cancelled_as_a_conflict_commit_on_the_next_attempt(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let user = value(register(&world, &unique_email()).await);
    let conflicted = || World::new(ConflictOnce::on(store.clone())).as_user(user.clone());
    let updating = conflicted();
    let update = UpdateProfile {
        display_name: Some("Ana B.".into()),
        ..Default::default()
    };
    let updated = updating
        .identity
        .update_profile(&updating.meta, update)
        .await;
    updated.expect("updated on the second attempt");
    let moving = conflicted();
    let new_email = unique_email();
    let moving_email = moving
        .identity
        .change_email(&moving.meta, &new_email, PASSWORD);
    let moved = moving_email.await;
    moved.expect("moved on the second attempt");
    assert_eq!(profiles_of(&*store, &new_email).await, 1);
    let transactions = |w: &World| w.store.counts().transactions;
    assert_eq!((transactions(&updating), transactions(&moving)), (2, 2));
}

pub async fn register_repeated_with_the_same_key_returns_the_same_user(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let email = unique_email();
    let first = world
        .identity
        .register(&world.keyed("reg-1"), registration(&email))
        .await
        .expect("first");
    let again = world
        .identity
        .register(&world.keyed("reg-1"), registration(&email))
        .await
        .expect("retry");
    assert_eq!(again.value, first.value);
    assert!(again.replayed && !first.replayed);
    let user_pk = format!("USER#{}", first.value);
    let events = super::items_of(&*store, Context::Identity, &user_pk, "EVT#").await;
    assert_eq!(events.len(), 1, "the retry published nothing");
    let mut other = registration(&email);
    other.display_name = "Someone else".into();
    let reused = world.identity.register(&world.keyed("reg-1"), other).await;
    assert!(
        matches!(reused, Err(CommandError::IdempotencyKeyReused)),
        "{reused:?}"
    );
}

pub async fn register_rejects_invalid_input_naming_the_field(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let email = unique_email();
    let mut bad = registration("not-an-email");
    assert_invalid(
        world.identity.register(&world.meta, bad.clone()).await,
        "email",
    );
    bad = registration(&email);
    bad.password = "short".into();
    assert_invalid(world.identity.register(&world.meta, bad).await, "password");
    bad = registration(&email);
    bad.timezone = "Mars/Olympus".into();
    assert_invalid(world.identity.register(&world.meta, bad).await, "timezone");
    bad = registration(&email);
    bad.display_name = " ".into();
    assert_invalid(
        world.identity.register(&world.meta, bad).await,
        "display_name",
    );
    assert_eq!(
        everything_in(&*store, &format!("EMAIL#{email}")).await,
        0,
        "nothing written"
    );
    assert_eq!(world.store.counts().writes(), 0);
}

pub async fn login_checks_email_and_password(store: Arc<dyn Store>) {
    let world = World::new(store);
    let email = unique_email();
    let user = value(register(&world, &email).await);
    assert_eq!(
        login(&world, &email.to_uppercase()).await.expect("logs in"),
        user
    );
    let wrong = world.identity.login(&email, "wrong horse battery").await;
    assert!(
        matches!(wrong, Err(CommandError::InvalidCredentials)),
        "{wrong:?}"
    );
    let unknown = login(&world, &unique_email()).await;
    assert!(
        matches!(unknown, Err(CommandError::InvalidCredentials)),
        "{unknown:?}"
    );
    let garbage = world.identity.login("", "").await;
    assert!(
        matches!(garbage, Err(CommandError::InvalidCredentials)),
        "{garbage:?}"
    );
}

pub async fn change_email_moves_the_reservation(store: Arc<dyn Store>) {
    let world = World::new(store);
    let (old, new) = (unique_email(), unique_email());
    let user = value(register(&world, &old).await);
    let meta = commands::CommandMeta::new(user.clone());
    let changed = world
        .identity
        .change_email(&meta, &new, PASSWORD)
        .await
        .expect("changes");
    assert_eq!(changed.value.email, new);
    assert_eq!(login(&world, &new).await.expect("new email logs in"), user);
    // The old email is free again; the new one is taken.
    register(&world, &old)
        .await
        .expect("old email registers again");
    let taken = register(&world, &new).await;
    assert!(matches!(taken, Err(CommandError::EmailTaken)), "{taken:?}");
    let types = world.as_user(user).event_types(Context::Identity).await;
    assert_eq!(types, vec!["UserRegistered", "EmailChanged"]);
}

pub async fn change_email_to_a_taken_email_changes_nothing(store: Arc<dyn Store>) {
    let world = World::new(store);
    let (mine, theirs) = (unique_email(), unique_email());
    let user = value(register(&world, &mine).await);
    value(register(&world, &theirs).await);
    let meta = commands::CommandMeta::new(user.clone());
    let result = world.identity.change_email(&meta, &theirs, PASSWORD).await;
    assert!(
        matches!(result, Err(CommandError::EmailTaken)),
        "{result:?}"
    );
    let profile = world.identity.profile(&user).await.expect("profile");
    assert_eq!(
        (profile.email.as_str(), profile.version),
        (mine.as_str(), 1)
    );
    assert_eq!(login(&world, &mine).await.expect("still logs in"), user);
}

/// An email change held at the store while another process moves the same account to
/// the same email: the held transaction is cancelled (the profile moved on, the new
/// email's reservation is already the account's own), and the command, reading again,
/// finds the email already changed and answers a replay, not "email taken".
pub async fn an_email_change_another_process_made_first_is_answered_as_a_replay(
    store: Arc<dyn Store>,
) {
    let world = World::new(store.clone());
    let new_email = unique_email();
    let user = value(register(&world, &unique_email()).await);
    let at_profile = |row: &Row<'_>| writes_sort_key(row, "PROFILE", "email");
    let (held_user, held_email) = (user.clone(), new_email.clone());
    let held = Held::start(&store, at_profile, move |world| async move {
        let meta = commands::CommandMeta::new(held_user);
        world
            .identity
            .change_email(&meta, &held_email, PASSWORD)
            .await
    })
    .await;
    // Meanwhile another process moves the account to the same email: it lands first.
    let other = World::in_another_process(store.clone()).as_user(user.clone());
    let moving = other
        .identity
        .change_email(&other.meta, &new_email, PASSWORD);
    let moved = meanwhile(moving).await;
    assert!(matches!(&moved, Ok(o) if !o.replayed), "{moved:?}");
    let held_world = held.world.clone();
    let answered = held.release().await;
    assert!(
        matches!(&answered, Ok(outcome) if outcome.replayed && outcome.value.email == new_email),
        "{answered:?}"
    );
    let transactions = held_world.store.counts().transactions;
    assert_eq!(
        transactions, 1,
        "the cancelled one; the re-read found it done"
    );
    let profile = world.identity.profile(&user).await.expect("profile");
    assert_eq!(
        (profile.email.as_str(), profile.version),
        (new_email.as_str(), 2)
    );
    assert_eq!(profiles_of(&*store, &new_email).await, 1);
    let types = world.as_user(user).event_types(Context::Identity).await;
    assert_eq!(
        types,
        vec!["UserRegistered", "EmailChanged"],
        "changed once"
    );
}

pub async fn update_profile_publishes_once_per_change(store: Arc<dyn Store>) {
    let world = World::new(store);
    let user = value(register(&world, &unique_email()).await);
    let world = world.as_user(user);
    let change = UpdateProfile {
        display_name: Some("Ana B".into()),
        timezone: Some("America/New_York".into()),
        units: Some(Units::Imperial),
    };
    let keyed = world.keyed("p-1");
    let first = with_retry(|| world.identity.update_profile(&keyed, change.clone())).await;
    assert_eq!(
        (first.timezone.as_str(), first.version),
        ("America/New_York", 2)
    );
    let same = world
        .identity
        .update_profile(&world.meta, change)
        .await
        .expect("no change");
    assert!(
        same.replayed,
        "an update that changes nothing publishes nothing"
    );
    let events = world.events(Context::Identity).await;
    assert_eq!(events.len(), 2);
    let updated: ProfileUpdated = events[1].decode().expect("typed");
    assert_eq!(updated.profile.display_name, "Ana B");
    assert_invalid(
        world
            .identity
            .update_profile(
                &world.meta,
                UpdateProfile {
                    timezone: Some("nowhere".into()),
                    ..UpdateProfile::default()
                },
            )
            .await,
        "timezone",
    );
}

pub async fn deletion_request_refuses_login_and_publishes_once(store: Arc<dyn Store>) {
    let world = World::new(store);
    let email = unique_email();
    let user = value(register(&world, &email).await);
    let world = world.as_user(user);
    assert!(
        !world
            .identity
            .request_deletion(&world.meta, PASSWORD)
            .await
            .expect("requested")
            .replayed
    );
    assert!(
        world
            .identity
            .request_deletion(&world.meta, PASSWORD)
            .await
            .expect("again")
            .replayed
    );
    let login = login(&world, &email).await;
    assert!(
        matches!(login, Err(CommandError::AccountDeleted)),
        "{login:?}"
    );
    assert_eq!(
        world.event_types(Context::Identity).await,
        vec!["UserRegistered", "AccountDeletionRequested"]
    );
}

/// A stolen access token proves nothing: an email change or a deletion request with a
/// wrong current password is `InvalidCredentials` and writes nothing (the account keeps
/// its email, signs in with it, and is not being deleted); with the right one each goes
/// through.
pub async fn an_email_change_or_a_deletion_takes_the_current_password(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let email = unique_email();
    let user = value(register(&world, &email).await);
    let me = World::new(store).as_user(user.clone());
    let guess = "a guess at the password";
    let elsewhere = unique_email();
    let moved = me.identity.change_email(&me.meta, &elsewhere, guess).await;
    assert!(
        matches!(moved, Err(CommandError::InvalidCredentials)),
        "{moved:?}"
    );
    let deleted = me.identity.request_deletion(&me.meta, guess).await;
    assert!(
        matches!(deleted, Err(CommandError::InvalidCredentials)),
        "{deleted:?}"
    );
    assert_eq!(me.store.counts().writes(), 0, "nothing written");
    assert_eq!(login(&me, &email).await.expect("still signs in"), user);
    assert!(!me.identity.is_deleted(&user).await.expect("read"));
    assert_eq!(
        me.event_types(Context::Identity).await,
        vec!["UserRegistered"]
    );
    // With the right one: moved, then deleted.
    let new_email = unique_email();
    let moved = me.identity.change_email(&me.meta, &new_email, PASSWORD);
    assert_eq!(moved.await.expect("moves").value.email, new_email);
    let deleted = me.identity.request_deletion(&me.meta, PASSWORD).await;
    deleted.expect("requested");
    assert!(me.identity.is_deleted(&user).await.expect("read"));
    assert_eq!(
        me.event_types(Context::Identity).await,
        vec!["UserRegistered", "EmailChanged", "AccountDeletionRequested"]
    );
}

/// Whether another process honours `user`'s access token of `generation`.
async fn honoured(other: &World, user: &UserId, generation: u64) -> bool {
    let holds = other.identity.access_holds(user, generation).await;
    holds.expect("an active account")
}

/// An access token holds while the credentials are at the generation it was issued at:
/// a sign-in reads the generation, a password change and an email change each move it
/// on (the tokens issued before are refused from then on, by another process too), a
/// refresh issues at the generation as it is, and a deletion request refuses every
/// token. A user who never had an account here has nothing to revoke.
pub async fn access_tokens_hold_until_the_credentials_change(store: Arc<dyn Store>) {
    let world = World::new(store.clone());
    let email = unique_email();
    let user = value(register(&world, &email).await);
    let me = world.as_user(user.clone());
    let other = World::in_another_process(store);
    let first = me.identity.login(&email, PASSWORD).await.expect("signs in");
    assert_eq!(first.access().generation, 0);
    let session = me.identity.start_session(&first).await.expect("session");
    assert!(honoured(&other, &user, 0).await);
    // A password change: the first generation's tokens end, its sessions too.
    let new_password = "a new horse battery";
    let changed = me
        .identity
        .change_password(&me.meta, PASSWORD, new_password);
    changed.await.expect("changed");
    assert!(
        !honoured(&other, &user, 0).await,
        "issued before the change"
    );
    let refreshed = me.identity.refresh_session(session.expose()).await;
    assert!(
        matches!(refreshed, Err(CommandError::InvalidSession)),
        "{refreshed:?}"
    );
    let second = me.identity.login(&email, new_password).await;
    let second = second.expect("signs in with the new password");
    assert_eq!(second.access().generation, 1);
    assert!(honoured(&other, &user, 1).await, "issued after the change");
    // An email change: the second generation's tokens end.
    let new_email = unique_email();
    let moved = me.identity.change_email(&me.meta, &new_email, new_password);
    moved.await.expect("moved");
    assert!(!honoured(&other, &user, 1).await);
    assert!(honoured(&other, &user, 2).await);
    // A refresh issues at the generation as it is.
    let third = me.identity.login(&new_email, new_password).await;
    let third = third.expect("signs in");
    let session = me.identity.start_session(&third).await.expect("session");
    let (access, _) = other
        .identity
        .refresh_session(session.expose())
        .await
        .expect("refreshed");
    let expected = commands::identity::Access {
        user: user.clone(),
        timezone: "Europe/Paris".into(),
        generation: 2,
    };
    assert_eq!(access, expected);
    // A deletion request: no token holds.
    let deleted = me.identity.request_deletion(&me.meta, new_password).await;
    deleted.expect("requested");
    let refused = other.identity.access_holds(&user, 2).await;
    assert!(
        matches!(refused, Err(CommandError::AccountDeleted)),
        "{refused:?}"
    );
    let stranger = other.identity.access_holds(&UserId::generate(), 0).await;
    assert!(stranger.expect("nothing to revoke"));
}

/// A credential's tries are counted by every process together (each Lambda execution
/// environment limited only its own): tries from two processes add up, a try past the
/// allowance is refused until the next minute, and tries at once are each counted once.
pub async fn a_credentials_tries_are_counted_by_every_process_together(store: Arc<dyn Store>) {
    use commands::identity::Tried;
    use events_schema::time::{Clock, Timestamp};
    let at = |time: &str| Clock::manual(Timestamp::parse(time).expect("time"));
    let ten_past = at("2026-03-02T08:00:10.000Z");
    let one = World::with_clock(store.clone(), ten_past.clone());
    let other = World::with_clock(store.clone(), ten_past);
    // The DynamoDB suites share their tables: an email of this run's own.
    let email = format!("ana-{}@example.com", one.meta.user.as_str().to_lowercase());
    for world in [&one, &other, &one] {
        let counted = world.identity.count_try(Tried::SignIn(&email), 3).await;
        counted.expect("counted");
    }
    let refused = other.identity.count_try(Tried::SignIn(&email), 3).await;
    assert!(
        matches!(
            refused,
            Err(CommandError::TooManyTries { retry_after_s: 50 })
        ),
        "{refused:?}"
    );
    let next_minute = World::with_clock(store.clone(), at("2026-03-02T08:01:00.000Z"));
    let again = next_minute
        .identity
        .count_try(Tried::SignIn(&email), 3)
        .await;
    again.expect("a new minute, a new allowance");

    let user = Arc::new(one);
    let mut tries = tokio::task::JoinSet::new();
    for _ in 0..12 {
        let user = user.clone();
        tries.spawn(async move {
            let tried = Tried::Password(&user.meta.user);
            user.identity.count_try(tried, 5).await
        });
    }
    let mut counted = 0;
    while let Some(tried) = tries.join_next().await {
        match tried.expect("task") {
            Ok(()) => counted += 1,
            Err(CommandError::TooManyTries { .. }) => {}
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(counted, 5, "twelve at once, five counted");
}

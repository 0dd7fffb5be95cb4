//! The caller's account under `/v1/me`: the profile, the password, the account's
//! deletion. What would lock the owner out (a new email, a new password, the account's
//! deletion) takes the current password, not the access token alone, each check a try
//! at the password counted as a sign-in's are; a wrong one is `403 wrong_password` (a
//! new password's, `422` naming `current_password`, as it always was).

use super::{Answer, ApiError};
use crate::http::callers::Me;
use crate::http::error::ErrorBody;
use crate::http::extract::ApiJson;
use crate::http::formats::TimezoneName;
use crate::http::responses;
use crate::http::state::AppState;
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use commands::CommandError;
use commands::identity::UpdateProfile;
use commands::secret::Secret;
use events_schema::events::identity::{ProfileState, Units};
use readmodels::views::ProfileView;
use serde::Deserialize;
use vitals_api_macros::{read, write};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/me", delete(delete_me))
        .route("/v1/me/profile", get(get_profile).patch(patch_profile))
        .route("/v1/me/password", post(change_password))
}

fn view(state: ProfileState) -> ProfileView {
    ProfileView {
        email: state.email,
        display_name: state.display_name,
        timezone: state.timezone,
        units: state.units,
    }
}

/// The caller's profile.
#[read(
    path = "/v1/me/profile", tag = "profile",
    ok = "The profile. Right after registering it may not be projected yet: 404.", body = ProfileView, errors(responses::ReadErrors),
)]
pub async fn get_profile(me: Me) -> Answer {
    me.found(me.api.reads.dashboard.profile(me.user()).await?)
}

/// `PATCH /v1/me/profile`: only the fields present change.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfilePatch {
    /// 1 to 80 characters.
    #[schema(
        min_length = 1,
        max_length = 80,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub display_name: Option<String>,
    /// IANA timezone name.
    #[schema(value_type = Option<TimezoneName>)]
    pub timezone: Option<String>,
    pub units: Option<Units>,
    /// A new email: unique across accounts; every session and every access token issued
    /// before ends with the change, this one too (sign in again with the new email).
    /// Takes `current_password`.
    #[schema(max_length = 254, format = Email)]
    pub email: Option<String>,
    /// The account's current password: required with `email` (a wrong one is `403
    /// wrong_password`, and a try at the password); not looked at otherwise.
    #[schema(value_type = Option<String>, format = Password)]
    pub current_password: Option<Secret>,
}

/// The answer to a change the current password must prove: a wrong one is `403
/// wrong_password` (the token is good, the proof is not: not a 401, after which an app
/// would refresh its token and sign out).
fn proved(error: CommandError) -> ApiError {
    match error {
        CommandError::InvalidCredentials => ApiError::new(
            StatusCode::FORBIDDEN,
            "wrong_password",
            "current_password: is not the account's password",
        ),
        other => other.into(),
    }
}

/// Changes the fields present in the body.
///
/// A new email takes the current password, and ends every session and every access
/// token issued before it, the caller's too: sign in again with the new email.
#[write(
    patch, path = "/v1/me/profile", tag = "profile", body = ProfilePatch,
    responses(
        (status = 200, description = "The profile after the change.", body = ProfileView),
        (status = 403, description = "`wrong_password`: with `email`, `current_password` is not the account's password; nothing changed.", body = ErrorBody),
        (status = 404, response = responses::NotFound),
        (status = 503, response = responses::Busy),
        responses::JsonWriteErrors,
    ),
)]
pub async fn patch_profile(
    me: Me,
    ApiJson(body): ApiJson<ProfilePatch>,
) -> Answer<Json<ProfileView>> {
    // An email change and the other fields are two commands (the email moves its
    // reservation), each with its own scope of the request's Idempotency-Key, so a retry
    // replays both. Every field is checked before either writes: a bad timezone must not
    // leave the email changed behind a 422.
    let email_meta = me.meta("patch_profile.email")?;
    let meta = me.meta("patch_profile")?;
    let rest = UpdateProfile {
        display_name: body.display_name,
        timezone: body.timezone,
        units: body.units,
    };
    rest.check()?;
    let mut profile = None;
    if let Some(email) = &body.email {
        let Some(password) = &body.current_password else {
            return Err(ApiError::validation(
                "current_password",
                "is required to change the email",
            ));
        };
        let api = &me.api;
        api.limits.password_check(&api.identity, me.user()).await?;
        let changing = api
            .identity
            .change_email(&email_meta, email, password.expose());
        profile = Some(changing.await.map_err(proved)?.value);
    }
    let changes_more =
        rest.display_name.is_some() || rest.timezone.is_some() || rest.units.is_some();
    if changes_more || profile.is_none() {
        profile = Some(me.api.identity.update_profile(&meta, rest).await?.value);
    }
    let profile = profile.ok_or_else(|| ApiError::internal("no profile after a change"))?;
    Ok(Json(view(profile)))
}

/// `POST /v1/me/password`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordChange {
    #[schema(value_type = String, format = Password)]
    pub current_password: commands::secret::Secret,
    /// 10 to 256 characters.
    #[schema(value_type = String, format = Password, min_length = 10, max_length = 256)]
    pub new_password: commands::secret::Secret,
}

/// Changes the password; every session (refresh token) and every access token issued
/// before ends with it, the caller's too: sign in again with the new password.
#[utoipa::path(
    post,
    path = "/v1/me/password",
    tag = "profile",
    security(("bearer" = [])),
    request_body = PasswordChange,
    responses(
        (status = 204, description = "Changed; sign in again, on this device too."),
        (status = 404, response = responses::NotFound),
        (status = 503, response = responses::Busy),
        responses::JsonWriteErrors,
    ),
)]
pub async fn change_password(me: Me, ApiJson(body): ApiJson<PasswordChange>) -> Answer<StatusCode> {
    let api = &me.api;
    api.limits.password_check(&api.identity, me.user()).await?;
    let (current, new) = (body.current_password.expose(), body.new_password.expose());
    let meta = me.unkeyed_meta();
    api.identity.change_password(&meta, current, new).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /v1/me`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccountDeletion {
    /// The account's current password: an access token alone cannot delete the account.
    #[schema(value_type = String, format = Password)]
    pub current_password: Secret,
}

/// Requests the deletion of the caller's account, proved by the current password.
///
/// Every context then drains the user's data; from now on this account's tokens read
/// and write nothing (`401 account_deleted`) and sign-in is refused.
#[write(
    delete, path = "/v1/me", tag = "profile", body = AccountDeletion,
    responses(
        (status = 202, description = "Deletion requested; it completes asynchronously."),
        (status = 403, description = "`wrong_password`: `current_password` is not the account's password; nothing changed.", body = ErrorBody),
        (status = 404, response = responses::NotFound),
        (status = 503, response = responses::Busy),
        responses::JsonWriteErrors,
    ),
)]
pub async fn delete_me(me: Me, ApiJson(body): ApiJson<AccountDeletion>) -> Answer<StatusCode> {
    let meta = me.meta("delete_account")?;
    let api = &me.api;
    api.limits.password_check(&api.identity, me.user()).await?;
    let password = body.current_password.expose();
    let requested = api.identity.request_deletion(&meta, password).await;
    requested.map_err(proved)?;
    Ok(StatusCode::ACCEPTED)
}

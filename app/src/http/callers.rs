//! Who a request comes from, as the handlers take them, each with the command and
//! query handlers: [`Me`], the signed-in caller (the [`AuthUser`] extractor's checks:
//! token, rate limit, account not being deleted, token not issued before the password or
//! email last changed) with the request's headers for a command's metadata
//! (`Idempotency-Key`, request id) and a read's `If-None-Match`; and [`Guest`], a caller
//! without a token, let through the per-address allowance of unauthenticated requests
//! first, so that no such route can forget it.

use super::api::Api;
use super::auth::AuthUser;
use super::error::ApiError;
use super::etag::viewed;
use super::extract::meta;
use super::limits::ClientAddress;
use super::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::response::Response;
use commands::CommandMeta;
use events_schema::ids::UserId;
use serde::Serialize;
use std::sync::Arc;

/// The signed-in caller of a request, and the handlers to serve them with.
pub struct Me {
    pub api: Arc<Api>,
    pub caller: AuthUser,
    headers: HeaderMap,
}

impl FromRequestParts<AppState> for Me {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = AuthUser::from_request_parts(parts, state).await?;
        Ok(Me {
            api: state.api.clone(),
            caller,
            headers: parts.headers.clone(),
        })
    }
}

impl Me {
    pub fn user(&self) -> &UserId {
        &self.caller.user
    }

    /// The metadata of a command to `operation`: the caller, their timezone, the
    /// request's id and `Idempotency-Key` (scoped to the caller and `operation`).
    pub fn meta(&self, operation: &str) -> Result<CommandMeta, ApiError> {
        meta(&self.caller, &self.headers, operation)
    }

    /// The metadata of a command that takes no `Idempotency-Key`: the caller and the
    /// request's id.
    pub fn unkeyed_meta(&self) -> CommandMeta {
        let mut meta = CommandMeta::new(self.caller.user.clone());
        meta.correlation_id = super::request_log::request_id(&self.headers);
        meta
    }

    /// The timezone a write names its day in: the body's, else the token's, else UTC.
    pub fn timezone(&self, body: Option<String>) -> String {
        body.or_else(|| self.caller.timezone.clone())
            .unwrap_or_else(|| "UTC".to_owned())
    }

    /// `view` with its `ETag`, or `304` when the request's `If-None-Match` names it.
    pub fn view<T: Serialize>(&self, view: &T) -> Result<Response, ApiError> {
        viewed(&self.headers, view)
    }

    /// [`Self::view`] of what was found; `404` when nothing was.
    pub fn found<T: Serialize>(&self, found: Option<T>) -> Result<Response, ApiError> {
        self.view(&found.ok_or_else(ApiError::not_found)?)
    }
}

/// A caller without a token (signing up or in, an OAuth callback), within the
/// allowance of unauthenticated requests from their address (`429` past it).
pub struct Guest {
    pub api: Arc<Api>,
    pub client: ClientAddress,
}

impl FromRequestParts<AppState> for Guest {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let client = ClientAddress::of(parts);
        state.api.limits.unauthenticated(client)?;
        Ok(Guest {
            api: state.api.clone(),
            client,
        })
    }
}

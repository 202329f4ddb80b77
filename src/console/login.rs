//! Signing in and out: `/console/login` and `/console/logout`.
//!
//! Every failure (a wrong password, an unknown email, a disabled user) gets the same
//! words and status, so the page tells nobody which emails exist; too many failures
//! for one email or from one address are refused for a while (`domain::people`), and
//! when every password check is taken and the queue is full the page says so at once
//! (503, [`BUSY`]).

use std::net::IpAddr;

use crate::api::request::RequestBody;
use hyper::header::{HeaderValue, SET_COOKIE};
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};
use maud::html;

use super::session::{self, Visitor};
use super::{form, layout, respond};
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::people::{self, sessions, SignInError};
use crate::error::{Error, Result};

/// The one message of every failed sign-in.
pub const WRONG: &str = "Wrong email or password";
/// The message of a sign-in refused because the password checks are all taken.
pub const BUSY: &str = "Sign-in is busy, try again";

/// `GET /console/login`: the form (a signed-in person goes to the inbox).
pub async fn page(state: &AppState, parts: &Parts) -> Response<Body> {
    if let Ok(Some(_)) = session::visitor(state, &parts.headers).await {
        return respond::redirect("/console/inbox");
    }
    form_page(state, StatusCode::OK, "", None)
}

/// The hint of the first run, while the server has no user.
pub const FIRST_RUN_HINT: &str = "No account yet? The server's log holds a one-time setup link.";

fn form_page(
    state: &AppState,
    status: StatusCode,
    email: &str,
    error: Option<&str>,
) -> Response<Body> {
    let first_run = state
        .store
        .read()
        .and_then(|read| people::setup::pending(&read))
        .unwrap_or(false);
    let markup = layout::page(
        "Sign in",
        None,
        html! {
            h1 { "Sign in" }
            @if let Some(error) = error {
                p.error role="alert" { (error) }
            }
            form.stack method="post" action="/console/login" {
                div {
                    label for="email" { "Email" }
                    input #email type="email" name="email" value=(email) autocomplete="username" required autofocus;
                }
                div {
                    label for="password" { "Password" }
                    input #password type="password" name="password" autocomplete="current-password" required;
                }
                div { button type="submit" { "Sign in" } }
            }
            @if first_run { p.notice { (FIRST_RUN_HINT) } }
        },
    );
    respond::html(status, markup)
}

/// `POST /console/login`: a session and its cookie, then the inbox.
pub async fn sign_in(
    state: &AppState,
    parts: &Parts,
    body: RequestBody,
    peer: IpAddr,
) -> Result<Response<Body>> {
    session::check_origin(parts)?;
    let form = form::read(body).await?;
    let email = form.text("email");
    let password = form.get("password").unwrap_or_default();
    let outcome = people::sign_in(
        &state.store,
        &state.sign_in_throttle,
        &state.passwords,
        email,
        password,
        peer,
    )
    .await?;
    match outcome {
        Ok(new) => {
            let mut response = respond::redirect("/console/inbox");
            let cookie = format!(
                "{}={}; Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
                sessions::COOKIE,
                new.token,
                sessions::ABSOLUTE.as_secs()
            );
            let value = HeaderValue::from_str(&cookie)
                .map_err(|e| Error::Internal(format!("session cookie: {e}")))?;
            response.headers_mut().insert(SET_COOKIE, value);
            Ok(response)
        }
        Err(SignInError::Wrong) => Ok(form_page(
            state,
            StatusCode::UNAUTHORIZED,
            email,
            Some(WRONG),
        )),
        Err(SignInError::Busy) => {
            let mut response = form_page(state, StatusCode::SERVICE_UNAVAILABLE, email, Some(BUSY));
            response
                .headers_mut()
                .insert(hyper::header::RETRY_AFTER, HeaderValue::from(1));
            Ok(response)
        }
        Err(SignInError::Throttled { minutes }) => {
            let unit = if minutes == 1 { "minute" } else { "minutes" };
            let text = format!("Too many attempts. Try again in {minutes} {unit}.");
            let mut response = form_page(state, StatusCode::TOO_MANY_REQUESTS, email, Some(&text));
            response.headers_mut().insert(
                hyper::header::RETRY_AFTER,
                HeaderValue::from(minutes.saturating_mul(60)),
            );
            Ok(response)
        }
    }
}

/// `POST /console/logout`: the session is deleted on the server, the cookie cleared.
pub async fn sign_out(state: &AppState, visitor: &Visitor) -> Result<Response<Body>> {
    let hash = visitor.token_hash;
    state
        .store
        .write(move |tx| sessions::end(tx, &hash))
        .await?;
    let mut response = respond::redirect("/console/login");
    let cleared = format!(
        "{}=; Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
        sessions::COOKIE
    );
    if let Ok(value) = HeaderValue::from_str(&cleared) {
        response.headers_mut().insert(SET_COOKIE, value);
    }
    Ok(response)
}

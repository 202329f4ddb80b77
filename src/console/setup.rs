//! The first run's page, `/console/setup?token=…` (`../shared/spec/console.md`, "First
//! run"): the form that creates the first admin ("Organization", "Email", "Name",
//! "Password", "Create admin"), the token carried in a hidden field. There is no
//! session yet, so the token is the secret: a POST needs it and this server's origin.
//! The rules (token checked and used up, the organization found or created, the admin
//! and their session) are `domain::people::setup`'s; this page parses and renders.

use hyper::header::{HeaderValue, SET_COOKIE};
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};
use maud::html;

use super::form::Form;
use super::{layout, respond};
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::people::setup::{self, FirstAdmin, Setup};
use crate::domain::people::{passwords, sessions};
use crate::error::{Error, Result};
use crate::time::now_micros;

/// What the form shows: the values typed and a refusal beside its field.
#[derive(Debug, Default)]
struct SetupView {
    token: String,
    input: FirstAdmin,
    /// The field refused (`organization`, `email`, `name`, `password`) and why.
    refusal: Option<(String, String)>,
}

impl SetupView {
    fn error_for(&self, field: &str) -> Option<&str> {
        self.refusal
            .as_ref()
            .filter(|(f, _)| f == field)
            .map(|(_, m)| m.as_str())
    }

    fn view(&self, status: StatusCode) -> Response<Body> {
        let other = self
            .refusal
            .as_ref()
            .filter(|(f, _)| !["organization", "email", "name", "password"].contains(&f.as_str()))
            .map(|(_, m)| m.clone());
        // A field with its help (if any) and its refusal, both in the field's column
        // and named by `aria-describedby`.
        let field = |id: &str, label: &str, kind: &str, value: &str, auto: &str, hint: &str| {
            let error = self.error_for(id);
            let error_id = format!("{id}-error");
            let hint_id = format!("{id}-hint");
            let described: Vec<&str> = [
                Some(hint_id.as_str()).filter(|_| !hint.is_empty()),
                Some(error_id.as_str()).filter(|_| error.is_some()),
            ]
            .into_iter()
            .flatten()
            .collect();
            let described = Some(described.join(" ")).filter(|d| !d.is_empty());
            html! {
                div {
                    label for=(id) { (label) }
                    input id=(id) type=(kind) name=(id) value=(value) autocomplete=(auto) required
                        aria-invalid=[error.map(|_| "true")] aria-describedby=[described];
                    @if !hint.is_empty() { p id=(hint_id) .muted { (hint) } }
                    @if let Some(error) = error { p id=(error_id) .field-error { (error) } }
                }
            }
        };
        let markup = layout::page(
            "Set up engaged",
            None,
            html! {
                h1 { "Set up engaged" }
                p { "Create the first admin. They sign in right away and can add everyone else under Settings → People." }
                @if let Some(other) = &other { p.error role="alert" { (other) } }
                form.stack method="post" action="/console/setup" {
                    input type="hidden" name="token" value=(self.token);
                    (field("organization", "Organization", "text", &self.input.organization, "organization", ""))
                    (field("email", "Email", "email", &self.input.email, "username", ""))
                    (field("name", "Name", "text", &self.input.name, "name", ""))
                    (field("password", "Password", "password", "", "new-password", "At least 12 characters."))
                    div.actions { button type="submit" { "Create admin" } }
                }
            },
        );
        respond::html(status, markup)
    }
}

/// The 403 of a wrong, used or expired link, in words.
fn refused() -> Response<Body> {
    let markup = layout::page(
        "Setup link not valid",
        None,
        html! {
            h1 { "Setup link not valid" }
            p.notice { (setup::REFUSED) }
            p { a href="/console/login" { "Sign in" } }
        },
    );
    respond::html(StatusCode::FORBIDDEN, markup)
}

fn token_of(query: &str) -> String {
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .ok()
        .and_then(|pairs| pairs.into_iter().find(|(k, _)| k == "token"))
        .map(|(_, v)| v)
        .unwrap_or_default()
}

/// `GET /console/setup?token=…`: the form, 403 for a link that is not valid, 404 once
/// a user exists.
pub fn page(state: &AppState, parts: &Parts) -> Result<Response<Body>> {
    let token = token_of(parts.uri.query().unwrap_or(""));
    let read = state.store.read()?;
    match setup::check(&read, &token, now_micros())? {
        Setup::Done => Err(Error::NotFound("Not found".into())),
        Setup::Refused => Ok(refused()),
        Setup::Open => {
            let organization = setup::suggested_organization(&read)?.unwrap_or_default();
            let view = SetupView {
                token,
                input: FirstAdmin {
                    organization,
                    ..FirstAdmin::default()
                },
                refusal: None,
            };
            Ok(view.view(StatusCode::OK))
        }
    }
}

/// `POST /console/setup` (its origin already checked): the first admin, signed in,
/// lands on the inbox.
pub async fn create(state: &AppState, form: &Form) -> Result<Response<Body>> {
    let token = form.get("token").unwrap_or_default().to_string();
    let input = FirstAdmin {
        organization: form.text("organization").to_string(),
        email: form.text("email").to_string(),
        name: form.text("name").to_string(),
    };
    // The token first, so nobody without it makes the server hash a password.
    match setup::check(&state.store.read()?, &token, now_micros())? {
        Setup::Done => return Err(Error::NotFound("Not found".into())),
        Setup::Refused => return Ok(refused()),
        Setup::Open => {}
    }
    let refuse = |view_input: FirstAdmin, e: Error| -> Result<Response<Body>> {
        let field = e.refused_field().unwrap_or("form").to_string();
        if !e.is_bad_request() && !matches!(e, Error::Conflict(_)) {
            return Err(e);
        }
        let view = SetupView {
            token: token.clone(),
            input: view_input,
            refusal: Some((field, e.to_string())),
        };
        Ok(view.view(StatusCode::BAD_REQUEST))
    };
    let password = form.get("password").unwrap_or_default().to_string();
    if let Err(e) = passwords::check_new(&password) {
        return refuse(input, Error::field("password", e.to_string()));
    }
    let hash = state.passwords.hash(password).await?;
    let (job_token, job_input) = (token.clone(), input.clone());
    let created = state
        .store
        .write(move |tx| {
            setup::create_first_admin(tx, &job_token, &job_input, hash.clone(), now_micros())
        })
        .await;
    match created {
        Ok((_, session)) => {
            let mut response = respond::redirect("/console/inbox");
            let cookie = format!(
                "{}={}; Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
                sessions::COOKIE,
                session.token,
                sessions::ABSOLUTE.as_secs()
            );
            let value = HeaderValue::from_str(&cookie)
                .map_err(|e| Error::Internal(format!("session cookie: {e}")))?;
            response.headers_mut().insert(SET_COOKIE, value);
            Ok(response)
        }
        Err(Error::Forbidden) => Ok(refused()),
        Err(e) => refuse(input, e),
    }
}

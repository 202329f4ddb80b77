//! The operator console: server-rendered pages under `/console/` for the people who own
//! the conversations (`../shared/spec/console.md`).
//!
//! It sits on the api floor beside `api/`: the server hands it every request for `/`
//! and `/console/...` ([`is_console_path`]). [`handle`] routes (`routes`), checks the
//! session and, for a POST, its CSRF token and origin (`session`), checks the route's
//! role, then the page's handler calls the same domain functions the API calls and
//! renders HTML (maud: compile-time checked, escaped by default). Every answer carries
//! the security headers (`respond`). Pages work without JavaScript; the embedded
//! script (`assets`) only adds conveniences.

mod assets;
mod campaigns;
mod checklist;
mod enrolments;
mod form;
mod import;
mod inbox;
mod layout;
mod lead;
mod lead_meetings;
mod leads;
mod login;
mod meetings;
mod new_lead;
mod notifications;
mod profile_editor;
mod replays;
mod respond;
mod routes;
mod session;
mod settings;
mod setup;
mod timeline;
mod webchats;

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, Response};

use crate::api::request::{self, RequestBody};
use crate::api::response::Body;
use crate::api::AppState;
use crate::error::Error;
use routes::Page;

/// Whether `path` is the console's (the server sends it here, not to the API).
pub fn is_console_path(path: &str) -> bool {
    path == "/"
        || path == "/console"
        || path.starts_with("/console/")
        || path == assets::FAVICON_PATH
}

/// Answers one console request from `peer`.
pub async fn handle(
    state: Arc<AppState>,
    req: Request<Incoming>,
    peer: IpAddr,
) -> Result<Response<Body>, Infallible> {
    let head = req.method() == Method::HEAD;
    let route_name;
    let started = std::time::Instant::now();
    let version = req.version();
    let expects_continue = request::expects_continue(req.headers());
    let (parts, body) = req.into_parts();
    // Held to the API's pace and counted among the bodies arriving, as the API's are.
    let (body, leftover) = RequestBody::new(body, state.body_pace, &state.body_phase, peer);
    let mut response = {
        let path = routes::decoded(parts.uri.path());
        let page = match &path {
            Some(path) => routes::route(&parts.method, path),
            None => Err(crate::error::Error::NotFound("Not found".into())),
        };
        route_name = page.as_ref().map_or("console_unmatched", |p| p.name());
        match page {
            Ok(page) => dispatch(&state, page, parts, body, peer)
                .await
                .unwrap_or_else(|e| respond::error_page(&e, None)),
            Err(e) => respond::error_page(&e, None),
        }
    };
    request::settle(
        &mut response,
        leftover,
        form::MAX_FORM_BYTES,
        expects_continue,
        version,
    )
    .await;
    let mut response = respond::secured(response);
    if head {
        response = crate::api::response::without_body(response);
    }
    state
        .metrics
        .record(route_name, response.status().as_u16(), started.elapsed());
    Ok(response)
}

async fn dispatch(
    state: &AppState,
    page: Page<'_>,
    parts: hyper::http::request::Parts,
    body: RequestBody,
    peer: IpAddr,
) -> Result<Response<Body>, Error> {
    // Pages open without a session.
    match page {
        Page::Root | Page::Home => return Ok(respond::redirect("/console/inbox")),
        Page::Asset(name) => return Ok(assets::serve(name, &parts.headers)),
        Page::Login => return Ok(login::page(state, &parts).await),
        Page::SignIn => return login::sign_in(state, &parts, body, peer).await,
        Page::Setup => return setup::page(state, &parts),
        Page::CreateFirstAdmin => {
            // No session yet: the token in the form is the secret, and the origin ours.
            session::check_origin(&parts)?;
            let form = form::read(body).await?;
            return setup::create(state, &form).await;
        }
        _ => {}
    }
    let visitor = match session::visitor(state, &parts.headers).await? {
        Some(visitor) => visitor,
        // A page asks the person to sign in; a state change without a session is refused.
        None if parts.method == Method::POST => {
            return Err(Error::Forbidden);
        }
        None => return Ok(respond::redirect("/console/login")),
    };
    if page == Page::ImportUpload {
        // A multipart upload: its CSRF token is read from the body, before the file.
        if !visitor.user.role.at_least(page.role()) {
            return Ok(respond::forbidden(&visitor));
        }
        return import::upload(state, &visitor, &parts, body).await;
    }
    let form = if parts.method == Method::POST {
        let form = form::read(body).await?;
        session::check_post(&visitor, &parts, &form)?;
        form
    } else {
        form::Form::default()
    };
    if !visitor.user.role.at_least(page.role()) {
        return Ok(respond::forbidden(&visitor));
    }
    let query = parts.uri.query().unwrap_or("");
    match page {
        Page::SignOut => login::sign_out(state, &visitor).await,
        Page::Inbox => inbox::page(state, &visitor, query),
        Page::Events => inbox::stream(state, &visitor, &parts.headers),
        Page::Leads => leads::list(state, &visitor, query),
        Page::NewLead => new_lead::page(state, &visitor),
        Page::CreateLead => new_lead::create(state, &visitor, &form).await,
        Page::LeadsCsv => leads::export(state, &visitor, query),
        Page::Lead(id) => lead::show(state, &visitor, id).await,
        Page::LeadConsentCsv(id) => lead::consent_csv(state, &visitor, id),
        Page::LeadAction(id, action) => lead::act(state, &visitor, id, action, form).await,
        Page::Campaigns => campaigns::list(state, &visitor),
        Page::Campaign(name) => campaigns::page(state, &visitor, name),
        Page::Meetings => meetings::page(state, &visitor, query),
        Page::MeetingAction(id, action) => meetings::act(state, &visitor, id, action).await,
        Page::Reschedule(id) => lead_meetings::reschedule_page(state, &visitor, id, query).await,
        Page::RescheduleMeeting(id) => lead_meetings::reschedule(state, &visitor, id, form).await,
        Page::LeadMeetings(id) => lead_meetings::page(state, &visitor, id, query, None).await,
        Page::BookMeeting(id) => lead_meetings::book(state, &visitor, id, form).await,
        Page::PauseCampaign(name, paused) => campaigns::pause(state, &visitor, name, paused).await,
        Page::EditCampaign(name) => profile_editor::page(state, &visitor, name),
        Page::EditCampaignPost(name) => profile_editor::act(state, &visitor, name, form).await,
        Page::Settings(section) => settings::page(state, &visitor, section, query),
        Page::SettingsAction(action) => settings::act(state, &visitor, action, form).await,
        Page::Notifications => notifications::notifications(state, &visitor, query),
        Page::Import => import::page(state, &visitor),
        Page::ImportDiscard => import::discard(state, &visitor, &form),
        Page::ImportRun => import::act(state, &visitor, &form).await,
        Page::ImportRefused(token) => import::refused(state, &visitor, token).await,
        Page::ImportPreview(token) => import::preview_page(state, &visitor, token).await,
        Page::ImportDone(token) => import::done_page(state, &visitor, token),
        Page::SetNotifications => notifications::set_notifications(state, &visitor, &form).await,
        Page::EnrolmentNew => enrolments::confirm(state, &visitor, query),
        Page::EnrolmentCreate => enrolments::create(state, &visitor, &form).await,
        Page::Enrolment(id) => enrolments::page(state, &visitor, id),
        Page::Webchats => webchats::list(state, &visitor),
        Page::Webchat(id) => webchats::page(state, &visitor, id),
        Page::WebchatAction(id, false) => webchats::take_over(state, &visitor, id).await,
        Page::WebchatAction(id, true) => webchats::reply(state, &visitor, id, &form).await,
        Page::Replay(id) => replays::page(state, &visitor, id),
        Page::Root
        | Page::Home
        | Page::Asset(_)
        | Page::Login
        | Page::SignIn
        | Page::Setup
        | Page::CreateFirstAdmin
        | Page::ImportUpload => Err(Error::Internal(
            "an open console page reached the session check".into(),
        )),
    }
}

//! `/console/webchats` ("Web chats" in the main navigation): the inbox's web chat
//! channel, the website visitors' chats, newest first, each with its last line and its
//! lead once the visitor gave a contact; `/console/webchats/{id}`, one chat's transcript
//! with "Take over" and a reply box. Taking over stops the assistant and the visitor
//! sees "Dana joined the chat"; a reply takes over too. Both write through
//! `conversation::webchat` and reach the visitor's stream after their commit.

use hyper::{Response, StatusCode};
use maud::{html, Markup};

use super::form::Form;
use super::layout::{self, csrf_field};
use super::respond;
use super::session::Visitor;
use crate::api::response::Body;
use crate::api::AppState;
use crate::domain::conversation::webchat as chat;
use crate::error::{Error, Result};
use crate::store::webchat::{Speaker, WebchatSession};
use crate::store::Reader;
use crate::time::now_micros;

/// Chats on the list.
const ROWS: usize = 50;

fn speaker_words(speaker: &Speaker) -> &str {
    match speaker {
        Speaker::Visitor => "Visitor",
        Speaker::Assistant => "Assistant",
        Speaker::Person(name) => name,
        Speaker::Notice => "",
    }
}

/// `GET /console/webchats`.
pub fn list(state: &AppState, visitor: &Visitor) -> Result<Response<Body>> {
    let read = state.store.read()?;
    let zone = read.engine_settings(visitor.org())?.time_zone;
    let on = read.webchat_settings(visitor.org())?.enabled;
    let sessions = read.webchat_sessions(visitor.org(), ROWS)?;
    let markup = layout::page(
        "Web chats",
        Some(visitor),
        html! {
            h1 { "Web chats" }
            @if !on { p.notice { "Web chat is off: an admin turns it on under Settings → Web chat." } }
            // Live: the console's stream names every chat that changed.
            div #webchats-live data-live data-webchats {
                @if sessions.is_empty() {
                    p.muted { "No chats yet." }
                } @else {
                    table #webchats {
                        caption.sr-only { "Website visitors' chats, newest first" }
                        thead { tr { th scope="col" { "Started" } th scope="col" { "Last message" } th scope="col" { "Lead" } th scope="col" { "Handled by" } } }
                        tbody {
                            @for s in &sessions {
                                tr {
                                    td { a href=(format!("/console/webchats/{}", s.id)) { (layout::time(s.created_at, &zone)) } }
                                    td { @if let Some(line) = s.transcript.last() { (speaker_words(&line.speaker)) ": " (line.text) } }
                                    td { @if let Some(lead) = &s.lead_id { a href=(format!("/console/leads/{lead}")) { "Lead" } } @else { "—" } }
                                    td { (s.taken_over_by.as_deref().unwrap_or("Assistant")) }
                                }
                            }
                        }
                    }
                }
            }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}

fn session_of(state: &AppState, visitor: &Visitor, id: &str) -> Result<WebchatSession> {
    state
        .store
        .read()?
        .webchat_session(visitor.org(), id)?
        .ok_or_else(|| Error::NotFound("No such web chat".into()))
}

/// `GET /console/webchats/{id}`.
pub fn page(state: &AppState, visitor: &Visitor, id: &str) -> Result<Response<Body>> {
    let session = session_of(state, visitor, id)?;
    let zone = state
        .store
        .read()?
        .engine_settings(visitor.org())?
        .time_zone;
    let path = format!("/console/webchats/{}", session.id);
    let markup = layout::page(
        "Web chat",
        Some(visitor),
        html! {
            p { a href="/console/webchats" { "← Web chats" } }
            h1 { "Chat with a website visitor" }
            (details(&session, &zone))
            section.panel aria-labelledby="transcript-heading" {
                h2 #transcript-heading { "Transcript" }
                // Live: the console's stream names the chat at each of its lines.
                ol.timeline #webchat-transcript data-live data-webchat=(session.id) {
                    @for line in &session.transcript {
                        li {
                            @if line.speaker == Speaker::Notice { em { (line.text) } }
                            @else { strong { (speaker_words(&line.speaker)) } ": " (line.text) }
                            " " span.muted { (layout::time(line.at, &zone)) }
                        }
                    }
                }
            }
            @if session.taken_over_by.is_none() {
                form method="post" action=(format!("{path}/take-over")) {
                    (csrf_field(visitor))
                    button type="submit" { "Take over" }
                }
            }
            form.stack method="post" action=(format!("{path}/reply")) {
                (csrf_field(visitor))
                label for="webchat-reply" { "Reply" }
                textarea #webchat-reply name="text" rows="3" maxlength="1000" required {}
                div.actions { button type="submit" { "Send" } }
            }
        },
    );
    Ok(respond::html(StatusCode::OK, markup))
}

fn details(session: &WebchatSession, zone: &str) -> Markup {
    html! {
        dl {
            dt { "Started" } dd { (layout::time(session.created_at, zone)) }
            dt { "Page" } dd { (session.page_url) }
            dt { "Lead" } dd {
                @if let Some(lead) = &session.lead_id { a href=(format!("/console/leads/{lead}")) { "Open the lead" } }
                @else { "Not yet: the visitor has not given a phone or email." }
            }
            dt { "Handled by" } dd { (session.taken_over_by.as_deref().unwrap_or("Assistant")) }
        }
    }
}

/// `POST /console/webchats/{id}/take-over`.
pub async fn take_over(state: &AppState, visitor: &Visitor, id: &str) -> Result<Response<Body>> {
    let session = session_of(state, visitor, id)?;
    let (org, sid, name) = (
        visitor.org().to_string(),
        session.id.clone(),
        visitor.user.name.clone(),
    );
    let line = state
        .store
        .write(move |tx| chat::take_over(tx, &org, &sid, &name, now_micros()))
        .await?;
    if let Some(line) = line {
        state
            .engine
            .webchat()
            .publish(visitor.org(), &session.id, &line);
    }
    Ok(respond::redirect(&format!(
        "/console/webchats/{}",
        session.id
    )))
}

/// `POST /console/webchats/{id}/reply`: the person's reply (taking the chat over).
pub async fn reply(
    state: &AppState,
    visitor: &Visitor,
    id: &str,
    form: &Form,
) -> Result<Response<Body>> {
    let session = session_of(state, visitor, id)?;
    let text = chat::checked_text(form.text("text"))?;
    let (org, sid, name) = (
        visitor.org().to_string(),
        session.id.clone(),
        visitor.user.name.clone(),
    );
    let lines = state
        .store
        .write(move |tx| {
            let now = now_micros();
            let joined = chat::take_over(tx, &org, &sid, &name, now)?;
            let said = chat::answer(tx, &org, &sid, Speaker::Person(name.clone()), &text, now)?;
            Ok((joined, said))
        })
        .await?;
    let hub = state.engine.webchat();
    if let Some(joined) = &lines.0 {
        hub.publish(visitor.org(), &session.id, joined);
    }
    hub.publish(visitor.org(), &session.id, &lines.1);
    Ok(respond::redirect(&format!(
        "/console/webchats/{}",
        session.id
    )))
}

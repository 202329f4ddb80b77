//! Web chat's public endpoints, `/webchat/{org}/...`, and the widget, `GET /webchat.js`
//! (`shared/spec/webchat.md`): no API key; a session's token instead.
//!
//! Every request passes, in order: the organization's web chat is on (404), its
//! `Origin` is one of `allowedOrigins` (403 in words, and no CORS header), then the
//! session's token (`Authorization: Bearer`, or `?token=` for the event stream, which
//! `EventSource` cannot give headers: 401). Answers to an allowed origin carry
//! `Access-Control-Allow-Origin` with that origin; a preflight (`OPTIONS`) is answered
//! for allowed origins only. Bounds in memory here: 5 new sessions a minute per
//! address, 20 messages a minute per session (429 with `Retry-After` and words); the
//! day's 200 and the organization's hourly and per-session bounds are the domain's.
//!
//! A visitor's message is committed, published to the session's stream, and the
//! assistant's turn runs in the background (`engine::webchat`): the answer reaches the
//! stream, never the message's response.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::Frame;
use hyper::header::{
    HeaderMap, HeaderValue, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, ORIGIN, USER_AGENT, VARY,
};
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

use super::request::{Query, RequestBody};
use super::response::{self, full, json as reply, Body};
use super::AppState;
use crate::domain::conversation::webchat::{self as chat, Answer, ContactForm, Visitor};
use crate::error::{Error, Result};
use crate::store::webchat::{Speaker, WebchatLine, WebchatSettings};
use crate::time::now_micros;

/// The widget, served from the binary.
pub const SCRIPT: &str = include_str!("webchat.js");

/// New sessions per address in a minute, and messages per session in a minute.
pub const SESSIONS_PER_MINUTE: u32 = 5;
pub const MESSAGES_PER_MINUTE: u32 = 20;
/// A heartbeat keeps a quiet stream open through proxies.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// Frames a slow stream may fall behind before it is dropped (it reconnects).
const STREAM_BUFFER: usize = 32;

/// A fixed-window counter per key, kept in memory (a restart forgives everyone); keys
/// whose window ended are dropped as the table grows.
pub struct Window {
    max: u32,
    period: Duration,
    counts: Mutex<HashMap<String, (Instant, u32)>>,
}

impl Window {
    pub fn new(max: u32, period: Duration) -> Window {
        Window {
            max,
            period,
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one for `key`, or answers the whole seconds until its window ends.
    pub fn take(&self, key: &str, now: Instant) -> std::result::Result<(), u64> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if counts.len() > 10_000 {
            let period = self.period;
            counts.retain(|_, (start, _)| now.saturating_duration_since(*start) < period);
        }
        let entry = counts.entry(key.to_string()).or_insert((now, 0));
        if now.saturating_duration_since(entry.0) >= self.period {
            *entry = (now, 0);
        }
        if entry.1 >= self.max {
            let left = self
                .period
                .saturating_sub(now.saturating_duration_since(entry.0));
            return Err(left.as_secs().max(1));
        }
        entry.1 += 1;
        Ok(())
    }
}

/// Web chat's in-memory bounds.
pub struct Limits {
    sessions: Window,
    messages: Window,
    /// A session's call tokens (`api::webchat_voice`).
    pub(super) tokens: Window,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            sessions: Window::new(SESSIONS_PER_MINUTE, Duration::from_secs(60)),
            messages: Window::new(MESSAGES_PER_MINUTE, Duration::from_secs(60)),
            tokens: Window::new(
                super::webchat_voice::TOKENS_PER_MINUTE,
                Duration::from_secs(60),
            ),
        }
    }
}

/// Which web chat request.
#[derive(Debug, Clone, Copy)]
pub enum Call<'a> {
    CreateSession,
    PostMessage(&'a str),
    Events(&'a str),
    Contact(&'a str),
    VoiceToken(&'a str),
}

/// `GET /webchat.js`: the widget.
pub fn script() -> Response<Body> {
    let mut response = Response::new(full(SCRIPT.as_bytes().to_vec()));
    let h = response.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/javascript; charset=utf-8"),
    );
    h.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    h.insert("access-control-allow-origin", HeaderValue::from_static("*"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// The request's `Origin` when `settings` allow it; 403 in words otherwise.
fn allowed_origin(settings: &WebchatSettings, headers: &HeaderMap) -> Result<String> {
    let origin = headers
        .get(ORIGIN)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let normal = crate::domain::settings::webchat::normal_origin(origin);
    match normal {
        Some(o) if settings.allowed_origins.contains(&o) => Ok(origin.to_string()),
        _ => Err(Error::ForbiddenBecause(
            "This website is not allowed to use this chat: its origin is not in the organization's web chat allowedOrigins.".into(),
        )),
    }
}

fn with_cors(mut response: Response<Body>, origin: &str) -> Response<Body> {
    if let Ok(value) = HeaderValue::from_str(origin) {
        let h = response.headers_mut();
        h.insert("access-control-allow-origin", value);
        h.insert(VARY, HeaderValue::from_static("Origin"));
        h.insert(
            "access-control-expose-headers",
            HeaderValue::from_static("Retry-After"),
        );
    }
    response
}

/// `OPTIONS /webchat/{org}/...`: the preflight, for an allowed origin only.
pub fn preflight(state: &AppState, org: &str, headers: &HeaderMap) -> Result<Response<Body>> {
    let settings = chat::settings_on(&state.store.read()?, org)?;
    let origin = allowed_origin(&settings, headers)?;
    let mut response = Response::new(full(Vec::new()));
    *response.status_mut() = StatusCode::NO_CONTENT;
    let h = response.headers_mut();
    h.insert(
        "access-control-allow-methods",
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    h.insert(
        "access-control-allow-headers",
        HeaderValue::from_static("authorization, content-type"),
    );
    h.insert("access-control-max-age", HeaderValue::from_static("600"));
    Ok(with_cors(response, &origin))
}

/// Answers one web chat request from `peer`.
pub async fn handle(
    state: &AppState,
    parts: &Parts,
    org: &str,
    call: Call<'_>,
    body: RequestBody,
    peer: IpAddr,
) -> Result<Response<Body>> {
    let settings = chat::settings_on(&state.store.read()?, org)?;
    let origin = allowed_origin(&settings, &parts.headers)?;
    let answered = match call {
        Call::CreateSession => create(state, parts, org, &origin, peer).await,
        Call::PostMessage(id) => message(state, parts, org, id, body).await,
        Call::Events(id) => events(state, parts, org, id, &settings),
        Call::Contact(id) => contact(state, parts, org, id, body, peer).await,
        Call::VoiceToken(id) => bearer(&parts.headers)
            .and_then(|given| super::webchat_voice::token(state, given, org, id, &settings)),
    };
    // A refusal past the origin check goes to the page too, so the widget can show it.
    Ok(with_cors(answered.unwrap_or_else(|e| error(&e)), &origin))
}

fn error(e: &Error) -> Response<Body> {
    if let Error::Internal(cause) = e {
        tracing::error!(%cause, "internal error in web chat");
    }
    response::error(e)
}

fn bearer(headers: &HeaderMap) -> Result<&str> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(Error::Unauthorized)
}

fn visitor(parts: &Parts, peer: IpAddr) -> Visitor {
    // At most 1,000 characters each, the consent proof's bound.
    let text = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .unwrap_or_default()
            .chars()
            .take(1_000)
            .collect::<String>()
    };
    Visitor {
        ip: peer.to_canonical().to_string(),
        user_agent: text(USER_AGENT),
        page_url: text(hyper::header::REFERER),
    }
}

async fn create(
    state: &AppState,
    parts: &Parts,
    org: &str,
    origin: &str,
    peer: IpAddr,
) -> Result<Response<Body>> {
    let address = crate::client_address::key(peer).to_string();
    state
        .webchat
        .sessions
        .take(&address, Instant::now())
        .map_err(|wait| Error::Throttled {
            retry_after_secs: wait,
            message: format!(
                "Too many new chats from your address: at most {SESSIONS_PER_MINUTE} a minute. Try again in a minute."
            ),
        })?;
    let token = chat::new_token();
    let hash = chat::token_hash(&token);
    let mut visitor = visitor(parts, peer);
    if visitor.page_url.is_empty() {
        visitor.page_url = origin.to_string();
    }
    let org_id = org.to_string();
    let (session, settings) = state
        .store
        .write(move |tx| chat::create(tx, &org_id, &hash, &visitor, now_micros()))
        .await?;
    Ok(reply(
        StatusCode::CREATED,
        &json!({
            "sessionId": session.id,
            "token": token,
            "greeting": settings.greeting,
            "consentText": settings.consent_text,
            "voice": settings.voice,
        }),
    ))
}

/// The session's token from `Authorization: Bearer`, checked against the session.
fn bearer_checked(state: &AppState, parts: &Parts, org: &str, id: &str) -> Result<String> {
    let token = bearer(&parts.headers)?.to_string();
    chat::check_token(
        state.store.read()?.webchat_session(org, id)?,
        &token,
        now_micros(),
    )?;
    Ok(token)
}

async fn message(
    state: &AppState,
    parts: &Parts,
    org: &str,
    id: &str,
    body: RequestBody,
) -> Result<Response<Body>> {
    // The token first: a stranger's requests count against no session.
    let token = bearer_checked(state, parts, org, id)?;
    let body = state.json_body(body).await?;
    let text = match body.get("text") {
        Some(Value::String(t)) => t.clone(),
        _ => return Err(Error::field("text", "Write a message first.")),
    };
    if let Some(other) = body.keys().find(|k| *k != "text") {
        return Err(Error::unknown_field(other));
    }
    chat::checked_text(&text)?;
    state
        .webchat
        .messages
        .take(&format!("{org}/{id}"), Instant::now())
        .map_err(|wait| Error::Throttled {
            retry_after_secs: wait,
            message: format!(
                "You are sending messages too fast: at most {MESSAGES_PER_MINUTE} a minute. Wait a moment."
            ),
        })?;
    let (o, s) = (org.to_string(), id.to_string());
    let (line, answer) = state
        .store
        .write(move |tx| chat::visitor_message(tx, &o, &s, &token, &text, now_micros()))
        .await?;
    state.engine.webchat().publish(org, id, &line);
    if answer == Answer::Assistant {
        state.engine.webchat_answer(org.to_string(), id.to_string());
    }
    Ok(reply(StatusCode::ACCEPTED, &line_json(&line)))
}

async fn contact(
    state: &AppState,
    parts: &Parts,
    org: &str,
    id: &str,
    body: RequestBody,
    peer: IpAddr,
) -> Result<Response<Body>> {
    let token = bearer_checked(state, parts, org, id)?;
    let body = state.json_body(body).await?;
    let mut form = ContactForm::from_json(&body)?;
    let page = body_page(&body);
    form.consent = form.consent && page.is_some();
    let mut visitor = visitor(parts, peer);
    if let Some(page) = page {
        visitor.page_url = page;
    }
    let (o, s) = (org.to_string(), id.to_string());
    let lead = state
        .store
        .write(move |tx| {
            let now = now_micros();
            chat::check_token(tx.webchat_session(&o, &s)?, &token, now)?;
            chat::become_lead(tx, &o, &s, &form, Some(&visitor), now)
        })
        .await?;
    Ok(reply(
        StatusCode::OK,
        &json!({"leadId": lead.id, "message": "Thanks! The team will get back to you."}),
    ))
}

/// The page the form was on, as the widget says it: `pageUrl` (an `http(s)` URL of at
/// most 2,000 characters); `None` when absent.
fn body_page(body: &serde_json::Map<String, Value>) -> Option<String> {
    body.get("pageUrl")
        .and_then(Value::as_str)
        .filter(|u| u.len() <= 2_000 && (u.starts_with("https://") || u.starts_with("http://")))
        .map(str::to_string)
}

/// A line as the widget reads it.
pub fn line_json(line: &WebchatLine) -> Value {
    let (from, name) = match &line.speaker {
        Speaker::Visitor => ("visitor", None),
        Speaker::Assistant => ("assistant", None),
        Speaker::Person(name) => ("person", Some(name.as_str())),
        Speaker::Notice => ("notice", None),
    };
    json!({"seq": line.seq, "at": crate::time::format(line.at), "from": from,
           "name": name, "text": line.text})
}

fn frame(text: String) -> std::result::Result<Frame<Bytes>, Infallible> {
    Ok(Frame::data(Bytes::from(text)))
}

fn line_frame(line: &WebchatLine) -> String {
    format!(
        "id: {}\nevent: line\ndata: {}\n\n",
        line.seq,
        line_json(line)
    )
}

/// `GET .../events?token=`: the session's lines as server-sent events, the transcript
/// first (after `Last-Event-ID`, when the browser reconnects), then each new line.
fn events(
    state: &AppState,
    parts: &Parts,
    org: &str,
    id: &str,
    settings: &WebchatSettings,
) -> Result<Response<Body>> {
    let query = Query::parse(parts.uri.query())?;
    let token = query.get("token").ok_or(Error::Unauthorized)?;
    // The token first, so that a stranger opens no stream; then the stream, then the
    // transcript from a snapshot taken after it, so no line falls between the two.
    chat::check_token(
        state.store.read()?.webchat_session(org, id)?,
        token,
        now_micros(),
    )?;
    let mut live = state.engine.webchat().subscribe(org, id);
    let session = chat::check_token(
        state.store.read()?.webchat_session(org, id)?,
        token,
        now_micros(),
    )?;
    let after = parts
        .headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let mut opening = String::from("retry: 3000\n\n");
    let hello = json!({"greeting": settings.greeting, "consentText": settings.consent_text,
                       "voice": settings.voice, "lead": session.lead_id.is_some(),
                       "takenOverBy": session.taken_over_by});
    opening.push_str(&format!("event: session\ndata: {hello}\n\n"));
    let mut last = after;
    for line in session.transcript.iter().filter(|l| l.seq > after) {
        opening.push_str(&line_frame(line));
        last = line.seq;
    }
    let (tx, rx) = tokio::sync::mpsc::channel(STREAM_BUFFER);
    tokio::spawn(async move {
        if tx.try_send(frame(opening)).is_err() {
            return;
        }
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        heartbeat.tick().await;
        loop {
            let message = tokio::select! {
                line = live.recv() => match line {
                    Ok(line) if line.seq <= last => continue,
                    Ok(line) => {
                        last = line.seq;
                        line_frame(&line)
                    }
                    Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => return,
                },
                _ = heartbeat.tick() => ": heartbeat\n\n".to_string(),
                _ = tx.closed() => return,
            };
            if tx.try_send(frame(message)).is_err() {
                return;
            }
        }
    });
    Ok(crate::api::response::event_stream(rx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_counts_to_its_bound_then_says_how_long_to_wait() {
        let w = Window::new(2, Duration::from_secs(60));
        let t0 = Instant::now();
        assert!(w.take("a", t0).is_ok());
        assert!(w.take("a", t0).is_ok());
        assert_eq!(w.take("a", t0 + Duration::from_secs(10)), Err(50));
        assert!(w.take("b", t0).is_ok(), "another key has its own");
        assert!(w.take("a", t0 + Duration::from_secs(60)).is_ok());
    }
}

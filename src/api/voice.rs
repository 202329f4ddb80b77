//! Twilio's voice webhooks: a call to the organization's number (`voice/inbound`; also
//! a web chat visitor's call from the browser, `From=client:web_<sessionId>`, which the
//! organization's TwiML App sends there),
//! and, for each call engaged placed or answered, `voice/{callId}/twiml` (answered),
//! `status` (status and answering-machine callbacks), `recording` (the recording is
//! ready), `transfer` (the relay session ended; each cold transfer ring's outcome) and
//! `warm` (a warm transfer's steps, `?step=answer|digit|status&attempt=N` for the
//! person's leg and `?step=conference` for the conference's events). A warm step's
//! effects (ring a person, take the lead's call back, end a leg) run after the answer,
//! in a task of the engine's (`engine::warm`).
//!
//! No API key: each request must carry a valid `X-Twilio-Signature` keyed with the
//! organization's voice auth token (403 `Forbidden` otherwise, and nothing changes).
//! Each handler parses the form, calls `domain::voice::voice` (or `domain::voice::transfer`) in one
//! write job, and renders the domain's [`Answer`] as TwiML; the answer to an inbound
//! call also starts its recording (`<Start><Recording>`, reported to its `recording`
//! path), as `Record=true` does for the calls engaged places. The relay WebSocket is
//! `api::relay`.

use hyper::http::request::Parts;
use hyper::{Response, StatusCode};

use super::request::{read_body, RequestBody};
use super::response::Body;
use super::twilio::{self, Form};
use super::AppState;
use crate::channel::Channel;
use crate::domain::voice::transfer::{self, Reason, Ring};
use crate::domain::voice::voice::{self, Answer, StatusUpdate};
use crate::domain::voice::warm::{self, Effect, Leg};
use crate::error::{Error, Result};
use crate::providers::callbacks::{self, CallHook};
use crate::providers::{twilio as provider, twiml};
use crate::time::now_micros;

/// How long a transfer rings a human before it counts as not answered.
pub const TRANSFER_RING_SECONDS: u32 = 20;

/// Which of the voice webhooks a request is; the call id for a call's own paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook<'a> {
    Inbound,
    Twiml(&'a str),
    Status(&'a str),
    Recording(&'a str),
    Transfer(&'a str),
    Warm(&'a str),
}

pub async fn webhook(
    state: &AppState,
    parts: &Parts,
    org: &str,
    hook: Hook<'_>,
    body: RequestBody,
) -> Result<Response<Body>> {
    let settings = twilio::settings_for(state, org, Channel::Voice)?;
    let bytes = read_body(body, state.max_body_bytes).await?;
    let form = twilio::verify(state, parts, &settings, &bytes)?;
    let base = state
        .engine
        .public_url()
        .ok_or(Error::Forbidden)?
        .to_string();
    let org_id = org.to_string();
    match hook {
        Hook::Inbound => {
            let sid = form.required("CallSid")?.to_string();
            // A call from a web chat visitor's browser (the Voice SDK, through the
            // organization's TwiML App): `client:web_<sessionId>`, to no number.
            if let Some(client) = form.required("From")?.strip_prefix("client:") {
                let client = client.to_string();
                return browser_call(state, &base, org, sid, client).await;
            }
            let from = crate::phone::normalize(form.required("From")?)
                .ok_or_else(|| Error::invalid_field("From"))?;
            let to = form.get("To").and_then(crate::phone::normalize);
            // Twilio sets `ForwardedFrom` only on a call forwarded to the number.
            let forwarded = form
                .get("ForwardedFrom")
                .is_some_and(|v| !v.trim().is_empty());
            if to.as_deref() != Some(settings.from.as_str()) {
                tracing::warn!(org, to = ?to, "an inbound call to a number that is not the organization's");
                return Err(Error::NotFound("Not found".into()));
            }
            let (call_id, answer) = state
                .store
                .write(move |tx| voice::inbound(tx, &org_id, &sid, &from, forwarded))
                .await?;
            // An outbound call is recorded by its Calls.json request; an inbound one by
            // the TwiML that answers it.
            let recording = callbacks::call(&base, org, &call_id, CallHook::Recording);
            Ok(render(&base, org, &call_id, answer, Some(&recording)))
        }
        Hook::Twiml(call) => {
            let call_id = call.to_string();
            let answer = state
                .store
                .write(move |tx| voice::answered(tx, &org_id, &call_id))
                .await?;
            Ok(render(&base, org, call, answer, None))
        }
        Hook::Status(call) => {
            let update = status_update(&form)?;
            // Twilio's own id of the call, as it signed it: where a machine's answer goes.
            let call_sid = form
                .get("CallSid")
                .filter(|sid| !sid.is_empty() && sid.chars().all(|c| c.is_ascii_alphanumeric()))
                .map(str::to_string);
            let call_id = call.to_string();
            let outcome = state
                .store
                .write(move |tx| voice::status_changed(tx, &org_id, &call_id, &update))
                .await?;
            if let (true, Some(sid)) = (outcome.machine_started, call_sid.clone()) {
                let engine = state.engine.clone();
                tokio::spawn(engine.machine_started(org.to_string(), call.to_string(), sid));
            }
            match (outcome.machine, call_sid) {
                (Some(answer), Some(sid)) => {
                    state.engine.answer_machine(org, call, &sid, answer).await?
                }
                (Some(_), None) => {
                    tracing::warn!(
                        org,
                        call,
                        "a machine answered a call whose CallSid is missing or malformed"
                    );
                }
                (None, _) => {}
            }
            if !outcome.found {
                tracing::info!(
                    org,
                    call,
                    "a call status callback for a call engaged did not place"
                );
            }
            Ok(twilio::twiml_empty())
        }
        Hook::Recording(call) => {
            if form.get("RecordingStatus") == Some("completed") {
                let url = form.required("RecordingUrl")?.to_string();
                let call_id = call.to_string();
                let found = state
                    .store
                    .write(move |tx| voice::recording_ready(tx, &org_id, &call_id, &url))
                    .await?;
                if !found {
                    tracing::info!(
                        org,
                        call,
                        "a recording callback for a call engaged did not place"
                    );
                }
            }
            Ok(twilio::twiml_empty())
        }
        Hook::Transfer(call) => {
            let call_id = call.to_string();
            let now = now_micros();
            let answer = match attempt(parts)? {
                None => {
                    // A person's "Transfer the call" redirects the call here with
                    // `?reason=transfer` (the request is Twilio's, signed, URL and all).
                    let by_person = parts
                        .uri
                        .query()
                        .is_some_and(|q| q.split('&').any(|p| p == "reason=transfer"));
                    let reason = if by_person {
                        Reason::Transfer
                    } else {
                        Reason::parse(form.get("HandoffData"))
                    };
                    let (answer, effects) = state
                        .store
                        .write(move |tx| transfer::handover(tx, &org_id, &call_id, reason, now))
                        .await?;
                    run(state, org, call, effects);
                    answer
                }
                Some(attempt) => {
                    let ring = ring(&form, attempt);
                    state
                        .store
                        .write(move |tx| transfer::dialed(tx, &org_id, &call_id, ring, now))
                        .await?
                }
            };
            Ok(render(&base, org, call, answer, None))
        }
        Hook::Warm(call) => warm_step(state, parts, &form, &base, org, call).await,
    }
}

/// What a browser call is told when it is not one of the organization's web chat
/// sessions (or its web chat offers no voice).
pub const BROWSER_CALL_REFUSED: &str = "Sorry, this call cannot be taken. Goodbye.";

/// A call from Twilio client `client` (`web_<sessionId>`): answered as an inbound call
/// when it is a session of `org` whose web chat offers voice; refused in words, with
/// nothing written, otherwise.
async fn browser_call(
    state: &AppState,
    base: &str,
    org: &str,
    sid: String,
    client: String,
) -> Result<Response<Body>> {
    let Some(session_id) = client
        .strip_prefix("web_")
        .filter(|id| !id.is_empty())
        .map(str::to_string)
    else {
        tracing::warn!(
            org,
            client,
            "a browser call from a client that is not a web chat visitor"
        );
        return Ok(twilio::twiml(twiml::say_then_hangup(
            BROWSER_CALL_REFUSED,
            None,
        )));
    };
    let org_id = org.to_string();
    let answered = state
        .store
        .write(move |tx| voice::inbound_browser(tx, &org_id, &sid, &session_id))
        .await?;
    let Some((call_id, answer)) = answered else {
        tracing::warn!(
            org,
            client,
            "a browser call from no web chat session of the organization that offers voice"
        );
        return Ok(twilio::twiml(twiml::say_then_hangup(
            BROWSER_CALL_REFUSED,
            None,
        )));
    };
    let recording = callbacks::call(base, org, &call_id, CallHook::Recording);
    Ok(render(base, org, &call_id, answer, Some(&recording)))
}

/// Carries out a warm transfer's `effects` after the answer, in the engine's task.
fn run(state: &AppState, org: &str, call_id: &str, effects: Vec<Effect>) {
    if !effects.is_empty() {
        let engine = state.engine.clone();
        tokio::spawn(engine.warm_effects(org.to_string(), call_id.to_string(), effects));
    }
}

/// A warm transfer's step (`?step=...&attempt=...`): the person's leg answered, their
/// digit, their leg's status, or the conference's event.
async fn warm_step(
    state: &AppState,
    parts: &Parts,
    form: &Form,
    base: &str,
    org: &str,
    call: &str,
) -> Result<Response<Body>> {
    let (step, attempt) = warm_query(parts)?;
    let (org_id, call_id) = (org.to_string(), call.to_string());
    let now = now_micros();
    let sid = form.get("CallSid").unwrap_or_default().to_string();
    let leg = match (step.as_str(), attempt) {
        ("answer", Some(attempt)) => {
            let by = form.get("AnsweredBy").map(str::to_string);
            state
                .store
                .write(move |tx| {
                    warm::answered(tx, &org_id, &call_id, attempt, &sid, by.as_deref(), now)
                })
                .await?
        }
        ("digit", Some(attempt)) => {
            let digits = form.get("Digits").unwrap_or_default().to_string();
            state
                .store
                .write(move |tx| warm::pressed(tx, &org_id, &call_id, attempt, &digits, now))
                .await?
        }
        ("status", Some(attempt)) => {
            let status = form.required("CallStatus")?.to_string();
            let effects = state
                .store
                .write(move |tx| warm::leg_status(tx, &org_id, &call_id, attempt, &status, now))
                .await?;
            run(state, org, call, effects);
            return Ok(twilio::twiml_empty());
        }
        ("conference", None) => {
            let event = form.required("StatusCallbackEvent")?.to_string();
            let effects = state
                .store
                .write(move |tx| warm::conference(tx, &org_id, &call_id, &event, &sid, now))
                .await?;
            run(state, org, call, effects);
            return Ok(twilio::twiml_empty());
        }
        _ => return Err(Error::invalid_field("step")),
    };
    run(state, org, call, leg.effects);
    let conference = callbacks::warm(base, org, call, "conference", None);
    let document = match leg.answer {
        Leg::Whisper { summary, prompt } => {
            let action = callbacks::warm(base, org, call, "digit", attempt);
            twiml::whisper(&summary, &prompt, &action, warm::DIGIT_SECONDS)
        }
        Leg::Join => twiml::join(call, &conference),
        Leg::Hangup => twiml::hangup(),
    };
    Ok(twilio::twiml(document))
}

/// A warm step's `step` and `attempt` (1 or 2, when given).
fn warm_query(parts: &Parts) -> Result<(String, Option<u8>)> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(parts.uri.query().unwrap_or(""))
        .map_err(|_| Error::invalid_field("step"))?;
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let step = get("step").ok_or_else(|| Error::invalid_field("step"))?;
    let attempt = match get("attempt") {
        None => None,
        Some("1") => Some(1),
        Some("2") => Some(2),
        Some(_) => return Err(Error::invalid_field("attempt")),
    };
    Ok((step.to_string(), attempt))
}

/// A status callback's form: `CallStatus`, `CallDuration`, `AnsweredBy` (each optional:
/// the answering-machine callback has no `CallStatus`).
fn status_update(form: &Form) -> Result<StatusUpdate> {
    let status = match form.get("CallStatus").filter(|s| !s.is_empty()) {
        Some(s) => {
            Some(provider::call_status_of(s).ok_or_else(|| Error::invalid_field("CallStatus"))?)
        }
        None => None,
    };
    let duration_seconds = match form.get("CallDuration").filter(|s| !s.is_empty()) {
        Some(d) => Some(
            d.parse::<u64>()
                .map_err(|_| Error::invalid_field("CallDuration"))?,
        ),
        None => None,
    };
    Ok(StatusUpdate {
        status,
        duration_seconds,
        answered_by: form.get("AnsweredBy").map(str::to_string),
    })
}

/// The `attempt` of a transfer ring's callback (`?attempt=1` or `2`); none for the
/// relay's hand-over.
fn attempt(parts: &Parts) -> Result<Option<u8>> {
    let Some(query) = parts.uri.query() else {
        return Ok(None);
    };
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query).map_err(|_| Error::invalid_field("attempt"))?;
    match pairs
        .iter()
        .find(|(k, _)| k == "attempt")
        .map(|(_, v)| v.as_str())
    {
        None => Ok(None),
        Some("1") => Ok(Some(1)),
        Some("2") => Ok(Some(2)),
        Some(_) => Err(Error::invalid_field("attempt")),
    }
}

/// A `<Dial>` action's form: `DialCallStatus`, `DialCallDuration`, and the lead's own
/// leg's `CallStatus` (`completed` when the lead hung up while it rang).
fn ring(form: &Form, attempt: u8) -> Ring {
    let dial_status = form.get("DialCallStatus").unwrap_or_default();
    Ring {
        attempt,
        answered: matches!(dial_status, "completed" | "answered"),
        duration_seconds: form
            .get("DialCallDuration")
            .and_then(|d| d.parse().ok())
            .unwrap_or(0),
        lead_gone: dial_status == "canceled" || form.get("CallStatus") == Some("completed"),
    }
}

/// The domain's answer as TwiML, with the URLs of call `call_id`; a call that is still
/// to be recorded (an inbound one) is recorded first, reported to `record`.
fn render(
    base: &str,
    org: &str,
    call_id: &str,
    answer: Answer,
    record: Option<&str>,
) -> Response<Body> {
    let transfer = callbacks::call(base, org, call_id, CallHook::Transfer);
    let document = match answer {
        Answer::Relay { greeting } => twiml::relay(
            &transfer,
            &callbacks::relay(base, org, call_id),
            Some(&greeting),
            record,
        ),
        Answer::Say(text) => twiml::say_then_hangup(&text, record),
        Answer::Hangup => twiml::hangup(),
        Answer::Hold { say, music } => twiml::hold(
            &say,
            call_id,
            Some(&music),
            &callbacks::warm(base, org, call_id, "conference", None),
        ),
        Answer::Dial { number, attempt } => twiml::dial(
            &format!("{transfer}?attempt={attempt}"),
            TRANSFER_RING_SECONDS,
            &number,
        ),
    };
    let mut response = twilio::twiml(document);
    *response.status_mut() = StatusCode::OK;
    response
}

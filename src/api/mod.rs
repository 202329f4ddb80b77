//! The HTTP interface: one function per operation, each thin.
//!
//! [`handle`] routes a request (`router`), checks its key (`domain::records::auth`), and calls
//! the operation's handler, which parses the request (`request`), calls one `domain`
//! function, and renders the result (`views`, `response`). Every error becomes a
//! `{"message"}` body through `error::Error`.

pub mod body_phase;
mod calendars;
mod calls;
mod consent;
mod contact;
mod dnc;
mod email;
mod events;
pub mod flash;
mod inbound;
mod leads;
mod meetings;
mod ops;
mod org;
pub mod outreach;
mod profiles;
pub mod rate_limit;
mod recording_body;
pub mod recordings;
mod relay;
pub mod replays;
pub mod request;
pub mod response;
pub mod router;
mod twilio;
pub mod views;
mod voice;
pub mod webchat;
pub mod webchat_voice;
mod webhooks;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue, IF_NONE_MATCH};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;
use tracing::Instrument;

use crate::domain::records::auth;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::store::Store;
use request::{json_object, read_body, BodyPace, Query, RequestBody};
use response::{json as reply, Body};
use router::Route;

/// What every request handler shares.
pub struct AppState {
    pub store: Arc<Store>,
    pub max_body_bytes: usize,
    /// How fast request bodies must arrive.
    pub body_pace: BodyPace,
    /// The requests whose body is still arriving (API and console alike).
    pub body_phase: Arc<body_phase::BodyPhase>,
    pub metrics: Arc<Metrics>,
    /// Continuous replication's status, when `[replica]` is set.
    pub replica: Option<Arc<crate::metrics::ReplicaStatus>>,
    pub recordings: recordings::Settings,
    /// Per-key request rate limit, when configured.
    pub rate_limiter: Option<rate_limit::RateLimiter>,
    /// The engagement engine: passes the API's outreach through the compliance gate and
    /// sends it through its provider.
    pub engine: Arc<crate::engine::Engine>,
    /// The console's sign-in throttle (per email and per address, in memory).
    pub sign_in_throttle: crate::domain::people::throttle::Throttle,
    /// Every argon2 hash and check of the server, bounded (`passwords::Work`).
    pub passwords: Arc<crate::domain::people::passwords::Work>,
    /// The bounds of import files (`max_import_bytes`, `import_quota_bytes`).
    pub imports: crate::domain::import::Limits,
    /// What a refused console form shows after its redirect (Post/Redirect/Get).
    pub flash: flash::Flash,
    /// Web chat's bounds kept in memory (per address, per session).
    pub webchat: webchat::Limits,
}

impl AppState {
    /// Reads a JSON object body within the size limit.
    pub async fn json_body(
        &self,
        body: RequestBody,
    ) -> Result<serde_json::Map<String, serde_json::Value>> {
        json_object(&read_body(body, self.max_body_bytes).await?)
    }
}

/// Answers one API request from `peer`.
pub async fn handle(
    state: Arc<AppState>,
    req: Request<Incoming>,
    peer: IpAddr,
) -> Result<Response<Body>, std::convert::Infallible> {
    let started = Instant::now();
    let request_id = request_id(req.headers());
    let version = req.version();
    let head = req.method() == Method::HEAD;
    let expects_continue = request::expects_continue(req.headers());
    let (parts, body) = req.into_parts();
    let (body, leftover) = RequestBody::new(body, state.body_pace, &state.body_phase, peer);
    let req = Request::from_parts(parts, body);
    // At the default `info` level this span is disabled and costs nothing; a formatted
    // span per request was a tenth of the server's CPU under load. Internal errors
    // name the request id themselves below.
    let span = tracing::debug_span!("request", id = %request_id);
    // The request line is kept only for the debug log line below.
    let request_line = tracing::enabled!(tracing::Level::DEBUG)
        .then(|| (req.method().clone(), req.uri().path().to_string()));
    let mut route_name = "unmatched";
    let result = dispatch(&state, req, &mut route_name, peer)
        .instrument(span.clone())
        .await;
    let mut response = result.unwrap_or_else(|e| {
        if let Error::Internal(cause) = &e {
            tracing::error!(request = %request_id, %cause, "internal error");
        }
        response::error(&e)
    });
    // The handler is done with the body; whatever it left unread is read now, before
    // the answer goes out, so that the client gets the answer (see `request`).
    request::settle(
        &mut response,
        leftover,
        state.max_body_bytes,
        expects_continue,
        version,
    )
    .await;
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    if head {
        // The router gave a HEAD the GET route; its answer goes out without the body.
        response = response::without_body(response);
    }
    let status = response.status().as_u16();
    state.metrics.record(route_name, status, started.elapsed());
    if let Some((method, path)) = request_line {
        span.in_scope(|| {
            tracing::debug!(%method, %path, status, micros = started.elapsed().as_micros() as u64, "request")
        });
    }
    Ok(response)
}

/// The caller's `x-request-id` when it is a sane token, else a new one.
fn request_id(headers: &HeaderMap) -> String {
    let given = headers.get("x-request-id").and_then(|v| v.to_str().ok());
    match given {
        Some(id) if crate::ids::is_valid_client_id(id) && id.len() <= 64 => id.to_string(),
        _ => crate::ids::generate("req"),
    }
}

async fn dispatch(
    state: &AppState,
    req: Request<RequestBody>,
    route_name: &mut &'static str,
    peer: IpAddr,
) -> Result<Response<Body>> {
    let (mut parts, body) = req.into_parts();
    let segments = router::segments(parts.uri.path())?;
    let route = router::route(&parts.method, &segments)?;
    *route_name = route.name();
    // Routes open without a key.
    match route {
        // A web chat path's preflight is CORS's, for allowed origins only.
        Route::Options(_) if segments.len() > 1 && segments[0] == "webchat" => {
            return webchat::preflight(state, &segments[1], &parts.headers)
        }
        Route::Options(allowed) => return Ok(response::options(allowed)),
        Route::WebchatScript => return Ok(webchat::script()),
        Route::WebchatCreateSession(org) => {
            let call = webchat::Call::CreateSession;
            return webchat::handle(state, &parts, org, call, body, peer).await;
        }
        Route::WebchatPostMessage(org, id) => {
            let call = webchat::Call::PostMessage(id);
            return webchat::handle(state, &parts, org, call, body, peer).await;
        }
        Route::WebchatEvents(org, id) => {
            let call = webchat::Call::Events(id);
            return webchat::handle(state, &parts, org, call, body, peer).await;
        }
        Route::WebchatContact(org, id) => {
            let call = webchat::Call::Contact(id);
            return webchat::handle(state, &parts, org, call, body, peer).await;
        }
        Route::WebchatVoiceToken(org, id) => {
            let call = webchat::Call::VoiceToken(id);
            return webchat::handle(state, &parts, org, call, body, peer).await;
        }
        Route::WebchatVoiceSdk => return Ok(webchat_voice::sdk()),
        Route::WebchatVoiceSdkLicense => return Ok(webchat_voice::sdk_license()),
        Route::Healthz => return Ok(reply(StatusCode::OK, &json!({"status": "ok"}))),
        Route::Readyz => return ops::readyz(&state.store),
        Route::OpenApi => return Ok(ops::openapi()),
        Route::RecordingFile(org, call) => return recordings::download(state, &parts, org, call),
        Route::CalendarFeed(name) => {
            let query = Query::parse(parts.uri.query())?;
            return calendars::feed(state, name, &query, parts.headers.get(IF_NONE_MATCH));
        }
        Route::UnsubscribePage(token) => return email::page(state, token).await,
        Route::UnsubscribeOneClick(token) => return email::one_click(state, token, body).await,
        Route::MailgunInbound(org) => {
            return email::mailgun_inbound(state, &parts, org, body).await
        }
        Route::TwilioSms(org) => {
            return twilio::webhook(state, &parts, org, twilio::Hook::Sms, body).await
        }
        Route::TwilioSmsStatus(org) => {
            return twilio::webhook(state, &parts, org, twilio::Hook::SmsStatus, body).await
        }
        Route::TwilioVoiceInbound(org) => {
            return voice::webhook(state, &parts, org, voice::Hook::Inbound, body).await
        }
        Route::TwilioVoiceTwiml(org, call) => {
            return voice::webhook(state, &parts, org, voice::Hook::Twiml(call), body).await
        }
        Route::TwilioVoiceStatus(org, call) => {
            return voice::webhook(state, &parts, org, voice::Hook::Status(call), body).await
        }
        Route::TwilioVoiceRecording(org, call) => {
            let hook = voice::Hook::Recording(call);
            return voice::webhook(state, &parts, org, hook, body).await;
        }
        Route::TwilioVoiceTransfer(org, call) => {
            return voice::webhook(state, &parts, org, voice::Hook::Transfer(call), body).await
        }
        Route::TwilioVoiceWarm(org, call) => {
            return voice::webhook(state, &parts, org, voice::Hook::Warm(call), body).await
        }
        Route::TwilioVoiceRelay(org, call) => return relay::upgrade(state, &mut parts, org, call),
        _ => {}
    }
    let scope = route
        .scope()
        .ok_or_else(|| Error::Internal(format!("open route {} has no handler", route.name())))?;
    let key = request::api_key(&parts.headers)?;
    let caller = auth::authenticate(&state.store, key, scope)?;
    if let Some(limiter) = &state.rate_limiter {
        limiter.check(&caller.key_id)?;
    }
    let query = Query::parse(parts.uri.query())?;
    let store = &state.store;
    match route {
        Route::Metrics => ops::metrics(state),
        Route::AdminReplica => Ok(ops::replica(state)),
        Route::ListLeads => leads::list(store, &caller, &query),
        Route::SearchLeads => leads::search(store, &caller, &query),
        Route::ImportLeads => leads::import(state, caller, &parts.headers, &query, body).await,
        Route::ImportRefused(id) => leads::import_refused(state, &caller, id).await,
        Route::GetLead(id) => leads::get(store, &caller, id),
        Route::CreateLead => leads::create(store, caller, state.json_body(body).await?).await,
        Route::UpdateLead(id) => {
            leads::update(store, caller, id, state.json_body(body).await?).await
        }
        Route::DeleteLead(id) => leads::delete(store, caller, id).await,
        Route::ListEvents(id) => events::list(store, &caller, id, &query),
        Route::PostEvent(id) => events::post(store, caller, id, state.json_body(body).await?).await,
        Route::ListMessages(id) => events::list_messages(store, &caller, id, &query),
        Route::PostMessage(id) => {
            events::post_message(state, caller, id, state.json_body(body).await?).await
        }
        Route::GetCall(id) => calls::get(store, &caller, id),
        Route::PutCall(id) => calls::put(store, caller, id, state.json_body(body).await?).await,
        Route::GetConsent(id) => consent::get(store, &caller, id, &query),
        Route::PostConsent(id) => {
            consent::post(store, caller, id, state.json_body(body).await?).await
        }
        Route::Unsubscribe(id) => contact::subscription(state, caller, id, body, true).await,
        Route::Resubscribe(id) => contact::subscription(state, caller, id, body, false).await,
        Route::TurnOff(id) => contact::set_ai(store, caller, id, false).await,
        Route::TurnOn(id) => contact::set_ai(store, caller, id, true).await,
        Route::AddTags(id) => {
            contact::add_tags(store, caller, id, state.json_body(body).await?).await
        }
        Route::RemoveTags(id) => {
            contact::remove_tags(store, caller, id, state.json_body(body).await?).await
        }
        Route::RequestCall(id) => {
            outreach::request_call(state, caller, id, state.json_body(body).await?).await
        }
        Route::RegisterDnc => dnc::register_dnc(store, caller, state.json_body(body).await?).await,
        Route::ListDnc => dnc::list_dnc(store, &caller, &query),
        Route::RemoveDnc(phone) => dnc::remove_dnc(store, caller, phone).await,
        Route::InboundSms => {
            inbound::inbound_sms(store, caller, state.json_body(body).await?).await
        }
        Route::GetOrg => org::get_org(store, &caller),
        Route::UpdateOrg => {
            let public_url = state.engine.public_url().map(str::to_string);
            let policy = state.engine.http_client().policy();
            let body = state.json_body(body).await?;
            org::update_org(store, caller, body, public_url, policy).await
        }
        Route::CreateWebhook => {
            let policy = state.engine.http_client().policy();
            webhooks::create(store, caller, state.json_body(body).await?, policy).await
        }
        Route::ListWebhooks => webhooks::list(store, &caller),
        Route::DeleteWebhook(id) => webhooks::delete(store, caller, id).await,
        Route::ListDeliveries(id) => webhooks::deliveries(store, &caller, id, &query),
        Route::RetryDelivery(id, delivery) => webhooks::retry(store, caller, id, delivery).await,
        Route::PutRecording(id) => {
            recordings::upload(state, caller, id, &parts.headers, body).await
        }
        Route::GetRecording(id) => recordings::link(state, &caller, id, &parts),
        Route::DeleteRecording(id) => recordings::delete(store, caller, id).await,
        Route::ListProfiles => profiles::list(store, &caller, &query),
        Route::GetProfile(name) => profiles::get(store, &caller, name),
        Route::ProfileStats(name) => profiles::stats(store, &caller, name),
        Route::PutProfile(name) => {
            // A PUT replaces the whole profile: an empty body must not empty it.
            let bytes = read_body(body, state.max_body_bytes).await?;
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Err(Error::BadRequest(
                    "Request body must be a JSON object".into(),
                ));
            }
            profiles::put(&state.engine, store, caller, name, json_object(&bytes)?).await
        }
        Route::DeleteProfile(name) => profiles::delete(store, caller, name).await,
        Route::CreateReplay(name) => {
            let body = state.json_body(body).await?;
            replays::create(&state.engine, store, &caller, name, body).await
        }
        Route::ListReplays => replays::list(&state.engine, &caller),
        Route::GetReplay(id) => replays::get(&state.engine, &caller, id),
        Route::CancelReplay(id) => replays::cancel(&state.engine, &caller, id),
        Route::GetEngagement(id) => profiles::engagement(store, &caller, id),
        Route::ListCalendars => calendars::list(state, &caller),
        Route::GetCalendar(name) => calendars::get(state, &caller, name),
        Route::PutCalendar(name) => {
            calendars::put(state, caller, name, state.json_body(body).await?).await
        }
        Route::DeleteCalendar(name) => calendars::delete(state, caller, name).await,
        Route::RotateFeedToken(name) => calendars::rotate(state, caller, name).await,
        Route::CalendarTimes(name) => calendars::times(state, &caller, name, &query).await,
        Route::BookMeeting(id) => {
            meetings::book(state, caller, id, state.json_body(body).await?).await
        }
        Route::ListMeetings => meetings::list(store, &caller, &query),
        Route::GetMeeting(id) => meetings::get(store, &caller, id),
        Route::UpdateMeeting(id) => {
            meetings::update(store, caller, id, state.json_body(body).await?).await
        }
        Route::CancelMeeting(id) => meetings::cancel(store, caller, id).await,
        Route::RescheduleMeeting(id) => {
            meetings::reschedule(state, caller, id, state.json_body(body).await?).await
        }
        Route::InboundEmail => {
            inbound::inbound_email(store, caller, state.json_body(body).await?).await
        }
        // The open routes (no scope, `Route::scope`) were answered above.
        _ => Err(Error::Internal("open route reached auth".into())),
    }
}

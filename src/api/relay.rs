//! The ConversationRelay WebSocket of a call (`GET .../voice/{callId}/relay`): the
//! handshake, checked here, then the conversation, handed to the engine.
//!
//! Twilio signs the handshake like its webhooks: `X-Twilio-Signature` over the URL it
//! was given in the TwiML (`wss://` + the server's `public_url` host and the path; or
//! its `https://` form; each without its port or with it, as Twilio's validators accept),
//! with no parameters, keyed with the organization's voice auth token. A missing or
//! wrong signature is 403 and nothing is upgraded; a call engaged did not place or
//! answer is 404. A good handshake is answered `101 Switching Protocols`, and the
//! upgraded connection runs `engine::Engine::relay` in its own task.

use hyper::header::{HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use hyper::http::request::Parts;
use hyper::upgrade::OnUpgrade;
use hyper::{Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

use super::response::{full, Body};
use super::twilio;
use super::AppState;
use crate::channel::Channel;
use crate::domain::voice::voice;
use crate::error::{Error, Result};
use crate::providers::callbacks::{self, CallHook};
use crate::providers::twilio_signature;

pub fn upgrade(
    state: &AppState,
    parts: &mut Parts,
    org: &str,
    call_id: &str,
) -> Result<Response<Body>> {
    let settings = twilio::settings_for(state, org, Channel::Voice)?;
    let (signature, base) = twilio::signature_and_base(state, parts)?;
    // The URL as given to Twilio, and its https form (as a proxy may report it).
    let urls = [
        callbacks::relay(base, org, call_id),
        callbacks::call(base, org, call_id, CallHook::Relay),
    ];
    if !urls
        .iter()
        .any(|url| twilio_signature::verify_url(&settings.auth_token, url, &[], signature))
    {
        tracing::warn!(
            org,
            call = call_id,
            "a relay handshake with a wrong signature"
        );
        return Err(Error::Forbidden);
    }
    voice::session(&state.store.read()?, org, call_id)?;
    let header = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let wants_websocket = header(UPGRADE).is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
        && header(CONNECTION).is_some_and(|v| {
            v.split(',')
                .any(|token| token.trim().eq_ignore_ascii_case("upgrade"))
        })
        && header(hyper::header::SEC_WEBSOCKET_VERSION) == Some("13");
    let key = header(SEC_WEBSOCKET_KEY)
        .filter(|_| wants_websocket)
        .ok_or_else(|| Error::BadRequest("Expected a WebSocket upgrade (version 13)".into()))?;
    let accept = derive_accept_key(key.as_bytes());
    let on_upgrade = parts
        .extensions
        .remove::<OnUpgrade>()
        .ok_or_else(|| Error::BadRequest("This connection cannot be upgraded".into()))?;
    let engine = state.engine.clone();
    let (org, call) = (org.to_string(), call_id.to_string());
    tokio::spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => {
                let socket =
                    WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None)
                        .await;
                engine.relay(org, call, socket).await;
            }
            Err(e) => {
                tracing::info!(org, call, error = %e, "a relay connection closed before its upgrade")
            }
        }
    });
    let mut response = Response::new(full(""));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    let accept = HeaderValue::from_str(&accept)
        .map_err(|_| Error::Internal("a WebSocket accept key is not a header value".into()))?;
    headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
    Ok(response)
}

//! Calls from the browser (`shared/spec/webchat.md`, "Voice from the browser"): a web
//! chat visitor's Twilio Access Token, `POST /webchat/{org}/sessions/{id}/voice-token`
//! (behind `api::webchat`'s origin and session-token checks), and Twilio's Voice
//! JavaScript SDK, vendored at a pinned version (`vendor/twilio-voice-sdk/`) and served
//! from the binary with its licence: `GET /webchat/twilio-voice-<version>.js` and
//! `.LICENSE.md`. The call the SDK places reaches the voice webhook (`api::voice`) from
//! `client:web_<sessionId>`.

use std::time::Instant;

use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;

use super::response::{full, json as reply, Body};
use super::AppState;
use crate::domain::conversation::webchat as chat;
use crate::error::{Error, Result};
use crate::providers::twilio_token::{self, Grant, TTL_SECONDS};
use crate::store::rows::ProviderSettings;
use crate::store::webchat::WebchatSettings;
use crate::store::Reader;
use crate::time::now_micros;

/// The vendored SDK's version (`vendor/twilio-voice-sdk/README.md`).
pub const SDK_VERSION: &str = "2.18.5";
/// The SDK's browser bundle (`dist/twilio.min.js` of `@twilio/voice-sdk`).
pub const SDK: &[u8] = include_bytes!("../../vendor/twilio-voice-sdk/twilio.min.js");
/// The SDK's licence (Apache-2.0, with its bundled parts' notices).
pub const SDK_LICENSE: &[u8] = include_bytes!("../../vendor/twilio-voice-sdk/LICENSE.md");
/// The SDK's file name under `/webchat/`.
pub const SDK_FILE: &str = "twilio-voice-2.18.5.js";
/// The licence's file name under `/webchat/`.
pub const SDK_LICENSE_FILE: &str = "twilio-voice-2.18.5.LICENSE.md";

/// `GET /webchat/twilio-voice-<version>.js`: the SDK, cached for a year (its name
/// changes with its version), the licence linked.
pub fn sdk() -> Response<Body> {
    let mut response = asset(SDK, "text/javascript; charset=utf-8");
    if let Ok(link) =
        HeaderValue::from_str(&format!("</webchat/{SDK_LICENSE_FILE}>; rel=\"license\""))
    {
        response.headers_mut().insert("link", link);
    }
    response
}

/// `GET /webchat/twilio-voice-<version>.LICENSE.md`: the SDK's licence.
pub fn sdk_license() -> Response<Body> {
    asset(SDK_LICENSE, "text/plain; charset=utf-8")
}

fn asset(bytes: &'static [u8], content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(full(bytes.to_vec()));
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    h.insert("access-control-allow-origin", HeaderValue::from_static("*"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Call tokens a session may ask for in a minute.
pub const TOKENS_PER_MINUTE: u32 = 10;

/// The identity a session's calls come from: Twilio says `client:web_<sessionId>`.
pub fn identity(session_id: &str) -> String {
    format!("web_{session_id}")
}

/// `POST .../voice-token` with the session's token `given` (the bearer `api::webchat`
/// read): the token first (401), then web chat's `voice` and the organization's keys
/// (404 in words), then the session's bound (429).
pub fn token(
    state: &AppState,
    given: &str,
    org: &str,
    id: &str,
    settings: &WebchatSettings,
) -> Result<Response<Body>> {
    let read = state.store.read()?;
    chat::check_token(read.webchat_session(org, id)?, given, now_micros())?;
    if !settings.voice {
        return Err(Error::NotFound(
            "Calls from the browser are off: the organization's web chat does not offer voice."
                .into(),
        ));
    }
    let engine = read.engine_settings(org)?;
    let keys = read.browser_call_keys(org)?;
    let twilio = match &engine.voice {
        ProviderSettings::Twilio(twilio) => twilio,
        _ => return Err(Error::NotFound(
            "Calls from the browser are not set up: the organization has no twilio voice provider."
                .into(),
        )),
    };
    if keys.api_key_sid.is_empty()
        || keys.api_key_secret.is_empty()
        || keys.twiml_app_sid.is_empty()
        || twilio.account_sid.is_empty()
    {
        return Err(Error::NotFound(
            "Calls from the browser are not set up: the voice provider needs apiKeySid, apiKeySecret and twimlAppSid."
                .into(),
        ));
    }
    state
        .webchat
        .tokens
        .take(&format!("{org}/{id}"), Instant::now())
        .map_err(|wait| Error::Throttled {
            retry_after_secs: wait,
            message: format!(
                "Too many call attempts: at most {TOKENS_PER_MINUTE} a minute. Wait a moment."
            ),
        })?;
    let identity = identity(id);
    let now = now_micros() / 1_000_000;
    let token = twilio_token::access_token(
        Grant {
            account_sid: &twilio.account_sid,
            api_key_sid: &keys.api_key_sid,
            api_key_secret: &keys.api_key_secret,
            twiml_app_sid: &keys.twiml_app_sid,
            identity: &identity,
        },
        now,
    );
    Ok(reply(
        StatusCode::OK,
        &json!({"token": token, "identity": identity,
                "expiresAt": crate::time::format((now + TTL_SECONDS) * 1_000_000)}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_names_carry_the_pinned_version() {
        assert_eq!(SDK_FILE, format!("twilio-voice-{SDK_VERSION}.js"));
        assert_eq!(
            SDK_LICENSE_FILE,
            format!("twilio-voice-{SDK_VERSION}.LICENSE.md")
        );
        assert!(SDK.starts_with(b"(function(root)"));
        assert!(String::from_utf8_lossy(SDK_LICENSE).contains("Twilio"));
    }
}

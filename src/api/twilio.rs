//! Twilio's webhooks: inbound SMS (`POST /v1/providers/twilio/{orgId}/sms`) and message
//! status callbacks (`.../sms-status`). No API key: each request must carry a valid
//! `X-Twilio-Signature` over the URL as built from `public_url` (without its port, or
//! with it, the scheme's default when it has none) and its form parameters, keyed with the organization's auth token (403 `Forbidden` otherwise,
//! and nothing changes). An inbound text then takes the engine's path, exactly as
//! `POST /v1/inbound/sms`; a repeated `MessageSid` changes nothing.

use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};

use super::request::{read_body, RequestBody};
use super::response::{full, Body};
use super::AppState;
use crate::channel::Channel;
use crate::domain::conversation::inbound::{self, ProviderKeyword};
use crate::domain::engagement::outbound;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::providers::{twilio, twilio_signature};
use crate::store::rows::{ProviderSettings, TwilioSettings};
use crate::store::Reader;
use crate::time::now_micros;

/// Which of Twilio's webhooks a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    Sms,
    SmsStatus,
}

/// A verified webhook's form parameters.
pub(super) struct Form(Vec<(String, String)>);

impl Form {
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub(super) fn required(&self, name: &str) -> Result<&str> {
        self.get(name)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| Error::invalid_field(name))
    }
}

pub async fn webhook(
    state: &AppState,
    parts: &Parts,
    org: &str,
    hook: Hook,
    body: RequestBody,
) -> Result<Response<Body>> {
    let settings = settings_for(state, org, Channel::Sms)?;
    let bytes = read_body(body, state.max_body_bytes).await?;
    let form = verify(state, parts, &settings, &bytes)?;
    match hook {
        Hook::Sms => inbound(state, org, &settings, form).await,
        Hook::SmsStatus => status(state, org, form).await,
    }
}

/// The organization's Twilio settings for `channel`; 404 (logged) without them.
pub(super) fn settings_for(
    state: &AppState,
    org: &str,
    channel: Channel,
) -> Result<TwilioSettings> {
    let read = state.store.read()?;
    if read.org(org)?.is_some() {
        let settings = read.engine_settings(org)?;
        let chosen = match channel {
            Channel::Sms => settings.sms,
            Channel::Voice => settings.voice,
            Channel::Email => settings.email,
        };
        if let ProviderSettings::Twilio(settings) = chosen {
            return Ok(settings);
        }
    }
    tracing::warn!(
        org,
        channel = channel.as_str(),
        "a Twilio webhook for an organization without a Twilio provider on that channel"
    );
    Err(Error::NotFound("Not found".into()))
}

/// A Twilio request's `X-Twilio-Signature` and the server's `public_url` it was signed
/// under; `Forbidden` without either.
pub(super) fn signature_and_base<'a>(
    state: &'a AppState,
    parts: &'a Parts,
) -> Result<(&'a str, &'a str)> {
    let signature = parts
        .headers
        .get("x-twilio-signature")
        .and_then(|v| v.to_str().ok())
        .ok_or(Error::Forbidden)?;
    let base = state.engine.public_url().ok_or(Error::Forbidden)?;
    Ok((signature, base))
}

/// Checks `X-Twilio-Signature` over `{public_url}{path and query}` (without its port,
/// or with it: Twilio's validators accept both) and the form.
pub(super) fn verify(
    state: &AppState,
    parts: &Parts,
    settings: &TwilioSettings,
    bytes: &[u8],
) -> Result<Form> {
    let (signature, base) = signature_and_base(state, parts)?;
    let path = parts
        .uri
        .path_and_query()
        .map_or(parts.uri.path(), |p| p.as_str());
    let url = format!("{base}{path}");
    let params: Vec<(String, String)> =
        serde_urlencoded::from_bytes(bytes).map_err(|_| Error::Forbidden)?;
    if !twilio_signature::verify_url(&settings.auth_token, &url, &params, signature) {
        tracing::warn!(%url, "a Twilio webhook with a wrong signature");
        return Err(Error::Forbidden);
    }
    Ok(Form(params))
}

/// An inbound SMS: recorded once per `MessageSid`, then the engine's path.
async fn inbound(
    state: &AppState,
    org: &str,
    settings: &TwilioSettings,
    form: Form,
) -> Result<Response<Body>> {
    let sid = form.required("MessageSid")?.to_string();
    let from = form.required("From")?;
    let phone = crate::phone::normalize(from).ok_or_else(|| Error::invalid_field("From"))?;
    let to = form.get("To").and_then(crate::phone::normalize);
    if !settings.from.is_empty() && to.as_deref() != Some(settings.from.as_str()) {
        tracing::warn!(org, to = ?to, "an inbound SMS to a number that is not the organization's");
        return Err(Error::NotFound("Not found".into()));
    }
    let text = form.get("Body").unwrap_or_default().to_string();
    let keyword = form.get("OptOutType").and_then(ProviderKeyword::parse);
    let caller = Caller::system(org);
    state
        .store
        .write(move |tx| {
            // Checked before anything changes, noted after: a job refuses before writing.
            if tx.inbound_seen(&caller.org_id, &sid)? {
                return Ok(());
            }
            match inbound::inbound_sms_via(tx, &caller, &phone, &text, keyword) {
                Ok(_) => {}
                // A text from a number no lead has: Twilio needs no error for it.
                Err(Error::NotFound(_)) => {
                    tracing::info!(org = %caller.org_id, "an inbound SMS from a number no live lead has");
                }
                Err(e) => return Err(e),
            }
            tx.first_inbound(&caller.org_id, &sid, now_micros())?;
            Ok(())
        })
        .await?;
    Ok(twiml_empty())
}

/// A status callback: the message event moves to the new status.
async fn status(state: &AppState, org: &str, form: Form) -> Result<Response<Body>> {
    let sid = form.required("MessageSid")?.to_string();
    let status = twilio::status_of(form.required("MessageStatus")?);
    // Twilio's numeric code only: nothing else of a callback is kept as an error.
    let error_code = form
        .get("ErrorCode")
        .and_then(|c| c.trim().parse::<u32>().ok())
        .map(|c| c.to_string());
    let org_id = org.to_string();
    let found = state
        .store
        .write(move |tx| outbound::status_update(tx, &org_id, &sid, status, error_code.as_deref()))
        .await?;
    if !found {
        tracing::info!(
            org,
            "a status callback for a message this organization did not send"
        );
    }
    Ok(twiml_empty())
}

/// `200`, `text/xml`, `<Response/>`: nothing more for Twilio to do.
pub(super) fn twiml_empty() -> Response<Body> {
    twiml("<Response/>".to_string())
}

/// `200`, `text/xml`, a TwiML document.
pub(super) fn twiml(document: String) -> Response<Body> {
    let mut response = Response::new(full(document));
    *response.status_mut() = StatusCode::OK;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/xml"));
    response
}

//! Handlers of the email routes that need no API key: the one-click unsubscribe link
//! (`GET` a small page, written with maud like the console, `POST` unsubscribes,
//! RFC 8058) and inbound email forwarded by a
//! Mailgun route (`forward()`), verified with the organization's
//! `providers.email.inboundSigningKey` and then taken down the engine's inbound path,
//! with its `Message-Id` and `References` (fields of those names, or `message-headers`)
//! kept on the message for a reply to thread to.
//!
//! Mailgun's signature covers only `timestamp` and `token`, so a captured request could
//! be replayed with any text while its timestamp is fresh: each token is accepted once.
//! It is remembered (`mailgun_tokens`) until its timestamp is too old to pass the age
//! check, in the same write that records the email; a repeat is 403 and changes
//! nothing, and an empty token is 403.

use bytes::Bytes;
use hmac::{Hmac, Mac};

use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};
use maud::{html, Markup, DOCTYPE};
use serde_json::json;
use sha2::Sha256;

use super::request::{read_body, RequestBody};
use super::response::{full, json as reply, Body};
use super::views::MessageView;
use super::AppState;
use crate::domain::conversation::inbound;
use crate::domain::conversation::unsubscribe_links;
use crate::domain::records::messages::EmailHeaders;
use crate::domain::settings::org::business_name;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::ProviderSettings;
use crate::store::Reader;

/// How far a Mailgun `timestamp` may be from now, either way.
const MAILGUN_MAX_SKEW_SECS: i64 = 300;

/// `GET /v1/unsubscribe/{token}`: a page whose button POSTs to the same URL. A GET
/// never unsubscribes (link scanners follow GETs).
pub async fn page(state: &AppState, token: &str) -> Result<Response<Body>> {
    let target = state.engine.unsubscribe_key().await?.verify(token)?;
    let read = state.store.read()?;
    if read
        .lead(&target.org, &target.lead)?
        .is_none_or(|l| l.deleted_at.is_some())
    {
        return Err(Error::lead_not_found(&target.lead));
    }
    let page = UnsubscribePage {
        business: business_name(&read, &target.org)?,
    };
    let mut response = Response::new(full(page.view().into_string()));
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'none'; form-action 'self'; frame-ancestors 'none'"),
    );
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    Ok(response)
}

/// What the unsubscribe page shows: whose emails stop.
struct UnsubscribePage {
    /// The organization's business name.
    business: String,
}

impl UnsubscribePage {
    /// The page: a question and a form whose button POSTs `List-Unsubscribe=One-Click`
    /// to the page's own URL. Nothing external, no script or style (the CSP allows none).
    fn view(&self) -> Markup {
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { "Unsubscribe" }
                }
                body {
                    h1 { "Unsubscribe" }
                    p { "Stop receiving emails from " (self.business) "?" }
                    form method="post" action="" {
                        input type="hidden" name="List-Unsubscribe" value="One-Click";
                        button type="submit" { "Unsubscribe" }
                    }
                }
            }
        }
    }
}

/// `POST /v1/unsubscribe/{token}` (any body, usually `List-Unsubscribe=One-Click`):
/// unsubscribes the lead's email channel; 200, no redirect.
pub async fn one_click(state: &AppState, token: &str, body: RequestBody) -> Result<Response<Body>> {
    let target = state.engine.unsubscribe_key().await?.verify(token)?;
    read_body(body, state.max_body_bytes).await?;
    state
        .store
        .write(move |tx| unsubscribe_links::one_click(tx, &target))
        .await?;
    let mut response = Response::new(full(
        "You are unsubscribed: you will receive no more of these emails.\n",
    ));
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    Ok(response)
}

/// The fields of a Mailgun route's `forward()` this service reads.
#[derive(Debug, Default)]
struct Forwarded {
    sender: Option<String>,
    subject: Option<String>,
    body_plain: Option<String>,
    stripped_text: Option<String>,
    timestamp: Option<String>,
    token: Option<String>,
    signature: Option<String>,
    message_id: Option<String>,
    references: Option<String>,
    /// `message-headers`: every header as a JSON list of `[name, value]` pairs.
    message_headers: Option<String>,
}

impl Forwarded {
    fn set(&mut self, name: &str, value: String) {
        if name.eq_ignore_ascii_case("message-id") {
            self.message_id = Some(value);
            return;
        }
        if name.eq_ignore_ascii_case("references") {
            self.references = Some(value);
            return;
        }
        let slot = match name {
            "message-headers" => &mut self.message_headers,
            "sender" => &mut self.sender,
            "subject" => &mut self.subject,
            "body-plain" => &mut self.body_plain,
            "stripped-text" => &mut self.stripped_text,
            "timestamp" => &mut self.timestamp,
            "token" => &mut self.token,
            "signature" => &mut self.signature,
            _ => return,
        };
        *slot = Some(value);
    }

    /// The email's `Message-Id` and `References`: the fields of those names, else the
    /// headers of `message-headers`.
    fn headers(&self) -> EmailHeaders {
        let listed: Vec<(String, String)> = self
            .message_headers
            .as_deref()
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default();
        let header = |field: &Option<String>, name: &str| {
            field.clone().or_else(|| {
                listed
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.clone())
            })
        };
        EmailHeaders::parse(
            header(&self.message_id, "Message-Id").as_deref(),
            header(&self.references, "References").as_deref(),
        )
    }
}

/// `POST /v1/providers/mailgun/{orgId}/inbound`: multipart/form-data or url-encoded.
pub async fn mailgun_inbound(
    state: &AppState,
    parts: &Parts,
    org: &str,
    body: RequestBody,
) -> Result<Response<Body>> {
    let key = {
        let read = state.store.read()?;
        if read.org(org)?.is_none() {
            return Err(Error::NotFound("Not found".into()));
        }
        match read.engine_settings(org)?.email {
            ProviderSettings::Smtp(smtp) => smtp.inbound_signing_key,
            _ => None,
        }
    };
    let Some(key) = key else {
        tracing::info!(
            org,
            "inbound email from mailgun for an organization without an inbound signing key"
        );
        return Err(Error::NotFound("Not found".into()));
    };
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let bytes = read_body(body, state.max_body_bytes).await?;
    let fields = parse_form(&content_type, bytes).await?;
    let now = chrono::Utc::now().timestamp();
    let signed_at = verify(
        &key,
        fields.timestamp.as_deref(),
        fields.token.as_deref(),
        fields.signature.as_deref(),
        now,
    )?;
    // Past this, the age check refuses the token by itself.
    let remember_until = signed_at + MAILGUN_MAX_SKEW_SECS;
    let headers = fields.headers();
    let token = fields.token.unwrap_or_default();
    let sender = fields
        .sender
        .map(|s| s.trim().to_string())
        .filter(|s| s.contains('@'))
        .ok_or_else(|| Error::invalid_field("sender"))?;
    let text = fields
        .stripped_text
        .filter(|t| !t.trim().is_empty())
        .or(fields.body_plain)
        .ok_or_else(|| Error::invalid_field("body-plain"))?;
    let subject = fields.subject;
    let caller = Caller::system(org);
    let inbound = state
        .store
        .write(move |tx| {
            let org = caller.org_id.as_str();
            // Checked before anything is written: a refusal must change nothing.
            if tx.mailgun_token_seen(org, &token, remember_until)? {
                tracing::warn!(org, "a Mailgun token seen before (a replay): refused");
                return Err(Error::Forbidden);
            }
            let inbound =
                inbound::inbound_email(tx, &caller, &sender, subject.as_deref(), &text, &headers)?;
            tx.remember_mailgun_token(org, &token, remember_until, now)?;
            Ok(inbound)
        })
        .await?;
    let message = MessageView::of(&inbound.message)
        .ok_or_else(|| Error::Internal("an inbound email is not message-shaped".into()))?;
    Ok(reply(StatusCode::OK, &json!({ "message": message })))
}

/// The form's text fields (files, such as attachments, are skipped).
async fn parse_form(content_type: &str, bytes: Bytes) -> Result<Forwarded> {
    let mut fields = Forwarded::default();
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "application/x-www-form-urlencoded" => {
            let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes)
                .map_err(|_| Error::BadRequest("Invalid form body".into()))?;
            for (name, value) in pairs {
                fields.set(&name, value);
            }
        }
        "multipart/form-data" => {
            let boundary = multer::parse_boundary(content_type)
                .map_err(|_| Error::BadRequest("Invalid multipart body".into()))?;
            let stream =
                futures_util::stream::once(
                    async move { Ok::<Bytes, std::convert::Infallible>(bytes) },
                );
            let mut multipart = multer::Multipart::new(stream, boundary);
            let invalid = |_| Error::BadRequest("Invalid multipart body".into());
            while let Some(field) = multipart.next_field().await.map_err(invalid)? {
                if field.file_name().is_some() {
                    continue;
                }
                let Some(name) = field.name().map(str::to_string) else {
                    continue;
                };
                let value = field.text().await.map_err(invalid)?;
                fields.set(&name, value);
            }
        }
        _ => {
            return Err(Error::BadRequest(
                "Content-Type must be multipart/form-data or application/x-www-form-urlencoded"
                    .into(),
            ))
        }
    }
    Ok(fields)
}

/// Mailgun's webhook signature: `signature` is the hex HMAC-SHA256 under `key` of
/// `timestamp` followed by a non-empty `token`, and `timestamp` is within five minutes
/// of `now` (Unix seconds). Answers the timestamp; 403 `Forbidden` otherwise.
fn verify(
    key: &str,
    timestamp: Option<&str>,
    token: Option<&str>,
    signature: Option<&str>,
    now: i64,
) -> Result<i64> {
    let (Some(timestamp), Some(token), Some(signature)) = (timestamp, token, signature) else {
        return Err(Error::Forbidden);
    };
    if token.is_empty() {
        return Err(Error::Forbidden);
    }
    let when: i64 = timestamp.trim().parse().map_err(|_| Error::Forbidden)?;
    if (now - when).abs() > MAILGUN_MAX_SKEW_SECS {
        return Err(Error::Forbidden);
    }
    let signature = hex::decode(signature.trim()).map_err(|_| Error::Forbidden)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes())
        .map_err(|e| Error::Internal(format!("hmac key: {e}")))?;
    mac.update(timestamp.as_bytes());
    mac.update(token.as_bytes());
    // Constant-time comparison.
    mac.verify_slice(&signature).map_err(|_| Error::Forbidden)?;
    Ok(when)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(key: &str, timestamp: &str, token: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap();
        mac.update(format!("{timestamp}{token}").as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    #[test]
    fn mailgun_signatures_and_their_age() {
        let now = 1_700_000_000;
        let ts = now.to_string();
        let good = sign("key-1", &ts, "tok");
        assert!(verify("key-1", Some(&ts), Some("tok"), Some(&good), now).is_ok());
        assert!(verify("key-1", Some(&ts), Some("tok"), Some(&good), now + 299).is_ok());
        for (key, token, sig, at) in [
            ("key-2", "tok", good.as_str(), now),
            ("key-1", "tok2", good.as_str(), now),
            ("key-1", "tok", "zz", now),
            ("key-1", "tok", good.as_str(), now + 301),
            ("key-1", "tok", good.as_str(), now - 301),
        ] {
            assert!(matches!(
                verify(key, Some(&ts), Some(token), Some(sig), at),
                Err(Error::Forbidden)
            ));
        }
        assert!(matches!(
            verify("key-1", None, Some("tok"), Some(&good), now),
            Err(Error::Forbidden)
        ));
        assert_eq!(
            verify("key-1", Some(&ts), Some("tok"), Some(&good), now).ok(),
            Some(now)
        );
        let empty = sign("key-1", &ts, "");
        assert!(matches!(
            verify("key-1", Some(&ts), Some(""), Some(&empty), now),
            Err(Error::Forbidden)
        ));
    }

    #[test]
    fn the_unsubscribe_page_escapes_the_business_name() {
        let page = UnsubscribePage {
            business: "<a href='x'>&\"".into(),
        };
        let html = page.view().into_string();
        assert!(
            html.contains("<p>Stop receiving emails from &lt;a href='x'&gt;&amp;&quot;?</p>"),
            "{html}"
        );
        assert!(!html.contains("<a "), "{html}");
    }

    #[test]
    fn the_unsubscribe_page_is_a_form_posting_to_itself() {
        let html = UnsubscribePage {
            business: "Acme Solar".into(),
        }
        .view()
        .into_string();
        assert!(
            html.starts_with("<!DOCTYPE html><html lang=\"en\">"),
            "{html}"
        );
        assert!(html.contains("<title>Unsubscribe</title>"), "{html}");
        assert!(html.contains("<h1>Unsubscribe</h1>"), "{html}");
        assert!(
            html.contains(
                "<form method=\"post\" action=\"\"><input type=\"hidden\" \
                 name=\"List-Unsubscribe\" value=\"One-Click\">\
                 <button type=\"submit\">Unsubscribe</button></form>"
            ),
            "{html}"
        );
    }
}

//! The Twilio-compatible REST provider: SMS through
//! `POST {baseUrl}/2010-04-01/Accounts/{accountSid}/Messages.json` with HTTP Basic
//! `accountSid:authToken` and the form fields `To`, `From` or `MessagingServiceSid`,
//! `Body`, `StatusCallback`.
//!
//! The answer's `sid` is the provider message id and its `status` the status. Error
//! 21610 (the recipient texted STOP to the carrier) is a refusal that means "do not
//! contact"; other 4xx refuse the message with their code. A 5xx, or a request that
//! surely never left (no connection), is tried again with backoff; a request that may
//! have arrived (a timeout after writing it) is `unknown` and never sent again.

use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

use super::{Outgoing, SendOutcome};
use crate::http_client::HttpClient;
use crate::store::records::{SendStatus, TwilioSettings};

/// The pauses before the second and third tries.
const BACKOFF: [Duration; 2] = [Duration::from_millis(250), Duration::from_millis(1000)];
/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(15);
/// Twilio's "attempt to send to unsubscribed recipient".
pub const UNSUBSCRIBED_RECIPIENT: i64 = 21610;

#[derive(Debug, Clone, PartialEq)]
pub struct Twilio {
    settings: TwilioSettings,
}

#[derive(Deserialize)]
struct Accepted {
    sid: String,
    status: Option<String>,
}

#[derive(Deserialize)]
struct Refusal {
    code: Option<i64>,
}

impl Twilio {
    pub fn new(settings: TwilioSettings) -> Twilio {
        Twilio { settings }
    }

    fn auth(&self) -> String {
        let pair = format!("{}:{}", self.settings.account_sid, self.settings.auth_token);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }

    /// Sends `message` as an SMS; `status_callback` is where Twilio reports its fate.
    pub async fn send_sms(
        &self,
        client: &HttpClient,
        message: &Outgoing,
        status_callback: Option<&str>,
        on_retry: &(dyn Fn() + Sync),
    ) -> SendOutcome {
        let s = &self.settings;
        let url = format!(
            "{}/2010-04-01/Accounts/{}/Messages.json",
            s.base_url, s.account_sid
        );
        let mut form: Vec<(&str, &str)> = vec![("To", &message.to), ("Body", &message.text)];
        if s.messaging_service_sid.is_empty() {
            form.push(("From", &s.from));
        } else {
            form.push(("MessagingServiceSid", &s.messaging_service_sid));
        }
        if let Some(callback) = status_callback {
            form.push(("StatusCallback", callback));
        }
        let body = match serde_urlencoded::to_string(&form) {
            Ok(body) => body.into_bytes(),
            Err(e) => {
                return SendOutcome::Unknown {
                    error: format!("form: {e}"),
                }
            }
        };
        let headers = [("authorization", self.auth())];
        let mut attempt = 0;
        loop {
            let answer = client
                .post_form(&url, &headers, body.clone(), TIMEOUT)
                .await;
            let retry = match answer {
                Ok((status, bytes)) if (200..300).contains(&status) => {
                    return match serde_json::from_slice::<Accepted>(&bytes) {
                        Ok(a) => SendOutcome::Accepted {
                            provider_message_id: a.sid,
                            status: a.status.as_deref().map_or(SendStatus::Queued, status_of),
                        },
                        Err(e) => SendOutcome::Unknown {
                            error: format!("an answer without a sid: {e}"),
                        },
                    };
                }
                Ok((status, bytes)) if (400..500).contains(&status) => {
                    let code = serde_json::from_slice::<Refusal>(&bytes)
                        .ok()
                        .and_then(|r| r.code);
                    return SendOutcome::Refused {
                        code: code.map_or_else(|| status.to_string(), |c| c.to_string()),
                        do_not_contact: code == Some(UNSUBSCRIBED_RECIPIENT),
                    };
                }
                Ok((status, _)) => format!("status {status}"),
                Err(e) if e.not_sent => e.message,
                Err(e) => return SendOutcome::Unknown { error: e.message },
            };
            match BACKOFF.get(attempt) {
                Some(pause) => {
                    tracing::warn!(error = %retry, "the SMS provider did not take a message; trying again");
                    on_retry();
                    tokio::time::sleep(*pause).await;
                    attempt += 1;
                }
                None => {
                    return SendOutcome::Refused {
                        code: "provider-unavailable".into(),
                        do_not_contact: false,
                    }
                }
            }
        }
    }
}

/// Twilio's message statuses as ours.
pub fn status_of(status: &str) -> SendStatus {
    match status {
        "delivered" | "read" => SendStatus::Delivered,
        "sent" => SendStatus::Sent,
        "failed" | "canceled" => SendStatus::Failed,
        "undelivered" => SendStatus::Undelivered,
        "sending" => SendStatus::Sending,
        _ => SendStatus::Queued,
    }
}

//! The SMTP email provider (`kind: "smtp"`), over lettre's async connection (tokio,
//! rustls; no OpenSSL).
//!
//! A message is plain text: the step's text, a blank line and a visible unsubscribe line,
//! with `List-Unsubscribe` and `List-Unsubscribe-Post: List-Unsubscribe=One-Click`
//! (RFC 8058) and a `Message-ID` we generate, which becomes the `providerMessageId`.
//!
//! The SMTP dialogue is driven step by step rather than through lettre's transport, so
//! the provider knows whether the message content was handed over: anything that fails
//! before `DATA` was answered `354` (connect, TLS, EHLO, AUTH, MAIL, RCPT, DATA) did not
//! send the message, and a temporary failure there (4xx, a lost connection) is retried
//! with backoff, twice. Once the content is on the wire, a lost connection or a timeout
//! means the message may have been taken: [`SendOutcome::Unknown`], never retried. A
//! 5xx reply at any step is a refusal: the message is `failed` with the code.

use std::time::Duration;

use lettre::address::Envelope;
use lettre::message::header::{ContentType, HeaderName, HeaderValue};
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::{Credentials, DEFAULT_MECHANISMS};
use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::{ClientId, Extension, MailBodyParameter, MailParameter};
use lettre::Message;

use super::{Outgoing, SendOutcome};
use crate::store::records::{SendStatus, SmtpSecurity, SmtpSettings};

/// Retries of a send that failed before its content was handed over.
const RETRIES: usize = 2;
/// The wait before each retry.
const BACKOFF: [Duration; RETRIES] = [Duration::from_millis(500), Duration::from_secs(2)];
/// The bound of everything before the content (connect, TLS, EHLO, AUTH, envelope).
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);
/// The bound of sending the content and reading the server's answer.
const CONTENT_TIMEOUT: Duration = Duration::from_secs(60);

/// The error code of a send that never got through to the server.
pub const CONNECTION_FAILED: &str = "connection-failed";

/// The SMTP provider of an organization.
#[derive(Debug, Clone, PartialEq)]
pub struct Smtp {
    settings: SmtpSettings,
}

/// How one attempt failed.
enum Failure {
    /// A 5xx reply: refused for good.
    Permanent(String),
    /// Not sent, may be tried again: a 4xx reply (its code) or no conversation.
    Retryable(Option<String>, String),
    /// The content went out and no answer came back.
    Unknown(String),
}

/// The refusal code of a send or call on a channel SMTP does not serve.
pub const UNSUPPORTED_CHANNEL: &str = "unsupported-channel";

/// A send on a channel SMTP does not serve (only email is configurable as smtp).
pub fn wrong_channel() -> SendOutcome {
    SendOutcome::Refused {
        code: UNSUPPORTED_CHANNEL.into(),
        do_not_contact: false,
    }
}

impl Smtp {
    pub fn new(settings: SmtpSettings) -> Smtp {
        Smtp { settings }
    }

    /// Sends `message` to its `to` address; retries what failed before the content.
    pub async fn send(&self, message: &Outgoing) -> SendOutcome {
        let (envelope, bytes, message_id) = match self.compose(message) {
            Ok(composed) => composed,
            Err(code) => {
                return SendOutcome::Refused {
                    code,
                    do_not_contact: false,
                }
            }
        };
        let mut attempt = 0;
        loop {
            match self.attempt(&envelope, &bytes).await {
                Ok(()) => {
                    return SendOutcome::Accepted {
                        provider_message_id: message_id,
                        status: SendStatus::Sent,
                    }
                }
                Err(Failure::Permanent(code)) => {
                    return SendOutcome::Refused {
                        code,
                        do_not_contact: false,
                    }
                }
                Err(Failure::Unknown(error)) => {
                    tracing::warn!(host = %self.settings.host, %error, "smtp: no answer after the content was sent");
                    return SendOutcome::Unknown { error };
                }
                Err(Failure::Retryable(code, error)) => {
                    tracing::info!(host = %self.settings.host, %error, attempt, "smtp: send failed before the content");
                    if attempt >= RETRIES {
                        return SendOutcome::Refused {
                            code: code.unwrap_or_else(|| CONNECTION_FAILED.into()),
                            do_not_contact: false,
                        };
                    }
                    tokio::time::sleep(BACKOFF[attempt]).await;
                    attempt += 1;
                }
            }
        }
    }

    /// The envelope, the formatted message and its `Message-ID`; an error code when an
    /// address does not parse.
    fn compose(&self, out: &Outgoing) -> Result<(Envelope, Vec<u8>, String), String> {
        let from: Mailbox = self
            .settings
            .from
            .parse()
            .map_err(|_| "invalid-from".to_string())?;
        let to: Mailbox = out
            .to
            .parse()
            .map_err(|_| "invalid-recipient".to_string())?;
        let message_id = format!("<{}@{}>", crate::ids::generate("em"), from.email.domain());
        let mut text = out.text.clone();
        let mut builder = Message::builder()
            .from(from.clone())
            .to(to.clone())
            .subject(out.subject.clone().unwrap_or_default())
            .message_id(Some(message_id.clone()))
            .header(ContentType::TEXT_PLAIN);
        if let Some(url) = &out.unsubscribe_url {
            text.push_str(&format!("\n\nTo stop receiving these emails, open {url}"));
            builder = builder
                .raw_header(HeaderValue::new(
                    HeaderName::new_from_ascii_str("List-Unsubscribe"),
                    format!("<{url}>"),
                ))
                .raw_header(HeaderValue::new(
                    HeaderName::new_from_ascii_str("List-Unsubscribe-Post"),
                    "List-Unsubscribe=One-Click".to_string(),
                ));
        }
        let message = builder
            .body(text)
            .map_err(|_| "invalid-message".to_string())?;
        let envelope = Envelope::new(Some(from.email), vec![to.email])
            .map_err(|_| "invalid-recipient".to_string())?;
        Ok((envelope, message.formatted(), message_id))
    }

    fn tls(&self) -> Result<TlsParameters, Failure> {
        TlsParameters::new(self.settings.host.clone())
            .map_err(|e| Failure::Retryable(None, format!("tls parameters: {e}")))
    }

    /// One SMTP conversation.
    async fn attempt(&self, envelope: &Envelope, bytes: &[u8]) -> Result<(), Failure> {
        let mut conn = match tokio::time::timeout(SETUP_TIMEOUT, self.setup(envelope, bytes)).await
        {
            Ok(result) => result?,
            Err(_) => {
                return Err(Failure::Retryable(
                    None,
                    "timed out before the content".into(),
                ))
            }
        };
        let answer = tokio::time::timeout(CONTENT_TIMEOUT, conn.message(bytes)).await;
        let result = match answer {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(after_content(e)),
            Err(_) => Err(Failure::Unknown(
                "timed out waiting for the answer to the content".into(),
            )),
        };
        if result.is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(5), conn.quit()).await;
        } else {
            let _ = tokio::time::timeout(Duration::from_secs(5), conn.abort()).await;
        }
        result
    }

    /// Connects, secures, authenticates and opens the envelope up to `DATA`'s `354`.
    async fn setup(
        &self,
        envelope: &Envelope,
        bytes: &[u8],
    ) -> Result<AsyncSmtpConnection, Failure> {
        let s = &self.settings;
        let hello = ClientId::default();
        let implicit = match s.security {
            SmtpSecurity::Tls => Some(self.tls()?),
            SmtpSecurity::StartTls | SmtpSecurity::None => None,
        };
        let mut conn = AsyncSmtpConnection::connect_tokio1(
            (s.host.as_str(), s.port),
            Some(SETUP_TIMEOUT),
            &hello,
            implicit,
            None,
        )
        .await
        .map_err(before_content)?;
        let result = self.open_envelope(&mut conn, &hello, envelope, bytes).await;
        if result.is_err() {
            conn.abort().await;
        }
        result.map(|()| conn)
    }

    async fn open_envelope(
        &self,
        conn: &mut AsyncSmtpConnection,
        hello: &ClientId,
        envelope: &Envelope,
        bytes: &[u8],
    ) -> Result<(), Failure> {
        let s = &self.settings;
        if s.security == SmtpSecurity::StartTls {
            conn.starttls(self.tls()?, hello)
                .await
                .map_err(before_content)?;
        }
        if let (Some(user), Some(password)) = (&s.username, &s.password) {
            let credentials = Credentials::new(user.clone(), password.clone());
            conn.auth(DEFAULT_MECHANISMS, &credentials)
                .await
                .map_err(before_content)?;
        }
        let mut params = Vec::new();
        if !bytes.is_ascii() && conn.server_info().supports_feature(Extension::EightBitMime) {
            params.push(MailParameter::Body(MailBodyParameter::EightBitMime));
        }
        conn.command(Mail::new(envelope.from().cloned(), params))
            .await
            .map_err(before_content)?;
        for to in envelope.to() {
            conn.command(Rcpt::new(to.clone(), vec![]))
                .await
                .map_err(before_content)?;
        }
        conn.command(Data).await.map_err(before_content)?;
        Ok(())
    }
}

/// An error before the content: a 5xx refuses, anything else may be retried.
fn before_content(e: lettre::transport::smtp::Error) -> Failure {
    match e.status() {
        Some(code) if e.is_permanent() => Failure::Permanent(code.to_string()),
        code => Failure::Retryable(code.map(|c| c.to_string()), e.to_string()),
    }
}

/// An error answering the content: a reply (5xx refuses, 4xx says it was not taken)
/// or silence, which leaves the outcome unknown.
fn after_content(e: lettre::transport::smtp::Error) -> Failure {
    match e.status() {
        Some(code) if e.is_permanent() => Failure::Permanent(code.to_string()),
        Some(code) => Failure::Retryable(Some(code.to_string()), e.to_string()),
        None => Failure::Unknown(format!("after the content: {e}")),
    }
}

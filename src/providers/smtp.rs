//! The SMTP email provider (`kind: "smtp"`), over lettre's async connection (tokio,
//! rustls; no OpenSSL).
//!
//! A message is plain text: the step's text, a blank line and a visible unsubscribe line,
//! with `MIME-Version: 1.0`, `List-Unsubscribe` and `List-Unsubscribe-Post:
//! List-Unsubscribe=One-Click` (RFC 8058) and a `Message-ID` we generate, which becomes
//! the `providerMessageId`; a reply to the lead's email carries `In-Reply-To` and
//! `References` (`Outgoing::thread`).
//!
//! An address that is not ASCII (RFC 6531) goes out only to a server that offers
//! `SMTPUTF8`, with that parameter on `MAIL FROM` and its domain IDNA-encoded in the
//! envelope; to any other server nothing is sent and the message fails
//! `smtputf8-unsupported`. TLS (implicit or STARTTLS) trusts the webpki roots and
//! `outbound_ca_file` (`outbound_tls`); a certificate the server presents that fails
//! the check fails the message `tls-certificate` at once.
//!
//! The SMTP dialogue is driven step by step rather than through lettre's transport, so
//! the provider knows whether the message content was handed over: anything that fails
//! before `DATA` was answered `354` (connect, TLS, EHLO, AUTH, MAIL, RCPT, DATA) did not
//! send the message, and a temporary failure there (4xx, a lost connection) is retried
//! with backoff, twice. Once the content is on the wire, a lost connection or a timeout
//! means the message may have been taken: [`SendOutcome::Unknown`], never retried. A
//! 5xx reply at any step is a refusal: the message is `failed` with the code, and the
//! server's reply text is logged at warn level and kept in the event's `error`
//! ([`SendOutcome::Rejected`]).

use std::time::Duration;

use lettre::address::Envelope;
use lettre::message::header::{ContentType, HeaderName, HeaderValue, MIME_VERSION_1_0};
use lettre::message::Mailbox;
use lettre::message::{Attachment, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::{Credentials, DEFAULT_MECHANISMS};
use lettre::transport::smtp::client::{AsyncSmtpConnection, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::{ClientId, Extension, MailBodyParameter, MailParameter};
use lettre::Address;
use lettre::Message;

use super::{Outgoing, SendOutcome};
use crate::outbound_tls::{is_certificate_error, OutboundTrust, TLS_CERTIFICATE, TLS_CLASS};
use crate::store::rows::{SendStatus, SmtpSecurity, SmtpSettings};

/// Retries of a send that failed before its content was handed over.
const RETRIES: usize = 2;
/// The wait before each retry.
const BACKOFF: [Duration; RETRIES] = [Duration::from_millis(500), Duration::from_secs(2)];
/// The bound of everything before the content (connect, TLS, EHLO, AUTH, envelope).
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);
/// The bound of sending the content and reading the server's answer.
const CONTENT_TIMEOUT: Duration = Duration::from_secs(60);

/// The most of a server's reply text kept in a message's `error` and the log.
const MAX_REPLY_CHARS: usize = 512;

/// The error code of a send that never got through to the server.
pub const CONNECTION_FAILED: &str = "connection-failed";

/// The error code of a message to an address that is not ASCII, for a server that does
/// not offer SMTPUTF8.
pub const SMTPUTF8_UNSUPPORTED: &str = "smtputf8-unsupported";

/// The SMTP provider of an organization.
#[derive(Debug, Clone, PartialEq)]
pub struct Smtp {
    settings: SmtpSettings,
}

/// How one attempt failed.
enum Failure {
    /// A 5xx reply: refused for good, with its code and the server's reply text.
    Permanent { code: String, reply: String },
    /// Refused before anything was sent, for a reason a repeat cannot change: the
    /// error code (an untrusted certificate, no SMTPUTF8 for an address that needs it).
    Final(&'static str),
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

    /// Sends `message` to its `to` address, trusting `trust` for TLS; retries what
    /// failed before the content.
    pub async fn send(&self, trust: &OutboundTrust, message: &Outgoing) -> SendOutcome {
        self.send_with(trust, message, None).await
    }

    /// Sends `message` with an iTIP part (RFC 6047): `multipart/alternative` of the text
    /// and `text/calendar; method=...; charset=UTF-8` holding `ics`.
    pub async fn send_invitation(
        &self,
        trust: &OutboundTrust,
        message: &Outgoing,
        method: crate::ics::Method,
        ics: &str,
    ) -> SendOutcome {
        self.send_with(trust, message, Some((method, ics))).await
    }

    async fn send_with(
        &self,
        trust: &OutboundTrust,
        message: &Outgoing,
        calendar: Option<(crate::ics::Method, &str)>,
    ) -> SendOutcome {
        let Composed {
            envelope,
            bytes,
            message_id,
            needs_utf8,
        } = match self.compose(message, calendar) {
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
            match self.attempt(trust, &envelope, &bytes, needs_utf8).await {
                Ok(()) => {
                    return SendOutcome::Accepted {
                        provider_message_id: message_id,
                        status: SendStatus::Sent,
                    }
                }
                Err(Failure::Permanent { code, reply }) => {
                    tracing::warn!(host = %self.settings.host, %reply, "smtp: the server refused the message");
                    return SendOutcome::Rejected { code, reply };
                }
                Err(Failure::Final(code)) => {
                    return SendOutcome::Refused {
                        code: code.into(),
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
    fn compose(
        &self,
        out: &Outgoing,
        calendar: Option<(crate::ics::Method, &str)>,
    ) -> Result<Composed, String> {
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
            .header(MIME_VERSION_1_0);
        if let Some(thread) = &out.thread {
            builder = builder
                .in_reply_to(thread.in_reply_to.clone())
                .references(thread.references.join(" "));
        }
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
        let message = match calendar {
            None => builder.header(ContentType::TEXT_PLAIN).body(text),
            Some((method, ics)) => {
                let kind = ContentType::parse(&format!(
                    "text/calendar; method={}; charset=UTF-8",
                    method.as_str()
                ))
                .map_err(|_| "invalid-message".to_string())?;
                // The iTIP part beside the text, and the same `.ics` as an attachment
                // (the CalConnect iMIP guide's advice: clients that ignore the part
                // still offer the file).
                let attachment = ContentType::parse("application/ics; name=\"invite.ics\"")
                    .map_err(|_| "invalid-message".to_string())?;
                builder.multipart(
                    MultiPart::mixed()
                        .multipart(
                            MultiPart::alternative()
                                .singlepart(SinglePart::plain(text))
                                .singlepart(
                                    SinglePart::builder().header(kind).body(ics.to_string()),
                                ),
                        )
                        .singlepart(
                            Attachment::new("invite.ics".to_string())
                                .body(ics.to_string(), attachment),
                        ),
                )
            }
        }
        .map_err(|_| "invalid-message".to_string())?;
        let needs_utf8 = !from.email.to_string().is_ascii() || !to.email.to_string().is_ascii();
        let from = envelope_address(&from.email).map_err(|_| "invalid-from".to_string())?;
        let to = envelope_address(&to.email).map_err(|_| "invalid-recipient".to_string())?;
        let envelope =
            Envelope::new(Some(from), vec![to]).map_err(|_| "invalid-recipient".to_string())?;
        Ok(Composed {
            envelope,
            bytes: message.formatted(),
            message_id,
            needs_utf8,
        })
    }

    fn tls(&self, trust: &OutboundTrust) -> Result<TlsParameters, Failure> {
        trust
            .smtp(&self.settings.host)
            .map_err(|e| Failure::Retryable(None, format!("tls parameters: {e}")))
    }

    /// One SMTP conversation.
    async fn attempt(
        &self,
        trust: &OutboundTrust,
        envelope: &Envelope,
        bytes: &[u8],
        needs_utf8: bool,
    ) -> Result<(), Failure> {
        let setup = self.setup(trust, envelope, bytes, needs_utf8);
        let mut conn = match tokio::time::timeout(SETUP_TIMEOUT, setup).await {
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
        trust: &OutboundTrust,
        envelope: &Envelope,
        bytes: &[u8],
        needs_utf8: bool,
    ) -> Result<AsyncSmtpConnection, Failure> {
        let s = &self.settings;
        let hello = ClientId::default();
        let implicit = match s.security {
            SmtpSecurity::Tls => Some(self.tls(trust)?),
            SmtpSecurity::StartTls | SmtpSecurity::None => None,
        };
        // Resolved here, so that only the addresses `outbound_allow_private` allows are
        // dialed (a refused one fails the message `connection-failed`, not retried).
        let addresses = match trust.policy().resolve(&s.host, s.port).await {
            Ok(addresses) => addresses,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                tracing::warn!(error = %e, "smtp: the server's address is refused");
                return Err(Failure::Final(CONNECTION_FAILED));
            }
            Err(e) => return Err(Failure::Retryable(None, format!("resolving the host: {e}"))),
        };
        let mut conn = AsyncSmtpConnection::connect_tokio1(
            addresses.as_slice(),
            Some(SETUP_TIMEOUT),
            &hello,
            implicit,
            None,
        )
        .await
        .map_err(before_content)?;
        if s.security == SmtpSecurity::StartTls {
            let tls = self.tls(trust)?;
            // A failed upgrade leaves lettre's connection without a stream, which
            // `abort` would panic on: it is dropped, not aborted.
            conn.starttls(tls, &hello).await.map_err(before_content)?;
        }
        let result = self
            .open_envelope(&mut conn, envelope, bytes, needs_utf8)
            .await;
        if result.is_err() {
            conn.abort().await;
        }
        result.map(|()| conn)
    }

    /// Authenticates and opens the envelope up to `DATA`'s `354`.
    async fn open_envelope(
        &self,
        conn: &mut AsyncSmtpConnection,
        envelope: &Envelope,
        bytes: &[u8],
        needs_utf8: bool,
    ) -> Result<(), Failure> {
        let s = &self.settings;
        if let (Some(user), Some(password)) = (&s.username, &s.password) {
            let credentials = Credentials::new(user.clone(), password.clone());
            conn.auth(DEFAULT_MECHANISMS, &credentials)
                .await
                .map_err(before_content)?;
        }
        let mut params = Vec::new();
        if needs_utf8 {
            // RFC 6531: without the server's SMTPUTF8, such an address must not be sent.
            if !conn.server_info().supports_feature(Extension::SmtpUtfEight) {
                tracing::warn!(host = %s.host, "smtp: an address that is not ASCII, and the server does not offer SMTPUTF8");
                return Err(Failure::Final(SMTPUTF8_UNSUPPORTED));
            }
            params.push(MailParameter::SmtpUtfEight);
        }
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

/// What a message is on the wire.
struct Composed {
    /// Its envelope, domains IDNA-encoded.
    envelope: Envelope,
    /// The formatted message.
    bytes: Vec<u8>,
    message_id: String,
    /// An address is not ASCII: the server must offer SMTPUTF8.
    needs_utf8: bool,
}

/// `address` for the envelope: its domain IDNA-encoded (ASCII), its local part as is.
/// An ASCII domain is left as it was written.
fn envelope_address(address: &Address) -> Result<Address, String> {
    if address.domain().is_ascii() {
        return Ok(address.clone());
    }
    let domain = idna::domain_to_ascii(address.domain()).map_err(|e| e.to_string())?;
    Address::new(address.user(), domain).map_err(|e| e.to_string())
}

/// A 5xx reply: its code, and the server's reply text (code first, as it was sent).
fn permanent(
    code: lettre::transport::smtp::response::Code,
    e: &lettre::transport::smtp::Error,
) -> Failure {
    let text = std::error::Error::source(e)
        .map(|s| s.to_string())
        .unwrap_or_default();
    let reply: String = format!("{code} {text}")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_REPLY_CHARS)
        .collect();
    Failure::Permanent {
        code: code.to_string(),
        reply: reply.trim_end().to_string(),
    }
}

/// An error before the content: a 5xx refuses, an untrusted certificate fails for
/// good, anything else may be retried.
fn before_content(e: lettre::transport::smtp::Error) -> Failure {
    if is_certificate_error(&e) {
        tracing::warn!(
            error = TLS_CLASS,
            "smtp: the server's certificate is not trusted"
        );
        return Failure::Final(TLS_CERTIFICATE);
    }
    match e.status() {
        Some(code) if e.is_permanent() => permanent(code, &e),
        code => Failure::Retryable(code.map(|c| c.to_string()), e.to_string()),
    }
}

/// An error answering the content: a reply (5xx refuses, 4xx says it was not taken)
/// or silence, which leaves the outcome unknown.
fn after_content(e: lettre::transport::smtp::Error) -> Failure {
    match e.status() {
        Some(code) if e.is_permanent() => permanent(code, &e),
        Some(code) => Failure::Retryable(Some(code.to_string()), e.to_string()),
        None => Failure::Unknown(format!("after the content: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn smtp() -> Smtp {
        Smtp::new(SmtpSettings {
            host: "mail.test".into(),
            port: 25,
            security: SmtpSecurity::None,
            username: None,
            password: None,
            from: "Sam <sam@acme.example>".into(),
            inbound_signing_key: None,
        })
    }

    fn outgoing(to: &str) -> Outgoing {
        Outgoing {
            to: to.into(),
            text: "Hi".into(),
            subject: Some("Quote".into()),
            unsubscribe_url: Some("https://e.test/v1/unsubscribe/t".into()),
            status_callback: None,
            thread: None,
        }
    }

    /// Under a closed policy a loopback server is never dialed: the message fails
    /// `connection-failed` at once, and the listener accepts nothing.
    #[tokio::test]
    async fn a_refused_address_is_never_dialed() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        for host in ["127.0.0.1", "localhost"] {
            let mut settings = smtp().settings;
            settings.host = host.into();
            settings.port = port;
            let trust = OutboundTrust::default()
                .with_policy(crate::outbound_address::OutboundPolicy::new(false));
            let outcome = Smtp::new(settings)
                .send(&trust, &outgoing("ada@example.com"))
                .await;
            assert!(
                matches!(&outcome, SendOutcome::Refused { code, .. } if code == CONNECTION_FAILED),
                "{host}: {outcome:?}"
            );
        }
        // A connection made would wait in the backlog: one non-blocking accept finds it.
        use futures_util::FutureExt as _;
        assert!(
            listener.accept().now_or_never().is_none(),
            "nothing connected"
        );
    }

    #[test]
    fn every_message_says_mime_version_1_0() {
        let composed = smtp().compose(&outgoing("ada@example.com"), None).unwrap();
        let raw = String::from_utf8(composed.bytes).unwrap();
        assert!(raw.contains("\r\nMIME-Version: 1.0\r\n"), "{raw}");
        assert!(!composed.needs_utf8);
    }

    #[test]
    fn a_non_ascii_address_needs_smtputf8_and_its_domain_goes_idna_encoded() {
        let composed = smtp()
            .compose(&outgoing("jörg@bücher.example"), None)
            .unwrap();
        assert!(composed.needs_utf8);
        let to = composed.envelope.to()[0].to_string();
        assert_eq!(to, "jörg@xn--bcher-kva.example");
        let composed = smtp().compose(&outgoing("Ada@Example.COM"), None).unwrap();
        assert!(!composed.needs_utf8);
        assert_eq!(composed.envelope.to()[0].to_string(), "Ada@Example.COM");
        let composed = smtp()
            .compose(&outgoing("ada@bücher.example"), None)
            .unwrap();
        assert!(composed.needs_utf8);
        assert_eq!(
            composed.envelope.to()[0].to_string(),
            "ada@xn--bcher-kva.example"
        );
    }
}

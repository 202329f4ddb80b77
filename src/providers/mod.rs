//! Channel providers: the seam between the engine and the outside world.
//!
//! A provider sends an SMS, an email, or starts a call ([`CallRequest`] in,
//! [`CallOutcome`] out), and says what became of it. It never sees the store: the engine
//! commits the attempt (`sending`, a queued call) before calling it and the outcome
//! after, outside the writer. [`Provider::for_channel`] picks the provider an
//! organization configured for a channel; by default that is the sandbox (nothing leaves
//! the machine). A real kind (Twilio-compatible SMS and voice, SMTP email) is a variant of
//! [`Provider`] and an arm in each method: the engine does not change. A live Twilio call
//! also speaks the wire formats beside the providers: [`twiml`] (the documents answering
//! the voice webhooks), [`relay`] (ConversationRelay's WebSocket messages) and
//! [`twilio_signature`] (the webhooks' signatures).

pub mod caldav;
pub mod callbacks;
pub mod compliance;
pub mod model;
pub mod relay;
pub mod sandbox;
pub mod smtp;
pub mod twilio;
pub mod twilio_signature;
pub mod twilio_token;
pub mod twiml;

use crate::channel::Channel;
use crate::http_client::HttpClient;
use crate::store::rows::{EngineSettings, ProviderSettings, SendStatus};

/// A text to send: an SMS, or an email when `subject` is set.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// E.164 phone (SMS, calls) or email address.
    pub to: String,
    pub text: String,
    pub subject: Option<String>,
    /// The one-click unsubscribe link of an email (filled in by the engine, which knows
    /// `public_url`); the SMTP provider puts it in `List-Unsubscribe` and the text.
    pub unsubscribe_url: Option<String>,
    /// Where the provider reports the message's later statuses (Twilio's
    /// `StatusCallback`), when it does.
    pub status_callback: Option<String>,
    /// The email this one answers, when it is a reply (`In-Reply-To`, `References`).
    pub thread: Option<EmailThread>,
}

/// Where an email reply belongs: the id of the message it answers (`In-Reply-To`) and
/// the thread's ids up to and including it (`References`), each `<...>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailThread {
    pub in_reply_to: String,
    pub references: Vec<String>,
}

/// What the provider made of a send.
#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome {
    /// Taken: the provider's id of the message and its status now.
    Accepted {
        provider_message_id: String,
        status: SendStatus,
    },
    /// Refused for good. `do_not_contact` when the refusal means the recipient opted
    /// out with the carrier (Twilio 21610): the gate's fifth step.
    Refused { code: String, do_not_contact: bool },
    /// Refused for good by a server that said why (an SMTP 5xx): its code and its
    /// reply text, which the event keeps in `error` (a mail server's reply, not an
    /// HTTP response body).
    Rejected { code: String, reply: String },
    /// Not known to have been taken (timeout, connection lost after the request was
    /// written): never retried by itself.
    Unknown { error: String },
}

/// A call to place: the lead's number and where the provider asks what to do and
/// reports the call's progress and recording (URLs under `public_url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRequest {
    /// E.164 phone.
    pub to: String,
    /// Where the provider fetches the call's TwiML when it is answered.
    pub twiml_url: String,
    /// Where the provider reports the call's statuses (and answering-machine detection).
    pub status_callback: String,
    /// Where the provider says the call's recording is ready.
    pub recording_callback: String,
}

/// What the provider made of a dial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// Taken: the provider's id of the call and its status now.
    Accepted {
        provider_call_id: String,
        status: CallStatus,
    },
    /// Refused for good, with the provider's code.
    Refused { code: String },
    /// Not known to have been taken (timeout, connection lost after the request was
    /// written): never retried by itself.
    Unknown { error: String },
}

/// Where a call is, as the interface's `callStatus` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallStatus {
    Queued,
    Initiated,
    Ringing,
    InProgress,
    Complete,
    NoAnswer,
    Failed,
}

impl CallStatus {
    pub const ALL: [CallStatus; 7] = [
        CallStatus::Queued,
        CallStatus::Initiated,
        CallStatus::Ringing,
        CallStatus::InProgress,
        CallStatus::Complete,
        CallStatus::NoAnswer,
        CallStatus::Failed,
    ];

    /// Reads a call record's `callStatus` back (any case); `None` for a status a client
    /// wrote that is not one of these.
    pub fn from_wire(status: &str) -> Option<CallStatus> {
        CallStatus::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(status))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Queued => "QUEUED",
            CallStatus::Initiated => "INITIATED",
            CallStatus::Ringing => "RINGING",
            CallStatus::InProgress => "IN_PROGRESS",
            CallStatus::Complete => "COMPLETE",
            CallStatus::NoAnswer => "NO_ANSWER",
            CallStatus::Failed => "FAILED",
        }
    }

    /// Whether the call is over.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            CallStatus::Complete | CallStatus::NoAnswer | CallStatus::Failed
        )
    }

    /// How far the call got: callbacks arrive out of order, and a status never replaces
    /// one of a higher rank (queued 0, initiated 1, ringing 2, in progress 3, final 4).
    pub fn rank(self) -> u8 {
        match self {
            CallStatus::Queued => 0,
            CallStatus::Initiated => 1,
            CallStatus::Ringing => 2,
            CallStatus::InProgress => 3,
            CallStatus::Complete | CallStatus::NoAnswer | CallStatus::Failed => 4,
        }
    }
}

impl SendOutcome {
    /// The outcome's name in the provider metric.
    pub fn result(&self) -> &'static str {
        match self {
            SendOutcome::Accepted { .. } => "accepted",
            SendOutcome::Refused { .. } | SendOutcome::Rejected { .. } => "refused",
            SendOutcome::Unknown { .. } => "unknown",
        }
    }
}

impl CallOutcome {
    /// The outcome's name in the provider metric.
    pub fn result(&self) -> &'static str {
        match self {
            CallOutcome::Accepted { .. } => "accepted",
            CallOutcome::Refused { .. } => "refused",
            CallOutcome::Unknown { .. } => "unknown",
        }
    }
}

/// The provider serving one channel of an organization.
#[derive(Debug, Clone, PartialEq)]
pub enum Provider {
    Sandbox(sandbox::Sandbox),
    Smtp(smtp::Smtp),
    Twilio(twilio::Twilio),
}

impl Provider {
    pub fn for_channel(settings: &EngineSettings, channel: Channel) -> Provider {
        let chosen = match channel {
            Channel::Sms => &settings.sms,
            Channel::Voice => &settings.voice,
            Channel::Email => &settings.email,
        };
        match chosen {
            ProviderSettings::Sandbox { latency_ms, .. } => {
                Provider::Sandbox(sandbox::Sandbox::new(*latency_ms))
            }
            ProviderSettings::Smtp(settings) => Provider::Smtp(smtp::Smtp::new(settings.clone())),
            ProviderSettings::Twilio(settings) => {
                Provider::Twilio(twilio::Twilio::new(settings.clone()))
            }
        }
    }

    /// The kind's name, for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Provider::Sandbox(_) => "sandbox",
            Provider::Smtp(_) => "smtp",
            Provider::Twilio(_) => "twilio",
        }
    }

    /// Sends a text to a phone number: the SMS channel's messages, and the voice
    /// channel's written ones (a notice or a text step on the voice channel goes out as
    /// an SMS from the voice provider's number). `on_retry` is called for each attempt
    /// the provider did not take and that is tried again (so a metric can count every
    /// request).
    pub async fn send_text(
        &self,
        client: &HttpClient,
        message: &Outgoing,
        on_retry: &(dyn Fn() + Sync),
    ) -> SendOutcome {
        match self {
            Provider::Sandbox(sandbox) => sandbox.accept(message).await,
            Provider::Smtp(_) => smtp::wrong_channel(),
            Provider::Twilio(twilio) => {
                twilio
                    .send_sms(
                        client,
                        message,
                        message.status_callback.as_deref(),
                        on_retry,
                    )
                    .await
            }
        }
    }

    pub async fn send_email(&self, client: &HttpClient, message: &Outgoing) -> SendOutcome {
        match self {
            Provider::Sandbox(sandbox) => sandbox.accept(message).await,
            Provider::Smtp(smtp) => smtp.send(client.trust(), message).await,
            Provider::Twilio(_) => smtp::wrong_channel(),
        }
    }

    /// Places `call`; the sandbox's calls complete at once, with no transcript.
    /// `on_retry` is called for each attempt the provider did not take and that is tried
    /// again.
    pub async fn start_call(
        &self,
        client: &HttpClient,
        call: &CallRequest,
        on_retry: &(dyn Fn() + Sync),
    ) -> CallOutcome {
        match self {
            Provider::Sandbox(sandbox) => sandbox.call(call).await,
            Provider::Smtp(_) => CallOutcome::Refused {
                code: smtp::UNSUPPORTED_CHANNEL.into(),
            },
            Provider::Twilio(twilio) => twilio.start_call(client, call, on_retry).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_statuses_name_rank_and_end() {
        let all = CallStatus::ALL;
        let names: Vec<_> = all.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            names,
            [
                "QUEUED",
                "INITIATED",
                "RINGING",
                "IN_PROGRESS",
                "COMPLETE",
                "NO_ANSWER",
                "FAILED"
            ]
        );
        let ranks: Vec<_> = all.iter().map(|s| s.rank()).collect();
        assert_eq!(ranks, [0, 1, 2, 3, 4, 4, 4]);
        let finals: Vec<_> = all.iter().map(|s| s.is_final()).collect();
        assert_eq!(finals, [false, false, false, false, true, true, true]);
    }

    #[tokio::test]
    async fn a_sandbox_call_completes_at_once() {
        let client = HttpClient::new(std::time::Duration::from_secs(1), None).unwrap();
        let call = CallRequest {
            to: "+15550100000".into(),
            twiml_url: String::new(),
            status_callback: String::new(),
            recording_callback: String::new(),
        };
        let sandbox = Provider::Sandbox(sandbox::Sandbox::new(0));
        match sandbox.start_call(&client, &call, &|| {}).await {
            CallOutcome::Accepted {
                provider_call_id,
                status,
            } => {
                assert!(provider_call_id.starts_with("sbx"));
                assert_eq!(status, CallStatus::Complete);
            }
            other => panic!("{other:?}"),
        }
    }
}

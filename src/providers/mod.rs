//! Channel providers: the seam between the engine and the outside world.
//!
//! A provider sends an SMS, an email, or starts a call, and says what became of it. It
//! never sees the store: the engine commits the attempt (`sending`) before calling it and
//! the outcome after, outside the writer. [`Provider::for_channel`] picks the provider an
//! organization configured for a channel; today that is the sandbox (nothing leaves the
//! machine). A real kind (Twilio-compatible SMS and voice, SMTP email) is a variant of
//! [`Provider`] and an arm in each method: the engine does not change.

pub mod relay;
pub mod sandbox;
pub mod smtp;
pub mod twilio;
pub mod twilio_signature;
pub mod twiml;

use crate::channel::Channel;
use crate::http_client::HttpClient;
use crate::store::records::{EngineSettings, ProviderSettings, SendStatus};

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
    /// Not known to have been taken (timeout, connection lost after the request was
    /// written): never retried by itself.
    Unknown { error: String },
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
            ProviderSettings::Sandbox { latency_ms } => {
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

    /// Sends an SMS; `on_retry` is called for each attempt the provider did not take
    /// and that is tried again (so a metric can count every request).
    pub async fn send_sms(
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

    pub async fn send_email(&self, _client: &HttpClient, message: &Outgoing) -> SendOutcome {
        match self {
            Provider::Sandbox(sandbox) => sandbox.accept(message).await,
            Provider::Smtp(smtp) => smtp.send(message).await,
            Provider::Twilio(_) => smtp::wrong_channel(),
        }
    }

    /// Places a call to `to`; the sandbox's calls complete at once, with no transcript.
    pub async fn start_call(&self, _client: &HttpClient, to: &str) -> SendOutcome {
        match self {
            Provider::Sandbox(sandbox) => sandbox.call(to).await,
            // Voice over Twilio comes with its own issue: until then a dial is refused.
            Provider::Smtp(_) | Provider::Twilio(_) => smtp::wrong_channel(),
        }
    }
}

//! Channels and message owners: the closed sets the interface names as strings.
//!
//! `Channel` is a way to reach a lead (`sms`, `voice`, `email`): subscriptions, the
//! compliance gate, messages and the engine's cadence steps all speak of it. `Owner` is
//! who wrote a message (`lead` or `user`, the organization's side). Wire names are
//! parsed once at the edge; inside, the compiler checks every `match`.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::store::records::{LeadRecord, Subscriptions};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Channel {
    Sms,
    Voice,
    Email,
}

impl Channel {
    pub const ALL: [Channel; 3] = [Channel::Sms, Channel::Voice, Channel::Email];

    pub fn parse(s: &str) -> Option<Channel> {
        match s {
            "sms" => Some(Channel::Sms),
            "voice" => Some(Channel::Voice),
            "email" => Some(Channel::Email),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Sms => "sms",
            Channel::Voice => "voice",
            Channel::Email => "email",
        }
    }

    pub fn reachable(self, lead: &LeadRecord) -> bool {
        match self {
            Channel::Sms | Channel::Voice => !lead.phone.is_empty(),
            Channel::Email => !lead.email.is_empty(),
        }
    }

    /// The interface's message when a requested channel has no target.
    pub(crate) fn missing_target(self) -> Error {
        match self {
            Channel::Email => Error::BadRequest("Lead has no email".into()),
            Channel::Sms | Channel::Voice => Error::BadRequest("Lead has no phone".into()),
        }
    }

    pub fn is_unsubscribed(self, s: &Subscriptions) -> bool {
        match self {
            Channel::Sms => s.sms_unsubscribed,
            Channel::Voice => s.voice_unsubscribed,
            Channel::Email => s.email_unsubscribed,
        }
    }

    pub(crate) fn set_unsubscribed(self, s: &mut Subscriptions, value: bool) {
        match self {
            Channel::Sms => s.sms_unsubscribed = value,
            Channel::Voice => s.voice_unsubscribed = value,
            Channel::Email => s.email_unsubscribed = value,
        }
    }
}

/// Who wrote a message: the lead, or the organization's side (`user`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Owner {
    Lead,
    User,
}

impl Owner {
    pub fn parse(s: &str) -> Option<Owner> {
        match s {
            "lead" => Some(Owner::Lead),
            "user" => Some(Owner::User),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Owner::Lead => "lead",
            Owner::User => "user",
        }
    }
}

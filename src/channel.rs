//! Channels, message owners and opt-out sources: the closed sets the interface names as
//! strings.
//!
//! `Channel` is a way to reach a lead (`sms`, `voice`, `email`): subscriptions, the
//! compliance gate, messages and the engine's cadence steps all speak of it. `Owner` is
//! who wrote a message (`lead` or `user`, the organization's side), `OptOutSource` where
//! an opt-out came from (`api`, `keyword`, `provider`). Wire names are
//! parsed once at the edge; inside, the compiler checks every `match`. A leaf: stored
//! records (a profile's steps) hold channels too. What a channel means for a lead
//! (reachable, unsubscribed) is written beside the lead's record in `store::rows`.

use serde::{Deserialize, Serialize};

/// Where a message was written: one of the [`Channel`]s, or the website's chat
/// (`webchat`), which is a place to talk, not a channel of consent or opt-out. Its
/// variants are `Channel`'s in `Channel`'s order with `Webchat` after them, so a stored
/// `Channel` (postcard writes a variant's index) reads as the same `Medium`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Medium {
    Sms,
    Voice,
    Email,
    Webchat,
}

impl Medium {
    /// The wire name: a channel's, or `webchat`.
    pub fn as_str(self) -> &'static str {
        match self {
            Medium::Sms => "sms",
            Medium::Voice => "voice",
            Medium::Email => "email",
            Medium::Webchat => "webchat",
        }
    }

    /// As a person reads it: `SMS`, `Voice`, `Email`, `Web chat`.
    pub fn words(self) -> &'static str {
        match self {
            Medium::Sms => "SMS",
            Medium::Voice => "Voice",
            Medium::Email => "Email",
            Medium::Webchat => "Web chat",
        }
    }
}

impl From<Channel> for Medium {
    fn from(channel: Channel) -> Medium {
        match channel {
            Channel::Sms => Medium::Sms,
            Channel::Voice => Medium::Voice,
            Channel::Email => Medium::Email,
        }
    }
}

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

/// Where an opt-out came from, as the `lead.opted_out` webhook says.
#[derive(Debug, Clone, Copy)]
pub enum OptOutSource {
    Api,
    Keyword,
    /// The provider refused a send because the recipient opted out with the carrier.
    Provider,
}

impl OptOutSource {
    pub fn as_str(self) -> &'static str {
        match self {
            OptOutSource::Api => "api",
            OptOutSource::Keyword => "keyword",
            OptOutSource::Provider => "provider",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_channel_reads_as_the_same_medium() {
        for channel in Channel::ALL {
            let bytes = postcard::to_allocvec(&channel).unwrap();
            let medium: Medium = postcard::from_bytes(&bytes).unwrap();
            assert_eq!(medium, Medium::from(channel));
            assert_eq!(medium.as_str(), channel.as_str());
        }
    }
}

//! What makes an event a message: its type (`MESSAGE` for SMS, `EMAIL`), an `owner` and
//! a `content` with `text`. Events, the engine's conversation and the contact rules
//! all read messages through [`MessageShape`].

use serde_json::Value;

use crate::channel::{Channel, Owner};

pub const MESSAGE: &str = "MESSAGE";
pub const EMAIL: &str = "EMAIL";

/// The event type of a message on `channel`: `EMAIL` for email, `MESSAGE` otherwise.
pub fn message_kind(channel: Channel) -> &'static str {
    match channel {
        Channel::Email => EMAIL,
        Channel::Sms | Channel::Voice => MESSAGE,
    }
}

/// What makes an event a message: type `MESSAGE` (SMS) or `EMAIL`, an `owner`, and a
/// `content` object with `text`.
pub struct MessageShape<'a> {
    pub owner: Owner,
    pub channel: Channel,
    pub content: &'a Value,
}

impl<'a> MessageShape<'a> {
    pub fn of(kind: &str, data: &'a Value) -> Option<MessageShape<'a>> {
        let channel = match kind {
            MESSAGE => Channel::Sms,
            EMAIL => Channel::Email,
            _ => return None,
        };
        let owner = Owner::parse(data.get("owner")?.as_str()?)?;
        let content = data.get("content")?;
        content.get("text")?.as_str()?;
        Some(MessageShape {
            owner,
            channel,
            content,
        })
    }
}

//! What makes an event a message: its type (`MESSAGE` for SMS, `EMAIL`, see
//! [`MessageKind`]), an `owner` and a `content` with `text`. Events, the engine's
//! conversation and the contact rules all read messages through [`MessageShape`].

use serde_json::Value;

use crate::channel::{Channel, Owner};
use crate::store::rows::MessageKind;

/// What makes an event a message: type `MESSAGE` (SMS) or `EMAIL`, an `owner`, and a
/// `content` object with `text`.
pub struct MessageShape<'a> {
    pub owner: Owner,
    pub channel: Channel,
    pub content: &'a Value,
}

impl<'a> MessageShape<'a> {
    pub fn of(kind: &str, data: &'a Value) -> Option<MessageShape<'a>> {
        let channel = MessageKind::parse(kind)?.channel();
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

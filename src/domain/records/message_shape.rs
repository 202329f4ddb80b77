//! What makes an event a message: its type (`MESSAGE` for SMS, `EMAIL`, see
//! [`MessageKind`]), an `owner` and a `content` with `text`. Events, the engine's
//! conversation and the contact rules all read messages through [`MessageShape`].

use serde_json::Value;

use crate::channel::{Channel, Medium, Owner};
use crate::store::rows::MessageKind;

/// What makes an event a message: type `MESSAGE` (SMS) or `EMAIL`, an `owner`, and a
/// `content` object with `text` (read with [`MessageShape::text`]).
pub struct MessageShape<'a> {
    pub owner: Owner,
    pub channel: Channel,
    /// Where it was written: `channel`, or `webchat` for a web chat's line (a
    /// `MESSAGE` whose `channel` is `webchat`: text like an SMS, never sent as one).
    pub medium: Medium,
    pub content: &'a Value,
    text: &'a str,
}

impl<'a> MessageShape<'a> {
    pub fn of(kind: &str, data: &'a Value) -> Option<MessageShape<'a>> {
        let channel = MessageKind::parse(kind)?.channel();
        let owner = Owner::parse(data.get("owner")?.as_str()?)?;
        let content = data.get("content")?;
        let text = content.get("text")?.as_str()?;
        let medium = match data.get("channel").and_then(Value::as_str) {
            Some("webchat") if channel == Channel::Sms => Medium::Webchat,
            _ => channel.into(),
        };
        Some(MessageShape {
            owner,
            channel,
            medium,
            content,
            text,
        })
    }

    /// The message's text: `content.text`, which every message has.
    pub fn text(&self) -> &'a str {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::MessageShape;
    use crate::channel::{Channel, Owner};

    #[test]
    fn text_is_the_contents_text() {
        let data = json!({"owner": "lead", "content": {"text": "Hi there", "subject": "S"}});
        let shape = MessageShape::of("EMAIL", &data).expect("a message");
        assert_eq!(shape.text(), "Hi there");
        assert_eq!(shape.owner, Owner::Lead);
        assert_eq!(shape.channel, Channel::Email);
    }

    #[test]
    fn without_a_text_it_is_not_a_message() {
        for data in [
            json!({"owner": "lead", "content": {}}),
            json!({"owner": "lead", "content": {"text": 5}}),
            json!({"owner": "lead"}),
        ] {
            assert!(MessageShape::of("MESSAGE", &data).is_none(), "{data}");
        }
    }
}

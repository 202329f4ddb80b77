//! Messages: SMS and email exchanged with a lead, stored once as `MESSAGE` / `EMAIL`
//! events and read back through the message projection.

use serde_json::{json, Map, Value};

use crate::channel::{Channel, Owner};
use crate::domain::records::events;
use crate::domain::records::leads;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::records::MessageKind;
use crate::store::{EventRow, WriteTx};

#[derive(Debug, Clone)]
pub struct MessageInput {
    pub owner: Owner,
    /// `Sms` or `Email`: a message is text.
    pub channel: Channel,
    pub content: Map<String, Value>,
    /// A message from the organization's side sent elsewhere: recorded, not sent.
    pub record_only: bool,
}

impl MessageInput {
    /// Parses `{"owner": "lead"|"user", "channel": "sms"|"email", "content": {"text",
    /// "subject"?}, "recordOnly"?: bool}`.
    pub fn from_json(body: Map<String, Value>) -> Result<MessageInput> {
        let (mut owner, mut channel, mut content) = (None, None, None);
        let mut record_only = false;
        for (name, value) in body {
            match (name.as_str(), value) {
                ("owner", Value::String(s)) => {
                    owner = Some(Owner::parse(&s).ok_or_else(|| Error::invalid_field("owner"))?)
                }
                ("owner", _) => return Err(Error::invalid_field("owner")),
                ("channel", Value::String(s)) => {
                    channel = match Channel::parse(&s) {
                        Some(c @ (Channel::Sms | Channel::Email)) => Some(c),
                        _ => return Err(Error::invalid_field("channel")),
                    }
                }
                ("channel", _) => return Err(Error::invalid_field("channel")),
                ("content", Value::Object(map)) if is_valid_content(&map) => content = Some(map),
                ("content", _) => return Err(Error::invalid_field("content")),
                ("recordOnly", Value::Bool(b)) => record_only = b,
                ("recordOnly", _) => return Err(Error::invalid_field("recordOnly")),
                (other, _) => return Err(Error::unknown_field(other)),
            }
        }
        let input = MessageInput {
            owner: owner.ok_or_else(|| Error::invalid_field("owner"))?,
            channel: channel.ok_or_else(|| Error::invalid_field("channel"))?,
            content: content.ok_or_else(|| Error::invalid_field("content"))?,
            record_only,
        };
        crate::domain::records::limits::message(&input.content, input.channel == Channel::Sms)?;
        Ok(input)
    }
}

/// A message's `content`: `{"text", "subject"?}`.
pub fn content(text: &str, subject: Option<&str>) -> Value {
    let mut content = json!({ "text": text });
    if let Some(subject) = subject {
        content["subject"] = json!(subject);
    }
    content
}

fn is_valid_content(content: &Map<String, Value>) -> bool {
    content.get("text").is_some_and(Value::is_string)
        && content.get("subject").is_none_or(Value::is_string)
}

/// Records a message on a lead. The compliance gate for outbound (`user`) messages
/// belongs in front of this call.
pub fn record(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    input: MessageInput,
) -> Result<EventRow> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let kind = MessageKind::of(input.channel).as_str();
    let id = crate::ids::generate("msg");
    let data = json!({"owner": input.owner.as_str(), "channel": input.channel.as_str(), "content": input.content});
    let (row, _) = events::record(tx, &caller.org_id, lead, kind, &id, data, |_| {})?;
    Ok(row)
}

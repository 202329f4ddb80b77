//! Messages: SMS and email exchanged with a lead, stored once as `MESSAGE` / `EMAIL`
//! events and read back through the message projection.

use serde_json::{json, Map, Value};

use crate::channel::{Channel, Owner};
use crate::domain::records::events;
use crate::domain::records::leads;
use crate::domain::records::written::Written;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::MessageKind;
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

    /// The message's text: `content.text`, which `from_json` requires.
    pub fn text(&self) -> &str {
        self.content
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
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

/// An inbound email's `content`: `{"text", "subject"?, "messageId"?, "references"?}`,
/// the two headers as the sender wrote them (ids in angle brackets, `references`
/// space-separated): what a reply threads to ([`thread_of`]).
pub fn email_content(text: &str, subject: Option<&str>, headers: &EmailHeaders) -> Value {
    let mut content = content(text, subject);
    if let Some(id) = &headers.message_id {
        content["messageId"] = json!(id);
    }
    if !headers.references.is_empty() {
        content["references"] = json!(headers.references.join(" "));
    }
    content
}

/// The threading headers of an inbound email: its `Message-Id` and `References`, each
/// id `<...>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmailHeaders {
    pub message_id: Option<String>,
    pub references: Vec<String>,
}

/// At most this many ids are kept of a `References` header (the newest: the root is
/// kept too, as RFC 5322 suggests trimming from the middle).
const MAX_REFERENCES: usize = 20;
/// The longest message id kept, in bytes.
const MAX_ID_BYTES: usize = 250;

impl EmailHeaders {
    /// From the raw header values; ids that do not look like ids are left out.
    pub fn parse(message_id: Option<&str>, references: Option<&str>) -> EmailHeaders {
        let mut refs = message_ids(references.unwrap_or(""));
        if refs.len() > MAX_REFERENCES {
            let tail = refs.split_off(refs.len() - (MAX_REFERENCES - 1));
            refs.truncate(1);
            refs.extend(tail);
        }
        EmailHeaders {
            message_id: message_ids(message_id.unwrap_or("")).into_iter().next(),
            references: refs,
        }
    }
}

/// The message ids of a header value: each `<...>`, or (for a value without angle
/// brackets) each word with an `@`, bracketed; printable ASCII without spaces only.
pub fn message_ids(raw: &str) -> Vec<String> {
    let valid = |id: &str| {
        !id.is_empty()
            && id.len() <= MAX_ID_BYTES
            && id.contains('@')
            && id
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b'<' && b != b'>')
    };
    let ids: Vec<&str> = if raw.contains('<') {
        raw.split('<')
            .skip(1)
            .filter_map(|part| part.split_once('>').map(|(id, _)| id.trim()))
            .collect()
    } else {
        raw.split_whitespace().collect()
    };
    ids.into_iter()
        .filter(|id| valid(id))
        .map(|id| format!("<{id}>"))
        .collect()
}

/// What a reply to an email threads to, read from its stored `content`: the email
/// headers of the reply (`In-Reply-To` its id, `References` its references then its
/// id) and its subject.
pub fn thread_of(content: &Value) -> (Option<crate::providers::EmailThread>, Option<String>) {
    let text = |name: &str| content.get(name).and_then(Value::as_str);
    let headers = EmailHeaders::parse(text("messageId"), text("references"));
    let thread = headers.message_id.map(|id| {
        let mut references = headers.references;
        references.retain(|r| *r != id);
        references.push(id.clone());
        crate::providers::EmailThread {
            in_reply_to: id,
            references,
        }
    });
    (thread, text("subject").map(str::to_string))
}

/// How mail programs mark a reply in the subject, in their languages (`Re:`, German
/// `AW:`, Scandinavian `SV:`, Dutch `Antw:`, Finnish `VS:`, Polish `Odp:`, Italian
/// `R:`/`Rif:`, Portuguese `Res:`, Turkish `YNT:`, Chinese `回复:`/`答复:`).
const REPLY_PREFIXES: [&str; 12] = [
    "re", "aw", "sv", "antw", "vs", "odp", "r", "rif", "res", "ynt", "回复", "答复",
];

/// `Re: <subject>`, without a second mark when it has one already, `Re:` or a mail
/// program's own in its language (`AW:`, `SV:`, ...: `REPLY_PREFIXES`, any case);
/// `None` for an empty subject.
pub fn reply_subject(subject: &str) -> Option<String> {
    let subject = crate::carrier_text::line(subject);
    if subject.is_empty() {
        return None;
    }
    let marked = subject.split_once([':', '：']).is_some_and(|(prefix, _)| {
        let prefix = prefix.trim().to_lowercase();
        REPLY_PREFIXES.contains(&prefix.as_str())
    });
    Some(if marked {
        subject
    } else {
        format!("Re: {subject}")
    })
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
) -> Result<Written<EventRow>> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let kind = MessageKind::of(input.channel).as_str();
    let id = crate::ids::generate("msg");
    let data = json!({"owner": input.owner.as_str(), "channel": input.channel.as_str(), "content": input.content});
    let written = events::record(tx, &caller.org_id, lead, kind, &id, data, |_| {})?;
    Ok(written.map(|(row, _)| row))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_part_of_the_message_at_fault() {
        let refused = |content: Value| {
            let body = json!({"owner": "user", "channel": "email", "content": content});
            let Value::Object(body) = body else {
                unreachable!()
            };
            let e = MessageInput::from_json(body).unwrap_err();
            (e.refused_field().map(str::to_string), e.to_string())
        };
        let long = "x".repeat(crate::domain::records::limits::SUBJECT_CHARS + 1);
        assert_eq!(
            refused(json!({"text": "hi", "subject": long})),
            (
                Some("content.subject".into()),
                "Field too long: content.subject (at most 1000)".into()
            )
        );
        let long = "x".repeat(crate::domain::records::limits::MESSAGE_CHARS + 1);
        assert_eq!(
            refused(json!({"text": long})).0.as_deref(),
            Some("content.text")
        );
        assert_eq!(
            refused(json!({"subject": "no text"})),
            (
                Some("content".into()),
                "Invalid format for field: content".into()
            )
        );
    }

    #[test]
    fn reply_subjects_and_message_ids() {
        assert_eq!(reply_subject("Quote").as_deref(), Some("Re: Quote"));
        assert_eq!(reply_subject("RE: Quote").as_deref(), Some("RE: Quote"));
        for marked in [
            "AW: Angebot",
            "SV: Tilbud",
            "Antw: Offerte",
            "aw:x",
            "回复：报价",
        ] {
            assert_eq!(reply_subject(marked).as_deref(), Some(marked));
        }
        // A colon in the subject that is not a reply mark.
        assert_eq!(
            reply_subject("Price: 12 panels").as_deref(),
            Some("Re: Price: 12 panels")
        );
        assert_eq!(
            reply_subject("a\r\nBcc: x").as_deref(),
            Some("Re: a Bcc: x")
        );
        assert_eq!(reply_subject(" "), None);
        assert_eq!(message_ids("<a@b> <c@d>\r\n <bad> x"), ["<a@b>", "<c@d>"]);
        assert_eq!(message_ids("a@b"), ["<a@b>"]);
        let (thread, subject) = thread_of(
            &json!({"text": "t", "subject": "S", "messageId": "<m@x>", "references": "<r@x> <m@x>"}),
        );
        let thread = thread.unwrap();
        assert_eq!(thread.in_reply_to, "<m@x>");
        assert_eq!(thread.references, ["<r@x>", "<m@x>"]);
        assert_eq!(subject.as_deref(), Some("S"));
    }
}

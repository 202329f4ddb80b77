//! Bounds on every stored value a client or the assistant writes, in one place.
//!
//! The store has one writer: a lead or event of unbounded size makes every later write
//! that touches it slow, and that write holds the writer for every other organization.
//! So each value is bounded (decisions.md, "Limits on stored values"), and a value over
//! its bound is 400 `Field too long: NAME (at most N)` or `Too many: NAME (at most N)`;
//! a lead's text with a character no carrier takes (a control character, U+FFFE/FFFF,
//! a bidi control: `characters`) is 400 `Invalid format for field: NAME`.
//! The domain functions the API and the assistant's tools share call these checks
//! before they write anything, so a refusal changes nothing and both paths obey the
//! same bounds. Lengths of text are in characters (Unicode scalar values); sizes "as
//! JSON" are bytes of the compact serialisation.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::store::rows::{CallDetails, LeadRecord, TagRecord};

/// `firstName`, `lastName`.
pub const NAME_CHARS: usize = 200;
/// `email` (RFC 5321's longest usable address).
pub const EMAIL_CHARS: usize = 254;
/// `externalLeadId`, `secondaryCrmLeadId`, `customerProfile`.
pub const REFERENCE_CHARS: usize = 200;
/// A lead's or a call's `summary`.
pub const SUMMARY_CHARS: usize = 10_000;
/// A tag's `id` and `name`.
pub const TAG_CHARS: usize = 100;
/// A tag's `condition`. Kept small: a lead carries up to 100 tags and is rewritten on
/// every event of its own, so tags make most of a full lead's size (at 1,000, another
/// organization's write p99 beside a full lead was 2.7× its value beside a small one).
pub const TAG_CONDITION_CHARS: usize = 200;
/// Tags in one request, and on one lead.
pub const TAGS: usize = 100;
/// Keys of `additionalInfo`.
pub const ADDITIONAL_INFO_KEYS: usize = 100;
/// `additionalInfo` as JSON, in bytes (16 KiB).
pub const ADDITIONAL_INFO_BYTES: usize = 16 * 1024;
/// An event's `data` as JSON, in bytes (64 KiB); a message's whole `content` too.
pub const EVENT_DATA_BYTES: usize = 64 * 1024;
/// A message's text.
pub const MESSAGE_CHARS: usize = 10_000;
/// A received SMS's text, and the characters an SMS step may be written with.
pub const SMS_CHARS: usize = 1_600;
/// The most segments an SMS sent by engaged takes (ten: the most carriers join;
/// 1,530 characters, or 670 with an emoji or a character outside GSM-7).
pub const MAX_SMS_SEGMENTS: usize = 10;
/// An email's subject.
pub const SUBJECT_CHARS: usize = 1_000;
/// An email's text (a profile's email step, before and after rendering).
pub const EMAIL_TEXT_CHARS: usize = 100_000;
/// A profile's `instructions` to the assistant.
pub const INSTRUCTIONS_CHARS: usize = 20_000;
/// What a call says: a profile's `voiceGreeting` and a voice step's text.
pub const GREETING_CHARS: usize = 2_000;
/// A profile's dispositions.
pub const DISPOSITIONS: usize = 50;
/// A disposition's `description`.
pub const DISPOSITION_DESCRIPTION_CHARS: usize = 1_000;
/// Profiles of one organization.
pub const PROFILES: usize = 200;
/// Turns of a call's transcript.
pub const TRANSCRIPT_TURNS: usize = 2_000;
/// The text of one transcript turn.
pub const TURN_CHARS: usize = 4_000;
/// One transcript turn as JSON, in bytes: its text (up to 4 bytes a character) with room
/// for its other fields.
pub const TURN_BYTES: usize = 20 * 1024;
/// A call's short strings: `callStatus`, `sessionId`, `dispositionId`,
/// `dispositionName`, numbers.
pub const CALL_FIELD_CHARS: usize = 200;

/// The most characters a step's text on `channel` may have, as written and as rendered
/// for a lead: an SMS's, an email's or what a call says.
pub fn step_text_chars(channel: crate::channel::Channel) -> usize {
    use crate::channel::Channel;
    match channel {
        Channel::Sms => SMS_CHARS,
        Channel::Email => EMAIL_TEXT_CHARS,
        Channel::Voice => GREETING_CHARS,
    }
}

/// A text to send by SMS: at most [`MAX_SMS_SEGMENTS`] segments, else 400 in words
/// naming the field, its segments and what fits.
pub fn sms_text(name: &str, value: &str) -> Result<()> {
    let segments = crate::sms_segments::Segments::of(value);
    if segments.count <= MAX_SMS_SEGMENTS {
        return Ok(());
    }
    let (plain, wide) = crate::sms_segments::capacity(MAX_SMS_SEGMENTS);
    Err(Error::field(
        name,
        format!(
            "Too long for one SMS: {} segments (at most {MAX_SMS_SEGMENTS}: {plain} characters, or {wide} with an emoji or a character outside the GSM alphabet)",
            segments.count
        ),
    ))
}

/// A step's or a message's text on `channel`: within its characters, and an SMS
/// within its segments.
pub fn channel_text(name: &str, channel: crate::channel::Channel, value: &str) -> Result<()> {
    text(name, value, step_text_chars(channel))?;
    if channel == crate::channel::Channel::Sms {
        sms_text(name, value)?;
    }
    Ok(())
}

/// 400 `Field too long: NAME (at most N)`, refusing the field `name`.
pub fn too_long(name: &str, max: usize) -> Error {
    Error::field(name, format!("Field too long: {name} (at most {max})"))
}

/// 400 `Too many: NAME (at most N)`, refusing the field `name`.
pub fn too_many(name: &str, max: usize) -> Error {
    Error::field(name, format!("Too many: {name} (at most {max})"))
}

/// `value` has at most `max` characters.
pub fn text(name: &str, value: &str, max: usize) -> Result<()> {
    // Bytes bound characters from above: most values need no count.
    if value.len() > max && value.chars().count() > max {
        return Err(too_long(name, max));
    }
    Ok(())
}

/// `count` is at most `max`.
pub fn count(name: &str, count: usize, max: usize) -> Result<()> {
    if count > max {
        return Err(too_many(name, max));
    }
    Ok(())
}

/// `value` serialises to at most `max` bytes of JSON.
pub fn json_size(name: &str, value: &impl serde::Serialize, max: usize) -> Result<()> {
    let mut counter = Counter(0);
    // Writing into a counter cannot fail but for a value that cannot be serialised.
    serde_json::to_writer(&mut counter, value).map_err(|_| Error::invalid_field(name))?;
    if counter.0 > max {
        return Err(too_long(name, max));
    }
    Ok(())
}

/// Counts bytes written, keeping none.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Tags in one request: counted before repeated ids are merged.
pub fn tags_in_request(count_in_request: usize) -> Result<()> {
    count("tags", count_in_request, TAGS)
}

/// One tag's fields.
pub fn tag(tag: &TagRecord) -> Result<()> {
    // The name first: the assistant's `add_tag` gives only a name (its id is a slug of
    // it), so that is what its refusal names.
    text("tags.name", &tag.name, TAG_CHARS)?;
    text("tags.id", &tag.id, TAG_CHARS)?;
    text("tags.condition", &tag.condition, TAG_CONDITION_CHARS)?;
    characters("tags.name", &tag.name, false)?;
    characters("tags.id", &tag.id, false)?;
    characters("tags.condition", &tag.condition, false)
}

/// A lead about to be written over `old` (none when new): every bounded field that
/// changed is within its bound. Fields left as they were are not checked again, so a
/// lead stored before these bounds can still be written (touched by an event, say).
pub fn lead(old: Option<&LeadRecord>, new: &LeadRecord) -> Result<()> {
    type Field = fn(&LeadRecord) -> &str;
    let changed = |f: Field| old.is_none_or(|o| f(o) != f(new));
    let strings: [(&str, Field, usize); 7] = [
        ("firstName", |l| &l.first_name, NAME_CHARS),
        ("lastName", |l| &l.last_name, NAME_CHARS),
        ("email", |l| &l.email, EMAIL_CHARS),
        ("externalLeadId", |l| &l.external_lead_id, REFERENCE_CHARS),
        (
            "secondaryCrmLeadId",
            |l| &l.secondary_crm_lead_id,
            REFERENCE_CHARS,
        ),
        ("customerProfile", |l| &l.customer_profile, REFERENCE_CHARS),
        ("summary", |l| &l.summary, SUMMARY_CHARS),
    ];
    for (name, field, max) in strings {
        if changed(field) {
            text(name, field(new), max)?;
            characters(name, field(new), name == "summary")?;
        }
    }
    if old.is_none_or(|o| o.tags != new.tags) {
        count("tags", new.tags.len(), TAGS)?;
        for t in &new.tags {
            tag(t)?;
        }
    }
    if old.is_none_or(|o| o.additional_info != new.additional_info) {
        let info = &new.additional_info.0;
        if let Value::Object(map) = info {
            count("additionalInfo", map.len(), ADDITIONAL_INFO_KEYS)?;
        }
        json_size("additionalInfo", info, ADDITIONAL_INFO_BYTES)?;
        if !json_strings_are_valid(info) {
            return Err(Error::invalid_field("additionalInfo"));
        }
    }
    Ok(())
}

/// 400 `Invalid format for field: NAME` when `value` holds a character no carrier
/// takes (`carrier_text::field_is_valid`): a control character (but a tab, newline or
/// carriage return in a `multi_line` field), U+FFFE/U+FFFF, a bidi control.
pub fn characters(name: &str, value: &str, multi_line: bool) -> Result<()> {
    if crate::carrier_text::field_is_valid(value, multi_line) {
        Ok(())
    } else {
        Err(Error::invalid_field(name))
    }
}

/// Every string in `value` (keys too) passes the multi-line rule of [`characters`].
fn json_strings_are_valid(value: &Value) -> bool {
    let valid = |s: &str| crate::carrier_text::field_is_valid(s, true);
    match value {
        Value::String(s) => valid(s),
        Value::Array(items) => items.iter().all(json_strings_are_valid),
        Value::Object(map) => map
            .iter()
            .all(|(k, v)| valid(k) && json_strings_are_valid(v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => true,
    }
}

/// An event's `data`.
pub fn event_data(data: &Map<String, Value>) -> Result<()> {
    json_size("data", data, EVENT_DATA_BYTES)
}

/// A message's `content` (`{"text", "subject"?}`) on `sms` (true) or email.
pub fn message(content: &Map<String, Value>, sms: bool) -> Result<()> {
    let body = content.get("text").and_then(Value::as_str).unwrap_or("");
    let max = if sms { SMS_CHARS } else { MESSAGE_CHARS };
    text("content.text", body, max)?;
    if sms {
        sms_text("content.text", body)?;
    }
    if let Some(subject) = content.get("subject").and_then(Value::as_str) {
        text("content.subject", subject, SUBJECT_CHARS)?;
    }
    json_size("content", content, EVENT_DATA_BYTES)
}

/// An inbound message's text (and subject): the bounds of [`message`].
pub fn inbound(text_value: &str, subject: Option<&str>, sms: bool) -> Result<()> {
    let max = if sms { SMS_CHARS } else { MESSAGE_CHARS };
    text("text", text_value, max)?;
    if let Some(subject) = subject {
        text("subject", subject, SUBJECT_CHARS)?;
    }
    Ok(())
}

/// A call's fields as they will be stored over `before`: those that changed are within
/// their bounds (a call stored before these bounds can still change its status).
pub fn call(before: &CallDetails, after: &CallDetails) -> Result<()> {
    type Field = fn(&CallDetails) -> &Option<String>;
    let strings: [(&str, Field, usize); 7] = [
        ("sessionId", |d| &d.session_id, CALL_FIELD_CHARS),
        ("callStatus", |d| &d.call_status, CALL_FIELD_CHARS),
        ("transferNumber", |d| &d.transfer_number, CALL_FIELD_CHARS),
        (
            "fallbackTransferNumber",
            |d| &d.fallback_transfer_number,
            CALL_FIELD_CHARS,
        ),
        ("dispositionId", |d| &d.disposition_id, CALL_FIELD_CHARS),
        ("dispositionName", |d| &d.disposition_name, CALL_FIELD_CHARS),
        ("summary", |d| &d.summary, SUMMARY_CHARS),
    ];
    for (name, field, max) in strings {
        if let (Some(value), true) = (field(after), field(before) != field(after)) {
            text(name, value, max)?;
        }
    }
    if let (Some(transcript), true) = (&after.transcript, before.transcript != after.transcript) {
        if let Ok(Value::Array(turns)) = transcript.to_value() {
            transcript_turns(&turns)?;
        }
    }
    Ok(())
}

/// A transcript's turns: at most [`TRANSCRIPT_TURNS`], each with a text of at most
/// [`TURN_CHARS`] and at most [`TURN_BYTES`] as JSON.
pub fn transcript_turns(turns: &[Value]) -> Result<()> {
    count("transcript", turns.len(), TRANSCRIPT_TURNS)?;
    for turn in turns {
        if let Some(t) = turn.get("text").and_then(Value::as_str) {
            text("transcript.text", t, TURN_CHARS)?;
        }
        json_size("transcript.turn", turn, TURN_BYTES)?;
    }
    Ok(())
}

/// `s` cut to at most `max` characters: for text the engine itself stores (a spoken
/// turn), which is shortened rather than lost.
pub fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::JsonBlob;
    use serde_json::json;

    #[test]
    fn bounds_count_characters_and_name_the_field() {
        assert!(text("firstName", &"é".repeat(200), NAME_CHARS).is_ok());
        assert_eq!(
            text("firstName", &"é".repeat(201), NAME_CHARS)
                .unwrap_err()
                .to_string(),
            "Field too long: firstName (at most 200)"
        );
        assert_eq!(
            count("tags", 101, TAGS).unwrap_err().to_string(),
            "Too many: tags (at most 100)"
        );
        assert_eq!(truncate("héllo", 2), "hé");
        assert_eq!(truncate("hé", 5), "hé");
    }

    #[test]
    fn only_changed_lead_fields_are_checked() {
        let old = LeadRecord {
            summary: "x".repeat(SUMMARY_CHARS + 1),
            ..LeadRecord::default()
        };
        let mut new = old.clone();
        new.first_name = "Ada".into();
        assert!(lead(Some(&old), &new).is_ok());
        assert!(lead(None, &new).is_err());
        new.additional_info = JsonBlob(json!({"k": "v".repeat(ADDITIONAL_INFO_BYTES)}));
        assert_eq!(
            lead(Some(&old), &new).unwrap_err().to_string(),
            "Field too long: additionalInfo (at most 16384)"
        );
    }
}

//! Where a lead's conversation stands, kept in the write of every event
//! (`events::record` calls [`on_event`]): whether it has one, its last message (who
//! wrote it, whether it is the lead's and unanswered), when the lead last wrote, the
//! newest send that failed, whether a person answered since the assistant handed
//! the lead off, and whether the newest message to the lead was a meeting's
//! confirmation or reminder. The inbox and the
//! "Needs attention" reasons read this (through the lead search's index), never the
//! events.

use serde_json::Value;

use crate::channel::Owner;
use crate::domain::records::message_shape::MessageShape;
use crate::error::Result;
use crate::store::rows::{Author, FailedSend, LastMessage, MessageKind, SendStatus, SystemEvent};
use crate::store::{Reader, WriteTx};
use crate::time::{now_micros, Micros};

/// How much of the last message the inbox shows.
pub const PREVIEW_CHARS: usize = 80;

/// Updates lead `lead`'s conversation state for event (`kind`, `id`) just written with
/// `data`, created at `created_at`.
pub fn on_event(
    tx: &mut WriteTx,
    org: &str,
    lead: &str,
    kind: &str,
    id: &str,
    data: &Value,
    created_at: Micros,
) -> Result<()> {
    let old = tx.handling(org, lead)?;
    let mut new = old.clone();
    if kind == SystemEvent::Call.as_str() {
        new.conversation = true;
    }
    if let Some(shape) = MessageShape::of(kind, data) {
        new.conversation = true;
        let newest = new
            .last_message
            .as_ref()
            .is_none_or(|last| last.event_id == id || created_at >= last.created_at);
        if newest {
            let text = shape.text();
            new.last_message = Some(LastMessage {
                event_id: id.to_string(),
                channel: shape.medium,
                preview: text.chars().take(PREVIEW_CHARS).collect(),
                created_at,
                from_lead: shape.owner == Owner::Lead,
                author: Author::of(shape.owner == Owner::Lead, data),
            });
            new.awaiting_reply = shape.owner == Owner::Lead;
        }
        if shape.owner == Owner::Lead && new.last_inbound_at.is_none_or(|at| created_at > at) {
            new.last_inbound_at = Some(created_at);
        }
        let origin = data.get("origin").and_then(Value::as_str);
        if newest && shape.owner == Owner::User {
            new.meeting_message = origin == Some("meeting");
        }
        if shape.owner == Owner::User && origin == Some("human") {
            new.handoff_answered = true;
            // A person wrote to the lead: they have seen the calendar change too.
            new.calendar_change = None;
            new.call_back = None;
        }
        let status = data
            .get("status")
            .and_then(Value::as_str)
            .and_then(SendStatus::parse);
        let failed = matches!(status, Some(SendStatus::Failed | SendStatus::Unknown));
        let same = new.failed_send.as_ref().is_some_and(|f| f.event_id == id);
        if failed && shape.owner == Owner::User && !same {
            if let Some(kind) = MessageKind::parse(kind) {
                new.failed_send = Some(FailedSend {
                    kind,
                    event_id: id.to_string(),
                    at: now_micros(),
                });
            }
        } else if same && !failed {
            new.failed_send = None;
        }
    }
    if new != old {
        tx.put_handling(org, lead, &new)?;
    }
    Ok(())
}

/// Whether lead `lead` wrote something `user` has not seen: its newest own message
/// (`last_inbound_at`) is newer than what the user saw on its page (`seen`). What makes
/// an inbox row bold, per person.
pub fn unread(last_inbound_at: Option<Micros>, seen: Option<Micros>) -> bool {
    match (last_inbound_at, seen) {
        (Some(wrote), Some(seen)) => wrote > seen,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Records that `user` opened lead `lead`'s page having seen its own messages up to
/// `upto`; a write only when that moves the user's mark forward.
pub fn mark_seen(tx: &mut WriteTx, org: &str, user: &str, lead: &str, upto: Micros) -> Result<()> {
    tx.put_seen(org, user, lead, upto)?;
    Ok(())
}

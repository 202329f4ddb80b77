//! Interaction events: the upsert by (type, id) and what it does to its lead.
//!
//! Every event write, whether from `POST /events`, a message or a call, goes through
//! [`record`]: it moves the event's row to a fresh commit-ordered `updatedAt`, keeps the
//! message projection in step, and moves the lead's `lastActivityAt` and `updatedAt`.
//! A message from the lead also stops the lead's cadence (`replied`): like a campaign's
//! counters, a reaction of engagement the returned `Written` owes.

use serde_json::{Map, Value};

use crate::channel::Owner;
use crate::domain::records::leads;
use crate::domain::records::message_shape::MessageShape;
use crate::domain::records::written::{Reaction, Written};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{EventRecord, JsonBlob, LeadRecord, SystemEvent};
use crate::store::{EventKey, EventRow, WriteTx};

/// A client's event write.
#[derive(Debug, Clone)]
pub struct EventInput {
    pub kind: String,
    pub id: Option<String>,
    pub data: Map<String, Value>,
}

impl EventInput {
    /// Parses `{"type", "id"?, "data"?}`.
    pub fn from_json(body: Map<String, Value>) -> Result<EventInput> {
        let mut kind = None;
        let mut id = None;
        let mut data = Map::new();
        for (name, value) in body {
            match (name.as_str(), value) {
                ("type", Value::String(s)) if s == SystemEvent::Consent.as_str() => {
                    return Err(Error::field(
                        "type",
                        "CONSENT events are written through POST /v1/leads/{id}/consent",
                    ))
                }
                ("type", Value::String(s)) if is_valid_type(&s) => kind = Some(s),
                ("type", _) => return Err(Error::invalid_field("type")),
                ("id", Value::Null) => {}
                ("id", Value::String(s)) if crate::ids::is_valid_client_id(&s) => id = Some(s),
                ("id", _) => return Err(Error::invalid_field("id")),
                ("data", Value::Object(map)) => data = map,
                ("data", Value::Null) => {}
                ("data", _) => return Err(Error::invalid_field("data")),
                (other, _) => return Err(Error::unknown_field(other)),
            }
        }
        let kind = kind.ok_or_else(|| Error::BadRequest("Missing required field: type".into()))?;
        crate::domain::records::limits::event_data(&data)?;
        Ok(EventInput { kind, id, data })
    }
}

/// Types are free-form, but a comma would break the `types` filter and blanks are
/// certainly mistakes.
pub fn is_valid_type(kind: &str) -> bool {
    (1..=64).contains(&kind.len())
        && !kind
            .chars()
            .any(|c| c == ',' || c.is_whitespace() || c.is_control())
}

/// `POST /v1/leads/{id}/events`.
pub fn upsert(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    input: EventInput,
) -> Result<Written<EventRow>> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let id = input.id.unwrap_or_else(|| crate::ids::generate("evt"));
    let written = record(
        tx,
        &caller.org_id,
        lead,
        &input.kind,
        &id,
        Value::Object(input.data),
        |_| {},
    )?;
    Ok(written.map(|(row, _)| row))
}

/// Writes event (kind, id) of `lead` with `data` and records the activity on the lead;
/// `flags` may set lead flags the event implies. Owes, in this order, the event's
/// reaction (a campaign's counters), the lead's, and a message from the lead's.
pub fn record(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    kind: &str,
    id: &str,
    data: Value,
    flags: impl FnOnce(&mut LeadRecord),
) -> Result<Written<(EventRow, LeadRecord)>> {
    let lead_id = lead.id.clone();
    let key = EventKey {
        org,
        lead: &lead_id,
        kind,
        id,
    };
    let updated_at = tx.tick();
    let (existing, record) = tx.upsert_event(key, updated_at, |existing| EventRecord {
        created_at: existing.map_or(updated_at, |(_, r)| r.created_at),
        data: JsonBlob(data),
    })?;
    let created_at = record.created_at;
    let was_message = existing
        .as_ref()
        .is_some_and(|(_, r)| MessageShape::of(kind, &r.data.0).is_some());
    let message = MessageShape::of(kind, &record.data.0);
    let replied = message.as_ref().is_some_and(|m| m.owner == Owner::Lead);
    let is_message = message.is_some();
    // Engagement reads none of the rows written here: its reaction to the event owed
    // after them counts what it counted before them.
    let reacted = Written::owing(
        (),
        Reaction::Event {
            org: org.to_string(),
            lead: lead_id.clone(),
            kind: kind.to_string(),
            old: existing.map(|(_, r)| r.data.0),
            new: record.data.0.clone(),
            created_at,
        },
    );
    crate::domain::records::conversation::on_event(
        tx,
        org,
        &lead_id,
        kind,
        id,
        &record.data.0,
        created_at,
    )?;
    if was_message != is_message {
        tx.set_message_row(key, created_at, is_message)?;
    }
    let mut written = reacted.and_then(|()| {
        leads::touch(tx, org, lead, updated_at, |l| {
            if replied && kind == SystemEvent::Message.as_str() {
                l.has_replied = true;
            }
            if replied && kind == SystemEvent::Email.as_str() {
                l.has_replied_email = true;
            }
            flags(l);
        })
    })?;
    if replied {
        // Any message from the lead stops its cadence.
        written = written.and_owing(Reaction::Replied {
            org: org.to_string(),
            lead: lead_id,
        });
    }
    let row = EventRow {
        updated_at,
        kind: kind.to_string(),
        id: id.to_string(),
        record,
    };
    Ok(written.map(|lead| (row, lead)))
}

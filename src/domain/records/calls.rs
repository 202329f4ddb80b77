//! Calls: the upsert of a call record and the `CALL` event that mirrors it on its lead.
//!
//! `PUT /v1/calls/{id}` merges: a field left out keeps its stored value, a `null`
//! clears it. The `CALL` event carries only the summary fields (direction, status,
//! duration, transfer flags), never the transcript or the AI summary, which clients
//! fetch from the call itself.

use serde_json::{json, Map, Value};

use crate::domain::records::events;
use crate::domain::records::leads;
use crate::domain::records::written::Written;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{
    CallDetails, CallRecord, LeadRecord, RawJson, SystemEvent, TransferStatus,
};
use crate::store::Reader;
use crate::store::WriteTx;
use crate::webhooks::{self, WebhookEvent};

/// The changes one write makes to a call: the fields it sets and those it clears.
/// `PUT /v1/calls/{id}` reads one from its body (`from_json`); engaged's own voice
/// code builds one (`CallInput::set`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallInput {
    /// The fields this write sets; a field left `None` keeps its stored value (unless
    /// cleared).
    pub set: CallDetails,
    /// The fields this write clears (`null` in a body), by their wire names as the body
    /// gave them: a name that is no field of a call refuses the write when it is merged
    /// (400 `Invalid call: ...`), as it always has.
    pub cleared: Vec<String>,
}

impl CallInput {
    /// A write that sets the fields of `details` that are `Some`.
    pub fn set(details: CallDetails) -> CallInput {
        CallInput {
            set: details,
            cleared: Vec::new(),
        }
    }

    /// Reads a `PUT` body. `id`, `createdAt` and `updatedAt` may be echoed back from a
    /// `GET`; the server owns them, so they are dropped (an `id` other than the path's
    /// is refused). Each member set is checked on its own, so the error names the field
    /// at fault.
    pub fn from_json(call_id: &str, body: &Map<String, Value>) -> Result<CallInput> {
        match body.get("id") {
            None => {}
            Some(Value::String(id)) if id == call_id => {}
            Some(_) => return Err(Error::BadRequest("id does not match the path".into())),
        }
        let mut set = Map::new();
        let mut cleared = Vec::new();
        for (name, value) in body {
            if matches!(name.as_str(), "id" | "createdAt" | "updatedAt") {
                continue;
            }
            if value.is_null() {
                cleared.push(name.clone());
                continue;
            }
            let single = Value::Object(Map::from_iter([(name.clone(), value.clone())]));
            if let Err(e) = serde_json::from_value::<CallDetails>(single) {
                return Err(if e.to_string().starts_with("unknown field") {
                    Error::unknown_field(name)
                } else {
                    Error::invalid_field(name)
                });
            }
            set.insert(name.clone(), value.clone());
        }
        let set = serde_json::from_value(Value::Object(set))
            .map_err(|e| Error::BadRequest(format!("Invalid call: {e}")))?;
        Ok(CallInput { set, cleared })
    }
}

/// Creates or updates call `call_id`; returns the call and whether it was created
/// (owing engagement's reactions to its `CALL` event).
pub fn put(
    tx: &mut WriteTx,
    caller: &Caller,
    call_id: &str,
    changes: CallInput,
) -> Result<Written<(CallRecord, bool)>> {
    upsert(tx, caller, call_id, changes, Owner::Required)
}

/// Whether a new call must name its lead (or webchat session).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// A client's `PUT`.
    Required,
    /// A call from a number no lead has, answered by the engine.
    Optional,
}

/// [`put`] for a call the engine answered from a caller no live lead has: it is stored
/// without `leadId` (and without a `CALL` event, having no lead to carry it).
pub fn put_unattached(
    tx: &mut WriteTx,
    caller: &Caller,
    call_id: &str,
    changes: CallInput,
) -> Result<Written<(CallRecord, bool)>> {
    upsert(tx, caller, call_id, changes, Owner::Optional)
}

/// Replaces the transcript of call `call_id` (a turn appended as the call goes). Only
/// the call record changes: its `CALL` event carries no transcript.
pub fn set_transcript(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    transcript: &Value,
) -> Result<CallRecord> {
    let mut call = tx
        .call(org, call_id)?
        .ok_or_else(|| Error::NotFound(format!("Resource not found: Call {call_id}")))?;
    call.details.transcript = Some(RawJson::from_value(transcript));
    call.updated_at = tx.tick();
    tx.put_call(org, &call)?;
    Ok(call)
}

fn upsert(
    tx: &mut WriteTx,
    caller: &Caller,
    call_id: &str,
    changes: CallInput,
    owner: Owner,
) -> Result<Written<(CallRecord, bool)>> {
    // As on lead creation: an id that could never be stored is malformed, not missing.
    if !crate::ids::is_valid_client_id(call_id) {
        return Err(Error::invalid_field("id"));
    }
    let org = caller.org_id.as_str();
    let existing = tx.call(org, call_id)?;
    let before = existing
        .as_ref()
        .map(|c| c.details.clone())
        .unwrap_or_default();
    let details = merge(&before, changes)?;
    validate(
        &before,
        &details,
        existing.is_none() && owner == Owner::Required,
    )?;
    crate::domain::records::limits::call(&before, &details)?;

    let lead = match &details.lead_id {
        Some(lead_id) => Some(leads::live_lead(tx, caller, lead_id)?),
        None => None,
    };
    let now = tx.tick();
    let mut call = CallRecord {
        id: call_id.to_string(),
        created_at: existing.as_ref().map_or(now, |c| c.created_at),
        updated_at: now,
        details,
        notified: existing.as_ref().map(|c| c.notified).unwrap_or_default(),
    };
    notify(tx, org, &mut call, lead.as_ref())?;
    tx.put_call(org, &call)?;
    let created = existing.is_none();
    let Some(lead) = lead else {
        return Ok(Written::owing_nothing((call, created)));
    };
    let d = &call.details;
    let (ai, transfer) = (d.is_ai_initiated == Some(true), d.is_transfer == Some(true));
    let written = events::record(
        tx,
        org,
        lead,
        SystemEvent::Call.as_str(),
        call_id,
        call_event_data(&call),
        |l| {
            l.has_ai_call |= ai;
            l.has_transfer_call |= transfer;
        },
    )?;
    Ok(written.map(|_| (call, created)))
}

/// `before` with the input's fields set and cleared.
fn merge(before: &CallDetails, changes: CallInput) -> Result<CallDetails> {
    let object = |details: &CallDetails| match serde_json::to_value(details) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(Error::Internal(
            "call details do not serialise to an object".into(),
        )),
    };
    // Every field is a member of both (`null` when unset).
    let mut merged = object(before)?;
    for (name, value) in object(&changes.set)? {
        if !value.is_null() {
            merged.insert(name, value);
        }
    }
    for name in changes.cleared {
        merged.insert(name, Value::Null);
    }
    serde_json::from_value(Value::Object(merged))
        .map_err(|e| Error::BadRequest(format!("Invalid call: {e}")))
}

/// `owner_required`: a new call from a client, which must name its lead or session.
fn validate(before: &CallDetails, after: &CallDetails, owner_required: bool) -> Result<()> {
    if owner_required && after.lead_id.is_none() && after.session_id.is_none() {
        return Err(Error::BadRequest("leadId or sessionId is required".into()));
    }
    if before.lead_id.is_some() && after.lead_id != before.lead_id {
        return Err(Error::BadRequest("leadId cannot be changed".into()));
    }
    if after.direction.is_none() {
        return Err(Error::BadRequest(
            "Missing required field: direction".into(),
        ));
    }
    if after.call_status.is_none() {
        return Err(Error::BadRequest(
            "Missing required field: callStatus".into(),
        ));
    }
    if after
        .call_status
        .as_deref()
        .is_some_and(|s| s.trim().is_empty())
    {
        return Err(Error::invalid_field("callStatus"));
    }
    // The interface defines a transcript as an array of objects (its turns); the members
    // engaged itself writes, when a client sends them, have the types engaged writes
    // (the OpenAPI document's `TranscriptTurn`), so every reader can rely on them.
    let is_turn = |turn: &Value| {
        turn.as_object().is_some_and(|members| {
            members.iter().all(|(name, value)| match name.as_str() {
                "role" | "text" | "at" | "dtmf" => value.is_string(),
                "interrupted" => value.is_boolean(),
                _ => true,
            })
        })
    };
    let is_turns = |t: &RawJson| {
        t.to_value()
            .is_ok_and(|t| t.as_array().is_some_and(|turns| turns.iter().all(is_turn)))
    };
    if after.transcript.as_ref().is_some_and(|t| !is_turns(t)) {
        return Err(Error::invalid_field("transcript"));
    }
    for (name, number) in [
        ("transferNumber", &after.transfer_number),
        ("fallbackTransferNumber", &after.fallback_transfer_number),
    ] {
        if number
            .as_deref()
            .is_some_and(|n| crate::phone::normalize(n).as_deref() != Some(n))
        {
            return Err(Error::invalid_field(name));
        }
    }
    Ok(())
}

/// The `data` of a call's `CALL` event.
pub fn call_event_data(call: &CallRecord) -> Value {
    let d = &call.details;
    let base = json!({
        "direction": d.direction,
        "callStatus": d.call_status,
        "durationSeconds": d.duration_seconds.unwrap_or(0),
    });
    with_known(
        base,
        [
            ("isTransfer", json!(d.is_transfer)),
            ("midCallTransfer", json!(d.mid_call_transfer)),
            ("transferStatus", json!(d.transfer_status)),
        ],
    )
}

/// Statuses of a call still under way; every other status is terminal.
const ONGOING: [&str; 5] = ["QUEUED", "INITIATED", "RINGING", "IN_PROGRESS", "RUNNING"];

pub fn is_terminal(status: &str) -> bool {
    !ONGOING.contains(&status.to_ascii_uppercase().as_str())
}

/// Queues the once-only call webhooks whose moment has come, in the call's own
/// transaction, and remembers on the call that they were sent.
fn notify(
    tx: &mut WriteTx,
    org: &str,
    call: &mut CallRecord,
    lead: Option<&LeadRecord>,
) -> Result<()> {
    let d = &call.details;
    let terminal = d.call_status.as_deref().is_some_and(is_terminal);
    if terminal && !call.notified.completed {
        call.notified.completed = true;
        webhooks::emit(tx, org, WebhookEvent::CallCompleted, completed_data(call))?;
    }
    let d = &call.details;
    if let (true, false, Some(lead)) = (terminal, call.notified.dispositioned, lead) {
        if d.disposition_id.is_some() {
            call.notified.dispositioned = true;
            webhooks::emit(
                tx,
                org,
                WebhookEvent::CallDispositioned,
                dispositioned_data(call, lead),
            )?;
        }
    }
    let d = &call.details;
    if let (Some(status), false) = (d.transfer_status, call.notified.transfer) {
        call.notified.transfer = true;
        let event = match status {
            TransferStatus::Connected => WebhookEvent::CallTransferConnected,
            TransferStatus::Failed => WebhookEvent::CallTransferFailed,
        };
        webhooks::emit(tx, org, event, transfer_data(call))?;
    }
    Ok(())
}

/// Adds the fields of `pairs` whose value is known: optional fields are omitted, never
/// null.
fn with_known<'a>(mut data: Value, pairs: impl IntoIterator<Item = (&'a str, Value)>) -> Value {
    for (name, value) in pairs {
        if !value.is_null() {
            data[name] = value;
        }
    }
    data
}

fn completed_data(call: &CallRecord) -> Value {
    let d = &call.details;
    let base = json!({
        "callId": call.id,
        "direction": d.direction,
        "callStatus": d.call_status,
        "durationSeconds": d.duration_seconds.unwrap_or(0),
    });
    with_known(
        base,
        [
            ("leadId", json!(d.lead_id)),
            ("sessionId", json!(d.session_id)),
            ("summary", json!(d.summary)),
            ("isTransfer", json!(d.is_transfer)),
            ("midCallTransfer", json!(d.mid_call_transfer)),
            ("transferStatus", json!(d.transfer_status)),
        ],
    )
}

/// Exactly the fields the interface lists for `call.dispositioned`.
fn dispositioned_data(call: &CallRecord, lead: &LeadRecord) -> Value {
    let d = &call.details;
    let base = json!({
        "leadId": lead.id,
        "phone": lead.phone,
        "profile": lead.customer_profile,
        "callId": call.id,
        "durationSeconds": d.duration_seconds.unwrap_or(0),
        "direction": d.direction,
        "dispositionId": d.disposition_id,
    });
    let text = |s: &str| if s.is_empty() { Value::Null } else { json!(s) };
    with_known(
        base,
        [
            ("externalLeadId", text(&lead.external_lead_id)),
            ("secondary_crm_leadId", text(&lead.secondary_crm_lead_id)),
            ("summary", json!(d.summary)),
            ("midCallTransfer", json!(d.mid_call_transfer)),
            ("isTransfer", json!(d.is_transfer)),
            ("dispositionName", json!(d.disposition_name)),
            (
                "dispositionClassifiedAt",
                json!(d.disposition_classified_at),
            ),
        ],
    )
}

fn transfer_data(call: &CallRecord) -> Value {
    let d = &call.details;
    let base = json!({"callId": call.id, "transferStatus": d.transfer_status});
    with_known(
        base,
        [
            ("leadId", json!(d.lead_id)),
            ("sessionId", json!(d.session_id)),
            ("transferFailureCode", json!(d.transfer_failure_code)),
            ("transferNumber", json!(d.transfer_number)),
            (
                "transferWaitDurationSeconds",
                json!(d.transfer_wait_duration_seconds),
            ),
            (
                "midCallTransferDuration",
                json!(d.mid_call_transfer_duration),
            ),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::Direction;

    fn read(value: Value) -> Result<CallInput> {
        match value {
            Value::Object(body) => CallInput::from_json("call-1", &body),
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn a_body_is_read_member_by_member_with_the_interface_messages() {
        let refused = |value: Value| read(value).unwrap_err();
        let e = refused(json!({"durationSeconds": "long"}));
        assert_eq!(e.to_string(), "Invalid format for field: durationSeconds");
        assert_eq!(e.refused_field(), Some("durationSeconds"));
        assert_eq!(
            refused(json!({"colour": "red"})).to_string(),
            "Unknown field: colour"
        );
        assert_eq!(
            refused(json!({"id": "call-2"})).to_string(),
            "id does not match the path"
        );
        assert_eq!(
            refused(json!({"direction": "SIDEWAYS"})).refused_field(),
            Some("direction")
        );
    }

    #[test]
    fn echoed_members_are_dropped_and_nulls_clear() {
        let input = read(json!({
            "id": "call-1", "createdAt": "x", "updatedAt": "y",
            "direction": "INBOUND", "summary": null
        }))
        .unwrap();
        assert_eq!(input.set.direction, Some(Direction::Inbound));
        assert_eq!(input.cleared, vec!["summary".to_string()]);
        let before = CallDetails {
            summary: Some("old".into()),
            call_status: Some("RINGING".into()),
            ..CallDetails::default()
        };
        let merged = merge(&before, input).unwrap();
        assert_eq!(merged.summary, None);
        assert_eq!(merged.call_status.as_deref(), Some("RINGING"));
        assert_eq!(merged.direction, Some(Direction::Inbound));
        // A cleared name that is no field refuses the write when merged, as before.
        let unknown = read(json!({"bogus": null})).unwrap();
        let e = merge(&before, unknown).unwrap_err().to_string();
        assert!(e.starts_with("Invalid call: unknown field `bogus`"), "{e}");
    }
}

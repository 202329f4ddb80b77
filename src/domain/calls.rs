//! Calls: the upsert of a call record and the `CALL` event that mirrors it on its lead.
//!
//! `PUT /v1/calls/{id}` merges: a field left out keeps its stored value, a `null`
//! clears it. The `CALL` event carries only the summary fields (direction, status,
//! duration, transfer flags), never the transcript or the AI summary, which clients
//! fetch from the call itself.

use serde_json::{json, Map, Value};

use super::{events, leads, Caller};
use crate::error::{Error, Result};
use crate::store::records::{CallDetails, CallRecord};
use crate::store::WriteTx;

pub const CALL: &str = "CALL";

/// Parses a `PUT` body into the fields it sets. `id`, `createdAt` and `updatedAt` may be
/// echoed back from a `GET`; the server owns them, so they are dropped (an `id` other
/// than the path's is refused).
pub fn parse_details(call_id: &str, mut body: Map<String, Value>) -> Result<Map<String, Value>> {
    match body.remove("id") {
        None => {}
        Some(Value::String(id)) if id == call_id => {}
        Some(_) => return Err(Error::BadRequest("id does not match the path".into())),
    }
    body.remove("createdAt");
    body.remove("updatedAt");
    // Check field by field so the error names the field at fault.
    for (name, value) in &body {
        if value.is_null() {
            continue;
        }
        let single = Value::Object(Map::from_iter([(name.clone(), value.clone())]));
        if let Err(e) = serde_json::from_value::<CallDetails>(single) {
            return Err(if e.to_string().starts_with("unknown field") {
                Error::BadRequest(format!("Unknown field: {name}"))
            } else {
                Error::invalid_field(name)
            });
        }
    }
    Ok(body)
}

/// Creates or updates call `call_id`; returns the call and whether it was created.
pub fn put(
    tx: &mut WriteTx,
    caller: &Caller,
    call_id: &str,
    changes: Map<String, Value>,
) -> Result<(CallRecord, bool)> {
    if !crate::ids::is_valid_client_id(call_id) {
        return Err(Error::NotFound("Call not found".into()));
    }
    let org = caller.org_id.as_str();
    let existing = tx.call(org, call_id)?;
    let before = existing
        .as_ref()
        .map(|c| c.details.clone())
        .unwrap_or_default();
    let details = merge(&before, changes)?;
    validate(&before, &details, existing.is_none())?;

    let lead = match &details.lead_id {
        Some(lead_id) => Some(leads::live_lead(tx, caller, lead_id)?),
        None => None,
    };
    let now = tx.tick();
    let call = CallRecord {
        id: call_id.to_string(),
        created_at: existing.as_ref().map_or(now, |c| c.created_at),
        updated_at: now,
        details,
    };
    tx.put_call(org, &call)?;
    if let Some(lead) = lead {
        let d = &call.details;
        let (ai, transfer) = (d.is_ai_initiated == Some(true), d.is_transfer == Some(true));
        events::record(tx, org, lead, CALL, call_id, call_event_data(&call), |l| {
            l.has_ai_call |= ai;
            l.has_transfer_call |= transfer;
        })?;
    }
    Ok((call, existing.is_none()))
}

fn merge(before: &CallDetails, changes: Map<String, Value>) -> Result<CallDetails> {
    let mut merged = match serde_json::to_value(before) {
        Ok(Value::Object(map)) => map,
        _ => {
            return Err(Error::Internal(
                "call details do not serialise to an object".into(),
            ))
        }
    };
    for (name, value) in changes {
        merged.insert(name, value);
    }
    serde_json::from_value(Value::Object(merged))
        .map_err(|e| Error::BadRequest(format!("Invalid call: {e}")))
}

fn validate(before: &CallDetails, after: &CallDetails, creating: bool) -> Result<()> {
    if creating {
        if after.lead_id.is_none() && after.session_id.is_none() {
            return Err(Error::BadRequest("leadId or sessionId is required".into()));
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
    } else {
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
    }
    if after
        .call_status
        .as_deref()
        .is_some_and(|s| s.trim().is_empty())
    {
        return Err(Error::invalid_field("callStatus"));
    }
    if after.transcript.as_ref().is_some_and(|t| !t.0.is_array()) {
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
    let mut data = json!({
        "direction": d.direction,
        "callStatus": d.call_status,
        "durationSeconds": d.duration_seconds.unwrap_or(0),
    });
    for (name, value) in [
        ("isTransfer", json!(d.is_transfer)),
        ("midCallTransfer", json!(d.mid_call_transfer)),
        ("transferStatus", json!(d.transfer_status)),
    ] {
        if !value.is_null() {
            data[name] = value;
        }
    }
    data
}

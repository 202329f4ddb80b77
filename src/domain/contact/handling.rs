//! Who handles a lead besides the assistant: a person taking it over and handing it
//! back, the assistant handing it off, and the `USER_ACTION` event that names the
//! person behind every change made in the console.
//!
//! Taking over is the assistant switch (`controls::set_ai`, so the cadence pauses as
//! `turn-off` pauses it) plus an owner; handing back is the switch on again (which
//! answers an unanswered message, as `turn-on` does) and no owner. The owner lives in
//! `lead_handling`, beside the lead record, and in the lead search's index.

use serde_json::{json, Value};

use crate::domain::contact::controls;
use crate::domain::records::{events, leads};
use crate::domain::Caller;
use crate::error::Result;
use crate::store::rows::{LeadRecord, Person, SystemEvent};
use crate::store::{EventRow, Reader, WriteTx};

/// What a person did, as a `USER_ACTION` event's `action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    TakeOver,
    HandBack,
    Unsubscribe,
    Resubscribe,
    AddToDnc,
    AddTag,
    RemoveTag,
    MarkHot,
    MarkQualified,
    Delete,
    /// "Send again" of a failed send (a new message follows).
    RetrySend,
    /// "Dismiss" of a failed send.
    DismissFailure,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::TakeOver => "take_over",
            Action::HandBack => "hand_back",
            Action::Unsubscribe => "unsubscribe",
            Action::Resubscribe => "resubscribe",
            Action::AddToDnc => "add_to_dnc",
            Action::AddTag => "add_tag",
            Action::RemoveTag => "remove_tag",
            Action::MarkHot => "mark_hot",
            Action::MarkQualified => "mark_qualified",
            Action::Delete => "delete",
            Action::RetrySend => "retry_send",
            Action::DismissFailure => "dismiss_failure",
        }
    }
}

/// Records that `person` did `action` to `lead`: a `USER_ACTION` event
/// `{"action", "userId", "name", ...details}`.
pub fn record_action(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    person: &Person,
    action: Action,
    details: Value,
) -> Result<EventRow> {
    let mut data = json!({
        "action": action.as_str(),
        "userId": person.user_id,
        "name": person.name,
    });
    if let (Value::Object(data), Value::Object(details)) = (&mut data, details) {
        data.extend(details);
    }
    let id = crate::ids::generate("act");
    let (row, _) = events::record(
        tx,
        org,
        lead,
        SystemEvent::UserAction.as_str(),
        &id,
        data,
        |_| {},
    )?;
    Ok(row)
}

/// "Take over": the assistant goes off for this lead and `person` owns it. Taking over
/// a lead one already owns with the assistant off changes nothing.
pub fn take_over(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
) -> Result<LeadRecord> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let mut handling = tx.handling(&caller.org_id, lead_id)?;
    if handling.owner == person.user_id && !lead.is_ai_on {
        return Ok(lead);
    }
    let lead = controls::set_ai(tx, caller, lead_id, false)?;
    handling.owner = person.user_id.clone();
    tx.put_handling(&caller.org_id, lead_id, &handling)?;
    record_action(
        tx,
        &caller.org_id,
        lead,
        person,
        Action::TakeOver,
        json!({}),
    )?;
    leads::live_lead(tx, caller, lead_id)
}

/// "Hand back": the assistant goes on, the owner and a hand-off are cleared, and an
/// unanswered last message from the lead gets its reply (as `turn-on`).
pub fn hand_back(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
) -> Result<LeadRecord> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let mut handling = tx.handling(&caller.org_id, lead_id)?;
    if lead.is_ai_on && handling.owner.is_empty() && handling.handed_off_at.is_none() {
        return Ok(lead);
    }
    let lead = controls::set_ai(tx, caller, lead_id, true)?;
    handling.owner.clear();
    handling.handed_off_at = None;
    handling.handoff_answered = false;
    tx.put_handling(&caller.org_id, lead_id, &handling)?;
    record_action(
        tx,
        &caller.org_id,
        lead,
        person,
        Action::HandBack,
        json!({}),
    )?;
    leads::live_lead(tx, caller, lead_id)
}

/// A person deals with the lead's failed send `event_id`: "Send again" (`RetrySend`,
/// the new message is sent after this) or "Dismiss". Either way the failure leaves
/// "Needs attention"; a failure that is no longer the lead's is 409. Answers the failed
/// send and its message's `content`.
pub fn clear_failed_send(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    event_id: &str,
    action: Action,
) -> Result<(crate::store::rows::FailedSend, Value)> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let mut handling = tx.handling(&caller.org_id, lead_id)?;
    let failed = match handling.failed_send.take() {
        Some(failed) if failed.event_id == event_id => failed,
        _ => {
            return Err(crate::error::Error::Conflict(
                "This failed send was already dealt with".into(),
            ))
        }
    };
    let key = crate::store::EventKey {
        org: &caller.org_id,
        lead: lead_id,
        kind: failed.kind.as_str(),
        id: event_id,
    };
    let content = tx
        .event(key)?
        .and_then(|(_, event)| event.data.0.get("content").cloned())
        .unwrap_or_default();
    tx.put_handling(&caller.org_id, lead_id, &handling)?;
    record_action(
        tx,
        &caller.org_id,
        lead,
        person,
        action,
        json!({"messageId": event_id}),
    )?;
    Ok((failed, content))
}

/// The assistant handed the lead off to a person (its `handoff` tool).
pub fn handed_off(tx: &mut WriteTx, org: &str, lead_id: &str) -> Result<()> {
    let mut handling = tx.handling(org, lead_id)?;
    handling.handed_off_at = Some(crate::time::now_micros());
    handling.handoff_answered = false;
    tx.put_handling(org, lead_id, &handling)?;
    Ok(())
}

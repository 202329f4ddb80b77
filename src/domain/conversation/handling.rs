//! Who handles a lead besides the assistant, and what a person does to a lead: every
//! person-action ([`PersonAction`], the one list of them: the console routes its lead
//! page's forms by it) is one function here, holding its rules and recording the
//! `USER_ACTION` event that names the person, in the same write job.
//!
//! Taking over is the assistant switch (`subscriptions::set_ai`, so the cadence pauses as
//! `turn-off` pauses it) plus an owner; handing back is the switch on again (which
//! answers an unanswered message, as `turn-on` does) and no owner. The owner lives in
//! `lead_handling`, beside the lead record, and in the lead search's index. The other
//! actions call the domain functions the API's operations call (`controls`, `dnc`,
//! `leads`), so each rule has one code path.

use serde_json::{json, Value};

use crate::channel::Channel;
use crate::domain::conversation::hold;
use crate::domain::engagement::add_to_campaign::{self, Skip};
use crate::domain::engagement::reactions::React;
use crate::domain::records::consent::{self, ConsentInput};
use crate::domain::records::subscriptions;
use crate::domain::records::{dnc, events, leads};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{
    ConsentSource, FailedSend, HandlingRecord, LeadRecord, Person, Proof, RecordedBy, SystemEvent,
    TagRecord,
};
use crate::store::{EventRow, Reader, WriteTx};

/// What a person does to a lead: each is one function of this module, and its
/// `USER_ACTION` event's `action` is [`PersonAction::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonAction {
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
    /// "Record consent": consent given or revoked on the phone, into the ledger.
    RecordConsent,
    /// "Opt out" of a lead held by a possible opt-out.
    ConfirmOptOut,
    /// "Not an opt-out" of a lead held by a possible opt-out.
    DismissOptOut,
    /// "Save field": an additional field (`additionalInfo`) added or changed.
    SetField,
    /// "Remove field": an additional field removed.
    RemoveField,
    /// "Add to campaign": the lead follows a profile's cadence from step 1.
    AddToCampaign,
    /// "Seen" of a meeting the owner changed in their calendar.
    SeenCalendarChange,
    /// "Called back": the call back a transfer nobody took left is done.
    CalledBack,
}

impl PersonAction {
    pub fn as_str(self) -> &'static str {
        match self {
            PersonAction::TakeOver => "take_over",
            PersonAction::HandBack => "hand_back",
            PersonAction::Unsubscribe => "unsubscribe",
            PersonAction::Resubscribe => "resubscribe",
            PersonAction::AddToDnc => "add_to_dnc",
            PersonAction::AddTag => "add_tag",
            PersonAction::RemoveTag => "remove_tag",
            PersonAction::MarkHot => "mark_hot",
            PersonAction::MarkQualified => "mark_qualified",
            PersonAction::Delete => "delete",
            PersonAction::RetrySend => "retry_send",
            PersonAction::DismissFailure => "dismiss_failure",
            PersonAction::RecordConsent => "record_consent",
            PersonAction::ConfirmOptOut => "confirm_opt_out",
            PersonAction::DismissOptOut => "dismiss_opt_out",
            PersonAction::SetField => "set_field",
            PersonAction::RemoveField => "remove_field",
            PersonAction::AddToCampaign => "add_to_campaign",
            PersonAction::SeenCalendarChange => "seen_calendar_change",
            PersonAction::CalledBack => "called_back",
        }
    }
}

/// One thing a person does to a lead, with what they said: read from the console's
/// form once (`console::lead`), applied by [`act`] in one write. The actions that send
/// (`RetrySend`) or record consent (`RecordConsent`) have their own paths.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    TakeOver,
    HandBack,
    /// Unsubscribe or resubscribe `channels` (`None`: every one the lead can receive).
    Subscription {
        channels: Option<Vec<Channel>>,
        change: Subscription,
    },
    AddToDnc,
    AddTag(TagRecord),
    /// The tag's id.
    RemoveTag(String),
    MarkHot,
    MarkQualified,
    /// The failed send's event id.
    DismissFailure(String),
    /// "Opt out" (`true`) or "Not an opt-out" of a held lead.
    DecideOptOut(bool),
    /// An `additionalInfo` key set to a value, or removed (`None`).
    SetField {
        key: String,
        value: Option<String>,
    },
    /// The profile's name.
    AddToCampaign(String),
    SeenCalendarChange,
    CalledBack,
    Delete,
}

impl Command {
    /// The action this command is (its `USER_ACTION` name and its route).
    pub fn action(&self) -> PersonAction {
        match self {
            Command::TakeOver => PersonAction::TakeOver,
            Command::HandBack => PersonAction::HandBack,
            Command::Subscription {
                change: Subscription::Unsubscribe,
                ..
            } => PersonAction::Unsubscribe,
            Command::Subscription { .. } => PersonAction::Resubscribe,
            Command::AddToDnc => PersonAction::AddToDnc,
            Command::AddTag(_) => PersonAction::AddTag,
            Command::RemoveTag(_) => PersonAction::RemoveTag,
            Command::MarkHot => PersonAction::MarkHot,
            Command::MarkQualified => PersonAction::MarkQualified,
            Command::DismissFailure(_) => PersonAction::DismissFailure,
            Command::DecideOptOut(true) => PersonAction::ConfirmOptOut,
            Command::DecideOptOut(false) => PersonAction::DismissOptOut,
            Command::SetField { value: Some(_), .. } => PersonAction::SetField,
            Command::SetField { value: None, .. } => PersonAction::RemoveField,
            Command::AddToCampaign(_) => PersonAction::AddToCampaign,
            Command::SeenCalendarChange => PersonAction::SeenCalendarChange,
            Command::CalledBack => PersonAction::CalledBack,
            Command::Delete => PersonAction::Delete,
        }
    }
}

/// `person` does `command` to lead `lead_id`: the one entry of a person's actions, each
/// through its function below (its rules and its `USER_ACTION`). A campaign a rule
/// skips is refused as that rule says (`Skip::error`).
pub fn act(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    command: &Command,
) -> Result<()> {
    match command {
        Command::TakeOver => take_over(tx, caller, person, lead_id).map(drop),
        Command::HandBack => hand_back(tx, caller, person, lead_id).map(drop),
        Command::Subscription { channels, change } => {
            set_subscription(tx, caller, person, lead_id, channels.as_deref(), change)
        }
        Command::AddToDnc => add_to_dnc(tx, caller, person, lead_id),
        Command::AddTag(tag) => add_tag(tx, caller, person, lead_id, tag.clone()),
        Command::RemoveTag(tag) => remove_tag(tx, caller, person, lead_id, tag),
        Command::MarkHot => mark_hot(tx, caller, person, lead_id),
        Command::MarkQualified => mark_qualified(tx, caller, person, lead_id),
        Command::DismissFailure(event) => dismiss_failure(tx, caller, person, lead_id, event),
        Command::DecideOptOut(confirm) => decide_opt_out(tx, caller, person, lead_id, *confirm),
        Command::SetField { key, value } => {
            set_field(tx, caller, person, lead_id, key, value.as_deref())
        }
        Command::AddToCampaign(profile) => {
            add_to_campaign(tx, caller, person, lead_id, profile, None)?
                .map_err(|skip| skip.error(lead_id, profile))
        }
        Command::SeenCalendarChange => see_calendar_change(tx, caller, person, lead_id),
        Command::CalledBack => called_back(tx, caller, person, lead_id),
        Command::Delete => delete(tx, caller, person, lead_id),
    }
}

/// Records that `person` did `action` to `lead`: a `USER_ACTION` event
/// `{"action", "userId", "name", ...details}`.
pub fn record_action(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    person: &Person,
    action: PersonAction,
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
    )
    .react(tx)?;
    Ok(row)
}

/// "Add to campaign": the lead follows `profile`'s cadence from step 1
/// (`add_to_campaign::add`), its `USER_ACTION` naming the person and the campaign
/// (`{"profile", "job"?}`, the bulk enrolment's id when one did it). A lead a rule
/// skips answers `Ok(Err(skip))` with nothing written.
pub fn add_to_campaign(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    profile: &str,
    job: Option<&str>,
) -> Result<std::result::Result<(), Skip>> {
    let lead = match add_to_campaign::add(tx, caller, lead_id, profile)? {
        Ok(lead) => lead,
        Err(skip) => return Ok(Err(skip)),
    };
    let mut details = json!({"profile": profile});
    if let Some(job) = job {
        details["job"] = json!(job);
    }
    let action = PersonAction::AddToCampaign;
    record_action(tx, &caller.org_id, lead, person, action, details)?;
    Ok(Ok(()))
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
    let lead = subscriptions::set_ai(tx, caller, lead_id, false).react(tx)?;
    handling.owner = person.user_id.clone();
    tx.put_handling(&caller.org_id, lead_id, &handling)?;
    record_action(
        tx,
        &caller.org_id,
        lead,
        person,
        PersonAction::TakeOver,
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
    let lead = subscriptions::set_ai(tx, caller, lead_id, true).react(tx)?;
    handling.owner.clear();
    handling.handed_off_at = None;
    handling.handoff_answered = false;
    tx.put_handling(&caller.org_id, lead_id, &handling)?;
    record_action(
        tx,
        &caller.org_id,
        lead,
        person,
        PersonAction::HandBack,
        json!({}),
    )?;
    leads::live_lead(tx, caller, lead_id)
}

/// What a person does to a lead's subscriptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscription {
    Unsubscribe,
    /// With the proof of the lead's new consent (the lead's words), which a channel the
    /// lead revoked needs.
    Resubscribe(Proof),
}

/// "Unsubscribe" or "Resubscribe" the lead from `requested` channels (`None`: every
/// one), as `unsubscribe` and `resubscribe` do; the event names the channels that
/// changed.
pub fn set_subscription(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    requested: Option<&[Channel]>,
    change: &Subscription,
) -> Result<()> {
    let (applied, action) = match change {
        Subscription::Resubscribe(proof) => {
            let request = subscriptions::Resubscribe {
                channels: requested.map(<[Channel]>::to_vec),
                proof: proof.clone(),
            };
            let applied = subscriptions::resubscribe(tx, caller, lead_id, &request).react(tx)?;
            (applied, PersonAction::Resubscribe)
        }
        Subscription::Unsubscribe => {
            let applied = subscriptions::unsubscribe(tx, caller, lead_id, requested).react(tx)?;
            (applied, PersonAction::Unsubscribe)
        }
    };
    let names: Vec<&str> = applied.iter().map(|c| c.as_str()).collect();
    let lead = leads::live_lead(tx, caller, lead_id)?;
    record_action(
        tx,
        &caller.org_id,
        lead,
        person,
        action,
        json!({"channels": names}),
    )
    .map(drop)
}

/// "Record consent": `input` (`ConsentInput::spoken`, the lead's words and this
/// person) into the lead's consent ledger, as `POST .../consent` writes it.
pub fn record_consent(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    input: ConsentInput,
) -> Result<()> {
    let entry = consent::post(tx, caller, lead_id, input).react(tx)?;
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let details = json!({
        "channel": entry.channel.as_str(),
        "status": entry.status.as_str(),
        "purpose": entry.purpose.as_str(),
        "consentId": entry.event_id,
    });
    record_action(
        tx,
        &caller.org_id,
        lead,
        person,
        PersonAction::RecordConsent,
        details,
    )
    .map(drop)
}

/// "Add to DNC": the lead's phone joins the organization's DNC list (as `POST
/// /v1/dnc`); a lead without a phone is refused.
pub fn add_to_dnc(tx: &mut WriteTx, caller: &Caller, person: &Person, lead_id: &str) -> Result<()> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    if lead.phone.is_empty() {
        return Err(Error::BadRequest("Lead has no phone".into()));
    }
    let phone = lead.phone.clone();
    record_action(
        tx,
        &caller.org_id,
        lead,
        person,
        PersonAction::AddToDnc,
        json!({"phone": phone}),
    )?;
    dnc::register(tx, caller, &phone).react(tx)
}

/// "Opt out" (`confirm`) or "Not an opt-out" of a lead a possible opt-out holds
/// (`conversation::hold`): an opt-out with the lead's words as proof (source `reply`,
/// recorded by `person`) and one confirmation, or the cadence resumes where it was. A
/// lead that is not held is refused (409).
pub fn decide_opt_out(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    confirm: bool,
) -> Result<()> {
    leads::live_lead(tx, caller, lead_id)?;
    let org = caller.org_id.as_str();
    let (decided, action) = if confirm {
        let by = RecordedBy::User {
            user_id: person.user_id.clone(),
            name: person.name.clone(),
        };
        let decided = hold::opt_out(tx, org, lead_id, ConsentSource::Reply, by)?;
        (decided, PersonAction::ConfirmOptOut)
    } else {
        (
            hold::dismiss(tx, org, lead_id)?,
            PersonAction::DismissOptOut,
        )
    };
    if !decided {
        return Err(Error::Conflict(
            "Lead is not held by a possible opt-out".into(),
        ));
    }
    let lead = leads::live_lead(tx, caller, lead_id)?;
    record_action(tx, org, lead, person, action, json!({})).map(drop)
}

/// "Add tag": `tag` (`records::tags::named`) on the lead, as `tags/add`.
pub fn add_tag(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    tag: TagRecord,
) -> Result<()> {
    let details = json!({"tag": tag.name, "tagId": tag.id});
    let lead = subscriptions::add_tags(tx, caller, lead_id, vec![tag]).react(tx)?;
    record_action(
        tx,
        &caller.org_id,
        lead,
        person,
        PersonAction::AddTag,
        details,
    )
    .map(drop)
}

/// "Save field" (`value` set) or "Remove field" (`None`): one key of the lead's
/// `additionalInfo`, through the lead update `PATCH /v1/leads/{id}` makes (its bounds:
/// 100 keys, 16 KiB). A field needs a name (`field`); a value left empty removes it.
pub fn set_field(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    key: &str,
    value: Option<&str>,
) -> Result<()> {
    let key = key.trim();
    if key.is_empty() {
        return Err(Error::field("field", "Write the field's name"));
    }
    let value = value.map(str::trim).filter(|v| !v.is_empty());
    let mut change = serde_json::Map::new();
    change.insert(
        key.to_string(),
        value.map_or(Value::Null, |v| Value::String(v.to_string())),
    );
    let mut patch = leads::LeadPatch::default();
    patch.additional_info = Some(change);
    let lead = leads::update(tx, caller, lead_id, patch).react(tx)?;
    let (action, details) = match value {
        Some(v) => (PersonAction::SetField, json!({"field": key, "value": v})),
        None => (PersonAction::RemoveField, json!({"field": key})),
    };
    record_action(tx, &caller.org_id, lead, person, action, details).map(drop)
}

/// "Remove tag": the tag of id `tag_id` off the lead, as `tags/remove`.
pub fn remove_tag(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    tag_id: &str,
) -> Result<()> {
    let lead = subscriptions::remove_tags(tx, caller, lead_id, &[tag_id.to_string()]).react(tx)?;
    record_action(
        tx,
        &caller.org_id,
        lead,
        person,
        PersonAction::RemoveTag,
        json!({"tag": tag_id}),
    )
    .map(drop)
}

/// "Mark hot": `isHot` on, as a lead patch sets it.
pub fn mark_hot(tx: &mut WriteTx, caller: &Caller, person: &Person, lead_id: &str) -> Result<()> {
    mark(tx, caller, person, lead_id, PersonAction::MarkHot)
}

/// "Mark qualified": `isQualified` on, as a lead patch sets it (which stops the
/// cadence).
pub fn mark_qualified(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
) -> Result<()> {
    mark(tx, caller, person, lead_id, PersonAction::MarkQualified)
}

fn mark(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    action: PersonAction,
) -> Result<()> {
    let mut patch = leads::LeadPatch::default();
    if action == PersonAction::MarkHot {
        patch.is_hot = Some(true);
    } else {
        patch.is_qualified = Some(true);
    }
    let lead = leads::update(tx, caller, lead_id, patch).react(tx)?;
    record_action(tx, &caller.org_id, lead, person, action, json!({})).map(drop)
}

/// "Delete lead": the lead is deleted, as `DELETE /v1/leads/{id}`, after the event
/// naming the person.
pub fn delete(tx: &mut WriteTx, caller: &Caller, person: &Person, lead_id: &str) -> Result<()> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    record_action(
        tx,
        &caller.org_id,
        lead,
        person,
        PersonAction::Delete,
        json!({}),
    )?;
    leads::delete(tx, caller, lead_id).react(tx).map(drop)
}

/// "Send again" of the lead's failed send `event_id` (`clear_failed_send`): answers
/// the failed send and its message's `content`, which the caller sends as a new
/// message from this person.
pub fn retry_send(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    event_id: &str,
) -> Result<(FailedSend, Value)> {
    clear_failed_send(
        tx,
        caller,
        person,
        lead_id,
        event_id,
        PersonAction::RetrySend,
    )
}

/// "Seen" of the meeting the owner changed in their calendar: the lead leaves "Needs
/// attention" for it, and the timeline says who saw it. Nothing to see is 409.
pub fn see_calendar_change(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
) -> Result<()> {
    let action = PersonAction::SeenCalendarChange;
    clear_note(
        tx,
        caller,
        person,
        lead_id,
        action,
        "This calendar change was already seen",
        |h| {
            h.calendar_change
                .take()
                .map(|change| json!({ "meetingId": change.meeting_id }))
        },
    )
}

/// A transfer nobody took left the lead waiting without an assistant to take the call
/// back: the lead needs attention ("Call back") until a person replies or marks it
/// called back. The engine writes it when the lead's call ends so.
pub fn call_back_wanted(tx: &mut WriteTx, org: &str, lead_id: &str) -> Result<()> {
    let mut handling = tx.handling(org, lead_id)?;
    handling.call_back = Some(crate::time::now_micros());
    tx.put_handling(org, lead_id, &handling)
}

/// "Called back": the lead leaves "Needs attention" for its call back, and the
/// timeline says who called. Nothing owed is 409.
pub fn called_back(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
) -> Result<()> {
    let action = PersonAction::CalledBack;
    clear_note(
        tx,
        caller,
        person,
        lead_id,
        action,
        "This lead was already called back",
        |h| h.call_back.take().map(|_| json!({})),
    )
}

/// A person clears a note of the lead's handling row that kept it in "Needs attention"
/// (`take` removes it and answers the `USER_ACTION`'s details, `None` when there was
/// none: 409 `gone`), recording `action`.
fn clear_note(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    action: PersonAction,
    gone: &str,
    take: impl FnOnce(&mut HandlingRecord) -> Option<Value>,
) -> Result<()> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let mut handling = tx.handling(&caller.org_id, lead_id)?;
    let Some(details) = take(&mut handling) else {
        return Err(Error::Conflict(gone.to_string()));
    };
    tx.put_handling(&caller.org_id, lead_id, &handling)?;
    record_action(tx, &caller.org_id, lead, person, action, details).map(drop)
}

/// "Dismiss" of the lead's failed send `event_id` (`clear_failed_send`).
pub fn dismiss_failure(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    event_id: &str,
) -> Result<()> {
    let action = PersonAction::DismissFailure;
    clear_failed_send(tx, caller, person, lead_id, event_id, action).map(drop)
}

/// A person deals with the lead's failed send `event_id`: "Send again" (`RetrySend`,
/// the new message is sent after this) or "Dismiss". Either way the failure leaves
/// "Needs attention"; a failure that is no longer the lead's is 409. Answers the failed
/// send and its message's `content`.
fn clear_failed_send(
    tx: &mut WriteTx,
    caller: &Caller,
    person: &Person,
    lead_id: &str,
    event_id: &str,
    action: PersonAction,
) -> Result<(FailedSend, Value)> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let mut handling = tx.handling(&caller.org_id, lead_id)?;
    let failed = match handling.failed_send.take() {
        Some(failed) if failed.event_id == event_id => failed,
        _ => {
            return Err(Error::Conflict(
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

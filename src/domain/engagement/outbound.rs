//! Outbound messages through a provider, at most once.
//!
//! A send is two commits around a provider call that runs outside the writer:
//! [`begin`] records the message (a `MESSAGE`/`EMAIL` event, owner `user`) with
//! `status: "sending"` and a `sending` row; [`finish`] writes the provider's answer into
//! the same event (same type and id, so syncing clients see the change) and drops the
//! row. A process that dies in between leaves the row: at start-up [`interrupted`] marks
//! such messages `unknown` with `error: "interrupted"`, and nothing sends them again (a
//! duplicate text is worse than a missing follow-up).

use serde_json::{json, Value};

use crate::channel::{Channel, Owner};
use crate::domain::contact::compliance::Block;
use crate::domain::engagement::gate;
use crate::domain::engagement::reactions::React;
use crate::domain::records::subscriptions;
use crate::domain::records::{events, messages};
use crate::error::{Error, Result};
use crate::providers::{Outgoing, SendOutcome};
use crate::store::rows::{
    LeadRecord, MessageKind, Origin, ProviderMessageRef, SendStatus, SendingRow,
};
use crate::store::{EventKey, EventRow, Reader, WriteTx};

/// A message committed as `sending`: its event, the row that marks it, and what the
/// provider is to send.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub row: SendingRow,
    pub event: EventRow,
    pub channel: Channel,
    pub outgoing: Outgoing,
}

/// Records a message to `lead` on `channel` as `sending`. The gate is the caller's.
/// The text and subject are cleaned first (`carrier_text::clean`, `line`): what is
/// recorded is what leaves. An email answering the lead's own email threads to it
/// (`email_thread`).
pub fn begin(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    channel: Channel,
    text: &str,
    subject: Option<&str>,
    origin: Origin,
) -> Result<Attempt> {
    let to = match channel {
        Channel::Email => lead.email.clone(),
        Channel::Sms | Channel::Voice => lead.phone.clone(),
    };
    if to.is_empty() {
        return Err(Error::Internal("a send to a lead without a target".into()));
    }
    // Whatever rendered it (a template over old lead values, a keyword reply, a person,
    // the API), the text leaves clean and is recorded as it left.
    let text = &crate::carrier_text::clean(text);
    let (thread, subject) = email_thread(tx, org, &lead, channel, subject, &origin)?;
    let subject = subject.as_deref();
    let content = crate::domain::records::messages::content(text, subject);
    let mut data = json!({
        "owner": Owner::User.as_str(),
        "channel": channel.as_str(),
        "content": content,
        "status": SendStatus::Sending.as_str(),
        "origin": origin.as_str(),
    });
    match &origin {
        Origin::Cadence { step } => data["step"] = json!(step),
        Origin::Human(person) => {
            data["sentBy"] = json!({"userId": person.user_id, "name": person.name});
        }
        Origin::Meeting { meeting_id } => data["meetingId"] = json!(meeting_id),
        Origin::Assistant | Origin::Keyword | Origin::Api => {}
    }
    let kind = MessageKind::of(channel);
    let id = crate::ids::generate("msg");
    let lead_id = lead.id.clone();
    let (event, _) = events::record(tx, org, lead, kind.as_str(), &id, data, |_| {}).react(tx)?;
    let row = SendingRow {
        org_id: org.to_string(),
        lead_id,
        kind,
        event_id: id,
    };
    tx.set_sending(&row, true)?;
    Ok(Attempt {
        row,
        event,
        channel,
        outgoing: Outgoing {
            to,
            text: text.to_string(),
            subject: subject.map(str::to_string),
            unsubscribe_url: None,
            status_callback: None,
            thread,
        },
    })
}

/// The thread of an email that answers the lead's own newest email (every email but a
/// cadence step's): `In-Reply-To` and `References` from its stored headers, and the
/// subject `Re: <their subject>` when the sender gave none (or is the assistant). The
/// subject as it leaves: one clean line.
fn email_thread(
    tx: &WriteTx,
    org: &str,
    lead: &LeadRecord,
    channel: Channel,
    subject: Option<&str>,
    origin: &Origin,
) -> Result<(Option<crate::providers::EmailThread>, Option<String>)> {
    let subject = subject.map(crate::carrier_text::line);
    if channel != Channel::Email || matches!(origin, Origin::Cadence { .. }) {
        return Ok((None, subject));
    }
    let Some(theirs) = tx.last_lead_email(org, &lead.id)? else {
        return Ok((None, subject));
    };
    let content = theirs.data.0.get("content").cloned().unwrap_or_default();
    let (thread, their_subject) = crate::domain::records::messages::thread_of(&content);
    let re = their_subject.as_deref().and_then(messages::reply_subject);
    let subject = match (subject, re) {
        (Some(s), _) if !s.is_empty() && !matches!(origin, Origin::Assistant) => Some(s),
        (_, Some(re)) => Some(re),
        (s, None) => s,
    };
    Ok((thread, subject))
}

/// Writes the provider's answer into the message. A refusal that means "do not
/// contact" is the gate's fifth step: a `COMPLIANCE_BLOCKED` event and an SMS opt-out
/// that only the lead's START clears.
pub fn finish(tx: &mut WriteTx, row: &SendingRow, outcome: &SendOutcome) -> Result<()> {
    let (status, extra) = match outcome {
        SendOutcome::Accepted {
            provider_message_id,
            status,
        } => (*status, json!({"providerMessageId": provider_message_id})),
        SendOutcome::Refused { code, .. } => (SendStatus::Failed, json!({"errorCode": code})),
        SendOutcome::Rejected { code, reply } => (
            SendStatus::Failed,
            json!({"errorCode": code, "error": reply}),
        ),
        SendOutcome::Unknown { error } => (SendStatus::Unknown, json!({"error": error})),
    };
    set_status(tx, row, status, extra)?;
    if let SendOutcome::Accepted {
        provider_message_id,
        status,
    } = outcome
    {
        if !is_final(*status) {
            // Its later statuses arrive by callback.
            let message = ProviderMessageRef {
                lead_id: row.lead_id.clone(),
                kind: row.kind,
                event_id: row.event_id.clone(),
            };
            tx.put_provider_message(&row.org_id, provider_message_id, &message)?;
        }
    }
    // Only an SMS refusal means the carrier holds an opt-out (Twilio 21610).
    if let (
        SendOutcome::Refused {
            code,
            do_not_contact: true,
        },
        MessageKind::Sms,
    ) = (outcome, row.kind)
    {
        if let Some(lead) = tx.lead(&row.org_id, &row.lead_id)? {
            let block = Block::provider(code);
            gate::record_block(tx, &row.org_id, lead.clone(), Channel::Sms, &block, None)?;
            subscriptions::carrier_opt_out(tx, &row.org_id, lead).react(tx)?;
        }
    }
    Ok(())
}

/// Whether a message's status can still change.
fn is_final(status: SendStatus) -> bool {
    matches!(
        status,
        SendStatus::Delivered | SendStatus::Failed | SendStatus::Undelivered
    )
}

/// A provider's status callback for message `provider_id`: the message event moves to
/// `status` (with `errorCode` when given). False when no message has that id.
///
/// Callbacks may arrive out of order (Twilio does not promise the order): a status
/// never moves back (`sent` after `delivered` changes nothing), a repeat changes
/// nothing, and a final status (delivered, failed, undelivered) ends the index row.
pub fn status_update(
    tx: &mut WriteTx,
    org: &str,
    provider_id: &str,
    status: SendStatus,
    error_code: Option<&str>,
) -> Result<bool> {
    let Some(message) = tx.provider_message(org, provider_id)? else {
        return Ok(false);
    };
    let row = SendingRow {
        org_id: org.to_string(),
        lead_id: message.lead_id,
        kind: message.kind,
        event_id: message.event_id,
    };
    let key = EventKey {
        org: &row.org_id,
        lead: &row.lead_id,
        kind: row.kind.as_str(),
        id: &row.event_id,
    };
    let current = match tx.event(key)? {
        Some((_, record)) => record.data.0["status"].as_str().and_then(SendStatus::parse),
        None => None,
    };
    let moves = current.is_some_and(|c| !is_final(c) && progress(status) > progress(c));
    if moves {
        let extra = match error_code {
            Some(code) => json!({ "errorCode": code }),
            None => json!({}),
        };
        set_status(tx, &row, status, extra)?;
    }
    if is_final(status) {
        tx.remove_provider_message(org, provider_id)?;
    }
    Ok(true)
}

/// How far along a message is: a status never moves to a smaller one.
fn progress(status: SendStatus) -> u8 {
    match status {
        SendStatus::Sending | SendStatus::Unknown => 0,
        SendStatus::Queued => 1,
        SendStatus::Sent => 2,
        SendStatus::Delivered | SendStatus::Failed | SendStatus::Undelivered => 3,
    }
}

/// At start-up: messages a crash left `sending` become `unknown` ("interrupted").
pub fn interrupted(tx: &mut WriteTx, rows: &[SendingRow]) -> Result<()> {
    for row in rows {
        set_status(
            tx,
            row,
            SendStatus::Unknown,
            json!({"error": "interrupted"}),
        )?;
    }
    Ok(())
}

/// Moves the message's `status` (and adds `extra` members) in place, and drops its
/// `sending` row.
fn set_status(tx: &mut WriteTx, row: &SendingRow, status: SendStatus, extra: Value) -> Result<()> {
    tx.set_sending(row, false)?;
    let key = EventKey {
        org: &row.org_id,
        lead: &row.lead_id,
        kind: row.kind.as_str(),
        id: &row.event_id,
    };
    let (Some((_, record)), Some(lead)) = (tx.event(key)?, tx.lead(&row.org_id, &row.lead_id)?)
    else {
        return Ok(());
    };
    let mut data = record.data.0;
    data["status"] = json!(status.as_str());
    if let (Value::Object(data), Value::Object(extra)) = (&mut data, extra) {
        data.extend(extra);
    }
    events::record(
        tx,
        &row.org_id,
        lead,
        row.kind.as_str(),
        &row.event_id,
        data,
        |_| {},
    )
    .react(tx)?;
    Ok(())
}

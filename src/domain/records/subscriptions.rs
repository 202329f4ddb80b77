//! The contact controls' writes, kept apart as the interface demands: pausing the assistant
//! (`isAiOn`), opting a lead out of channels (subscriptions), and never contacting a
//! number (the DNC list, `records::dnc`). None of them touches another.
//!
//! Unsubscribe and resubscribe apply only to channels the lead can receive (sms and
//! voice need a phone, email an email address). When the organization couples SMS and
//! voice, changing either changes both. An SMS opt-out the lead made by keyword (STOP)
//! is remembered: only the lead's own opt-in keyword (START) clears it.

use serde_json::Value;

use crate::channel::{Channel, OptOutSource};
use crate::domain::records::consent::{self, Change};
use crate::domain::records::leads;
use crate::domain::records::written::Written;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{
    ConsentSource, ConsentStatus, EngineSettings, LeadRecord, Proof, RevocationScope, TagRecord,
};
use crate::store::Reader;
use crate::store::WriteTx;
use crate::webhooks;

pub const INVALID_CHANNELS: &str = "channels must include at least one of: sms, voice, email";

/// Parses an unsubscribe body: empty, `{}`, or `{"channels": [...]}`. `None` means
/// "every channel the lead can receive". Anything else is the interface's one message
/// for an invalid body.
pub fn parse_channels(body: &[u8]) -> Result<Option<Vec<Channel>>> {
    Ok(parse_body(body, false)?.channels)
}

/// A resubscribe: the channels (`None`: every one the lead can receive) and the proof of
/// the lead's new consent, which a channel whose consent the lead revoked needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resubscribe {
    pub channels: Option<Vec<Channel>>,
    pub proof: Proof,
}

/// Parses a resubscribe body: an unsubscribe's, with an optional `"proof": {"text"?,
/// "url"?, "ip"?, "userAgent"?}` (as `POST /v1/leads/{id}/consent` takes it).
pub fn parse_resubscribe(body: &[u8]) -> Result<Resubscribe> {
    parse_body(body, true)
}

fn parse_body(body: &[u8], with_proof: bool) -> Result<Resubscribe> {
    let invalid = || Error::BadRequest(INVALID_CHANNELS.into());
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Resubscribe::default());
    }
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
        return Err(invalid());
    };
    if map
        .keys()
        .any(|k| k != "channels" && !(with_proof && k == "proof"))
    {
        return Err(invalid());
    }
    let proof = match map.get("proof") {
        Some(value) => consent::parse_proof(value)?,
        None => Proof::default(),
    };
    Ok(Resubscribe {
        channels: channels_of(&map)?,
        proof,
    })
}

fn channels_of(map: &serde_json::Map<String, Value>) -> Result<Option<Vec<Channel>>> {
    let invalid = || Error::BadRequest(INVALID_CHANNELS.into());
    let Some(value) = map.get("channels") else {
        return Ok(None);
    };
    let items = value
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(invalid)?;
    let mut channels = Vec::with_capacity(items.len());
    for item in items {
        let channel = item.as_str().and_then(Channel::parse).ok_or_else(invalid)?;
        if !channels.contains(&channel) {
            channels.push(channel);
        }
    }
    Ok(Some(channels))
}

/// Whether the organization couples SMS and voice opt-outs.
fn coupled(tx: &WriteTx, org: &str) -> Result<bool> {
    Ok(tx
        .org(org)?
        .is_some_and(|o| o.settings.sms_voice_opt_out_coupled))
}

/// The channels an SMS opt-out (or opt-in) covers: SMS, and voice too when the
/// organization couples them.
pub(crate) fn sms_channels(tx: &WriteTx, org: &str) -> Result<&'static [Channel]> {
    Ok(if coupled(tx, org)? {
        &[Channel::Sms, Channel::Voice]
    } else {
        &[Channel::Sms]
    })
}

/// The channels a request applies to: the reachable requested ones (or every reachable
/// one), widened to both sms and voice when the organization couples them.
fn applicable(
    tx: &WriteTx,
    org: &str,
    lead: &LeadRecord,
    requested: Option<&[Channel]>,
) -> Result<Vec<Channel>> {
    let mut channels: Vec<Channel> = match requested {
        None => Channel::ALL
            .iter()
            .copied()
            .filter(|c| c.reachable(lead))
            .collect(),
        Some(list) => list.iter().copied().filter(|c| c.reachable(lead)).collect(),
    };
    if channels.is_empty() {
        return Err(match requested.and_then(|list| list.first()) {
            Some(first) => first.missing_target(),
            None => Error::BadRequest("Lead has no phone or email".into()),
        });
    }
    if coupled(tx, org)?
        && channels
            .iter()
            .any(|c| matches!(c, Channel::Sms | Channel::Voice))
    {
        for c in [Channel::Sms, Channel::Voice] {
            if !channels.contains(&c) {
                channels.push(c);
            }
        }
    }
    channels.sort();
    Ok(channels)
}

/// Unsubscribes; returns the channels applied. One `lead.opted_out` per channel that
/// changed, in the same transaction.
pub fn unsubscribe(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    requested: Option<&[Channel]>,
) -> Result<Written<Vec<Channel>>> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let channels = applicable(tx, &caller.org_id, &lead, requested)?;
    let change = Change::of_caller(tx, caller)?;
    Ok(opt_out(
        tx,
        &caller.org_id,
        lead,
        &channels,
        OptOutSource::Api,
        &change,
    )?
    .map(|_| channels))
}

/// Unsubscribes `channels` of `lead` for `source`: one `lead.opted_out` and one
/// `revoked` consent entry (`change` says why) per channel that changed; an SMS opt-out
/// by keyword or by the carrier holds until the lead's START.
pub(crate) fn opt_out(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    channels: &[Channel],
    source: OptOutSource,
    change: &Change,
) -> Result<Written<LeadRecord>> {
    let mut changed = lead.clone();
    let mut moved = Vec::new();
    for &channel in channels {
        if !channel.is_unsubscribed(&changed.subscriptions) {
            channel.set_unsubscribed(&mut changed.subscriptions, true);
            webhooks::emit_opted_out(tx, org, &lead.id, channel, source)?;
            moved.push(channel);
        }
        if let (Channel::Sms, OptOutSource::Keyword | OptOutSource::Provider) = (channel, source) {
            changed.subscriptions.sms_by_keyword = true;
        }
    }
    leads::save_if_changed(tx, org, lead, changed)?
        .and_then(|lead| consent::note(tx, org, lead, &moved, ConsentStatus::Revoked, change))
}

/// Resubscribes `channels` of `lead`: one `granted` consent entry (`change` says why)
/// per channel that changed.
pub(crate) fn opt_in(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    channels: &[Channel],
    change: &Change,
    clear_keyword: bool,
) -> Result<Written<LeadRecord>> {
    let mut changed = lead.clone();
    let moved: Vec<Channel> = channels
        .iter()
        .copied()
        .filter(|c| c.is_unsubscribed(&lead.subscriptions))
        .collect();
    for &channel in channels {
        channel.set_unsubscribed(&mut changed.subscriptions, false);
    }
    if clear_keyword {
        changed.subscriptions.sms_by_keyword = false;
    }
    leads::save_if_changed(tx, org, lead, changed)?
        .and_then(|lead| consent::note(tx, org, lead, &moved, ConsentStatus::Granted, change))
}

/// The provider said the recipient opted out with the carrier (Twilio 21610): SMS is
/// unsubscribed as a STOP would, and only the lead's START clears it.
pub fn carrier_opt_out(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
) -> Result<Written<LeadRecord>> {
    let channels = sms_channels(tx, org)?;
    let change = Change::words(
        ConsentSource::Keyword,
        "The carrier refused the message: the recipient opted out with the carrier",
    );
    opt_out(tx, org, lead, channels, OptOutSource::Provider, &change)
}

/// Resubscribes the applicable channels, except an SMS opt-out made by keyword. A
/// channel whose consent the lead revoked is restored only with proof of the lead's
/// new consent, in the request or in the ledger since (409 naming every such channel,
/// nothing changed); the entries name the key or person that recorded them.
pub fn resubscribe(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    request: &Resubscribe,
) -> Result<Written<Vec<Channel>>> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let org = caller.org_id.as_str();
    let mut channels = applicable(tx, org, &lead, request.channels.as_deref())?;
    if lead.subscriptions.sms_by_keyword {
        // Coupled, SMS and voice are one opt-out: the keyword holds both.
        let held = sms_channels(tx, org)?;
        channels.retain(|c| !held.contains(c));
    }
    let mut change = Change::of_caller(tx, caller)?;
    if !consent::proves(&request.proof) {
        let mut unproven = Vec::new();
        for &channel in &channels {
            if channel.is_unsubscribed(&lead.subscriptions)
                && consent::stands_revoked(tx, org, &lead.id, channel)?
            {
                unproven.push(channel);
            }
        }
        if !unproven.is_empty() {
            return Err(consent::proof_missing(&unproven));
        }
    } else {
        change.proof = Proof {
            recorded_by: change.proof.recorded_by,
            ..request.proof.clone()
        };
    }
    Ok(opt_in(tx, org, lead, &channels, &change, false)?.map(|_| channels))
}

/// Pauses or resumes the assistant; subscriptions are not touched. Turning it back on
/// (`turn-on`, and the console's hand back) answers the lead's last message when it
/// went unanswered meanwhile (the lead's write calls `enrolment::answer_unanswered`).
pub fn set_ai(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    on: bool,
) -> Result<Written<LeadRecord>> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let mut changed = lead.clone();
    changed.is_ai_on = on;
    leads::save_if_changed(tx, &caller.org_id, lead, changed)
}

pub fn add_tags(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    tags: Vec<TagRecord>,
) -> Result<Written<LeadRecord>> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let mut changed = lead.clone();
    for tag in tags {
        match changed.tags.iter_mut().find(|t| t.id == tag.id) {
            Some(existing) => *existing = tag,
            None => changed.tags.push(tag),
        }
    }
    leads::save_if_changed(tx, &caller.org_id, lead, changed)
}

/// Removes tags by id; ids the lead does not carry are ignored.
pub fn remove_tags(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    ids: &[String],
) -> Result<Written<LeadRecord>> {
    let lead = match tx.lead(&caller.org_id, lead_id)? {
        Some(lead) if lead.deleted_at.is_none() => lead,
        _ => return Err(Error::NotFound("Lead not found".into())),
    };
    let mut changed = lead.clone();
    changed.tags.retain(|t| !ids.contains(&t.id));
    leads::save_if_changed(tx, &caller.org_id, lead, changed)
}

/// The channels a definite revocation unsubscribes under the organization's
/// `revocationScope`: every channel the lead can be reached on (`all`), or `own`, the
/// channel it came on (with SMS's voice coupling).
pub fn revocation_channels(
    settings: &EngineSettings,
    lead: &LeadRecord,
    own: &[Channel],
) -> Vec<Channel> {
    match settings.revocation_scope {
        RevocationScope::Channel => own.to_vec(),
        RevocationScope::All => Channel::ALL
            .iter()
            .copied()
            .filter(|c| c.reachable(lead) || own.contains(c))
            .collect(),
    }
}

/// The confirmation of an opt-out of `scope` that came on `came_on`: the usual one when
/// it includes that channel, else which channel ends (`You will receive no more calls.`).
pub fn opt_out_notice(business: &str, came_on: Channel, scope: &[Channel]) -> String {
    if scope.contains(&came_on) || scope.is_empty() {
        return match came_on {
            Channel::Email => {
                format!("{business}: You are unsubscribed and will receive no more emails.")
            }
            Channel::Sms | Channel::Voice => format!(
                "{business}: You are unsubscribed and will receive no more messages. Reply START to resubscribe."
            ),
        };
    }
    let what: Vec<&str> = scope
        .iter()
        .map(|c| match c {
            Channel::Sms => "texts",
            Channel::Voice => "calls",
            Channel::Email => "emails",
        })
        .collect();
    format!(
        "{business}: You will receive no more {}.",
        what.join(" or ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_parse_to_channels_or_the_interface_message() {
        assert_eq!(parse_channels(b"").unwrap(), None);
        assert_eq!(parse_channels(b"{}").unwrap(), None);
        assert_eq!(
            parse_channels(br#"{"channels": ["email", "sms", "email"]}"#).unwrap(),
            Some(vec![Channel::Email, Channel::Sms])
        );
        for bad in [
            &b"{"[..],
            b"[]",
            br#"{"channels": []}"#,
            br#"{"channels": ["fax"]}"#,
            br#"{"channels": "sms"}"#,
            br#"{"other": 1}"#,
        ] {
            assert_eq!(
                parse_channels(bad).unwrap_err().to_string(),
                INVALID_CHANNELS
            );
        }
    }
}

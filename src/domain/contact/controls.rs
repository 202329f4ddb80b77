//! The contact controls, kept apart as the interface demands: pausing the assistant
//! (`isAiOn`), opting a lead out of channels (subscriptions), and never contacting a
//! number (the DNC list, `domain::dnc`). None of them touches another.
//!
//! Unsubscribe and resubscribe apply only to channels the lead can receive (sms and
//! voice need a phone, email an email address). When the organization couples SMS and
//! voice, changing either changes both. An SMS opt-out the lead made by keyword (STOP)
//! is remembered: only the lead's own opt-in keyword (START) clears it.

use serde_json::Value;

use crate::channel::{Channel, Owner};
use crate::domain::engagement::enrolment::{self, InboundFollowUp};
use crate::domain::records::events;
use crate::domain::records::leads;
use crate::domain::records::limits;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::records::{LeadRecord, Origin, TagRecord};
use crate::store::Reader;
use crate::store::{EventRow, WriteTx};
use crate::webhooks;

pub const INVALID_CHANNELS: &str = "channels must include at least one of: sms, voice, email";

/// Parses an unsubscribe or resubscribe body: empty, `{}`, or `{"channels": [...]}`.
/// `None` means "every channel the lead can receive". Anything else is the interface's
/// one message for an invalid body.
pub fn parse_channels(body: &[u8]) -> Result<Option<Vec<Channel>>> {
    let invalid = || Error::BadRequest(INVALID_CHANNELS.into());
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
        return Err(invalid());
    };
    if map.keys().any(|k| k != "channels") {
        return Err(invalid());
    }
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

/// Where an opt-out came from, as the `lead.opted_out` webhook says.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    Api,
    Keyword,
    /// The provider refused a send because the recipient opted out with the carrier.
    Provider,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Api => "api",
            Source::Keyword => "keyword",
            Source::Provider => "provider",
        }
    }
}

/// Unsubscribes; returns the channels applied. One `lead.opted_out` per channel that
/// changed, in the same transaction.
pub fn unsubscribe(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    requested: Option<&[Channel]>,
) -> Result<Vec<Channel>> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let channels = applicable(tx, &caller.org_id, &lead, requested)?;
    opt_out(tx, &caller.org_id, lead, &channels, Source::Api)?;
    Ok(channels)
}

fn opt_out(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    channels: &[Channel],
    source: Source,
) -> Result<LeadRecord> {
    let mut changed = lead.clone();
    for &channel in channels {
        if !channel.is_unsubscribed(&changed.subscriptions) {
            channel.set_unsubscribed(&mut changed.subscriptions, true);
            webhooks::emit_opted_out(tx, org, &lead.id, channel.as_str(), source.as_str())?;
        }
        if let (Channel::Sms, Source::Keyword | Source::Provider) = (channel, source) {
            changed.subscriptions.sms_by_keyword = true;
        }
    }
    leads::save_if_changed(tx, org, lead, changed)
}

/// The provider said the recipient opted out with the carrier (Twilio 21610): SMS is
/// unsubscribed as a STOP would, and only the lead's START clears it.
pub fn carrier_opt_out(tx: &mut WriteTx, org: &str, lead: LeadRecord) -> Result<LeadRecord> {
    let channels: &[Channel] = if coupled(tx, org)? {
        &[Channel::Sms, Channel::Voice]
    } else {
        &[Channel::Sms]
    };
    opt_out(tx, org, lead, channels, Source::Provider)
}

/// Resubscribes the applicable channels, except an SMS opt-out made by keyword.
pub fn resubscribe(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    requested: Option<&[Channel]>,
) -> Result<Vec<Channel>> {
    let lead = leads::live_lead(tx, caller, lead_id)?;
    let mut channels = applicable(tx, &caller.org_id, &lead, requested)?;
    if lead.subscriptions.sms_by_keyword {
        // Coupled, SMS and voice are one opt-out: the keyword holds both.
        let held: &[Channel] = if coupled(tx, &caller.org_id)? {
            &[Channel::Sms, Channel::Voice]
        } else {
            &[Channel::Sms]
        };
        channels.retain(|c| !held.contains(c));
    }
    let mut changed = lead.clone();
    for &channel in &channels {
        channel.set_unsubscribed(&mut changed.subscriptions, false);
    }
    leads::save_if_changed(tx, &caller.org_id, lead, changed)?;
    Ok(channels)
}

/// Pauses or resumes the assistant; subscriptions are not touched. Turning it back on
/// (`turn-on`, and the console's hand back) answers the lead's last message when it
/// went unanswered meanwhile (the lead's write calls `enrolment::answer_unanswered`).
pub fn set_ai(tx: &mut WriteTx, caller: &Caller, lead_id: &str, on: bool) -> Result<LeadRecord> {
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
) -> Result<LeadRecord> {
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
) -> Result<LeadRecord> {
    let lead = match tx.lead(&caller.org_id, lead_id)? {
        Some(lead) if lead.deleted_at.is_none() => lead,
        _ => return Err(Error::NotFound("Lead not found".into())),
    };
    let mut changed = lead.clone();
    changed.tags.retain(|t| !ids.contains(&t.id));
    leads::save_if_changed(tx, &caller.org_id, lead, changed)
}

pub const OPT_OUT_KEYWORDS: [&str; 8] = [
    "STOP",
    "STOPALL",
    "UNSUBSCRIBE",
    "CANCEL",
    "END",
    "QUIT",
    "OPTOUT",
    "REVOKE",
];
pub const OPT_IN_KEYWORDS: [&str; 3] = ["START", "YES", "UNSTOP"];

/// Whether an SMS from a lead is a keyword (opt-out, opt-in, help): the whole text, any
/// case, as `inbound_sms` reads it.
pub fn is_keyword(text: &str) -> bool {
    let word = text.trim().to_ascii_uppercase();
    let word = word.as_str();
    OPT_OUT_KEYWORDS.contains(&word)
        || OPT_IN_KEYWORDS.contains(&word)
        || HELP_KEYWORDS.contains(&word)
}

/// A keyword SMS from the lead, or a keyword's confirmation or help text to it
/// (`origin: keyword`): compliance traffic, which the assistant neither sees nor
/// answers.
pub fn is_keyword_traffic(shape: &events::MessageShape, data: &Value) -> bool {
    match shape.owner {
        Owner::Lead => {
            shape.channel == Channel::Sms
                && shape
                    .content
                    .get("text")
                    .and_then(Value::as_str)
                    .is_some_and(is_keyword)
        }
        Owner::User => data.get("origin").and_then(Value::as_str) == Some(Origin::Keyword.as_str()),
    }
}

/// What an inbound message did.
pub struct Inbound {
    /// The lead it was recorded on.
    pub lead_id: String,
    pub message: EventRow,
    pub opted_out: bool,
    pub opted_in: bool,
}

/// HELP and INFO (the whole text, any case) ask for the organization's help text.
pub const HELP_KEYWORDS: [&str; 2] = ["HELP", "INFO"];

/// Records an SMS from `phone` on its lead (the most recently updated live one),
/// applies an opt-out or opt-in keyword when the message is only that word, and hands
/// the engine its follow-up: a confirmation or help text, or an assistant reply.
pub fn inbound_sms(tx: &mut WriteTx, caller: &Caller, phone: &str, text: &str) -> Result<Inbound> {
    inbound_sms_via(tx, caller, phone, text, None)
}

/// A keyword the SMS provider recognised and already answered (Twilio's Advanced
/// Opt-Out `OptOutType`): it means the same as ours, without a second confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKeyword {
    Stop,
    Start,
    Help,
}

impl ProviderKeyword {
    pub fn parse(s: &str) -> Option<ProviderKeyword> {
        match s.to_ascii_uppercase().as_str() {
            "STOP" => Some(ProviderKeyword::Stop),
            "START" => Some(ProviderKeyword::Start),
            "HELP" => Some(ProviderKeyword::Help),
            _ => None,
        }
    }
}

/// The live lead an inbound message or call from `phone` belongs to: the most recently
/// updated one, when several share the number (from before duplicates were refused).
pub fn lead_by_phone(tx: &WriteTx, org: &str, phone: &str) -> Result<Option<LeadRecord>> {
    most_recent(tx, org, tx.lead_ids_by_phone(org, phone)?)
}

/// The live lead an inbound email from `email` belongs to (any case), as
/// [`lead_by_phone`].
pub fn lead_by_email(tx: &WriteTx, org: &str, email: &str) -> Result<Option<LeadRecord>> {
    most_recent(tx, org, tx.lead_ids_by_email(org, email)?)
}

fn most_recent(tx: &WriteTx, org: &str, ids: Vec<String>) -> Result<Option<LeadRecord>> {
    let mut lead: Option<LeadRecord> = None;
    for id in ids {
        if let Some(candidate) = tx.lead(org, &id)?.filter(|l| l.deleted_at.is_none()) {
            if lead
                .as_ref()
                .is_none_or(|l| candidate.updated_at > l.updated_at)
            {
                lead = Some(candidate);
            }
        }
    }
    Ok(lead)
}

/// [`inbound_sms`] for an SMS a provider delivered, with the keyword it recognised.
pub fn inbound_sms_via(
    tx: &mut WriteTx,
    caller: &Caller,
    phone: &str,
    text: &str,
    provider_keyword: Option<ProviderKeyword>,
) -> Result<Inbound> {
    let org = caller.org_id.as_str();
    let lead = lead_by_phone(tx, org, phone)?;
    let lead = lead
        .ok_or_else(|| Error::NotFound(format!("Resource not found: Lead with phone {phone}")))?;
    let word = text.trim().to_ascii_uppercase();
    let opted_out = OPT_OUT_KEYWORDS.contains(&word.as_str())
        || provider_keyword == Some(ProviderKeyword::Stop);
    let opted_in = OPT_IN_KEYWORDS.contains(&word.as_str())
        || provider_keyword == Some(ProviderKeyword::Start);
    let help =
        HELP_KEYWORDS.contains(&word.as_str()) || provider_keyword == Some(ProviderKeyword::Help);
    let (message, lead) = record_inbound(tx, org, lead, Channel::Sms, text, None)?;
    let channels: &[Channel] = if coupled(tx, org)? {
        &[Channel::Sms, Channel::Voice]
    } else {
        &[Channel::Sms]
    };
    let lead = if opted_out {
        opt_out(tx, org, lead, channels, Source::Keyword)?
    } else if opted_in {
        let mut changed = lead.clone();
        for &channel in channels {
            channel.set_unsubscribed(&mut changed.subscriptions, false);
        }
        changed.subscriptions.sms_by_keyword = false;
        leads::save_if_changed(tx, org, lead, changed)?
    } else {
        lead
    };
    let business = enrolment::business_name(tx, org)?;
    let follow_up = if provider_keyword.is_some() {
        // The provider answered the keyword itself.
        InboundFollowUp::Nothing
    } else if opted_out {
        InboundFollowUp::Notice(format!(
            "{business}: You are unsubscribed and will receive no more messages. Reply START to resubscribe."
        ))
    } else if opted_in {
        InboundFollowUp::Notice(format!(
            "{business}: You are resubscribed. Reply STOP to opt out."
        ))
    } else if help {
        let help_text = tx.engine_settings(org)?.help_text;
        InboundFollowUp::Notice(if help_text.is_empty() {
            format!("{business}: Reply STOP to opt out.")
        } else {
            help_text
        })
    } else {
        InboundFollowUp::Reply
    };
    enrolment::on_inbound(tx, org, &lead, Channel::Sms, follow_up)?;
    Ok(Inbound {
        lead_id: lead.id.clone(),
        message,
        opted_out,
        opted_in,
    })
}

/// Records an email from `from` on the live lead with that address (the most recently
/// updated one), and hands the engine its follow-up (an assistant reply).
pub fn inbound_email(
    tx: &mut WriteTx,
    caller: &Caller,
    from: &str,
    subject: Option<&str>,
    text: &str,
) -> Result<Inbound> {
    let org = caller.org_id.as_str();
    let lead = lead_by_email(tx, org, from)?
        .ok_or_else(|| Error::NotFound(format!("Resource not found: Lead with email {from}")))?;
    let (message, lead) = record_inbound(tx, org, lead, Channel::Email, text, subject)?;
    enrolment::on_inbound(tx, org, &lead, Channel::Email, InboundFollowUp::Reply)?;
    Ok(Inbound {
        lead_id: lead.id.clone(),
        message,
        opted_out: false,
        opted_in: false,
    })
}

/// Writes a lead-owned message (which sets `hasReplied` / `hasRepliedEmail` and stops
/// the cadence, see `events::record`), before any keyword changes the lead.
fn record_inbound(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    channel: Channel,
    text: &str,
    subject: Option<&str>,
) -> Result<(EventRow, LeadRecord)> {
    let id = crate::ids::generate("msg");
    // A provider's message over the bounds (the API refuses one) is cut to them.
    let max = match channel {
        Channel::Email => limits::MESSAGE_CHARS,
        Channel::Sms | Channel::Voice => limits::SMS_CHARS,
    };
    let text = limits::truncate(text, max);
    let subject = subject.map(|s| limits::truncate(s, limits::SUBJECT_CHARS));
    let content = crate::domain::records::messages::content(text, subject);
    let data =
        serde_json::json!({"owner": "lead", "channel": channel.as_str(), "content": content});
    events::record(
        tx,
        org,
        lead,
        events::message_kind(channel),
        &id,
        data,
        |_| {},
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

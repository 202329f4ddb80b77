//! Messages a lead sends in (SMS and email, from a provider's webhook or the inbound
//! API): recorded on the lead the sender's phone or address belongs to, with what an
//! SMS keyword does (opt-out, opt-in, help), the hold of a possible opt-out
//! (`conversation::hold`), and the follow-up handed to the engine (a confirmation or help
//! text, or an assistant reply).

use crate::channel::{Channel, OptOutSource};
use crate::domain::contact::keywords::{HELP_KEYWORDS, OPT_IN_KEYWORDS};
use crate::domain::contact::revocation::{self, Named, Reading};
use crate::domain::conversation::hold;
use crate::domain::engagement::enrolment::{self, InboundFollowUp};
use crate::domain::engagement::reactions::React;
use crate::domain::records::consent::Change;
use crate::domain::records::messages::EmailHeaders;
use crate::domain::records::subscriptions;
use crate::domain::records::{events, leads, limits, meetings};
use crate::domain::settings::org::business_name;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::calendars::{CalendarReader, MeetingStatus};
use crate::store::rows::{
    ConsentSource, EngineSettings, LeadRecord, MessageKind, Origin, StopReason,
};
use crate::store::Reader;
use crate::store::{EventRow, WriteTx};
use crate::time::now_micros;
use serde_json::Value;

/// What an inbound message did.
pub struct Inbound {
    /// The lead it was recorded on.
    pub lead_id: String,
    pub message: EventRow,
    pub opted_out: bool,
    pub opted_in: bool,
}

/// Records an SMS from `phone` on its lead (the most recently updated live one),
/// applies a definite opt-out (`revocation::read` with the organization's own
/// keywords: `Stop please`, `Remove me`; every channel under `revocationScope` `all`,
/// SMS with its voice coupling under `channel`, confirmed by SMS only) or an
/// opt-in or help keyword (the whole message), and hands the engine its follow-up: a
/// confirmation or help text, or an assistant reply.
pub fn inbound_sms(tx: &mut WriteTx, caller: &Caller, phone: &str, text: &str) -> Result<Inbound> {
    inbound_sms_via(tx, caller, phone, text, None)
}

/// Why "Reply as this lead (sandbox)" is refused with a real SMS provider.
pub const SANDBOX_ONLY: &str =
    "Replying as a lead works only while the SMS provider is the sandbox: with a real provider, the lead's own texts arrive by themselves.";

/// Whether the organization's SMS goes through the sandbox provider (nothing leaves
/// the machine), where a person may try replies as a lead.
pub fn sms_is_sandbox(read: &impl Reader, org: &str) -> Result<bool> {
    Ok(matches!(
        read.engine_settings(org)?.sms,
        crate::store::rows::ProviderSettings::Sandbox { .. }
    ))
}

/// Refuses (409) the inbound API's door (`POST /v1/inbound/sms`, `/email`) for a
/// channel whose messages a real provider delivers: SMS through Twilio, email through
/// Mailgun (its `inboundSigningKey` set). A key could otherwise speak as the lead (a
/// START that undoes the lead's STOP).
pub fn door_open(read: &impl Reader, org: &str, channel: Channel) -> Result<()> {
    let settings = read.engine_settings(org)?;
    let closed = match channel {
        Channel::Sms => (!matches!(
            settings.sms,
            crate::store::rows::ProviderSettings::Sandbox { .. }
        ))
        .then_some(
            "The lead's texts arrive from the SMS provider by themselves: POST /v1/inbound/sms is the sandbox's and is closed while a real SMS provider is configured",
        ),
        Channel::Email => matches!(
            &settings.email,
            crate::store::rows::ProviderSettings::Smtp(smtp) if smtp.inbound_signing_key.is_some()
        )
        .then_some(
            "The lead's emails arrive from Mailgun by themselves (inboundSigningKey is set): POST /v1/inbound/email is closed",
        ),
        Channel::Voice => None,
    };
    match closed {
        Some(why) => Err(Error::Conflict(why.into())),
        None => Ok(()),
    }
}

/// "Reply as this lead (sandbox)": `text` as if lead `lead_id` had texted it from its
/// phone, through [`inbound_sms`] (keywords, holds, the assistant, the inbox all
/// react). Only with the sandbox SMS provider (403 otherwise); a lead without a phone
/// or an empty text is refused beside the message (400).
pub fn sandbox_reply(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    text: &str,
) -> Result<Inbound> {
    if !sms_is_sandbox(tx, &caller.org_id)? {
        return Err(Error::Forbidden);
    }
    let lead = crate::domain::records::leads::live_lead(tx, caller, lead_id)?;
    if lead.phone.is_empty() {
        return Err(Error::field(
            "message",
            "This lead has no phone to text from.",
        ));
    }
    if text.trim().is_empty() {
        return Err(Error::field("message", "Write what the lead says."));
    }
    limits::inbound(text, None, true)?;
    inbound_sms(tx, caller, &lead.phone, text)
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

/// [`inbound_sms`] for an SMS a provider delivered, with the keyword it recognised.
///
/// A reply that asks to cancel a meeting (`C`, `cancel`), answering that meeting's
/// confirmation or reminder, cancels the meeting and is no opt-out (`answered_meeting`).
/// A definite opt-out that names channels (`Don't call me, text me`) revokes those
/// alone, whatever `revocationScope` says: the person said which channel.
pub fn inbound_sms_via(
    tx: &mut WriteTx,
    caller: &Caller,
    phone: &str,
    text: &str,
    provider_keyword: Option<ProviderKeyword>,
) -> Result<Inbound> {
    let org = caller.org_id.as_str();
    let lead = leads::lead_by_phone(tx, org, phone)?;
    let lead = lead
        .ok_or_else(|| Error::NotFound(format!("Resource not found: Lead with phone {phone}")))?;
    let word = text.trim().to_ascii_uppercase();
    let settings = tx.engine_settings(org)?;
    let cancels = if provider_keyword.is_none() && revocation::cancels_meeting(text) {
        answered_meeting(tx, org, &lead.id)?
    } else {
        None
    };
    let booked = meetings::next_booked(tx, org, &lead.id)?.is_some();
    let reading = match cancels {
        Some(_) => Reading::Nothing,
        None => revocation::read_beside_meeting(text, &settings.opt_out_keywords, booked),
    };
    let named = match (reading, provider_keyword) {
        (_, Some(ProviderKeyword::Stop)) => Some(Named::NONE),
        (Reading::Definite(named), _) => Some(named),
        _ => None,
    };
    let opted_out = named.is_some();
    if reading == Reading::Possible && !opted_out {
        hold::hold(tx, org, &lead.id, Channel::Sms, text)?;
    }
    let opted_in = OPT_IN_KEYWORDS.contains(&word.as_str())
        || provider_keyword == Some(ProviderKeyword::Start);
    let help =
        HELP_KEYWORDS.contains(&word.as_str()) || provider_keyword == Some(ProviderKeyword::Help);
    if opted_out {
        // Stopped as an opt-out before the message would stop it as a reply: the
        // campaign's "Stopped: replied" counts replies only.
        enrolment::stop(tx, org, &lead.id, StopReason::Unsubscribed)?;
    }
    let (message, lead) = record_inbound(
        tx,
        org,
        lead,
        Channel::Sms,
        text,
        None,
        &EmailHeaders::default(),
    )?;
    if let Some(meeting) = &cancels {
        meetings::cancel(tx, caller, meeting)?.react(tx)?;
        tracing::info!(org, lead = %lead.id, meeting = %meeting, "the lead's reply canceled its meeting");
    }
    let channels = subscriptions::sms_channels(tx, org)?;
    let words = Change::lead_words(tx, caller, ConsentSource::Keyword, text)?;
    let mut scope = Vec::new();
    let lead = if let Some(named) = named {
        scope = revoked_channels(&settings, &lead, channels, named);
        let lead = subscriptions::opt_out(tx, org, lead, &scope, OptOutSource::Keyword, &words)
            .react(tx)?;
        hold::settle_opted_out(tx, org, &lead.id, Some(scope.as_slice()))?;
        lead
    } else if opted_in {
        subscriptions::opt_in(tx, org, lead, channels, &words, true).react(tx)?
    } else {
        lead
    };
    let business = business_name(tx, org)?;
    let follow_up = if provider_keyword.is_some() || cancels.is_some() {
        // The provider answered the keyword itself; a canceled meeting's confirmation
        // answers the lead.
        InboundFollowUp::Nothing
    } else if opted_out {
        InboundFollowUp::Notice(subscriptions::opt_out_notice(
            &business,
            Channel::Sms,
            &scope,
        ))
    } else if opted_in {
        InboundFollowUp::Notice(format!(
            "{business}: You are resubscribed. Reply STOP to opt out."
        ))
    } else if help {
        InboundFollowUp::Notice(if settings.help_text.is_empty() {
            format!("{business}: Reply STOP to opt out.")
        } else {
            settings.help_text
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

/// How many of the lead's last messages are looked through for the one its reply
/// answers.
const ANSWERED_LOOK_BACK: usize = 20;

/// The meeting a reply of the lead answers: the last message to the lead was its
/// confirmation or reminder (origin `meeting`, which offers `Reply R to reschedule or C
/// to cancel`), and it is still booked and to come. None otherwise.
fn answered_meeting(tx: &WriteTx, org: &str, lead_id: &str) -> Result<Option<String>> {
    let Some(last) = tx.last_outbound_message(org, lead_id, ANSWERED_LOOK_BACK)? else {
        return Ok(None);
    };
    let data = &last.data.0;
    let origin = Origin::Meeting {
        meeting_id: String::new(),
    };
    if data.get("origin").and_then(Value::as_str) != Some(origin.as_str()) {
        return Ok(None);
    }
    let Some(id) = data.get("meetingId").and_then(Value::as_str) else {
        return Ok(None);
    };
    let Some(meeting) = tx.meeting(org, id)? else {
        return Ok(None);
    };
    let upcoming = meeting.status == MeetingStatus::Booked
        && meeting.lead_id == lead_id
        && meeting.start >= now_micros();
    Ok(upcoming.then_some(meeting.id))
}

/// Records an email from `from` on the live lead with that address (the most recently
/// updated one), with its threading `headers` (what a reply threads to). Its subject and
/// its own text (`revocation::own_text`: what it quotes left out, a reply below the quote
/// kept) are read: a definite opt-out unsubscribes every channel (`revocationScope`
/// `all`) or email alone (`channel`), or the channels it names, confirmed once by email;
/// a possible one holds the lead; a reply cancelling a meeting whose confirmation it
/// answers cancels it; otherwise the engine gets its follow-up (an assistant reply).
pub fn inbound_email(
    tx: &mut WriteTx,
    caller: &Caller,
    from: &str,
    subject: Option<&str>,
    text: &str,
    headers: &EmailHeaders,
) -> Result<Inbound> {
    let org = caller.org_id.as_str();
    let lead = leads::lead_by_email(tx, org, from)?
        .ok_or_else(|| Error::NotFound(format!("Resource not found: Lead with email {from}")))?;
    let own = revocation::own_text(text);
    let settings = tx.engine_settings(org)?;
    let cancels = if revocation::cancels_meeting(&own) {
        answered_meeting(tx, org, &lead.id)?
    } else {
        None
    };
    let booked = meetings::next_booked(tx, org, &lead.id)?.is_some();
    let reading = if cancels.is_some() {
        Reading::Nothing
    } else {
        [subject.unwrap_or(""), own.as_str()]
            .map(|words| revocation::read_beside_meeting(words, &settings.opt_out_keywords, booked))
            .into_iter()
            .fold(Reading::Nothing, Reading::or)
    };
    let words = format!("{}\n{own}", subject.unwrap_or(""));
    if reading == Reading::Possible {
        hold::hold(tx, org, &lead.id, Channel::Email, words.trim())?;
    }
    if reading.is_definite() {
        // An opt-out, not a reply, stops the cadence (see `inbound_sms_via`).
        enrolment::stop(tx, org, &lead.id, StopReason::Unsubscribed)?;
    }
    let (message, lead) = record_inbound(tx, org, lead, Channel::Email, text, subject, headers)?;
    if let Some(meeting) = &cancels {
        meetings::cancel(tx, caller, meeting)?.react(tx)?;
        tracing::info!(org, lead = %lead.id, meeting = %meeting, "the lead's reply canceled its meeting");
    }
    let opted_out = reading.is_definite();
    let (lead, follow_up) = if let Reading::Definite(named) = reading {
        let change = Change::lead_words(tx, caller, ConsentSource::Reply, words.trim())?;
        let scope = revoked_channels(&settings, &lead, &[Channel::Email], named);
        let lead = subscriptions::opt_out(tx, org, lead, &scope, OptOutSource::Keyword, &change)
            .react(tx)?;
        hold::settle_opted_out(tx, org, &lead.id, Some(scope.as_slice()))?;
        let business = business_name(tx, org)?;
        let notice = subscriptions::opt_out_notice(&business, Channel::Email, &scope);
        (lead, InboundFollowUp::Notice(notice))
    } else if cancels.is_some() {
        (lead, InboundFollowUp::Nothing)
    } else {
        (lead, InboundFollowUp::Reply)
    };
    enrolment::on_inbound(tx, org, &lead, Channel::Email, follow_up)?;
    Ok(Inbound {
        lead_id: lead.id.clone(),
        message,
        opted_out,
        opted_in: false,
    })
}

/// The channels a definite revocation unsubscribes: those it names (`Don't call me`:
/// voice alone, without SMS's coupling: the person said which channel), or naming
/// none, as `revocationScope` has it ([`subscriptions::revocation_channels`]).
fn revoked_channels(
    settings: &EngineSettings,
    lead: &LeadRecord,
    own: &[Channel],
    named: Named,
) -> Vec<Channel> {
    if named.is_none() {
        subscriptions::revocation_channels(settings, lead, own)
    } else {
        named.channels()
    }
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
    headers: &EmailHeaders,
) -> Result<(EventRow, LeadRecord)> {
    let id = crate::ids::generate("msg");
    // A provider's message over the bounds (the API refuses one) is cut to them.
    let max = match channel {
        Channel::Email => limits::MESSAGE_CHARS,
        Channel::Sms | Channel::Voice => limits::SMS_CHARS,
    };
    let text = limits::truncate(text, max);
    let subject = subject.map(|s| limits::truncate(s, limits::SUBJECT_CHARS));
    let content = crate::domain::records::messages::email_content(text, subject, headers);
    let data =
        serde_json::json!({"owner": "lead", "channel": channel.as_str(), "content": content});
    events::record(
        tx,
        org,
        lead,
        MessageKind::of(channel).as_str(),
        &id,
        data,
        |_| {},
    )
    .react(tx)
}

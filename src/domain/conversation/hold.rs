//! Possible opt-outs (`shared/spec/consent.md`, "SMS, possible"): a per-se word inside
//! a longer message (`can we end this`) holds the lead, in the write that records the
//! message, until it is decided. Meanwhile automated outreach waits (the engagement
//! reads `held`: `enrolment::hold`), "Needs attention" says "Possible opt-out", and a
//! timeout row waits 10 business days of the organization.
//!
//! Decided by a person ("Opt out": [`opt_out`] with source `reply`; "Not an opt-out":
//! [`dismiss`], the cadence resumes where it was), by the assistant's `opt_out` tool
//! ([`settle_opted_out`]), or by the timeout ([`time_out`], source `timeout`). An
//! opt-out is the one a definite revocation makes: the lead's words as proof, one
//! confirmation on the channel they came on. Another message from the lead, or a
//! hand-back, leaves the hold as it is.

use chrono::{DateTime, Utc};

use crate::channel::{Channel, OptOutSource};
use crate::domain::contact::quiet_hours;
use crate::domain::engagement::agenda::{self, Taken};
use crate::domain::engagement::enrolment::{self, InboundFollowUp};
use crate::domain::engagement::reactions::React;
use crate::domain::records::consent::Change;
use crate::domain::records::limits;
use crate::domain::records::subscriptions;
use crate::domain::settings::org::business_name;
use crate::error::Result;
use crate::store::rows::{ConsentSource, HoldRecord, JobKind, RecordedBy, StopReason};
use crate::store::{Reader, WriteTx};
use crate::time::now_micros;

/// How long a possible opt-out waits for a decision, in the organization's business days.
pub const HOLD_BUSINESS_DAYS: u32 = 10;

/// The longest words a hold keeps (the proof of the opt-out it may become).
const WORDS_CHARS: usize = 2_000;

/// The lead wrote a possible opt-out on `channel`: it is held (unless it is already),
/// and its timeout is scheduled. Call it before the message is recorded, so that the
/// message does not stop the cadence it holds.
pub fn hold(
    tx: &mut WriteTx,
    org: &str,
    lead_id: &str,
    channel: Channel,
    words: &str,
) -> Result<bool> {
    let Some((resume, resume_reason)) = enrolment::hold(tx, org, lead_id)? else {
        return Ok(false);
    };
    let at = now_micros();
    let now = DateTime::<Utc>::from_timestamp_micros(at).unwrap_or_else(Utc::now);
    let due = quiet_hours::business_days_later(tx, org, now, HOLD_BUSINESS_DAYS)?;
    let timeout_job = agenda::schedule(
        tx,
        org,
        lead_id,
        due.timestamp_micros(),
        JobKind::HoldTimeout,
    )?;
    let hold = HoldRecord {
        channel,
        words: limits::truncate(words, WORDS_CHARS).to_string(),
        at,
        timeout_job,
        resume,
        resume_reason,
    };
    tx.put_hold(org, lead_id, &hold)?;
    tracing::info!(org, lead = lead_id, "held by a possible opt-out");
    Ok(true)
}

/// Decides the hold as an opt-out from `source` (`reply` for a person, `timeout`),
/// recorded by `by`: the channels `revocationScope` says (every channel of the lead by
/// default, else the one the words came on) are unsubscribed with the words as proof, the cadence stops and one confirmation goes out. False when the lead was not
/// held (or is gone).
pub fn opt_out(
    tx: &mut WriteTx,
    org: &str,
    lead_id: &str,
    source: ConsentSource,
    by: RecordedBy,
) -> Result<bool> {
    let Some(hold) = tx.hold(org, lead_id)? else {
        return Ok(false);
    };
    let Some(lead) = tx.lead(org, lead_id)?.filter(|l| l.deleted_at.is_none()) else {
        enrolment::stop(tx, org, lead_id, StopReason::Deleted)?;
        return Ok(false);
    };
    let own: Vec<Channel> = match hold.channel {
        Channel::Email => vec![Channel::Email],
        Channel::Sms | Channel::Voice => subscriptions::sms_channels(tx, org)?.to_vec(),
    };
    // As a definite revocation: every channel of the lead under `revocationScope`
    // `all` (the default, what Settings → Consent says), else the channel it came on.
    let settings = tx.engine_settings(org)?;
    let channels = subscriptions::revocation_channels(&settings, &lead, &own);
    let mut change = Change::words(source, &hold.words);
    change.proof.recorded_by = Some(by);
    let lead = subscriptions::opt_out(tx, org, lead, &channels, OptOutSource::Keyword, &change)
        .react(tx)?;
    // Ends the hold (and its timeout) if unsubscribing every channel did not already.
    enrolment::stop(tx, org, lead_id, StopReason::Unsubscribed)?;
    let business = business_name(tx, org)?;
    let notice = subscriptions::opt_out_notice(&business, hold.channel, &channels);
    enrolment::on_inbound(
        tx,
        org,
        &lead,
        hold.channel,
        InboundFollowUp::Notice(notice),
    )?;
    tracing::info!(
        org,
        lead = lead_id,
        source = source.as_str(),
        "possible opt-out decided: opted out"
    );
    Ok(true)
}

/// "Not an opt-out": the hold ends and the engagement is what it was (a running cadence
/// where it was). False when the lead was not held.
pub fn dismiss(tx: &mut WriteTx, org: &str, lead_id: &str) -> Result<bool> {
    let Some(hold) = tx.remove_hold(org, lead_id)? else {
        return Ok(false);
    };
    agenda::unschedule(tx, &mut Some(hold.timeout_job))?;
    enrolment::release(tx, org, lead_id, hold.resume, hold.resume_reason)?;
    tracing::info!(
        org,
        lead = lead_id,
        "possible opt-out decided: not an opt-out"
    );
    Ok(true)
}

/// A held lead was opted out otherwise (the assistant's `opt_out` tool, `channels`
/// `None`; or a definite opt-out it sent since on `channels`, which decides a hold of
/// those channels): that decides the hold as an opt-out (the cadence stops; the
/// opt-out already wrote the ledger and its webhooks).
pub fn settle_opted_out(
    tx: &mut WriteTx,
    org: &str,
    lead_id: &str,
    channels: Option<&[Channel]>,
) -> Result<()> {
    let hold = tx.hold(org, lead_id)?;
    if hold.is_some_and(|h| channels.is_none_or(|c| c.contains(&h.channel))) {
        enrolment::stop(tx, org, lead_id, StopReason::Unsubscribed)?;
        tracing::info!(
            org,
            lead = lead_id,
            "possible opt-out decided by the assistant"
        );
    }
    Ok(())
}

/// The timeout row `row` of `lead_id` came due: a hold it still belongs to becomes an
/// opt-out (source `timeout`). A decided hold left nothing to do.
pub fn time_out(tx: &mut WriteTx, row: Taken, org: &str, lead_id: &str) -> Result<bool> {
    match tx.hold(org, lead_id)? {
        Some(hold) if &hold.timeout_job == row.key() => opt_out(
            tx,
            org,
            lead_id,
            ConsentSource::Timeout,
            RecordedBy::Service,
        ),
        _ => Ok(false),
    }
}

//! Running agenda rows: what a due row becomes (a cadence step, a reply, a notice, a
//! call, a meeting's reminder), decided inside one write job.
//!
//! The engine's scheduler leases a due row, takes it out of the agenda
//! (`agenda::take`, through [`taking`]) and hands the proof ([`Taken`]) to one
//! `claim_*` here, which records in the same commit what it decided: nothing (the row
//! was stale, the cadence stopped), a deferral (quiet hours: a new row at the window's
//! end), a pause (`isAiOn` is false), a block (`COMPLIANCE_BLOCKED`, and the cadence
//! moves on), or a send (the message as `sending`, and the next step's row). The slow
//! part (provider, model) then runs outside the writer, and its outcome is committed by
//! `outbound::finish` or `voice::dialed`.
//!
//! **At most once**: a row leaves the agenda in the same commit that records its
//! attempt, so a crash before that commit runs the row again (nothing was sent) and a
//! crash after it never does. A claim requires the row's [`Taken`] by value, so none
//! can be written without taking its row.

use chrono::{DateTime, Utc};

use crate::channel::Channel;
use crate::domain::contact::compliance::{self, Block, Initiative};
use crate::domain::contact::quiet_hours::outside_quiet_hours;
use crate::domain::engagement::agenda::{self, JobKey, Taken};
use crate::domain::engagement::enrolment;
use crate::domain::engagement::gate;
use crate::domain::engagement::outbound::{self, Attempt};
use crate::domain::engagement::reminders;
use crate::domain::engagement::waiting;
use crate::domain::records::limits;
use crate::domain::settings::org::business_name;
use crate::domain::settings::templates;
use crate::domain::voice::voice;
use crate::error::Result;
use crate::store::calendars::{CalendarReader, MeetingStatus};
use crate::store::rows::{
    EngagementRecord, EngagementState, JobKind, LeadRecord, Origin, ProfileRecord, Purpose,
    StopReason,
};
use crate::store::{Reader, WriteTx};
use crate::time::Micros;

/// What a claimed row asks the engine to do next.
#[derive(Debug)]
pub enum Claim {
    /// Nothing more: the row is gone and its outcome committed.
    Done,
    /// Hand this message to the channel's provider, then `outbound::finish`.
    Send(Box<Attempt>),
    /// Place this call through the voice provider, then `voice::dialed`.
    Call {
        org: String,
        call_id: String,
        to: String,
    },
}

/// What a step claim decided, for the log.
fn log_skip(org: &str, lead: &str, index: u32, why: &str) {
    tracing::info!(org, lead, step = index + 1, why, "cadence step skipped");
}

/// Takes row `key` out of the agenda and hands it to `claim`; [`Claim::Done`] when the
/// row was gone already (it ran before).
pub fn taking(
    tx: &mut WriteTx,
    key: &JobKey,
    claim: impl FnOnce(&mut WriteTx, Taken) -> Result<Claim>,
) -> Result<Claim> {
    match agenda::take(tx, key)? {
        Some(row) => claim(tx, row),
        None => Ok(Claim::Done),
    }
}

fn live_lead(tx: &WriteTx, org: &str, lead: &str) -> Result<Option<LeadRecord>> {
    Ok(tx.lead(org, lead)?.filter(|l| l.deleted_at.is_none()))
}

/// A due cadence step of `lead`. `early` is the compliance service's answer, asked
/// before the write (it is slow).
pub fn claim_step(
    tx: &mut WriteTx,
    row: Taken,
    org: &str,
    lead_id: &str,
    index: u32,
    early: Option<Block>,
    now: DateTime<Utc>,
) -> Result<Claim> {
    let key = row.key();
    let Some(mut e) = tx.engagement(org, lead_id)? else {
        return Ok(Claim::Done);
    };
    if e.step_job.as_ref() != Some(key) || e.next_step != index {
        return Ok(Claim::Done);
    }
    e.step_job = None;
    let Some(lead) = live_lead(tx, org, lead_id)? else {
        tx.put_engagement(org, lead_id, &e)?;
        enrolment::stop(tx, org, lead_id, StopReason::Deleted)?;
        return Ok(Claim::Done);
    };
    if e.state == EngagementState::Paused || !lead.is_ai_on {
        // Turn-on schedules the step again.
        e.state = EngagementState::Paused;
        tx.put_engagement(org, lead_id, &e)?;
        log_skip(org, lead_id, index, "paused");
        return Ok(Claim::Done);
    }
    if e.state != EngagementState::Active {
        tx.put_engagement(org, lead_id, &e)?;
        return Ok(Claim::Done);
    }
    let Some(profile) = tx.profile(org, &e.profile)? else {
        tx.put_engagement(org, lead_id, &e)?;
        enrolment::stop(tx, org, lead_id, StopReason::ProfileDeleted)?;
        return Ok(Claim::Done);
    };
    if tx.campaign_paused(org, &e.profile)? {
        // Its resume schedules the step again.
        e.state = EngagementState::Paused;
        tx.put_engagement(org, lead_id, &e)?;
        log_skip(org, lead_id, index, "campaign paused");
        return Ok(Claim::Done);
    }
    let Some(step) = profile.cadence.get(index as usize).cloned() else {
        finish_cadence(tx, org, lead_id, e)?;
        return Ok(Claim::Done);
    };
    if let Some(wait) = waiting::step_wait(tx, org, &lead, now)? {
        // Automated work waits for the window's end or the next follow-up day, without
        // an event (and moves again if the quiet hours or a time zone change meanwhile).
        let until = wait.until().unwrap_or(key.0);
        e.step_job = Some(agenda::schedule_deferred(
            tx,
            org,
            lead_id,
            until,
            key.0,
            JobKind::Step { index },
        )?);
        tx.put_engagement(org, lead_id, &e)?;
        tracing::info!(
            org,
            lead = lead_id,
            step = index + 1,
            until,
            reason = wait.reason().words(),
            "cadence step deferred"
        );
        return Ok(Claim::Done);
    }
    let initiative = Initiative::Outreach(step.purpose);
    let block = compliance::recheck(tx, org, &lead, step.channel, initiative, early)?;
    advance(tx, org, lead_id, &mut e, &profile, index + 1, now)?;
    if let Some(block) = block {
        gate::record_block(tx, org, lead, step.channel, &block, Some(index + 1))?;
        log_skip(org, lead_id, index, &block.reason);
        return Ok(Claim::Done);
    }
    let business = business_name(tx, org)?;
    let text = templates::render(&step.text, &lead, &business);
    let subject = (step.channel == Channel::Email)
        .then(|| templates::render(&step.subject, &lead, &business));
    let too_long = |value: &str, max: usize| value.len() > max && value.chars().count() > max;
    if limits::channel_text("text", step.channel, &text).is_err()
        || subject
            .as_deref()
            .is_some_and(|s| too_long(s, limits::SUBJECT_CHARS))
    {
        let block = Block::too_long();
        gate::record_block(tx, org, lead, step.channel, &block, Some(index + 1))?;
        log_skip(org, lead_id, index, &block.reason);
        return Ok(Claim::Done);
    }
    tracing::info!(
        org,
        lead = lead_id,
        step = index + 1,
        channel = step.channel.as_str(),
        "cadence step sent"
    );
    match step.channel {
        Channel::Voice => start_call(tx, org, lead, index > 0, text),
        channel => {
            let attempt = outbound::begin(
                tx,
                org,
                lead,
                channel,
                &text,
                subject.as_deref(),
                Origin::Cadence { step: index + 1 },
            )?;
            Ok(Claim::Send(Box::new(attempt)))
        }
    }
}

/// Schedules step `next` `after` its delay, or finishes the cadence after the last.
fn advance(
    tx: &mut WriteTx,
    org: &str,
    lead: &str,
    e: &mut EngagementRecord,
    profile: &ProfileRecord,
    next: u32,
    now: DateTime<Utc>,
) -> Result<()> {
    match profile.cadence.get(next as usize) {
        Some(step) => {
            e.next_step = next;
            let due = now.timestamp_micros() + step.after_ms as i64 * 1000;
            e.step_job = Some(agenda::schedule(
                tx,
                org,
                lead,
                due,
                JobKind::Step { index: next },
            )?);
            tx.put_engagement(org, lead, e)
        }
        None => finish_cadence(tx, org, lead, e.clone()),
    }
}

fn finish_cadence(tx: &mut WriteTx, org: &str, lead: &str, mut e: EngagementRecord) -> Result<()> {
    e.state = EngagementState::Finished;
    e.step_job = None;
    tx.put_engagement(org, lead, &e)
}

/// Whether the reply row `key` is still the lead's pending reply, and the lead may get
/// one: the runner asks before it calls the model.
pub fn reply_wanted(read: &impl Reader, key: &JobKey, org: &str, lead_id: &str) -> Result<bool> {
    let current = read
        .engagement(org, lead_id)?
        .is_some_and(|e| e.reply_job.as_ref() == Some(key));
    let lead = read.lead(org, lead_id)?;
    Ok(current && lead.is_some_and(|l| l.deleted_at.is_none() && l.is_ai_on))
}

/// Drops the reply row `key` (given up, or nothing to say); `error` becomes the
/// engagement's `lastError` when set.
pub fn drop_reply(
    tx: &mut WriteTx,
    key: &JobKey,
    org: &str,
    lead_id: &str,
    error: Option<&str>,
) -> Result<()> {
    let _ = agenda::take(tx, key)?;
    let mut e = tx.engagement(org, lead_id)?.unwrap_or_default();
    if e.reply_job.as_ref() == Some(key) {
        e.reply_job = None;
    }
    if let Some(error) = error {
        e.last_error = error.to_string();
    }
    tx.put_engagement(org, lead_id, &e)
}

/// Moves the reply row `key` to `until` (quiet hours).
pub fn defer_reply(
    tx: &mut WriteTx,
    key: &JobKey,
    org: &str,
    lead_id: &str,
    channel: Channel,
    until: DateTime<Utc>,
) -> Result<()> {
    if agenda::take(tx, key)?.is_none() {
        return Ok(());
    }
    let mut e = tx.engagement(org, lead_id)?.unwrap_or_default();
    if e.reply_job.as_ref() != Some(key) {
        return Ok(());
    }
    e.reply_job = Some(agenda::schedule_deferred(
        tx,
        org,
        lead_id,
        until.timestamp_micros(),
        key.0,
        JobKind::Reply { channel },
    )?);
    tx.put_engagement(org, lead_id, &e)
}

/// The assistant's reply `text` to the burst of row `key`: sent unless a newer message
/// started another burst, the assistant was switched off, the lead is held by a
/// possible opt-out, or the gate says no.
pub fn claim_reply(
    tx: &mut WriteTx,
    row: Taken,
    org: &str,
    lead_id: &str,
    channel: Channel,
    text: &str,
    early: Option<Block>,
) -> Result<Claim> {
    let key = row.key();
    let mut e = tx.engagement(org, lead_id)?.unwrap_or_default();
    if e.reply_job.as_ref() != Some(key) {
        return Ok(Claim::Done);
    }
    e.reply_job = None;
    e.last_error.clear();
    tx.put_engagement(org, lead_id, &e)?;
    if e.state == EngagementState::Held {
        // A possible opt-out: the assistant saw it (its tools applied), nothing is sent.
        tracing::info!(
            org,
            lead = lead_id,
            "reply not sent: held by a possible opt-out"
        );
        return Ok(Claim::Done);
    }
    let Some(lead) = live_lead(tx, org, lead_id)?.filter(|l| l.is_ai_on) else {
        return Ok(Claim::Done);
    };
    if let Some(block) = compliance::recheck(tx, org, &lead, channel, Initiative::Reply, early)? {
        gate::record_block(tx, org, lead, channel, &block, None)?;
        return Ok(Claim::Done);
    }
    let subject = match channel {
        Channel::Email => Some(reply_subject(tx, org)?),
        Channel::Sms | Channel::Voice => None,
    };
    let attempt = outbound::begin(
        tx,
        org,
        lead,
        channel,
        text,
        subject.as_deref(),
        Origin::Assistant,
    )?;
    Ok(Claim::Send(Box::new(attempt)))
}

/// The subject of an emailed reply.
fn reply_subject(tx: &WriteTx, org: &str) -> Result<String> {
    Ok(format!("Re: your message to {}", business_name(tx, org)?))
}

/// A meeting's confirmation to the lead: its meeting, its channel and its text.
#[derive(Debug, Clone, Copy)]
pub struct Confirmation<'a> {
    pub meeting_id: &'a str,
    pub channel: Channel,
    pub text: &'a str,
}

/// A meeting's confirmation to the lead: through the gate's local steps (as a reply:
/// the lead's own booking, no marketing purpose), recorded with origin `meeting` and
/// its `meetingId` (a reply to it is a "Meeting reply"); nothing to a lead that is gone.
pub fn claim_meeting_confirmation(
    tx: &mut WriteTx,
    _row: Taken,
    org: &str,
    lead_id: &str,
    confirmation: Confirmation<'_>,
    early: Option<Block>,
) -> Result<Claim> {
    let Confirmation {
        meeting_id,
        channel,
        text,
    } = confirmation;
    let Some(lead) = live_lead(tx, org, lead_id)? else {
        return Ok(Claim::Done);
    };
    if let Some(block) = compliance::recheck(tx, org, &lead, channel, Initiative::Reply, early)? {
        gate::record_block(tx, org, lead, channel, &block, None)?;
        return Ok(Claim::Done);
    }
    let subject = (channel == Channel::Email).then(|| {
        format!(
            "Your meeting with {}",
            business_name(tx, org).unwrap_or_default()
        )
    });
    let attempt = outbound::begin(
        tx,
        org,
        lead,
        channel,
        text,
        subject.as_deref(),
        Origin::Meeting {
            meeting_id: meeting_id.to_string(),
        },
    )?;
    Ok(Claim::Send(Box::new(attempt)))
}

/// A compliance text (keyword confirmation, help): past the gate, but never to a lead
/// without a target.
pub fn claim_notice(
    tx: &mut WriteTx,
    _row: Taken,
    org: &str,
    lead_id: &str,
    channel: Channel,
    text: &str,
) -> Result<Claim> {
    let Some(lead) = live_lead(tx, org, lead_id)?.filter(|l| channel.reachable(l)) else {
        return Ok(Claim::Done);
    };
    let attempt = outbound::begin(tx, org, lead, channel, text, None, Origin::Keyword)?;
    Ok(Claim::Send(Box::new(attempt)))
}

/// A call the assistant scheduled: through the gate, then the call record.
pub fn claim_call(
    tx: &mut WriteTx,
    _row: Taken,
    org: &str,
    lead_id: &str,
    early: Option<Block>,
) -> Result<Claim> {
    let Some(lead) = live_lead(tx, org, lead_id)? else {
        return Ok(Claim::Done);
    };
    let marketing = Initiative::Outreach(Purpose::Marketing);
    if let Some(block) = compliance::recheck(tx, org, &lead, Channel::Voice, marketing, early)? {
        gate::record_block(tx, org, lead, Channel::Voice, &block, None)?;
        return Ok(Claim::Done);
    }
    start_call(tx, org, lead, false, String::new())
}

/// A due reminder of meeting `meeting_id` at `start`: nothing when the meeting is no
/// longer booked at that start or has begun; deferred to the quiet window's end when
/// that is before the meeting, dropped when it is not; else sent through the gate.
/// `early` is the compliance service's answer, asked before the write.
#[allow(clippy::too_many_arguments)]
pub fn claim_reminder(
    tx: &mut WriteTx,
    row: Taken,
    org: &str,
    lead_id: &str,
    meeting_id: &str,
    start: Micros,
    early: Option<Block>,
    now: DateTime<Utc>,
) -> Result<Claim> {
    let skip = |why: &str| {
        tracing::info!(
            org,
            lead = lead_id,
            meeting = meeting_id,
            why,
            "reminder not sent"
        );
        Ok(Claim::Done)
    };
    let Some(meeting) = tx
        .meeting(org, meeting_id)?
        .filter(|m| m.status == MeetingStatus::Booked && m.start == start)
    else {
        return skip("moved or canceled");
    };
    if now.timestamp_micros() >= meeting.start {
        return skip("the meeting has begun");
    }
    let Some(lead) = tx.lead(org, lead_id)?.filter(|l| l.deleted_at.is_none()) else {
        return skip("the lead is gone");
    };
    if !lead.is_ai_on {
        // Nothing automated is sent while the assistant is off for the lead.
        return skip("the assistant is off for the lead");
    }
    let Some(channel) = reminders::channel_for(&lead) else {
        return skip("no phone or email");
    };
    if let Some(end) = outside_quiet_hours(tx, org, &lead, now)? {
        let end = end.timestamp_micros();
        if end >= meeting.start {
            return skip("quiet hours last until the meeting");
        }
        agenda::schedule_deferred(
            tx,
            org,
            lead_id,
            end,
            row.key().0,
            JobKind::Reminder {
                meeting_id: meeting_id.to_string(),
                start,
            },
        )?;
        tracing::info!(
            org,
            lead = lead_id,
            meeting = meeting_id,
            until = end,
            "reminder deferred by quiet hours"
        );
        return Ok(Claim::Done);
    }
    let initiative = Initiative::Outreach(Purpose::Informational);
    if let Some(block) = compliance::recheck(tx, org, &lead, channel, initiative, early)? {
        gate::record_block(tx, org, lead, channel, &block, None)?;
        return Ok(Claim::Done);
    }
    let business = business_name(tx, org)?;
    let body = reminders::text(&business, &meeting);
    let subject =
        (channel == Channel::Email).then(|| format!("Reminder: your meeting with {business}"));
    let attempt = outbound::begin(
        tx,
        org,
        lead,
        channel,
        &body,
        subject.as_deref(),
        Origin::Meeting {
            meeting_id: meeting.id.clone(),
        },
    )?;
    Ok(Claim::Send(Box::new(attempt)))
}

/// Records the call (queued, the lead's, AI-initiated) before the provider is asked to
/// dial it; `say` is what it says without the assistant.
fn start_call(
    tx: &mut WriteTx,
    org: &str,
    lead: LeadRecord,
    follow_up: bool,
    say: String,
) -> Result<Claim> {
    let call = voice::start_outbound(tx, org, &lead, follow_up, say)?;
    Ok(Claim::Call {
        org: org.to_string(),
        call_id: call.id,
        to: lead.phone,
    })
}

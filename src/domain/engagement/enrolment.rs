//! A lead's engagement: enrolment in its profile's cadence, the stop rules, the
//! turn-off pause, and the agenda rows that carry the engine's work.
//!
//! Everything here runs inside the write job of the change that causes it (a lead
//! created or patched, a message received, an opt-out, a DNC entry), so the agenda row
//! commits or rolls back with its cause. Running a row is the engine's business
//! (`crate::engine`); the engine calls back here to commit what a run decided.
//!
//! **Stop rules** (state `stopped`, never resumed by itself): the lead sends a message,
//! every reachable channel is unsubscribed, the phone joins the DNC list and the lead
//! has no email, the lead is deleted, qualified, handed off, or its profile is cleared
//! or deleted. While `isAiOn` is false the cadence is `paused`: its due step waits;
//! turning it back on resumes it and answers the lead's last message if it went
//! unanswered. Work quiet hours deferred is noted (`quiet_deferred`) and re-computed
//! when the quiet hours or a time zone change.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::channel::{Channel, Owner};
use crate::error::{Error, Result};
use crate::store::records::{
    AgendaJob, EngagementRecord, EngagementState, JobKind, LeadRecord, StopReason,
};
use crate::store::{Reader, WriteTx};
use crate::time::{now_micros, Micros};

/// The reply delay of a lead without a profile that sets one.
pub const DEFAULT_REPLY_DELAY_MS: u64 = 5_000;

/// `GET /v1/leads/{id}/engagement`.
pub fn view(engagement: Option<&EngagementRecord>) -> Value {
    let Some(e) = engagement else {
        return json!({"profile": null, "state": "none", "step": 0, "nextStepAt": null,
            "stoppedReason": null, "lastError": null});
    };
    let running = matches!(e.state, EngagementState::Active | EngagementState::Paused);
    json!({
        "profile": (!e.profile.is_empty()).then_some(e.profile.as_str()),
        "state": e.state.as_str(),
        "step": if running { e.next_step + 1 } else { 0 },
        "nextStepAt": e.step_job.as_ref().filter(|_| running).map(|(due, _)| crate::time::format(*due)),
        "stoppedReason": e.stopped_reason.map(StopReason::as_str),
        "lastError": (!e.last_error.is_empty()).then_some(e.last_error.as_str()),
    })
}

fn load(tx: &WriteTx, org: &str, lead: &str) -> Result<EngagementRecord> {
    Ok(tx.engagement(org, lead)?.unwrap_or_default())
}

/// Adds an agenda row for `lead` due at `due`; answers its key.
pub fn schedule(
    tx: &mut WriteTx,
    org: &str,
    lead: &str,
    due: Micros,
    kind: JobKind,
) -> Result<(Micros, String)> {
    let id = crate::ids::generate("job");
    let job = AgendaJob {
        org_id: org.to_string(),
        lead_id: lead.to_string(),
        kind,
    };
    tx.put_agenda(due, &id, &job)?;
    Ok((due, id))
}

/// Adds the agenda row of work that wanted to run at `wanted` but that quiet hours
/// defer to `due` (the window's end), and notes it, so that a change of the quiet
/// hours or of a time zone re-computes it ([`recompute_deferred`]).
pub fn schedule_deferred(
    tx: &mut WriteTx,
    org: &str,
    lead: &str,
    due: Micros,
    wanted: Micros,
    kind: JobKind,
) -> Result<(Micros, String)> {
    let key = schedule(tx, org, lead, due, kind)?;
    tx.put_quiet_deferred(org, lead, key.0, &key.1, wanted)?;
    Ok(key)
}

/// The organization's quiet hours or time zone changed (`lead` None), or one lead's
/// time zone did: every agenda row quiet hours deferred (of the organization, or of
/// that lead) runs again when its work wanted to (or now, if that has passed), unless
/// the new quiet hours defer it still, to the new window's end. Called in the write
/// job of the change; it walks only the deferred rows (`quiet_deferred`), never the
/// organization's leads. A moved row keeps its job id; the engagement's pointer to it
/// follows.
pub fn recompute_deferred(tx: &mut WriteTx, org: &str, lead: Option<&str>) -> Result<()> {
    let now = now_micros();
    for (lead_id, due, id, wanted) in tx.quiet_deferred(org, lead)? {
        let Some(job) = tx.agenda_job(due, &id)? else {
            continue;
        };
        let Some(record) = tx.lead(org, &lead_id)?.filter(|l| l.deleted_at.is_none()) else {
            continue;
        };
        let at = wanted.max(now);
        let at_time = DateTime::<Utc>::from_timestamp_micros(at).unwrap_or_else(Utc::now);
        let still = outside_quiet_hours(tx, org, &record, at_time)?;
        let new_due = still.map_or(at, |end| end.timestamp_micros());
        if new_due == due {
            continue;
        }
        tx.remove_agenda(due, &id)?;
        tx.put_agenda(new_due, &id, &job)?;
        if still.is_some() {
            tx.put_quiet_deferred(org, &lead_id, new_due, &id, wanted)?;
        }
        if let Some(mut e) = tx.engagement(org, &lead_id)? {
            let old = Some((due, id.clone()));
            let mut moved = false;
            for pointer in [&mut e.step_job, &mut e.reply_job] {
                if *pointer == old {
                    *pointer = Some((new_due, id.clone()));
                    moved = true;
                }
            }
            if moved {
                tx.put_engagement(org, &lead_id, &e)?;
            }
        }
        tracing::info!(
            org,
            lead = lead_id,
            job = id,
            "work deferred by quiet hours re-computed"
        );
    }
    Ok(())
}

fn unschedule(tx: &mut WriteTx, job: &mut Option<(Micros, String)>) -> Result<()> {
    if let Some((due, id)) = job.take() {
        tx.remove_agenda(due, &id)?;
    }
    Ok(())
}

/// Called for every write of a lead (`domain::leads`), with the lead as it was.
pub fn on_lead_written(
    tx: &mut WriteTx,
    org: &str,
    old: Option<&LeadRecord>,
    new: &LeadRecord,
) -> Result<()> {
    if new.deleted_at.is_some() {
        if old.is_some_and(|o| o.deleted_at.is_none()) {
            stop(tx, org, &new.id, StopReason::Deleted)?;
        }
        return Ok(());
    }
    let old_profile = old.map_or("", |o| o.customer_profile.as_str());
    if old_profile != new.customer_profile {
        if new.customer_profile.is_empty() {
            stop(tx, org, &new.id, StopReason::ProfileChanged)?;
        } else {
            enrol(tx, org, new)?;
        }
        return Ok(());
    }
    let Some(old) = old else {
        return Ok(());
    };
    if new.is_qualified && !old.is_qualified {
        return stop(tx, org, &new.id, StopReason::Qualified);
    }
    if all_unsubscribed(new) && !all_unsubscribed(old) {
        return stop(tx, org, &new.id, StopReason::Unsubscribed);
    }
    if old.is_ai_on != new.is_ai_on {
        set_paused(tx, org, &new.id, !new.is_ai_on)?;
        if new.is_ai_on {
            // Turned back on (`turn-on`, a PATCH, the console's hand back).
            answer_unanswered(tx, org, new)?;
        }
    }
    if old.time_zone != new.time_zone {
        recompute_deferred(tx, org, Some(&new.id))?;
    }
    Ok(())
}

/// Every channel the lead can receive is unsubscribed (and it can receive one).
fn all_unsubscribed(lead: &LeadRecord) -> bool {
    let mut reachable = Channel::ALL.iter().filter(|c| c.reachable(lead)).peekable();
    reachable.peek().is_some() && reachable.all(|c| c.is_unsubscribed(&lead.subscriptions))
}

/// Enrols `lead` at step 1 of its profile's cadence (again, if it was enrolled). A
/// profile that does not exist or has no cadence leaves the lead unenrolled.
fn enrol(tx: &mut WriteTx, org: &str, lead: &LeadRecord) -> Result<()> {
    let mut e = load(tx, org, &lead.id)?;
    unschedule(tx, &mut e.step_job)?;
    e.profile = lead.customer_profile.clone();
    e.next_step = 0;
    e.stopped_reason = None;
    e.last_error.clear();
    match tx.profile(org, &lead.customer_profile)? {
        Some(profile) if !profile.cadence.is_empty() => {
            let after = profile.cadence[0].after_ms as i64 * 1000;
            e.state = if lead.is_ai_on {
                EngagementState::Active
            } else {
                EngagementState::Paused
            };
            e.step_job = Some(schedule(
                tx,
                org,
                &lead.id,
                now_micros() + after,
                JobKind::Step { index: 0 },
            )?);
        }
        _ => e.state = EngagementState::None,
    }
    tx.put_engagement(org, &lead.id, &e)
}

/// Stops the lead's cadence for `reason`. A running cadence stops; a handoff stops
/// whatever the state and also drops a pending reply.
pub fn stop(tx: &mut WriteTx, org: &str, lead: &str, reason: StopReason) -> Result<()> {
    let Some(mut e) = tx.engagement(org, lead)? else {
        if reason != StopReason::Handoff {
            return Ok(());
        }
        let e = EngagementRecord {
            state: EngagementState::Stopped,
            stopped_reason: Some(reason),
            ..Default::default()
        };
        return tx.put_engagement(org, lead, &e);
    };
    let running = matches!(e.state, EngagementState::Active | EngagementState::Paused);
    if !running && reason != StopReason::Handoff {
        return Ok(());
    }
    unschedule(tx, &mut e.step_job)?;
    if reason == StopReason::Handoff {
        unschedule(tx, &mut e.reply_job)?;
    }
    e.state = EngagementState::Stopped;
    e.stopped_reason = Some(reason);
    tx.put_engagement(org, lead, &e)
}

/// Turn-off pauses the cadence (its due step waits); turn-on resumes it, at once if the
/// step fell due meanwhile.
fn set_paused(tx: &mut WriteTx, org: &str, lead: &str, paused: bool) -> Result<()> {
    let Some(mut e) = tx.engagement(org, lead)? else {
        return Ok(());
    };
    match (e.state, paused) {
        (EngagementState::Active, true) => e.state = EngagementState::Paused,
        (EngagementState::Paused, false) => {
            e.state = EngagementState::Active;
            if e.step_job.is_none() {
                let index = e.next_step;
                e.step_job = Some(schedule(
                    tx,
                    org,
                    lead,
                    now_micros(),
                    JobKind::Step { index },
                )?);
            }
        }
        _ => return Ok(()),
    }
    tx.put_engagement(org, lead, &e)
}

/// The phone joined the DNC list: leads with that phone and no email stop.
pub fn on_dnc(tx: &mut WriteTx, org: &str, phone: &str) -> Result<()> {
    for id in tx.lead_ids_by_phone(org, phone)? {
        if let Some(lead) = tx.lead(org, &id)? {
            if lead.deleted_at.is_none() && lead.email.is_empty() {
                stop(tx, org, &id, StopReason::Dnc)?;
            }
        }
    }
    Ok(())
}

/// A profile was deleted: the cadences that follow it stop.
pub fn on_profile_deleted(tx: &mut WriteTx, org: &str, profile: &str) -> Result<()> {
    for lead in tx.leads_following(org, profile)? {
        stop(tx, org, &lead, StopReason::ProfileDeleted)?;
    }
    Ok(())
}

/// What an inbound message asks of the engine besides stopping the cadence.
#[derive(Debug, Clone, PartialEq)]
pub enum InboundFollowUp {
    /// A compliance text sent past the gate (keyword confirmation, help).
    Notice(String),
    /// An assistant reply, if the lead and organization allow one.
    Reply,
    Nothing,
}

/// A message from the lead arrived on `channel` (and stopped the cadence, `replied`):
/// its follow-up is scheduled. An assistant reply is one per burst: a message inside
/// the reply delay pushes the pending reply back.
pub fn on_inbound(
    tx: &mut WriteTx,
    org: &str,
    lead: &LeadRecord,
    channel: Channel,
    follow_up: InboundFollowUp,
) -> Result<()> {
    let now = now_micros();
    match follow_up {
        InboundFollowUp::Nothing => Ok(()),
        InboundFollowUp::Notice(text) => {
            schedule(tx, org, &lead.id, now, JobKind::Notice { channel, text })?;
            Ok(())
        }
        InboundFollowUp::Reply => {
            let settings = tx.engine_settings(org)?;
            if !lead.is_ai_on
                || channel.is_unsubscribed(&lead.subscriptions)
                || settings.assistant.is_none()
            {
                return Ok(());
            }
            let delay = match tx.profile(org, &lead.customer_profile)? {
                Some(p) => p.reply_delay_ms,
                None => DEFAULT_REPLY_DELAY_MS,
            };
            let mut e = load(tx, org, &lead.id)?;
            unschedule(tx, &mut e.reply_job)?;
            e.reply_job = Some(schedule(
                tx,
                org,
                &lead.id,
                now + delay as i64 * 1000,
                JobKind::Reply { channel },
            )?);
            tx.put_engagement(org, &lead.id, &e)
        }
    }
}

/// The assistant was turned back on for `lead`: when its last message is the lead's
/// (not a keyword), it went unanswered while the assistant was off, and a reply is
/// scheduled after the profile's `replyDelay` (as if it had just arrived).
pub fn answer_unanswered(tx: &mut WriteTx, org: &str, lead: &LeadRecord) -> Result<()> {
    let Some((kind, record)) = tx.last_message(org, &lead.id)? else {
        return Ok(());
    };
    let data = &record.data.0;
    let Some(shape) = crate::domain::records::events::MessageShape::of(&kind, data) else {
        return Ok(());
    };
    if shape.owner != Owner::Lead
        || crate::domain::contact::controls::is_keyword_traffic(&shape, data)
    {
        return Ok(());
    }
    on_inbound(tx, org, lead, shape.channel, InboundFollowUp::Reply)
}

/// The business name texts use: the organization's setting, else its name.
pub fn business_name(tx: &impl Reader, org: &str) -> Result<String> {
    let settings = tx.engine_settings(org)?;
    if !settings.business_name.is_empty() {
        return Ok(settings.business_name);
    }
    Ok(tx.org(org)?.map(|o| o.name).unwrap_or_default())
}

/// The engagement of a live lead, for the view.
pub fn find(read: &impl Reader, org: &str, lead_id: &str) -> Result<Option<EngagementRecord>> {
    read.lead(org, lead_id)?
        .ok_or_else(|| Error::lead_not_found(lead_id))?;
    read.engagement(org, lead_id)
}

/// When automated work due at `at` may run for `lead`: `at` itself, or the end of the
/// organization's quiet window in the lead's time zone (the organization's when the
/// lead has none).
pub fn outside_quiet_hours(
    tx: &impl Reader,
    org: &str,
    lead: &LeadRecord,
    at: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>> {
    let Some(org_record) = tx.org(org)? else {
        return Ok(None);
    };
    let zone = if lead.time_zone.is_empty() {
        tx.engine_settings(org)?.time_zone
    } else {
        lead.time_zone.clone()
    };
    Ok(crate::domain::contact::compliance::quiet_window_end(
        &org_record,
        &zone,
        at,
    ))
}

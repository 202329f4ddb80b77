//! A lead's engagement: enrolment in its profile's cadence, the stop rules, the
//! turn-off pause, and the follow-up of an inbound message; the agenda rows that carry
//! the engine's work are added through `engagement::agenda`.
//!
//! Everything here runs inside the write job of the change that causes it (a lead
//! created or patched, a message received, an opt-out, a DNC entry), so the agenda row
//! commits or rolls back with its cause. Running a row is the engine's business
//! (`crate::engine`); the engine calls back into `engagement::claims` to commit what a
//! run decided.
//!
//! **Stop rules** (state `stopped`, never resumed by itself): the lead sends a message,
//! every reachable channel is unsubscribed, the phone joins the DNC list and the lead
//! has no email, the lead is deleted, qualified, handed off, or its profile is cleared
//! or deleted. While `isAiOn` is false the cadence is `paused`: its due step waits;
//! turning it back on resumes it and answers the lead's last message if it went
//! unanswered. A time zone change re-computes the work quiet hours deferred
//! (`agenda::recompute_deferred`). A possible opt-out makes it `held` ([`hold`]): its
//! due step waits as while paused, a reply is not sent, a later message from the lead
//! does not stop it, and [`release`] resumes it as it was (`domain::conversation::hold`
//! decides).

use serde_json::{json, Value};

use crate::channel::{Channel, Owner};
use crate::domain::engagement::agenda::{recompute_deferred, schedule, unschedule};
use crate::error::{Error, Result};
use crate::store::rows::{EngagementRecord, EngagementState, JobKind, LeadRecord, StopReason};
use crate::store::{Reader, WriteTx};
use crate::time::now_micros;

/// The reply delay of a lead without a profile that sets one (a profile's default).
pub use crate::domain::settings::profiles::DEFAULT_REPLY_DELAY_MS;

/// `GET /v1/leads/{id}/engagement`.
pub fn view(engagement: Option<&EngagementRecord>) -> Value {
    let Some(e) = engagement else {
        return json!({"profile": null, "state": "none", "step": 0, "nextStepAt": null,
            "stoppedReason": null, "lastError": null});
    };
    let running = matches!(e.state, EngagementState::Active | EngagementState::Paused);
    let held = e.state == EngagementState::Held && e.step_job.is_some();
    json!({
        "profile": (!e.profile.is_empty()).then_some(e.profile.as_str()),
        "state": e.state.as_str(),
        "step": if running || held { e.next_step + 1 } else { 0 },
        "nextStepAt": e.step_job.as_ref().filter(|_| running).map(|(due, _)| crate::time::format(*due)),
        "stoppedReason": e.stopped_reason.map(StopReason::as_str),
        "lastError": (!e.last_error.is_empty()).then_some(e.last_error.as_str()),
    })
}

fn load(tx: &WriteTx, org: &str, lead: &str) -> Result<EngagementRecord> {
    Ok(tx.engagement(org, lead)?.unwrap_or_default())
}

/// Called for every write of a lead (`domain::records::leads`, through
/// `engagement::reactions`), with the lead as it was.
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
pub(crate) fn all_unsubscribed(lead: &LeadRecord) -> bool {
    let mut reachable = Channel::ALL.iter().filter(|c| c.reachable(lead)).peekable();
    reachable.peek().is_some() && reachable.all(|c| c.is_unsubscribed(&lead.subscriptions))
}

/// Enrols `lead` at step 1 of its profile's cadence (again, if it was enrolled). A
/// profile that does not exist or has no cadence leaves the lead unenrolled.
pub(crate) fn enrol(tx: &mut WriteTx, org: &str, lead: &LeadRecord) -> Result<()> {
    let mut e = load(tx, org, &lead.id)?;
    let held = e.state == EngagementState::Held;
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
    if held {
        // Still held: the new cadence starts when the hold ends without an opt-out.
        if let Some(mut hold) = tx.hold(org, &lead.id)? {
            hold.resume = e.state;
            hold.resume_reason = None;
            tx.put_hold(org, &lead.id, &hold)?;
        }
        e.state = EngagementState::Held;
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
    if e.state == EngagementState::Held {
        match reason {
            // Another message from the lead leaves the hold to be decided.
            StopReason::Replied => return Ok(()),
            // A handoff waits for the decision too; a dismissal leaves it stopped.
            StopReason::Handoff => {
                unschedule(tx, &mut e.step_job)?;
                unschedule(tx, &mut e.reply_job)?;
                if let Some(mut hold) = tx.hold(org, lead)? {
                    hold.resume = EngagementState::Stopped;
                    hold.resume_reason = Some(reason);
                    tx.put_hold(org, lead, &hold)?;
                }
                return tx.put_engagement(org, lead, &e);
            }
            // Anything else that stops the cadence ends the hold with it.
            _ => {
                if let Some(hold) = tx.remove_hold(org, lead)? {
                    unschedule(tx, &mut Some(hold.timeout_job))?;
                }
            }
        }
    }
    let running = matches!(
        e.state,
        EngagementState::Active | EngagementState::Paused | EngagementState::Held
    );
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

/// Turn-off (or a paused campaign) pauses the cadence (its due step waits); turn-on
/// (or the campaign's resume) resumes it, at once if the step fell due meanwhile.
pub fn set_paused(tx: &mut WriteTx, org: &str, lead: &str, paused: bool) -> Result<()> {
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

/// A possible opt-out holds the lead: automated outreach waits (the due step as while
/// paused; a pending reply is not sent). Answers the state (and stop reason) to resume
/// as, or `None` when the lead was held already.
pub fn hold(
    tx: &mut WriteTx,
    org: &str,
    lead: &str,
) -> Result<Option<(EngagementState, Option<StopReason>)>> {
    let mut e = load(tx, org, lead)?;
    if e.state == EngagementState::Held {
        return Ok(None);
    }
    let was = (e.state, e.stopped_reason.take());
    e.state = EngagementState::Held;
    tx.put_engagement(org, lead, &e)?;
    Ok(Some(was))
}

/// The hold ended without an opt-out: the engagement is `resume` again, a running
/// cadence where it was (a step that fell due meanwhile at once).
pub fn release(
    tx: &mut WriteTx,
    org: &str,
    lead: &str,
    resume: EngagementState,
    reason: Option<StopReason>,
) -> Result<()> {
    let Some(mut e) = tx.engagement(org, lead)? else {
        return Ok(());
    };
    if e.state != EngagementState::Held {
        return Ok(());
    }
    e.state = resume;
    e.stopped_reason = reason;
    if resume == EngagementState::Active && e.step_job.is_none() {
        let index = e.next_step;
        e.step_job = Some(schedule(
            tx,
            org,
            lead,
            now_micros(),
            JobKind::Step { index },
        )?);
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
    let Some(shape) = crate::domain::records::message_shape::MessageShape::of(&kind, data) else {
        return Ok(());
    };
    let own = tx.engine_settings(org)?.opt_out_keywords;
    // A web chat's line is answered in the chat (`engine::webchat`), never by text.
    let web = data.get("channel").and_then(serde_json::Value::as_str) == Some("webchat");
    if shape.owner != Owner::Lead
        || web
        || crate::domain::contact::keywords::is_keyword_traffic(&shape, data, &own)
    {
        return Ok(());
    }
    on_inbound(tx, org, lead, shape.channel, InboundFollowUp::Reply)
}

/// The engagement of a live lead, for the view.
pub fn find(read: &impl Reader, org: &str, lead_id: &str) -> Result<Option<EngagementRecord>> {
    read.lead(org, lead_id)?
        .ok_or_else(|| Error::lead_not_found(lead_id))?;
    read.engagement(org, lead_id)
}

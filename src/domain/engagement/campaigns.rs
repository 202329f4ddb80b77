//! A campaign's numbers (a profile's): enrolled, by state and stop reason, the rates
//! (replied, hot, qualified, handed off, opted out), meetings booked, the funnel by step and the sends
//! and replies of the last 30 days. `GET /v1/profiles/{name}/stats` and the console's
//! campaign pages read them; nothing here scans leads or events.
//!
//! **Every number is kept in the write that changes it.** The numbers by lead come from
//! counted-only facets of the lead index (`Facet::Campaign`), moved with the
//! lead's records; the numbers by step and by day are counters that [`on_event`] (called
//! through `engagement::reactions` for every event write) moves when a cadence message's status
//! changes, a step is blocked, or a lead writes. `replied` and `repliesAfter` count leads,
//! each once (`campaign_repliers`), and a lead's opt-out ([`is_opt_out`]) is no reply.
//!
//! "Pause campaign" marks the profile paused (`paused_campaigns`) and pauses its active
//! engagements; a step that falls due meanwhile (a new enrolment's too) finds the
//! campaign paused and pauses its engagement instead of running. "Resume campaign"
//! resumes every paused engagement of the profile whose lead has the assistant on: a
//! step due meanwhile runs at once, quiet hours permitting.

use chrono::{Duration, Utc};
use serde_json::{json, Map, Value};

use crate::channel::Owner;
use crate::domain::contact::keywords::OPT_OUT_KEYWORDS;
use crate::domain::contact::revocation;
use crate::domain::engagement::enrolment;
use crate::domain::records::message_shape::MessageShape;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::facet::{Facet, Metric, Rate};
use crate::store::rows::{EngagementState, SendStatus, StopReason, SystemEvent};
use crate::store::{ReadTx, Reader, Store, WriteTx};
use crate::time::Micros;

/// The states the numbers name (and every stop reason, `StopReason::ALL`).
const STATES: [EngagementState; 4] = [
    EngagementState::Active,
    EngagementState::Paused,
    EngagementState::Finished,
    EngagementState::Stopped,
];
/// The funnel's numbers of a step.
const STEP_METRICS: [&str; 6] = [
    "reached",
    "sent",
    "delivered",
    "blocked",
    "failed",
    "repliesAfter",
];
/// Days the chart covers.
pub const CHART_DAYS: i64 = 30;

/// The funnel numbers a cadence message counts in while it has `status`.
fn step_metrics(status: Option<SendStatus>) -> &'static [&'static str] {
    match status {
        None => &[],
        Some(SendStatus::Sending | SendStatus::Queued) => &["reached"],
        Some(SendStatus::Sent) => &["reached", "sent"],
        Some(SendStatus::Delivered) => &["reached", "sent", "delivered"],
        Some(SendStatus::Failed | SendStatus::Undelivered | SendStatus::Unknown) => {
            &["reached", "failed"]
        }
    }
}

/// The organization's calendar day of `at` (`YYYY-MM-DD` in its time zone, UTC when
/// it names none), the day a counter of the chart adds to.
fn day(at: Micros, zone: &str) -> String {
    let at = chrono::DateTime::from_timestamp_micros(at).unwrap_or_default();
    match zone.parse::<chrono_tz::Tz>() {
        Ok(tz) => at.with_timezone(&tz).format("%Y-%m-%d").to_string(),
        Err(_) => at.format("%Y-%m-%d").to_string(),
    }
}

/// Moves lead `lead`'s campaign counters for event (`kind`) written with `new` over
/// `old` (`None`: a new event), created at `created_at`.
pub fn on_event(
    tx: &mut WriteTx,
    org: &str,
    lead: &str,
    kind: &str,
    old: Option<&Value>,
    new: &Value,
    created_at: Micros,
) -> Result<()> {
    let cadence_step = |data: &Value| {
        (data.get("origin").and_then(Value::as_str) == Some("cadence"))
            .then(|| data.get("step").and_then(Value::as_u64))
            .flatten()
    };
    if kind == SystemEvent::ComplianceBlocked.as_str() {
        if let (None, Some(step)) = (old, new.get("step").and_then(Value::as_u64)) {
            let Some(profile) = profile_of(tx, org, lead)? else {
                return Ok(());
            };
            for metric in ["reached", "blocked"] {
                tx.add_campaign_count(org, &profile, &format!("step:{step}:{metric}"), 1)?;
            }
        }
        return Ok(());
    }
    let Some(shape) = MessageShape::of(kind, new) else {
        return Ok(());
    };
    if shape.owner == Owner::Lead {
        if old.is_some() {
            return Ok(());
        }
        let Some(e) = tx.engagement(org, lead)?.filter(|e| !e.profile.is_empty()) else {
            return Ok(());
        };
        // A STOP (an opt-out keyword or a definite revocation) is not a reply.
        let settings = tx.engine_settings(org)?;
        if is_opt_out(shape.text(), &settings.opt_out_keywords) {
            return Ok(());
        }
        tx.add_campaign_count(
            org,
            &e.profile,
            &format!("day:{}:replies", day(created_at, &settings.time_zone)),
            1,
        )?;
        // Leads, not messages: each lead counts once in `replied` and once per step.
        if tx.mark_campaign_replier(org, &e.profile, lead, 0)? {
            tx.add_campaign_count(org, &e.profile, "replied", 1)?;
        }
        // The last step run: the one before the next, or the last once finished.
        let last = match e.state {
            EngagementState::Finished => Some(e.next_step + 1),
            _ => (e.next_step > 0).then_some(e.next_step),
        };
        if let Some(step) = last {
            if tx.mark_campaign_replier(org, &e.profile, lead, step)? {
                tx.add_campaign_count(org, &e.profile, &format!("step:{step}:repliesAfter"), 1)?;
            }
        }
        return Ok(());
    }
    let Some(step) = cadence_step(new) else {
        return Ok(());
    };
    let status = |data: Option<&Value>| {
        data.and_then(|d| d.get("status"))
            .and_then(Value::as_str)
            .and_then(SendStatus::parse)
    };
    let (before, after) = (step_metrics(status(old)), step_metrics(status(Some(new))));
    if before == after && old.is_some() {
        return Ok(());
    }
    let Some(profile) = profile_of(tx, org, lead)? else {
        return Ok(());
    };
    for metric in before.iter().filter(|m| !after.contains(m)) {
        tx.add_campaign_count(org, &profile, &format!("step:{step}:{metric}"), -1)?;
    }
    for metric in after.iter().filter(|m| !before.contains(m)) {
        tx.add_campaign_count(org, &profile, &format!("step:{step}:{metric}"), 1)?;
    }
    if old.is_none() {
        let zone = tx.engine_settings(org)?.time_zone;
        let key = format!("day:{}:sends", day(created_at, &zone));
        tx.add_campaign_count(org, &profile, &key, 1)?;
    }
    Ok(())
}

/// A lead's words that opt out rather than reply: an opt-out keyword (the whole text) or
/// a definite revocation (`revocation::read`, with the organization's own keywords).
pub fn is_opt_out(text: &str, own: &[String]) -> bool {
    let word = text.trim().to_ascii_uppercase();
    OPT_OUT_KEYWORDS.contains(&word.as_str()) || revocation::read(text, own).is_definite()
}

/// The campaign counter of leads with a meeting booked while enrolled.
pub const MEETINGS_BOOKED: &str = "meetingsBooked";

/// A meeting was booked for `lead`: when it follows a profile (enrolled, in any state),
/// that campaign's `meetingsBooked` counts the lead, once (`campaign_meetings`); a
/// cancellation does not un-count it (the number is of leads who booked).
pub fn on_meeting_booked(tx: &mut WriteTx, org: &str, lead: &str) -> Result<()> {
    let Some(profile) = profile_of(tx, org, lead)? else {
        return Ok(());
    };
    if tx.mark_campaign_meeting(org, &profile, lead)? {
        tx.add_campaign_count(org, &profile, MEETINGS_BOOKED, 1)?;
    }
    Ok(())
}

fn profile_of(tx: &WriteTx, org: &str, lead: &str) -> Result<Option<String>> {
    Ok(tx
        .engagement(org, lead)?
        .map(|e| e.profile)
        .filter(|p| !p.is_empty()))
}

/// The numbers of profile `name` (404 when it does not exist), in the wire shape of
/// `GET /v1/profiles/{name}/stats`, with the chart's days.
pub fn stats(read: &ReadTx, org: &str, name: &str) -> Result<Value> {
    let profile = read
        .profile(org, name)?
        .ok_or_else(|| Error::NotFound("Profile not found".into()))?;
    let index = read.lead_index(org)?;
    let count = |metric: Metric| {
        index.count(&Facet::Campaign {
            profile: name.to_string(),
            metric,
        })
    };
    let mut out = Map::new();
    out.insert("profile".into(), json!(name));
    out.insert("enrolled".into(), json!(count(Metric::Enrolled)?));
    for state in STATES {
        out.insert(state.as_str().into(), json!(count(Metric::State(state))?));
    }
    let mut stopped = Map::new();
    for reason in StopReason::ALL {
        stopped.insert(reason.as_str().into(), json!(count(Metric::Stop(reason))?));
    }
    out.insert("stopped".into(), Value::Object(stopped));
    let counters = read.campaign_counts(org, name)?;
    let get = |key: String| counters.get(&key).copied().unwrap_or(0);
    for rate in Rate::ALL {
        let n = match rate {
            // Leads that wrote something other than an opt-out (counted once each).
            Rate::Replied => get("replied".into()),
            _ => count(Metric::Rate(rate))?,
        };
        out.insert(rate.wire().into(), json!(n));
    }
    out.insert(
        MEETINGS_BOOKED.into(),
        json!(get(MEETINGS_BOOKED.to_string())),
    );
    let steps: Vec<Value> = profile
        .cadence
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let n = i + 1;
            let mut s = Map::new();
            s.insert("step".into(), json!(n));
            s.insert("channel".into(), json!(step.channel.as_str()));
            for metric in STEP_METRICS {
                s.insert(metric.into(), json!(get(format!("step:{n}:{metric}"))));
            }
            Value::Object(s)
        })
        .collect();
    out.insert("steps".into(), Value::Array(steps));
    // Days as the organization lives them: its zone's today and back.
    let zone = read.engine_settings(org)?.time_zone;
    let today = match zone.parse::<chrono_tz::Tz>() {
        Ok(tz) => Utc::now().with_timezone(&tz).date_naive(),
        Err(_) => Utc::now().date_naive(),
    };
    let days: Vec<Value> = (0..CHART_DAYS)
        .rev()
        .map(|back| {
            let date = (today - Duration::days(back))
                .format("%Y-%m-%d")
                .to_string();
            json!({
                "date": date,
                "sends": get(format!("day:{date}:sends")),
                "replies": get(format!("day:{date}:replies")),
            })
        })
        .collect();
    out.insert("days".into(), Value::Array(days));
    Ok(Value::Object(out))
}

/// Engagements changed per write job (in the writer's bulk lane) while a campaign
/// pauses or resumes: a part holds the writer a few milliseconds.
const PAUSE_PART: usize = 100;

/// Pauses (`paused`) or resumes the campaign of profile `name`; answers how many
/// engagements changed. 404 when the profile does not exist.
pub async fn set_paused(store: &Store, caller: &Caller, name: &str, paused: bool) -> Result<u64> {
    let (org, profile) = (caller.org_id.clone(), name.to_string());
    store
        .write(move |tx| {
            if tx.profile(&org, &profile)?.is_none() {
                return Err(Error::NotFound("Profile not found".into()));
            }
            let at = paused.then(|| tx.tick());
            tx.set_campaign_paused(&org, &profile, at)
        })
        .await?;
    let wanted = if paused {
        EngagementState::Active
    } else {
        EngagementState::Paused
    };
    let leads: Vec<String> = store
        .read()?
        .engagements_following(&caller.org_id, name)?
        .into_iter()
        .filter(|(_, state)| *state == wanted)
        .map(|(lead, _)| lead)
        .collect();
    let mut changed = 0;
    for part in leads.chunks(PAUSE_PART) {
        let (org, profile, part) = (caller.org_id.clone(), name.to_string(), part.to_vec());
        changed += store
            .write_bulk(&caller.org_id, move |tx| {
                // A pause or resume that came in between wins.
                if tx.campaign_paused(&org, &profile)? != paused {
                    return Ok(0);
                }
                let mut n = 0;
                for lead in &part {
                    let Some(e) = tx.engagement(&org, lead)? else {
                        continue;
                    };
                    if e.profile != profile || e.state != wanted {
                        continue;
                    }
                    let ai_on = tx.lead(&org, lead)?.is_some_and(|l| l.is_ai_on);
                    if !paused && !ai_on {
                        continue; // turned off: its turn-on resumes it
                    }
                    enrolment::set_paused(tx, &org, lead, paused)?;
                    n += 1;
                }
                Ok(n)
            })
            .await?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_adds_to_the_organizations_own_day() {
        // 03:00 UTC on the 28th is still the 27th in Chicago, already the 28th in Tokyo.
        let at = chrono::DateTime::parse_from_rfc3339("2026-11-28T03:00:00Z")
            .unwrap()
            .timestamp_micros();
        assert_eq!(day(at, "America/Chicago"), "2026-11-27");
        assert_eq!(day(at, "Asia/Tokyo"), "2026-11-28");
        assert_eq!(day(at, "UTC"), "2026-11-28");
        assert_eq!(day(at, ""), "2026-11-28", "no zone: UTC");
    }
}

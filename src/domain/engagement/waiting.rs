//! Why a lead's next cadence step waits: quiet hours (until the window's end, in the
//! lead's zone), a day that is not a follow-up day or is a holiday, the campaign
//! paused, the lead held by a possible opt-out, the assistant off. `step_wait` is the
//! rule the scheduler's claim applies to a due step (`claims`), and `why` says it for
//! a lead's page; `campaign_waits` counts it over a campaign's leads, read by index
//! within a bound.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::domain::contact::quiet_hours;
use crate::error::Result;
use crate::store::facet::Facet;
use crate::store::rows::{EngagementRecord, EngagementState, LeadRecord};
use crate::store::{ReadTx, Reader};
use crate::time::Micros;

/// Why a step waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Wait {
    /// Inside the organization's quiet hours, until the window ends.
    QuietHours { until: Micros },
    /// Not one of the organization's follow-up days, or a holiday, until the next one.
    NotFollowUpDay { until: Micros },
    /// The campaign is paused.
    CampaignPaused,
    /// A possible opt-out waits for a person's decision.
    Held,
    /// The assistant is off for this lead.
    AssistantOff,
}

impl Wait {
    /// The reason alone, without its time: what a campaign counts.
    pub fn reason(self) -> WaitReason {
        match self {
            Wait::QuietHours { .. } => WaitReason::QuietHours,
            Wait::NotFollowUpDay { .. } => WaitReason::NotFollowUpDay,
            Wait::CampaignPaused => WaitReason::CampaignPaused,
            Wait::Held => WaitReason::Held,
            Wait::AssistantOff => WaitReason::AssistantOff,
        }
    }

    /// Until when it waits, when a time ends it.
    pub fn until(self) -> Option<Micros> {
        match self {
            Wait::QuietHours { until } | Wait::NotFollowUpDay { until } => Some(until),
            _ => None,
        }
    }
}

/// A reason a step waits, without its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WaitReason {
    QuietHours,
    NotFollowUpDay,
    CampaignPaused,
    Held,
    AssistantOff,
}

impl WaitReason {
    /// The reason in words.
    pub fn words(self) -> &'static str {
        match self {
            WaitReason::QuietHours => "Quiet hours",
            WaitReason::NotFollowUpDay => "Not a follow-up day, or a holiday",
            WaitReason::CampaignPaused => "Campaign paused",
            WaitReason::Held => "Held: a possible opt-out waits for a person",
            WaitReason::AssistantOff => "Assistant off",
        }
    }
}

/// Whether a cadence step that may run at `at` waits for quiet hours or the next
/// follow-up day (`quiet_hours::step_may_run`), and until when: the claim defers a
/// due step to that time.
pub fn step_wait(
    read: &impl Reader,
    org: &str,
    lead: &LeadRecord,
    at: DateTime<Utc>,
) -> Result<Option<Wait>> {
    let Some(end) = quiet_hours::step_may_run(read, org, lead, at)? else {
        return Ok(None);
    };
    let until = end.timestamp_micros();
    let quiet = quiet_hours::outside_quiet_hours(read, org, lead, at)?.is_some();
    Ok(Some(if quiet {
        Wait::QuietHours { until }
    } else {
        Wait::NotFollowUpDay { until }
    }))
}

/// Why the lead's next step waits at `now`, if it does: its state (held, paused by the
/// campaign or the assistant switch), else a due step's time rule. A step due later
/// that quiet hours or the follow-up days already moved says so, with the time the
/// rule gave it.
pub fn why(
    read: &ReadTx,
    org: &str,
    lead: &LeadRecord,
    e: &EngagementRecord,
    now: DateTime<Utc>,
) -> Result<Option<Wait>> {
    match e.state {
        EngagementState::Held => return Ok(Some(Wait::Held)),
        EngagementState::Paused | EngagementState::Active
            if !e.profile.is_empty() && read.campaign_paused(org, &e.profile)? =>
        {
            return Ok(Some(Wait::CampaignPaused))
        }
        EngagementState::Paused => return Ok(Some(Wait::AssistantOff)),
        EngagementState::Active if !lead.is_ai_on => return Ok(Some(Wait::AssistantOff)),
        EngagementState::Active => {}
        _ => return Ok(None),
    }
    let Some((due, id)) = &e.step_job else {
        return Ok(None);
    };
    let at = if *due <= now.timestamp_micros() {
        now
    } else {
        // Moved by the rule: the time the step wanted, judged again.
        let deferred = read.quiet_deferred(org, Some(&lead.id))?;
        match deferred.iter().find(|(_, d, i, _)| d == due && i == id) {
            Some((_, _, _, wanted)) => match DateTime::from_timestamp_micros(*wanted) {
                Some(wanted) => wanted.max(now),
                None => return Ok(None),
            },
            None => return Ok(None),
        }
    };
    Ok(step_wait(read, org, lead, at)?.map(|wait| match wait {
        // The row already carries the rule's time.
        Wait::QuietHours { .. } if *due > now.timestamp_micros() => {
            Wait::QuietHours { until: *due }
        }
        Wait::NotFollowUpDay { .. } if *due > now.timestamp_micros() => {
            Wait::NotFollowUpDay { until: *due }
        }
        other => other,
    }))
}

/// How many of a campaign's leads wait, by reason: its leads read by index (the
/// profile's facet) up to `bound`; `true` when there were more (the counts are then
/// "at least").
pub fn campaign_waits(
    read: &ReadTx,
    org: &str,
    profile: &str,
    now: DateTime<Utc>,
    bound: usize,
) -> Result<(BTreeMap<WaitReason, u64>, bool)> {
    let index = read.lead_index(org)?;
    let mut ids = Vec::new();
    let mut more = false;
    index.members_until(&Facet::Profile(profile.to_string()).key(), |_, lead| {
        if ids.len() == bound {
            more = true;
            return false;
        }
        ids.push(lead.to_string());
        true
    })?;
    let mut counts = BTreeMap::new();
    for id in ids {
        let (Some(lead), Some(e)) = (read.lead(org, &id)?, read.engagement(org, &id)?) else {
            continue;
        };
        if e.profile != profile {
            continue;
        }
        if let Some(wait) = why(read, org, &lead, &e, now)? {
            *counts.entry(wait.reason()).or_insert(0) += 1;
        }
    }
    Ok((counts, more))
}

//! "Add to campaign" (issue 33): a lead a person adds to a campaign follows its
//! cadence from step 1 ([`add`], enrolled through the lead write that sets its
//! `customerProfile`, as the API and the import enrol), unless a rule skips it
//! ([`Skip`]). `conversation::handling::add_to_campaign` (one lead) and
//! `conversation::bulk_enrolment` (a filtered set) call it.

use crate::channel::Channel;
use crate::domain::engagement::enrolment::{all_unsubscribed, enrol};
use crate::domain::engagement::reactions::React;
use crate::domain::records::leads::{self, LeadPatch, LeadText};
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::store::rows::{EngagementState, LeadRecord};
use crate::store::{Reader, WriteTx};

/// Why a lead is not added to a campaign by "Add to campaign" (one lead, or each of a
/// bulk enrolment's, which counts them by [`Skip::index`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Its engagement runs (active, paused or held): it is not enrolled again.
    AlreadyInCampaign,
    /// Its phone is on the Do Not Contact list and it has no email.
    Dnc,
    /// Every channel it can receive is unsubscribed, or it has none.
    Unsubscribed,
    /// It was deleted (or never was).
    Deleted,
    /// The campaign no longer exists.
    NoCampaign,
    /// The campaign has no steps.
    NoSteps,
}

impl Skip {
    pub const ALL: [Skip; crate::store::enrolments::SKIP_KINDS] = [
        Skip::AlreadyInCampaign,
        Skip::Dnc,
        Skip::Unsubscribed,
        Skip::Deleted,
        Skip::NoCampaign,
        Skip::NoSteps,
    ];

    /// Its place in a bulk enrolment's counts (`EnrolmentJob::skipped`).
    pub fn index(self) -> usize {
        Skip::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }

    /// The reason in a few words, as a result lists it ("3 already in a campaign").
    pub fn words(self) -> &'static str {
        match self {
            Skip::AlreadyInCampaign => "already in a campaign",
            Skip::Dnc => "on the Do Not Contact list",
            Skip::Unsubscribed => "unsubscribed from every channel",
            Skip::Deleted => "deleted",
            Skip::NoCampaign => "the campaign no longer exists",
            Skip::NoSteps => "the campaign has no steps",
        }
    }

    /// The refusal of one lead's "Add to campaign" (409, or 404 for a missing
    /// campaign, placed beside the form's `profile` field).
    pub fn error(self, lead: &str, profile: &str) -> Error {
        match self {
            Skip::AlreadyInCampaign => {
                Error::Conflict("This lead is already in a campaign; it is not added again.".into())
            }
            Skip::Dnc => Error::Conflict(
                "This lead's phone is on the Do Not Contact list and it has no email.".into(),
            ),
            Skip::Unsubscribed => Error::Conflict(
                "This lead is unsubscribed from every channel it can receive.".into(),
            ),
            Skip::Deleted => Error::lead_not_found(lead),
            Skip::NoCampaign => Error::field("profile", format!("No campaign is named {profile}.")),
            Skip::NoSteps => Error::field(
                "profile",
                format!("The campaign {profile} has no steps: add one in its editor first."),
            ),
        }
    }
}

/// The campaign `profile` as "Add to campaign" needs it: it exists and has steps.
pub fn campaign_ready(read: &impl Reader, org: &str, profile: &str) -> Result<(), Skip> {
    match read.profile(org, profile) {
        Ok(Some(p)) if !p.cadence.is_empty() => Ok(()),
        Ok(Some(_)) => Err(Skip::NoSteps),
        _ => Err(Skip::NoCampaign),
    }
}

/// "Add to campaign": lead `lead_id` follows `profile` from step 1, enrolled as a lead
/// write setting its `customerProfile` enrols it (`leads::update`, whose reaction is
/// `on_lead_written`; the same profile again re-enrols it). A lead whose engagement
/// runs, on the DNC list without an email, or unsubscribed everywhere is not added:
/// `Ok(Err(skip))`, nothing written.
pub fn add(
    tx: &mut WriteTx,
    caller: &Caller,
    lead_id: &str,
    profile: &str,
) -> Result<std::result::Result<LeadRecord, Skip>> {
    let org = caller.org_id.as_str();
    if let Err(skip) = campaign_ready(tx, org, profile) {
        return Ok(Err(skip));
    }
    let Some(lead) = tx.lead(org, lead_id)?.filter(|l| l.deleted_at.is_none()) else {
        return Ok(Err(Skip::Deleted));
    };
    let running = tx.engagement(org, lead_id)?.is_some_and(|e| {
        matches!(
            e.state,
            EngagementState::Active | EngagementState::Paused | EngagementState::Held
        )
    });
    if running {
        return Ok(Err(Skip::AlreadyInCampaign));
    }
    if lead.email.is_empty() && !lead.phone.is_empty() && tx.dnc_contains(org, &lead.phone)? {
        return Ok(Err(Skip::Dnc));
    }
    if !Channel::ALL.iter().any(|c| c.reachable(&lead)) || all_unsubscribed(&lead) {
        return Ok(Err(Skip::Unsubscribed));
    }
    if lead.customer_profile == profile {
        enrol(tx, org, &lead)?;
        return Ok(Ok(lead));
    }
    let mut patch = LeadPatch::default();
    patch.set_text(LeadText::CustomerProfile, profile)?;
    let lead = leads::update(tx, caller, lead_id, patch).react(tx)?;
    Ok(Ok(lead))
}

//! The compliance gate: every outbound attempt (an SMS or email written by the
//! organization's side, an outbound call) passes it, or is suppressed and leaves a
//! `COMPLIANCE_BLOCKED` event instead.
//!
//! The checks run in the order decided: (1) the channel has a target, (2) the lead has
//! not unsubscribed from it, (3) the phone is not on the DNC list, then the consent
//! policy (`consentRequired` lists the attempt's channel and purpose and the lead's
//! ledger has no grant after its last revocation: `CONSENT_MISSING`; a reply inside a
//! conversation the lead started is not held to it, see [`Initiative`]), quiet hours (the
//! organization's window in the lead's time zone), (4) the organization's compliance
//! HTTP service, which fails closed, and (5) the channel provider's own refusal. This
//! service hands nothing to a provider, so step 5 has no caller yet: an integration that
//! sends through one records the provider's refusal with [`Block::provider`].
//!
//! The HTTP check is slow and must not hold the writer, so [`first_steps`] runs steps 1
//! to 3 and quiet hours on a snapshot, the caller asks the service (the client is
//! `providers::compliance`; this module only says when to ask, what, and what the
//! answer means), then [`pass`] re-runs the local steps inside the write job (the lead
//! may have opted out meanwhile) before it sends or blocks.

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::channel::Channel;
use crate::domain::contact::quiet_hours::{in_quiet_hours, zone_of};
use crate::domain::records::consent;
use crate::domain::settings::org::DEFAULT_COMPLIANCE_TIMEOUT_MS;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::providers::compliance::{Answer, Question};
use crate::store::rows::{LeadRecord, OrgRecord, Purpose};
use crate::store::Reader;
use crate::store::{Store, WriteTx};

/// Which check suppressed an attempt: the `COMPLIANCE_BLOCKED` event's `source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockSource {
    /// The lead's or the organization's own settings (a target, a subscription, quiet
    /// hours).
    Configuration,
    /// The DNC list.
    ServiceDnc,
    /// The organization's compliance HTTP service.
    Http,
    /// The channel provider's refusal.
    ProviderError,
}

impl BlockSource {
    pub fn as_str(self) -> &'static str {
        match self {
            BlockSource::Configuration => "configuration",
            BlockSource::ServiceDnc => "service-dnc",
            BlockSource::Http => "http",
            BlockSource::ProviderError => "provider-error",
        }
    }
}

/// Why an attempt was suppressed: the event's `reason` and `source`.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub reason: String,
    pub source: BlockSource,
}

impl Block {
    fn new(reason: &str, source: BlockSource) -> Block {
        Block {
            reason: reason.to_string(),
            source,
        }
    }

    /// A cadence step whose text (or subject), rendered for its lead, is longer than
    /// its channel takes (`limits::step_text_chars`): never sent.
    pub fn too_long() -> Block {
        Block::new("CONTENT_TOO_LONG", BlockSource::Configuration)
    }

    /// Step 5: the channel provider refused with `code`.
    pub fn provider(code: &str) -> Block {
        Block::new(code, BlockSource::ProviderError)
    }
}

/// Who started the exchange an attempt belongs to, which says whether the consent
/// policy holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Initiative {
    /// Outreach the organization starts for a purpose: a cadence step (its `purpose`),
    /// a call the assistant schedules or the API requests (marketing).
    Outreach(Purpose),
    /// The assistant's reply to the lead's own message: the lead asked.
    Reply,
    /// A message a person (the console) or an integrator (the API) sends: a reply when
    /// the lead wrote first on its channel, marketing outreach otherwise.
    Message,
}

impl Initiative {
    /// The purpose the consent policy checks the attempt for; none for a reply.
    fn purpose(self, lead: &LeadRecord, channel: Channel) -> Option<Purpose> {
        match self {
            Initiative::Outreach(purpose) => Some(purpose),
            Initiative::Reply => None,
            Initiative::Message => {
                let wrote_first = match channel {
                    Channel::Sms => lead.has_replied,
                    Channel::Email => lead.has_replied_email,
                    Channel::Voice => false,
                };
                (!wrote_first).then_some(Purpose::Marketing)
            }
        }
    }
}

/// Steps 1 to 3, the consent policy (`consent_missing`, as read by [`check_locally`])
/// and quiet hours, on state already read.
pub fn local_check(
    org: &OrgRecord,
    lead: &LeadRecord,
    zone: &str,
    channel: Channel,
    on_dnc: bool,
    consent_missing: bool,
    now: DateTime<Utc>,
) -> Option<Block> {
    if !channel.reachable(lead) {
        return Some(Block::new(
            "COMPLIANCE_TARGET_MISSING",
            BlockSource::Configuration,
        ));
    }
    if channel.is_unsubscribed(&lead.subscriptions) {
        return Some(Block::new("UNSUBSCRIBED", BlockSource::Configuration));
    }
    if channel != Channel::Email && on_dnc {
        return Some(Block::new("DNC", BlockSource::ServiceDnc));
    }
    if consent_missing {
        return Some(Block::new("CONSENT_MISSING", BlockSource::Configuration));
    }
    if in_quiet_hours(org, zone, now) {
        return Some(Block::new("QUIET_HOURS", BlockSource::Configuration));
    }
    None
}

/// Step 4's question for the organization's compliance service, when one is configured
/// for `channel` (`providers::compliance` asks it).
pub fn service_question(org: &OrgRecord, lead: &LeadRecord, channel: Channel) -> Option<Question> {
    let settings = &org.settings;
    let url = settings.compliance_url.as_deref()?;
    if settings
        .compliance_channels
        .as_ref()
        .is_some_and(|c| !c.iter().any(|x| x == channel.as_str()))
    {
        return None;
    }
    let mut body = json!({"leadId": lead.id, "channel": channel.as_str(), "organization": org.id});
    if !lead.phone.is_empty() {
        body["phone"] = json!(lead.phone);
    }
    if !lead.email.is_empty() {
        body["email"] = json!(lead.email);
    }
    let timeout = std::time::Duration::from_millis(
        settings
            .compliance_timeout_ms
            .unwrap_or(DEFAULT_COMPLIANCE_TIMEOUT_MS),
    );
    Some(Question {
        url: url.to_string(),
        body,
        timeout,
    })
}

/// Step 4's block for the service's `answer`: none when it allowed the attempt; a
/// refusal without a reason is `BLOCKED_BY_COMPLIANCE_SERVICE`; no usable answer
/// blocks too (the check fails closed).
pub fn service_block(answer: Answer) -> Option<Block> {
    match answer {
        Answer::Allowed => None,
        Answer::Refused(reason) => {
            let reason = reason
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "BLOCKED_BY_COMPLIANCE_SERVICE".into());
            Some(Block {
                reason,
                source: BlockSource::Http,
            })
        }
        Answer::Unavailable => Some(Block::new(
            "COMPLIANCE_SERVICE_UNAVAILABLE",
            BlockSource::Http,
        )),
    }
}

/// Where the gate stands before the write job.
pub enum Gate {
    /// Steps 1 to 3 or quiet hours block already.
    Blocked(Block),
    /// They pass, and the compliance service is to be asked this.
    Ask(Question),
    /// They pass, and there is no service to ask.
    Clear,
}

/// Steps 1 to 3 and quiet hours for an attempt on `channel` to lead `lead_id`, on a
/// snapshot; then the service's question, if it is to be asked.
pub fn first_steps(
    store: &Store,
    caller: &Caller,
    lead_id: &str,
    channel: Channel,
    initiative: Initiative,
) -> Result<Gate> {
    let read = store.read()?;
    let lead = read
        .lead(&caller.org_id, lead_id)?
        .filter(|l| l.deleted_at.is_none())
        .ok_or_else(|| Error::lead_not_found(lead_id))?;
    let org = read
        .org(&caller.org_id)?
        .ok_or_else(|| Error::Internal("the caller's organization is missing".into()))?;
    Ok(
        match check_locally(&read, &org, &lead, channel, initiative)? {
            Some(block) => Gate::Blocked(block),
            None => match service_question(&org, &lead, channel) {
                Some(question) => Gate::Ask(question),
                None => Gate::Clear,
            },
        },
    )
}

/// Steps 1 to 3, the consent policy and quiet hours for `lead`, reading what they need
/// (the DNC list, the organization's settings, the lead's consent) from `read`.
pub fn check_locally(
    read: &impl Reader,
    org: &OrgRecord,
    lead: &LeadRecord,
    channel: Channel,
    initiative: Initiative,
) -> Result<Option<Block>> {
    let on_dnc = !lead.phone.is_empty() && read.dnc_contains(&org.id, &lead.phone)?;
    let settings = read.engine_settings(&org.id)?;
    let consent_missing = match initiative.purpose(lead, channel) {
        Some(purpose) if settings.consent_required.requires(channel, purpose) => {
            !consent::allows(read, &org.id, &lead.id, channel, purpose)?
        }
        _ => false,
    };
    let zone = zone_of(lead, &settings.time_zone);
    Ok(local_check(
        org,
        lead,
        zone,
        channel,
        on_dnc,
        consent_missing,
        Utc::now(),
    ))
}

/// Inside the write job: the local steps again (an opt-out may have been committed
/// while the service was asked), then what the service said. The local steps come
/// first in the order, so a block they find now names its own reason.
pub fn recheck(
    tx: &WriteTx,
    org_id: &str,
    lead: &LeadRecord,
    channel: Channel,
    initiative: Initiative,
    early: Option<Block>,
) -> Result<Option<Block>> {
    let org = tx
        .org(org_id)?
        .ok_or_else(|| Error::Internal("the lead's organization is missing".into()))?;
    Ok(check_locally(tx, &org, lead, channel, initiative)?.or(early))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::contact::quiet_hours::tests::{at, lead, org};

    #[test]
    fn steps_run_in_order() {
        let noon = at("2026-11-22T17:00:00Z");
        let mut l = lead();
        let reason = |o: &OrgRecord, l: &LeadRecord, c, dnc| {
            local_check(o, l, &l.time_zone, c, dnc, false, noon)
                .map(|b| (b.reason, b.source.as_str()))
        };
        assert_eq!(
            reason(&org(None), &l, Channel::Email, true),
            Some(("COMPLIANCE_TARGET_MISSING".into(), "configuration"))
        );
        l.subscriptions.sms_unsubscribed = true;
        assert_eq!(
            reason(&org(None), &l, Channel::Sms, true),
            Some(("UNSUBSCRIBED".into(), "configuration"))
        );
        assert_eq!(
            reason(&org(None), &l, Channel::Voice, true),
            Some(("DNC".into(), "service-dnc"))
        );
        assert_eq!(reason(&org(None), &l, Channel::Voice, false), None);
        let missing = local_check(&org(None), &l, "", Channel::Voice, false, true, noon);
        assert_eq!(
            missing.map(|b| (b.reason, b.source.as_str())),
            Some(("CONSENT_MISSING".into(), "configuration"))
        );
    }
}

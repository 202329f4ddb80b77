//! Running one leased agenda row: ask the compliance service when one is configured
//! (slow, so before the write: `engine::gate`), take the provider's pacing slot (a send: waited for, or
//! the row is parked until it comes), claim the row in a write job (`domain::engagement::claims`), then carry out what the claim asks through the
//! channel's provider and commit the answer.

use std::time::{Duration, Instant};

use chrono::Utc;

use super::pacing::Turn;
use super::Engine;
use crate::channel::Channel;
use crate::domain::contact::compliance::Block;
use crate::domain::conversation::hold;
use crate::domain::engagement::agenda::{JobKey, Taken};
use crate::domain::engagement::claims::{self, Claim};
use crate::domain::engagement::{outbound, reminders};
use crate::domain::voice::voice;
use crate::error::Result;
use crate::providers::callbacks::{self, CallHook};
use crate::providers::{CallRequest, Provider, SendOutcome};
use crate::store::rows::{AgendaJob, JobKind, MeetingChange};
use crate::store::{Reader, WriteTx};

/// What running a row came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ran {
    /// Claimed and carried out (or failed, and left for another run).
    Done,
    /// Not run yet: its pacing slot is this far off. The scheduler leaves the row alone
    /// until then, and runs it again as holding its slot (`paced`).
    Parked(std::time::Duration),
}

/// Whether a send may go ahead ([`Engine::before_send`]).
enum Cleared {
    /// Its pacing turn is this far off: the job parks.
    Park(Duration),
    /// It goes, with the compliance service's block if the service gave one.
    Go(Option<Block>),
}

/// A job's claim, taken in one write with the row's proof ([`Taken`]) and the
/// compliance service's block when it gave one; called again if the writer runs its
/// batch again.
type ClaimFn = Box<dyn Fn(&mut WriteTx, Taken, Option<Block>) -> Result<Claim> + Send + Sync>;

/// How a job kind is carried out: what clears it first, an invitation it sends once
/// cleared, and its claim.
struct Plan {
    gate: Gate,
    invite: Option<Invite>,
    claim: ClaimFn,
}

/// What a job clears before its claim.
enum Gate {
    /// Nothing (a hold's timeout).
    Open,
    /// The channel's pacing turn and the compliance service (`before_send`), when the
    /// job sends on one (a step or a reminder with no reachable channel sends nothing).
    Send(Option<Channel>),
    /// The channel's pacing turn only (a keyword's notice is not held to the service).
    Slot(Channel),
}

/// A meeting's email invitation, sent once the confirmation's gate is cleared.
struct Invite {
    meeting_id: String,
    change: MeetingChange,
    text: String,
}

/// What a job kind comes to: a claim to take, or work its own worker did.
enum Planned {
    Claim(Plan),
    Ran(Ran),
}

impl Engine {
    /// Runs the leased row `key`; `paced` when it already holds its pacing slot (it was
    /// parked until then). Every job kind comes to one [`Plan`] (or is run by its own
    /// worker); a plan's gate is cleared first (a job whose pacing turn is off parks),
    /// then its invitation goes out, then its claim is taken in one write and carried
    /// out.
    pub(super) async fn run_job(&self, key: JobKey, job: AgendaJob, paced: bool) -> Result<Ran> {
        let AgendaJob {
            org_id: org,
            lead_id: lead,
            kind,
        } = job;
        let plan = match self.plan(&key, &org, &lead, kind).await? {
            Planned::Claim(plan) => plan,
            Planned::Ran(ran) => return Ok(ran),
        };
        let early = match plan.gate {
            Gate::Open | Gate::Send(None) => None,
            Gate::Send(Some(channel)) => match self.before_send(&org, &lead, channel, paced).await?
            {
                Cleared::Park(far) => return Ok(Ran::Parked(far)),
                Cleared::Go(early) => early,
            },
            Gate::Slot(channel) => {
                if !paced {
                    if let Some(far) = self.take_slot(&org, channel).await? {
                        return Ok(Ran::Parked(far));
                    }
                }
                None
            }
        };
        if let Some(invite) = &plan.invite {
            self.invite(&org, &lead, &invite.meeting_id, invite.change, &invite.text)
                .await?;
        }
        let claim_of = plan.claim;
        let claim = self
            .store
            .write(move |tx| claims::taking(tx, &key, |tx, row| claim_of(tx, row, early.clone())))
            .await?;
        self.carry_out(claim).await.map(|_| Ran::Done)
    }

    /// What job `kind` of lead `lead` comes to: a [`Plan`] to claim, or the work done by
    /// the job's own worker (a reply, a bulk enrolment, post-call processing, a
    /// recording's fetch) or nothing left to do.
    async fn plan(&self, key: &JobKey, org: &str, lead: &str, kind: JobKind) -> Result<Planned> {
        let (o, l) = (org.to_string(), lead.to_string());
        let plan = |gate, claim: ClaimFn| {
            Planned::Claim(Plan {
                gate,
                invite: None,
                claim,
            })
        };
        Ok(match kind {
            JobKind::Step { index } => plan(
                Gate::Send(self.step_channel(org, lead, index)?),
                Box::new(move |tx, row, early| {
                    claims::claim_step(tx, row, &o, &l, index, early, Utc::now())
                }),
            ),
            JobKind::Reply { channel } => {
                // One reply of a lead asks the model at a time: a later one waits parked
                // (its row stays in the agenda), then answers every message so far.
                let Some(_turn) = self.replying.start(org, lead) else {
                    return Ok(Planned::Ran(Ran::Parked(super::reply::BUSY_LEAD_RECHECK)));
                };
                self.reply(key.clone(), org, lead, channel).await?;
                Planned::Ran(Ran::Done)
            }
            JobKind::Notice { channel, text } => plan(
                Gate::Slot(channel),
                Box::new(move |tx, row, _| claims::claim_notice(tx, row, &o, &l, channel, &text)),
            ),
            JobKind::Call => plan(
                Gate::Send(Some(Channel::Voice)),
                Box::new(move |tx, row, early| claims::claim_call(tx, row, &o, &l, early)),
            ),
            JobKind::HoldTimeout => plan(
                Gate::Open,
                Box::new(move |tx, row, _| hold::time_out(tx, row, &o, &l).map(|_| Claim::Done)),
            ),
            JobKind::Enrolment { job } => {
                self.enrol_in_bulk(key.clone(), org, &job).await?;
                Planned::Ran(Ran::Done)
            }
            JobKind::Reminder { meeting_id, start } => plan(
                Gate::Send(self.reminder_channel(org, lead)?),
                Box::new(move |tx, row, early| {
                    claims::claim_reminder(tx, row, &o, &l, &meeting_id, start, early, Utc::now())
                }),
            ),
            JobKind::MeetingConfirmation { meeting_id, change } => {
                let Some((channel, text)) = self.confirmation(org, lead, &meeting_id, change)?
                else {
                    self.drop_job(key.clone()).await?;
                    return Ok(Planned::Ran(Ran::Done));
                };
                let invite = Invite {
                    meeting_id: meeting_id.clone(),
                    change,
                    text: text.clone(),
                };
                Planned::Claim(Plan {
                    gate: Gate::Send(Some(channel)),
                    invite: Some(invite),
                    claim: Box::new(move |tx, row, early| {
                        let confirmation = claims::Confirmation {
                            meeting_id: &meeting_id,
                            channel,
                            text: &text,
                        };
                        claims::claim_meeting_confirmation(tx, row, &o, &l, confirmation, early)
                    }),
                })
            }
            JobKind::PostCall { call_id } => {
                self.post_call(key.clone(), org, &call_id).await?;
                Planned::Ran(Ran::Done)
            }
            JobKind::FetchRecording {
                call_id,
                url,
                attempt,
            } => {
                self.fetch_recording(key.clone(), org, lead, &call_id, &url, attempt)
                    .await?;
                Planned::Ran(Ran::Done)
            }
        })
    }

    /// Before a send on `channel`: the channel's pacing turn unless the job already had
    /// it (a turn far off parks the job), then the compliance service's answer.
    async fn before_send(
        &self,
        org: &str,
        lead: &str,
        channel: Channel,
        paced: bool,
    ) -> Result<Cleared> {
        if !paced {
            if let Some(far) = self.take_slot(org, channel).await? {
                return Ok(Cleared::Park(far));
            }
        }
        Ok(Cleared::Go(self.ask_service(org, lead, channel).await?))
    }

    /// The channel a reminder to the lead would go on, if it has a phone or an email.
    fn reminder_channel(&self, org: &str, lead: &str) -> Result<Option<Channel>> {
        Ok(self
            .store
            .read()?
            .lead(org, lead)?
            .as_ref()
            .and_then(reminders::channel_for))
    }

    /// The channel of step `index` of the lead's cadence, if it still has one.
    fn step_channel(&self, org: &str, lead: &str, index: u32) -> Result<Option<Channel>> {
        let read = self.store.read()?;
        let Some(engagement) = read.engagement(org, lead)? else {
            return Ok(None);
        };
        Ok(read
            .profile(org, &engagement.profile)?
            .and_then(|p| p.cadence.get(index as usize).map(|s| s.channel)))
    }

    /// Takes the next slot of `org`'s `channel` provider, when it has a sending rate
    /// (`engine::pacing`), before a send's claim: waits for a near slot, or answers how
    /// far off a far one is (the job then parks).
    async fn take_slot(&self, org: &str, channel: Channel) -> Result<Option<Duration>> {
        let Some(wait) = self.slot_wait(org, channel)? else {
            return Ok(None);
        };
        match Turn::of(wait) {
            Turn::Wait(wait) => {
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
                Ok(None)
            }
            Turn::Park(far) => Ok(Some(far)),
        }
    }

    /// Takes the next slot of `org`'s `channel` provider and waits for it, however far:
    /// a reply, whose model answer is already in hand.
    pub(super) async fn pace(&self, org: &str, channel: Channel) -> Result<()> {
        if let Some(wait) = self.slot_wait(org, channel)? {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
        Ok(())
    }

    /// Reserves the next slot of `org`'s `channel` provider; how long until it comes
    /// (`None`: the provider has no rate).
    fn slot_wait(&self, org: &str, channel: Channel) -> Result<Option<Duration>> {
        let settings = self.store.read()?.engine_settings(org)?;
        let provider = match channel {
            Channel::Sms => &settings.sms,
            Channel::Voice => &settings.voice,
            Channel::Email => &settings.email,
        };
        Ok(provider
            .rate_per_second()
            .map(|rate| self.pacer.reserve(org, channel, rate, Instant::now())))
    }

    /// Hands a claimed send or call to the provider and commits its answer.
    pub(super) async fn carry_out(&self, claim: Claim) -> Result<()> {
        match claim {
            Claim::Done => Ok(()),
            Claim::Send(attempt) => {
                let settings = self.store.read()?.engine_settings(&attempt.row.org_id)?;
                let provider = Provider::for_channel(&settings, attempt.channel);
                let outcome = match attempt.channel {
                    Channel::Email => self.send_email(&provider, &attempt).await,
                    Channel::Sms | Channel::Voice => {
                        let mut outgoing = attempt.outgoing.clone();
                        // Only Twilio reports a message's fate to a callback.
                        outgoing.status_callback = self
                            .public_url()
                            .filter(|_| matches!(provider, Provider::Twilio(_)))
                            .map(|base| callbacks::sms_status(base, &attempt.row.org_id));
                        // Every request counts: a retried one as `retried`.
                        let retried = || {
                            self.metrics.provider(
                                attempt.channel.as_str(),
                                provider.kind(),
                                "retried",
                            )
                        };
                        provider.send_text(&self.client, &outgoing, &retried).await
                    }
                };
                self.count(attempt.channel, &provider, &outcome);
                let row = attempt.row;
                self.store
                    .write(move |tx| outbound::finish(tx, &row, &outcome))
                    .await
            }
            Claim::Call { call_id, to, org } => {
                let settings = self.store.read()?.engine_settings(&org)?;
                let provider = Provider::for_channel(&settings, Channel::Voice);
                let url = |hook| {
                    self.public_url()
                        .map(|base| callbacks::call(base, &org, &call_id, hook))
                        .unwrap_or_default()
                };
                let request = CallRequest {
                    to,
                    twiml_url: url(CallHook::Twiml),
                    status_callback: url(CallHook::Status),
                    recording_callback: url(CallHook::Recording),
                };
                let retried = || self.metrics.provider("voice", provider.kind(), "retried");
                let outcome = provider.start_call(&self.client, &request, &retried).await;
                self.metrics
                    .provider("voice", provider.kind(), outcome.result());
                self.store
                    .write(move |tx| voice::dialed(tx, &org, &call_id, &outcome))
                    .await
            }
        }
    }

    fn count(&self, channel: Channel, provider: &Provider, outcome: &SendOutcome) {
        self.metrics
            .provider(channel.as_str(), provider.kind(), outcome.result());
    }
}

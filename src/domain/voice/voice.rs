//! Calls engaged places and answers through a voice provider: the rules that run
//! inside write jobs when a call is requested, answered, moves on, or ends.
//!
//! Each call has its record (`calls`, the interface's view, with its `CALL` event and
//! once-only webhooks) and a [`VoiceSession`] beside it: engaged's own side (lead,
//! profile, what a call without the assistant says, the provider's id, the transfer
//! stage). The provider's webhooks (`api::voice`) and the relay (`engine::voice`) call
//! in here; what to tell the provider comes back as an [`Answer`], which the caller
//! renders as TwiML. Transfers have their own file (`transfer`), the transcript too
//! (`transcript`).
//!
//! The call opt-out: an outbound call's relay greeting ends with how to opt out
//! (`voiceOptOutSentence`, on by default), and the organization's keypad digit
//! (`voiceOptOutDigit`) or a definite spoken opt-out (`revocation::read`) in a lead's
//! turn opts the lead out of voice ([`CallOptOut`], [`opt_out`]) with a ledger entry of
//! source `call`; the relay then says [`OPT_OUT_GOODBYE`] and ends the session.

use crate::channel::{Channel, OptOutSource};
use crate::domain::contact::revocation::{self, Reading};
use crate::domain::engagement::agenda::{self, JobKey};
use crate::domain::engagement::reactions::React;
use crate::domain::records::calls::{self, CallInput};
use crate::domain::records::consent::Change;
use crate::domain::records::subscriptions;
use crate::domain::settings::org::business_name;
use crate::domain::settings::templates;
use crate::domain::voice::transcript;
use crate::domain::Caller;
use crate::error::{Error, Result};
use crate::providers::{CallOutcome, CallStatus};
use crate::store::rows::{
    CallDetails, CallRecord, ConsentSource, Direction, JobKind, KeypadDigit, LeadRecord, OnMachine,
    ProfileRecord, VoiceOptOut, VoiceSession,
};
use crate::store::{Reader, WriteTx};
use crate::time::Timestamp;

/// The profile an unknown caller's call follows, when the organization has one.
pub const DEFAULT_PROFILE: &str = "default";
/// An outbound call's greeting when its profile sets none.
pub const DEFAULT_GREETING: &str = "Hi {{firstName}}, this is {{business.name}}.";
/// An inbound call's greeting when its profile sets none.
pub const DEFAULT_INBOUND_GREETING: &str = "Thanks for calling {{business.name}}. How can I help?";
/// What an inbound call hears when no assistant can take it.
pub const INBOUND_WITHOUT_ASSISTANT: &str =
    "Thanks for calling {{business.name}}. We will call you back soon.";

/// What the lead hears when no one took a transfer, without an assistant to go back to.
pub const NO_ONE_AVAILABLE: &str =
    "Sorry, no one can take your call right now. We will call you back soon.";

/// What the relay says before it ends a call the lead opted out on.
pub const OPT_OUT_GOODBYE: &str = "You won't receive more calls from us. Goodbye.";

/// The sentence an outbound relay call's greeting ends with, for `digit`.
pub fn opt_out_sentence(digit: KeypadDigit) -> String {
    format!("To stop these calls, press {digit} or say stop.")
}

/// How a lead opted out on a call: the organization's digit pressed, or a definite
/// opt-out in a spoken turn (`Stop calling me please`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOptOut {
    Pressed(KeypadDigit),
    Said(String),
}

impl CallOptOut {
    /// A keypad digit: an opt-out when it is the organization's.
    pub fn of_digit(settings: &VoiceOptOut, pressed: &str) -> Option<CallOptOut> {
        KeypadDigit::parse(pressed.trim())
            .filter(|d| *d == settings.digit)
            .map(CallOptOut::Pressed)
    }

    /// A lead's whole turn: an opt-out when it reads as a definite one, with the
    /// organization's own opt-out words (`optOutKeywords`) beside the per-se ones, that
    /// names calls or no channel (`don't text me`, said on a call, is not about calls).
    pub fn of_words(words: &str, own_keywords: &[String]) -> Option<CallOptOut> {
        let of_calls = match revocation::read(words, own_keywords) {
            Reading::Definite(named) => named.is_none() || named.names(Channel::Voice),
            Reading::Possible | Reading::Nothing => false,
        };
        of_calls.then(|| CallOptOut::Said(words.trim().to_string()))
    }

    /// The ledger's proof: `pressed 9`, or the lead's words.
    pub fn proof(&self) -> String {
        match self {
            CallOptOut::Pressed(digit) => format!("pressed {digit}"),
            CallOptOut::Said(words) => words.clone(),
        }
    }
}

/// The lead of call `call_id` opted out on it: its voice channel (and SMS, when the
/// organization couples them) is unsubscribed with `lead.opted_out` (source `keyword`)
/// and a `revoked` ledger entry of source `call` whose proof is what the lead did. A
/// call without a live lead, or one already opted out, changes nothing.
pub fn opt_out(tx: &mut WriteTx, org: &str, call_id: &str, how: &CallOptOut) -> Result<()> {
    let session = session(tx, org, call_id)?;
    let Some(lead) = session
        .lead()
        .map(|id| tx.lead(org, id))
        .transpose()?
        .flatten()
        .filter(|l| l.deleted_at.is_none())
    else {
        return Ok(());
    };
    let channels: &[Channel] = if subscriptions::sms_channels(tx, org)?.contains(&Channel::Voice) {
        &[Channel::Sms, Channel::Voice]
    } else {
        &[Channel::Voice]
    };
    let change = Change::words(ConsentSource::Call, &how.proof());
    subscriptions::opt_out(tx, org, lead, channels, OptOutSource::Keyword, &change).react(tx)?;
    Ok(())
}

/// What the provider is told to do next on a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Connect the caller to the assistant over the relay; the provider speaks the
    /// greeting first.
    Relay { greeting: String },
    /// Say this, then hang up.
    Say(String),
    /// Hang up.
    Hangup,
    /// Ring a human: `attempt` 1 is the profile's `transferNumber`, 2 its fallback.
    Dial { number: String, attempt: u8 },
    /// A warm transfer: say this, then hold the caller alone in the conference named
    /// for the call, hearing `music` (Twilio's default when empty).
    Hold { say: String, music: String },
}

/// A status callback's contents, parsed.
#[derive(Debug, Clone, Default)]
pub struct StatusUpdate {
    pub status: Option<CallStatus>,
    pub duration_seconds: Option<u64>,
    /// Twilio's `AnsweredBy` (answering-machine detection).
    pub answered_by: Option<String>,
}

/// The session of call `call_id`; 404 when engaged did not place or answer it.
pub fn session(read: &impl Reader, org: &str, call_id: &str) -> Result<VoiceSession> {
    read.voice_session(org, call_id)?
        .ok_or_else(|| Error::NotFound(format!("Resource not found: Call {call_id}")))
}

/// Records an outbound call to `lead` before the provider is asked to dial it: the call
/// (`QUEUED`, AI-initiated, a follow-up after a cadence's first step) with its `CALL`
/// event, and its session. `say` is what the call says without the assistant (a cadence
/// step's text; empty: the greeting).
pub fn start_outbound(
    tx: &mut WriteTx,
    org: &str,
    lead: &LeadRecord,
    follow_up: bool,
    say: String,
) -> Result<CallRecord> {
    let call_id = crate::ids::generate("call");
    let changes = CallDetails {
        lead_id: Some(lead.id.clone()),
        direction: Some(Direction::Outbound),
        call_status: Some(CallStatus::Queued.as_str().to_string()),
        is_ai_initiated: Some(true),
        is_follow_up: Some(follow_up),
        ..CallDetails::default()
    };
    let (call, _) =
        calls::put(tx, &Caller::system(org), &call_id, CallInput::set(changes)).react(tx)?;
    let session = VoiceSession {
        lead_id: lead.id.clone(),
        profile: lead.customer_profile.clone(),
        say,
        ..VoiceSession::default()
    };
    tx.put_voice_session(org, &call_id, &session)?;
    Ok(call)
}

/// The voice provider's answer to a dial. A refusal fails the call; an accepted call
/// notes the provider's id and status; a lost answer changes nothing (the status
/// callbacks will tell, and the call is never dialled twice).
pub fn dialed(tx: &mut WriteTx, org: &str, call_id: &str, outcome: &CallOutcome) -> Result<()> {
    match outcome {
        CallOutcome::Accepted {
            provider_call_id,
            status,
        } => {
            if let Some(mut session) = tx.voice_session(org, call_id)? {
                session.provider_call_id = provider_call_id.clone();
                tx.put_voice_session(org, call_id, &session)?;
                tx.put_provider_call(org, provider_call_id, call_id)?;
            }
            let update = StatusUpdate {
                status: Some(*status),
                duration_seconds: status.is_final().then_some(0),
                answered_by: None,
            };
            status_changed(tx, org, call_id, &update)?;
        }
        CallOutcome::Refused { code } => {
            tracing::warn!(org, call = call_id, code = %code, "the voice provider refused a call");
            let update = StatusUpdate {
                status: Some(CallStatus::Failed),
                ..StatusUpdate::default()
            };
            status_changed(tx, org, call_id, &update)?;
        }
        CallOutcome::Unknown { error } => {
            tracing::warn!(org, call = call_id, %error, "the voice provider's answer to a dial was lost; the call is not dialled again");
        }
    }
    Ok(())
}

/// Whether the assistant takes calls of this organization, for this lead (none: an
/// unknown caller).
pub(super) fn assistant_takes(tx: &WriteTx, org: &str, lead: Option<&LeadRecord>) -> Result<bool> {
    let configured = tx.engine_settings(org)?.assistant.is_some();
    Ok(configured && lead.is_none_or(|l| l.is_ai_on))
}

fn profile_of(tx: &WriteTx, org: &str, name: &str) -> Result<Option<ProfileRecord>> {
    if name.is_empty() {
        return Ok(None);
    }
    tx.profile(org, name)
}

/// The profile's `voiceGreeting` template, or `default` when it sets none.
fn greeting_of<'a>(profile: Option<&'a ProfileRecord>, default: &'a str) -> &'a str {
    profile
        .map(|p| p.voice_greeting.as_str())
        .filter(|g| !g.is_empty())
        .unwrap_or(default)
}

/// A template rendered for `lead` (or, for an unknown caller, with empty lead fields);
/// "Hi , this" becomes "Hi, this" when the lead has no first name. Cleaned as every
/// text that leaves (`carrier_text::clean`): a lead value stored before the character
/// rule is spoken without its control characters.
fn render(
    tx: &impl Reader,
    org: &str,
    template: &str,
    lead: Option<&LeadRecord>,
) -> Result<String> {
    let business = business_name(tx, org)?;
    let empty = LeadRecord::default();
    let text = templates::render(template, lead.unwrap_or(&empty), &business);
    Ok(crate::carrier_text::clean(&text).replace(" ,", ","))
}

/// What a call screener hears on call `call` (`voice::screening`): the profile's
/// `screeningReply` (else the default) rendered for the lead; `None` unless engaged
/// placed the call to a lead (an outbound AI call).
pub fn screening_reply(
    read: &impl Reader,
    org: &str,
    call: &CallRecord,
    lead: Option<&LeadRecord>,
    profile: Option<&ProfileRecord>,
) -> Result<Option<String>> {
    let outbound = call.details.direction == Some(Direction::Outbound)
        && call.details.is_ai_initiated == Some(true);
    let Some(lead) = lead.filter(|_| outbound) else {
        return Ok(None);
    };
    let template = profile
        .map(|p| p.screening_reply.as_str())
        .filter(|t| !t.trim().is_empty())
        .unwrap_or(super::screening::DEFAULT_REPLY);
    render(read, org, template, Some(lead)).map(Some)
}

/// What the relay learned of a call screener: it answered (`Hit`), and then whether a
/// person came on the line (`Reached`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screened {
    Hit,
    Reached(bool),
}

/// Records on call `call_id` what the relay learned of its screener:
/// `hitCallScreening`, `reachedHumanAfterScreening`.
pub fn screened(tx: &mut WriteTx, org: &str, call_id: &str, mark: Screened) -> Result<()> {
    let Some(call) = tx.call(org, call_id)? else {
        return Ok(());
    };
    let mut changes = CallDetails::default();
    match mark {
        Screened::Hit => changes.hit_call_screening = Some(true),
        Screened::Reached(reached) => changes.reached_human_after_screening = Some(reached),
    }
    update_call(tx, org, &call, CallInput::set(changes)).map(drop)
}

/// Notes on the session what the assistant's side says first, for the transcript.
fn remember_greeting(tx: &mut WriteTx, org: &str, call_id: &str, greeting: &str) -> Result<()> {
    let mut session = session(tx, org, call_id)?;
    if session.greeting != greeting {
        session.greeting = greeting.to_string();
        tx.put_voice_session(org, call_id, &session)?;
    }
    Ok(())
}

/// The twiml path of an outbound call: it was answered. The call is `IN_PROGRESS`;
/// the lead hears the assistant (with one configured and the lead's `isAiOn`), or the
/// session's text once.
pub fn answered(tx: &mut WriteTx, org: &str, call_id: &str) -> Result<Answer> {
    let session = session(tx, org, call_id)?;
    let update = StatusUpdate {
        status: Some(CallStatus::InProgress),
        ..StatusUpdate::default()
    };
    status_changed(tx, org, call_id, &update)?;
    let lead = match session.lead() {
        None => None,
        Some(id) => tx.lead(org, id)?.filter(|l| l.deleted_at.is_none()),
    };
    let profile = profile_of(tx, org, &session.profile)?;
    let greeting = greeting_of(profile.as_ref(), DEFAULT_GREETING);
    if assistant_takes(tx, org, lead.as_ref())? {
        let mut greeting = render(tx, org, greeting, lead.as_ref())?;
        let opt_out = tx.engine_settings(org)?.voice_opt_out;
        if opt_out.sentence {
            if !greeting.is_empty() {
                greeting.push(' ');
            }
            greeting.push_str(&opt_out_sentence(opt_out.digit));
        }
        remember_greeting(tx, org, call_id, &greeting)?;
        return Ok(Answer::Relay { greeting });
    }
    let text = if session.say.is_empty() {
        render(tx, org, greeting, lead.as_ref())?
    } else {
        crate::carrier_text::clean(&session.say)
    };
    Ok(Answer::Say(text))
}

/// A call to the organization's number from `from` (E.164), with the provider's id:
/// the call (`INBOUND`, `IN_PROGRESS`, the caller's live lead if any, `isForward` when
/// the provider says another number `forwarded` it) and its session, once per provider
/// id; a repeat answers the call created the first time.
pub fn inbound(
    tx: &mut WriteTx,
    org: &str,
    provider_call_id: &str,
    from: &str,
    forwarded: bool,
) -> Result<(String, Answer)> {
    let lead = crate::domain::records::leads::lead_by_phone(tx, org, from)?;
    answer_inbound(tx, org, provider_call_id, lead, None, forwarded)
}

/// A call from a web chat visitor's browser (Twilio's `From=client:web_<sessionId>`):
/// answered as any inbound call, its record carrying `sessionId` and the session's
/// lead once it has one. `None` when the organization has no such session, or its web
/// chat offers no voice: the call is refused and nothing is written.
pub fn inbound_browser(
    tx: &mut WriteTx,
    org: &str,
    provider_call_id: &str,
    session_id: &str,
) -> Result<Option<(String, Answer)>> {
    let chat = tx.webchat_settings(org)?;
    if !chat.enabled || !chat.voice {
        return Ok(None);
    }
    let Some(session) = tx.webchat_session(org, session_id)? else {
        return Ok(None);
    };
    let lead = match &session.lead_id {
        Some(id) => tx.lead(org, id)?.filter(|l| l.deleted_at.is_none()),
        None => None,
    };
    answer_inbound(
        tx,
        org,
        provider_call_id,
        lead,
        Some(session.id.clone()),
        false,
    )
    .map(Some)
}

/// An inbound call's record (once per provider call id) and its answer.
fn answer_inbound(
    tx: &mut WriteTx,
    org: &str,
    provider_call_id: &str,
    lead: Option<LeadRecord>,
    session_id: Option<String>,
    forwarded: bool,
) -> Result<(String, Answer)> {
    let call_id = match tx.provider_call(org, provider_call_id)? {
        Some(call_id) => call_id,
        None => {
            let call_id = crate::ids::generate("call");
            let changes = CallDetails {
                lead_id: lead.as_ref().map(|l| l.id.clone()),
                session_id,
                direction: Some(Direction::Inbound),
                call_status: Some(CallStatus::InProgress.as_str().to_string()),
                is_ai_initiated: Some(false),
                is_forward: Some(forwarded),
                ..CallDetails::default()
            };
            calls::put_unattached(tx, &Caller::system(org), &call_id, CallInput::set(changes))
                .react(tx)?;
            let profile = match &lead {
                Some(lead) => lead.customer_profile.clone(),
                None => DEFAULT_PROFILE.to_string(),
            };
            let session = VoiceSession {
                lead_id: lead.as_ref().map(|l| l.id.clone()).unwrap_or_default(),
                profile,
                provider_call_id: provider_call_id.to_string(),
                ..VoiceSession::default()
            };
            tx.put_voice_session(org, &call_id, &session)?;
            tx.put_provider_call(org, provider_call_id, &call_id)?;
            call_id
        }
    };
    let session = session(tx, org, &call_id)?;
    let profile = profile_of(tx, org, &session.profile)?;
    let answer = if assistant_takes(tx, org, lead.as_ref())? {
        let greeting = greeting_of(profile.as_ref(), DEFAULT_INBOUND_GREETING);
        let greeting = render(tx, org, greeting, lead.as_ref())?;
        remember_greeting(tx, org, &call_id, &greeting)?;
        Answer::Relay { greeting }
    } else {
        Answer::Say(render(tx, org, INBOUND_WITHOUT_ASSISTANT, lead.as_ref())?)
    };
    Ok((call_id, answer))
}

/// What a machine that answered the call gets: the profile's voicemail rendered for
/// the lead when it says `leave` (and a fax never), else a hang-up.
fn machine_answer(
    tx: &WriteTx,
    org: &str,
    session: &VoiceSession,
    answered_by: &str,
) -> Result<MachineAnswer> {
    let voicemail = profile_of(tx, org, &session.profile)?.and_then(|p| p.voicemail);
    let lead = match session.lead() {
        Some(id) => tx.lead(org, id)?,
        None => None,
    };
    Ok(match voicemail {
        Some(v) if v.on_machine == OnMachine::Leave && answered_by != "fax" => {
            MachineAnswer::Leave(render(tx, org, &v.text, lead.as_ref())?)
        }
        _ => MachineAnswer::HangUp,
    })
}

/// Records that the voicemail was left on call `call_id` (the provider took the
/// TwiML): `hasVoicemail`.
pub fn voicemail_left(tx: &mut WriteTx, org: &str, call_id: &str) -> Result<()> {
    let Some(call) = tx.call(org, call_id)? else {
        return Ok(());
    };
    let changes = CallDetails {
        has_voicemail: Some(true),
        ..CallDetails::default()
    };
    update_call(tx, org, &call, CallInput::set(changes)).map(drop)
}

/// The status this call's record has, as a provider status (none when a client wrote
/// one engaged does not know).
fn current_status(call: &CallRecord) -> Option<CallStatus> {
    call.details
        .call_status
        .as_deref()
        .and_then(CallStatus::from_wire)
}

/// What a live outbound AI call answered by a machine does next: the caller gives it
/// this TwiML through the provider (never from the writer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MachineAnswer {
    /// Speak the profile's voicemail (rendered for the lead) once, then hang up.
    Leave(String),
    /// Hang up: the profile leaves no voicemail, or a fax answered.
    HangUp,
}

/// What a status callback changed: whether the call is one of engaged's, and what a
/// machine that answered it should get.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatusOutcome {
    pub found: bool,
    pub machine: Option<MachineAnswer>,
    /// A machine began its greeting (`machine_start`) on a live outbound AI call: its
    /// end is awaited, then [`MACHINE_END_WAIT`] later [`machine_gave_no_end`] says
    /// whether it still must be hung up on.
    pub machine_started: bool,
}

/// How long a machine's greeting may run without its end (`machine_end_*`) before the
/// call hangs up, as if the profile said `hang_up`.
pub const MACHINE_END_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// [`MACHINE_END_WAIT`] after a `machine_start`: when no verdict came since (no
/// `machine_end_*`, no person) and the call is live, the verdict is "no voicemail" and
/// the caller hangs up (answers `true`); otherwise nothing (`false`).
pub fn machine_gave_no_end(tx: &mut WriteTx, org: &str, call_id: &str) -> Result<bool> {
    let Some(call) = tx.call(org, call_id)? else {
        return Ok(false);
    };
    let live = current_status(&call).is_none_or(|s| !s.is_final());
    if call.details.has_voicemail.is_some() || !live {
        return Ok(false);
    }
    let changes = CallDetails {
        has_voicemail: Some(false),
        ..CallDetails::default()
    };
    update_call(tx, org, &call, CallInput::set(changes))?;
    Ok(true)
}

/// A status callback (or the dial's own answer): the status moves forward only, a
/// final status stays; the duration is noted. The answering-machine result, once: a
/// person clears `hasVoicemail`; a machine (its greeting ended: `machine_end_*`, or a
/// fax) on a live outbound AI call gets the profile's voicemail or a hang-up
/// ([`MachineAnswer`]; `hasVoicemail` only once a message was left: [`voicemail_left`]).
/// When the call first ends: `aiCallWithoutHumanResponse` for an AI-initiated call,
/// and post-call processing when it is `COMPLETE` with at least two spoken turns and
/// an assistant is configured. Not found when the call is not one of engaged's.
pub fn status_changed(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    update: &StatusUpdate,
) -> Result<StatusOutcome> {
    let (Some(call), Some(mut session)) = (tx.call(org, call_id)?, tx.voice_session(org, call_id)?)
    else {
        return Ok(StatusOutcome::default());
    };
    let mut outcome = StatusOutcome {
        found: true,
        machine: None,
        machine_started: false,
    };
    let before = current_status(&call);
    let mut changes = CallDetails::default();
    let mut ended = None;
    if let Some(status) = update.status {
        let forward = match before {
            None => true,
            Some(before) => !before.is_final() && status.rank() > before.rank(),
        };
        if forward {
            changes.call_status = Some(status.as_str().to_string());
            if status.is_final() {
                ended = Some(status);
            }
        }
    }
    if let Some(seconds) = update.duration_seconds {
        changes.duration_seconds = Some(seconds);
    }
    // Twilio reports the detection once; a repeat finds `hasVoicemail` already said.
    let first_verdict = call.details.has_voicemail.is_none();
    match update.answered_by.as_deref() {
        Some("human") if first_verdict => changes.has_voicemail = Some(false),
        Some(machine)
            if first_verdict && (machine.starts_with("machine_end_") || machine == "fax") =>
        {
            changes.has_voicemail = Some(false);
            let live = current_status(&call).is_none_or(|s| !s.is_final());
            let outbound_ai = call.details.direction == Some(Direction::Outbound)
                && call.details.is_ai_initiated == Some(true);
            if live && outbound_ai {
                outcome.machine = Some(machine_answer(tx, org, &session, machine)?);
            }
        }
        Some("machine_start") if first_verdict => {
            let live = current_status(&call).is_none_or(|s| !s.is_final());
            let outbound_ai = call.details.direction == Some(Direction::Outbound)
                && call.details.is_ai_initiated == Some(true);
            outcome.machine_started = live && outbound_ai;
        }
        _ => {}
    }
    if changes == CallDetails::default() {
        return Ok(outcome);
    }
    let turns = transcript::turns(&call);
    if ended.is_some() && call.details.is_ai_initiated == Some(true) {
        let lead_spoke = turns.iter().any(transcript::is_spoken_by_lead);
        changes.ai_call_without_human_response = Some(!lead_spoke);
    }
    update_call(tx, org, &call, CallInput::set(changes))?;
    let spoken = turns.iter().filter(|t| transcript::is_spoken(t)).count();
    if ended == Some(CallStatus::Complete)
        && !session.post_call_scheduled
        && spoken >= 2
        && tx.engine_settings(org)?.assistant.is_some()
    {
        session.post_call_scheduled = true;
        tx.put_voice_session(org, call_id, &session)?;
        agenda::schedule(
            tx,
            org,
            &session.lead_id,
            crate::time::now_micros(),
            JobKind::PostCall {
                call_id: call_id.to_string(),
            },
        )?;
    }
    Ok(outcome)
}

/// Applies `changes` to one of engaged's calls (with or without a lead).
pub fn update_call(
    tx: &mut WriteTx,
    org: &str,
    call: &CallRecord,
    changes: CallInput,
) -> Result<CallRecord> {
    let caller = Caller::system(org);
    let (call, _) = if call.details.lead_id.is_some() {
        calls::put(tx, &caller, &call.id, changes).react(tx)?
    } else {
        calls::put_unattached(tx, &caller, &call.id, changes).react(tx)?
    };
    Ok(call)
}

/// What post-call processing made of a call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Classified {
    pub summary: Option<String>,
    /// (id, name) of one of the profile's dispositions.
    pub disposition: Option<(String, String)>,
    /// Why it stopped short (the engagement's `lastError`).
    pub error: Option<String>,
}

/// Commits post-call processing (row `key`): the call's `summary` and disposition
/// (which sends `call.dispositioned` once), and a failure as the lead's engagement
/// `lastError`. Nothing when the row ran before.
pub fn classified(
    tx: &mut WriteTx,
    key: &JobKey,
    org: &str,
    call_id: &str,
    outcome: &Classified,
) -> Result<()> {
    if !agenda::done(tx, key)? {
        return Ok(());
    }
    let Some(call) = tx.call(org, call_id)? else {
        return Ok(());
    };
    let mut changes = CallDetails {
        summary: outcome.summary.clone(),
        ..CallDetails::default()
    };
    if let Some((id, name)) = &outcome.disposition {
        changes.disposition_id = Some(id.clone());
        changes.disposition_name = Some(name.clone());
        changes.disposition_classified_at = Some(Timestamp(tx.tick()));
    }
    if changes != CallDetails::default() {
        update_call(tx, org, &call, CallInput::set(changes))?;
    }
    if let (Some(error), Some(lead)) = (&outcome.error, &call.details.lead_id) {
        if tx.lead(org, lead)?.is_some() {
            let mut e = tx.engagement(org, lead)?.unwrap_or_default();
            e.last_error = format!("post-call: {error}");
            tx.put_engagement(org, lead, &e)?;
        }
    }
    Ok(())
}

/// A finished recording at the provider: a durable job fetches it. False when the call
/// is not one of engaged's.
pub fn recording_ready(tx: &mut WriteTx, org: &str, call_id: &str, url: &str) -> Result<bool> {
    let Some(session) = tx.voice_session(org, call_id)? else {
        return Ok(false);
    };
    agenda::schedule(
        tx,
        org,
        &session.lead_id,
        crate::time::now_micros(),
        JobKind::FetchRecording {
            call_id: call_id.to_string(),
            url: url.to_string(),
            attempt: 0,
        },
    )?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_organizations_digit_is_an_opt_out() {
        let nine = VoiceOptOut::default();
        assert_eq!(
            CallOptOut::of_digit(&nine, "9"),
            Some(CallOptOut::Pressed(KeypadDigit::NINE))
        );
        for other in ["5", "0", "#", "*", "99", ""] {
            assert_eq!(CallOptOut::of_digit(&nine, other), None, "{other}");
        }
        let seven = VoiceOptOut {
            digit: KeypadDigit::parse("7").unwrap(),
            sentence: false,
        };
        assert_eq!(CallOptOut::of_digit(&seven, "9"), None);
        let pressed = CallOptOut::of_digit(&seven, "7").unwrap();
        assert_eq!(pressed.proof(), "pressed 7");
    }

    #[test]
    fn the_organizations_own_keyword_said_on_a_call_is_an_opt_out() {
        let own = vec!["basta".to_string()];
        assert!(CallOptOut::of_words("Basta, please", &own).is_some());
        assert_eq!(CallOptOut::of_words("Basta, please", &[]), None);
    }

    #[test]
    fn a_definite_spoken_opt_out_is_one_and_a_possible_one_is_not() {
        for said in [
            "Stop calling me please",
            "STOP!",
            "Do not call me again",
            "Remove me from your list",
            "wrong number",
        ] {
            let how = CallOptOut::of_words(said, &[]).unwrap_or_else(|| panic!("{said}"));
            assert_eq!(how.proof(), said);
        }
        for said in [
            "Can we end this quickly, I have a question",
            "I'll be there at the end of the day",
            "Who is this?",
            "",
            // A refusal of another channel is not one of calls.
            "Don't text me, just call",
            "no more emails",
        ] {
            assert_eq!(CallOptOut::of_words(said, &[]), None, "{said}");
        }
    }

    #[test]
    fn the_sentence_names_the_digit() {
        assert_eq!(
            opt_out_sentence(KeypadDigit::NINE),
            "To stop these calls, press 9 or say stop."
        );
        assert_eq!(
            opt_out_sentence(KeypadDigit::parse("0").unwrap()),
            "To stop these calls, press 0 or say stop."
        );
    }
}

//! Warm transfers: the lead waits in a conference while a person is rung, hears who is
//! calling and why (the whisper), and takes the call with a digit; only then is the
//! lead bridged. A profile asks for one with `transfer.mode: warm`.
//!
//! The steps, each a provider webhook (`api::voice`, path `warm?step=...`) answered in
//! one write job: the hand-over ([`handover`]: the lead held in a conference named for
//! the call, the person rung), the dial's answer ([`dialed`]), the person's leg answered
//! ([`answered`]: a machine is hung up on, a person hears the whisper: the assistant's
//! summary, [`summarized`], or a template), their digit
//! ([`pressed`]: the `acceptDigit` joins them to the conference), their leg's status
//! ([`leg_status`]: busy, no answer, hung up in the whisper) and the conference's events
//! ([`conference`]: the first to leave a bridged call decides `endedBy`; the lead
//! leaving while held fails the transfer `lead_disconnected`). Not accepted, the
//! fallback number gets the same steps; nobody accepting takes the lead's call back to
//! the assistant, or says sorry and hangs up (the lead is then handed off to a person).
//!
//! What each step needs done through the provider comes back as [`Effect`]s, which the
//! engine carries out (`engine::warm`), never the writer. Each change goes to the call's
//! record, so the `CALL` event and each `call.transfer.*` webhook follow as for a cold
//! transfer (once: a step that finds the transfer elsewhere changes nothing).

use crate::domain::records::calls::CallInput;
use crate::domain::voice::transcript::{self, Role};
use crate::domain::voice::voice::{self, Answer, NO_ONE_AVAILABLE};
use crate::error::Result;
use crate::providers::CallOutcome;
use crate::store::rows::{
    AnswerStatus, AnsweredBy, CallDetails, CallRecord, EndedBy, TransferFailureCode,
    TransferSettings, TransferStage, TransferStatus, VoiceSession, WarmPhase, WarmTransfer,
};
use crate::store::{Reader, WriteTx};
use crate::time::{Micros, Timestamp};

/// How long the whisper waits for a digit.
pub const DIGIT_SECONDS: u32 = 10;
/// Whom the lead is connected with when the profile names nobody.
pub const DEFAULT_NAME: &str = "a member of our team";
/// What the assistant says when the lead's call comes back to it.
pub const NOBODY_TOOK_IT: &str = "I'm sorry, no one could take the call right now. \
     I can book a meeting for you, or have someone call you back. What would you prefer?";
/// What a person in the whisper hears when the lead hung up meanwhile.
pub const CALLER_HUNG_UP: &str = "The caller hung up.";
/// The most words of the whisper's summary.
pub const SUMMARY_WORDS: usize = 60;

/// What the lead hears before the hold music.
pub fn connecting(name: &str) -> String {
    let name = if name.trim().is_empty() {
        DEFAULT_NAME
    } else {
        name.trim()
    };
    format!("Connecting you with {name} now, one moment.")
}

/// What the person hears after the summary.
pub fn prompt(settings: &TransferSettings) -> String {
    format!("Press {} to take the call.", settings.accept_digit)
}

/// A person to ring: attempt 1 is `transferNumber`, 2 its fallback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ring {
    pub attempt: u8,
    pub number: String,
    pub ring_seconds: u32,
}

/// What engaged does next through the provider, after a step's commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Ring a person (`Calls.json`); its answer comes back to [`dialed`].
    Ring(Ring),
    /// Give the lead's call (`lead_sid`) new TwiML, out of the conference.
    TakeBack { lead_sid: String, answer: Answer },
    /// End the person's leg: told [`CALLER_HUNG_UP`] first when it is in the whisper
    /// (`told`), else cancelled while it rings.
    EndLeg { sid: String, told: bool },
    /// Nobody took the lead and no assistant will: hand it off to a person (Needs
    /// attention), as the assistant's `handoff` tool does.
    HandOff { lead_id: String },
}

/// What the person's leg is told to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leg {
    /// Hear `summary`, then `prompt`, and press a digit.
    Whisper { summary: String, prompt: String },
    /// Join the conference: the lead is bridged.
    Join,
    /// Hang up.
    Hangup,
}

/// A step's outcome: the answer to the webhook, and what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step<A> {
    pub answer: A,
    pub effects: Vec<Effect>,
}

impl<A> Step<A> {
    fn only(answer: A) -> Step<A> {
        Step {
            answer,
            effects: Vec::new(),
        }
    }
}

/// The profile's warm transfer settings for the call, when its transfer is warm.
pub fn settings(
    read: &impl Reader,
    org: &str,
    session: &VoiceSession,
) -> Result<Option<TransferSettings>> {
    if session.profile.is_empty() {
        return Ok(None);
    }
    Ok(read
        .profile(org, &session.profile)?
        .and_then(|p| p.transfer)
        .filter(|t| t.mode == crate::store::rows::TransferMode::Warm))
}

/// Everything a step reads: the call, its session, the transfer's state and settings.
struct Held {
    call: CallRecord,
    session: VoiceSession,
    warm: WarmTransfer,
    settings: TransferSettings,
    fallback: String,
}

fn held(tx: &WriteTx, org: &str, call_id: &str) -> Result<Option<Held>> {
    let (Some(call), Some(session), Some(warm)) = (
        tx.call(org, call_id)?,
        tx.voice_session(org, call_id)?,
        tx.warm_transfer(org, call_id)?,
    ) else {
        return Ok(None);
    };
    let Some(profile) = (!session.profile.is_empty())
        .then(|| tx.profile(org, &session.profile))
        .transpose()?
        .flatten()
    else {
        return Ok(None);
    };
    let settings = profile.transfer.unwrap_or_else(|| {
        crate::domain::settings::transfer::defaults(crate::store::rows::TransferMode::Warm)
    });
    Ok(Some(Held {
        call,
        session,
        warm,
        settings,
        fallback: profile.fallback_transfer_number,
    }))
}

fn save(tx: &mut WriteTx, org: &str, call_id: &str, h: &Held, changes: CallDetails) -> Result<()> {
    tx.put_warm_transfer(org, call_id, &h.warm)?;
    tx.put_voice_session(org, call_id, &h.session)?;
    if changes != CallDetails::default() {
        voice::update_call(tx, org, &h.call, CallInput::set(changes))?;
    }
    Ok(())
}

/// Seconds from the transfer's start to `now`.
fn waited(call: &CallRecord, now: Micros) -> u64 {
    let started = call
        .details
        .transfer_initiated_at
        .as_ref()
        .map_or(now, |t| t.0);
    seconds(now - started)
}

/// Micros to whole seconds, rounded to the nearest.
fn seconds(micros: Micros) -> u64 {
    (micros.max(0) as u64 + 500_000) / 1_000_000
}

/// The relay session ended with a transfer on a call whose profile's transfer is warm:
/// the lead is held in the conference named for the call (after [`connecting`]) and
/// `number` is rung. A repeated webhook holds the lead again without ringing anyone;
/// once the transfer is over (the call went back to the assistant, whose session ends
/// now), the call hangs up.
pub fn handover(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    settings: &TransferSettings,
    number: String,
    now: Micros,
) -> Result<Step<Answer>> {
    let hold = Answer::Hold {
        say: connecting(&settings.name),
        music: settings.hold_music_url.clone(),
    };
    match tx.warm_transfer(org, call_id)? {
        // Over: the lead's call came back (to the assistant) and is ending now.
        Some(warm) if warm.phase == WarmPhase::Ended => return Ok(Step::only(Answer::Hangup)),
        Some(_) => return Ok(Step::only(hold)),
        None => {}
    }
    let mut session = voice::session(tx, org, call_id)?;
    let Some(call) = tx.call(org, call_id)? else {
        return Ok(Step::only(Answer::Hangup));
    };
    session.transfer = TransferStage::Primary;
    tx.put_voice_session(org, call_id, &session)?;
    let warm = WarmTransfer {
        lead_sid: session.provider_call_id.clone(),
        attempt: 1,
        ..WarmTransfer::default()
    };
    tx.put_warm_transfer(org, call_id, &warm)?;
    let changes = CallDetails {
        is_transfer: Some(true),
        mid_call_transfer: Some(true),
        transfer_initiated_at: Some(Timestamp(now)),
        transfer_number: Some(number.clone()),
        transfer_answer_status: Some(AnswerStatus::Pending),
        agent_connected: Some(false),
        ..CallDetails::default()
    };
    voice::update_call(tx, org, &call, CallInput::set(changes))?;
    Ok(Step {
        answer: hold,
        effects: vec![Effect::Ring(Ring {
            attempt: 1,
            number,
            ring_seconds: settings.ring_seconds,
        })],
    })
}

/// Sets the answer status (and who answered) of `attempt`'s field.
fn answer_of(changes: &mut CallDetails, attempt: u8, status: AnswerStatus, by: Option<AnsweredBy>) {
    if attempt == 1 {
        changes.transfer_answer_status = Some(status);
        if by.is_some() {
            changes.transfer_answered_by = by;
        }
    } else {
        changes.transfer_fallback_answer_status = Some(status);
        if by.is_some() {
            changes.transfer_fallback_answered_by = by;
        }
    }
}

/// The person at `h.warm.attempt` did not take the call: the fallback is rung when
/// there is one (and this was the first), else the transfer failed and the lead's call
/// is taken back: to the assistant, which says [`NOBODY_TOOK_IT`], or, without one,
/// [`NO_ONE_AVAILABLE`] and a hang-up (the lead handed off to a person).
fn not_taken(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    h: &mut Held,
    changes: &mut CallDetails,
    now: Micros,
) -> Result<Vec<Effect>> {
    if h.warm.attempt == 1 && !h.fallback.is_empty() {
        h.warm.attempt = 2;
        h.warm.phase = WarmPhase::Ringing;
        h.warm.agent_sid.clear();
        h.session.transfer = TransferStage::Fallback;
        changes.transfer_fallback_attempted = Some(true);
        changes.fallback_transfer_number = Some(h.fallback.clone());
        changes.transfer_fallback_answer_status = Some(AnswerStatus::Pending);
        return Ok(vec![Effect::Ring(Ring {
            attempt: 2,
            number: h.fallback.clone(),
            ring_seconds: h.settings.ring_seconds,
        })]);
    }
    h.warm.phase = WarmPhase::Ended;
    h.session.transfer = TransferStage::Finished;
    changes.transfer_status = Some(TransferStatus::Failed);
    changes.transfer_failure_code = Some(TransferFailureCode::AgentNotConnected);
    changes.transfer_wait_duration_seconds = Some(waited(&h.call, now));
    let lead = match h.session.lead() {
        Some(id) => tx.lead(org, id)?.filter(|l| l.deleted_at.is_none()),
        None => None,
    };
    let mut effects = Vec::new();
    let answer = if voice::assistant_takes(tx, org, lead.as_ref())? {
        transcript::append(tx, org, call_id, Role::Agent, NOBODY_TOOK_IT, now)?;
        Answer::Relay {
            greeting: NOBODY_TOOK_IT.to_string(),
        }
    } else {
        if let Some(lead) = &lead {
            effects.push(Effect::HandOff {
                lead_id: lead.id.clone(),
            });
        }
        Answer::Say(NO_ONE_AVAILABLE.to_string())
    };
    // Re-read: the transcript may have changed the record.
    if let Some(call) = tx.call(org, call_id)? {
        h.call = call;
    }
    effects.insert(
        0,
        Effect::TakeBack {
            lead_sid: h.warm.lead_sid.clone(),
            answer,
        },
    );
    Ok(effects)
}

/// The provider's answer to ringing the person at `attempt`: their leg's id is noted
/// (and the leg ended at once when the lead is gone meanwhile); a refusal counts as not
/// taken.
pub fn dialed(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    attempt: u8,
    outcome: &CallOutcome,
    now: Micros,
) -> Result<Vec<Effect>> {
    let Some(mut h) = held(tx, org, call_id)? else {
        return Ok(Vec::new());
    };
    if h.warm.attempt != attempt {
        return Ok(Vec::new());
    }
    match outcome {
        CallOutcome::Accepted {
            provider_call_id, ..
        } => {
            if h.warm.phase == WarmPhase::Ended {
                return Ok(vec![Effect::EndLeg {
                    sid: provider_call_id.clone(),
                    told: false,
                }]);
            }
            if h.warm.agent_sid.is_empty() {
                h.warm.agent_sid = provider_call_id.clone();
                tx.put_warm_transfer(org, call_id, &h.warm)?;
            }
            Ok(Vec::new())
        }
        CallOutcome::Refused { .. } | CallOutcome::Unknown { .. } => {
            if h.warm.phase != WarmPhase::Ringing {
                return Ok(Vec::new());
            }
            let mut changes = CallDetails::default();
            answer_of(&mut changes, attempt, AnswerStatus::NoAnswer, None);
            let effects = not_taken(tx, org, call_id, &mut h, &mut changes, now)?;
            save(tx, org, call_id, &h, changes)?;
            Ok(effects)
        }
    }
}

/// Twilio's `AnsweredBy` as the interface names it (`fax` is a machine too).
pub fn answered_by(text: &str) -> AnsweredBy {
    match text {
        "human" => AnsweredBy::Human,
        "machine_start" => AnsweredBy::MachineStart,
        "machine_end_beep" => AnsweredBy::MachineEndBeep,
        "machine_end_silence" => AnsweredBy::MachineEndSilence,
        "machine_end_other" | "fax" => AnsweredBy::MachineEndOther,
        _ => AnsweredBy::Unknown,
    }
}

fn is_machine(by: AnsweredBy) -> bool {
    !matches!(by, AnsweredBy::Human | AnsweredBy::Unknown)
}

/// The person's leg at `attempt` (`leg_sid`) was answered, by `by` (Twilio's
/// `AnsweredBy`): a machine is hung up on (nothing is left on a voicemail) and the
/// transfer moves on; anyone else hears the whisper. A leg that is not the one rung now
/// is hung up on.
pub fn answered(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    attempt: u8,
    leg_sid: &str,
    by: Option<&str>,
    now: Micros,
) -> Result<Step<Leg>> {
    let Some(mut h) = held(tx, org, call_id)? else {
        return Ok(Step::only(Leg::Hangup));
    };
    let same_leg = h.warm.agent_sid.is_empty() || h.warm.agent_sid == leg_sid;
    if h.warm.attempt != attempt || h.warm.phase != WarmPhase::Ringing || !same_leg {
        return Ok(Step::only(Leg::Hangup));
    }
    h.warm.agent_sid = leg_sid.to_string();
    let by = by.map_or(AnsweredBy::Unknown, answered_by);
    let mut changes = CallDetails::default();
    if is_machine(by) {
        answer_of(&mut changes, attempt, AnswerStatus::NoAnswer, Some(by));
        let effects = not_taken(tx, org, call_id, &mut h, &mut changes, now)?;
        save(tx, org, call_id, &h, changes)?;
        return Ok(Step {
            answer: Leg::Hangup,
            effects,
        });
    }
    h.warm.phase = WarmPhase::Whisper;
    let summary = summary(tx, org, &h)?;
    save(tx, org, call_id, &h, changes)?;
    Ok(Step::only(Leg::Whisper {
        summary,
        prompt: prompt(&h.settings),
    }))
}

/// The assistant's summary of the conversation for the whisper, asked when it handed
/// over: kept (cleaned, at most [`SUMMARY_WORDS`] words) while nobody answered yet.
pub fn summarized(tx: &mut WriteTx, org: &str, call_id: &str, text: &str) -> Result<()> {
    let Some(mut warm) = tx.warm_transfer(org, call_id)? else {
        return Ok(());
    };
    if warm.phase != WarmPhase::Ringing {
        return Ok(());
    }
    let words: Vec<&str> = text.split_whitespace().take(SUMMARY_WORDS).collect();
    warm.summary = crate::carrier_text::clean(&words.join(" "));
    tx.put_warm_transfer(org, call_id, &warm)
}

/// The whisper: the assistant's summary when it came in time, else a template — who
/// the lead is, the campaign (its profile), and what the lead said last — at most
/// [`SUMMARY_WORDS`] words.
fn summary(tx: &WriteTx, org: &str, h: &Held) -> Result<String> {
    if !h.warm.summary.trim().is_empty() {
        return Ok(h.warm.summary.clone());
    }
    let lead = match h.session.lead() {
        Some(id) => tx.lead(org, id)?,
        None => None,
    };
    let who = lead
        .as_ref()
        .map(|l| {
            format!("{} {}", l.first_name.trim(), l.last_name.trim())
                .trim()
                .to_string()
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "A caller".to_string());
    let mut text = if h.session.profile.is_empty() {
        format!("{who} is on the line.")
    } else {
        format!(
            "{who}, from the {} campaign, is on the line.",
            h.session.profile
        )
    };
    let asked = transcript::conversation(&h.call)
        .into_iter()
        .rev()
        .find(|(role, said)| *role == Role::Lead && !said.trim().is_empty())
        .map(|(_, said)| said);
    if let Some(asked) = asked {
        text.push_str(" They said: ");
        text.push_str(asked.trim());
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let text = if words.len() > SUMMARY_WORDS {
        format!("{}…", words[..SUMMARY_WORDS].join(" "))
    } else {
        words.join(" ")
    };
    Ok(crate::carrier_text::clean(&text))
}

/// The person at `attempt` pressed `digits` in the whisper (empty: nothing within
/// [`DIGIT_SECONDS`]). The profile's `acceptDigit` bridges them: `agentConnected`,
/// `transferStatus: connected`; anything else hangs up on them and the transfer moves
/// on.
pub fn pressed(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    attempt: u8,
    digits: &str,
    now: Micros,
) -> Result<Step<Leg>> {
    let Some(mut h) = held(tx, org, call_id)? else {
        return Ok(Step::only(Leg::Hangup));
    };
    if h.warm.attempt != attempt || h.warm.phase != WarmPhase::Whisper {
        return Ok(Step::only(Leg::Hangup));
    }
    let mut changes = CallDetails::default();
    if digits.trim() == h.settings.accept_digit.to_string() {
        h.warm.phase = WarmPhase::Connected;
        h.warm.connected_at = now;
        h.session.transfer = TransferStage::Finished;
        answer_of(
            &mut changes,
            attempt,
            AnswerStatus::Answered,
            Some(AnsweredBy::Human),
        );
        changes.transfer_status = Some(TransferStatus::Connected);
        changes.agent_connected = Some(true);
        changes.transfer_wait_duration_seconds = Some(waited(&h.call, now));
        save(tx, org, call_id, &h, changes)?;
        return Ok(Step::only(Leg::Join));
    }
    answer_of(
        &mut changes,
        attempt,
        AnswerStatus::NoAnswer,
        Some(AnsweredBy::Human),
    );
    let effects = not_taken(tx, org, call_id, &mut h, &mut changes, now)?;
    save(tx, org, call_id, &h, changes)?;
    Ok(Step {
        answer: Leg::Hangup,
        effects,
    })
}

/// A status of the person's leg at `attempt`: once it ended (`busy`, `no-answer`,
/// `failed`, `canceled`, or `completed` before they accepted), the transfer moves on.
/// After they accepted, the conference's events decide.
pub fn leg_status(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    attempt: u8,
    status: &str,
    now: Micros,
) -> Result<Vec<Effect>> {
    if !matches!(
        status,
        "busy" | "no-answer" | "failed" | "canceled" | "completed"
    ) {
        return Ok(Vec::new());
    }
    let Some(mut h) = held(tx, org, call_id)? else {
        return Ok(Vec::new());
    };
    if h.warm.attempt != attempt || !matches!(h.warm.phase, WarmPhase::Ringing | WarmPhase::Whisper)
    {
        return Ok(Vec::new());
    }
    let mut changes = CallDetails::default();
    answer_of(&mut changes, attempt, AnswerStatus::NoAnswer, None);
    let effects = not_taken(tx, org, call_id, &mut h, &mut changes, now)?;
    save(tx, org, call_id, &h, changes)?;
    Ok(effects)
}

/// One of the conference's status callbacks: `event` is Twilio's
/// `StatusCallbackEvent` (`participant-join`, `participant-leave`, `conference-end`),
/// `sid` the participant's `CallSid`. Bridged, the first to leave decides `endedBy`
/// (`LEAD`, `AGENT`; `UNKNOWN` when the call is neither or the conference just ended)
/// and `midCallTransferDuration`. Held, the lead leaving fails the transfer
/// (`lead_disconnected`) and ends the person's leg.
pub fn conference(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    event: &str,
    sid: &str,
    now: Micros,
) -> Result<Vec<Effect>> {
    let Some(mut h) = held(tx, org, call_id)? else {
        return Ok(Vec::new());
    };
    let mut changes = CallDetails::default();
    let mut effects = Vec::new();
    match (h.warm.phase, event) {
        // The person joined: the two are bridged from now.
        (WarmPhase::Connected, "participant-join") if sid == h.warm.agent_sid => {
            h.warm.connected_at = now;
        }
        (WarmPhase::Connected, "participant-leave" | "conference-end") => {
            let by = if event == "conference-end" {
                EndedBy::Unknown
            } else if sid == h.warm.lead_sid {
                EndedBy::Lead
            } else if sid == h.warm.agent_sid {
                EndedBy::Agent
            } else {
                EndedBy::Unknown
            };
            h.warm.phase = WarmPhase::Ended;
            changes.ended_by = Some(by);
            changes.mid_call_transfer_duration = Some(seconds(now - h.warm.connected_at));
        }
        (WarmPhase::Ringing | WarmPhase::Whisper, "participant-leave" | "conference-end")
            if sid == h.warm.lead_sid || event == "conference-end" =>
        {
            if !h.warm.agent_sid.is_empty() {
                effects.push(Effect::EndLeg {
                    sid: h.warm.agent_sid.clone(),
                    told: h.warm.phase == WarmPhase::Whisper,
                });
            }
            h.warm.phase = WarmPhase::Ended;
            h.session.transfer = TransferStage::Finished;
            answer_of(&mut changes, h.warm.attempt, AnswerStatus::NoAnswer, None);
            changes.transfer_status = Some(TransferStatus::Failed);
            changes.transfer_failure_code = Some(TransferFailureCode::LeadDisconnected);
            changes.transfer_wait_duration_seconds = Some(waited(&h.call, now));
        }
        _ => return Ok(Vec::new()),
    }
    save(tx, org, call_id, &h, changes)?;
    Ok(effects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lead_hears_whom_it_is_connected_with() {
        assert_eq!(
            connecting("Ana Ruiz"),
            "Connecting you with Ana Ruiz now, one moment."
        );
        assert_eq!(
            connecting(" "),
            "Connecting you with a member of our team now, one moment."
        );
    }

    #[test]
    fn machines_are_told_apart_from_people() {
        for machine in [
            "machine_start",
            "machine_end_beep",
            "machine_end_silence",
            "machine_end_other",
            "fax",
        ] {
            assert!(is_machine(answered_by(machine)), "{machine}");
        }
        assert!(!is_machine(answered_by("human")));
        assert!(!is_machine(answered_by("unknown")));
        assert!(!is_machine(answered_by("")));
    }

    #[test]
    fn seconds_round_to_the_nearest() {
        assert_eq!(seconds(1_499_999), 1);
        assert_eq!(seconds(1_500_000), 2);
        assert_eq!(seconds(-5), 0);
    }
}

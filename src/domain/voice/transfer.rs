//! Transfers of a live call to a human: the assistant hands over, the provider rings
//! the profile's `transferNumber`, then its `fallbackTransferNumber` when no one
//! answers, and the call records how it went.
//!
//! Two moments, each a provider webhook: the hand-over ([`handover`], when the relay
//! session ends with a reason) and the outcome of each ring ([`dialed`]). The call's
//! transfer fields are filled as they become known, and the outcome
//! (`transferStatus` `connected` or `failed`) sends its `call.transfer.*` webhook once
//! (`calls`). These are cold transfers (the lead is bridged to the number): `endedBy`,
//! which the interface keeps for warm transfers, is not set. A profile whose
//! `transfer.mode` is `warm` hands over to `warm` instead.

use serde_json::Value;

use crate::domain::records::calls::CallInput;
use crate::domain::voice::voice::{self, Answer};
use crate::domain::voice::warm;
use crate::error::Result;
use crate::store::rows::{
    AnswerStatus, CallDetails, CallRecord, TransferFailureCode, TransferStage, TransferStatus,
};
use crate::store::{Reader, WriteTx};
use crate::time::{Micros, Timestamp};

/// What the lead hears when no one took the transfer (cold or warm).
pub use crate::domain::voice::voice::NO_ONE_AVAILABLE;

/// Why the assistant ended its side of the call (the relay's `handoffData`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The `transfer` tool.
    Transfer,
    /// The `handoff` tool: a human takes over, on a call by a transfer.
    Handoff,
    /// Anything else (an opt-out, the lead hung up): the call ends.
    Other,
}

impl Reason {
    /// Reads Twilio's `HandoffData`: the JSON text the relay sent, `{"reason": ...}`.
    pub fn parse(handoff_data: Option<&str>) -> Reason {
        let reason = handoff_data
            .and_then(|d| serde_json::from_str::<Value>(d).ok())
            .and_then(|d| d.get("reason").and_then(Value::as_str).map(str::to_string));
        match reason.as_deref() {
            Some("transfer") => Reason::Transfer,
            Some("handoff") => Reason::Handoff,
            _ => Reason::Other,
        }
    }
}

/// How one ring of a transfer ended (Twilio's `<Dial>` action).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ring {
    /// 1: `transferNumber`; 2: `fallbackTransferNumber`.
    pub attempt: u8,
    pub answered: bool,
    /// Seconds the lead spent with the agent (`DialCallDuration`).
    pub duration_seconds: u64,
    /// The lead hung up while it rang.
    pub lead_gone: bool,
}

/// The profile's transfer numbers for this call: (transferNumber, fallback), empty when
/// unset.
pub fn numbers(read: &impl Reader, org: &str, call_id: &str) -> Result<(String, String)> {
    let session = voice::session(read, org, call_id)?;
    if session.profile.is_empty() {
        return Ok((String::new(), String::new()));
    }
    Ok(read
        .profile(org, &session.profile)?
        .map(|p| (p.transfer_number, p.fallback_transfer_number))
        .unwrap_or_default())
}

/// Whether a person may transfer call `call_id` of lead `lead_id` now: it is that
/// lead's, in progress with the provider (its `CallSid` known), not transferring or
/// transferred yet, and its campaign has a transfer number. Answers the `CallSid`, or
/// why not in words (409).
pub fn transferable(
    read: &impl Reader,
    org: &str,
    lead_id: &str,
    call_id: &str,
) -> Result<std::result::Result<String, &'static str>> {
    let Some(session) = read.voice_session(org, call_id)? else {
        return Ok(Err("This call is not live."));
    };
    let live = read
        .call(org, call_id)?
        .and_then(|c| c.details.call_status)
        .is_some_and(|status| status.replace('-', "_").eq_ignore_ascii_case("in_progress"));
    if session.lead() != Some(lead_id) || !live || session.provider_call_id.is_empty() {
        return Ok(Err("This call is not live."));
    }
    if session.transfer != TransferStage::None {
        return Ok(Err("This call is already being transferred."));
    }
    if numbers(read, org, call_id)?.0.is_empty() {
        return Ok(Err(
            "The call's campaign has no transfer number: set one in the campaign editor.",
        ));
    }
    Ok(Ok(session.provider_call_id))
}

fn change(tx: &mut WriteTx, org: &str, call: &CallRecord, changes: CallDetails) -> Result<()> {
    voice::update_call(tx, org, call, CallInput::set(changes))?;
    Ok(())
}

/// The relay session of call `call_id` ended with `reason`: a transfer (or a handoff)
/// on a profile whose transfer is warm holds the lead and rings the person
/// (`warm::handover`, whose effects come back with the answer); else as
/// `cold_handover`.
pub fn handover(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    reason: Reason,
    now: Micros,
) -> Result<(Answer, Vec<warm::Effect>)> {
    let session = voice::session(tx, org, call_id)?;
    let Some(settings) = warm::settings(tx, org, &session)? else {
        return Ok((cold_handover(tx, org, call_id, reason, now)?, Vec::new()));
    };
    let (primary, _) = numbers(tx, org, call_id)?;
    let repeat = tx.warm_transfer(org, call_id)?.is_some();
    let starts =
        reason != Reason::Other && !primary.is_empty() && session.transfer == TransferStage::None;
    if repeat || starts {
        let step = warm::handover(tx, org, call_id, &settings, primary, now)?;
        return Ok((step.answer, step.effects));
    }
    Ok((Answer::Hangup, Vec::new()))
}

/// A cold transfer: the relay session of call `call_id` ended with `reason`: a transfer (or a handoff)
/// rings `transferNumber` when the profile has one; anything else hangs up. A repeated
/// webhook rings the same number again rather than starting over.
fn cold_handover(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    reason: Reason,
    now: Micros,
) -> Result<Answer> {
    let mut session = voice::session(tx, org, call_id)?;
    let (primary, _) = numbers(tx, org, call_id)?;
    match session.transfer {
        TransferStage::Primary => {
            return Ok(Answer::Dial {
                number: primary,
                attempt: 1,
            })
        }
        TransferStage::Fallback | TransferStage::Finished => return Ok(Answer::Hangup),
        TransferStage::None => {}
    }
    if reason == Reason::Other || primary.is_empty() {
        return Ok(Answer::Hangup);
    }
    let Some(call) = tx.call(org, call_id)? else {
        return Ok(Answer::Hangup);
    };
    session.transfer = TransferStage::Primary;
    tx.put_voice_session(org, call_id, &session)?;
    change(
        tx,
        org,
        &call,
        CallDetails {
            is_transfer: Some(true),
            mid_call_transfer: Some(true),
            transfer_initiated_at: Some(Timestamp(now)),
            transfer_number: Some(primary.clone()),
            transfer_answer_status: Some(AnswerStatus::Pending),
            agent_connected: Some(false),
            ..CallDetails::default()
        },
    )?;
    Ok(Answer::Dial {
        number: primary,
        attempt: 1,
    })
}

/// Seconds from the transfer's start to `now`, less the time with the agent.
fn wait_seconds(call: &CallRecord, now: Micros, with_agent: u64) -> u64 {
    let started = call
        .details
        .transfer_initiated_at
        .as_ref()
        .map_or(now, |t| t.0);
    let total = (now - started).max(0) as u64 / 1_000_000;
    total.saturating_sub(with_agent)
}

/// One ring of the transfer ended. Answered: connected. Not answered: the fallback
/// rings when there is one (and the lead is still there), else the transfer failed and
/// the lead hears an apology. A ring reported twice changes nothing the second time.
pub fn dialed(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    ring: Ring,
    now: Micros,
) -> Result<Answer> {
    let mut session = voice::session(tx, org, call_id)?;
    let expected = match ring.attempt {
        1 => TransferStage::Primary,
        _ => TransferStage::Fallback,
    };
    if session.transfer != expected {
        return Ok(Answer::Hangup);
    }
    let Some(call) = tx.call(org, call_id)? else {
        return Ok(Answer::Hangup);
    };
    let (_, fallback) = numbers(tx, org, call_id)?;
    let mut changes = CallDetails::default();
    let answer_field = if ring.attempt == 1 {
        &mut changes.transfer_answer_status
    } else {
        &mut changes.transfer_fallback_answer_status
    };
    let answer = if ring.answered {
        *answer_field = Some(AnswerStatus::Answered);
        changes.transfer_status = Some(TransferStatus::Connected);
        changes.agent_connected = Some(true);
        changes.mid_call_transfer_duration = Some(ring.duration_seconds);
        changes.transfer_wait_duration_seconds =
            Some(wait_seconds(&call, now, ring.duration_seconds));
        session.transfer = TransferStage::Finished;
        Answer::Hangup
    } else {
        *answer_field = Some(AnswerStatus::NoAnswer);
        if ring.attempt == 1 && !ring.lead_gone && !fallback.is_empty() {
            changes.transfer_fallback_attempted = Some(true);
            changes.fallback_transfer_number = Some(fallback.clone());
            changes.transfer_fallback_answer_status = Some(AnswerStatus::Pending);
            session.transfer = TransferStage::Fallback;
            Answer::Dial {
                number: fallback,
                attempt: 2,
            }
        } else {
            let code = if ring.lead_gone {
                TransferFailureCode::LeadDisconnected
            } else {
                TransferFailureCode::AgentNotConnected
            };
            changes.transfer_status = Some(TransferStatus::Failed);
            changes.transfer_failure_code = Some(code);
            changes.transfer_wait_duration_seconds = Some(wait_seconds(&call, now, 0));
            session.transfer = TransferStage::Finished;
            if ring.lead_gone {
                Answer::Hangup
            } else {
                Answer::Say(NO_ONE_AVAILABLE.to_string())
            }
        }
    };
    tx.put_voice_session(org, call_id, &session)?;
    change(tx, org, &call, changes)?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handoff_data_is_read_as_twilio_passes_it() {
        assert_eq!(
            Reason::parse(Some(r#"{"reason":"transfer"}"#)),
            Reason::Transfer
        );
        assert_eq!(
            Reason::parse(Some(r#"{"reason":"handoff"}"#)),
            Reason::Handoff
        );
        assert_eq!(
            Reason::parse(Some(r#"{"reason":"opt_out"}"#)),
            Reason::Other
        );
        assert_eq!(Reason::parse(Some("not json")), Reason::Other);
        assert_eq!(Reason::parse(None), Reason::Other);
    }
}

//! A call's transcript as the call goes: each turn is committed as it happens, so a
//! crash mid-call keeps what was said.
//!
//! Turns are `{"role": "lead" | "agent", "text", "at"}`. An interruption cuts the
//! agent's last turn to what was spoken before it (`"interrupted": true`): what the
//! lead never heard is not recorded as said. Keypad digits are lead turns with empty
//! text and `"dtmf"`. The transcript lives on the call record; writing it touches only
//! the record (its `CALL` event carries no transcript). The engine keeps the bounds on
//! a transcript (`limits`) by cutting a turn's text and storing no turn past the last.

use serde_json::{json, Value};

use crate::domain::records::calls;
use crate::domain::records::limits;
use crate::error::Result;
use crate::store::rows::CallRecord;
use crate::store::{Reader, WriteTx};
use crate::time::{self, Micros};

/// Who spoke a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Lead,
    Agent,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Lead => "lead",
            Role::Agent => "agent",
        }
    }
}

/// The call's turns, oldest first (none when it has no transcript, or one a client
/// wrote in another shape).
pub fn turns(call: &CallRecord) -> Vec<Value> {
    call.details
        .transcript
        .as_ref()
        .and_then(|t| t.to_value().ok())
        .and_then(|t| match t {
            Value::Array(turns) => Some(turns),
            _ => None,
        })
        .unwrap_or_default()
}

fn role_of(turn: &Value) -> Option<Role> {
    match turn.get("role").and_then(Value::as_str) {
        Some("lead") => Some(Role::Lead),
        Some("agent") => Some(Role::Agent),
        _ => None,
    }
}

fn text_of(turn: &Value) -> &str {
    turn.get("text").and_then(Value::as_str).unwrap_or_default()
}

/// A turn with words in it (not a keypad digit, not empty).
pub fn is_spoken(turn: &Value) -> bool {
    !text_of(turn).trim().is_empty()
}

pub fn is_spoken_by_lead(turn: &Value) -> bool {
    role_of(turn) == Some(Role::Lead) && is_spoken(turn)
}

/// The spoken turns as (role, text), oldest first: the conversation the assistant sees.
pub fn conversation(call: &CallRecord) -> Vec<(Role, String)> {
    turns(call)
        .iter()
        .filter(|t| is_spoken(t))
        .filter_map(|t| role_of(t).map(|role| (role, text_of(t).to_string())))
        .collect()
}

fn write(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    edit: impl FnOnce(&mut Vec<Value>),
) -> Result<()> {
    let Some(call) = tx.call(org, call_id)? else {
        return Ok(());
    };
    let mut turns = turns(&call);
    let before = turns.len();
    edit(&mut turns);
    if turns.len() > before && before >= limits::TRANSCRIPT_TURNS {
        // The transcript is full: what is said from here on is not stored.
        tracing::warn!(call = call_id, "transcript full; turn not stored");
        return Ok(());
    }
    calls::set_transcript(tx, org, call_id, &Value::Array(turns))?;
    Ok(())
}

/// Appends a spoken turn.
pub fn append(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    role: Role,
    text: &str,
    at: Micros,
) -> Result<()> {
    let text = limits::truncate(text, limits::TURN_CHARS);
    let turn = json!({"role": role.as_str(), "text": text, "at": time::format(at)});
    write(tx, org, call_id, |turns| turns.push(turn))
}

/// Appends a keypad digit the lead pressed.
pub fn append_dtmf(
    tx: &mut WriteTx,
    org: &str,
    call_id: &str,
    digit: &str,
    at: Micros,
) -> Result<()> {
    let digit = limits::truncate(digit, 16);
    let turn = json!({"role": "lead", "text": "", "dtmf": digit, "at": time::format(at)});
    write(tx, org, call_id, |turns| turns.push(turn))
}

/// The lead interrupted the agent: its last turn keeps only `spoken`, what was said
/// before the interruption.
pub fn interrupted(tx: &mut WriteTx, org: &str, call_id: &str, spoken: &str) -> Result<()> {
    write(tx, org, call_id, |turns| {
        if let Some(turn) = turns
            .iter_mut()
            .rev()
            .find(|t| role_of(t) == Some(Role::Agent))
        {
            turn["text"] = json!(spoken.trim());
            turn["interrupted"] = json!(true);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::engagement::reactions::React;
    use crate::store::rows::{CallDetails, RawJson};

    fn call(transcript: Value) -> CallRecord {
        CallRecord {
            id: "c".into(),
            created_at: 0,
            updated_at: 0,
            details: CallDetails {
                transcript: Some(RawJson::from_value(&transcript)),
                ..CallDetails::default()
            },
            notified: Default::default(),
        }
    }

    #[test]
    fn the_conversation_is_the_spoken_turns_in_order() {
        let c = call(json!([
            {"role": "agent", "text": "Hi Ada", "at": "x"},
            {"role": "lead", "text": "", "dtmf": "5", "at": "x"},
            {"role": "lead", "text": "Who is this?", "at": "x"},
            {"role": "narrator", "text": "ignored", "at": "x"},
        ]));
        assert_eq!(
            conversation(&c),
            vec![
                (Role::Agent, "Hi Ada".to_string()),
                (Role::Lead, "Who is this?".to_string())
            ]
        );
        assert_eq!(turns(&c).iter().filter(|t| is_spoken_by_lead(t)).count(), 1);
    }

    #[test]
    fn the_engine_keeps_a_transcript_within_its_bounds() {
        use crate::domain::records::calls;
        use crate::domain::records::limits;
        use crate::domain::Caller;
        use crate::store::Store;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.redb")).unwrap();
        let turns_of = |call: &str| {
            let call = store.read().unwrap().call("o", call).unwrap().unwrap();
            turns(&call)
        };
        let full: Vec<Value> = (0..limits::TRANSCRIPT_TURNS)
            .map(|_| json!({"role": "lead", "text": "hi"}))
            .collect();
        store
            .write_blocking(move |tx| {
                let caller = Caller::system("o");
                for (id, transcript) in [("full", json!(full)), ("short", json!([]))] {
                    let body = json!({"sessionId": "s", "direction": "INBOUND",
                                      "callStatus": "IN_PROGRESS", "transcript": transcript});
                    let Value::Object(body) = body else {
                        unreachable!()
                    };
                    calls::put(tx, &caller, id, calls::CallInput::from_json(id, &body)?)
                        .react(tx)?;
                }
                append(tx, "o", "full", Role::Agent, "one more", 0)?;
                append(tx, "o", "short", Role::Lead, &"é".repeat(5_000), 0)
            })
            .unwrap();
        assert_eq!(turns_of("full").len(), limits::TRANSCRIPT_TURNS);
        let short = turns_of("short");
        assert_eq!(text_of(&short[0]).chars().count(), limits::TURN_CHARS);
    }

    #[test]
    fn a_transcript_in_another_shape_has_no_turns() {
        assert!(turns(&call(json!({"text": "not a list"}))).is_empty());
        assert!(turns(&call(json!([]))).is_empty());
    }
}

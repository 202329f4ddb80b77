//! Twilio ConversationRelay's WebSocket messages: what Twilio sends about a live call
//! (`setup`, the lead's speech as `prompt`, `interrupt`, `dtmf`, `error`) parsed into
//! [`FromTwilio`], and the frames we send back (`text` to speak, `end` to hand the call
//! back to the `<Connect action>` URL).
//!
//! Only the wire format lives here, so the relay loop deals in types, not JSON. A type
//! this code does not know is [`FromTwilio::Other`] (Twilio adds message types; the
//! caller ignores them); a known type with wrong members is an error. Where Twilio's own
//! examples disagree with its reference (`interrupt`'s `durationUntilInterruptMs`, a
//! number or a string), both are read.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

/// The first message of a session: which call it is.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Setup {
    pub session_id: String,
    pub call_sid: String,
    #[serde(default)]
    pub from: String,
    #[serde(default)]
    pub to: String,
    #[serde(default)]
    pub direction: String,
}

/// One message from Twilio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromTwilio {
    Setup(Setup),
    /// What the lead said; `last` when the utterance is complete (partial prompts come
    /// first when Twilio streams them).
    Prompt {
        voice_prompt: String,
        last: bool,
    },
    /// The lead spoke over the agent: what had been spoken, and for how long.
    Interrupt {
        utterance_until_interrupt: String,
        duration_until_interrupt_ms: u64,
    },
    Dtmf {
        digit: String,
    },
    Error {
        description: String,
    },
    /// A type this code does not know, by name: ignored by the caller.
    Other(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Prompt {
    voice_prompt: String,
    #[serde(default = "yes")]
    last: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Interrupt {
    utterance_until_interrupt: String,
    #[serde(deserialize_with = "number_or_string")]
    duration_until_interrupt_ms: u64,
}

/// A whole number of milliseconds sent as a number or as a string: Twilio's own
/// published `interrupt` example sends `"durationUntilInterruptMs": "460"`.
fn number_or_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(u64),
        Text(String),
    }
    match Either::deserialize(d)? {
        Either::Number(n) => Ok(n),
        Either::Text(t) => t.trim().parse().map_err(|_| {
            serde::de::Error::custom("durationUntilInterruptMs is not a whole number")
        }),
    }
}

#[derive(Deserialize)]
struct Dtmf {
    digit: String,
}

#[derive(Deserialize)]
struct ErrorMessage {
    description: String,
}

/// Parses one text frame from Twilio; the error is a short reason, for the log.
pub fn parse(text: &str) -> Result<FromTwilio, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let kind = match value.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(_) => return Err("type is not a string".into()),
        None => return Err("no type".into()),
    };
    Ok(match kind.as_str() {
        "setup" => FromTwilio::Setup(members(&kind, value)?),
        "prompt" => {
            let p: Prompt = members(&kind, value)?;
            FromTwilio::Prompt {
                voice_prompt: p.voice_prompt,
                last: p.last,
            }
        }
        "interrupt" => {
            let i: Interrupt = members(&kind, value)?;
            FromTwilio::Interrupt {
                utterance_until_interrupt: i.utterance_until_interrupt,
                duration_until_interrupt_ms: i.duration_until_interrupt_ms,
            }
        }
        "dtmf" => {
            let d: Dtmf = members(&kind, value)?;
            FromTwilio::Dtmf { digit: d.digit }
        }
        "error" => {
            let e: ErrorMessage = members(&kind, value)?;
            FromTwilio::Error {
                description: e.description,
            }
        }
        _ => FromTwilio::Other(kind),
    })
}

/// The members of a message of type `kind`.
fn members<T: DeserializeOwned>(kind: &str, value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| format!("a {kind} message: {e}"))
}

/// `{"type":"text","token":"...","last":true}`: text for Twilio to speak; `last` when
/// it ends the agent's turn.
pub fn text_frame(token: &str, last: bool) -> String {
    json!({"type": "text", "token": token, "last": last}).to_string()
}

/// `{"type":"end","handoffData":"..."}`: ends the session; Twilio passes `handoff_data`
/// (JSON text, sent as a string) to the `<Connect action>` URL as `HandoffData`.
pub fn end_frame(handoff_data: &str) -> String {
    json!({"type": "end", "handoffData": handoff_data}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twilio_messages_are_parsed() {
        let setup = parse(
            r#"{"type":"setup","sessionId":"VX1","accountSid":"AC1","callSid":"CA1",
                "from":"+15550100000","to":"+15550100001","direction":"outbound-api",
                "callStatus":"IN-PROGRESS","customParameters":{"callReference":"bar"}}"#,
        );
        assert_eq!(
            setup,
            Ok(FromTwilio::Setup(Setup {
                session_id: "VX1".into(),
                call_sid: "CA1".into(),
                from: "+15550100000".into(),
                to: "+15550100001".into(),
                direction: "outbound-api".into(),
            }))
        );
        assert_eq!(
            parse(r#"{"type":"setup","sessionId":"VX1","callSid":"CA1"}"#),
            Ok(FromTwilio::Setup(Setup {
                session_id: "VX1".into(),
                call_sid: "CA1".into(),
                from: String::new(),
                to: String::new(),
                direction: String::new(),
            }))
        );
        assert_eq!(
            parse(r#"{"type":"prompt","voicePrompt":"Call me back","lang":"en-US","last":false}"#),
            Ok(FromTwilio::Prompt {
                voice_prompt: "Call me back".into(),
                last: false
            })
        );
        assert_eq!(
            parse(r#"{"type":"prompt","voicePrompt":"Yes"}"#),
            Ok(FromTwilio::Prompt {
                voice_prompt: "Yes".into(),
                last: true
            })
        );
        assert_eq!(
            parse(
                r#"{"type":"interrupt","utteranceUntilInterrupt":"Hi Ada","durationUntilInterruptMs":460}"#
            ),
            Ok(FromTwilio::Interrupt {
                utterance_until_interrupt: "Hi Ada".into(),
                duration_until_interrupt_ms: 460
            })
        );
        // Twilio's published example sends the duration as a string.
        assert_eq!(
            parse(
                r#"{"type":"interrupt","utteranceUntilInterrupt":"Hi Ada","durationUntilInterruptMs":"460"}"#
            ),
            Ok(FromTwilio::Interrupt {
                utterance_until_interrupt: "Hi Ada".into(),
                duration_until_interrupt_ms: 460
            })
        );
        assert_eq!(
            parse(r#"{"type":"dtmf","digit":"5"}"#),
            Ok(FromTwilio::Dtmf { digit: "5".into() })
        );
        assert_eq!(
            parse(r#"{"type":"error","description":"Invalid message"}"#),
            Ok(FromTwilio::Error {
                description: "Invalid message".into()
            })
        );
        assert_eq!(
            parse(r#"{"type":"info","name":"tokensPlayed"}"#),
            Ok(FromTwilio::Other("info".into()))
        );
    }

    #[test]
    fn malformed_messages_are_refused() {
        for bad in [
            "not json",
            "[1,2]",
            r#"{"voicePrompt":"no type"}"#,
            r#"{"type":7}"#,
            r#"{"type":"setup","sessionId":"VX1"}"#,
            r#"{"type":"prompt","last":true}"#,
            r#"{"type":"prompt","voicePrompt":3}"#,
            r#"{"type":"prompt","voicePrompt":"x","last":"yes"}"#,
            r#"{"type":"interrupt","utteranceUntilInterrupt":"x","durationUntilInterruptMs":-1}"#,
            r#"{"type":"interrupt","utteranceUntilInterrupt":"x","durationUntilInterruptMs":"soon"}"#,
            r#"{"type":"interrupt","utteranceUntilInterrupt":"x","durationUntilInterruptMs":"-1"}"#,
            r#"{"type":"dtmf"}"#,
            r#"{"type":"error","description":null}"#,
        ] {
            let reason = parse(bad).expect_err(bad);
            assert!(!reason.is_empty(), "{bad}");
        }
    }

    #[test]
    fn frames_to_twilio() {
        assert_eq!(
            text_frame("Sure, \"tomorrow\" works.", true),
            r#"{"type":"text","token":"Sure, \"tomorrow\" works.","last":true}"#
        );
        assert_eq!(
            text_frame("Hel", false),
            r#"{"type":"text","token":"Hel","last":false}"#
        );
        let handoff = json!({"reason": "transfer"}).to_string();
        let end = end_frame(&handoff);
        assert_eq!(
            end,
            r#"{"type":"end","handoffData":"{\"reason\":\"transfer\"}"}"#
        );
        let back: Value = serde_json::from_str(&end).unwrap();
        let data: Value = serde_json::from_str(back["handoffData"].as_str().unwrap()).unwrap();
        assert_eq!(data["reason"], "transfer");
    }
}

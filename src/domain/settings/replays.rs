//! Replays and test conversations, the rules without the running: a replay's request
//! (which conversations: the `conversations` most recent, 1 to [`MAX_CONVERSATIONS`],
//! default [`DEFAULT_CONVERSATIONS`], or `leadIds`), a profile's test conversations
//! (`tests`: at most [`MAX_TESTS`] of [`MAX_TEST_TURNS`] turns, each expectation naming
//! its turn), the flags of a replayed turn, and the wire shape of a replay. The runner
//! is `engine::replay`; the record `store::replays`.

use serde_json::{json, Map, Value};

use crate::channel::Channel;
use crate::error::{Error, Result};
use crate::store::replays::{
    ReplayFlag, ReplayRecord, ReplaySide, ReplayStatus, ReplayTestResult, ReplayTurn,
};

/// The most conversations one replay takes.
pub const MAX_CONVERSATIONS: usize = 200;
/// The conversations a replay takes when the request does not say.
pub const DEFAULT_CONVERSATIONS: usize = 20;
/// The most test conversations a profile carries.
pub const MAX_TESTS: usize = 50;
/// The most lead turns of one test conversation.
pub const MAX_TEST_TURNS: usize = 20;
/// The longest test name and lead turn, in characters.
pub const MAX_TEST_TEXT: usize = 2_000;
/// An SMS answer longer than this (in characters, ten segments) is `too_long`.
pub const SMS_BOUND: usize = 1_600;
/// An emailed answer longer than this is `too_long`.
pub const EMAIL_BOUND: usize = 5_000;
/// A spoken answer longer than this is `too_long`.
pub const VOICE_BOUND: usize = 600;

/// The bound of an answer on `channel`, in characters.
pub fn channel_bound(channel: Channel) -> usize {
    match channel {
        Channel::Sms => SMS_BOUND,
        Channel::Email => EMAIL_BOUND,
        Channel::Voice => VOICE_BOUND,
    }
}

/// Which conversations a replay takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// The most recent conversations of the profile with at least one lead turn.
    Recent(usize),
    /// These leads' conversations.
    Leads(Vec<String>),
}

pub use crate::store::rows::{
    ProfileTest as TestConversation, TestCheck as Check, TestExpectation as Expectation,
};

/// A replay request's body beside its draft: `conversations` or `leadIds`.
pub fn selection(body: &Map<String, Value>) -> Result<Selection> {
    match (body.get("conversations"), body.get("leadIds")) {
        (Some(n), Some(ids)) if !n.is_null() && !ids.is_null() => Err(Error::BadRequest(
            "Give conversations or leadIds, not both".into(),
        )),
        (_, Some(Value::Array(ids))) => {
            if ids.is_empty() || ids.len() > MAX_CONVERSATIONS {
                return Err(Error::field(
                    "leadIds",
                    format!("leadIds takes 1 to {MAX_CONVERSATIONS} lead ids"),
                ));
            }
            let ids = ids
                .iter()
                .map(|id| id.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| Error::invalid_field("leadIds"))?;
            Ok(Selection::Leads(ids))
        }
        (_, Some(v)) if !v.is_null() => Err(Error::invalid_field("leadIds")),
        (None | Some(Value::Null), _) => Ok(Selection::Recent(DEFAULT_CONVERSATIONS)),
        (Some(n), _) => match n.as_u64() {
            Some(n) if (1..=MAX_CONVERSATIONS as u64).contains(&n) => {
                Ok(Selection::Recent(n as usize))
            }
            _ => Err(Error::field(
                "conversations",
                format!("conversations is a number from 1 to {MAX_CONVERSATIONS}"),
            )),
        },
    }
}

/// A profile's `tests` (absent or `null`: none), held to their bounds, each refusal
/// naming its field (`tests[0].expect[1].turn`).
pub fn tests_of(value: Option<&Value>) -> Result<Vec<TestConversation>> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(Error::invalid_field("tests")),
    };
    if items.len() > MAX_TESTS {
        return Err(Error::field(
            "tests",
            format!(
                "A profile has at most {MAX_TESTS} test conversations; this one has {}",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| test_of(i, item))
        .collect()
}

fn test_of(i: usize, item: &Value) -> Result<TestConversation> {
    let path = format!("tests[{i}]");
    let Some(object) = item.as_object() else {
        return Err(Error::invalid_field(&path));
    };
    if let Some(unknown) = object
        .keys()
        .find(|k| !["name", "turns", "expect"].contains(&k.as_str()))
    {
        return Err(Error::field(
            &format!("{path}.{unknown}"),
            format!("Unknown field: {path}.{unknown}"),
        ));
    }
    let name = match object.get("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_string(),
        _ => {
            return Err(Error::field(
                &format!("{path}.name"),
                format!("{path}.name is required: a few words saying what it tests"),
            ))
        }
    };
    if name.chars().count() > MAX_TEST_TEXT {
        return Err(Error::field(
            &format!("{path}.name"),
            format!("{path}.name is longer than {MAX_TEST_TEXT} characters"),
        ));
    }
    let turns: Vec<String> = match object.get("turns") {
        Some(Value::Array(turns)) if !turns.is_empty() => turns
            .iter()
            .enumerate()
            .map(|(t, turn)| match turn.as_str() {
                Some(text) if !text.trim().is_empty() && text.chars().count() <= MAX_TEST_TEXT => {
                    Ok(text.to_string())
                }
                _ => Err(Error::field(
                    &format!("{path}.turns[{t}]"),
                    format!(
                        "{path}.turns[{t}] is what the lead writes: 1 to {MAX_TEST_TEXT} characters"
                    ),
                )),
            })
            .collect::<Result<_>>()?,
        _ => {
            return Err(Error::field(
                &format!("{path}.turns"),
                format!("{path}.turns is required: what the lead writes, one text a turn"),
            ))
        }
    };
    if turns.len() > MAX_TEST_TURNS {
        return Err(Error::field(
            &format!("{path}.turns"),
            format!(
                "A test conversation has at most {MAX_TEST_TURNS} turns; {path} has {}",
                turns.len()
            ),
        ));
    }
    let expect = match object.get("expect") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(e, item)| expectation_of(&format!("{path}.expect[{e}]"), item, turns.len()))
            .collect::<Result<_>>()?,
        Some(_) => return Err(Error::invalid_field(&format!("{path}.expect"))),
    };
    Ok(TestConversation {
        name,
        turns,
        expect,
    })
}

fn expectation_of(path: &str, item: &Value, turns: usize) -> Result<Expectation> {
    let Some(object) = item.as_object() else {
        return Err(Error::invalid_field(path));
    };
    let turn = match object.get("turn").and_then(Value::as_u64) {
        Some(t) if t >= 1 && t as usize <= turns => t as u32,
        _ => {
            return Err(Error::field(
                &format!("{path}.turn"),
                format!("{path}.turn names one of the test's turns, 1 to {turns}"),
            ))
        }
    };
    let mut checks = Vec::new();
    for (member, value) in object {
        let text = || -> Result<String> {
            match value.as_str() {
                Some(text) if !text.is_empty() && text.chars().count() <= MAX_TEST_TEXT => {
                    Ok(text.to_string())
                }
                _ => Err(Error::invalid_field(&format!("{path}.{member}"))),
            }
        };
        match member.as_str() {
            "turn" => {}
            "tool" => checks.push(Check::Tool(text()?)),
            "notTool" => checks.push(Check::NotTool(text()?)),
            "contains" => checks.push(Check::Contains(text()?)),
            "notContains" => checks.push(Check::NotContains(text()?)),
            other => {
                return Err(Error::field(
                    &format!("{path}.{other}"),
                    format!("Unknown field: {path}.{other}"),
                ))
            }
        }
    }
    if checks.len() != 1 {
        return Err(Error::field(
            path,
            format!("{path} checks one thing: tool, notTool, contains or notContains"),
        ));
    }
    let check = checks.remove(0);
    Ok(Expectation { turn, check })
}

/// A profile's tests on the wire.
pub fn tests_view(tests: &[TestConversation]) -> Value {
    Value::Array(
        tests
            .iter()
            .map(|t| {
                let expect: Vec<Value> = t
                    .expect
                    .iter()
                    .map(|e| {
                        let (member, text) = match &e.check {
                            Check::Tool(s) => ("tool", s),
                            Check::NotTool(s) => ("notTool", s),
                            Check::Contains(s) => ("contains", s),
                            Check::NotContains(s) => ("notContains", s),
                        };
                        json!({"turn": e.turn, member: text})
                    })
                    .collect();
                json!({"name": t.name, "turns": t.turns, "expect": expect})
            })
            .collect(),
    )
}

/// A test's result from its answers (one [`ReplaySide`] per turn, `None` when the model
/// did not answer): each failed expectation in words.
pub fn judge(test: &TestConversation, answers: &[Option<ReplaySide>]) -> ReplayTestResult {
    let mut failures = Vec::new();
    for e in &test.expect {
        let n = e.turn as usize;
        let Some(Some(answer)) = answers.get(n.wrapping_sub(1)) else {
            failures.push(format!("turn {n}: the assistant did not answer"));
            continue;
        };
        let text = answer.text.to_lowercase();
        let called = |tool: &str| answer.tools.iter().any(|t| t == tool);
        let failure = match &e.check {
            Check::Tool(tool) if !called(tool) => Some(format!(
                "turn {n}: expected a call of {tool}; it called {}",
                tools_words(&answer.tools)
            )),
            Check::NotTool(tool) if called(tool) => Some(format!(
                "turn {n}: expected no call of {tool}; it called it"
            )),
            Check::Contains(s) if !text.contains(&s.to_lowercase()) => Some(format!(
                "turn {n}: expected the answer to contain \u{201c}{s}\u{201d}; it did not"
            )),
            Check::NotContains(s) if text.contains(&s.to_lowercase()) => Some(format!(
                "turn {n}: expected the answer not to contain \u{201c}{s}\u{201d}; it did"
            )),
            _ => None,
        };
        failures.extend(failure);
    }
    ReplayTestResult {
        name: test.name.clone(),
        passed: failures.is_empty(),
        failures,
    }
}

fn tools_words(tools: &[String]) -> String {
    if tools.is_empty() {
        "none".into()
    } else {
        tools.join(", ")
    }
}

/// A replayed turn's flags: `raw` what the model said before the guard (`None`: it
/// failed), `after` what the guard left and the tools called.
pub fn flags(
    before: &ReplaySide,
    after: &ReplaySide,
    raw: Option<&str>,
    channel: Channel,
) -> Vec<ReplayFlag> {
    let mut flags = Vec::new();
    let same_actions = tool_set(&before.tools) == tool_set(&after.tools);
    if !same_actions {
        flags.push(ReplayFlag::ActionChanged);
    }
    match raw {
        None => flags.push(ReplayFlag::NoAnswer),
        Some(raw) => {
            if !raw.trim().is_empty() && after.text.is_empty() {
                flags.push(ReplayFlag::GuardBlocked);
            }
            if raw.chars().count() > channel_bound(channel) {
                flags.push(ReplayFlag::TooLong);
            }
            if same_actions && before.text.trim() == after.text.trim() {
                flags.push(ReplayFlag::Identical);
            }
        }
    }
    flags
}

/// The tools called, each once, in name order.
fn tool_set(tools: &[String]) -> Vec<&str> {
    let mut set: Vec<&str> = tools.iter().map(String::as_str).collect();
    set.sort_unstable();
    set.dedup();
    set
}

fn side_view(side: &ReplaySide) -> Value {
    json!({"text": side.text, "tools": side.tools})
}

fn turn_view(turn: &ReplayTurn) -> Value {
    json!({
        "leadText": turn.lead_text,
        "before": side_view(&turn.before),
        "after": side_view(&turn.after),
        "flags": turn.flags.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
    })
}

/// The summary of a replay: conversations and turns replayed, the share of turns
/// with the same actions, the count of each flag, the model tokens used.
pub fn summary(replay: &ReplayRecord) -> Value {
    let turns: Vec<&ReplayTurn> = replay
        .conversations
        .iter()
        .flat_map(|c| c.turns.iter())
        .collect();
    let mut counts = Map::new();
    for flag in ReplayFlag::ALL {
        let n = turns.iter().filter(|t| t.flags.contains(&flag)).count();
        counts.insert(flag.as_str().into(), json!(n));
    }
    let same = turns
        .iter()
        .filter(|t| !t.flags.contains(&ReplayFlag::ActionChanged))
        .count();
    let share = if turns.is_empty() {
        1.0
    } else {
        (same as f64 / turns.len() as f64 * 1000.0).round() / 1000.0
    };
    json!({
        "conversations": replay.conversations.len(),
        "turns": turns.len(),
        "sameActions": share,
        "flags": counts,
        "modelTokens": replay.tokens,
        "testsPassed": replay.tests.iter().filter(|t| t.passed).count(),
        "testsFailed": replay.tests.iter().filter(|t| !t.passed).count(),
    })
}

/// The wire shape of a replay; `full`: with its conversations and tests (one replay),
/// else without (the list).
pub fn view(replay: &ReplayRecord, full: bool) -> Value {
    let mut out = json!({
        "id": replay.id,
        "profile": replay.profile,
        "status": replay.status.as_str(),
        "startedAt": crate::time::format(replay.started_at),
        "finishedAt": replay.finished_at.map(crate::time::format),
        "progress": {"done": replay.done, "total": replay.total},
        "summary": summary(replay),
    });
    if replay.status == ReplayStatus::Failed && !replay.error.is_empty() {
        out["error"] = json!(replay.error);
    }
    if full {
        out["conversations"] = Value::Array(
            replay
                .conversations
                .iter()
                .map(|c| {
                    json!({
                        "leadId": c.lead_id,
                        "turns": c.turns.iter().map(turn_view).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        );
        out["tests"] = Value::Array(
            replay
                .tests
                .iter()
                .map(|t| json!({"name": t.name, "passed": t.passed, "failures": t.failures}))
                .collect(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(text: &str, tools: &[&str]) -> ReplaySide {
        ReplaySide {
            text: text.into(),
            tools: tools.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn flags_say_what_changed() {
        let before = side("Hi", &[]);
        assert_eq!(
            flags(&before, &side("Hi", &[]), Some("Hi"), Channel::Sms),
            vec![ReplayFlag::Identical]
        );
        assert_eq!(
            flags(
                &before,
                &side("Booked", &["book_meeting"]),
                Some("Booked"),
                Channel::Sms
            ),
            vec![ReplayFlag::ActionChanged]
        );
        let long = "a".repeat(SMS_BOUND + 1);
        assert_eq!(
            flags(&before, &side("aaa", &[]), Some(&long), Channel::Sms),
            vec![ReplayFlag::TooLong]
        );
        assert_eq!(
            flags(&before, &side("", &[]), Some("\u{7}"), Channel::Sms),
            vec![ReplayFlag::GuardBlocked]
        );
        assert_eq!(
            flags(&before, &side("", &[]), None, Channel::Sms),
            vec![ReplayFlag::NoAnswer]
        );
    }

    #[test]
    fn tests_are_bounded_and_named_in_words() {
        let ok = json!([{"name": "asks price", "turns": ["How much?"],
            "expect": [{"turn": 1, "tool": "find_times"}, {"turn": 1, "notContains": "guarantee"}]}]);
        let tests = tests_of(Some(&ok)).unwrap();
        assert_eq!(
            tests[0].expect[1].check,
            Check::NotContains("guarantee".into())
        );
        assert_eq!(tests_view(&tests), ok);
        let too_many = Value::Array(vec![ok[0].clone(); MAX_TESTS + 1]);
        assert!(tests_of(Some(&too_many))
            .unwrap_err()
            .to_string()
            .contains("at most 50"));
        let long = json!([{"name": "x", "turns": vec!["hi"; MAX_TEST_TURNS + 1]}]);
        let err = tests_of(Some(&long)).unwrap_err();
        assert_eq!(err.refused_field(), Some("tests[0].turns"));
        let bad_turn =
            json!([{"name": "x", "turns": ["hi"], "expect": [{"turn": 2, "tool": "a"}]}]);
        assert_eq!(
            tests_of(Some(&bad_turn)).unwrap_err().refused_field(),
            Some("tests[0].expect[0].turn")
        );
    }

    #[test]
    fn a_test_is_judged_per_expectation() {
        let test = &tests_of(Some(&json!([{"name": "t", "turns": ["a", "b"], "expect": [
            {"turn": 1, "tool": "find_times"}, {"turn": 2, "contains": "$"},
            {"turn": 2, "notTool": "opt_out"}]}])))
        .unwrap()[0];
        let result = judge(
            test,
            &[Some(side("Hi", &[])), Some(side("It is $5", &["opt_out"]))],
        );
        assert!(!result.passed);
        assert_eq!(
            result.failures,
            vec![
                "turn 1: expected a call of find_times; it called none".to_string(),
                "turn 2: expected no call of opt_out; it called it".to_string(),
            ]
        );
        let none = judge(test, &[None, None]);
        assert_eq!(none.failures.len(), 3);
    }

    #[test]
    fn a_selection_is_a_count_or_leads() {
        let body = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(selection(&body(json!({}))).unwrap(), Selection::Recent(20));
        assert_eq!(
            selection(&body(json!({"conversations": 5}))).unwrap(),
            Selection::Recent(5)
        );
        assert!(selection(&body(json!({"conversations": 0}))).is_err());
        assert!(selection(&body(json!({"conversations": 201}))).is_err());
        assert_eq!(
            selection(&body(json!({"leadIds": ["a"]}))).unwrap(),
            Selection::Leads(vec!["a".into()])
        );
        assert!(selection(&body(json!({"leadIds": []}))).is_err());
        assert!(selection(&body(json!({"leadIds": ["a"], "conversations": 3}))).is_err());
    }
}

//! The tools offered to the model (OpenAI function definitions with their JSON
//! schemas) and each tool call checked into a typed [`Tool`] the engine applies.
//! Unknown arguments are ignored; a missing or mistyped required one is an error
//! naming it, sent back to the model as the call's result.

use serde_json::{json, Map, Value};

use crate::channel::Channel;

/// One tool call as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallRequest {
    /// The model's id for the call (generated when the server gave none).
    pub id: String,
    pub name: String,
    /// JSON text (an object, or empty).
    pub arguments: String,
}

/// A tool call, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tool {
    MarkHot,
    MarkQualified,
    AddTag {
        name: String,
    },
    /// `None`: every channel.
    OptOut {
        channels: Option<Vec<Channel>>,
    },
    Handoff {
        reason: String,
    },
    /// `None`: as soon as allowed. Microseconds since the epoch.
    ScheduleCall {
        at: Option<i64>,
    },
    UpdateSummary {
        summary: String,
    },
    /// Voice only: transfer the live call.
    Transfer,
    /// With a calendar: up to 5 open times, on `day` (the lead's local date) or from now.
    FindTimes {
        day: Option<chrono::NaiveDate>,
    },
    /// With a calendar: books the meeting at `start` (microseconds since the epoch).
    BookMeeting {
        start: i64,
    },
    /// With a calendar: moves the lead's next meeting to `start`.
    RescheduleMeeting {
        start: i64,
    },
    /// With a calendar: cancels the lead's next meeting.
    CancelMeeting,
}

/// The tools a profile with a calendar adds.
pub const BOOKING_TOOLS: [&str; 4] = [
    "find_times",
    "book_meeting",
    "reschedule_meeting",
    "cancel_meeting",
];

fn function(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    let mut parameters = Map::new();
    parameters.insert("type".into(), json!("object"));
    parameters.insert("properties".into(), properties);
    // An empty `required` is left out: some servers' schema converters refuse it.
    if !required.is_empty() {
        parameters.insert("required".into(), json!(required));
    }
    json!({
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters}
    })
}

/// The tools offered to the model, `transfer` only on a live call, the booking tools
/// ([`BOOKING_TOOLS`]) only when the lead's profile has a calendar (`booking`).
pub fn tool_definitions(voice: bool, booking: bool) -> Value {
    let mut tools = vec![
        function(
            "mark_hot",
            "Mark the lead as hot: clearly interested and worth a salesperson's attention now.",
            json!({}),
            &[],
        ),
        function(
            "mark_qualified",
            "Mark the lead as qualified: it meets the qualification criteria of your instructions.",
            json!({}),
            &[],
        ),
        function(
            "add_tag",
            "Tag the lead with a short label, such as a product or an interest.",
            json!({"name": {"type": "string", "description": "The tag, a few words."}}),
            &["name"],
        ),
        function(
            "opt_out",
            "Opt the lead out when they ask, in any words, not to be contacted any more. \
             Without channels, every channel.",
            json!({"channels": {
                "type": "array",
                "items": {"type": "string", "enum": ["sms", "voice", "email"]},
                "description": "Only these channels."
            }}),
            &[],
        ),
        function(
            "handoff",
            "Hand the conversation to a human colleague; you will not reply again.",
            json!({"reason": {"type": "string", "description": "Why a human should take over."}}),
            &["reason"],
        ),
        function(
            "schedule_call",
            "Schedule a phone call to the lead.",
            json!({"at": {
                "type": "string",
                "format": "date-time",
                "description": "When to call, as an RFC 3339 date-time with its offset \
                                (2025-03-01T15:00:00-05:00). Leave out to call as soon as allowed."
            }}),
            &[],
        ),
        function(
            "update_summary",
            "Replace the lead's summary: a few sentences on who they are and what they want.",
            json!({"summary": {"type": "string"}}),
            &["summary"],
        ),
    ];
    if voice {
        tools.push(function(
            "transfer",
            "Transfer this call to a human colleague now.",
            json!({}),
            &[],
        ));
    }
    if booking {
        let start = json!({"start": {
            "type": "string",
            "format": "date-time",
            "description": "The meeting's start: one of the RFC 3339 values find_times \
                            answered, exactly as written."
        }});
        tools.push(function(
            "find_times",
            "List up to 5 open meeting times, in the lead's time zone, each with the RFC 3339 \
             value to book it. Never offer a time this did not answer.",
            json!({"day": {
                "type": "string",
                "format": "date",
                "description": "Only this day (YYYY-MM-DD, the lead's date). Leave out for the \
                                next open times."
            }}),
            &[],
        ));
        tools.push(function(
            "book_meeting",
            "Book a meeting with the lead at an open time find_times answered. The lead is \
             sent a confirmation.",
            start.clone(),
            &["start"],
        ));
        tools.push(function(
            "reschedule_meeting",
            "Move the lead's next meeting to another open time find_times answered.",
            start,
            &["start"],
        ));
        tools.push(function(
            "cancel_meeting",
            "Cancel the lead's next meeting, when they ask to.",
            json!({}),
            &[],
        ));
    }
    Value::Array(tools)
}

/// Checks one tool call. Unknown arguments are ignored; a required one missing or of
/// the wrong type is an error naming it (sent back to the model as the call's result).
/// `booking`: the lead's profile has a calendar (else the booking tools are unknown).
pub fn parse_tool(call: &ToolCallRequest, voice: bool, booking: bool) -> Result<Tool, String> {
    let name = call.name.as_str();
    let known = matches!(
        name,
        "mark_hot"
            | "mark_qualified"
            | "add_tag"
            | "opt_out"
            | "handoff"
            | "schedule_call"
            | "update_summary"
    ) || (voice && name == "transfer")
        || (booking && BOOKING_TOOLS.contains(&name));
    if !known {
        return Err(format!("unknown tool: {name}"));
    }
    let args = arguments(&call.arguments)?;
    Ok(match name {
        "mark_hot" => Tool::MarkHot,
        "mark_qualified" => Tool::MarkQualified,
        "add_tag" => {
            let name = required_text(&args, "name")?;
            // The engine refuses a name that makes no tag id (the records domain's rule).
            Tool::AddTag { name }
        }
        "opt_out" => Tool::OptOut {
            channels: channels(&args)?,
        },
        "handoff" => Tool::Handoff {
            reason: required_text(&args, "reason")?,
        },
        "schedule_call" => {
            let at = match args.get("at") {
                None | Some(Value::Null) => None,
                Some(Value::String(text)) if text.trim().is_empty() => None,
                Some(Value::String(text)) => Some(crate::time::parse(text).ok_or(
                    "invalid argument: at (an RFC 3339 date-time such as 2025-03-01T15:00:00-05:00)",
                )?),
                Some(_) => return Err("invalid argument: at".into()),
            };
            Tool::ScheduleCall { at }
        }
        "update_summary" => Tool::UpdateSummary {
            summary: required_text(&args, "summary")?,
        },
        "find_times" => {
            let day = match args.get("day") {
                None | Some(Value::Null) => None,
                Some(Value::String(text)) if text.trim().is_empty() => None,
                Some(Value::String(text)) => Some(
                    chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
                        .map_err(|_| "invalid argument: day (a date such as 2025-03-01)")?,
                ),
                Some(_) => return Err("invalid argument: day".into()),
            };
            Tool::FindTimes { day }
        }
        "book_meeting" => Tool::BookMeeting {
            start: required_start(&args)?,
        },
        "reschedule_meeting" => Tool::RescheduleMeeting {
            start: required_start(&args)?,
        },
        "cancel_meeting" => Tool::CancelMeeting,
        _ => Tool::Transfer,
    })
}

/// The arguments as an object; empty text counts as `{}`.
fn arguments(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str(text) {
        Ok(Value::Object(args)) => Ok(args),
        _ => Err("malformed arguments".into()),
    }
}

fn required_text(args: &Map<String, Value>, name: &str) -> Result<String, String> {
    match args.get(name) {
        None | Some(Value::Null) => Err(format!("missing argument: {name}")),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(format!("invalid argument: {name} (a string)")),
    }
}

/// A booking tool's `start`: an RFC 3339 date-time with its offset.
fn required_start(args: &Map<String, Value>) -> Result<i64, String> {
    let text = required_text(args, "start")?;
    crate::time::parse(text.trim()).ok_or_else(|| {
        "invalid argument: start (an RFC 3339 date-time such as 2025-03-01T15:00:00-05:00)".into()
    })
}

/// `opt_out`'s channels: absent, null or empty means every channel. A lone string is
/// taken as a list of one, as models sometimes write it.
fn channels(args: &Map<String, Value>) -> Result<Option<Vec<Channel>>, String> {
    let invalid = || "invalid argument: channels (sms, voice or email)".to_string();
    let items: Vec<&Value> = match args.get("channels") {
        None | Some(Value::Null) => return Ok(None),
        Some(one @ Value::String(_)) => vec![one],
        Some(Value::Array(items)) => items.iter().collect(),
        Some(_) => return Err(invalid()),
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let channel = item
            .as_str()
            .and_then(|s| Channel::parse(&s.trim().to_ascii_lowercase()))
            .ok_or_else(invalid)?;
        if !out.contains(&channel) {
            out.push(channel);
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn call(name: &str, arguments: &str) -> ToolCallRequest {
        ToolCallRequest {
            id: "call_1".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    pub(crate) fn tool_names(tools: &Value) -> Vec<String> {
        tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn tools_are_openai_functions_with_schemas() {
        let tools = tool_definitions(false, false);
        assert_eq!(
            tool_names(&tools),
            [
                "mark_hot",
                "mark_qualified",
                "add_tag",
                "opt_out",
                "handoff",
                "schedule_call",
                "update_summary"
            ]
        );
        for tool in tools.as_array().unwrap() {
            assert_eq!(tool["type"], "function");
            assert!(!tool["function"]["description"].as_str().unwrap().is_empty());
            assert_eq!(tool["function"]["parameters"]["type"], "object");
        }
        let by_name = |name: &str| {
            tools
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["function"]["name"] == name)
                .unwrap()["function"]["parameters"]
                .clone()
        };
        assert_eq!(by_name("mark_hot")["properties"], json!({}));
        assert!(by_name("mark_hot").get("required").is_none());
        assert_eq!(by_name("add_tag")["required"], json!(["name"]));
        assert_eq!(by_name("add_tag")["properties"]["name"]["type"], "string");
        assert_eq!(by_name("handoff")["required"], json!(["reason"]));
        assert_eq!(by_name("update_summary")["required"], json!(["summary"]));
        assert_eq!(
            by_name("opt_out")["properties"]["channels"]["items"]["enum"],
            json!(["sms", "voice", "email"])
        );
        assert!(by_name("opt_out").get("required").is_none());
        assert_eq!(
            by_name("schedule_call")["properties"]["at"]["format"],
            "date-time"
        );
        let voice = tool_definitions(true, false);
        assert_eq!(tool_names(&voice).last().unwrap(), "transfer");
        assert_eq!(voice.as_array().unwrap().len(), 8);
    }

    #[test]
    fn parses_each_tool() {
        let ok = |name: &str, args: &str| parse_tool(&call(name, args), false, false);
        assert_eq!(ok("mark_hot", ""), Ok(Tool::MarkHot));
        assert_eq!(ok("mark_hot", "{}"), Ok(Tool::MarkHot));
        assert_eq!(
            ok("mark_qualified", " {\"extra\": 1} "),
            Ok(Tool::MarkQualified)
        );
        assert_eq!(
            ok("add_tag", r#"{"name": "Solar Panels"}"#),
            Ok(Tool::AddTag {
                name: "Solar Panels".into()
            })
        );
        assert_eq!(ok("opt_out", "{}"), Ok(Tool::OptOut { channels: None }));
        assert_eq!(
            ok("opt_out", r#"{"channels": null}"#),
            Ok(Tool::OptOut { channels: None })
        );
        assert_eq!(
            ok("opt_out", r#"{"channels": []}"#),
            Ok(Tool::OptOut { channels: None })
        );
        assert_eq!(
            ok("opt_out", r#"{"channels": ["sms", "EMAIL", "sms"]}"#),
            Ok(Tool::OptOut {
                channels: Some(vec![Channel::Sms, Channel::Email])
            })
        );
        assert_eq!(
            ok("opt_out", r#"{"channels": "voice"}"#),
            Ok(Tool::OptOut {
                channels: Some(vec![Channel::Voice])
            })
        );
        assert_eq!(
            ok("handoff", r#"{"reason": "wants a human"}"#),
            Ok(Tool::Handoff {
                reason: "wants a human".into()
            })
        );
        assert_eq!(
            ok("schedule_call", "{}"),
            Ok(Tool::ScheduleCall { at: None })
        );
        assert_eq!(
            ok("schedule_call", r#"{"at": ""}"#),
            Ok(Tool::ScheduleCall { at: None })
        );
        assert_eq!(
            ok("schedule_call", r#"{"at": "2025-03-01T15:00:00-05:00"}"#),
            Ok(Tool::ScheduleCall {
                at: crate::time::parse("2025-03-01T20:00:00Z")
            })
        );
        assert_eq!(
            ok("update_summary", r#"{"summary": "Owns a house."}"#),
            Ok(Tool::UpdateSummary {
                summary: "Owns a house.".into()
            })
        );
        assert_eq!(
            parse_tool(&call("transfer", ""), true, false),
            Ok(Tool::Transfer)
        );
        assert_eq!(
            parse_tool(&call("mark_hot", ""), true, false),
            Ok(Tool::MarkHot)
        );
    }

    #[test]
    fn refuses_bad_tool_calls_with_a_reason() {
        let err = |name: &str, args: &str| parse_tool(&call(name, args), false, false).unwrap_err();
        assert_eq!(err("send_email", "{}"), "unknown tool: send_email");
        assert_eq!(err("transfer", "{}"), "unknown tool: transfer");
        for bad in ["[]", "\"x\"", "42", "null", "{", "name=x"] {
            assert_eq!(err("mark_hot", bad), "malformed arguments", "{bad}");
        }
        assert_eq!(err("add_tag", "{}"), "missing argument: name");
        assert_eq!(
            err("add_tag", r#"{"name": null}"#),
            "missing argument: name"
        );
        assert!(err("add_tag", r#"{"name": 3}"#).starts_with("invalid argument: name"));
        assert_eq!(err("handoff", ""), "missing argument: reason");
        assert!(err("handoff", r#"{"reason": ["x"]}"#).starts_with("invalid argument: reason"));
        assert_eq!(err("update_summary", "{}"), "missing argument: summary");
        assert!(
            err("update_summary", r#"{"summary": {}}"#).starts_with("invalid argument: summary")
        );
        for bad in [
            r#"{"channels": ["fax"]}"#,
            r#"{"channels": [1]}"#,
            r#"{"channels": 5}"#,
        ] {
            assert!(
                err("opt_out", bad).starts_with("invalid argument: channels"),
                "{bad}"
            );
        }
        for bad in [
            r#"{"at": "tomorrow at 3"}"#,
            r#"{"at": "2025-03-01T15:00:00"}"#,
            r#"{"at": 1740000000}"#,
        ] {
            assert!(
                err("schedule_call", bad).starts_with("invalid argument: at"),
                "{bad}"
            );
        }
    }

    #[test]
    fn booking_tools_only_with_a_calendar() {
        let names = tool_names(&tool_definitions(false, true));
        assert_eq!(names[names.len() - 4..], BOOKING_TOOLS);
        assert!(!tool_names(&tool_definitions(false, false)).contains(&"find_times".into()));
        let booking = |name: &str, args: &str| parse_tool(&call(name, args), false, true);
        assert_eq!(
            parse_tool(&call("book_meeting", "{}"), false, false),
            Err("unknown tool: book_meeting".into())
        );
        assert_eq!(
            booking("find_times", "{}"),
            Ok(Tool::FindTimes { day: None })
        );
        assert_eq!(
            booking("find_times", r#"{"day": "2025-12-02"}"#),
            Ok(Tool::FindTimes {
                day: chrono::NaiveDate::from_ymd_opt(2025, 12, 2)
            })
        );
        assert!(booking("find_times", r#"{"day": "Tuesday"}"#)
            .unwrap_err()
            .starts_with("invalid argument: day"));
        assert_eq!(
            booking("book_meeting", r#"{"start": "2025-12-02T15:00:00-06:00"}"#),
            Ok(Tool::BookMeeting {
                start: crate::time::parse("2025-12-02T21:00:00Z").unwrap()
            })
        );
        assert_eq!(
            booking("book_meeting", "{}"),
            Err("missing argument: start".into())
        );
        assert!(booking("reschedule_meeting", r#"{"start": "3pm"}"#)
            .unwrap_err()
            .starts_with("invalid argument: start"));
        assert_eq!(booking("cancel_meeting", ""), Ok(Tool::CancelMeeting));
    }
}

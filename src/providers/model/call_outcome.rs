//! Post-call processing's protocol: asking the assistant for a completed call's summary
//! and disposition.
//!
//! A finished call's transcript goes to the same OpenAI-compatible server as the
//! conversation turns, in one request whose answer is JSON `{"summary",
//! "dispositionId"}`. Servers differ in what they support, so the request is first made
//! with `response_format` `json_schema` (structured output) and, when the server
//! refuses that ([`is_refusal`](super::is_refusal): any 5xx, any 4xx but 401, 403, 408
//! and 429, or a 2xx whose content is not the JSON asked for), at once with a forced
//! call of one tool, `record_call_outcome`, whose parameters are the same schema; that
//! request is retried as any other (5xx, timeouts), so an outage costs one more
//! attempt than before. The choice is not remembered: every call's processing asks with
//! `json_schema` first. The attempts and their retries are the assistant's ([`send`]). This
//! file knows the wire format and nothing of the store: the durable job around it
//! checks the disposition id against its profile and records the outcome. Malformed
//! output from a model is an `Err` with a short reason, never a panic.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::protocol::{parse_answer, Answer, Turn, POST_CALL_MAX_TOKENS, TEMPERATURE};
use super::{send, OnRefusal, SendError, Server, RETRY_BACKOFF};
use crate::http_client::HttpClient;

/// The name of the forced tool.
pub const TOOL_NAME: &str = "record_call_outcome";

/// The name of the `json_schema` response format.
pub const SCHEMA_NAME: &str = "call_outcome";

/// One disposition the model may choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub description: &'a str,
}

/// The model's classification of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub summary: String,
    /// None when there were no choices.
    pub disposition_id: Option<String>,
}

/// How the answer's shape is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `response_format` `json_schema`: the answer is the message's content.
    JsonSchema,
    /// A forced call of [`TOOL_NAME`]: the answer is the call's arguments.
    ForcedTool,
}

/// The JSON schema of the answer: `summary`, and `dispositionId` among the choices'
/// ids when there are choices.
fn schema(choices: &[Choice]) -> Value {
    let mut properties = Map::new();
    properties.insert("summary".into(), json!({"type": "string"}));
    let mut required = vec!["summary"];
    if !choices.is_empty() {
        let ids: Vec<&str> = choices.iter().map(|c| c.id).collect();
        properties.insert(
            "dispositionId".into(),
            json!({"type": "string", "enum": ids}),
        );
        required.push("dispositionId");
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn system_message(instructions: &str, choices: &[Choice]) -> String {
    let mut text = String::from(
        "You classify a finished sales call from its transcript, \
         in which the agent speaks for the organization and the lead is its prospect.\n",
    );
    let instructions = instructions.trim();
    if !instructions.is_empty() {
        text.push_str("\nThe agent's instructions, for context:\n");
        text.push_str(instructions);
        text.push('\n');
    }
    if choices.is_empty() {
        text.push_str("\nAnswer with JSON: a summary of 1 to 3 sentences for the sales team.\n");
        return text;
    }
    text.push_str("\nDispositions:\n");
    for choice in choices {
        let description = choice.description.trim();
        if description.is_empty() {
            text.push_str(&format!("- {}: {}\n", choice.id, choice.name.trim()));
        } else {
            text.push_str(&format!(
                "- {}: {} — {}\n",
                choice.id,
                choice.name.trim(),
                description
            ));
        }
    }
    text.push_str(
        "\nAnswer with JSON: a summary of 1 to 3 sentences for the sales team, \
         and the dispositionId that fits best.\n",
    );
    text
}

/// The transcript as lines `Lead: ...` / `Agent: ...`, oldest first; a turn's own line
/// breaks become spaces and empty turns are left out.
fn transcript(turns: &[Turn]) -> String {
    let mut lines = Vec::with_capacity(turns.len());
    for turn in turns {
        let text = turn.text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            continue;
        }
        let who = if turn.from_lead { "Lead" } else { "Agent" };
        lines.push(format!("{who}: {text}"));
    }
    lines.join("\n")
}

/// The chat-completions request: `{"model", "messages", "temperature", "max_tokens"}`
/// (`assistant.maxTokens`, else [`POST_CALL_MAX_TOKENS`]) and, by
/// `mode`, `response_format` or `tools` and `tool_choice`. Messages: the system
/// message (the task, the profile's instructions, the dispositions), one user message
/// holding the transcript, then `correction` as a last user message when set.
pub fn request_body(
    model: &str,
    max_tokens: u32,
    instructions: &str,
    turns: &[Turn],
    choices: &[Choice],
    correction: Option<&str>,
    mode: Mode,
) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": system_message(instructions, choices)}),
        json!({"role": "user", "content": transcript(turns)}),
    ];
    if let Some(correction) = correction {
        messages.push(json!({"role": "user", "content": correction}));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("temperature".into(), json!(TEMPERATURE));
    body.insert("max_tokens".into(), json!(max_tokens));
    match mode {
        Mode::JsonSchema => {
            body.insert(
                "response_format".into(),
                json!({
                    "type": "json_schema",
                    "json_schema": {"name": SCHEMA_NAME, "strict": true, "schema": schema(choices)}
                }),
            );
        }
        Mode::ForcedTool => {
            body.insert(
                "tools".into(),
                json!([{
                    "type": "function",
                    "function": {
                        "name": TOOL_NAME,
                        "description": "Record the finished call's summary and disposition.",
                        "parameters": schema(choices),
                    }
                }]),
            );
            body.insert(
                "tool_choice".into(),
                json!({"type": "function", "function": {"name": TOOL_NAME}}),
            );
        }
    }
    Value::Object(body)
}

/// Reads a chat-completions answer. [`Mode::JsonSchema`]: the message's content is the
/// JSON (a ```` ```json ```` fence around it is tolerated). [`Mode::ForcedTool`]: the
/// first tool call's arguments are; a server that ignored `tool_choice` but answered
/// with the JSON as content is read as in [`Mode::JsonSchema`]. `disposition_id` is
/// `None` when the JSON has none; it is not checked against any choices.
pub fn parse(bytes: &[u8], mode: Mode) -> Result<Outcome, String> {
    let json = match (parse_answer(bytes)?, mode) {
        (Answer::Text(content), Mode::JsonSchema) => from_content(&content)?,
        (Answer::Text(content), Mode::ForcedTool) => {
            from_content(&content).map_err(|e| format!("no tool call ({e})"))?
        }
        (Answer::ToolCalls { .. }, Mode::JsonSchema) => {
            return Err("a tool call instead of JSON content".into())
        }
        (Answer::ToolCalls { calls, .. }, Mode::ForcedTool) => {
            let call = calls.first().ok_or("no tool call")?;
            if call.name != TOOL_NAME {
                return Err("unexpected tool".into());
            }
            serde_json::from_str(&call.arguments)
                .map_err(|_| "tool call arguments are not JSON".to_string())?
        }
    };
    outcome(&json)
}

/// The JSON of a message's content, without a Markdown code fence around it.
fn from_content(content: &str) -> Result<Value, String> {
    let mut text = content.trim();
    if let Some(fenced) = text.strip_prefix("```") {
        // The fence's first line may name a language (```json).
        let body = fenced.split_once('\n').map_or(fenced, |(_, rest)| rest);
        text = body.trim_end().strip_suffix("```").unwrap_or(body).trim();
    }
    if text.is_empty() {
        return Err("empty content".into());
    }
    serde_json::from_str(text).map_err(|_| "content is not JSON".to_string())
}

fn outcome(json: &Value) -> Result<Outcome, String> {
    let object = json.as_object().ok_or("not a JSON object")?;
    let summary = match object.get("summary") {
        None | Some(Value::Null) => return Err("no summary".into()),
        Some(Value::String(text)) => text.trim(),
        Some(_) => return Err("summary is not a string".into()),
    };
    if summary.is_empty() {
        return Err("empty summary".into());
    }
    let disposition_id = match object.get("dispositionId") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.clone()),
        Some(_) => return Err("dispositionId is not a string".into()),
    };
    Ok(Outcome {
        summary: summary.to_string(),
        disposition_id,
    })
}

/// Asks the model for the outcome of a call whose transcript is `turns` (oldest
/// first): first with `response_format` `json_schema`; when the server refuses that
/// ([`is_refusal`](super::is_refusal): a 5xx, a 4xx but the key's and a wait's, or a
/// 2xx whose content is not the JSON asked for), at once with a forced tool call
/// instead. The first request is retried on timeouts, transport failures and 408/429;
/// the forced tool call as [`complete`](super::complete) does (network errors, 5xx,
/// timeouts).
/// `correction`, when set, is added as a last user message (after an unknown
/// dispositionId). With choices, an answer without a `dispositionId` is malformed;
/// without, `disposition_id` is `None`.
pub async fn ask(
    client: &HttpClient,
    settings: &Server,
    instructions: &str,
    turns: &[Turn],
    choices: &[Choice<'_>],
    correction: Option<&str>,
) -> Result<Outcome, String> {
    ask_with_backoff(
        client,
        settings,
        instructions,
        turns,
        choices,
        correction,
        &RETRY_BACKOFF,
    )
    .await
}

/// [`ask`] with the waits between attempts given.
async fn ask_with_backoff(
    client: &HttpClient,
    settings: &Server,
    instructions: &str,
    turns: &[Turn],
    choices: &[Choice<'_>],
    correction: Option<&str>,
    backoff: &[Duration],
) -> Result<Outcome, String> {
    let max_tokens = settings.max_tokens.unwrap_or(POST_CALL_MAX_TOKENS);
    let body = |mode| {
        request_body(
            &settings.model,
            max_tokens,
            instructions,
            turns,
            choices,
            correction,
            mode,
        )
    };
    let read = |mode| {
        move |bytes: &[u8]| {
            let mut outcome = parse(bytes, mode)?;
            if choices.is_empty() {
                outcome.disposition_id = None;
            } else if outcome.disposition_id.is_none() {
                return Err("no dispositionId".to_string());
            }
            Ok(outcome)
        }
    };
    let first = send(
        client,
        settings,
        &body(Mode::JsonSchema),
        backoff,
        OnRefusal::Stop,
        read(Mode::JsonSchema),
    )
    .await;
    let refusal = match first {
        Ok(outcome) => return Ok(outcome),
        Err(SendError::Refused(reason)) => reason,
        Err(SendError::Failed(failure)) => return Err(failure.to_string()),
    };
    tracing::debug!(%refusal, "response_format refused: asking with a forced tool call");
    send(
        client,
        settings,
        &body(Mode::ForcedTool),
        backoff,
        OnRefusal::Retry,
        read(Mode::ForcedTool),
    )
    .await
    .map_err(|e| {
        format!(
            "{} (with a forced tool call; response_format: {refusal})",
            e.into_failure()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::model::tests::{client, model_server};

    const CHOICES: [Choice<'static>; 2] = [
        Choice {
            id: "interested",
            name: "Interested",
            description: "Wants a quote or a visit.",
        },
        Choice {
            id: "not_interested",
            name: "Not interested",
            description: "",
        },
    ];

    fn turns() -> Vec<Turn> {
        [
            (false, "Hi, this is Sam from Acme Solar."),
            (true, "Hello Sam.\nWhat is this about?"),
            (false, "Your roof could save you money."),
            (true, "Send me a quote."),
        ]
        .into_iter()
        .map(|(from_lead, text)| Turn {
            from_lead,
            text: text.into(),
        })
        .collect()
    }

    fn settings(base_url: String) -> Server {
        Server {
            base_url,
            model: "m".into(),
            api_key: None,
            timeout_ms: 5_000,
            max_tokens: None,
        }
    }

    /// A chat-completions answer whose content is `content`.
    fn content_answer(content: &str) -> String {
        json!({"choices": [{"message": {"role": "assistant", "content": content}}]}).to_string()
    }

    /// A chat-completions answer calling `name` with `arguments`.
    fn tool_answer(name: &str, arguments: Value) -> String {
        json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
        ]}}]})
        .to_string()
    }

    fn leak(text: String) -> &'static str {
        Box::leak(text.into_boxed_str())
    }

    fn outcome(summary: &str, id: Option<&str>) -> Outcome {
        Outcome {
            summary: summary.into(),
            disposition_id: id.map(str::to_string),
        }
    }

    /// Asks the model at `base_url` about `turns()` among `CHOICES`, waiting `backoff`
    /// between attempts.
    async fn ask_now(
        base_url: String,
        correction: Option<&str>,
        backoff: &[Duration],
    ) -> Result<Outcome, String> {
        let settings = settings(base_url);
        ask_with_backoff(
            &client(),
            &settings,
            "",
            &turns(),
            &CHOICES,
            correction,
            backoff,
        )
        .await
    }

    /// The members of a request body, in order.
    fn keys_of(body: &Value) -> Vec<&str> {
        body.as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    #[test]
    fn the_json_schema_body_has_the_response_format_and_no_tools() {
        let body = request_body(
            "llama3.1:8b",
            1000,
            "You are Sam from Acme Solar.",
            &turns(),
            &CHOICES,
            None,
            Mode::JsonSchema,
        );
        assert_eq!(
            keys_of(&body),
            [
                "model",
                "messages",
                "temperature",
                "max_tokens",
                "response_format"
            ]
        );
        assert_eq!(body["max_tokens"], json!(1000));
        assert_eq!(body["model"], "llama3.1:8b");
        assert_eq!(body["temperature"], json!(0.3));
        assert_eq!(
            body["response_format"],
            json!({"type": "json_schema", "json_schema": {
                "name": "call_outcome",
                "strict": true,
                "schema": {
                    "type": "object",
                    "properties": {
                        "summary": {"type": "string"},
                        "dispositionId": {"type": "string", "enum": ["interested", "not_interested"]}
                    },
                    "required": ["summary", "dispositionId"],
                    "additionalProperties": false
                }
            }})
        );
        assert!(body.get("tools").is_none());
        assert!(body.get("tool_choice").is_none());
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0]["role"], "system");
        let system = messages[0]["content"].as_str().unwrap();
        assert!(
            system.starts_with("You classify a finished sales call"),
            "{system}"
        );
        assert!(system.contains("You are Sam from Acme Solar."), "{system}");
        assert!(
            system.contains("- interested: Interested — Wants a quote or a visit.\n"),
            "{system}"
        );
        assert!(
            system.contains("- not_interested: Not interested\n"),
            "{system}"
        );
        assert!(
            system.contains("the dispositionId that fits best"),
            "{system}"
        );
    }

    #[test]
    fn the_forced_tool_body_names_the_function() {
        let body = request_body("m", 1000, "", &turns(), &CHOICES, None, Mode::ForcedTool);
        assert_eq!(
            keys_of(&body),
            [
                "model",
                "messages",
                "temperature",
                "max_tokens",
                "tools",
                "tool_choice"
            ]
        );
        assert_eq!(
            body["tool_choice"],
            json!({"type": "function", "function": {"name": "record_call_outcome"}})
        );
        let schema_body = request_body("m", 1000, "", &turns(), &CHOICES, None, Mode::JsonSchema);
        let tools = body["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0]["type"], "function");
        assert_eq!(tools[0]["function"]["name"], "record_call_outcome");
        assert_eq!(
            tools[0]["function"]["parameters"],
            schema_body["response_format"]["json_schema"]["schema"]
        );
        assert!(body.get("response_format").is_none());
        // No instructions: no section for them.
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(!system.contains("instructions"), "{system}");
    }

    #[test]
    fn without_choices_the_schema_has_only_the_summary() {
        let body = request_body("m", 1000, "x", &turns(), &[], None, Mode::JsonSchema);
        assert_eq!(
            body["response_format"]["json_schema"]["schema"],
            json!({
                "type": "object",
                "properties": {"summary": {"type": "string"}},
                "required": ["summary"],
                "additionalProperties": false
            })
        );
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(!system.contains("dispositionId"), "{system}");
        assert!(!system.contains("Dispositions"), "{system}");
    }

    #[test]
    fn the_transcript_is_one_user_message_in_order() {
        let mut turns = turns();
        turns.push(Turn {
            from_lead: false,
            text: "  ".into(),
        });
        let body = request_body("m", 1000, "", &turns, &CHOICES, None, Mode::JsonSchema);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[1]["role"], "user");
        assert_eq!(
            messages[1]["content"],
            "Agent: Hi, this is Sam from Acme Solar.\n\
             Lead: Hello Sam. What is this about?\n\
             Agent: Your roof could save you money.\n\
             Lead: Send me a quote."
        );
    }

    #[test]
    fn the_correction_is_the_last_user_message() {
        let correction = "dispositionId \"x\" is not one of: a, b. Choose one of them.";
        for mode in [Mode::JsonSchema, Mode::ForcedTool] {
            let body = request_body("m", 1000, "", &turns(), &CHOICES, Some(correction), mode);
            let messages = body["messages"].as_array().unwrap();
            assert_eq!(messages.len(), 3);
            assert_eq!(messages[2], json!({"role": "user", "content": correction}));
            assert!(messages[1]["content"]
                .as_str()
                .unwrap()
                .starts_with("Agent: "));
        }
    }

    #[test]
    fn parse_reads_the_content_fenced_or_not() {
        let plain =
            content_answer(r#"{"summary": " Wants a quote. ", "dispositionId": "interested"}"#);
        assert_eq!(
            parse(plain.as_bytes(), Mode::JsonSchema),
            Ok(outcome("Wants a quote.", Some("interested")))
        );
        for fenced in [
            "```json\n{\"summary\": \"Wants a quote.\", \"dispositionId\": \"interested\"}\n```",
            "  ```\n{\"summary\": \"Wants a quote.\", \"dispositionId\": \"interested\"}```\n",
            "```{\"summary\": \"Wants a quote.\", \"dispositionId\": \"interested\"}```",
        ] {
            assert_eq!(
                parse(content_answer(fenced).as_bytes(), Mode::JsonSchema),
                Ok(outcome("Wants a quote.", Some("interested"))),
                "{fenced}"
            );
        }
        // The id as given, even one the caller will not know.
        let unknown = content_answer(r#"{"summary": "s", "dispositionId": "nope"}"#);
        assert_eq!(
            parse(unknown.as_bytes(), Mode::JsonSchema),
            Ok(outcome("s", Some("nope")))
        );
        let none = content_answer(r#"{"summary": "s"}"#);
        assert_eq!(
            parse(none.as_bytes(), Mode::JsonSchema),
            Ok(outcome("s", None))
        );
    }

    #[test]
    fn parse_reads_the_forced_tool_call() {
        let args = json!({"summary": "Call back Friday.", "dispositionId": "interested"});
        let expected = Ok(outcome("Call back Friday.", Some("interested")));
        let as_text = tool_answer(TOOL_NAME, Value::String(args.to_string()));
        assert_eq!(parse(as_text.as_bytes(), Mode::ForcedTool), expected);
        let as_object = tool_answer(TOOL_NAME, args.clone());
        assert_eq!(parse(as_object.as_bytes(), Mode::ForcedTool), expected);
        // A server that ignored tool_choice but answered with the JSON.
        let content = content_answer(&args.to_string());
        assert_eq!(parse(content.as_bytes(), Mode::ForcedTool), expected);
        assert_eq!(
            parse(as_text.as_bytes(), Mode::JsonSchema),
            Err("a tool call instead of JSON content".into())
        );
        assert_eq!(
            parse(tool_answer("other", args).as_bytes(), Mode::ForcedTool),
            Err("unexpected tool".into())
        );
    }

    #[test]
    fn malformed_answers_are_errors() {
        let err = |content: &str| parse(content_answer(content).as_bytes(), Mode::JsonSchema);
        assert_eq!(
            err(r#"{"summary": "  ", "dispositionId": "interested"}"#),
            Err("empty summary".into())
        );
        assert_eq!(err(r#"{"dispositionId": "a"}"#), Err("no summary".into()));
        assert_eq!(
            err(r#"{"summary": 3}"#),
            Err("summary is not a string".into())
        );
        assert_eq!(
            err(r#"{"summary": "s", "dispositionId": 2}"#),
            Err("dispositionId is not a string".into())
        );
        assert_eq!(
            err("The lead wants a quote."),
            Err("content is not JSON".into())
        );
        assert_eq!(err("[1, 2]"), Err("not a JSON object".into()));
        assert_eq!(err(""), Err("empty content".into()));
        assert_eq!(err("```json\n```"), Err("empty content".into()));
        assert_eq!(
            parse(content_answer("Sure!").as_bytes(), Mode::ForcedTool),
            Err("no tool call (content is not JSON)".into())
        );
        let not_json = parse(b"not json", Mode::JsonSchema).unwrap_err();
        assert!(not_json.starts_with("not JSON"), "{not_json}");
        let bad_args = tool_answer(TOOL_NAME, Value::String("{".into()));
        assert_eq!(
            parse(bad_args.as_bytes(), Mode::ForcedTool),
            Err("tool call arguments are not JSON".into())
        );
    }

    #[tokio::test]
    async fn a_400_falls_back_to_the_forced_tool_at_once() {
        let answer = tool_answer(
            TOOL_NAME,
            json!({"summary": "Wants a quote.", "dispositionId": "interested"}),
        );
        let (base_url, seen) = model_server(vec![
            (
                400,
                r#"{"error": {"message": "response_format is not supported"}}"#,
                Duration::ZERO,
            ),
            (200, leak(answer), Duration::ZERO),
        ])
        .await;
        let got = ask(&client(), &settings(base_url), "", &turns(), &CHOICES, None).await;
        assert_eq!(got, Ok(outcome("Wants a quote.", Some("interested"))));
        let seen = seen.received();
        assert_eq!(seen.len(), 2);
        assert_eq!(
            seen[0].body,
            request_body("m", 1000, "", &turns(), &CHOICES, None, Mode::JsonSchema)
        );
        assert_eq!(
            seen[1].body,
            request_body("m", 1000, "", &turns(), &CHOICES, None, Mode::ForcedTool)
        );
        assert!(seen.iter().all(|r| r.path == "/v1/chat/completions"));
    }

    #[tokio::test]
    async fn prose_content_falls_back_and_the_forced_tool_calls_5xx_is_retried() {
        let answer = tool_answer(TOOL_NAME, json!({"summary": "Not now."}));
        let (base_url, seen) = model_server(vec![
            (
                200,
                leak(content_answer("The lead was busy.")),
                Duration::ZERO,
            ),
            (502, "bad gateway", Duration::ZERO),
            (200, leak(answer), Duration::ZERO),
        ])
        .await;
        let settings = settings(base_url);
        let no_wait = [Duration::ZERO, Duration::ZERO];
        // Without choices: no dispositionId, whatever the model says.
        let got = ask_with_backoff(&client(), &settings, "", &turns(), &[], None, &no_wait).await;
        assert_eq!(got, Ok(outcome("Not now.", None)));
        let seen = seen.received();
        let modes: Vec<bool> = seen
            .iter()
            .map(|r| r.body.get("response_format").is_some())
            .collect();
        // The prose sends the forced tool call, whose 502 is retried like any failure.
        assert_eq!(modes, [true, false, false]);
    }

    #[tokio::test]
    async fn a_500_to_json_schema_falls_back_at_once() {
        // llama.cpp's server answers an unsupported response_format so.
        let refusal = r#"{"error": {"code": 500, "message": "Input should be 'text' or 'json_object'", "type": "server_error"}}"#;
        let answer = tool_answer(
            TOOL_NAME,
            json!({"summary": "Wants a quote.", "dispositionId": "interested"}),
        );
        for status in [500, 503, 404, 413] {
            let (base_url, seen) = model_server(vec![
                (status, refusal, Duration::ZERO),
                (200, leak(answer.clone()), Duration::ZERO),
            ])
            .await;
            let no_wait = [Duration::ZERO, Duration::ZERO];
            let got = ask_now(base_url, None, &no_wait).await;
            assert_eq!(
                got,
                Ok(outcome("Wants a quote.", Some("interested"))),
                "{status}"
            );
            let modes: Vec<bool> = seen
                .received()
                .iter()
                .map(|r| r.body.get("response_format").is_some())
                .collect();
            assert_eq!(
                modes,
                [true, false],
                "{status}: not asked again with json_schema"
            );
        }
    }

    #[tokio::test]
    async fn an_outage_is_retried_with_the_forced_tool_call_then_reported() {
        let (base_url, seen) = model_server(vec![(500, "down", Duration::ZERO)]).await;
        let no_wait = [Duration::ZERO, Duration::ZERO];
        let got = ask_now(base_url, None, &no_wait).await;
        assert_eq!(
            got,
            Err("status 500 (with a forced tool call; response_format: status 500)".to_string())
        );
        let modes: Vec<bool> = seen
            .received()
            .iter()
            .map(|r| r.body.get("response_format").is_some())
            .collect();
        // One json_schema request, then the forced tool call's three attempts.
        assert_eq!(modes, [true, false, false, false]);
    }

    #[tokio::test]
    async fn a_429_or_a_timeout_is_asked_again_with_json_schema() {
        let answer = content_answer(r#"{"summary": "s", "dispositionId": "interested"}"#);
        let (base_url, seen) = model_server(vec![
            (429, "slow down", Duration::ZERO),
            (200, "late", Duration::from_secs(3)),
            (200, leak(answer), Duration::ZERO),
        ])
        .await;
        let mut settings = settings(base_url);
        settings.timeout_ms = 300;
        let no_wait = [Duration::ZERO, Duration::ZERO];
        let got =
            ask_with_backoff(&client(), &settings, "", &turns(), &CHOICES, None, &no_wait).await;
        assert_eq!(got, Ok(outcome("s", Some("interested"))));
        let seen = seen.received();
        assert_eq!(seen.len(), 3);
        assert!(seen.iter().all(|r| r.body.get("response_format").is_some()));
    }

    #[tokio::test]
    async fn a_missing_disposition_is_malformed_when_there_are_choices() {
        let (base_url, seen) = model_server(vec![(
            200,
            leak(content_answer(r#"{"summary": "s"}"#)),
            Duration::ZERO,
        )])
        .await;
        let no_wait = [Duration::ZERO, Duration::ZERO];
        let got = ask_now(base_url, Some("fix it"), &no_wait).await;
        assert_eq!(
            got,
            Err(
                "malformed answer (with a forced tool call; response_format: malformed answer)"
                    .to_string()
            )
        );
        let seen = seen.received();
        // One json_schema request, then three forced tool attempts.
        assert_eq!(seen.len(), 4);
        assert!(seen
            .iter()
            .all(|r| r.body["messages"][2]["content"] == "fix it"));
    }

    #[tokio::test]
    async fn a_final_status_is_not_retried_nor_quoted() {
        let (base_url, seen) = model_server(vec![
            (401, "SECRET-INTERNAL-123", Duration::ZERO),
            (200, "never asked", Duration::ZERO),
        ])
        .await;
        let no_wait = [Duration::ZERO, Duration::ZERO];
        let got = ask_now(base_url, None, &no_wait).await;
        assert_eq!(got, Err("status 401".to_string()));
        assert_eq!(seen.count(), 1);
    }

    #[tokio::test]
    async fn an_unreachable_server_is_not_asked_twice_over() {
        let addr = crate::testkit::closed_addr();
        let no_wait = [Duration::ZERO];
        let got = ask_now(format!("http://{addr}"), None, &no_wait).await;
        let reason = got.unwrap_err();
        assert!(!reason.contains("forced tool"), "{reason}");
    }
}

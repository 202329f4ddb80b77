//! A scripted OpenAI-compatible chat-completions server for the assistant tests (the unit
//! tests of the model client, `tests/http` and the voice bench), and the tests of the
//! fake itself.
//!
//! `FakeModel::start()` serves plain HTTP/1.1 on `127.0.0.1:0`. Every request is recorded
//! on arrival (method, path, `Authorization` and `User-Agent` headers, JSON body). `POST
//! /v1/chat/completions` is answered from a queue of scripted [`Step`]s, oldest first,
//! and from a default step once the queue is empty; any other path is 404 and a body that
//! is not JSON is 400 (both still recorded, so a wrong call shows in the log). Like
//! llama.cpp's server, the fake can refuse every request asking for `response_format`
//! `json_schema` ([`FakeModel::refuse_json_schema`]) without consuming the script.
//!
//! With neither a queued step nor a default set, the fake answers from the request's
//! instructions (the system message), so a change of a profile's instructions changes
//! its answers deterministically ([`instructed`]): a line `fake-model: call TOOL when
//! the lead says "WORD"` calls `TOOL` (with `{}`) when the lead's last message holds
//! WORD (any case), then answers `Done.` once the tool's result is back; a line
//! `fake-model: answer with N characters` answers N characters; otherwise
//! [`FakeModel::DEFAULT_TEXT`].

use std::collections::VecDeque;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::http::request::Parts;
use hyper::StatusCode;
use serde_json::{json, Value};

use crate::testkit::serve::serve;

/// One scripted tool call of an answer.
#[derive(Clone, Debug)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The `function.arguments` string exactly as sent (it may be malformed on purpose).
    pub arguments: String,
}

/// How the fake answers one chat-completions request.
#[derive(Clone, Debug)]
pub enum Step {
    /// 200, `message.content` is the text, `finish_reason` `stop`.
    Text(String),
    /// 200, `message.tool_calls` are these calls, `content` null, `finish_reason`
    /// `tool_calls`.
    ToolCalls(Vec<ToolCall>),
    /// 200, one tool call with these id and arguments, named after the function the
    /// request forces with `tool_choice` (`{"type": "function", "function": {"name"}}`),
    /// so a test need not know the name the server chose.
    ForcedTool(String, Value),
    /// This status with an OpenAI-style error body.
    Status(u16),
    /// This status and this body, verbatim (a malformed answer, say).
    Raw(u16, String),
    /// Sleeps, then answers with the inner step.
    Delay(Duration, Box<Step>),
}

impl Step {
    pub fn text(text: impl Into<String>) -> Step {
        Step::Text(text.into())
    }

    /// One tool call whose arguments are `arguments` serialised.
    pub fn tool(id: &str, name: &str, arguments: Value) -> Step {
        Step::tool_raw(id, name, &arguments.to_string())
    }

    /// One answer with these calls, each `(id, name, arguments)`.
    pub fn tools(calls: &[(&str, &str, Value)]) -> Step {
        Step::ToolCalls(
            calls
                .iter()
                .map(|(id, name, arguments)| ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: arguments.to_string(),
                })
                .collect(),
        )
    }

    /// One tool call whose arguments string is `arguments` verbatim.
    pub fn tool_raw(id: &str, name: &str, arguments: &str) -> Step {
        Step::ToolCalls(vec![ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: arguments.to_string(),
        }])
    }

    /// A call of the tool the request forces, with `arguments`.
    pub fn forced_tool(id: &str, arguments: Value) -> Step {
        Step::ForcedTool(id.to_string(), arguments)
    }

    pub fn status(status: u16) -> Step {
        Step::Status(status)
    }

    /// This step, answered after `delay`.
    pub fn delayed(self, delay: Duration) -> Step {
        Step::Delay(delay, Box::new(self))
    }
}

/// One request as the fake saw it.
#[derive(Clone, Debug)]
pub struct ModelRequest {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    pub user_agent: Option<String>,
    pub content_type: Option<String>,
    /// The body as JSON (`null` when it was not JSON).
    pub body: Value,
}

#[derive(Default)]
struct State {
    queue: Mutex<VecDeque<Step>>,
    default: Mutex<Option<Step>>,
    log: Mutex<Vec<ModelRequest>>,
    /// The status answered to any request with `response_format` `json_schema`.
    json_schema_refusal: Mutex<Option<u16>>,
    answered: Mutex<u64>,
    /// Microseconds spent answering, from each request's arrival to its answer.
    busy_micros: AtomicU64,
}

pub struct FakeModel {
    addr: SocketAddr,
    state: Arc<State>,
}

impl FakeModel {
    /// What the fake answers when its queue is empty (unless `set_default` changed it).
    pub const DEFAULT_TEXT: &'static str =
        "Thanks for your message! Sam from Acme Solar will follow up shortly.";
    /// The model name [`FakeModel::settings`] configures.
    pub const MODEL: &'static str = "test-model";
    /// The API key [`FakeModel::settings`] configures.
    pub const API_KEY: &'static str = "sk-test";

    pub async fn start() -> FakeModel {
        let state: Arc<State> = Arc::default();
        let shared = state.clone();
        let addr = serve(move |parts, body| {
            let state = shared.clone();
            async move {
                let started = Instant::now();
                let answer = answer(&state, parts, body).await;
                let spent = started.elapsed().as_micros() as u64;
                state.busy_micros.fetch_add(spent, Ordering::Relaxed);
                Some(answer)
            }
        })
        .await;
        FakeModel { addr, state }
    }

    /// `http://127.0.0.1:PORT/v1`, the `assistant.baseUrl` to configure.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues `step` after the ones already queued.
    pub fn push(&self, step: Step) {
        self.state.queue.lock().unwrap().push_back(step);
    }

    /// What to answer once the queue is empty (default: [`FakeModel::DEFAULT_TEXT`]).
    pub fn set_default(&self, step: Step) {
        *self.state.default.lock().unwrap() = Some(step);
    }

    /// From now on, answers `status` with llama.cpp's error (`Input should be 'text' or
    /// 'json_object'`) to every request whose `response_format` is `json_schema`, before
    /// and without taking a scripted step.
    pub fn refuse_json_schema(&self, status: u16) {
        *self.state.json_schema_refusal.lock().unwrap() = Some(status);
    }

    /// The JSON body of every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Value> {
        self.received().into_iter().map(|r| r.body).collect()
    }

    /// Every request so far, in arrival order.
    pub fn received(&self) -> Vec<ModelRequest> {
        self.state.log.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.state.log.lock().unwrap().len()
    }

    /// Waits (bounded by `limit`) until at least `n` requests arrived; returns their bodies.
    pub async fn wait_requests(&self, n: usize, limit: Duration) -> Vec<Value> {
        let deadline = Instant::now() + limit;
        loop {
            let got = self.requests();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "the fake model got {} of {n} requests within {limit:?}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The fake's own time so far: from each request's arrival to its answer, summed
    /// (what a measurement of the server's latency subtracts).
    pub fn busy(&self) -> Duration {
        Duration::from_micros(self.state.busy_micros.load(Ordering::Relaxed))
    }

    /// The `PATCH /v1/org` body that points the organization's assistant at this fake:
    /// model [`FakeModel::MODEL`], key [`FakeModel::API_KEY`], `timeoutMs` 1000.
    pub fn settings(&self) -> Value {
        json!({"assistant": {
            "baseUrl": self.base_url(),
            "model": FakeModel::MODEL,
            "apiKey": FakeModel::API_KEY,
            "timeoutMs": 1000,
        }})
    }
}

fn respond(status: u16, body: String) -> hyper::Response<Full<Bytes>> {
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = StatusCode::from_u16(status).expect("status");
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn error_body(message: &str) -> String {
    json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string()
}

async fn answer(state: &State, parts: Parts, bytes: Bytes) -> hyper::Response<Full<Bytes>> {
    let json: Option<Value> = serde_json::from_slice(&bytes).ok();
    state.log.lock().unwrap().push(ModelRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        authorization: parts
            .headers
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        user_agent: parts
            .headers
            .get(hyper::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        content_type: parts
            .headers
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body: json.clone().unwrap_or(Value::Null),
    });
    if parts.method != hyper::Method::POST || parts.uri.path() != "/v1/chat/completions" {
        return respond(404, error_body("not found"));
    }
    let Some(request) = json else {
        return respond(400, error_body("the body is not JSON"));
    };
    let refusal = *state.json_schema_refusal.lock().unwrap();
    if let Some(status) = refusal.filter(|_| request["response_format"]["type"] == "json_schema") {
        let body = json!({"error": {"code": status, "type": "server_error",
                                    "message": "Input should be 'text' or 'json_object'"}});
        return respond(status, body.to_string());
    }
    let step = state.queue.lock().unwrap().pop_front();
    let mut step = step.unwrap_or_else(|| {
        state
            .default
            .lock()
            .unwrap()
            .clone()
            .unwrap_or_else(|| instructed(&request))
    });
    while let Step::Delay(delay, inner) = step {
        tokio::time::sleep(delay).await;
        step = *inner;
    }
    let n = {
        let mut answered = state.answered.lock().unwrap();
        *answered += 1;
        *answered
    };
    let model = request["model"].clone();
    let completion = |message: Value, finish: &str| {
        json!({
            "id": format!("chatcmpl-{n}"),
            "object": "chat.completion",
            "created": chrono::Utc::now().timestamp(),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        })
        .to_string()
    };
    match step {
        Step::Text(text) => respond(
            200,
            completion(json!({"role": "assistant", "content": text}), "stop"),
        ),
        Step::ToolCalls(calls) => {
            let calls: Vec<Value> = calls
                .into_iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": c.arguments}})
                })
                .collect();
            respond(
                200,
                completion(
                    json!({"role": "assistant", "content": null, "tool_calls": calls}),
                    "tool_calls",
                ),
            )
        }
        Step::ForcedTool(id, arguments) => {
            let name = request["tool_choice"]["function"]["name"].clone();
            let call = json!({"id": id, "type": "function",
                              "function": {"name": name, "arguments": arguments.to_string()}});
            respond(
                200,
                completion(
                    json!({"role": "assistant", "content": null, "tool_calls": [call]}),
                    "tool_calls",
                ),
            )
        }
        Step::Status(status) => respond(status, error_body("scripted failure")),
        Step::Raw(status, body) => respond(status, body),
        Step::Delay(..) => unreachable!("delays are unwrapped above"),
    }
}

/// The answer the request's instructions call for (see the module's doc).
pub fn instructed(request: &Value) -> Step {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let system = messages
        .first()
        .filter(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    if last["role"] == "tool" {
        return Step::text("Done.");
    }
    let lead_said = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_lowercase();
    for line in system.lines() {
        let Some(rule) = line.trim().strip_prefix("fake-model:") else {
            continue;
        };
        let rule = rule.trim();
        if let Some(rest) = rule.strip_prefix("call ") {
            let mut parts = rest.splitn(2, " when the lead says ");
            let (Some(tool), Some(word)) = (parts.next(), parts.next()) else {
                continue;
            };
            let word = word.trim().trim_matches('"').to_lowercase();
            if !word.is_empty() && lead_said.contains(&word) {
                return Step::tool(&format!("call_{tool}"), tool.trim(), json!({}));
            }
        } else if let Some(n) = rule
            .strip_prefix("answer with ")
            .and_then(|r| r.strip_suffix(" characters"))
            .and_then(|n| n.trim().parse::<usize>().ok())
        {
            let text: String = "Lorem ipsum dolor sit amet. "
                .chars()
                .cycle()
                .take(n)
                .collect();
            return Step::Text(text);
        }
    }
    Step::text(FakeModel::DEFAULT_TEXT)
}

// Tests of the fake itself.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::https::{fetch, plain_client, PlainClient};

    /// POSTs `body` to `url` with `Authorization: Bearer sk-test`; returns status and JSON.
    async fn post(client: &PlainClient, url: &str, body: &[u8]) -> (u16, Value) {
        let request = hyper::Request::post(url)
            .header("authorization", "Bearer sk-test")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::copy_from_slice(body)))
            .expect("request");
        let (status, bytes) = fetch(client, request).await;
        (
            status,
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned())),
        )
    }

    fn chat(content: &str) -> Vec<u8> {
        json!({"model": "test-model", "messages": [{"role": "user", "content": content}]})
            .to_string()
            .into_bytes()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fake_model_answers_its_script_in_order_then_the_default() {
        let fake = FakeModel::start().await;
        assert!(fake.base_url().starts_with("http://127.0.0.1:"));
        assert!(fake.base_url().ends_with("/v1"));
        fake.push(Step::text("first"));
        fake.push(Step::tool("call_1", "mark_hot", json!({})));
        fake.push(Step::status(503));
        fake.push(Step::Raw(200, "<html>not json</html>".into()));
        let url = format!("{}/chat/completions", fake.base_url());
        let client = plain_client();

        let (status, body) = post(&client, &url, &chat("one")).await;
        assert_eq!(status, 200);
        assert_eq!(body["object"], json!("chat.completion"));
        assert_eq!(body["model"], json!("test-model"));
        assert_eq!(
            body["choices"],
            json!([{"index": 0, "message": {"role": "assistant", "content": "first"}, "finish_reason": "stop"}])
        );
        assert!(body["id"].is_string());

        let (status, body) = post(&client, &url, &chat("two")).await;
        assert_eq!(status, 200);
        assert_eq!(
            body["choices"][0],
            json!({"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "mark_hot", "arguments": "{}"}}]}})
        );

        let (status, body) = post(&client, &url, &chat("three")).await;
        assert_eq!(status, 503);
        assert!(body["error"]["message"].is_string(), "{body}");

        let (status, body) = post(&client, &url, &chat("four")).await;
        assert_eq!((status, body), (200, json!("<html>not json</html>")));

        for _ in 0..2 {
            let (status, body) = post(&client, &url, &chat("more")).await;
            assert_eq!(status, 200);
            assert_eq!(
                body["choices"][0]["message"]["content"],
                json!(FakeModel::DEFAULT_TEXT)
            );
        }
        fake.set_default(Step::status(500));
        assert_eq!(post(&client, &url, &chat("after")).await.0, 500);

        let seen = fake.received();
        assert_eq!(seen.len(), 7);
        for r in &seen {
            assert_eq!(r.method, "POST");
            assert_eq!(r.path, "/v1/chat/completions");
            assert_eq!(r.authorization.as_deref(), Some("Bearer sk-test"));
        }
        let contents: Vec<Value> = fake
            .requests()
            .iter()
            .map(|b| b["messages"][0]["content"].clone())
            .collect();
        assert_eq!(
            contents,
            ["one", "two", "three", "four", "more", "more", "after"]
                .map(|s| json!(s))
                .to_vec()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fake_model_records_a_delayed_request_on_arrival() {
        let fake = FakeModel::start().await;
        fake.push(Step::text("late").delayed(Duration::from_millis(600)));
        let url = format!("{}/chat/completions", fake.base_url());
        let client = plain_client();
        let started = Instant::now();
        let call = tokio::spawn({
            let client = client.clone();
            async move { post(&client, &url, &chat("hello")).await }
        });
        fake.wait_requests(1, Duration::from_secs(5)).await;
        assert!(!call.is_finished(), "the answer waits for the delay");
        let (status, body) = call.await.expect("request task");
        assert!(started.elapsed() >= Duration::from_millis(600));
        assert_eq!(status, 200);
        assert_eq!(body["choices"][0]["message"]["content"], json!("late"));
        assert_eq!(fake.count(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fake_model_refuses_other_paths_and_non_json_but_records_them() {
        let fake = FakeModel::start().await;
        fake.push(Step::text("kept for the right call"));
        let client = plain_client();
        let wrong = format!("{}/completions", fake.base_url());
        assert_eq!(post(&client, &wrong, &chat("x")).await.0, 404);
        let right = format!("{}/chat/completions", fake.base_url());
        assert_eq!(post(&client, &right, b"{not json").await.0, 400);
        let (status, body) = post(&client, &right, &chat("y")).await;
        assert_eq!(status, 200);
        assert_eq!(
            body["choices"][0]["message"]["content"],
            json!("kept for the right call"),
            "refused requests do not consume the script"
        );
        let seen = fake.received();
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0].path, "/v1/completions");
        assert_eq!(seen[1].body, Value::Null);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fake_model_can_refuse_json_schema_without_taking_a_step() {
        let fake = FakeModel::start().await;
        fake.push(Step::text("for the plain request"));
        fake.refuse_json_schema(500);
        let url = format!("{}/chat/completions", fake.base_url());
        let client = plain_client();
        let schema = json!({"model": "m", "messages": [],
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}});
        let (status, body) = post(&client, &url, schema.to_string().as_bytes()).await;
        assert_eq!(status, 500);
        assert_eq!(
            body["error"]["message"],
            json!("Input should be 'text' or 'json_object'")
        );
        let object =
            json!({"model": "m", "messages": [], "response_format": {"type": "json_object"}});
        let (status, body) = post(&client, &url, object.to_string().as_bytes()).await;
        assert_eq!(status, 200);
        assert_eq!(
            body["choices"][0]["message"]["content"],
            json!("for the plain request")
        );
        assert_eq!(fake.count(), 2);
    }

    #[test]
    fn fake_model_answers_from_its_instructions() {
        let request = |system: &str, lead: &str| {
            json!({"messages": [{"role": "system", "content": system},
                                {"role": "user", "content": lead}]})
        };
        let book = "Be kind.\nfake-model: call book_meeting when the lead says \"time\"";
        match instructed(&request(book, "What TIME works?")) {
            Step::ToolCalls(calls) => assert_eq!(calls[0].name, "book_meeting"),
            other => panic!("{other:?}"),
        }
        match instructed(&request(book, "hello")) {
            Step::Text(text) => assert_eq!(text, FakeModel::DEFAULT_TEXT),
            other => panic!("{other:?}"),
        }
        match instructed(&request("fake-model: answer with 1700 characters", "hi")) {
            Step::Text(text) => assert_eq!(text.chars().count(), 1700),
            other => panic!("{other:?}"),
        }
        let after_tool = json!({"messages": [{"role": "system", "content": book},
            {"role": "user", "content": "a time?"}, {"role": "tool", "content": "{}"}]});
        match instructed(&after_tool) {
            Step::Text(text) => assert_eq!(text, "Done."),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fake_model_settings_point_at_itself() {
        let fake = FakeModel::start().await;
        assert_eq!(
            fake.settings(),
            json!({"assistant": {"baseUrl": fake.base_url(), "model": "test-model",
                                  "apiKey": "sk-test", "timeoutMs": 1000}})
        );
    }
}

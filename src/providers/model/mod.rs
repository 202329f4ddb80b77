//! The model client: an OpenAI-compatible chat-completions server (Ollama, llama.cpp's
//! `llama-server`, vLLM or a hosted one), asked with tools.
//!
//! This module speaks to the outside world and knows nothing of the store: [`protocol`]
//! builds the request body and reads the answer, [`tools`] offers the tools and checks
//! each call, [`call_outcome`] is post-call processing's request, [`whisper`] a warm
//! transfer's summary; [`send`] posts with
//! bounded, retried attempts and takes the reading step as a parameter. The engine
//! runs the conversation and applies the tools.
//!
//! A failure is a [`Failure`] class (`timeout`, `status 500`, `malformed answer`, ...):
//! nothing of the model server's answer reaches `lastError`, a log line or a metric. An
//! answer that cannot succeed when repeated (400, 401, 403, 404, 422) is not retried.

pub mod call_outcome;
pub mod protocol;
pub mod tools;
pub mod whisper;

use std::time::Duration;

use serde_json::Value;

use crate::http_client::HttpClient;
pub use crate::http_failure::Failure;
use protocol::{parse_answer, Answer};

/// The waits before the second and third attempts: a failed attempt is retried twice.
pub const RETRY_BACKOFF: [Duration; 2] = [Duration::from_millis(250), Duration::from_millis(500)];

/// A model's answer is not read beyond this (answers may be long; a runaway one is not
/// held in memory whole).
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Where the model server is and what to ask it for: the organization's assistant
/// settings (`assistant`) as the client needs them. `base_url` is the API base
/// (`/chat/completions` is appended), `api_key` goes in `Authorization: Bearer ...`,
/// `timeout_ms` bounds one attempt and `max_tokens` (else the channel's default) every
/// request.
#[derive(Clone, PartialEq, Eq)]
pub struct Server {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout_ms: u64,
    pub max_tokens: Option<u32>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: it is left out, so it never reaches a log line.
        let Server {
            base_url, model, ..
        } = self;
        f.debug_struct("Server")
            .field("base_url", base_url)
            .field("model", model)
            .finish_non_exhaustive()
    }
}

/// Asks the model, retrying a failed attempt (a status that may pass, a timeout, a
/// transport error, a malformed answer) after each of [`RETRY_BACKOFF`]'s waits; the
/// last failure when all three fail, or the first that cannot pass by repeating.
pub async fn complete(
    client: &HttpClient,
    settings: &Server,
    body: &Value,
) -> Result<Answer, Failure> {
    complete_with_backoff(client, settings, body, &RETRY_BACKOFF).await
}

/// [`complete`] with the waits between attempts given: `backoff.len() + 1` attempts.
pub async fn complete_with_backoff(
    client: &HttpClient,
    settings: &Server,
    body: &Value,
    backoff: &[Duration],
) -> Result<Answer, Failure> {
    send(
        client,
        settings,
        body,
        backoff,
        OnRefusal::Retry,
        parse_answer,
    )
    .await
    .map_err(SendError::into_failure)
}

/// [`complete`], answering beside the answer the tokens the server says it used
/// (`usage.total_tokens`, else prompt and completion tokens summed; 0 when it says
/// nothing): a replay counts them.
pub async fn complete_counted(
    client: &HttpClient,
    settings: &Server,
    body: &Value,
) -> Result<(Answer, u64), Failure> {
    send(
        client,
        settings,
        body,
        &RETRY_BACKOFF,
        OnRefusal::Retry,
        |bytes: &[u8]| Ok((parse_answer(bytes)?, protocol::usage_tokens(bytes))),
    )
    .await
    .map_err(SendError::into_failure)
}

/// What [`send`] does when the server refuses the request itself ([`is_refusal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRefusal {
    /// Give up on a 400, 404 or 422 (asking again cannot help) and retry a 5xx or a
    /// malformed answer like any other failure ([`complete`]).
    Retry,
    /// Stop at the first refusal with [`SendError::Refused`]: the caller asks
    /// differently (post-call processing falls back from `response_format` to a forced
    /// tool call).
    Stop,
}

/// Whether a failed attempt may be the server refusing what the request asks for, so
/// that a request asking differently may pass: a 2xx answer the parse step rejects, any
/// 5xx (llama.cpp's server answers an unsupported `response_format` with 500) and any
/// 4xx but 401 and 403 (the key: no other request passes either) and 408 and 429 (a
/// wait, then the same request). A timeout, a transport failure or a TLS one is not a
/// refusal.
pub fn is_refusal(failure: Failure) -> bool {
    match failure {
        Failure::Malformed => true,
        Failure::Status(401 | 403 | 408 | 429) => false,
        Failure::Status(status) => (400..600).contains(&status),
        Failure::Timeout
        | Failure::Connect
        | Failure::Tls
        | Failure::Closed
        | Failure::TooLarge
        | Failure::InvalidUrl => false,
    }
}

/// Why [`send`] gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// The server refused the request ([`OnRefusal::Stop`]); no further attempt was made.
    Refused(Failure),
    /// Every attempt failed, or one failed in a way repeating cannot mend
    /// ([`Failure::is_final`]); the last one's class.
    Failed(Failure),
}

impl SendError {
    pub fn into_failure(self) -> Failure {
        match self {
            SendError::Refused(failure) | SendError::Failed(failure) => failure,
        }
    }
}

/// Posts `body` to `{baseUrl}/chat/completions` (with the bearer key when set) and
/// reads a 2xx answer with `parse`, retrying a failed attempt (a 5xx or 429, a
/// timeout, a transport error, an answer `parse` rejects) after each of `backoff`'s
/// waits. A 400, 401, 403, 404 or 422 is never repeated. Under [`OnRefusal::Stop`] the
/// first refusal ([`is_refusal`]: a 5xx or 4xx but the key's and a wait's, or a
/// rejected answer) is [`SendError::Refused`] at once, without a retry; anything else
/// final is [`SendError::Failed`]. `parse`'s reasons are our own words and go to a
/// debug line; the answer itself goes nowhere.
pub async fn send<T>(
    client: &HttpClient,
    settings: &Server,
    body: &Value,
    backoff: &[Duration],
    on_refusal: OnRefusal,
    parse: impl Fn(&[u8]) -> Result<T, String>,
) -> Result<T, SendError> {
    let url = format!(
        "{}/chat/completions",
        settings.base_url.trim_end_matches('/')
    );
    let bytes = serde_json::to_vec(body).map_err(|_| SendError::Failed(Failure::InvalidUrl))?;
    let mut headers: Vec<(&'static str, String)> = Vec::new();
    if let Some(key) = settings.api_key.as_deref().filter(|k| !k.is_empty()) {
        headers.push(("authorization", format!("Bearer {key}")));
    }
    let timeout = Duration::from_millis(settings.timeout_ms);
    let waits = std::iter::once(None).chain(backoff.iter().copied().map(Some));
    let mut last = Failure::Closed;
    for (attempt, wait) in waits.enumerate() {
        if let Some(wait) = wait {
            tokio::time::sleep(wait).await;
        }
        let outcome = client
            .post_json_with(&url, &headers, bytes.clone(), timeout, MAX_ANSWER_BYTES)
            .await;
        let failure = match outcome {
            Ok((status, answer)) if (200..300).contains(&status) => match parse(&answer) {
                Ok(answer) => return Ok(answer),
                Err(reason) => {
                    tracing::debug!(attempt = attempt + 1, %reason, "the model's answer is malformed");
                    Failure::Malformed
                }
            },
            Ok((status, _)) => Failure::Status(status),
            Err(reason) => Failure::of_transport(&reason),
        };
        tracing::debug!(attempt = attempt + 1, %failure, "assistant attempt failed");
        if on_refusal == OnRefusal::Stop && is_refusal(failure) {
            return Err(SendError::Refused(failure));
        }
        if failure.is_final() {
            return Err(SendError::Failed(failure));
        }
        last = failure;
    }
    Err(SendError::Failed(last))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    use crate::testkit::model::{FakeModel, Step};

    use super::protocol::request_body;
    use super::protocol::tests::{context, turns};
    use crate::channel::Channel;

    /// The test kit's model server: the n-th request gets `answers[n]` (the last one
    /// repeated) after its delay. Post-call processing's tests use it too.
    pub(crate) async fn model_server(
        answers: Vec<(u16, &'static str, Duration)>,
    ) -> (String, FakeModel) {
        let model = FakeModel::start().await;
        let step = |(status, text, delay): (u16, &str, Duration)| {
            Step::Raw(status, text.to_string()).delayed(delay)
        };
        let last = *answers.last().expect("an answer");
        for answer in &answers[..answers.len() - 1] {
            model.push(step(*answer));
        }
        model.set_default(step(last));
        (format!("{}/", model.base_url()), model)
    }

    pub(crate) fn client() -> HttpClient {
        HttpClient::new(Duration::from_secs(5), None).unwrap()
    }

    const HELLO: &str = r#"{"choices":[{"message":{"role":"assistant","content":"Hello Ada"}}]}"#;

    #[test]
    fn a_refusal_is_any_5xx_or_4xx_but_the_keys_and_a_waits_or_a_malformed_answer() {
        for status in [400, 404, 405, 413, 415, 422, 500, 501, 502, 503, 504, 599] {
            assert!(is_refusal(Failure::Status(status)), "{status}");
        }
        for status in [200, 302, 401, 403, 408, 429, 600] {
            assert!(!is_refusal(Failure::Status(status)), "{status}");
        }
        assert!(is_refusal(Failure::Malformed));
        for failure in [
            Failure::Timeout,
            Failure::Connect,
            Failure::Tls,
            Failure::Closed,
            Failure::TooLarge,
            Failure::InvalidUrl,
        ] {
            assert!(!is_refusal(failure), "{failure}");
        }
    }

    #[tokio::test]
    async fn complete_retries_a_failed_attempt_and_sends_the_key() {
        let (base_url, seen) = model_server(vec![
            (500, "upstream hiccup", Duration::ZERO),
            (200, HELLO, Duration::ZERO),
        ])
        .await;
        let settings = Server {
            base_url,
            model: "m".into(),
            api_key: Some("sk-test".into()),
            timeout_ms: 5_000,
            max_tokens: None,
        };
        let body = request_body("m", 200, &context(Channel::Sms, &turns(2)), &[]);
        let answer = complete(&client(), &settings, &body).await;
        assert_eq!(answer, Ok(Answer::Text("Hello Ada".into())));
        let seen = seen.received();
        assert_eq!(seen.len(), 2);
        for request in &seen {
            assert_eq!(request.path, "/v1/chat/completions");
            assert_eq!(request.authorization.as_deref(), Some("Bearer sk-test"));
            assert_eq!(request.content_type.as_deref(), Some("application/json"));
            assert_eq!(request.body, body);
        }
    }

    #[tokio::test]
    async fn complete_gives_up_after_three_timeouts() {
        let (base_url, seen) = model_server(vec![(200, HELLO, Duration::from_secs(5))]).await;
        let settings = Server {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: "m".into(),
            api_key: None,
            timeout_ms: 100,
            max_tokens: None,
        };
        let started = std::time::Instant::now();
        let answer = complete(&client(), &settings, &json!({"model": "m"})).await;
        assert_eq!(answer, Err(Failure::Timeout));
        // Three attempts of 100 ms and the 250 + 500 ms waits between them.
        assert!(started.elapsed() >= Duration::from_millis(1_050));
        let seen = seen.received();
        assert_eq!(seen.len(), 3);
        assert!(seen.iter().all(|r| r.authorization.is_none()));
        assert!(seen.iter().all(|r| r.path == "/v1/chat/completions"));
    }

    #[tokio::test]
    async fn complete_reports_the_last_reason() {
        let (base_url, seen) = model_server(vec![
            (503, "", Duration::ZERO),
            (
                404,
                "{\"error\": \"model 'x'\n not found\"}",
                Duration::ZERO,
            ),
            (200, "{\"choices\": []}", Duration::ZERO),
        ])
        .await;
        let settings = Server {
            base_url,
            model: "x".into(),
            api_key: Some(String::new()),
            timeout_ms: 5_000,
            max_tokens: None,
        };
        let no_wait = [Duration::ZERO, Duration::ZERO];
        let client = client();
        // The 503 is retried; the 404 cannot pass by repeating: given up at once, its
        // class only (nothing of the body).
        let answer = complete_with_backoff(&client, &settings, &json!({}), &no_wait).await;
        assert_eq!(answer, Err(Failure::Status(404)));
        assert_eq!(Failure::Status(404).to_string(), "status 404");
        let one = complete_with_backoff(&client, &settings, &json!({}), &[]).await;
        assert_eq!(one, Err(Failure::Malformed));
        assert_eq!(Failure::Malformed.to_string(), "malformed answer");
        let seen = seen.received();
        assert_eq!(seen.len(), 3);
        // An empty key sends no Authorization.
        assert!(seen.iter().all(|r| r.authorization.is_none()));
    }

    #[tokio::test]
    async fn complete_reads_long_answers_up_to_the_cap() {
        let answer = |chars: usize| -> &'static str {
            let text = json!({"choices": [{"message": {"content": "a".repeat(chars)}}]});
            Box::leak(text.to_string().into_boxed_str())
        };
        let (base_url, _seen) = model_server(vec![
            (200, answer(2_000_000), Duration::ZERO),
            (200, answer(MAX_ANSWER_BYTES), Duration::ZERO),
        ])
        .await;
        let settings = Server {
            base_url,
            model: "m".into(),
            api_key: None,
            timeout_ms: 10_000,
            max_tokens: None,
        };
        let client = client();
        match complete_with_backoff(&client, &settings, &json!({}), &[]).await {
            Ok(Answer::Text(text)) => assert_eq!(text.len(), 2_000_000),
            other => panic!("{other:?}"),
        }
        let refused = complete_with_backoff(&client, &settings, &json!({}), &[]).await;
        assert_eq!(refused, Err(Failure::TooLarge));
    }

    #[tokio::test]
    async fn complete_reports_unreachable_servers() {
        let addr = crate::testkit::closed_addr();
        let settings = Server {
            base_url: format!("http://{addr}"),
            model: "m".into(),
            api_key: None,
            timeout_ms: 2_000,
            max_tokens: None,
        };
        let answer = complete_with_backoff(&client(), &settings, &json!({}), &[]).await;
        let reason = answer.unwrap_err();
        assert_eq!(reason, Failure::Connect);
        assert!(!reason.to_string().is_empty(), "{reason}");
    }
}

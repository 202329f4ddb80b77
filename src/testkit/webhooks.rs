//! A scriptable webhook receiver on loopback: a hyper HTTP/1.1 server that records every
//! request on arrival (method, path, headers, body, when) and answers from a policy:
//! 200 to everything, a script of replies in turn, never, or any function of the request
//! and of how many earlier requests carried its `webhook-id`. A reply may wait before
//! answering; requests answered are also kept apart, once their answer is sent.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};

use crate::testkit::poll::{poll, WAIT};
use crate::testkit::serve::{respond, serve};
use crate::testkit::server::TestServer;

/// What the receiver answers to one request.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The status.
    pub status: u16,
    /// Headers of the answer.
    pub headers: Vec<(&'static str, String)>,
    /// How long to wait before answering.
    pub delay: Option<Duration>,
}

impl Reply {
    /// This status, at once.
    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            delay: None,
        }
    }

    /// 200, at once.
    pub fn ok() -> Reply {
        Reply::status(200)
    }

    /// Never answers (sleeps far longer than any attempt timeout).
    pub fn hang() -> Reply {
        Reply::ok().after(Duration::from_secs(3600))
    }

    /// This reply after `delay`.
    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = Some(delay);
        self
    }

    /// This reply with header `name: value`.
    pub fn with(mut self, name: &'static str, value: &str) -> Reply {
        self.headers.push((name, value.to_string()));
        self
    }
}

/// One request as the receiver saw it.
#[derive(Clone, Debug)]
pub struct Received {
    /// The method (`POST`).
    pub method: String,
    /// The path of the request URI.
    pub path: String,
    /// Every header.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
    /// When it arrived.
    pub at: Instant,
}

impl Received {
    /// Header `name` as text; panics when missing.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("header {name} missing: {:?}", self.headers))
    }

    /// The `webhook-id` header.
    pub fn id(&self) -> &str {
        self.header("webhook-id")
    }

    /// The body as JSON; panics when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "webhook body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The envelope's `event`; panics when there is none.
    pub fn event(&self) -> String {
        let json = self.json();
        json["event"]
            .as_str()
            .unwrap_or_else(|| panic!("expected a string: {}", json["event"]))
            .to_string()
    }
}

/// Decides the answer to a request, given how many earlier requests carried the same
/// `webhook-id` (0 for a delivery's first attempt).
pub type Policy = Arc<dyn Fn(&Received, usize) -> Reply + Send + Sync>;

#[derive(Default)]
struct Log {
    received: Vec<Received>,
    /// Requests per `webhook-id`.
    per_id: HashMap<HeaderValue, usize>,
}

/// A receiver on `127.0.0.1`, listening on [`WebhookReceiver::url`].
pub struct WebhookReceiver {
    /// `http://127.0.0.1:PORT/hooks/engaged`.
    pub url: String,
    /// The path of [`WebhookReceiver::url`].
    pub path: String,
    log: Arc<Mutex<Log>>,
    answered: Arc<Mutex<Vec<Received>>>,
}

impl WebhookReceiver {
    /// Answers 200 to everything.
    pub async fn ok() -> WebhookReceiver {
        WebhookReceiver::answering(Reply::ok()).await
    }

    /// Answers `reply` to everything.
    pub async fn answering(reply: Reply) -> WebhookReceiver {
        WebhookReceiver::with_policy(Arc::new(move |_, _| reply.clone())).await
    }

    /// Answers `script` in arrival order, then `then` forever.
    pub async fn scripted(script: Vec<Reply>, then: Reply) -> WebhookReceiver {
        let queue = Mutex::new(VecDeque::from(script));
        WebhookReceiver::with_policy(Arc::new(move |_, _| {
            queue
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| then.clone())
        }))
        .await
    }

    /// Never answers.
    pub async fn dead() -> WebhookReceiver {
        WebhookReceiver::answering(Reply::hang()).await
    }

    /// Answers what `policy` decides.
    pub async fn with_policy(policy: Policy) -> WebhookReceiver {
        let log: Arc<Mutex<Log>> = Arc::default();
        let answered: Arc<Mutex<Vec<Received>>> = Arc::default();
        let (shared_log, shared_answered) = (log.clone(), answered.clone());
        let addr = serve(move |parts, body| {
            let (log, answered, policy) =
                (shared_log.clone(), shared_answered.clone(), policy.clone());
            async move {
                let received = Received {
                    method: parts.method.to_string(),
                    path: parts.uri.path().to_string(),
                    headers: parts.headers,
                    body,
                    at: Instant::now(),
                };
                let reply = {
                    let mut log = log.lock().unwrap();
                    let earlier = match received.headers.get("webhook-id") {
                        Some(id) => {
                            let n = log.per_id.entry(id.clone()).or_default();
                            *n += 1;
                            *n - 1
                        }
                        None => 0,
                    };
                    let reply = policy(&received, earlier);
                    log.received.push(received.clone());
                    reply
                };
                if let Some(delay) = reply.delay {
                    tokio::time::sleep(delay).await;
                }
                let mut response = respond(reply.status, Bytes::from_static(b"ok"));
                for (name, value) in reply.headers {
                    response
                        .headers_mut()
                        .insert(name, HeaderValue::from_str(&value).expect("header"));
                }
                answered.lock().unwrap().push(received);
                Some(response)
            }
        })
        .await;
        let path = "/hooks/engaged".to_string();
        WebhookReceiver {
            url: format!("http://{addr}{path}"),
            path,
            log,
            answered,
        }
    }

    /// Every request so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.log.lock().unwrap().received.clone()
    }

    /// Every request answered so far (after its reply's delay), in the order answered.
    pub fn answered(&self) -> Vec<Received> {
        self.answered.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.log.lock().unwrap().received.len()
    }

    /// Every body so far as JSON (`null` when not JSON), in arrival order.
    pub fn envelopes(&self) -> Vec<Value> {
        self.log
            .lock()
            .unwrap()
            .received
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
            .collect()
    }

    /// Waits (bounded by [`WAIT`]) until at least `n` requests arrived; returns them all.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        self.wait_for_within(n, WAIT).await
    }

    /// Waits (bounded by `limit`) until at least `n` requests arrived; returns them all.
    pub async fn wait_for_within(&self, n: usize, limit: Duration) -> Vec<Received> {
        let deadline = Instant::now() + limit;
        loop {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            if Instant::now() >= deadline {
                let events: Vec<String> = got.iter().map(|r| r.event()).collect();
                panic!(
                    "receiver got {} of {n} requests within {limit:?}: {events:?}",
                    got.len()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for the first envelope whose `event` is `event`; returns its `data`.
    pub async fn wait_event(&self, event: &str) -> Value {
        poll(&format!("a {event} webhook"), WAIT, || async move {
            let all = self.envelopes();
            all.iter()
                .find(|e| e["event"] == json!(event))
                .map(|e| e["data"].clone())
                .ok_or_else(|| format!("{all:?}"))
        })
        .await
    }

    /// Registers the receiver for every event with an admin key; returns the endpoint id.
    pub async fn register(&self, srv: &TestServer, admin: &str) -> String {
        let r = srv
            .post(admin, "/v1/webhooks", &json!({"url": self.url}))
            .await;
        assert_eq!(
            r.status,
            201,
            "register the receiver: {}",
            String::from_utf8_lossy(&r.body)
        );
        r.json()["id"]
            .as_str()
            .unwrap_or_else(|| panic!("expected a string: {}", r.json()["id"]))
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::https::plain_client;
    use http_body_util::Full;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_receiver_keeps_every_envelope_and_finds_one_by_event() {
        let receiver = WebhookReceiver::ok().await;
        let client = plain_client();
        for event in ["lead.opted_out", "lead.handoff"] {
            let body = json!({"event": event, "data": {"leadId": "L1"}, "timestamp": "t"});
            let request = hyper::Request::post(&receiver.url)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body.to_string())))
                .expect("request");
            let response = client.request(request).await.expect("the receiver answers");
            assert_eq!(response.status(), 200);
        }
        assert_eq!(receiver.envelopes().len(), 2);
        assert_eq!(
            receiver.wait_event("lead.handoff").await,
            json!({"leadId": "L1"})
        );
    }
}

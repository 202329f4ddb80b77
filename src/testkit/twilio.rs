//! A fake of Twilio's Messages, Calls (placing one, updating a live one with new TwiML
//! or ending it) and Recordings REST resources on 127.0.0.1, with conferences: a call
//! update runs on the fake's conferences (`testkit::twilio_voice`), and a test runs the
//! TwiML engaged answers on them ([`FakeTwilio::run_twiml`]) and delivers the conference
//! callbacks they queue ([`FakeTwilio::conference_callbacks`]).
//!
//! Messages and calls: records each request (path, `Authorization`, form fields, every
//! pair kept, so a repeated `StatusCallbackEvent` shows each value) and answers as Twilio
//! does: 201 `{"sid", "status": "queued"}` (`SM...` for a message, `CA...` for a call),
//! 400 `{"code": 21610}` for a message to a number that opted out with the carrier, 400
//! `{"code": 21217}` for a call when told to refuse the next one, or, told to hang, no answer at all: it keeps the request and closes
//! the connection (the request arrived, its fate unknown). A script of statuses
//! ([`FakeTwilio::script`]) answers the next requests with each status in turn (429 as
//! Twilio's `{"code": 20429}`, with `Retry-After` when given) before answering as usual,
//! and a call's answer may carry another status ([`FakeTwilio::answer_calls_with`]).
//! Each request records when it arrived. Told to, it answers every request with one
//! status and body verbatim ([`FakeTwilio::answer_with`]).
//!
//! Recordings: `GET /2010-04-01/Accounts/{sid}/Recordings/{RecordingSid}.mp3` serves the
//! bytes a test registered with [`FakeTwilio::serve_recording`], `audio/mpeg`, after
//! checking HTTP Basic `accountSid:authToken` ([`FakeTwilio::expect_credentials`]; 401
//! otherwise); told to, it answers 500 the next N times. Every such request is counted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::http::request::Parts;
use hyper::Response;

use crate::testkit::serve::{serve, Answer};
use crate::testkit::twilio_voice::{Callback, Conferences};

#[derive(Debug, Clone)]
pub struct Sent {
    pub method: String,
    pub path: String,
    pub authorization: String,
    pub content_type: Option<String>,
    pub form: Vec<(String, String)>,
    /// The `sid` the fake answered (none when it refused, failed or hung).
    pub sid: Option<String>,
    /// When the request arrived.
    pub at: std::time::Instant,
}

impl Sent {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a field that may repeat, in order.
    pub fn fields(&self, name: &str) -> Vec<&str> {
        self.form
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// A request for a recording's media.
#[derive(Debug, Clone)]
pub struct RecordingRequest {
    pub path: String,
    pub authorization: String,
}

#[derive(Default)]
struct State {
    sent: Mutex<Vec<Sent>>,
    opted_out: Mutex<Vec<String>>,
    hang_next: AtomicBool,
    count: AtomicUsize,
    calls: Mutex<Vec<Sent>>,
    refuse_next_call: AtomicBool,
    call_count: AtomicUsize,
    credentials: Mutex<Option<(String, String)>>,
    recordings: Mutex<HashMap<String, Vec<u8>>>,
    recording_failures: AtomicUsize,
    recording_requests: Mutex<Vec<RecordingRequest>>,
    /// Statuses (and `Retry-After` seconds) the next Messages/Calls requests answer.
    script: Mutex<std::collections::VecDeque<(u16, Option<u64>)>>,
    /// The `status` a call's 201 answer carries (`queued` when none).
    call_status: Mutex<Option<String>>,
    /// What every Messages/Calls request answers instead, when set.
    fixed: Mutex<Option<(u16, String)>>,
    /// Updates of live calls (`POST .../Calls/{CallSid}.json`), in arrival order.
    updates: Mutex<Vec<Sent>>,
    /// The account's conferences and the callbacks they queued.
    conferences: Mutex<Conferences>,
}

#[derive(Clone)]
pub struct FakeTwilio {
    state: Arc<State>,
    pub base_url: String,
}

impl FakeTwilio {
    pub async fn start() -> FakeTwilio {
        let state = Arc::new(State::default());
        let shared = state.clone();
        let addr = serve(move |parts, body| {
            let state = shared.clone();
            async move { answer(&state, parts, body).await }
        })
        .await;
        let base_url = format!("http://{addr}");
        FakeTwilio { state, base_url }
    }

    /// Sends to `phone` are refused with 21610 from now on.
    pub fn opt_out(&self, phone: &str) {
        self.state.opted_out.lock().unwrap().push(phone.to_string());
    }

    /// The next request is kept but never answered: its connection closes.
    pub fn hang_next(&self) {
        self.state.hang_next.store(true, Ordering::SeqCst);
    }

    /// The next requests (messages or calls) answer these statuses, one each, with
    /// `Retry-After` when given; then the fake answers as usual.
    pub fn script(&self, answers: &[(u16, Option<u64>)]) {
        self.state
            .script
            .lock()
            .unwrap()
            .extend(answers.iter().copied());
    }

    /// Every Messages/Calls request from now on answers `status` and `body`, verbatim
    /// (unless scripted, refused or to a number that opted out).
    pub fn answer_with(&self, status: u16, body: &str) {
        *self.state.fixed.lock().unwrap() = Some((status, body.to_string()));
    }

    /// A call's 201 answer says this `status` (Twilio says `queued`).
    pub fn answer_calls_with(&self, status: &str) {
        *self.state.call_status.lock().unwrap() = Some(status.to_string());
    }

    /// Every Messages.json request, in arrival order.
    pub fn sent(&self) -> Vec<Sent> {
        self.state.sent.lock().unwrap().clone()
    }

    /// Every update of a live call (`Calls/{CallSid}.json`, new TwiML), in arrival order.
    pub fn call_updates(&self) -> Vec<Sent> {
        self.state.updates.lock().unwrap().clone()
    }

    /// Call `call_sid` runs TwiML `doc` (what engaged answered one of its webhooks
    /// with): it joins the conference the document names, or leaves the one it was in.
    pub fn run_twiml(&self, call_sid: &str, doc: &str) {
        self.state.conferences.lock().unwrap().run(call_sid, doc);
    }

    /// Call `call_sid` hangs up (leaving its conference, if any).
    pub fn hang_up(&self, call_sid: &str) {
        self.state.conferences.lock().unwrap().hang_up(call_sid);
    }

    /// The calls in conference `name` now.
    pub fn participants(&self, name: &str) -> Vec<String> {
        self.state.conferences.lock().unwrap().participants(name)
    }

    /// Whether conference `name` started.
    pub fn conference_started(&self, name: &str) -> bool {
        self.state.conferences.lock().unwrap().started(name)
    }

    /// The conference status callbacks queued since the last call, in order, for the
    /// test to deliver.
    pub fn conference_callbacks(&self) -> Vec<Callback> {
        self.state.conferences.lock().unwrap().take()
    }

    /// Every Calls.json request, in arrival order.
    pub fn calls(&self) -> Vec<Sent> {
        self.state.calls.lock().unwrap().clone()
    }

    /// The next Calls.json request is refused: 400 `{"code": 21217}`.
    pub fn refuse_next_call(&self) {
        self.state.refuse_next_call.store(true, Ordering::SeqCst);
    }

    /// The Basic credentials recording downloads must carry.
    pub fn expect_credentials(&self, account_sid: &str, auth_token: &str) {
        *self.state.credentials.lock().unwrap() =
            Some((account_sid.to_string(), auth_token.to_string()));
    }

    /// `GET .../Recordings/{recording_sid}.mp3` answers these bytes.
    pub fn serve_recording(&self, recording_sid: &str, bytes: Vec<u8>) {
        self.state
            .recordings
            .lock()
            .unwrap()
            .insert(recording_sid.to_string(), bytes);
    }

    /// The next `n` recording requests answer 500.
    pub fn fail_recordings(&self, n: usize) {
        self.state.recording_failures.store(n, Ordering::SeqCst);
    }

    /// Every recording request so far (whatever it was answered).
    pub fn recording_requests(&self) -> Vec<RecordingRequest> {
        self.state.recording_requests.lock().unwrap().clone()
    }

    /// Every request so far: messages, calls and recordings.
    pub fn total(&self) -> usize {
        self.sent().len() + self.calls().len() + self.recording_count()
    }

    pub fn recording_count(&self) -> usize {
        self.state.recording_requests.lock().unwrap().len()
    }
}

fn reply(status: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
    r.headers_mut()
        .insert("content-type", content_type.parse().unwrap());
    r
}

/// `GET /2010-04-01/Accounts/{sid}/Recordings/{RecordingSid}.mp3`.
fn recording(state: &State, path: &str, authorization: &str) -> Response<Full<Bytes>> {
    state
        .recording_requests
        .lock()
        .unwrap()
        .push(RecordingRequest {
            path: path.to_string(),
            authorization: authorization.to_string(),
        });
    let json = "application/json";
    let Some((account, recording_sid)) = path
        .strip_prefix("/2010-04-01/Accounts/")
        .and_then(|rest| rest.split_once("/Recordings/"))
        .and_then(|(account, file)| Some((account, file.strip_suffix(".mp3")?)))
    else {
        return reply(404, json, r#"{"code": 20404, "status": 404}"#);
    };
    let authorized = state
        .credentials
        .lock()
        .unwrap()
        .as_ref()
        .is_some_and(|(sid, token)| {
            use base64::Engine as _;
            let basic = base64::engine::general_purpose::STANDARD.encode(format!("{sid}:{token}"));
            sid == account && authorization == format!("Basic {basic}")
        });
    if !authorized {
        return reply(
            401,
            json,
            r#"{"code": 20003, "message": "Authenticate", "status": 401}"#,
        );
    }
    let failing = state
        .recording_failures
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if failing {
        return reply(
            500,
            json,
            r#"{"code": 20500, "message": "Internal Server Error"}"#,
        );
    }
    match state.recordings.lock().unwrap().get(recording_sid) {
        Some(bytes) => reply(200, "audio/mpeg", bytes.clone()),
        None => reply(404, json, r#"{"code": 20404, "status": 404}"#),
    }
}

/// The answer to one request; `None` (told to hang) closes the connection unanswered.
async fn answer(state: &State, parts: Parts, body: Bytes) -> Answer {
    let path = parts.uri.path().to_string();
    let authorization = parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if parts.method == hyper::Method::GET {
        return Some(recording(state, &path, &authorization));
    }
    let method = parts.method.to_string();
    let content_type = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let form: Vec<(String, String)> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    // A live call's update: `.../Calls/{CallSid}.json`, answered with the call.
    if let Some(call_sid) = path
        .rsplit_once("/Calls/")
        .and_then(|(_, rest)| rest.strip_suffix(".json"))
        .filter(|sid| sid.starts_with("CA") && !sid.contains('/'))
    {
        let sid = call_sid.to_string();
        {
            let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
            let mut conferences = state.conferences.lock().unwrap();
            if let Some(twiml) = field("Twiml") {
                conferences.run(&sid, &twiml);
            } else if matches!(field("Status").as_deref(), Some("canceled" | "completed")) {
                conferences.hang_up(&sid);
            }
        }
        state.updates.lock().unwrap().push(Sent {
            method,
            path,
            authorization,
            content_type,
            form,
            sid: Some(sid.clone()),
            at: std::time::Instant::now(),
        });
        return Some(reply(
            200,
            "application/json",
            format!(r#"{{"sid": "{sid}", "status": "in-progress"}}"#),
        ));
    }
    let is_call = path.ends_with("/Calls.json");
    let sent = Sent {
        method,
        path,
        authorization,
        content_type,
        form,
        sid: None,
        at: std::time::Instant::now(),
    };
    let to = sent.field("To").unwrap_or_default().to_string();
    let log = if is_call { &state.calls } else { &state.sent };
    let index = {
        let mut log = log.lock().unwrap();
        log.push(sent);
        log.len() - 1
    };
    let json = "application/json";
    if state.hang_next.swap(false, Ordering::SeqCst) {
        return None;
    }
    let scripted = state.script.lock().unwrap().pop_front();
    if let Some((status, retry_after)) = scripted {
        let body = match status {
            429 => r#"{"code": 20429, "message": "Too Many Requests", "status": 429}"#,
            503 => r#"{"code": 20503, "message": "Service Unavailable", "status": 503}"#,
            _ => r#"{"code": 20500, "message": "Internal Server Error"}"#,
        };
        let mut r = reply(status, json, body);
        if let Some(seconds) = retry_after {
            r.headers_mut()
                .insert("retry-after", seconds.to_string().parse().unwrap());
        }
        return Some(r);
    }
    if is_call && state.refuse_next_call.swap(false, Ordering::SeqCst) {
        return Some(reply(
            400,
            json,
            r#"{"code": 21217, "message": "Phone number does not appear to be valid", "status": 400}"#,
        ));
    }
    if !is_call && state.opted_out.lock().unwrap().contains(&to) {
        return Some(reply(
            400,
            json,
            r#"{"code": 21610, "message": "Attempt to send to unsubscribed recipient", "status": 400}"#,
        ));
    }
    if let Some((status, body)) = state.fixed.lock().unwrap().clone() {
        return Some(reply(status, json, body));
    }
    let sid = if is_call {
        let n = state.call_count.fetch_add(1, Ordering::SeqCst);
        format!("CA{n:032}")
    } else {
        let n = state.count.fetch_add(1, Ordering::SeqCst);
        format!("SM{n:032}")
    };
    log.lock().unwrap()[index].sid = Some(sid.clone());
    let status = match &*state.call_status.lock().unwrap() {
        Some(status) if is_call => status.clone(),
        _ => "queued".to_string(),
    };
    Some(reply(
        201,
        json,
        format!(r#"{{"sid": "{sid}", "status": "{status}"}}"#),
    ))
}

// Tests of the fake itself.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::https::{fetch, plain_client, PlainClient};
    use http_body_util::BodyExt;

    async fn call_fake(
        client: &PlainClient,
        method: &str,
        url: &str,
        authorization: Option<&str>,
        body: &str,
    ) -> (u16, Bytes) {
        let mut request = hyper::Request::builder().method(method).uri(url);
        if let Some(auth) = authorization {
            request = request.header("authorization", auth);
        }
        let request = request
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("request");
        fetch(client, request).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fake_twilio_records_calls_with_repeated_fields_and_refuses_one_when_told() {
        let fake = FakeTwilio::start().await;
        let client = plain_client();
        let url = format!("{}/2010-04-01/Accounts/AC1/Calls.json", fake.base_url);
        let form = "To=%2B15551230001&From=%2B15550100000&StatusCallbackEvent=initiated\
                    &StatusCallbackEvent=ringing&StatusCallbackEvent=answered\
                    &StatusCallbackEvent=completed";
        let (status, body) = call_fake(&client, "POST", &url, Some("Basic x"), form).await;
        assert_eq!(status, 201);
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["status"], "queued");
        let sid = answer["sid"].as_str().unwrap().to_string();
        assert!(sid.starts_with("CA") && sid.len() == 34, "{sid}");
        fake.refuse_next_call();
        let (status, body) = call_fake(&client, "POST", &url, None, "To=%2B1").await;
        assert_eq!(status, 400);
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["code"], 21217);
        let calls = fake.calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].sid.as_deref(), Some(sid.as_str()));
        assert_eq!(calls[0].authorization, "Basic x");
        assert_eq!(calls[0].field("To"), Some("+15551230001"));
        assert_eq!(
            calls[0].fields("StatusCallbackEvent"),
            ["initiated", "ringing", "answered", "completed"]
        );
        assert_eq!(calls[1].sid, None);
        assert!(fake.sent().is_empty(), "calls are not messages");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fake_twilio_answers_its_script_then_as_usual() {
        let fake = FakeTwilio::start().await;
        fake.script(&[(429, Some(2)), (503, None)]);
        fake.answer_calls_with("completed");
        let client = plain_client();
        let messages = format!("{}/2010-04-01/Accounts/AC1/Messages.json", fake.base_url);
        let calls = format!("{}/2010-04-01/Accounts/AC1/Calls.json", fake.base_url);
        let request = |url: String| {
            let client = client.clone();
            async move {
                let request = hyper::Request::post(url)
                    .body(Full::new(Bytes::from_static(b"To=%2B1")))
                    .unwrap();
                let response = client.request(request).await.unwrap();
                let status = response.status().as_u16();
                let retry_after = response
                    .headers()
                    .get("retry-after")
                    .map(|v| v.to_str().unwrap().to_string());
                let body = response.into_body().collect().await.unwrap().to_bytes();
                let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
                (status, retry_after, body)
            }
        };
        let (status, retry_after, body) = request(messages.clone()).await;
        assert_eq!((status, retry_after.as_deref()), (429, Some("2")));
        assert_eq!(body["code"], 20429);
        let (status, retry_after, _) = request(calls.clone()).await;
        assert_eq!((status, retry_after), (503, None));
        let (status, _, body) = request(messages).await;
        assert_eq!((status, body["status"].as_str()), (201, Some("queued")));
        let (status, _, body) = request(calls).await;
        assert_eq!((status, body["status"].as_str()), (201, Some("completed")));
        assert_eq!(fake.sent().len(), 2);
        assert_eq!(fake.calls().len(), 2);
        assert!(fake.sent()[0].at <= fake.sent()[1].at);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fake_twilio_serves_recordings_to_its_credentials_and_fails_when_told() {
        use base64::Engine as _;
        let fake = FakeTwilio::start().await;
        fake.expect_credentials("AC1", "secret");
        fake.serve_recording("RE1", vec![1, 2, 3]);
        let client = plain_client();
        let url = format!(
            "{}/2010-04-01/Accounts/AC1/Recordings/RE1.mp3",
            fake.base_url
        );
        let good = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("AC1:secret")
        );
        let bad = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("AC1:wrong")
        );
        assert_eq!(call_fake(&client, "GET", &url, None, "").await.0, 401);
        assert_eq!(call_fake(&client, "GET", &url, Some(&bad), "").await.0, 401);
        fake.fail_recordings(2);
        for _ in 0..2 {
            assert_eq!(
                call_fake(&client, "GET", &url, Some(&good), "").await.0,
                500
            );
        }
        let (status, body) = call_fake(&client, "GET", &url, Some(&good), "").await;
        assert_eq!((status, body.to_vec()), (200, vec![1, 2, 3]));
        let other = url.replace("RE1", "RE2");
        assert_eq!(
            call_fake(&client, "GET", &other, Some(&good), "").await.0,
            404
        );
        assert_eq!(fake.recording_count(), 6);
        assert_eq!(fake.recording_requests()[2].authorization, good);
    }
}

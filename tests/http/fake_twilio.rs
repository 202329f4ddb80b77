//! A fake of Twilio's Messages REST resource on 127.0.0.1: records each request (path,
//! `Authorization`, form fields) and answers as Twilio does: 201 `{"sid", "status":
//! "queued"}`, 400 `{"code": 21610}` for a number that opted out with the carrier, a
//! 500 when told to fail the next request, or, told to hang, no answer at all: it
//! keeps the request and closes the connection (the request arrived, its fate unknown).

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

#[derive(Debug, Clone)]
pub struct Sent {
    pub path: String,
    pub authorization: String,
    pub form: Vec<(String, String)>,
}

impl Sent {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    sent: Mutex<Vec<Sent>>,
    opted_out: Mutex<Vec<String>>,
    fail_next: AtomicBool,
    hang_next: AtomicBool,
    count: AtomicUsize,
}

#[derive(Clone)]
pub struct FakeTwilio {
    state: Arc<State>,
    pub base_url: String,
}

impl FakeTwilio {
    pub async fn start() -> FakeTwilio {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base_url = format!("http://{}", listener.local_addr().expect("addr"));
        let state = Arc::new(State::default());
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    // A hung request closes its connection without an answer.
                    let hang = Arc::new(tokio::sync::Notify::new());
                    let hung = hang.clone();
                    let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                        let state = state.clone();
                        let hang = hang.clone();
                        async move { Ok::<_, Infallible>(answer(&state, &hang, req).await) }
                    });
                    let connection =
                        http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                    tokio::select! {
                        _ = connection => {}
                        _ = hung.notified() => {}
                    }
                });
            }
        });
        FakeTwilio { state, base_url }
    }

    /// Sends to `phone` are refused with 21610 from now on.
    pub fn opt_out(&self, phone: &str) {
        self.state.opted_out.lock().unwrap().push(phone.to_string());
    }

    /// The next request answers 500.
    pub fn fail_next(&self) {
        self.state.fail_next.store(true, Ordering::SeqCst);
    }

    /// The next request is kept but never answered: its connection closes.
    pub fn hang_next(&self) {
        self.state.hang_next.store(true, Ordering::SeqCst);
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.state.sent.lock().unwrap().clone()
    }
}

async fn answer(
    state: &State,
    hang: &tokio::sync::Notify,
    req: Request<hyper::body::Incoming>,
) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let authorization = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let form: Vec<(String, String)> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let sent = Sent {
        path,
        authorization,
        form,
    };
    let to = sent.field("To").unwrap_or_default().to_string();
    state.sent.lock().unwrap().push(sent);
    let reply = |status: u16, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
        r.headers_mut()
            .insert("content-type", "application/json".parse().unwrap());
        r
    };
    if state.hang_next.swap(false, Ordering::SeqCst) {
        hang.notify_one();
        return std::future::pending().await;
    }
    if state.fail_next.swap(false, Ordering::SeqCst) {
        return reply(
            500,
            r#"{"code": 20500, "message": "Internal Server Error"}"#.into(),
        );
    }
    if state.opted_out.lock().unwrap().contains(&to) {
        return reply(
            400,
            r#"{"code": 21610, "message": "Attempt to send to unsubscribed recipient", "status": 400}"#
                .into(),
        );
    }
    let n = state.count.fetch_add(1, Ordering::SeqCst);
    reply(
        201,
        format!(r#"{{"sid": "SM{n:032}", "status": "queued"}}"#),
    )
}

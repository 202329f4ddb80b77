//! A fake of an organization's compliance service on loopback: it answers every request
//! one way ([`Answer`]) and keeps each request's JSON body.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use serde_json::Value;

/// How the fake compliance service answers.
#[derive(Clone, Debug)]
pub enum Answer {
    /// This status and this body.
    Json(u16, &'static str),
    /// `{"allowed": true}`, after this delay.
    Slow(Duration),
}

/// A compliance service on `127.0.0.1`.
pub struct FakeCompliance {
    /// `http://127.0.0.1:PORT/check`.
    pub url: String,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl FakeCompliance {
    /// Starts a service answering `answer` to every request.
    pub async fn start(answer: Answer) -> FakeCompliance {
        let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the compliance service");
        let addr = listener.local_addr().expect("its address");
        let record = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (record, answer) = (record.clone(), answer.clone());
                tokio::spawn(async move {
                    let svc =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let (record, answer) = (record.clone(), answer.clone());
                            async move {
                                let body = req
                                    .into_body()
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes())
                                    .unwrap_or_default();
                                record
                                    .lock()
                                    .unwrap()
                                    .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                                let (status, text) = match answer {
                                    Answer::Json(status, text) => (status, text),
                                    Answer::Slow(delay) => {
                                        tokio::time::sleep(delay).await;
                                        (200, r#"{"allowed": true}"#)
                                    }
                                };
                                let mut resp = Response::new(Full::new(Bytes::from(text)));
                                *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                                Ok::<_, Infallible>(resp)
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        FakeCompliance {
            url: format!("http://{addr}/check"),
            seen,
        }
    }

    /// The JSON body of every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }
}

/// A URL on loopback where nothing listens (a service that is down).
pub fn closed_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("http://{}/check", l.local_addr().expect("address"))
}

//! A fake of an organization's compliance service on loopback: it answers every request
//! one way ([`Answer`]) and keeps each request's JSON body.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::testkit::serve::{respond, serve};

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
        let record = seen.clone();
        let addr = serve(move |_, body| {
            let (record, answer) = (record.clone(), answer.clone());
            async move {
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
                Some(respond(status, text))
            }
        })
        .await;
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
    format!("http://{}/check", crate::testkit::closed_addr())
}

//! The Twilio-compatible REST provider: SMS through
//! `POST {baseUrl}/2010-04-01/Accounts/{accountSid}/Messages.json` (form fields `To`,
//! `From` or `MessagingServiceSid`, `Body`, `StatusCallback`), calls through `.../Calls.json`
//! (`To`, `From`, `Url`, status, answering-machine and recording callbacks), both with
//! HTTP Basic `accountSid:authToken`, and a call's recording downloaded as it streams.
//!
//! The answer's `sid` is the provider's id of the message or call and its `status` the
//! status. Error 21610 (the recipient texted STOP to the carrier) is a refusal that means
//! "do not contact"; other 4xx refuse with their code. A 5xx, or a request that surely
//! never left (no connection), is tried again with backoff; a request that may have
//! arrived (a timeout after writing it) is `unknown` and never sent again: one loop
//! ([`Twilio::post`]) serves messages and calls alike. Credentials only ever go to the
//! configured `baseUrl`: a recording URL elsewhere is refused.

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Body as _;
use serde::Deserialize;

use super::{CallOutcome, CallRequest, CallStatus, Outgoing, SendOutcome};
use crate::http_client::HttpClient;
use crate::store::records::{SendStatus, TwilioSettings};

/// The pauses before the second and third tries.
const BACKOFF: [Duration; 2] = [Duration::from_millis(250), Duration::from_millis(1000)];
/// How long one request may take (for a download, until the answer's head).
const TIMEOUT: Duration = Duration::from_secs(15);
/// How long one read of a downloading recording may take.
const CHUNK_TIMEOUT: Duration = Duration::from_secs(30);
/// The call progress Twilio reports to `StatusCallback`.
const CALL_EVENTS: [&str; 4] = ["initiated", "ringing", "answered", "completed"];
/// The refusal of a call the settings give no caller id for (calls need `from`).
pub const NO_CALLER_ID: &str = "no-caller-id";
/// The refusal after every try met a 5xx or no connection.
pub const PROVIDER_UNAVAILABLE: &str = "provider-unavailable";
/// Twilio's "attempt to send to unsubscribed recipient".
pub const UNSUBSCRIBED_RECIPIENT: i64 = 21610;

#[derive(Debug, Clone, PartialEq)]
pub struct Twilio {
    settings: TwilioSettings,
}

#[derive(Deserialize)]
struct Accepted {
    sid: String,
    status: Option<String>,
}

/// What one request to the REST API came to, retries included.
enum Answer {
    /// A 2xx with its `sid` and `status`.
    Accepted(Accepted),
    /// A 2xx without a readable `sid`, or no answer to a request that may have arrived.
    Unknown(String),
    /// A 4xx, with Twilio's `code` when it gave one (else the HTTP status).
    Refused {
        code: String,
        twilio_code: Option<i64>,
    },
    /// 5xx or no connection, every try.
    Unavailable,
}

/// A recording that could not be downloaded; `retryable` when a later try may work
/// (Twilio's error, its recording not there yet, or no connection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchError {
    pub retryable: bool,
    pub message: String,
}

/// A recording's body as it downloads.
#[derive(Debug)]
pub struct RecordingStream {
    body: hyper::body::Incoming,
}

impl RecordingStream {
    /// The size Twilio announced, if it did.
    pub fn content_length(&self) -> Option<u64> {
        self.body.size_hint().exact()
    }

    /// The next part of the recording; `None` at its end. Each read is bounded by a
    /// timeout (a stalled download is an error, not a hang).
    pub async fn next_chunk(&mut self) -> Option<Result<Bytes, String>> {
        loop {
            let frame = match tokio::time::timeout(CHUNK_TIMEOUT, self.body.frame()).await {
                Err(_) => return Some(Err(format!("no data for {} s", CHUNK_TIMEOUT.as_secs()))),
                Ok(None) => return None,
                Ok(Some(Err(e))) => return Some(Err(format!("reading the recording: {e}"))),
                Ok(Some(Ok(frame))) => frame,
            };
            // Trailers, or an empty data frame: nothing to hand over yet.
            if let Ok(data) = frame.into_data() {
                if !data.is_empty() {
                    return Some(Ok(data));
                }
            }
        }
    }
}

#[derive(Deserialize)]
struct Refusal {
    code: Option<i64>,
}

impl Twilio {
    pub fn new(settings: TwilioSettings) -> Twilio {
        Twilio { settings }
    }

    fn auth(&self) -> String {
        let pair = format!("{}:{}", self.settings.account_sid, self.settings.auth_token);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }

    /// `{baseUrl}/2010-04-01/Accounts/{accountSid}/{resource}`.
    fn url(&self, resource: &str) -> String {
        format!(
            "{}/2010-04-01/Accounts/{}/{resource}",
            self.settings.base_url, self.settings.account_sid
        )
    }

    /// Sends `message` as an SMS; `status_callback` is where Twilio reports its fate.
    pub async fn send_sms(
        &self,
        client: &HttpClient,
        message: &Outgoing,
        status_callback: Option<&str>,
        on_retry: &(dyn Fn() + Sync),
    ) -> SendOutcome {
        let s = &self.settings;
        let mut form: Vec<(&str, &str)> = vec![("To", &message.to), ("Body", &message.text)];
        if s.messaging_service_sid.is_empty() {
            form.push(("From", &s.from));
        } else {
            form.push(("MessagingServiceSid", &s.messaging_service_sid));
        }
        if let Some(callback) = status_callback {
            form.push(("StatusCallback", callback));
        }
        match self
            .post(
                client,
                &self.url("Messages.json"),
                &form,
                "message",
                on_retry,
            )
            .await
        {
            Answer::Accepted(a) => SendOutcome::Accepted {
                provider_message_id: a.sid,
                status: a.status.as_deref().map_or(SendStatus::Queued, status_of),
            },
            Answer::Unknown(error) => SendOutcome::Unknown { error },
            Answer::Refused { code, twilio_code } => SendOutcome::Refused {
                code,
                do_not_contact: twilio_code == Some(UNSUBSCRIBED_RECIPIENT),
            },
            Answer::Unavailable => SendOutcome::Refused {
                code: PROVIDER_UNAVAILABLE.into(),
                do_not_contact: false,
            },
        }
    }

    /// Places `call` from the settings' `from` number: Twilio fetches its TwiML from
    /// `twiml_url` once answered, reports its progress and answering-machine detection
    /// (asynchronous, waiting for a voicemail greeting's end) to `status_callback`, and
    /// its recording to `recording_callback`.
    pub async fn start_call(
        &self,
        client: &HttpClient,
        call: &CallRequest,
        on_retry: &(dyn Fn() + Sync),
    ) -> CallOutcome {
        if self.settings.from.is_empty() {
            return CallOutcome::Refused {
                code: NO_CALLER_ID.into(),
            };
        }
        let mut form: Vec<(&str, &str)> = vec![
            ("To", &call.to),
            ("From", &self.settings.from),
            ("Url", &call.twiml_url),
            ("StatusCallback", &call.status_callback),
        ];
        form.extend(
            CALL_EVENTS
                .iter()
                .map(|event| ("StatusCallbackEvent", *event)),
        );
        form.extend([
            ("StatusCallbackMethod", "POST"),
            ("MachineDetection", "DetectMessageEnd"),
            ("AsyncAmd", "true"),
            ("AsyncAmdStatusCallback", &call.status_callback),
            ("AsyncAmdStatusCallbackMethod", "POST"),
            ("Record", "true"),
            ("RecordingStatusCallback", &call.recording_callback),
            ("RecordingStatusCallbackEvent", "completed"),
        ]);
        match self
            .post(client, &self.url("Calls.json"), &form, "call", on_retry)
            .await
        {
            Answer::Accepted(a) => CallOutcome::Accepted {
                provider_call_id: a.sid,
                status: a
                    .status
                    .as_deref()
                    .and_then(call_status_of)
                    .unwrap_or(CallStatus::Queued),
            },
            Answer::Unknown(error) => CallOutcome::Unknown { error },
            Answer::Refused { code, .. } => CallOutcome::Refused { code },
            Answer::Unavailable => CallOutcome::Refused {
                code: PROVIDER_UNAVAILABLE.into(),
            },
        }
    }

    /// POSTs `form` to `url`, trying again after a 5xx or a request that never left;
    /// `what` names the thing sent, for the log.
    async fn post(
        &self,
        client: &HttpClient,
        url: &str,
        form: &[(&str, &str)],
        what: &str,
        on_retry: &(dyn Fn() + Sync),
    ) -> Answer {
        let body = match serde_urlencoded::to_string(form) {
            Ok(body) => body.into_bytes(),
            Err(e) => return Answer::Unknown(format!("form: {e}")),
        };
        let headers = [("authorization", self.auth())];
        let mut attempt = 0;
        loop {
            let answer = client.post_form(url, &headers, body.clone(), TIMEOUT).await;
            let retry = match answer {
                Ok((status, bytes)) if (200..300).contains(&status) => {
                    return match serde_json::from_slice::<Accepted>(&bytes) {
                        Ok(a) => Answer::Accepted(a),
                        Err(e) => Answer::Unknown(format!("an answer without a sid: {e}")),
                    };
                }
                Ok((status, bytes)) if (400..500).contains(&status) => {
                    let twilio_code = serde_json::from_slice::<Refusal>(&bytes)
                        .ok()
                        .and_then(|r| r.code);
                    return Answer::Refused {
                        code: twilio_code.map_or_else(|| status.to_string(), |c| c.to_string()),
                        twilio_code,
                    };
                }
                Ok((status, _)) => format!("status {status}"),
                // An untrusted certificate fails the same way every time.
                Err(e) if e.tls_certificate => {
                    return Answer::Refused {
                        code: crate::outbound_tls::TLS_CERTIFICATE.into(),
                        twilio_code: None,
                    }
                }
                Err(e) if e.not_sent => e.message,
                Err(e) => return Answer::Unknown(e.message),
            };
            match BACKOFF.get(attempt) {
                Some(pause) => {
                    tracing::warn!(error = %retry, what, "the Twilio provider did not take a request; trying again");
                    on_retry();
                    tokio::time::sleep(*pause).await;
                    attempt += 1;
                }
                None => return Answer::Unavailable,
            }
        }
    }

    /// Opens the recording at `recording_url` (a `RecordingUrl` from Twilio, without
    /// extension) as MP3. The URL must lie under the settings' `baseUrl`: the account's
    /// credentials go nowhere else.
    pub async fn open_recording(
        &self,
        client: &HttpClient,
        recording_url: &str,
    ) -> Result<RecordingStream, FetchError> {
        let under = format!("{}/", self.settings.base_url);
        if !recording_url.starts_with(&under) {
            return Err(FetchError {
                retryable: false,
                message: format!("a recording URL outside {}", self.settings.base_url),
            });
        }
        let url = format!("{recording_url}.mp3");
        let headers = [("authorization", self.auth())];
        match client.get_streaming(&url, &headers, TIMEOUT).await {
            Ok((status, body)) if (200..300).contains(&status) => Ok(RecordingStream { body }),
            Ok((status, _)) => Err(FetchError {
                // Twilio may answer 404 for a recording it has not made available yet.
                retryable: status >= 500 || status == 404,
                message: format!("status {status}"),
            }),
            Err(e) => Err(FetchError {
                retryable: true,
                message: e.message,
            }),
        }
    }
}

/// Twilio's message statuses as ours.
pub fn status_of(status: &str) -> SendStatus {
    match status {
        "delivered" | "read" => SendStatus::Delivered,
        "sent" => SendStatus::Sent,
        "failed" | "canceled" => SendStatus::Failed,
        "undelivered" => SendStatus::Undelivered,
        "sending" => SendStatus::Sending,
        _ => SendStatus::Queued,
    }
}

/// Twilio's call statuses (`CallStatus`) as ours; `None` for one this code does not know.
pub fn call_status_of(twilio: &str) -> Option<CallStatus> {
    Some(match twilio {
        "queued" => CallStatus::Queued,
        "initiated" => CallStatus::Initiated,
        "ringing" => CallStatus::Ringing,
        "in-progress" => CallStatus::InProgress,
        "completed" => CallStatus::Complete,
        "busy" | "no-answer" => CallStatus::NoAnswer,
        "failed" | "canceled" => CallStatus::Failed,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use http_body_util::Full;
    use hyper::{Request, Response};

    use super::*;

    /// One request the fake Twilio saw.
    #[derive(Debug, Clone)]
    struct Seen {
        method: String,
        path: String,
        authorization: Option<String>,
        content_type: Option<String>,
        form: Vec<(String, String)>,
    }

    type Answerer = fn(&Seen) -> (u16, Bytes);

    /// A fake Twilio on 127.0.0.1 answering each request with `answer`; its base URL and
    /// what it saw.
    async fn fake_twilio(answer: Answerer) -> (String, Arc<Mutex<Vec<Seen>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let recorded = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let seen = recorded.clone();
                tokio::spawn(async move {
                    let svc =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let seen = seen.clone();
                            async move {
                                let header = |name: &str| {
                                    req.headers()
                                        .get(name)
                                        .map(|v| v.to_str().unwrap().to_string())
                                };
                                let (method, path, authorization, content_type) = (
                                    req.method().to_string(),
                                    req.uri().path().to_string(),
                                    header("authorization"),
                                    header("content-type"),
                                );
                                let body = req.into_body().collect().await.unwrap().to_bytes();
                                let request = Seen {
                                    method,
                                    path,
                                    authorization,
                                    content_type,
                                    form: serde_urlencoded::from_bytes(&body).unwrap_or_default(),
                                };
                                let (status, bytes) = answer(&request);
                                seen.lock().unwrap().push(request);
                                let mut resp = Response::new(Full::new(bytes));
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
        (format!("http://{addr}"), seen)
    }

    fn twilio(base_url: &str, from: &str) -> Twilio {
        Twilio::new(TwilioSettings {
            account_sid: "AC1".into(),
            auth_token: "secret".into(),
            from: from.into(),
            messaging_service_sid: if from.is_empty() {
                "MG1".into()
            } else {
                String::new()
            },
            base_url: base_url.into(),
        })
    }

    /// `Basic base64("AC1:secret")`.
    const AUTH: &str = "Basic QUMxOnNlY3JldA==";

    fn client() -> HttpClient {
        HttpClient::new(Duration::from_secs(5), None).unwrap()
    }

    fn call() -> CallRequest {
        let base = "https://e.example/v1/providers/twilio/org_1/voice/call_1";
        CallRequest {
            to: "+15550100001".into(),
            twiml_url: format!("{base}/twiml"),
            status_callback: format!("{base}/status"),
            recording_callback: format!("{base}/recording"),
        }
    }

    #[tokio::test]
    async fn a_call_posts_the_calls_form() {
        let (base, seen) =
            fake_twilio(|_| (201, Bytes::from(r#"{"sid":"CA9","status":"queued"}"#))).await;
        let outcome = twilio(&base, "+15550100000")
            .start_call(&client(), &call(), &|| panic!("no retry"))
            .await;
        assert_eq!(
            outcome,
            CallOutcome::Accepted {
                provider_call_id: "CA9".into(),
                status: CallStatus::Queued
            }
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        let request = &seen[0];
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/2010-04-01/Accounts/AC1/Calls.json");
        assert_eq!(request.authorization.as_deref(), Some(AUTH));
        assert_eq!(
            request.content_type.as_deref(),
            Some("application/x-www-form-urlencoded")
        );
        let status = "https://e.example/v1/providers/twilio/org_1/voice/call_1/status";
        let expected: Vec<(String, String)> = [
            ("To", "+15550100001"),
            ("From", "+15550100000"),
            (
                "Url",
                "https://e.example/v1/providers/twilio/org_1/voice/call_1/twiml",
            ),
            ("StatusCallback", status),
            ("StatusCallbackEvent", "initiated"),
            ("StatusCallbackEvent", "ringing"),
            ("StatusCallbackEvent", "answered"),
            ("StatusCallbackEvent", "completed"),
            ("StatusCallbackMethod", "POST"),
            ("MachineDetection", "DetectMessageEnd"),
            ("AsyncAmd", "true"),
            ("AsyncAmdStatusCallback", status),
            ("AsyncAmdStatusCallbackMethod", "POST"),
            ("Record", "true"),
            (
                "RecordingStatusCallback",
                "https://e.example/v1/providers/twilio/org_1/voice/call_1/recording",
            ),
            ("RecordingStatusCallbackEvent", "completed"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(request.form, expected);
    }

    #[tokio::test]
    async fn a_refused_call_has_twilios_code_and_a_failing_twilio_is_retried_twice() {
        let (base, _) = fake_twilio(|_| {
            (
                400,
                Bytes::from(r#"{"code":21215,"message":"Geo permission","status":400}"#),
            )
        })
        .await;
        let outcome = twilio(&base, "+15550100000")
            .start_call(&client(), &call(), &|| panic!("no retry"))
            .await;
        assert_eq!(
            outcome,
            CallOutcome::Refused {
                code: "21215".into()
            }
        );

        let (base, seen) = fake_twilio(|_| (503, Bytes::from("busy"))).await;
        let retries = AtomicUsize::new(0);
        let outcome = twilio(&base, "+15550100000")
            .start_call(&client(), &call(), &|| {
                retries.fetch_add(1, Ordering::SeqCst);
            })
            .await;
        assert_eq!(
            outcome,
            CallOutcome::Refused {
                code: PROVIDER_UNAVAILABLE.into()
            }
        );
        assert_eq!(retries.load(Ordering::SeqCst), 2);
        assert_eq!(seen.lock().unwrap().len(), 3);
    }

    #[tokio::test]
    async fn a_call_needs_a_from_number() {
        let (base, seen) = fake_twilio(|_| (201, Bytes::from(r#"{"sid":"CA9"}"#))).await;
        let outcome = twilio(&base, "")
            .start_call(&client(), &call(), &|| panic!("no retry"))
            .await;
        assert_eq!(
            outcome,
            CallOutcome::Refused {
                code: NO_CALLER_ID.into()
            }
        );
        assert!(seen.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn an_sms_still_goes_through_the_shared_loop() {
        let (base, seen) = fake_twilio(|seen| {
            if seen.form.iter().any(|(_, v)| v == "+15550100009") {
                (400, Bytes::from(r#"{"code":21610}"#))
            } else {
                (201, Bytes::from(r#"{"sid":"SM1","status":"sent"}"#))
            }
        })
        .await;
        let provider = twilio(&base, "");
        let mut message = Outgoing {
            to: "+15550100001".into(),
            text: "Hi".into(),
            subject: None,
            unsubscribe_url: None,
            status_callback: None,
        };
        let outcome = provider
            .send_sms(&client(), &message, Some("https://e.example/s"), &|| {})
            .await;
        assert_eq!(
            outcome,
            SendOutcome::Accepted {
                provider_message_id: "SM1".into(),
                status: SendStatus::Sent
            }
        );
        message.to = "+15550100009".into();
        let outcome = provider.send_sms(&client(), &message, None, &|| {}).await;
        assert_eq!(
            outcome,
            SendOutcome::Refused {
                code: "21610".into(),
                do_not_contact: true
            }
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen[0].path, "/2010-04-01/Accounts/AC1/Messages.json");
        assert!(seen[0]
            .form
            .contains(&("MessagingServiceSid".to_string(), "MG1".to_string())));
        assert!(seen[0].form.contains(&(
            "StatusCallback".to_string(),
            "https://e.example/s".to_string()
        )));
    }

    #[test]
    fn twilio_call_statuses_map_to_ours() {
        for (twilio, ours) in [
            ("queued", CallStatus::Queued),
            ("initiated", CallStatus::Initiated),
            ("ringing", CallStatus::Ringing),
            ("in-progress", CallStatus::InProgress),
            ("completed", CallStatus::Complete),
            ("busy", CallStatus::NoAnswer),
            ("no-answer", CallStatus::NoAnswer),
            ("failed", CallStatus::Failed),
            ("canceled", CallStatus::Failed),
        ] {
            assert_eq!(call_status_of(twilio), Some(ours), "{twilio}");
        }
        assert_eq!(call_status_of("answered"), None);
        assert_eq!(call_status_of(""), None);
    }

    /// 200 KB of recording.
    fn recording() -> Bytes {
        Bytes::from(
            (0..200_000u32)
                .map(|i| (i % 251) as u8)
                .collect::<Vec<u8>>(),
        )
    }

    fn recordings(seen: &Seen) -> (u16, Bytes) {
        if seen.authorization.as_deref() != Some(AUTH) {
            return (401, Bytes::from(r#"{"code":20003}"#));
        }
        match seen.path.as_str() {
            "/2010-04-01/Accounts/AC1/Recordings/RE1.mp3" if seen.method == "GET" => {
                (200, recording())
            }
            "/2010-04-01/Accounts/AC1/Recordings/RE5.mp3" => (500, Bytes::new()),
            _ => (404, Bytes::from(r#"{"code":20404}"#)),
        }
    }

    #[tokio::test]
    async fn a_recording_streams_with_the_accounts_credentials() {
        let (base, seen) = fake_twilio(recordings).await;
        let provider = twilio(&base, "+15550100000");
        let url = format!("{base}/2010-04-01/Accounts/AC1/Recordings/RE1");
        let mut stream = provider.open_recording(&client(), &url).await.unwrap();
        assert_eq!(stream.content_length(), Some(200_000));
        let mut got = Vec::new();
        while let Some(chunk) = stream.next_chunk().await {
            got.extend_from_slice(&chunk.unwrap());
        }
        assert_eq!(Bytes::from(got), recording());
        assert_eq!(seen.lock().unwrap()[0].method, "GET");
    }

    #[tokio::test]
    async fn a_missing_or_failing_recording_is_retryable_and_a_refusal_is_not() {
        let (base, _) = fake_twilio(recordings).await;
        let provider = twilio(&base, "+15550100000");
        let open = |id: &str| {
            let url = format!("{base}/2010-04-01/Accounts/AC1/Recordings/{id}");
            let provider = provider.clone();
            async move { provider.open_recording(&client(), &url).await.err() }
        };
        let missing = open("RE4").await.unwrap();
        assert!(missing.retryable, "{missing:?}");
        assert_eq!(missing.message, "status 404");
        assert!(open("RE5").await.unwrap().retryable);

        let mut settings = provider.settings.clone();
        settings.auth_token = "wrong".into();
        let url = format!("{base}/2010-04-01/Accounts/AC1/Recordings/RE1");
        let refused = Twilio::new(settings)
            .open_recording(&client(), &url)
            .await
            .err()
            .unwrap();
        assert_eq!(
            refused,
            FetchError {
                retryable: false,
                message: "status 401".into()
            }
        );

        // Nothing listens on port 1: a transport error may pass.
        let gone = twilio("http://127.0.0.1:1", "+15550100000")
            .open_recording(&client(), "http://127.0.0.1:1/2010-04-01/R")
            .await
            .err()
            .unwrap();
        assert!(gone.retryable, "{gone:?}");
    }

    #[tokio::test]
    async fn credentials_never_go_to_a_foreign_recording_url() {
        let (base, seen) = fake_twilio(recordings).await;
        let (elsewhere, seen_elsewhere) = fake_twilio(recordings).await;
        let provider = twilio(&base, "+15550100000");
        for foreign in [
            format!("{elsewhere}/2010-04-01/Accounts/AC1/Recordings/RE1"),
            format!("{base}.evil.example/Recordings/RE1"),
            format!("{base}@evil.example/Recordings/RE1"),
            base.clone(),
            String::new(),
        ] {
            let refused = provider
                .open_recording(&client(), &foreign)
                .await
                .err()
                .unwrap();
            assert!(!refused.retryable, "{foreign}");
        }
        assert!(seen.lock().unwrap().is_empty());
        assert!(seen_elsewhere.lock().unwrap().is_empty());
    }
}

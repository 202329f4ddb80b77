//! The Twilio-compatible REST provider: SMS through
//! `POST {baseUrl}/2010-04-01/Accounts/{accountSid}/Messages.json` (form fields `To`,
//! `From` or `MessagingServiceSid`, `Body`, `StatusCallback`), calls through `.../Calls.json`
//! (`To`, `From`, `Url`, status, answering-machine and recording callbacks), both with
//! HTTP Basic `accountSid:authToken`, and a call's recording downloaded as it streams.
//!
//! The answer's `sid` is the provider's id of the message or call and its `status` the
//! status (a call's answer never completes it: only status callbacks do). Error 21610
//! (the recipient texted STOP to the carrier) is a refusal that means "do not contact";
//! other 4xx refuse with their code. **Retries**: a 429 (Twilio's 20429) or a 503, or a
//! connection that failed before the request was written, means the request was not
//! taken: it is tried again after `Retry-After` (or a short backoff), at most 3 tries
//! within 60 s. Anything else after a written request (a 500, a 502, a timeout) is never
//! repeated: the send is `unknown`. One loop (`Twilio::post`) serves messages and calls
//! alike. Errors carry no response body: Twilio's numeric `code`, a status, or a short
//! class (`timeout`, `connection`, `malformed answer`). Credentials only ever go to the
//! configured `baseUrl`: a recording URL elsewhere is refused.

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Body as _;
use serde::Deserialize;

use super::{CallOutcome, CallRequest, CallStatus, Outgoing, SendOutcome};
use crate::http_client::{HttpClient, SendError};
use crate::store::rows::{SendStatus, TwilioSettings};

/// The pauses before the second and third tries when Twilio gives no `Retry-After`.
const BACKOFF: [Duration; 2] = [Duration::from_millis(250), Duration::from_millis(1000)];
/// Tries of one request that was not taken, the first included.
const MAX_TRIES: usize = 3;
/// Every try of one request starts within this long of the first.
const RETRY_WINDOW: Duration = Duration::from_secs(60);
/// How long one request may take (for a download, until the answer's head).
const TIMEOUT: Duration = Duration::from_secs(15);
/// How long one read of a downloading recording may take.
const CHUNK_TIMEOUT: Duration = Duration::from_secs(30);
/// The call progress Twilio reports to `StatusCallback`.
const CALL_EVENTS: [&str; 4] = ["initiated", "ringing", "answered", "completed"];
/// The refusal of a call the settings give no caller id for (calls need `from`).
pub const NO_CALLER_ID: &str = "no-caller-id";
/// The refusal of a send or call while the settings hold no auth token (cleared when
/// `baseUrl` changed without one): nothing is sent.
pub const NO_AUTH_TOKEN: &str = "no-auth-token";
/// The refusal after every try met a 429, a 503 or no connection (when Twilio gave no
/// code of its own).
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
    /// A 2xx without a readable `sid`, or no answer (or a 5xx other than 503) to a
    /// request that may have arrived: a short class, never the answer's body.
    Unknown(String),
    /// A 4xx, with Twilio's `code` when it gave one (else the HTTP status).
    Refused {
        code: String,
        twilio_code: Option<i64>,
    },
    /// Not taken (429, 503 or no connection) on every try; Twilio's code when it gave
    /// one.
    Unavailable { twilio_code: Option<i64> },
}

/// What one try came to.
#[derive(Debug, PartialEq)]
enum Try {
    Done(Done),
    /// Not taken: may be tried again, after `Retry-After` when Twilio said.
    NotTaken {
        class: String,
        twilio_code: Option<i64>,
        retry_after: Option<Duration>,
    },
}

/// A try's final answer (nothing to try again).
#[derive(Debug, PartialEq)]
enum Done {
    Accepted {
        sid: String,
        status: Option<String>,
    },
    Unknown(String),
    Refused {
        code: String,
        twilio_code: Option<i64>,
    },
}

/// Twilio's numeric `code` in an error answer, if it gave one.
fn twilio_code(bytes: &[u8]) -> Option<i64> {
    serde_json::from_slice::<Refusal>(bytes)
        .ok()
        .and_then(|r| r.code)
}

/// Reads one try's answer: 2xx accepted, 429 and 503 not taken, other 4xx refused,
/// anything else unknown (the request was written: it is never sent again). Nothing of
/// the body but Twilio's `sid`, `status` and `code` is kept.
fn read_try(answer: Result<(u16, Option<Duration>, Bytes), SendError>) -> Try {
    match answer {
        Ok((status, _, bytes)) if (200..300).contains(&status) => {
            Try::Done(match serde_json::from_slice::<Accepted>(&bytes) {
                Ok(a) => Done::Accepted {
                    sid: a.sid,
                    status: a.status,
                },
                Err(_) => Done::Unknown("malformed answer".into()),
            })
        }
        Ok((status @ (429 | 503), retry_after, bytes)) => Try::NotTaken {
            class: format!("status {status}"),
            twilio_code: twilio_code(&bytes),
            retry_after,
        },
        Ok((status, _, bytes)) if (400..500).contains(&status) => {
            let twilio_code = twilio_code(&bytes);
            Try::Done(Done::Refused {
                code: twilio_code.map_or_else(|| status.to_string(), |c| c.to_string()),
                twilio_code,
            })
        }
        Ok((status, _, _)) => Try::Done(Done::Unknown(format!("status {status}"))),
        // An untrusted certificate fails the same way every time: never tried again.
        Err(e) if e.tls_certificate => Try::Done(Done::Refused {
            code: crate::outbound_tls::TLS_CERTIFICATE.into(),
            twilio_code: None,
        }),
        Err(e) if e.not_sent => Try::NotTaken {
            class: "connect".into(),
            twilio_code: None,
            retry_after: None,
        },
        Err(e) => Try::Done(Done::Unknown(class_of(&e))),
    }
}

/// A failed request's short class: `timeout`, or `connection` (lost after the request
/// was written).
fn class_of(e: &SendError) -> String {
    if e.message.starts_with("timed out") {
        "timeout".into()
    } else {
        "connection".into()
    }
}

/// The pause before try `tries + 1` of a request first tried at `started`, or `None`
/// when it is not tried again: after [`MAX_TRIES`], or when the pause (Twilio's
/// `Retry-After`, else [`BACKOFF`]) would start it past [`RETRY_WINDOW`].
fn next_pause(tries: usize, retry_after: Option<Duration>, elapsed: Duration) -> Option<Duration> {
    if tries >= MAX_TRIES {
        return None;
    }
    let pause = retry_after.unwrap_or(BACKOFF[(tries - 1).min(BACKOFF.len() - 1)]);
    (elapsed + pause <= RETRY_WINDOW).then_some(pause)
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
            Answer::Unavailable { twilio_code } => SendOutcome::Refused {
                code: unavailable(twilio_code),
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
            // Only status callbacks end a call: a final status in this answer (a
            // compatible service's, or a misreading) counts as queued.
            Answer::Accepted(a) => CallOutcome::Accepted {
                provider_call_id: a.sid,
                status: a
                    .status
                    .as_deref()
                    .and_then(call_status_of)
                    .filter(|status| !status.is_final())
                    .unwrap_or(CallStatus::Queued),
            },
            Answer::Unknown(error) => CallOutcome::Unknown { error },
            Answer::Refused { code, .. } => CallOutcome::Refused { code },
            Answer::Unavailable { twilio_code } => CallOutcome::Refused {
                code: unavailable(twilio_code),
            },
        }
    }

    /// Rings a person for a warm transfer: `Calls.json` from the settings' `from` with
    /// `MachineDetection=Enable` (Twilio's answer to `twiml_url` then carries
    /// `AnsweredBy`: `human`, `machine_start`, `fax` or `unknown`), `Timeout` seconds of
    /// ringing, and each status reported to `status_callback`. Not recorded: the call
    /// is recorded on the lead's side.
    pub async fn ring_person(
        &self,
        client: &HttpClient,
        to: &str,
        twiml_url: &str,
        status_callback: &str,
        timeout_seconds: u32,
    ) -> CallOutcome {
        if self.settings.from.is_empty() {
            return CallOutcome::Refused {
                code: NO_CALLER_ID.into(),
            };
        }
        let timeout = timeout_seconds.to_string();
        let mut form: Vec<(&str, &str)> = vec![
            ("To", to),
            ("From", &self.settings.from),
            ("Url", twiml_url),
            ("StatusCallback", status_callback),
        ];
        form.extend(
            CALL_EVENTS
                .iter()
                .map(|event| ("StatusCallbackEvent", *event)),
        );
        form.extend([
            ("StatusCallbackMethod", "POST"),
            ("MachineDetection", "Enable"),
            ("Timeout", timeout.as_str()),
        ]);
        match self
            .post(client, &self.url("Calls.json"), &form, "call", &|| {})
            .await
        {
            Answer::Accepted(a) => CallOutcome::Accepted {
                provider_call_id: a.sid,
                status: CallStatus::Queued,
            },
            Answer::Unknown(error) => CallOutcome::Unknown { error },
            Answer::Refused { code, .. } => CallOutcome::Refused { code },
            Answer::Unavailable { twilio_code } => CallOutcome::Refused {
                code: unavailable(twilio_code),
            },
        }
    }

    /// Ends a call that is still queued or ringing (`Status=canceled` on
    /// `Calls/{CallSid}.json`).
    pub async fn cancel_call(
        &self,
        client: &HttpClient,
        call_sid: &str,
    ) -> std::result::Result<(), String> {
        let resource = format!("Calls/{call_sid}.json");
        match self
            .post(
                client,
                &self.url(&resource),
                &[("Status", "canceled")],
                "call update",
                &|| {},
            )
            .await
        {
            Answer::Accepted(_) => Ok(()),
            Answer::Refused { code, .. } => Err(code),
            Answer::Unknown(class) => Err(class),
            Answer::Unavailable { twilio_code } => Err(unavailable(twilio_code)),
        }
    }

    /// POSTs `form` to `url`, trying again only while Twilio did not take it (429, 503,
    /// no connection); `what` names the thing sent, for the log.
    async fn post(
        &self,
        client: &HttpClient,
        url: &str,
        form: &[(&str, &str)],
        what: &str,
        on_retry: &(dyn Fn() + Sync),
    ) -> Answer {
        if self.settings.auth_token.is_empty() {
            return Answer::Refused {
                code: NO_AUTH_TOKEN.into(),
                twilio_code: None,
            };
        }
        let body = match serde_urlencoded::to_string(form) {
            Ok(body) => body.into_bytes(),
            Err(_) => return Answer::Unknown("malformed request".into()),
        };
        let headers = [("authorization", self.auth())];
        let started = tokio::time::Instant::now();
        let mut tries = 0;
        loop {
            tries += 1;
            let answer = client.post_form(url, &headers, body.clone(), TIMEOUT).await;
            let (class, twilio_code, retry_after) = match read_try(answer) {
                Try::Done(Done::Accepted { sid, status }) => {
                    return Answer::Accepted(Accepted { sid, status })
                }
                Try::Done(Done::Unknown(class)) => {
                    tracing::warn!(error = %class, what, "the Twilio provider's answer is unknown; not sent again");
                    return Answer::Unknown(class);
                }
                Try::Done(Done::Refused { code, twilio_code }) => {
                    return Answer::Refused { code, twilio_code }
                }
                Try::NotTaken {
                    class,
                    twilio_code,
                    retry_after,
                } => (class, twilio_code, retry_after),
            };
            match next_pause(tries, retry_after, started.elapsed()) {
                Some(pause) => {
                    tracing::warn!(error = %class, code = ?twilio_code, what, pause_ms = pause.as_millis() as u64, "the Twilio provider did not take a request; trying again");
                    on_retry();
                    tokio::time::sleep(pause).await;
                }
                None => {
                    tracing::warn!(error = %class, code = ?twilio_code, what, tries, "the Twilio provider did not take a request; given up");
                    return Answer::Unavailable { twilio_code };
                }
            }
        }
    }

    /// Gives live call `call_sid` new TwiML (`POST Calls/{CallSid}.json` with `Twiml`):
    /// what it does next replaces what it was doing (a relay session ends). Tried again
    /// only while Twilio did not take it; `Err` says why it was not done.
    pub async fn update_call(
        &self,
        client: &HttpClient,
        call_sid: &str,
        twiml: &str,
    ) -> std::result::Result<(), String> {
        let resource = format!("Calls/{call_sid}.json");
        match self
            .post(
                client,
                &self.url(&resource),
                &[("Twiml", twiml)],
                "call update",
                &|| {},
            )
            .await
        {
            Answer::Accepted(_) => Ok(()),
            Answer::Refused { code, .. } => Err(code),
            Answer::Unknown(class) => Err(class),
            Answer::Unavailable { twilio_code } => Err(unavailable(twilio_code)),
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
        if self.settings.auth_token.is_empty() {
            return Err(FetchError {
                retryable: false,
                message: NO_AUTH_TOKEN.into(),
            });
        }
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

/// The refusal code of a request never taken: Twilio's code (20429) when it gave one.
fn unavailable(twilio_code: Option<i64>) -> String {
    twilio_code.map_or_else(|| PROVIDER_UNAVAILABLE.into(), |c| c.to_string())
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
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::testkit::twilio::FakeTwilio;

    /// The test kit's fake Twilio answering every request with `status` and `body`; its
    /// base URL, and the fake (what it saw).
    async fn fake_twilio(status: u16, body: &str) -> (String, FakeTwilio) {
        let fake = FakeTwilio::start().await;
        fake.answer_with(status, body);
        (fake.base_url.clone(), fake)
    }

    /// The outcome of placing `call()` from +15550100000 with Twilio answering `status`
    /// and `body` to every request (none tried again), and the fake.
    async fn placed(status: u16, body: &str) -> (CallOutcome, FakeTwilio) {
        let (base, fake) = fake_twilio(status, body).await;
        let outcome = twilio(&base, "+15550100000")
            .start_call(&client(), &call(), &|| panic!("no retry"))
            .await;
        (outcome, fake)
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
            rate_per_second: None,
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
    async fn without_an_auth_token_nothing_is_sent() {
        let (base, fake) = fake_twilio(201, r#"{"sid": "SM1", "status": "queued"}"#).await;
        let mut cleared = twilio(&base, "+15550100000");
        cleared.settings.auth_token.clear();
        let message = Outgoing {
            to: "+15550100001".into(),
            text: "hi".into(),
            subject: None,
            unsubscribe_url: None,
            status_callback: None,
            thread: None,
        };
        let outcome = cleared
            .send_sms(&client(), &message, None, &|| panic!("no retry"))
            .await;
        assert!(
            matches!(&outcome, SendOutcome::Refused { code, .. } if code == NO_AUTH_TOKEN),
            "{outcome:?}"
        );
        let call = cleared
            .start_call(&client(), &call(), &|| panic!("no retry"))
            .await;
        assert!(
            matches!(&call, CallOutcome::Refused { code } if code == NO_AUTH_TOKEN),
            "{call:?}"
        );
        assert_eq!(fake.total(), 0, "nothing reached the provider");
    }

    #[tokio::test]
    async fn a_call_posts_the_calls_form() {
        let (outcome, seen) = placed(201, r#"{"sid":"CA9","status":"queued"}"#).await;
        assert_eq!(
            outcome,
            CallOutcome::Accepted {
                provider_call_id: "CA9".into(),
                status: CallStatus::Queued
            }
        );
        let seen = seen.calls();
        assert_eq!(seen.len(), 1);
        let request = &seen[0];
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/2010-04-01/Accounts/AC1/Calls.json");
        assert_eq!(request.authorization, AUTH);
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
    async fn a_person_is_rung_with_machine_detection_and_a_ringing_call_is_cancelled() {
        let fake = FakeTwilio::start().await;
        let twilio = twilio(&fake.base_url, "+15550100000");
        let outcome = twilio
            .ring_person(
                &client(),
                "+15550107777",
                "https://e.example/w?step=answer&attempt=1",
                "https://e.example/w?step=status&attempt=1",
                25,
            )
            .await;
        let CallOutcome::Accepted {
            provider_call_id, ..
        } = outcome
        else {
            panic!("{outcome:?}");
        };
        let request = &fake.calls()[0];
        assert_eq!(request.path, "/2010-04-01/Accounts/AC1/Calls.json");
        assert_eq!(request.field("To"), Some("+15550107777"));
        assert_eq!(request.field("From"), Some("+15550100000"));
        assert_eq!(
            request.field("Url"),
            Some("https://e.example/w?step=answer&attempt=1")
        );
        assert_eq!(
            request.field("StatusCallback"),
            Some("https://e.example/w?step=status&attempt=1")
        );
        assert_eq!(request.field("MachineDetection"), Some("Enable"));
        assert_eq!(request.field("Timeout"), Some("25"));
        assert_eq!(request.field("Record"), None, "recorded on the lead's side");
        assert_eq!(request.fields("StatusCallbackEvent"), CALL_EVENTS);
        twilio
            .cancel_call(&client(), &provider_call_id)
            .await
            .unwrap();
        let update = &fake.call_updates()[0];
        assert_eq!(
            update.path,
            format!("/2010-04-01/Accounts/AC1/Calls/{provider_call_id}.json")
        );
        assert_eq!(
            update.form,
            [("Status".to_string(), "canceled".to_string())]
        );
        assert_eq!(update.authorization, AUTH);
    }

    #[tokio::test]
    async fn a_refused_call_has_twilios_code_and_a_failing_twilio_is_retried_twice() {
        let (outcome, _) = placed(
            400,
            r#"{"code":21215,"message":"Geo permission","status":400}"#,
        )
        .await;
        assert_eq!(
            outcome,
            CallOutcome::Refused {
                code: "21215".into()
            }
        );

        let (base, seen) = fake_twilio(503, "busy").await;
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
        assert_eq!(seen.calls().len(), 3);
    }

    fn answered(status: u16, retry_after: Option<u64>, body: &str) -> Try {
        read_try(Ok((
            status,
            retry_after.map(Duration::from_secs),
            Bytes::from(body.to_string()),
        )))
    }

    #[test]
    fn only_429_503_and_no_connection_are_not_taken() {
        assert_eq!(
            answered(
                429,
                Some(3),
                r#"{"code":20429,"message":"Too Many Requests"}"#
            ),
            Try::NotTaken {
                class: "status 429".into(),
                twilio_code: Some(20429),
                retry_after: Some(Duration::from_secs(3))
            }
        );
        assert!(matches!(answered(503, None, ""), Try::NotTaken { .. }));
        let refused = SendError {
            message: "client error (Connect): connection refused".into(),
            not_sent: true,
            tls_certificate: false,
        };
        assert!(matches!(read_try(Err(refused)), Try::NotTaken { .. }));
        // An untrusted certificate is refused at once, though nothing was sent.
        let untrusted = SendError {
            message: "tls".into(),
            not_sent: true,
            tls_certificate: true,
        };
        assert!(matches!(
            read_try(Err(untrusted)),
            Try::Done(Done::Refused { ref code, .. }) if code == "tls-certificate"
        ));
        // After the request was written: never again, and no body in the error.
        for status in [500, 502, 504] {
            assert_eq!(
                answered(status, Some(1), r#"{"message":"secret detail"}"#),
                Try::Done(Done::Unknown(format!("status {status}")))
            );
        }
        let lost = SendError {
            message: "connection closed before message completed".into(),
            not_sent: false,
            tls_certificate: false,
        };
        assert_eq!(
            read_try(Err(lost)),
            Try::Done(Done::Unknown("connection".into()))
        );
        let late = SendError {
            message: "timed out after 15000 ms".into(),
            not_sent: false,
            tls_certificate: false,
        };
        assert_eq!(
            read_try(Err(late)),
            Try::Done(Done::Unknown("timeout".into()))
        );
        assert_eq!(
            answered(201, None, r#"{"sid": 7, "secret": "detail"}"#),
            Try::Done(Done::Unknown("malformed answer".into()))
        );
        assert_eq!(
            answered(
                400,
                None,
                r#"{"code":21211,"message":"Invalid 'To' Phone Number"}"#
            ),
            Try::Done(Done::Refused {
                code: "21211".into(),
                twilio_code: Some(21211)
            })
        );
        assert_eq!(
            answered(404, None, "<html>not found</html>"),
            Try::Done(Done::Refused {
                code: "404".into(),
                twilio_code: None
            })
        );
    }

    #[test]
    fn at_most_three_tries_within_sixty_seconds_honouring_retry_after() {
        let s = Duration::from_secs;
        assert_eq!(next_pause(1, None, s(0)), Some(BACKOFF[0]));
        assert_eq!(next_pause(2, None, s(0)), Some(BACKOFF[1]));
        assert_eq!(next_pause(3, None, s(0)), None);
        assert_eq!(next_pause(1, Some(s(5)), s(0)), Some(s(5)));
        assert_eq!(next_pause(2, Some(s(30)), s(30)), Some(s(30)));
        // A try that would start past the window is not made.
        assert_eq!(next_pause(1, Some(s(61)), s(0)), None);
        assert_eq!(next_pause(2, Some(s(20)), s(45)), None);
    }

    #[tokio::test]
    async fn a_500_after_the_request_was_written_is_never_sent_again() {
        let (outcome, seen) = placed(500, r#"{"code":20500}"#).await;
        assert_eq!(
            outcome,
            CallOutcome::Unknown {
                error: "status 500".into()
            }
        );
        assert_eq!(seen.calls().len(), 1);
    }

    #[tokio::test]
    async fn a_completed_status_in_the_calls_answer_does_not_complete_the_call() {
        let (outcome, _) = placed(201, r#"{"sid":"CA9","status":"completed"}"#).await;
        assert_eq!(
            outcome,
            CallOutcome::Accepted {
                provider_call_id: "CA9".into(),
                status: CallStatus::Queued
            }
        );
    }

    #[tokio::test]
    async fn a_call_needs_a_from_number() {
        let (base, seen) = fake_twilio(201, r#"{"sid":"CA9"}"#).await;
        let outcome = twilio(&base, "")
            .start_call(&client(), &call(), &|| panic!("no retry"))
            .await;
        assert_eq!(
            outcome,
            CallOutcome::Refused {
                code: NO_CALLER_ID.into()
            }
        );
        assert_eq!(seen.total(), 0);
    }

    #[tokio::test]
    async fn an_sms_still_goes_through_the_shared_loop() {
        let (base, seen) = fake_twilio(201, r#"{"sid":"SM1","status":"sent"}"#).await;
        seen.opt_out("+15550100009");
        let provider = twilio(&base, "");
        let mut message = Outgoing {
            to: "+15550100001".into(),
            text: "Hi".into(),
            subject: None,
            unsubscribe_url: None,
            status_callback: None,
            thread: None,
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
        let seen = seen.sent();
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

    /// The test kit's fake Twilio serving recording RE1 to the account's credentials.
    async fn recordings() -> (String, FakeTwilio) {
        let fake = FakeTwilio::start().await;
        fake.expect_credentials("AC1", "secret");
        fake.serve_recording("RE1", recording().to_vec());
        (fake.base_url.clone(), fake)
    }

    #[tokio::test]
    async fn a_recording_streams_with_the_accounts_credentials() {
        let (base, seen) = recordings().await;
        let provider = twilio(&base, "+15550100000");
        let url = format!("{base}/2010-04-01/Accounts/AC1/Recordings/RE1");
        let mut stream = provider.open_recording(&client(), &url).await.unwrap();
        assert_eq!(stream.content_length(), Some(200_000));
        let mut got = Vec::new();
        while let Some(chunk) = stream.next_chunk().await {
            got.extend_from_slice(&chunk.unwrap());
        }
        assert_eq!(Bytes::from(got), recording());
        assert_eq!(seen.recording_count(), 1, "one GET");
    }

    #[tokio::test]
    async fn a_missing_or_failing_recording_is_retryable_and_a_refusal_is_not() {
        let (base, fake) = recordings().await;
        let provider = twilio(&base, "+15550100000");
        let open = |id: &str| {
            let url = format!("{base}/2010-04-01/Accounts/AC1/Recordings/{id}");
            let provider = provider.clone();
            async move { provider.open_recording(&client(), &url).await.err() }
        };
        let missing = open("RE4").await.unwrap();
        assert!(missing.retryable, "{missing:?}");
        assert_eq!(missing.message, "status 404");
        fake.fail_recordings(1);
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
        let (base, seen) = recordings().await;
        let (elsewhere, seen_elsewhere) = recordings().await;
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
        assert_eq!(seen.total(), 0);
        assert_eq!(seen_elsewhere.total(), 0);
    }
}

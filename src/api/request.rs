//! Reading requests: bodies bounded in size and time, the API key, query parameters.
//!
//! A body reaches handlers as a [`RequestBody`], which holds the client to a pace: a
//! whole JSON body must arrive within `body_read_timeout` of its request, and a
//! streamed upload (a recording) must keep a minimum average rate; a client that falls
//! behind gets 408 and its connection is closed, so slow bodies cannot hold the
//! server's connections. A body a handler lets go of unread (a refusal before reading:
//! 401, 403, 404, 415, ...) comes back to `api::handle`, which reads and discards the
//! rest ([`discard`]) before answering: a client still sending would otherwise see the
//! stream reset (HTTP/2) or the connection reset (HTTP/1.1) instead of the answer.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::HeaderMap;
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};

use super::body_phase::{BodyPhase, BodySlot};
use crate::domain::records::listing::{DEFAULT_LIMIT, MAX_LIMIT};
use crate::error::{Error, Result};
use crate::time::{self, Micros};

/// How fast a request's body must arrive.
#[derive(Debug, Clone, Copy)]
pub struct BodyPace {
    /// A whole body arrives within this time of its request; so must the rest of a
    /// refused request's body, which is read and discarded. A streamed upload never
    /// waits longer than this for its next bytes.
    pub timeout: Duration,
    /// Every body, past its first [`RATE_GRACE`], has received at least this many
    /// bytes per second since its request came: a body trickling in a byte at a time
    /// ends within seconds, not at `timeout`.
    pub min_bytes_per_second: u64,
    /// A streamed upload, past its first `timeout`, has received at least this many
    /// bytes per second since it began.
    pub upload_min_bytes_per_second: u64,
}

/// How long any body may take before its minimum rate applies.
pub const RATE_GRACE: Duration = Duration::from_secs(5);

/// How much more than its limit a refused body is read and thrown away before the
/// answer, so that a client still writing it (python-requests, httpx and curl write the
/// whole body before they read) gets the 413 instead of a reset connection: the
/// connection closes after it all the same.
pub const LINGER_BYTES: u64 = 1 << 20;

/// What is left of a body its handler let go of before the end, still held to its pace.
pub struct Leftover {
    body: RequestBody,
}

/// A request's body as handlers see it: [`Incoming`] held to a [`BodyPace`].
pub struct RequestBody {
    inner: Option<Incoming>,
    pace: BodyPace,
    started: Instant,
    /// Held to the minimum rate of a streamed upload rather than a whole-body deadline.
    streaming: bool,
    /// How much of a refused body is read and discarded; `None`: `max_body_bytes`.
    discard_limit: Option<u64>,
    received: u64,
    /// Whether a handler read from it at all (which, with `Expect: 100-continue`, is
    /// what told the client to send it).
    polled: bool,
    timed_out: bool,
    /// Armed on the first wait for data.
    timer: Option<Pin<Box<Sleep>>>,
    /// Where an unread rest goes when the body is dropped.
    rest: Option<oneshot::Sender<Leftover>>,
    /// Its place among the bodies arriving (`body_phase`), left at its end.
    slot: Option<BodySlot>,
}

impl RequestBody {
    /// Wraps `body` from `peer`, counting it among the bodies arriving (`phase`) until
    /// it ends; the receiver gets what is left of it if it is dropped unread. A body
    /// that is already complete (no body at all) is not counted and needs no receiver.
    pub fn new(
        body: Incoming,
        pace: BodyPace,
        phase: &Arc<BodyPhase>,
        peer: IpAddr,
    ) -> (RequestBody, Option<oneshot::Receiver<Leftover>>) {
        let (rest, receiver, slot) = if body.is_end_stream() {
            (None, None, None)
        } else {
            let (tx, rx) = oneshot::channel();
            (Some(tx), Some(rx), Some(phase.admit(peer)))
        };
        let body = RequestBody {
            inner: Some(body),
            pace,
            started: Instant::now(),
            streaming: false,
            discard_limit: None,
            received: 0,
            polled: false,
            timed_out: false,
            timer: None,
            rest,
            slot,
        };
        (body, receiver)
    }

    /// Holds the body to the minimum rate of a streamed upload of at most `max` bytes
    /// instead of a deadline for the whole of it. The caller is authenticated and may
    /// send that much anyway, so a refusal reads and discards up to `max` bytes too
    /// (at the same pace): a client uploading a file gets the refusal, not a reset.
    pub fn stream(&mut self, max: u64) {
        self.streaming = true;
        self.discard_limit = Some(max);
        if let Some(slot) = &self.slot {
            slot.mark_upload();
        }
        self.rearm();
    }

    /// Reads nothing more of a refused body: its connection closes after the answer
    /// (an import over `max_import_bytes` is not read to its end).
    pub fn refuse_rest(&mut self) {
        self.discard_limit = Some(0);
    }

    /// When the body (whole) or its next bytes are due: the earliest of the whole
    /// body's deadline (a streamed upload: its next bytes within `timeout`), the
    /// minimum rate of every body, and a streamed upload's own minimum rate.
    fn deadline(&self) -> Instant {
        let by_rate = |grace: Duration, rate: u64| {
            let earned =
                Duration::from_micros(self.received.saturating_mul(1_000_000) / rate.max(1));
            (self.started + grace).checked_add(earned)
        };
        let any_body = by_rate(RATE_GRACE, self.pace.min_bytes_per_second);
        let due = if self.streaming {
            let idle = Instant::now() + self.pace.timeout;
            let upload = by_rate(self.pace.timeout, self.pace.upload_min_bytes_per_second);
            upload.map_or(idle, |u| idle.min(u))
        } else {
            self.started + self.pace.timeout
        };
        any_body.map_or(due, |a| due.min(a))
    }

    fn rearm(&mut self) {
        let deadline = self.deadline();
        match &mut self.timer {
            Some(timer) => timer.as_mut().reset(deadline),
            None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
        }
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        this.polled = true;
        if this.timed_out {
            return Poll::Ready(Some(Err(BodyError::TimedOut)));
        }
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match Pin::new(inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received += data.len() as u64;
                    if this.timer.is_some() {
                        this.rearm();
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.slot = None;
                Poll::Ready(Some(Err(BodyError::Read(e))))
            }
            Poll::Ready(None) => {
                this.slot = None;
                Poll::Ready(None)
            }
            Poll::Pending => {
                if this.timer.is_none() {
                    this.rearm();
                }
                let fired = match &mut this.timer {
                    Some(timer) => timer.as_mut().poll(cx).is_ready(),
                    None => false,
                };
                // Ended to make room for newer bodies (`body_phase`): as late.
                let ended = match &mut this.slot {
                    Some(slot) => matches!(Pin::new(&mut slot.ended).poll(cx), Poll::Ready(Ok(()))),
                    None => false,
                };
                if fired || ended {
                    this.timed_out = true;
                    return Poll::Ready(Some(Err(BodyError::TimedOut)));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        // A body that timed out gets a 408 and a closed connection: nothing to read.
        if self.timed_out {
            return;
        }
        if let (Some(inner), Some(rest)) = (self.inner.take(), self.rest.take()) {
            if !inner.is_end_stream() {
                let body = RequestBody {
                    inner: Some(inner),
                    pace: self.pace,
                    started: self.started,
                    streaming: self.streaming,
                    discard_limit: self.discard_limit,
                    received: self.received,
                    polled: self.polled,
                    timed_out: false,
                    timer: None,
                    rest: None,
                    slot: self.slot.take(),
                };
                let _ = rest.send(Leftover { body });
            }
        }
    }
}

/// Why a body could not be read.
#[derive(Debug)]
pub enum BodyError {
    /// It did not keep its [`BodyPace`].
    TimedOut,
    Read(hyper::Error),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::TimedOut => f.write_str("the body did not arrive in time"),
            BodyError::Read(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BodyError {}

impl From<BodyError> for Error {
    fn from(e: BodyError) -> Error {
        match e {
            BodyError::TimedOut => Error::RequestTimeout,
            BodyError::Read(e) => {
                Error::BadRequest(format!("Could not read the request body: {e}"))
            }
        }
    }
}

/// Reads and discards the rest of a refused request's body, so that its client gets the
/// answer rather than a reset: at most `max` bytes (an upload's own limit once its
/// handler took it as one), at the body's pace. `false` when it was not read to the end
/// (longer, slower, broken, or never asked for), so an HTTP/1.1 connection must close
/// after the answer. A rest up to [`LINGER_BYTES`] beyond the limit is still read and
/// thrown away (a lingering close: the client, still writing, then reads the answer),
/// and the answer closes the connection. A rest announced longer than that is not read
/// at all: an HTTP/2 client then gets the answer followed by a stream reset
/// (`NO_ERROR`, as RFC 9113 section 8.1 provides), an HTTP/1.1 client the answer and
/// `connection: close`.
pub async fn discard(rest: Leftover, max: usize, expects_continue: bool) -> bool {
    let mut body = rest.body;
    // The client waits for a `100 Continue` nobody sent: it has sent nothing.
    if expects_continue && !body.polled {
        return false;
    }
    let limit = body.discard_limit.unwrap_or(max as u64);
    // Up to `LINGER_BYTES` beyond the limit is read too, but then the connection closes.
    let mut left = limit.saturating_add(LINGER_BYTES);
    let announced = body.size_hint().lower();
    if announced > left {
        return false;
    }
    let mut complete = announced <= limit;
    while let Some(frame) = body.frame().await {
        // A read error, or the body fell behind its pace.
        let Ok(frame) = frame else {
            return false;
        };
        if let Some(data) = frame.data_ref() {
            let n = data.len() as u64;
            if n > left {
                return false;
            }
            left -= n;
            complete &= left >= LINGER_BYTES;
        }
    }
    complete
}

/// Settles what a handler left of the request's body before its answer goes out:
/// reads and discards the rest ([`discard`]), and closes an HTTP/1.1 connection
/// after the answer when the body was not read to its end (or did not keep its pace).
pub async fn settle(
    response: &mut hyper::Response<super::response::Body>,
    leftover: Option<oneshot::Receiver<Leftover>>,
    max: usize,
    expects_continue: bool,
    version: hyper::Version,
) {
    let mut complete = response.status() != hyper::StatusCode::REQUEST_TIMEOUT;
    if let Some(Ok(rest)) = leftover.map(|mut l| l.try_recv()) {
        complete &= discard(rest, max, expects_continue).await;
    }
    if !complete && version < hyper::Version::HTTP_2 {
        response.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
}

/// Whether the request waits for `100 Continue` before it sends its body.
pub fn expects_continue(headers: &HeaderMap) -> bool {
    headers
        .get(hyper::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// The request's `x-api-key`, if any. A repeated header is refused (401): which copy
/// counts must never depend on a proxy's or library's choice of the first or the last.
pub fn api_key(headers: &HeaderMap) -> Result<Option<&str>> {
    let mut values = headers.get_all("x-api-key").iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(Error::Unauthorized);
    }
    Ok(first.and_then(|v| v.to_str().ok()))
}

/// Reads the whole body, refusing more than `max` bytes with 413 and a body that does
/// not arrive in time with 408.
pub async fn read_body(body: RequestBody, max: usize) -> Result<Bytes> {
    // A declared length beyond the limit is refused before a byte is read: a client
    // waiting on `Expect: 100-continue` then never sends the body at all.
    if body.size_hint().lower() > max as u64 {
        return Err(Error::PayloadTooLarge);
    }
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => match e.downcast::<BodyError>() {
            Ok(e) => Err((*e).into()),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Error::PayloadTooLarge),
            Err(e) => Err(Error::BadRequest(format!(
                "Could not read the request body: {e}"
            ))),
        },
    }
}

/// Parses a body that must be a JSON object; an empty body is `{}`.
pub fn json_object(bytes: &[u8]) -> Result<Map<String, Value>> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(mut map)) => {
            map.values_mut().for_each(whole_numbers_as_integers);
            Ok(map)
        }
        Ok(_) => Err(Error::BadRequest(
            "Request body must be a JSON object".into(),
        )),
        Err(e) => Err(Error::BadRequest(format!("Invalid JSON: {e}"))),
    }
}

/// Writes every number of `value` without a fractional part (`389.0`) as the integer it
/// is: JSON Schema counts it an integer, so a field the interface types `integer`
/// takes it, whichever way the client's JSON library prints whole numbers.
fn whole_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if !(n.is_i64() || n.is_u64()) => {
            let Some(f) = n.as_f64() else { return };
            // Within ±2^53 every whole f64 is exactly its integer.
            if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 {
                *n = serde_json::Number::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

/// Query parameters, percent-decoded. A `+` stays a `+` (it is not a space here), so a
/// timestamp offset survives even when a client forgets to encode it.
pub struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(raw: Option<&str>) -> Result<Query> {
        let mut map = HashMap::new();
        for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8()
                    .map(|c| c.into_owned())
                    .map_err(|_| Error::BadRequest("Query string is not valid UTF-8".into()))
            };
            map.insert(decode(k)?, decode(v)?);
        }
        Ok(Query(map))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Every parameter, as (name, value).
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn timestamp(&self, name: &str) -> Result<Option<Micros>> {
        match self.get(name) {
            None => Ok(None),
            Some(raw) => time::parse(raw)
                .map(Some)
                .ok_or_else(|| Error::invalid_field(name)),
        }
    }

    /// `limit`, 1 to 1000; `None` when absent.
    pub fn limit(&self) -> Result<Option<usize>> {
        match self.get("limit") {
            None => Ok(None),
            Some(raw) => match raw.parse::<usize>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(Some(n)),
                _ => Err(Error::BadRequest(format!(
                    "limit must be an integer between 1 and {MAX_LIMIT}"
                ))),
            },
        }
    }

    pub fn limit_or_default(&self) -> Result<usize> {
        Ok(self.limit()?.unwrap_or(DEFAULT_LIMIT))
    }

    /// `nextToken`; an empty value counts as absent.
    pub fn next_token(&self) -> Option<String> {
        self.get("nextToken")
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_decodes_percent_but_keeps_plus() {
        let q = Query::parse(Some(
            "updatedSince=2026-11-22T10:00:00+01:00&a=%2B1%20x&flag",
        ))
        .unwrap();
        assert_eq!(q.get("updatedSince"), Some("2026-11-22T10:00:00+01:00"));
        assert_eq!(q.get("a"), Some("+1 x"));
        assert_eq!(q.get("flag"), Some(""));
        assert!(q.timestamp("updatedSince").unwrap().is_some());
    }

    #[test]
    fn whole_numbers_in_a_body_are_integers() {
        let map =
            json_object(br#"{"a": 389.0, "b": [2.0, 2.5], "c": {"d": -7.0}, "e": 1e300}"#).unwrap();
        assert_eq!(map["a"].as_u64(), Some(389));
        assert_eq!(map["b"][0].as_u64(), Some(2));
        assert_eq!(map["b"][1].as_f64(), Some(2.5));
        assert_eq!(map["c"]["d"].as_i64(), Some(-7));
        // Beyond 2^53 a float stays what it was.
        assert!(map["e"].is_f64());
    }

    #[test]
    fn limit_is_an_integer_in_range() {
        for bad in ["0", "1001", "abc", "1.5", "-1", ""] {
            let q = Query::parse(Some(&format!("limit={bad}"))).unwrap();
            assert_eq!(
                q.limit().unwrap_err().to_string(),
                "limit must be an integer between 1 and 1000"
            );
        }
        assert_eq!(
            Query::parse(Some("limit=1000")).unwrap().limit().unwrap(),
            Some(1000)
        );
        assert_eq!(Query::parse(None).unwrap().limit_or_default().unwrap(), 100);
    }

    #[test]
    fn bodies_must_be_objects() {
        assert!(json_object(b"").unwrap().is_empty());
        assert!(json_object(b"[1]").is_err());
        assert!(json_object(b"{")
            .unwrap_err()
            .to_string()
            .starts_with("Invalid JSON"));
    }
}

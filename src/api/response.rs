//! Building responses: JSON bodies and the `{"message"}` error body (with `Allow` on a
//! 405, `Retry-After` on a 429), and the bodiless answer to a `HEAD`.

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde::Serialize;

use crate::error::Error;

/// Every response body: boxed so a handler may stream (recordings) or not.
pub type Body = BoxBody<Bytes, std::io::Error>;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

pub fn json<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(bytes) => json_bytes(status, bytes),
        Err(e) => {
            tracing::error!(error = %e, "cannot encode a response");
            error(&Error::Internal(format!("response encoding: {e}")))
        }
    }
}

/// The `{"message"}` response of `e`. Logging an internal error is the caller's part,
/// which knows the request it belongs to.
pub fn error(e: &Error) -> Response<Body> {
    let body = serde_json::json!({ "message": e.to_string() });
    let mut response = json_bytes(e.status(), body.to_string().into_bytes());
    if let Error::RateLimited { retry_after_secs }
    | Error::Throttled {
        retry_after_secs, ..
    } = e
    {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(*retry_after_secs));
    }
    if let Error::MethodNotAllowed(allowed) = e {
        if let Ok(value) = HeaderValue::from_str(&allowed.header()) {
            response.headers_mut().insert(ALLOW, value);
        }
    }
    response
}

/// The answer to `OPTIONS`: 204, the path's methods in `Allow`.
pub fn options(allowed: crate::error::Allowed) -> Response<Body> {
    let mut response = Response::new(full(Vec::new()));
    *response.status_mut() = StatusCode::NO_CONTENT;
    if let Ok(value) = HeaderValue::from_str(&allowed.header()) {
        response.headers_mut().insert(ALLOW, value);
    }
    response
}

/// A response whose body is JSON already.
pub fn json_bytes(status: StatusCode, bytes: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(full(bytes));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The answer to a `HEAD`: `response`'s status and headers, with the `Content-Length` its
/// body would have had (when known), and no body. hyper drops a HEAD answer's body over
/// HTTP/1.1 but sends it over HTTP/2, where the client takes it as a protocol error.
pub fn without_body(response: Response<Body>) -> Response<Body> {
    use hyper::body::Body as _;
    let (mut parts, body) = response.into_parts();
    if !parts.headers.contains_key(CONTENT_LENGTH) {
        if let Some(len) = body.size_hint().exact() {
            parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
        }
    }
    Response::from_parts(parts, full(Bytes::new()))
}

/// A frame of a Server-Sent Events stream, as its bytes.
pub type EventFrame = std::result::Result<hyper::body::Frame<Bytes>, std::convert::Infallible>;

/// A `text/event-stream` answer (`no-store`) of the frames `rx` receives, ending when
/// their sender is dropped: the console's live updates and a web chat visitor's stream.
pub fn event_stream(rx: tokio::sync::mpsc::Receiver<EventFrame>) -> Response<Body> {
    use hyper::header::CACHE_CONTROL;
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let body = http_body_util::StreamBody::new(body)
        .map_err(|never: std::convert::Infallible| -> std::io::Error { match never {} });
    let mut response = Response::new(BodyExt::boxed(body));
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

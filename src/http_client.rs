//! The one outbound HTTP(S) client: webhook deliveries, the compliance service's checks,
//! and (with the engine) the assistant's model server and the channel providers.
//!
//! hyper-util's pooled client over rustls, trusting the webpki roots plus an optional
//! extra CA file (receivers with a private CA). One attempt is one POST bounded by a
//! timeout that covers connecting, sending and reading the (discarded) answer. A large
//! download (a call's recording) is one GET whose timeout covers the answer's head only:
//! the caller reads the body as it streams.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use hyper::{Method, Request};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// What the receiver made of one attempt.
#[derive(Debug, Clone)]
pub struct AttemptOutcome {
    pub status: Option<u16>,
    pub error: String,
    pub retry_after: Option<Duration>,
    pub latency: Duration,
}

#[derive(Clone)]
pub struct HttpClient {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
}

/// Receivers' answers are not read beyond this unless the caller says otherwise
/// (`post_json_with`).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

impl HttpClient {
    pub fn new(timeout: Duration, ca_file: Option<&std::path::Path>) -> Result<HttpClient, String> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| format!("webhook_ca_file {}: {e}", path.display()))?;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.map_err(|e| format!("webhook_ca_file {}: {e}", path.display()))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("webhook_ca_file {}: {e}", path.display()))?;
            }
        }
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(timeout));
        http.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(HttpClient { client, timeout })
    }

    /// POSTs `body` to `url` with `headers`; never fails, the outcome says what happened.
    pub async fn post(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
    ) -> AttemptOutcome {
        let started = Instant::now();
        let result = tokio::time::timeout(
            self.timeout,
            self.send(url, headers, body, MAX_ANSWER_BYTES),
        )
        .await;
        let latency = started.elapsed();
        match result {
            Ok(Ok((status, retry_after, _))) => AttemptOutcome {
                status: Some(status),
                error: String::new(),
                retry_after,
                latency,
            },
            Ok(Err(error)) => AttemptOutcome {
                status: None,
                error: error.message,
                retry_after: None,
                latency,
            },
            Err(_) => AttemptOutcome {
                status: None,
                error: SendError::timed_out(self.timeout).message,
                retry_after: None,
                latency,
            },
        }
    }

    async fn send(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
        max_answer_bytes: usize,
    ) -> Result<(u16, Option<Duration>, Bytes), SendError> {
        let mut request = build(Method::POST, url, headers, Bytes::from(body))?;
        request
            .headers_mut()
            .entry(CONTENT_TYPE)
            .or_insert(HeaderValue::from_static("application/json"));
        let response = self.client.request(request).await.map_err(failed)?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        // Read at most a bounded part of the answer; draining lets the connection be
        // reused.
        let answer = Limited::new(response.into_body(), max_answer_bytes)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .map_err(|e| SendError {
                message: format!("reading the answer: {e}"),
                not_sent: false,
            })?;
        Ok((status, retry_after, answer))
    }

    /// POSTs JSON and returns the status and body, within `timeout` (the compliance
    /// service's call, which needs the answer).
    pub async fn post_json(
        &self,
        url: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<(u16, Bytes), String> {
        self.post_json_with(url, &[], body, timeout, MAX_ANSWER_BYTES)
            .await
    }

    /// POSTs JSON with extra `headers` and returns the status and at most
    /// `max_answer_bytes` of the body (a longer answer is an error), within `timeout`:
    /// calls that need the answer and may need credentials or a larger answer (the
    /// assistant's model server).
    pub async fn post_json_with(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
        timeout: Duration,
        max_answer_bytes: usize,
    ) -> Result<(u16, Bytes), String> {
        match tokio::time::timeout(timeout, self.send(url, headers, body, max_answer_bytes)).await {
            Ok(Ok((status, _, answer))) => Ok((status, answer)),
            Ok(Err(e)) => Err(e.message),
            Err(_) => Err(SendError::timed_out(timeout).message),
        }
    }

    /// POSTs a form (`application/x-www-form-urlencoded`) with `headers` within
    /// `timeout`; the error says whether the request surely never left (a provider
    /// send may then be retried without risking a second message).
    pub async fn post_form(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        form: Vec<u8>,
        timeout: Duration,
    ) -> Result<(u16, Bytes), SendError> {
        let mut all = headers.to_vec();
        all.push(("content-type", "application/x-www-form-urlencoded".into()));
        match tokio::time::timeout(timeout, self.send(url, &all, form, MAX_ANSWER_BYTES)).await {
            Ok(Ok((status, _, answer))) => Ok((status, answer)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(SendError::timed_out(timeout)),
        }
    }

    /// GETs `url` with `headers` and answers the status and the body, unread: `timeout`
    /// covers connecting and the answer's head; the caller bounds its reads of the body.
    pub async fn get_streaming(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        timeout: Duration,
    ) -> Result<(u16, hyper::body::Incoming), SendError> {
        let request = build(Method::GET, url, headers, Bytes::new())?;
        match tokio::time::timeout(timeout, self.client.request(request)).await {
            Ok(Ok(response)) => Ok((response.status().as_u16(), response.into_body())),
            Ok(Err(e)) => Err(failed(e)),
            Err(_) => Err(SendError::timed_out(timeout)),
        }
    }
}

/// A request with our `User-Agent` and `headers`.
fn build(
    method: Method,
    url: &str,
    headers: &[(&'static str, String)],
    body: Bytes,
) -> Result<Request<Full<Bytes>>, SendError> {
    let mut request = Request::builder()
        .method(method)
        .uri(url)
        .header(USER_AGENT, concat!("engaged/", env!("CARGO_PKG_VERSION")))
        .body(Full::new(body))
        .map_err(|e| SendError::not_sent(format!("bad request: {e}")))?;
    for (name, value) in headers {
        let value = HeaderValue::from_str(value)
            .map_err(|e| SendError::not_sent(format!("bad header {name}: {e}")))?;
        request.headers_mut().insert(*name, value);
    }
    Ok(request)
}

/// A request that got no answer: `not_sent` when it never connected.
fn failed(e: hyper_util::client::legacy::Error) -> SendError {
    SendError {
        message: describe(&e),
        not_sent: e.is_connect(),
    }
}

/// Why a request got no answer; `not_sent` when it failed before it was written (no
/// connection), so the receiver never saw it.
#[derive(Debug, Clone)]
pub struct SendError {
    pub message: String,
    pub not_sent: bool,
}

impl SendError {
    fn not_sent(message: String) -> SendError {
        SendError {
            message,
            not_sent: true,
        }
    }

    /// No answer within `timeout`: the request may have arrived.
    fn timed_out(timeout: Duration) -> SendError {
        SendError {
            message: format!("timed out after {} ms", timeout.as_millis()),
            not_sent: false,
        }
    }
}

fn describe(e: &hyper_util::client::legacy::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `Retry-After` as delay-seconds or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = when.timestamp() - chrono::Utc::now().timestamp();
    Some(Duration::from_secs(delta.max(0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_and_dates() {
        assert_eq!(parse_retry_after("120"), Some(Duration::from_secs(120)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }
}

//! The one outbound HTTP(S) client: webhook deliveries, the compliance service's checks,
//! and (with the engine) the assistant's model server and the channel providers.
//!
//! hyper-util's pooled client over rustls, trusting the webpki roots plus the
//! server-wide `outbound_ca_file` (receivers with a private CA; `outbound_tls`). A
//! failed certificate check is `tls` in the error text and `tls_certificate` in a
//! [`SendError`]: repeating it cannot help. One attempt is one POST bounded by a
//! timeout that covers connecting, sending and reading the (discarded) answer. A large
//! download (a call's recording) is one GET whose timeout covers the answer's head only:
//! the caller reads the body as it streams.
//!
//! Where it may connect is the operator's `outbound_allow_private`
//! (`outbound_address::OutboundPolicy`): names are resolved by
//! `outbound_address::Resolver`, which leaves refused addresses out before any
//! connection, and an address literal in a URL is checked before the request is built.
//! A redirect is never followed: a `3xx` is an answer like any other, handed to the
//! caller (so credentials never travel to the host a `Location` names).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use hyper::{Method, Request};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::outbound_address::{OutboundPolicy, Resolver};
use crate::outbound_tls::{is_certificate_error, OutboundTrust, TLS_CLASS};

/// What the receiver made of one attempt.
#[derive(Debug, Clone)]
pub struct AttemptOutcome {
    pub status: Option<u16>,
    pub error: String,
    pub retry_after: Option<Duration>,
    pub latency: Duration,
    /// The receiver's certificate is not trusted: the same every time, until the
    /// operator mends `outbound_ca_file` or the receiver its certificate.
    pub untrusted_certificate: bool,
}

#[derive(Clone)]
pub struct HttpClient {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector<Resolver>>, Full<Bytes>>,
    timeout: Duration,
    trust: OutboundTrust,
    policy: OutboundPolicy,
}

/// Receivers' answers are not read beyond this unless the caller says otherwise
/// (`post_json_with`).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

impl HttpClient {
    /// A client trusting the webpki roots and `ca_file` (`outbound_ca_file`), allowed
    /// every address.
    pub fn new(timeout: Duration, ca_file: Option<&std::path::Path>) -> Result<HttpClient, String> {
        HttpClient::with_policy(timeout, ca_file, OutboundPolicy::default())
    }

    /// A client trusting the webpki roots and `ca_file` (`outbound_ca_file`), reaching
    /// only the addresses `policy` allows (`outbound_allow_private`).
    pub fn with_policy(
        timeout: Duration,
        ca_file: Option<&std::path::Path>,
        policy: OutboundPolicy,
    ) -> Result<HttpClient, String> {
        let trust = OutboundTrust::load(ca_file)?.with_policy(policy);
        let roots = trust.roots();
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let mut http = HttpConnector::new_with_resolver(Resolver { policy });
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
        Ok(HttpClient {
            client,
            timeout,
            trust,
            policy,
        })
    }

    /// What this client trusts, for the clients that are not HTTP (SMTP).
    pub fn trust(&self) -> &OutboundTrust {
        &self.trust
    }

    /// Which addresses this client may reach (`outbound_allow_private`): what settings
    /// are checked against when saved.
    pub fn policy(&self) -> OutboundPolicy {
        self.policy
    }

    /// A request with our `User-Agent` and `headers`, unless its URL's host is an
    /// address literal the policy refuses (names are checked once resolved).
    fn build(
        &self,
        method: Method,
        url: &str,
        headers: &[(&'static str, String)],
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, SendError> {
        let request = build(method, url, headers, body)?;
        if let Some(host) = request.uri().host() {
            let literal = host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host);
            if let Ok(ip) = literal.parse::<std::net::IpAddr>() {
                if self.policy.refuses_ip(ip) {
                    return Err(SendError::not_sent(OutboundPolicy::refused_literal()));
                }
            }
        }
        Ok(request)
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
                untrusted_certificate: false,
            },
            Ok(Err(error)) => AttemptOutcome {
                status: None,
                untrusted_certificate: error.tls_certificate,
                error: error.message,
                retry_after: None,
                latency,
            },
            Err(_) => AttemptOutcome {
                status: None,
                error: SendError::timed_out(self.timeout).message,
                retry_after: None,
                latency,
                untrusted_certificate: false,
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
        let mut request = self.build(Method::POST, url, headers, Bytes::from(body))?;
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
                tls_certificate: false,
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
    /// `timeout`, and answers the status, `Retry-After` and the body; the error says
    /// whether the request surely never left (a provider send may then be retried
    /// without risking a second message).
    pub async fn post_form(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        form: Vec<u8>,
        timeout: Duration,
    ) -> Result<(u16, Option<Duration>, Bytes), SendError> {
        let mut all = headers.to_vec();
        all.push(("content-type", "application/x-www-form-urlencoded".into()));
        match tokio::time::timeout(timeout, self.send(url, &all, form, MAX_ANSWER_BYTES)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(SendError::timed_out(timeout)),
        }
    }

    /// Sends one request of any `method` (WebDAV's `REPORT`, `PUT`, `DELETE`, ...) with
    /// `headers` and `body`, and reads the answer whole: `timeout` covers connecting,
    /// sending and reading, and a body beyond `max_answer_bytes` is
    /// [`RequestError::TooLarge`] (the CalDAV client's calls).
    pub async fn request(
        &self,
        method: Method,
        url: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
        timeout: Duration,
        max_answer_bytes: usize,
    ) -> Result<Answer, RequestError> {
        let exchange = async {
            let request = self
                .build(method, url, headers, Bytes::from(body))
                .map_err(RequestError::Failed)?;
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| RequestError::Failed(failed(e)))?;
            let status = response.status().as_u16();
            let content_type = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let etag = response
                .headers()
                .get(hyper::header::ETAG)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = Limited::new(response.into_body(), max_answer_bytes)
                .collect()
                .await
                .map(|b| b.to_bytes())
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        RequestError::TooLarge(max_answer_bytes)
                    } else {
                        RequestError::Failed(SendError {
                            message: format!("reading the answer: {e}"),
                            not_sent: false,
                            tls_certificate: false,
                        })
                    }
                })?;
            Ok(Answer {
                status,
                content_type,
                etag,
                body,
            })
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(answer) => answer,
            Err(_) => Err(RequestError::TimedOut(timeout)),
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
        let request = self.build(Method::GET, url, headers, Bytes::new())?;
        match tokio::time::timeout(timeout, self.client.request(request)).await {
            Ok(Ok(response)) => Ok((response.status().as_u16(), response.into_body())),
            Ok(Err(e)) => Err(failed(e)),
            Err(_) => Err(SendError::timed_out(timeout)),
        }
    }
}

/// An answer read whole by [`HttpClient::request`]: its status, its `Content-Type` and
/// its body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub content_type: Option<String>,
    /// The `ETag` header, as the server wrote it (quotes included).
    pub etag: Option<String>,
    pub body: Bytes,
}

/// Why [`HttpClient::request`] got no answer it could hand back.
#[derive(Debug, Clone)]
pub enum RequestError {
    /// No answer: no connection (`not_sent`), a refused certificate, or a failure after
    /// sending.
    Failed(SendError),
    /// No whole answer within the timeout.
    TimedOut(Duration),
    /// The answer's body was longer than the bound given.
    TooLarge(usize),
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

/// A request that got no answer: `not_sent` when it never connected; a refused
/// certificate is the class `tls` alone.
fn failed(e: hyper_util::client::legacy::Error) -> SendError {
    let tls_certificate = is_certificate_error(&e);
    SendError {
        message: if tls_certificate {
            TLS_CLASS.to_string()
        } else {
            describe(&e)
        },
        not_sent: e.is_connect(),
        tls_certificate,
    }
}

/// Why a request got no answer; `not_sent` when it failed before it was written (no
/// connection), so the receiver never saw it; `tls_certificate` when the receiver's
/// certificate was not trusted (not sent, and never worth repeating).
#[derive(Debug, Clone)]
pub struct SendError {
    pub message: String,
    pub not_sent: bool,
    pub tls_certificate: bool,
}

impl SendError {
    fn not_sent(message: String) -> SendError {
        SendError {
            message,
            not_sent: true,
            tls_certificate: false,
        }
    }

    /// No answer within `timeout`: the request may have arrived.
    fn timed_out(timeout: Duration) -> SendError {
        SendError {
            message: format!("timed out after {} ms", timeout.as_millis()),
            not_sent: false,
            tls_certificate: false,
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

    /// An HTTPS server on loopback with a certificate for 127.0.0.1 issued by a CA of
    /// its own, answering 204 to every request; the CA's PEM file is in `dir`.
    async fn private_ca_server(dir: &std::path::Path) -> (u16, std::path::PathBuf) {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = params.self_signed(&ca_key).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&leaf_key, &ca, &ca_key)
            .unwrap();
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut buf = vec![0u8; 4096];
                    let _ = tls.read(&mut buf).await;
                    let _ = tls
                        .write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
                        .await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        (port, ca_file)
    }

    #[tokio::test]
    async fn a_private_ca_is_trusted_through_the_ca_file_and_refused_as_tls_without_it() {
        let dir = tempfile::tempdir().unwrap();
        let (port, ca_file) = private_ca_server(dir.path()).await;
        let url = format!("https://127.0.0.1:{port}/hook");
        let timeout = Duration::from_secs(5);
        let trusting = HttpClient::new(timeout, Some(&ca_file)).unwrap();
        let answer = trusting.post(&url, &[], b"{}".to_vec()).await;
        assert_eq!(answer.status, Some(204), "{}", answer.error);
        let plain = HttpClient::new(timeout, None).unwrap();
        let refused = plain
            .post_form(&url, &[], b"a=1".to_vec(), timeout)
            .await
            .unwrap_err();
        assert!(refused.tls_certificate && refused.not_sent, "{refused:?}");
        assert_eq!(refused.message, "tls");
        let answer = plain.post(&url, &[], b"{}".to_vec()).await;
        assert_eq!((answer.status, answer.error.as_str()), (None, "tls"));
    }

    /// A plain HTTP server on loopback answering every request with `answer`; it counts
    /// the requests it read.
    async fn counting_server(
        answer: &'static str,
    ) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let seen = std::sync::Arc::new(AtomicUsize::new(0));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let counter = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    if tcp.read(&mut buf).await.unwrap_or(0) > 0 {
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                    let _ = tcp.write_all(answer.as_bytes()).await;
                    let _ = tcp.shutdown().await;
                });
            }
        });
        (port, seen)
    }

    #[tokio::test]
    async fn a_closed_policy_dials_no_private_address_literal_or_name() {
        use std::sync::atomic::Ordering;
        let (port, seen) =
            counting_server("HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n").await;
        let timeout = Duration::from_secs(5);
        let open = HttpClient::new(timeout, None).unwrap();
        let answer = open
            .post(&format!("http://127.0.0.1:{port}/"), &[], b"{}".to_vec())
            .await;
        assert_eq!(answer.status, Some(204), "{}", answer.error);
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        let closed = HttpClient::with_policy(timeout, None, OutboundPolicy::new(false)).unwrap();
        for url in [
            format!("http://127.0.0.1:{port}/"),
            format!("http://localhost:{port}/"),
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            format!("http://2130706433:{port}/"),
        ] {
            let refused = closed
                .request(Method::GET, &url, &[], Vec::new(), timeout, 1024)
                .await
                .unwrap_err();
            let RequestError::Failed(e) = refused else {
                panic!("{url}: {refused:?}");
            };
            assert!(e.not_sent, "{url}: {e:?}");
            assert_eq!(
                crate::http_failure::Failure::of_transport(&e.message),
                crate::http_failure::Failure::Connect,
                "{url}: {}",
                e.message
            );
        }
        assert_eq!(seen.load(Ordering::SeqCst), 1, "nothing more reached it");
    }

    #[tokio::test]
    async fn a_redirect_is_an_answer_never_followed() {
        use std::sync::atomic::Ordering;
        let (elsewhere, seen_elsewhere) =
            counting_server("HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n").await;
        let redirect: &'static str = Box::leak(
            format!(
                "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{elsewhere}/steal\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            .into_boxed_str(),
        );
        let (port, _) = counting_server(redirect).await;
        let client = HttpClient::new(Duration::from_secs(5), None).unwrap();
        let answer = client
            .request(
                Method::GET,
                &format!("http://127.0.0.1:{port}/cal/"),
                &[("authorization", "Basic c2VjcmV0".into())],
                Vec::new(),
                Duration::from_secs(5),
                1024,
            )
            .await
            .unwrap();
        assert_eq!(answer.status, 302);
        assert_eq!(seen_elsewhere.load(Ordering::SeqCst), 0);
    }

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

//! The edge of the service: refusals of requests that carry a body reach HTTP/2 and
//! HTTP/1.1 clients as answers (not stream or connection resets), bodies that do not
//! arrive in time get 408, one client address cannot hold every connection, a repeated
//! `x-api-key` is refused, plain HTTP on the HTTPS port gets a clear answer, and the
//! generated certificate covers the configured names.
//!
//! Every wait is bounded generously: these tests prove that an answer comes at all, never
//! how fast.

use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, SizeHint};
use hyper::{Method, Request};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use engaged::testkit::https::https_client_over;
use engaged::testkit::{tls_trusting, Response, TestServer, Versions};

use crate::answers::*;
use crate::requests::*;

/// The bound on any one answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

type BodyClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, BoxBody<Bytes, Infallible>>;

/// A client speaking only HTTP/2 (`h2`) or only HTTP/1.1, from `local` when given.
fn client(ts: &TestServer, h2: bool, local: Option<IpAddr>) -> BodyClient {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_local_address(local);
    let versions = if h2 { Versions::Http2 } else { Versions::Http1 };
    https_client_over(&ts.cert(), versions, http)
}

async fn send(
    client: &BodyClient,
    ts: &TestServer,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: BoxBody<Bytes, Infallible>,
) -> Response {
    let mut builder = Request::builder()
        .method(method)
        .uri(format!("{}{path}", ts.base));
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(body).expect("request");
    let answer = async {
        let response = client
            .request(request)
            .await
            .unwrap_or_else(|e| panic!("{path}: no answer but a transport error: {e:?}"));
        Response::read(response).await
    };
    tokio::time::timeout(ANSWER_WITHIN, answer)
        .await
        .unwrap_or_else(|_| panic!("{path}: no answer within {ANSWER_WITHIN:?}"))
}

/// A body sent in `chunks` pieces of `size` bytes with a pause before each.
struct Trickle {
    chunks: usize,
    size: usize,
    pause: Duration,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Trickle {
    fn new(chunks: usize, size: usize, pause: Duration) -> Trickle {
        Trickle {
            chunks,
            size,
            pause,
            sleep: None,
        }
    }

    fn boxed(self) -> BoxBody<Bytes, Infallible> {
        BodyExt::boxed(self)
    }
}

impl hyper::body::Body for Trickle {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.chunks == 0 {
            return Poll::Ready(None);
        }
        let pause = self.pause;
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(pause)));
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.sleep = None;
        self.chunks -= 1;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![b' '; self.size])))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact((self.chunks * self.size) as u64)
    }
}

/// A body of `first` bytes that then never ends, announcing `declared` bytes.
struct Stall {
    first: Option<Bytes>,
    declared: Option<u64>,
}

impl hyper::body::Body for Stall {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.first.take() {
            Some(bytes) => Poll::Ready(Some(Ok(Frame::data(bytes)))),
            None => Poll::Pending,
        }
    }

    fn size_hint(&self) -> SizeHint {
        self.declared.map(SizeHint::with_exact).unwrap_or_default()
    }
}

// ---- refusals of requests that carry a body ------------------------------------------

/// One refusal to provoke: a request, the body it carries, and the expected answer.
struct Refusal<'a> {
    method: &'a str,
    path: &'a str,
    headers: Vec<(&'a str, &'a str)>,
    /// Pieces of the body, sent with a pause before each.
    pieces: usize,
    /// Whether the body announces its length (otherwise HTTP/1.1 sends it chunked).
    sized: bool,
    status: u16,
    message: &'a str,
}

const PIECE: usize = 4096;

/// A refusal of a 48 KiB body in 12 pieces.
fn refusal<'a>(
    method: &'a str,
    path: &'a str,
    headers: Vec<(&'a str, &'a str)>,
    status: u16,
    message: &'a str,
) -> Refusal<'a> {
    Refusal {
        method,
        path,
        headers,
        pieces: 12,
        sized: true,
        status,
        message,
    }
}

/// Sends `refusal` on an HTTP/2 connection of its own, with the h2 library, so that a
/// stream reset is seen rather than smoothed over: every piece of the body must be
/// accepted (no reset while it is still being sent) and the answer must arrive whole.
async fn refused_over_h2(ts: &TestServer, refusal: &Refusal<'_>) -> (u16, String) {
    let tls = tls_connect(ts, "localhost", Some(b"h2"))
        .await
        .expect("tls");
    let (client, connection) = h2::client::handshake(tls).await.expect("h2 handshake");
    tokio::spawn(connection);
    let mut client = client.ready().await.expect("h2 ready");
    let mut request = hyper::http::Request::builder()
        .method(refusal.method)
        .uri(format!("{}{}", ts.base, refusal.path));
    for (name, value) in &refusal.headers {
        request = request.header(*name, *value);
    }
    if refusal.sized {
        request = request.header("content-length", (refusal.pieces * PIECE).to_string());
    }
    let (answer, mut stream) = client
        .send_request(request.body(()).expect("request"), false)
        .expect("send request");
    for i in 0..refusal.pieces {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let last = i + 1 == refusal.pieces;
        if let Err(e) = stream.send_data(Bytes::from(vec![b' '; PIECE]), last) {
            panic!(
                "{} {}: the stream was reset while the body was being sent: {e}",
                refusal.method, refusal.path
            );
        }
    }
    let answer = tokio::time::timeout(ANSWER_WITHIN, async {
        let response = answer.await.expect("an answer, not a reset");
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut bytes = Vec::new();
        while let Some(data) = body.data().await {
            let data = data.expect("the answer's body, not a reset");
            let _ = body.flow_control().release_capacity(data.len());
            bytes.extend_from_slice(&data);
        }
        (status, String::from_utf8_lossy(&bytes).into_owned())
    })
    .await
    .expect("answered in time");
    answer
}

/// Reads one HTTP/1.1 response (with a `content-length`) from `stream`.
async fn read_response(stream: &mut (impl AsyncReadExt + Unpin)) -> (u16, String, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).await.expect("read the answer");
        assert!(n == 1, "the connection closed before an answer: {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head[9..12].parse().expect("status");
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .expect("content-length");
    let mut body = vec![0u8; length];
    stream
        .read_exact(&mut body)
        .await
        .expect("the answer's body");
    (status, head, String::from_utf8_lossy(&body).into_owned())
}

/// Sends `refusal` on `stream`, an HTTP/1.1 connection kept open across refusals: the
/// answer must arrive, and the connection must stay usable (the body was read).
async fn refused_over_http1(
    stream: &mut (impl AsyncReadExt + AsyncWriteExt + Unpin),
    refusal: &Refusal<'_>,
) -> (u16, String) {
    let mut head = format!(
        "{} {} HTTP/1.1\r\nhost: localhost\r\n",
        refusal.method, refusal.path
    );
    for (name, value) in &refusal.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if refusal.sized {
        head.push_str(&format!(
            "content-length: {}\r\n\r\n",
            refusal.pieces * PIECE
        ));
    } else {
        head.push_str("transfer-encoding: chunked\r\n\r\n");
    }
    let exchange = async {
        stream.write_all(head.as_bytes()).await.expect("write head");
        for _ in 0..refusal.pieces {
            tokio::time::sleep(Duration::from_millis(2)).await;
            let piece = vec![b' '; PIECE];
            if refusal.sized {
                stream.write_all(&piece).await.expect("write body");
            } else {
                let chunk = [
                    format!("{PIECE:x}\r\n").into_bytes(),
                    piece,
                    b"\r\n".to_vec(),
                ]
                .concat();
                stream.write_all(&chunk).await.expect("write body");
            }
            stream.flush().await.expect("flush");
        }
        if !refusal.sized {
            stream
                .write_all(b"0\r\n\r\n")
                .await
                .expect("write last chunk");
        }
        let (status, head, body) = read_response(stream).await;
        assert!(
            !head.to_lowercase().contains("connection: close"),
            "{} {}: the connection is kept: {head}",
            refusal.method,
            refusal.path
        );
        (status, body)
    };
    tokio::time::timeout(ANSWER_WITHIN, exchange)
        .await
        .expect("answered in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_of_requests_with_a_body_reach_http2_and_http1_clients() {
    const MAX_BODY: usize = 64 * 1024;
    const TRIES: usize = 6;
    let ts = TestServer::start_with(|c| c.max_body_bytes = MAX_BODY).await;
    let read = ts.key("acme", "read").await;
    let write = ts.key("acme", "write").await;
    let json = ("content-type", "application/json");
    let mut cases = vec![
        refusal("POST", "/v1/leads", vec![json], 401, "Unauthorized"),
        refusal(
            "POST",
            "/v1/leads",
            vec![json, ("x-api-key", "ek_not_a_key")],
            403,
            "Forbidden",
        ),
        refusal(
            "POST",
            "/v1/leads",
            vec![json, ("x-api-key", &read)],
            403,
            "Forbidden",
        ),
        refusal(
            "POST",
            "/v1/no-such-thing",
            vec![json, ("x-api-key", &write)],
            404,
            "Not found",
        ),
        refusal(
            "PATCH",
            "/v1/leads",
            vec![json, ("x-api-key", &write)],
            405,
            "Method not allowed",
        ),
        // A handler that never reads its body.
        refusal(
            "POST",
            "/v1/leads/nobody/turn-off",
            vec![json, ("x-api-key", &write)],
            404,
            "Resource not found: Lead with id nobody",
        ),
        refusal(
            "PUT",
            "/v1/calls/c1/recording",
            vec![("x-api-key", &write)],
            415,
            "Content-Type must be audio/*",
        ),
        refusal(
            "PUT",
            "/v1/calls/missing/recording",
            vec![("content-type", "audio/mpeg"), ("x-api-key", &write)],
            404,
            "Call not found",
        ),
    ];
    // Read up to the limit and refused past it; the rest (within the limit) discarded.
    cases.push(Refusal {
        pieces: 24,
        sized: false,
        ..refusal(
            "POST",
            "/v1/leads",
            vec![json, ("x-api-key", &write)],
            413,
            "Request body too large",
        )
    });
    for case in &cases {
        let what = format!("{} {}", case.method, case.path);
        let expected = json!({ "message": case.message }).to_string();
        for _ in 0..TRIES {
            let (status, body) = refused_over_h2(&ts, case).await;
            assert_eq!(
                (status, body.as_str()),
                (case.status, expected.as_str()),
                "{what} over HTTP/2"
            );
        }
        let mut stream = tls_connect(&ts, "localhost", None).await.expect("tls");
        for _ in 0..TRIES {
            let (status, body) = refused_over_http1(&mut stream, case).await;
            assert_eq!(
                (status, body.as_str()),
                (case.status, expected.as_str()),
                "{what} over HTTP/1.1"
            );
        }
    }
    // The server is none the worse.
    let r = ts
        .request(Method::GET, "/healthz", None, None, Vec::new())
        .await;
    assert_eq!(r.status, 200);
}

// ---- slow bodies -----------------------------------------------------------------------

/// A TLS connection to the server offering only `alpn` (none: the server picks HTTP/1.1).
async fn tls_connect(
    ts: &TestServer,
    name: &str,
    alpn: Option<&[u8]>,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let mut config = tls_trusting(&ts.data_dir.join("tls/cert.pem"));
    if let Some(alpn) = alpn {
        config.alpn_protocols = vec![alpn.to_vec()];
    }
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(ts.server.local_addr()).await?;
    let name = rustls::pki_types::ServerName::try_from(name.to_string())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    connector.connect(name, tcp).await
}

/// Reads until the peer closes (or errors), within the bound; returns what came.
async fn read_until_closed(stream: &mut (impl AsyncReadExt + Unpin)) -> String {
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(ANSWER_WITHIN, read)
        .await
        .unwrap_or_else(|_| panic!("the connection was not closed within {ANSWER_WITHIN:?}"));
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_body_that_does_not_arrive_in_time_is_408_and_closes_the_connection() {
    let ts = TestServer::start_with(|c| c.limits.body_read_timeout = Duration::from_secs(1)).await;
    let write = ts.key("acme", "write").await;

    // HTTP/1.1: 100,000 bytes announced, one sent.
    let mut stream = tls_connect(&ts, "localhost", None).await.expect("tls");
    let head = format!(
        "POST /v1/leads HTTP/1.1\r\nhost: localhost\r\nx-api-key: {write}\r\n\
         content-type: application/json\r\ncontent-length: 100000\r\n\r\n{{"
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.flush().await.expect("flush");
    let answer = read_until_closed(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.to_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert!(
        answer.ends_with(r#"{"message":"Request body not received in time"}"#),
        "{answer}"
    );

    // HTTP/2: the same body on a stream.
    let h2 = client(&ts, true, None);
    let body = Stall {
        first: Some(Bytes::from_static(b"{")),
        declared: Some(100_000),
    };
    let r = send(
        &h2,
        &ts,
        Method::POST,
        "/v1/leads",
        &[("x-api-key", &write), ("content-type", "application/json")],
        BodyExt::boxed(body),
    )
    .await;
    assert_error(&r, 408, "Request body not received in time");

    // Nothing was created, and normal requests go on.
    let r = ts
        .get(
            &write,
            &format!("/v1/leads?updatedSince={}", engaged::testkit::enc(EPOCH)),
        )
        .await;
    assert_eq!(expect(&r, 200)["leads"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_upload_slower_than_the_minimum_rate_is_408() {
    let ts = TestServer::start_with(|c| {
        c.limits.body_read_timeout = Duration::from_secs(1);
        c.limits.recording_min_bytes_per_second = 200_000;
    })
    .await;
    let write = ts.key("acme", "write").await;
    let read = ts.key("acme", "read").await;
    reachable_lead(&ts, &write, "L1").await;
    let call = json!({"leadId": "L1", "direction": "OUTBOUND", "callStatus": "COMPLETED"});
    expect(&ts.put(&write, "/v1/calls/c1", &call).await, 201);
    let headers = [
        ("x-api-key", write.as_str()),
        ("content-type", "audio/mpeg"),
    ];

    // About 10 KB/s, far below the 200 KB/s asked for, on both protocols.
    for h2 in [true, false] {
        let client = client(&ts, h2, None);
        let slow = Trickle::new(1000, 1024, Duration::from_millis(100)).boxed();
        let r = send(
            &client,
            &ts,
            Method::PUT,
            "/v1/calls/c1/recording",
            &headers,
            slow,
        )
        .await;
        assert_error(&r, 408, "Request body not received in time");
    }
    assert_error(
        &ts.get(&read, "/v1/calls/c1/recording").await,
        404,
        "Recording not found",
    );

    // An upload that keeps up is stored.
    let h2 = client(&ts, true, None);
    let whole = BodyExt::boxed(Full::new(Bytes::from(vec![7u8; 300_000])));
    let r = send(
        &h2,
        &ts,
        Method::PUT,
        "/v1/calls/c1/recording",
        &headers,
        whole,
    )
    .await;
    assert_eq!(expect(&r, 201)["sizeBytes"], 300_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_below_the_minimum_rate_is_408_long_before_its_deadline() {
    // The whole-body deadline is far away: only the minimum rate can end these bodies.
    let ts = TestServer::start_with(|c| {
        c.limits.body_read_timeout = Duration::from_secs(600);
        c.limits.body_min_bytes_per_second = 1024;
    })
    .await;
    let write = ts.key("acme", "write").await;
    // A byte every half second, to the API and to the console's sign-in form.
    for (path, content_type) in [
        ("/v1/leads", "application/json"),
        ("/console/login", "application/x-www-form-urlencoded"),
    ] {
        let mut stream = tls_connect(&ts, "localhost", None).await.expect("tls");
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: localhost\r\nx-api-key: {write}\r\n\
             sec-fetch-site: same-origin\r\ncontent-type: {content_type}\r\n\
             content-length: 100000\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.expect("write");
        let (mut reader, mut writer) = tokio::io::split(stream);
        let trickle = async move {
            loop {
                if writer.write_all(b" ").await.is_err() || writer.flush().await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        };
        let trickling = tokio::spawn(trickle);
        // The answer comes while the client still trickles.
        let answer = read_until_closed(&mut reader).await;
        trickling.abort();
        assert!(answer.starts_with("HTTP/1.1 408"), "{path}: {answer}");
    }
    let r = ts
        .get(
            &write,
            &format!("/v1/leads?updatedSince={}", engaged::testkit::enc(EPOCH)),
        )
        .await;
    assert_eq!(expect(&r, 200)["leads"], json!([]));
}

/// Clients that send a request head and then hold their bodies cannot take every
/// connection: bodies still arriving hold a quarter of the table (a quarter of the cap
/// per address), and a new one beyond that ends the oldest with 408.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_still_arriving_cannot_crowd_out_a_new_client() {
    let ts = TestServer::start_with(|c| {
        c.limits.max_connections = 16;
        c.limits.max_connections_per_ip = 8;
        c.limits.body_read_timeout = Duration::from_secs(600);
    })
    .await;
    let write = ts.key("acme", "write").await;
    // Two addresses each open eight requests whose bodies stall after one byte.
    let mut stalled = Vec::new();
    for address in ["127.0.0.1", "127.0.0.3"] {
        let local: IpAddr = address.parse().expect("ip");
        for _ in 0..8 {
            let tcp = tokio::net::TcpSocket::new_v4().expect("socket");
            tcp.bind(std::net::SocketAddr::new(local, 0)).expect("bind");
            let Ok(tcp) = tcp.connect(ts.server.local_addr()).await else {
                continue;
            };
            let config = tls_trusting(&ts.data_dir.join("tls/cert.pem"));
            let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
            let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
            let Ok(Ok(mut stream)) =
                tokio::time::timeout(Duration::from_secs(2), connector.connect(name, tcp)).await
            else {
                continue;
            };
            let head = format!(
                "POST /v1/leads HTTP/1.1\r\nhost: localhost\r\nx-api-key: {write}\r\n\
                 content-type: application/json\r\ncontent-length: 1000\r\n\r\n{{"
            );
            if stream.write_all(head.as_bytes()).await.is_ok() {
                let _ = stream.flush().await;
                stalled.push(stream);
            }
        }
    }
    // A new client from a third address is answered, body and all.
    let other: IpAddr = "127.0.0.2".parse().expect("ip");
    let fresh = client(&ts, false, Some(other));
    let lead = json!({"id": "L1", "firstName": "Ana", "phone": "+15125550100"}).to_string();
    let r = send(
        &fresh,
        &ts,
        Method::POST,
        "/v1/leads",
        &[("x-api-key", &write), ("content-type", "application/json")],
        BodyExt::boxed(Full::new(Bytes::from(lead))),
    )
    .await;
    assert_eq!(r.status, 201, "{}", text(&r));
    // At most a quarter of the table still holds a body: the others were ended (408).
    let mut ended = 0;
    for stream in &mut stalled {
        let mut buf = [0u8; 12];
        if let Ok(Ok(n)) =
            tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await
        {
            if n == 0 || buf[..n].starts_with(b"HTTP/1.1 408") {
                ended += 1;
            }
        }
    }
    assert!(
        stalled.len() - ended <= 4,
        "{} of {} stalled bodies still held",
        stalled.len() - ended,
        stalled.len()
    );
}

/// A body over the limit, written whole before the client reads (as python-requests
/// does), gets its 413 rather than a reset while it writes: the server reads and throws
/// away a bounded amount past the limit before answering, then closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_just_over_the_limit_written_whole_gets_its_413() {
    const MAX_BODY: usize = 64 * 1024;
    let ts = TestServer::start_with(|c| c.max_body_bytes = MAX_BODY).await;
    let write = ts.key("acme", "write").await;
    for sized in [true, false] {
        let mut stream = tls_connect(&ts, "localhost", None).await.expect("tls");
        let body = vec![b' '; MAX_BODY + 200 * 1024];
        let framing = if sized {
            format!("content-length: {}", body.len())
        } else {
            "transfer-encoding: chunked".to_string()
        };
        let head = format!(
            "POST /v1/leads HTTP/1.1\r\nhost: localhost\r\nx-api-key: {write}\r\n\
             content-type: application/json\r\n{framing}\r\n\r\n"
        );
        let exchange = async {
            stream.write_all(head.as_bytes()).await.expect("write head");
            for piece in body.chunks(16 * 1024) {
                if sized {
                    stream
                        .write_all(piece)
                        .await
                        .expect("the body is accepted whole");
                } else {
                    let chunk = [
                        format!("{:x}\r\n", piece.len()).into_bytes(),
                        piece.to_vec(),
                        b"\r\n".to_vec(),
                    ]
                    .concat();
                    stream
                        .write_all(&chunk)
                        .await
                        .expect("the body is accepted whole");
                }
            }
            if !sized {
                stream.write_all(b"0\r\n\r\n").await.expect("last chunk");
            }
            stream.flush().await.expect("flush");
            read_response(&mut stream).await
        };
        let (status, head, body) = tokio::time::timeout(ANSWER_WITHIN, exchange)
            .await
            .expect("answered in time");
        assert_eq!(status, 413, "{head}{body}");
        assert!(head.to_lowercase().contains("connection: close"), "{head}");
    }
}

// ---- connections per address -----------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_hold_every_connection() {
    let ts = TestServer::start_with(|c| {
        // A quarter of 16 may sit without a request head: as many as one address holds.
        c.limits.max_connections = 16;
        c.limits.max_connections_per_ip = 4;
        // Idle connections would otherwise stay for a minute.
        c.limits.header_read_timeout = Duration::from_secs(60);
    })
    .await;
    let key = ts.key("acme", "read").await;

    // 127.0.0.1 opens twelve connections and sends nothing on them: four are served (and
    // held, idle), the others are closed at once.
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..12 {
        match tokio::time::timeout(ANSWER_WITHIN, tls_connect(&ts, "localhost", None)).await {
            Ok(Ok(stream)) => held.push(stream),
            Ok(Err(_)) => refused += 1,
            Err(_) => panic!("a connection was neither served nor closed within {ANSWER_WITHIN:?}"),
        }
    }
    assert_eq!(
        (held.len(), refused),
        (4, 8),
        "served and refused connections"
    );

    // Another address is served at once, however many requests it makes.
    let other: IpAddr = "127.0.0.2".parse().expect("ip");
    let elsewhere = client(&ts, false, Some(other));
    for _ in 0..5 {
        let r = send(
            &elsewhere,
            &ts,
            Method::GET,
            "/healthz",
            &[("x-api-key", &key)],
            BodyExt::boxed(Full::new(Bytes::new())),
        )
        .await;
        assert_eq!(r.status, 200, "{}", text(&r));
    }

    // Once 127.0.0.1 lets go, it is served again.
    drop(held);
    let local = client(&ts, false, None);
    let deadline = tokio::time::Instant::now() + ANSWER_WITHIN;
    loop {
        let request = Request::get(format!("{}/healthz", ts.base))
            .body(BodyExt::boxed(Full::new(Bytes::new())))
            .expect("request");
        match tokio::time::timeout(ANSWER_WITHIN, local.request(request)).await {
            Ok(Ok(response)) => {
                assert_eq!(response.status(), 200);
                break;
            }
            _ if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            other => panic!("127.0.0.1 is not served again: {other:?}"),
        }
    }
}

// ---- the API key -------------------------------------------------------------------------

/// Slow clients under the per-address cap cannot fill the table: connections without a
/// request head hold at most a quarter of it, and a full table closes the oldest of them
/// to make room for a new client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_without_a_request_head_cannot_crowd_out_a_new_client() {
    let ts = TestServer::start_with(|c| {
        c.limits.max_connections = 16;
        // Idle connections would otherwise stay for a minute.
        c.limits.header_read_timeout = Duration::from_secs(60);
    })
    .await;
    // Twelve connections that made a request and stay open (keep-alive)...
    let mut served = Vec::new();
    for _ in 0..12 {
        let mut stream = tls_connect(&ts, "localhost", None).await.expect("tls");
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
            .await
            .expect("write");
        assert_eq!(read_response(&mut stream).await.0, 200);
        served.push(stream);
    }
    // ...then forty that never send a request head: TCP only, or TLS done. Those closed
    // to make room may fail their handshake; that is the point.
    let mut idle_tcp = Vec::new();
    let mut idle_tls = Vec::new();
    for i in 0..40 {
        if i % 2 == 0 {
            let tcp = tokio::net::TcpStream::connect(ts.server.local_addr()).await;
            idle_tcp.push(tcp.expect("tcp"));
        } else if let Ok(Ok(stream)) =
            tokio::time::timeout(Duration::from_secs(2), tls_connect(&ts, "localhost", None)).await
        {
            idle_tls.push(stream);
        }
    }
    // A new client is served.
    let fresh = client(&ts, false, None);
    let request = Request::get(format!("{}/healthz", ts.base))
        .body(BodyExt::boxed(Full::new(Bytes::new())))
        .expect("request");
    let response = tokio::time::timeout(ANSWER_WITHIN, fresh.request(request))
        .await
        .expect("the new client was served in time")
        .expect("response");
    assert_eq!(response.status(), 200);
    // The connections that carry requests were kept.
    for stream in &mut served {
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
            .await
            .expect("write");
        assert_eq!(read_response(stream).await.0, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_api_key_header_is_401() {
    let ts = TestServer::start().await;
    let first = ts.key("acme", "write").await;
    let second = ts.key("acme", "admin").await;
    let path = format!("/v1/leads?updatedSince={}", engaged::testkit::enc(EPOCH));
    for h2 in [true, false] {
        let client = client(&ts, h2, None);
        for (a, b) in [(&first, &second), (&second, &first), (&first, &first)] {
            let r = send(
                &client,
                &ts,
                Method::GET,
                &path,
                &[("x-api-key", a), ("x-api-key", b)],
                BodyExt::boxed(Full::new(Bytes::new())),
            )
            .await;
            assert_error(&r, 401, "Unauthorized");
        }
        let r = send(
            &client,
            &ts,
            Method::POST,
            "/v1/leads",
            &[
                ("x-api-key", &first),
                ("x-api-key", &first),
                ("content-type", "application/json"),
            ],
            BodyExt::boxed(Full::new(Bytes::from_static(b"{\"id\": \"L1\"}"))),
        )
        .await;
        assert_error(&r, 401, "Unauthorized");
    }
    // One copy of either key works.
    assert_eq!(ts.get(&first, &path).await.status, 200);
}

// ---- plain HTTP on the HTTPS port ----------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_on_the_https_port_is_told_to_use_https() {
    let ts = TestServer::start().await;
    for request in [
        "GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n",
        "POST /v1/leads HTTP/1.1\r\nhost: localhost\r\ncontent-length: 2\r\n\r\n{}",
    ] {
        let mut tcp = tokio::net::TcpStream::connect(ts.server.local_addr())
            .await
            .expect("connect");
        tcp.write_all(request.as_bytes()).await.expect("write");
        let answer = read_until_closed(&mut tcp).await;
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(body).expect("json"),
            json!({"message": "This port speaks HTTPS: use https:// instead of http://"})
        );
    }
    // TLS on the same port is unaffected.
    let r = ts
        .request(Method::GET, "/healthz", None, None, Vec::new())
        .await;
    assert_eq!(r.status, 200);
}

// ---- certificate names -----------------------------------------------------------------------

/// The machine's host name, as the server reads it.
fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim().to_ascii_lowercase();
    let dns = matches!(
        rustls::pki_types::ServerName::try_from(name.as_str()),
        Ok(rustls::pki_types::ServerName::DnsName(_))
    );
    (dns && name != "localhost").then_some(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_certificate_covers_the_configured_names() {
    let ts = TestServer::start_with(|c| {
        c.tls_names = vec!["engaged.example.test".into(), "10.9.8.7".into()];
    })
    .await;
    let mut names = vec![
        "localhost",
        "127.0.0.1",
        "::1",
        "engaged.example.test",
        "10.9.8.7",
    ];
    let host = host_name();
    names.extend(host.as_deref());
    for name in names {
        let stream = tls_connect(&ts, name, None).await;
        assert!(stream.is_ok(), "{name}: {:?}", stream.err());
    }
    let Err(err) = tls_connect(&ts, "other.example.test", None).await else {
        panic!("a name the certificate does not cover is accepted");
    };
    assert!(
        err.to_string().contains("NotValidForName")
            || err.to_string().to_lowercase().contains("not valid for"),
        "{err}"
    );
}

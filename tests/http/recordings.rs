//! Call recordings: streamed uploads, signed expiring links, ranges, replacement,
//! deletion, limits, and a 100 MiB download in bounded memory.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::{Method, Request};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use engaged::testkit::{https_client, Org, Response, TestServer, Versions};

use crate::answers::*;
use crate::requests::*;

const MIB: u64 = 1024 * 1024;

type StreamClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, BoxBody<Bytes, Infallible>>;

/// A client whose request bodies may stream (the harness's sends whole buffers).
fn client(ts: &TestServer) -> StreamClient {
    https_client(&ts.cert(), Versions::Both)
}

/// Deterministic pseudo-random bytes (xorshift64*), produced block by block.
struct Noise {
    state: u64,
    remaining: u64,
    /// Whether the body announces its length (a `content-length`).
    sized: bool,
}

impl Noise {
    fn new(seed: u64, len: u64) -> Noise {
        Noise {
            state: seed | 1,
            remaining: len,
            sized: true,
        }
    }

    fn without_length(mut self) -> Noise {
        self.sized = false;
        self
    }

    fn next_block(&mut self, max: usize) -> Option<Bytes> {
        if self.remaining == 0 {
            return None;
        }
        let n = (max as u64).min(self.remaining) as usize;
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            self.state ^= self.state >> 12;
            self.state ^= self.state << 25;
            self.state ^= self.state >> 27;
            out.extend_from_slice(&self.state.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
        }
        out.truncate(n);
        self.remaining -= n as u64;
        Some(Bytes::from(out))
    }

    fn collect(mut self) -> Vec<u8> {
        let mut all = Vec::with_capacity(self.remaining as usize);
        while let Some(block) = self.next_block(64 * 1024) {
            all.extend_from_slice(&block);
        }
        all
    }

    fn sha256(mut self) -> String {
        let mut hasher = Sha256::new();
        while let Some(block) = self.next_block(64 * 1024) {
            hasher.update(&block);
        }
        hex::encode(hasher.finalize())
    }
}

impl hyper::body::Body for Noise {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.next_block(64 * 1024).map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        if self.sized {
            SizeHint::with_exact(self.remaining)
        } else {
            SizeHint::default()
        }
    }
}

/// A body that sends `left` bytes of noise and then stalls forever, like a client that
/// went silent mid-upload.
struct Stalling {
    noise: Noise,
    left: u64,
}

impl hyper::body::Body for Stalling {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return Poll::Pending;
        }
        let max = self.left.min(64 * 1024) as usize;
        let block = self.noise.next_block(max);
        self.left -= block.as_ref().map_or(0, |b| b.len() as u64);
        Poll::Ready(block.map(|b| Ok(Frame::data(b))))
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Sends a request to a path of the server or to an absolute URL; collects the answer.
async fn send(
    ts: &TestServer,
    method: Method,
    target: &str,
    headers: &[(&str, &str)],
    body: BoxBody<Bytes, Infallible>,
) -> Response {
    let response = send_streaming(ts, method, target, headers, body).await;
    Response::read(response).await
}

async fn send_streaming(
    ts: &TestServer,
    method: Method,
    target: &str,
    headers: &[(&str, &str)],
    body: BoxBody<Bytes, Infallible>,
) -> hyper::Response<Incoming> {
    let uri = if target.starts_with('/') {
        format!("{}{target}", ts.base)
    } else {
        target.to_string()
    };
    let mut builder = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    client(ts)
        .request(builder.body(body).expect("request"))
        .await
        .expect("response")
}

fn empty() -> BoxBody<Bytes, Infallible> {
    Empty::new().boxed()
}

fn bytes(data: Vec<u8>) -> BoxBody<Bytes, Infallible> {
    Full::new(Bytes::from(data)).boxed()
}

fn recording_path(call: &str) -> String {
    format!("/v1/calls/{call}/recording")
}

async fn upload(ts: &TestServer, key: &str, call: &str, ctype: &str, data: Vec<u8>) -> Response {
    send(
        ts,
        Method::PUT,
        &recording_path(call),
        &[("x-api-key", key), ("content-type", ctype)],
        bytes(data),
    )
    .await
}

/// The link to a call's recording.
async fn link(ts: &TestServer, key: &str, call: &str) -> Value {
    expect(&ts.get(key, &recording_path(call)).await, 200)
}

async fn download(ts: &TestServer, url: &str, headers: &[(&str, &str)]) -> Response {
    send(ts, Method::GET, url, headers, empty()).await
}

/// A server with organization `acme` (write, read and admin keys), lead L1 and call
/// `call-1` on it.
type Setup = Org;

async fn setup_with(adjust: impl FnOnce(&mut engaged::config::Config)) -> Setup {
    let s = Org::start_with(adjust).await;
    reachable_lead(&s.ts, &s.write, "L1").await;
    put_call(&s.ts, &s.write, "call-1").await;
    s
}

async fn setup() -> Setup {
    setup_with(|_| {}).await
}

async fn put_call(ts: &TestServer, key: &str, id: &str) {
    let body = json!({"leadId": "L1", "direction": "OUTBOUND", "callStatus": "COMPLETED"});
    let r = ts.put(key, &format!("/v1/calls/{id}"), &body).await;
    assert!(r.status == 201 || r.status == 200, "put call: {}", text(&r));
}

fn chunk_rows(ts: &TestServer) -> u64 {
    ts.server
        .store()
        .read()
        .expect("read")
        .recording_chunk_rows()
        .expect("rows")
}

/// Waits until the store holds `n` chunk rows (a failed upload is discarded in the
/// background, right after its answer).
async fn wait_for_chunk_rows(ts: &TestServer, n: u64) {
    for _ in 0..200 {
        if chunk_rows(ts) == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(chunk_rows(ts), n, "chunk rows");
}

fn header<'a>(r: &'a Response, name: &str) -> &'a str {
    r.headers
        .get(name)
        .unwrap_or_else(|| panic!("header {name} missing"))
        .to_str()
        .expect("ascii header")
}

#[tokio::test]
async fn a_multi_megabyte_recording_round_trips() {
    let s = setup().await;
    let data = Noise::new(7, 3 * MIB + 12_345).collect();
    let r = upload(&s.ts, &s.write, "call-1", "audio/mpeg", data.clone()).await;
    let meta = expect(&r, 201);
    assert_eq!(meta["callId"], "call-1");
    assert_eq!(meta["contentType"], "audio/mpeg");
    assert_eq!(meta["sizeBytes"], data.len() as u64);
    assert_eq!(meta["sha256"], sha256_hex(&data));
    assert_ts_shape(str_of(&meta["uploadedAt"]));
    assert_eq!(meta.as_object().unwrap().len(), 5, "{meta}");

    // A read key may ask for the link; the link itself needs no key.
    let l = link(&s.ts, &s.read, "call-1").await;
    assert_eq!(l.as_object().unwrap().len(), 4, "{l}");
    assert_eq!(l["contentType"], "audio/mpeg");
    assert_eq!(l["sizeBytes"], data.len() as u64);
    let expires = time_of(&l["expiresAt"]);
    let ttl = expires - chrono::Utc::now();
    assert!(
        ttl > chrono::Duration::seconds(890) && ttl <= chrono::Duration::seconds(901),
        "15 minutes: {ttl}"
    );
    let url = str_of(&l["url"]);
    assert!(
        url.starts_with(&format!("{}/v1/recordings/", s.ts.base)),
        "link on the request's host: {url}"
    );

    let r = download(&s.ts, url, &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), data.len());
    assert_eq!(sha256_hex(&r.body), sha256_hex(&data), "same bytes");
    assert_eq!(header(&r, "content-type"), "audio/mpeg");
    assert_eq!(header(&r, "content-length"), data.len().to_string());
    assert_eq!(header(&r, "etag"), format!("\"{}\"", sha256_hex(&data)));
    assert_eq!(header(&r, "accept-ranges"), "bytes");
    assert_eq!(chunk_rows(&s.ts), 13, "255 KiB chunks");
}

#[tokio::test]
async fn ranges_are_honoured() {
    let s = setup().await;
    // Two chunks and a bit, so ranges cross a chunk boundary.
    let data = Noise::new(11, 600_000).collect();
    let size = data.len();
    expect(
        &upload(&s.ts, &s.write, "call-1", "audio/wav", data.clone()).await,
        201,
    );
    let url = link(&s.ts, &s.read, "call-1").await["url"]
        .as_str()
        .unwrap()
        .to_string();
    let cases: [(&str, usize, usize); 6] = [
        ("bytes=0-0", 0, 0),
        ("bytes=100-199", 100, 199),
        ("bytes=-500", size - 500, size - 1),
        ("bytes=500-", 500, size - 1),
        ("bytes=261000-261300", 261_000, 261_300),
        ("bytes=599990-700000", 599_990, size - 1),
    ];
    for (range, first, last) in cases {
        let r = download(&s.ts, &url, &[("range", range)]).await;
        assert_eq!(r.status, 206, "{range}");
        assert_eq!(&r.body[..], &data[first..=last], "{range}");
        assert_eq!(
            header(&r, "content-range"),
            format!("bytes {first}-{last}/{size}"),
            "{range}"
        );
        assert_eq!(header(&r, "content-length"), (last - first + 1).to_string());
        assert_eq!(header(&r, "content-type"), "audio/wav");
    }

    // Beyond the end.
    for range in ["bytes=600000-", "bytes=700000-800000", "bytes=-0"] {
        let r = download(&s.ts, &url, &[("range", range)]).await;
        assert_eq!(r.status, 416, "{range}");
        assert_eq!(header(&r, "content-range"), format!("bytes */{size}"));
    }

    // Several ranges, a malformed one, or a stale If-Range: the whole file.
    let etag = format!("\"{}\"", sha256_hex(&data));
    for headers in [
        vec![("range", "bytes=0-1,5-6")],
        vec![("range", "bytes=9-1")],
        vec![("range", "bytes=0-1"), ("if-range", "\"stale\"")],
    ] {
        let r = download(&s.ts, &url, &headers).await;
        assert_eq!(r.status, 200, "{headers:?}");
        assert_eq!(r.body.len(), size);
    }
    let r = download(&s.ts, &url, &[("range", "bytes=0-1"), ("if-range", &etag)]).await;
    assert_eq!(r.status, 206);
    assert_eq!(&r.body[..], &data[0..2]);
}

/// Replaces the query value `name` of a URL.
fn with_query(url: &str, name: &str, value: &str) -> String {
    let (path, query) = url.split_once('?').expect("query");
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if k == name => format!("{k}={value}"),
            _ => pair.to_string(),
        })
        .collect();
    format!("{path}?{}", query.join("&"))
}

fn query_value(url: &str, name: &str) -> String {
    let (_, query) = url.split_once('?').expect("query");
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
        .expect("value")
        .to_string()
}

#[tokio::test]
async fn forged_and_altered_links_are_forbidden() {
    let s = setup().await;
    expect(
        &upload(&s.ts, &s.write, "call-1", "audio/mpeg", vec![1, 2, 3]).await,
        201,
    );
    put_call(&s.ts, &s.write, "call-2").await;
    expect(
        &upload(&s.ts, &s.write, "call-2", "audio/mpeg", vec![4, 5]).await,
        201,
    );
    let url = str_of(&link(&s.ts, &s.read, "call-1").await["url"]).to_string();
    assert_eq!(download(&s.ts, &url, &[]).await.status, 200);

    let expires: u64 = query_value(&url, "expires").parse().unwrap();
    let sig = query_value(&url, "sig");
    let mut flipped = sig.clone().into_bytes();
    flipped[0] = if flipped[0] == b'0' { b'1' } else { b'0' };
    let forged = [
        with_query(&url, "sig", &"0".repeat(64)),
        with_query(&url, "sig", std::str::from_utf8(&flipped).unwrap()),
        with_query(&url, "sig", ""),
        with_query(&url, "expires", &(expires + 3600).to_string()),
        with_query(&url, "expires", &(expires - 1).to_string()),
        with_query(&url, "expires", "soon"),
        url.replace("/call-1?", "/call-2?"),
        url.split('?').next().unwrap().to_string(),
    ];
    for bad in forged {
        let r = download(&s.ts, &bad, &[]).await;
        assert_error(&r, 403, "Forbidden");
    }
    // Another organization's path with this signature.
    let org = url.split('/').nth(5).unwrap().to_string();
    let r = download(&s.ts, &url.replace(&org, "org_nobody"), &[]).await;
    assert_error(&r, 403, "Forbidden");
}

#[tokio::test]
async fn links_expire() {
    let s = setup_with(|c| c.recording_link_ttl_secs = 1).await;
    expect(
        &upload(&s.ts, &s.write, "call-1", "audio/mpeg", vec![9; 1000]).await,
        201,
    );
    let l = link(&s.ts, &s.read, "call-1").await;
    let url = str_of(&l["url"]).to_string();
    let ttl = time_of(&l["expiresAt"]) - chrono::Utc::now();
    assert!(ttl <= chrono::Duration::seconds(2), "{ttl}");
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let r = download(&s.ts, &url, &[]).await;
    assert_error(&r, 410, "Link expired");
    // Pushing the expiry out breaks the signature.
    let r = download(&s.ts, &with_query(&url, "expires", "99999999999"), &[]).await;
    assert_error(&r, 403, "Forbidden");
}

#[tokio::test]
async fn only_audio_is_accepted() {
    let s = setup().await;
    for ctype in [
        "application/octet-stream",
        "video/mp4",
        "audio",
        "text/plain",
    ] {
        let r = upload(&s.ts, &s.write, "call-1", ctype, vec![1; 10]).await;
        assert_error(&r, 415, "Content-Type must be audio/*");
    }
    let r = send(
        &s.ts,
        Method::PUT,
        &recording_path("call-1"),
        &[("x-api-key", &s.write)],
        bytes(vec![1; 10]),
    )
    .await;
    assert_error(&r, 415, "Content-Type must be audio/*");
    let r = upload(&s.ts, &s.write, "call-1", "audio/mpeg", Vec::new()).await;
    assert_error(&r, 400, "Request body is empty");
    assert_error(
        &s.ts.get(&s.read, &recording_path("call-1")).await,
        404,
        "Recording not found",
    );
    let r = upload(
        &s.ts,
        &s.write,
        "call-1",
        "audio/ogg; codecs=opus",
        vec![1; 10],
    )
    .await;
    assert_eq!(expect(&r, 201)["contentType"], "audio/ogg; codecs=opus");
}

#[tokio::test]
async fn oversize_uploads_are_refused_and_leave_nothing() {
    let s = setup_with(|c| c.recording_max_bytes = 700_000).await;
    // Announced too large: refused before reading.
    let r = upload(&s.ts, &s.write, "call-1", "audio/mpeg", vec![0; 700_001]).await;
    assert_error(&r, 413, "Request body too large");
    // Not announced: refused once the cap is crossed, after chunks were stored.
    let r = send(
        &s.ts,
        Method::PUT,
        &recording_path("call-1"),
        &[("x-api-key", &s.write), ("content-type", "audio/mpeg")],
        Noise::new(3, 2 * MIB).without_length().boxed(),
    )
    .await;
    assert_error(&r, 413, "Request body too large");
    wait_for_chunk_rows(&s.ts, 0).await;
    assert_error(
        &s.ts.get(&s.read, &recording_path("call-1")).await,
        404,
        "Recording not found",
    );
    // Exactly the cap is fine, also unannounced.
    let r = send(
        &s.ts,
        Method::PUT,
        &recording_path("call-1"),
        &[("x-api-key", &s.write), ("content-type", "audio/mpeg")],
        Noise::new(3, 700_000).without_length().boxed(),
    )
    .await;
    assert_eq!(expect(&r, 201)["sha256"], Noise::new(3, 700_000).sha256());
}

#[tokio::test]
async fn an_upload_cut_short_leaves_nothing() {
    let s = setup().await;
    expect(
        &upload(&s.ts, &s.write, "call-1", "audio/mpeg", vec![8; 1000]).await,
        201,
    );
    assert_eq!(chunk_rows(&s.ts), 1);
    let ts = &s.ts;
    let body = Stalling {
        noise: Noise::new(5, 10 * MIB),
        left: 3 * MIB,
    };
    let path = recording_path("call-1");
    let headers = [
        ("x-api-key", s.write.as_str()),
        ("content-type", "audio/mpeg"),
    ];
    let request = send(ts, Method::PUT, &path, &headers, body.boxed());
    // Give up on the request once the server has stored some of its chunks.
    let stored_some = async {
        while chunk_rows(ts) < 5 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::select! {
        _ = request => panic!("a stalled upload was answered"),
        _ = tokio::time::timeout(Duration::from_secs(30), stored_some) => {}
    }
    // The request is dropped: the connection goes, and the server discards the chunks.
    wait_for_chunk_rows(ts, 1).await;
    let url = str_of(&link(ts, &s.read, "call-1").await["url"]).to_string();
    assert_eq!(download(ts, &url, &[]).await.body.to_vec(), vec![8; 1000]);
}

#[tokio::test]
async fn other_organizations_and_missing_calls_are_not_found() {
    let s = setup().await;
    expect(
        &upload(&s.ts, &s.write, "call-1", "audio/mpeg", vec![1; 100]).await,
        201,
    );
    let beta_write = s.ts.key("beta", "write").await;
    let beta_admin = s.ts.key("beta", "admin").await;
    let r = upload(&s.ts, &beta_write, "call-1", "audio/mpeg", vec![2; 100]).await;
    assert_error(&r, 404, "Call not found");
    assert_error(
        &s.ts.get(&beta_write, &recording_path("call-1")).await,
        404,
        "Recording not found",
    );
    assert_error(
        &s.ts.delete(&beta_admin, &recording_path("call-1")).await,
        404,
        "Recording not found",
    );
    let r = upload(&s.ts, &s.write, "no-such-call", "audio/mpeg", vec![1; 100]).await;
    assert_error(&r, 404, "Call not found");
    assert_error(
        &s.ts.get(&s.read, &recording_path("no-such-call")).await,
        404,
        "Recording not found",
    );
    // A call without a recording.
    put_call(&s.ts, &s.write, "call-2").await;
    assert_error(
        &s.ts.get(&s.read, &recording_path("call-2")).await,
        404,
        "Recording not found",
    );
    // acme's recording is untouched.
    let url = str_of(&link(&s.ts, &s.read, "call-1").await["url"]).to_string();
    assert_eq!(download(&s.ts, &url, &[]).await.body.to_vec(), vec![1; 100]);
    // Scopes: a read key cannot upload; nothing without a key.
    let r = upload(&s.ts, &s.read, "call-1", "audio/mpeg", vec![1; 100]).await;
    assert_error(&r, 403, "Forbidden");
    let r = send(&s.ts, Method::GET, &recording_path("call-1"), &[], empty()).await;
    assert_error(&r, 401, "Unauthorized");
}

#[tokio::test]
async fn uploading_again_replaces_the_recording() {
    let s = setup().await;
    let first = Noise::new(21, 700_000).collect();
    let second = Noise::new(22, 300_000).collect();
    expect(
        &upload(&s.ts, &s.write, "call-1", "audio/mpeg", first).await,
        201,
    );
    let url = str_of(&link(&s.ts, &s.read, "call-1").await["url"]).to_string();
    let r = upload(&s.ts, &s.write, "call-1", "audio/wav", second.clone()).await;
    let meta = expect(&r, 200);
    assert_eq!(meta["sizeBytes"], 300_000);
    assert_eq!(meta["contentType"], "audio/wav");
    // Only the new audio's two chunks remain.
    assert_eq!(chunk_rows(&s.ts), 2);
    // A link serves the call's current recording.
    let r = download(&s.ts, &url, &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!(sha256_hex(&r.body), sha256_hex(&second));
    assert_eq!(header(&r, "content-type"), "audio/wav");
    let l = link(&s.ts, &s.read, "call-1").await;
    assert_eq!(l["sizeBytes"], 300_000);
}

#[tokio::test]
async fn deleting_needs_admin_and_removes_the_audio() {
    let s = setup().await;
    expect(
        &upload(&s.ts, &s.write, "call-1", "audio/mpeg", vec![5; 300_000]).await,
        201,
    );
    let url = str_of(&link(&s.ts, &s.read, "call-1").await["url"]).to_string();
    for key in [&s.read, &s.write] {
        assert_error(
            &s.ts.delete(key, &recording_path("call-1")).await,
            403,
            "Forbidden",
        );
    }
    let r = s.ts.delete(&s.admin, &recording_path("call-1")).await;
    assert_eq!(expect(&r, 200), json!({"message": "Recording deleted."}));
    assert_eq!(chunk_rows(&s.ts), 0);
    assert_error(
        &s.ts.get(&s.read, &recording_path("call-1")).await,
        404,
        "Recording not found",
    );
    assert_error(
        &download(&s.ts, &url, &[]).await,
        404,
        "Recording not found",
    );
    assert_error(
        &s.ts.delete(&s.admin, &recording_path("call-1")).await,
        404,
        "Recording not found",
    );
    // The call itself stays.
    expect(&s.ts.get(&s.read, "/v1/calls/call-1").await, 200);
}

#[tokio::test]
async fn deleting_the_lead_keeps_the_recording() {
    let s = setup().await;
    expect(
        &upload(&s.ts, &s.write, "call-1", "audio/mpeg", vec![6; 1000]).await,
        201,
    );
    expect(&s.ts.delete(&s.write, "/v1/leads/L1").await, 200);
    let url = str_of(&link(&s.ts, &s.read, "call-1").await["url"]).to_string();
    let r = download(&s.ts, &url, &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body.to_vec(), vec![6; 1000]);
}

#[tokio::test]
async fn links_use_the_public_url_when_set() {
    let s = setup_with(|c| c.public_url = Some("https://crm.example.com/engaged/".into())).await;
    expect(
        &upload(&s.ts, &s.write, "call-1", "audio/mpeg", vec![1]).await,
        201,
    );
    let url = str_of(&link(&s.ts, &s.read, "call-1").await["url"]).to_string();
    assert!(
        url.starts_with("https://crm.example.com/engaged/v1/recordings/org_"),
        "{url}"
    );
    // The same path and query work on this server directly.
    let path = url.strip_prefix("https://crm.example.com/engaged").unwrap();
    assert_eq!(download(&s.ts, path, &[]).await.body.to_vec(), vec![1]);
}

/// Resident memory of this process (the server runs in it), in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmRSS in kB");
    kib * 1024
}

/// Samples the resident memory until dropped; `peak` is the highest seen.
struct RssSampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssSampler {
    fn start() -> RssSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(rss()));
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(rss(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        RssSampler {
            stop,
            peak,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("sampler");
        }
        self.peak.load(Ordering::Relaxed).max(rss())
    }
}

// It measures the whole test process's resident memory, which the tests running beside
// it in this binary also move: `scripts/test` (the README's test command, CI's) runs it
// alone after the rest (`--ignored --exact`).
#[tokio::test]
#[ignore = "measures the process's memory: run alone, as scripts/test does"]
async fn a_100_mib_recording_streams_in_bounded_memory() {
    let s = setup().await;
    let size = 100 * MIB;
    let expected = Noise::new(42, size).sha256();

    // Upload: the body is generated as it is sent, never held whole on either side.
    let before_upload = rss();
    let sampler = RssSampler::start();
    let r = send(
        &s.ts,
        Method::PUT,
        &recording_path("call-1"),
        &[("x-api-key", &s.write), ("content-type", "audio/mpeg")],
        Noise::new(42, size).boxed(),
    )
    .await;
    let upload_peak = sampler.finish();
    let meta = expect(&r, 201);
    assert_eq!(meta["sha256"], expected);
    assert_eq!(meta["sizeBytes"], size);

    // The upload's growth is redb's page cache keeping the pages just written (up to its
    // default 1 GiB), not the request: the handler holds at most a few chunks.
    // Download: hash the frames as they arrive.
    let url = str_of(&link(&s.ts, &s.read, "call-1").await["url"]).to_string();
    let before_download = rss();
    let sampler = RssSampler::start();
    let response = send_streaming(&s.ts, Method::GET, &url, &[], empty()).await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut hasher = Sha256::new();
    let mut received = 0u64;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.expect("frame").into_data() {
            received += data.len() as u64;
            hasher.update(&data);
        }
    }
    let download_peak = sampler.finish();
    assert_eq!(received, size);
    assert_eq!(hex::encode(hasher.finalize()), expected);

    let growth = |peak: u64, base: u64| peak.saturating_sub(base) / MIB;
    eprintln!(
        "RSS: {} MiB before the upload, +{} MiB at its peak; {} MiB before the download, +{} MiB at its peak",
        before_upload / MIB,
        growth(upload_peak, before_upload),
        before_download / MIB,
        growth(download_peak, before_download),
    );
    assert!(
        growth(download_peak, before_download) < 60,
        "the download of 100 MiB grew the resident memory by {} MiB",
        growth(download_peak, before_download)
    );
}

#[tokio::test]
async fn a_recording_is_served_unsniffed_and_sandboxed() {
    let s = setup().await;
    let data = b"<html><script>alert(1)</script></html>".to_vec();
    expect(
        &upload(&s.ts, &s.write, "call-1", "audio/mpeg", data).await,
        201,
    );
    let l = link(&s.ts, &s.read, "call-1").await;
    let r = download(&s.ts, str_of(&l["url"]), &[]).await;
    assert_eq!(r.status, 200);
    assert_eq!(header(&r, "x-content-type-options"), "nosniff");
    assert_eq!(header(&r, "content-security-policy"), "sandbox");
    let part = download(&s.ts, str_of(&l["url"]), &[("range", "bytes=0-3")]).await;
    assert_eq!(part.status, 206);
    assert_eq!(header(&part, "x-content-type-options"), "nosniff");
    assert_eq!(header(&part, "content-security-policy"), "sandbox");
}

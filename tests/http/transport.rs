//! The transport: HTTP/1.1 and HTTP/2 over TLS, keep-alive, HEAD.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Version};
use hyper_util::client::legacy::Client;

use engaged::testkit::{https_client, tls_trusting, TestServer, Versions};

fn client(
    ts: &TestServer,
    h2: bool,
) -> Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
> {
    let versions = if h2 { Versions::Http2 } else { Versions::Http1 };
    https_client(&ts.cert(), versions)
}

async fn healthz_version(ts: &TestServer, h2: bool) -> Version {
    let c = client(ts, h2);
    let req = Request::get(format!("{}/healthz", ts.base))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = c.request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let version = resp.version();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], br#"{"status":"ok"}"#);
    version
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_http1_and_http2_over_tls() {
    let ts = TestServer::start().await;
    assert_eq!(healthz_version(&ts, false).await, Version::HTTP_11);
    assert_eq!(healthz_version(&ts, true).await, Version::HTTP_2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_connections_are_kept_alive() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "read").await;
    // One TLS connection, several requests written back to back on it.
    let tls = tls_trusting(&ts.data_dir.join("tls/cert.pem"));
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls));
    let tcp = tokio::net::TcpStream::connect(ts.server.local_addr())
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let stream = connector.connect(name, tcp).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    for _ in 0..3 {
        let req = Request::get("/v1/leads?updatedSince=1970-01-01T00:00:00Z")
            .header("host", "localhost")
            .header("x-api-key", &key)
            .body(Full::new(Bytes::new()))
            .unwrap();
        sender.ready().await.unwrap();
        let resp = sender.send_request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        resp.into_body().collect().await.unwrap();
    }
}

/// Status, content type, content length (from the header, else the body) and body of
/// `method path` with `key`.
async fn answer(
    ts: &TestServer,
    h2: bool,
    method: hyper::Method,
    path: &str,
    key: Option<&str>,
) -> (u16, Option<String>, Option<u64>, Bytes) {
    let c = client(ts, h2);
    let mut req = Request::builder()
        .method(method)
        .uri(format!("{}{path}", ts.base));
    if let Some(key) = key {
        req = req.header("x-api-key", key);
    }
    let resp = c.request(req.body(Full::new(Bytes::new())).unwrap()).await;
    let resp = resp.unwrap_or_else(|e| panic!("{path} (h2: {h2}): {e:?}"));
    let header = |name| {
        resp.headers()
            .get(name)
            .and_then(|v: &hyper::header::HeaderValue| v.to_str().ok())
            .map(str::to_string)
    };
    let (status, content_type) = (resp.status().as_u16(), header("content-type"));
    let length = header("content-length").and_then(|v| v.parse().ok());
    let body = resp.into_body().collect().await;
    let body = body.unwrap_or_else(|e| panic!("{path} (h2: {h2}): {e:?}"));
    (status, content_type, length, body.to_bytes())
}

/// HEAD answers every GET route as GET would (status, headers, length), without the
/// body, over both protocols: an answer, a refusal and an unknown path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_answers_like_get_without_the_body_over_http1_and_http2() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    ts.create_lead(
        &key,
        &serde_json::json!({"id": "L1", "phone": "+15551234567"}),
    )
    .await;
    // A recording, whose download is a streamed body.
    let call =
        serde_json::json!({"leadId": "L1", "direction": "INBOUND", "callStatus": "COMPLETE"});
    assert_eq!(ts.put(&key, "/v1/calls/c1", &call).await.status, 201);
    let audio = vec![7u8; 5000];
    let path = "/v1/calls/c1/recording";
    let uploaded = ts
        .request(
            hyper::Method::PUT,
            path,
            Some(&key),
            Some("audio/mpeg"),
            audio,
        )
        .await;
    assert_eq!(uploaded.status, 201);
    let link = ts.get(&key, path).await.json();
    let url = link["url"].as_str().expect("url");
    let download = url.strip_prefix(&ts.base).expect("a link to this server");
    let cases = [
        (download, None),
        ("/healthz", None),
        ("/v1/openapi.json", None),
        ("/v1/leads/L1", Some(key.as_str())),
        (
            "/v1/leads?updatedSince=1970-01-01T00:00:00Z",
            Some(key.as_str()),
        ),
        ("/v1/leads/nope", Some(key.as_str())),
        ("/v1/leads/L1", None),
        ("/v1/nope", None),
    ];
    for h2 in [false, true] {
        for (path, key) in cases {
            let get = answer(&ts, h2, hyper::Method::GET, path, key).await;
            let head = answer(&ts, h2, hyper::Method::HEAD, path, key).await;
            assert_eq!(head.0, get.0, "{path} (h2: {h2})");
            assert_eq!(head.1, get.1, "{path} (h2: {h2})");
            let get_length = get.2.unwrap_or(get.3.len() as u64);
            assert_eq!(head.2, Some(get_length), "{path} (h2: {h2})");
            assert!(head.3.is_empty(), "{path} (h2: {h2})");
            assert!(!get.3.is_empty(), "{path} (h2: {h2})");
        }
    }
}

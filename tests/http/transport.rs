//! The transport: HTTP/1.1 and HTTP/2 over TLS, keep-alive.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Version};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::common::{tls_trusting, TestServer};

fn client(
    ts: &TestServer,
    h2: bool,
) -> Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
> {
    let tls = tls_trusting(&ts.data_dir.join("tls/cert.pem"));
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only();
    let connector = if h2 {
        builder.enable_http2().build()
    } else {
        builder.enable_http1().build()
    };
    let mut client = Client::builder(TokioExecutor::new());
    client.http2_only(h2);
    client.build(connector)
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

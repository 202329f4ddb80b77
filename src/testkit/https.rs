//! Clients of the test kit: an HTTPS client that trusts exactly the certificate a test
//! server generated (HTTP/1.1, HTTP/2 or both, any body type, from any local address),
//! and a plain HTTP/1.1 client for the loopback fakes.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// An HTTPS client sending whole buffers.
pub type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A plain HTTP client sending whole buffers (to the loopback fakes).
pub type PlainClient = Client<HttpConnector, Full<Bytes>>;

/// Which HTTP versions an HTTPS client offers (by ALPN) and speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versions {
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 only (the client speaks nothing else).
    Http2,
    /// Both; the server chooses.
    Both,
}

/// A rustls client configuration that trusts exactly the certificate at `cert`.
pub fn tls_trusting(cert: &Path) -> rustls::ClientConfig {
    let pem = std::fs::read(cert).expect("certificate written by the server");
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        roots.add(cert.expect("pem")).expect("root");
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("tls versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// An HTTPS client (HTTP/1.1 and HTTP/2) trusting exactly the certificate at `cert`.
pub fn client_trusting(cert: &Path) -> HttpsClient {
    https_client(cert, Versions::Both)
}

/// An HTTPS client of any body type speaking `versions`, trusting exactly `cert`.
pub fn https_client<B>(
    cert: &Path,
    versions: Versions,
) -> Client<hyper_rustls::HttpsConnector<HttpConnector>, B>
where
    B: hyper::body::Body + Send + 'static + Unpin,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    // As a browser does: without it, a request written in two parts waits for the
    // server's delayed acknowledgement (40 ms) and every latency measured is that.
    http.set_nodelay(true);
    https_client_over(cert, versions, http)
}

/// [`https_client`] over `http` (a connector bound to a local address, say).
pub fn https_client_over<B>(
    cert: &Path,
    versions: Versions,
    http: HttpConnector,
) -> Client<hyper_rustls::HttpsConnector<HttpConnector>, B>
where
    B: hyper::body::Body + Send + 'static + Unpin,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_trusting(cert))
        .https_only();
    let connector = match versions {
        Versions::Http1 => builder.enable_http1().wrap_connector(http),
        Versions::Http2 => builder.enable_http2().wrap_connector(http),
        Versions::Both => builder.enable_http1().enable_http2().wrap_connector(http),
    };
    let mut client = Client::builder(TokioExecutor::new());
    client.http2_only(versions == Versions::Http2);
    client.build(connector)
}

/// A plain HTTP/1.1 client.
pub fn plain_client() -> PlainClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Sends `request` with `client`; answers the status and the whole body.
pub async fn fetch(client: &PlainClient, request: hyper::Request<Full<Bytes>>) -> (u16, Bytes) {
    use http_body_util::BodyExt;
    let response = client.request(request).await.expect("the fake answers");
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.expect("body");
    (status, body.to_bytes())
}

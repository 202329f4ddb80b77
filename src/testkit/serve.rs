//! The loopback server under every fake: HTTP/1.1 on `127.0.0.1:0`, each request read
//! whole and handed to the fake, whose answer is sent, or, when it has none, the
//! connection closes without an answer (the request arrived, its fate unknown). And its
//! opposite, `closed_addr`: a loopback address where nothing listens.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::http::request::Parts;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

/// A loopback address where nothing listens (a server that is down): a port bound and
/// let go at once, so a connection to it is refused.
pub fn closed_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a loopback port")
}

/// A fake's answer: `None` closes the connection unanswered.
pub type Answer = Option<hyper::Response<Full<Bytes>>>;

/// Serves `handle` on a new loopback port; answers its address.
pub async fn serve<F, Fut>(handle: F) -> SocketAddr
where
    F: Fn(Parts, Bytes) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Answer> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a fake");
    let addr = listener.local_addr().expect("the fake's address");
    let handle = Arc::new(handle);
    tokio::spawn(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let handle = handle.clone();
            tokio::spawn(async move {
                let close = Arc::new(tokio::sync::Notify::new());
                let closing = close.clone();
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (handle, close) = (handle.clone(), close.clone());
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        match handle(parts, body).await {
                            Some(response) => Ok::<_, Infallible>(response),
                            None => {
                                close.notify_one();
                                std::future::pending().await
                            }
                        }
                    }
                });
                let connection =
                    http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                tokio::select! {
                    _ = connection => {}
                    _ = closing.notified() => {}
                }
            });
        }
    });
    addr
}

/// An answer of `status` with `body`.
pub fn respond(status: u16, body: impl Into<Bytes>) -> hyper::Response<Full<Bytes>> {
    let mut response = hyper::Response::new(Full::new(body.into()));
    *response.status_mut() = hyper::StatusCode::from_u16(status).expect("a status");
    response
}

/// A port nothing listens on now (bound and released: a server started next binds it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

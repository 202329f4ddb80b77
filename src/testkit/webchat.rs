//! A website visitor's side of web chat (`/webchat/{org}/...`): requests that carry an
//! `Origin` (and a session's token), and the session's event stream.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::HeaderValue;
use hyper::{Method, Request};
use serde_json::Value;

use crate::testkit::console::EventStream;
use crate::testkit::server::{Response, TestServer};

impl TestServer {
    /// A web chat request from a page of `origin` (none: no `Origin` header), with the
    /// session `token` as a bearer, and `body` as JSON.
    pub async fn webchat(
        &self,
        method: Method,
        path: &str,
        origin: Option<&str>,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Response {
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path))
            .header("user-agent", "WebchatTest/1.0");
        if let Some(origin) = origin {
            builder = builder.header("origin", HeaderValue::from_str(origin).expect("origin"));
        }
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        let bytes = match body {
            Some(body) => {
                builder = builder.header("content-type", "application/json");
                serde_json::to_vec(body).expect("json")
            }
            None => Vec::new(),
        };
        let request = builder
            .body(Full::new(Bytes::from(bytes)))
            .expect("request");
        self.send(request).await
    }

    /// Opens a web chat session's event stream (`.../events?token=`) from `origin`.
    pub async fn webchat_events(
        &self,
        org: &str,
        session: &str,
        token: &str,
        origin: &str,
    ) -> EventStream {
        let request = Request::builder()
            .method(Method::GET)
            .uri(format!(
                "{}/webchat/{org}/sessions/{session}/events?token={token}",
                self.base
            ))
            .header("origin", HeaderValue::from_str(origin).expect("origin"))
            .header("accept", "text/event-stream")
            .body(Full::new(Bytes::new()))
            .expect("request");
        let response = self.client.request(request).await.expect("response");
        EventStream::of(response)
    }
}

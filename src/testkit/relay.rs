//! A Twilio ConversationRelay client for the voice tests and the voice bench: a
//! WebSocket over TLS to the test server's `voice/{callId}/relay` path, its handshake
//! signed as Twilio signs it (`X-Twilio-Signature` over the `wss://` URL built from
//! `public_url`, no parameters; the caller signs), speaking ConversationRelay's messages
//! (`setup`, `prompt`, `interrupt`, `dtmf`) and reading the server's JSON frames
//! (`text`, `end`).

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

use crate::testkit::{tls_trusting, TestServer};

/// How long a test waits for a frame the server should send promptly.
pub const FRAME_WAIT: Duration = Duration::from_secs(15);

/// One open relay WebSocket, as Twilio's side of a call.
pub struct RelayClient {
    ws: WebSocketStream<TlsStream<TcpStream>>,
}

/// `/v1/providers/twilio/{org}/voice/{call}/relay`.
pub fn relay_path(org: &str, call: &str) -> String {
    format!("/v1/providers/twilio/{org}/voice/{call}/relay")
}

/// The `wss://` URL Twilio signs: `public_url` with its scheme made `wss` (or `ws`).
pub fn relay_url(public_url: &str, org: &str, call: &str) -> String {
    let base = public_url.trim_end_matches('/');
    let base = if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        base.to_string()
    };
    format!("{base}{}", relay_path(org, call))
}

/// Opens the relay WebSocket of `call` with `signature` as `X-Twilio-Signature`.
/// `Err(status)` is the HTTP status of a refused handshake.
pub async fn connect(
    ts: &TestServer,
    org: &str,
    call: &str,
    signature: &str,
) -> Result<RelayClient, u16> {
    let port = ts.server.local_addr().port();
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect to the test server");
    let mut tls = tls_trusting(&ts.data_dir.join("tls/cert.pem"));
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls));
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("server name");
    let stream = connector
        .connect(name, tcp)
        .await
        .expect("TLS handshake with the test server");
    let url = format!("wss://127.0.0.1:{port}{}", relay_path(org, call));
    let mut request = url.into_client_request().expect("a WebSocket request");
    request.headers_mut().insert(
        "x-twilio-signature",
        signature.parse().expect("a header value"),
    );
    let handshake =
        tokio::time::timeout(FRAME_WAIT, tokio_tungstenite::client_async(request, stream))
            .await
            .expect("the WebSocket handshake is answered");
    match handshake {
        Ok((ws, _)) => Ok(RelayClient { ws }),
        Err(WsError::Http(response)) => Err(response.status().as_u16()),
        Err(other) => panic!("the WebSocket handshake failed: {other}"),
    }
}

impl RelayClient {
    /// Sends one JSON text frame.
    pub async fn send(&mut self, message: Value) {
        self.ws
            .send(Message::text(message.to_string()))
            .await
            .expect("send a relay message");
    }

    /// ConversationRelay's first message, for the call Twilio knows as `call_sid`.
    pub async fn setup(&mut self, call_sid: &str) {
        self.send(json!({
            "type": "setup",
            "sessionId": format!("VX{}", &call_sid[2.min(call_sid.len())..]),
            "callSid": call_sid,
            "parentCallSid": "",
            "from": "",
            "to": "",
            "forwardedFrom": "",
            "callerName": "",
            "direction": "outbound-api",
            "callType": "PSTN",
            "callStatus": "IN-PROGRESS",
            "customParameters": {},
        }))
        .await;
    }

    /// A finished utterance of the lead.
    pub async fn prompt(&mut self, text: &str) {
        self.prompt_part(text, true).await;
    }

    /// A part of an utterance (`last` false while the lead is still speaking).
    pub async fn prompt_part(&mut self, text: &str, last: bool) {
        self.send(json!({"type": "prompt", "voicePrompt": text, "lang": "en-US", "last": last}))
            .await;
    }

    /// The lead spoke over the agent: `utterance` is what had been spoken until then.
    pub async fn interrupt(&mut self, utterance: &str, ms: u64) {
        self.send(json!({
            "type": "interrupt",
            "utteranceUntilInterrupt": utterance,
            "durationUntilInterruptMs": ms,
        }))
        .await;
    }

    /// A keypad digit.
    pub async fn dtmf(&mut self, digit: &str) {
        self.send(json!({"type": "dtmf", "digit": digit})).await;
    }

    /// The next JSON text frame from the server, or `None` once the connection closed.
    pub async fn next_message(&mut self, limit: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let frame = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .unwrap_or_else(|_| panic!("no relay frame within {limit:?}"));
            match frame {
                None | Some(Ok(Message::Close(_))) | Some(Err(_)) => return None,
                Some(Ok(Message::Text(text))) => {
                    return Some(serde_json::from_str(text.as_str()).unwrap_or_else(|e| {
                        panic!("a relay frame that is not JSON ({e}): {}", text.as_str())
                    }))
                }
                Some(Ok(Message::Binary(bytes))) => {
                    panic!("a binary relay frame: {} bytes", bytes.len())
                }
                Some(Ok(_)) => {} // ping, pong, raw frames
            }
        }
    }

    /// The next JSON text frame from the server; panics when the connection closed.
    pub async fn next_frame(&mut self, limit: Duration) -> Value {
        self.next_message(limit)
            .await
            .expect("the relay is still open")
    }

    /// The next frame whose `type` is `kind`, skipping others; panics on close.
    pub async fn frame_of_type(&mut self, kind: &str, limit: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let frame = self.next_frame(left).await;
            if frame["type"] == json!(kind) {
                return frame;
            }
        }
    }

    /// Waits until the server closes the connection, skipping any frames before.
    pub async fn wait_closed(&mut self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if self.next_message(left).await.is_none() {
                return;
            }
        }
    }

    /// Closes the connection from the client's side (Twilio does after an `end`).
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

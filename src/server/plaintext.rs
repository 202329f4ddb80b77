//! Plain HTTP sent to the HTTPS port: a short plain-HTTP answer that says to use https.
//!
//! A TLS connection begins with a handshake record (first byte 0x16); a plain HTTP/1.x
//! request begins with its method, in capital letters. Without this, `curl
//! http://host:8443/...` gets a failed handshake that clients report as an empty reply
//! or garbage. The first byte is peeked before the handshake; a plain request gets one
//! 400 answer, `{"message": ...}` like every other error, and the connection closes.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The answer's body.
pub const MESSAGE: &str = "This port speaks HTTPS: use https:// instead of http://";

/// How much of the plain request is read (and ignored) before answering.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long the rest of the request's head may take once its first bytes are here.
const HEAD_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether the connection starts like a plain HTTP/1.x request rather than TLS.
pub async fn starts_plain(stream: &TcpStream) -> std::io::Result<bool> {
    let mut first = [0u8; 1];
    let n = stream.peek(&mut first).await?;
    Ok(n == 1 && first[0].is_ascii_uppercase())
}

/// Reads the request's head (bounded), answers 400, and closes.
pub async fn answer(mut stream: TcpStream) -> std::io::Result<()> {
    // Reading the head first lets the close be clean: closing a socket with unread
    // bytes resets it, and the client could lose the answer.
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(HEAD_TIMEOUT, async {
        while head.len() < MAX_HEAD_BYTES && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let body = serde_json::json!({ "message": MESSAGE }).to_string();
    let response = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

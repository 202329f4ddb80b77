//! What a failed outbound request is called wherever others can read it: the
//! engagement's `lastError`, a webhook attempt's `error`, the log, the metrics.
//!
//! A configured URL (the model server, the compliance service, a webhook receiver) may
//! point anywhere, an internal port included; what it answers is never repeated, so a
//! key holder cannot read another service through us. A failure is one short class
//! ([`Failure`]): `timeout`, `connect`, `tls`, `connection closed`, `answer too large`,
//! `invalid url`, `status 500`, `malformed answer`. Nothing of the answer's body, and
//! nothing of the transport's own wording, goes further than this type.

use std::fmt;

/// One failed request, by class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No answer within the timeout.
    Timeout,
    /// No connection (refused, unreachable, a name that does not resolve).
    Connect,
    /// The TLS handshake failed (a certificate, or no TLS at the other end).
    Tls,
    /// The connection ended before a whole answer came.
    Closed,
    /// The answer was longer than the caller reads.
    TooLarge,
    /// The URL or a header could not make a request.
    InvalidUrl,
    /// An answer with a status the caller does not take.
    Status(u16),
    /// A 2xx answer that is not what was asked for.
    Malformed,
}

impl Failure {
    /// The class of a transport failure, from the outbound client's description of it
    /// (`http_client`'s messages; the description itself goes no further).
    pub fn of_transport(message: &str) -> Failure {
        let lower = message.to_ascii_lowercase();
        let any = |words: &[&str]| words.iter().any(|w| lower.contains(w));
        if lower.starts_with("timed out") {
            Failure::Timeout
        } else if lower.starts_with("reading the answer") {
            if any(&["length limit"]) {
                Failure::TooLarge
            } else {
                Failure::Closed
            }
        } else if lower.starts_with("bad request") || lower.starts_with("bad header") {
            Failure::InvalidUrl
        } else if any(&[
            "certificate",
            "tls",
            "ssl",
            "handshake",
            "corrupt message",
            "peer sent",
            "alert",
        ]) {
            Failure::Tls
        } else if any(&["(connect)", "connect error", "connection refused", "dns"]) {
            Failure::Connect
        } else {
            Failure::Closed
        }
    }

    /// Whether asking again cannot help: the model server refused the request itself
    /// (400 malformed or too long, 401/403 the key, 404 the model or path, 422
    /// unprocessable), or its certificate is not trusted (the same every time, until the
    /// operator mends `outbound_ca_file` or the server's certificate).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            Failure::Status(400 | 401 | 403 | 404 | 422) | Failure::Tls
        )
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Timeout => f.write_str("timeout"),
            Failure::Connect => f.write_str("connect"),
            Failure::Tls => f.write_str("tls"),
            Failure::Closed => f.write_str("connection closed"),
            Failure::TooLarge => f.write_str("answer too large"),
            Failure::InvalidUrl => f.write_str("invalid url"),
            Failure::Status(status) => write!(f, "status {status}"),
            Failure::Malformed => f.write_str("malformed answer"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http_client::HttpClient;
    use std::time::Duration;

    #[test]
    fn classes_are_short_words() {
        assert_eq!(Failure::Status(500).to_string(), "status 500");
        assert_eq!(Failure::Malformed.to_string(), "malformed answer");
        assert_eq!(Failure::Timeout.to_string(), "timeout");
        assert_eq!(Failure::Connect.to_string(), "connect");
        assert_eq!(Failure::Tls.to_string(), "tls");
        assert!(Failure::Status(422).is_final());
        assert!(Failure::Status(404).is_final());
        assert!(!Failure::Status(500).is_final());
        assert!(!Failure::Status(429).is_final());
        assert!(!Failure::Timeout.is_final());
        assert!(Failure::Tls.is_final());
    }

    #[test]
    fn transport_messages_become_classes() {
        for (message, class) in [
            ("timed out after 100 ms", Failure::Timeout),
            (
                "reading the answer: length limit exceeded",
                Failure::TooLarge,
            ),
            ("reading the answer: connection reset", Failure::Closed),
            ("bad request: invalid uri character", Failure::InvalidUrl),
            (
                "client error (Connect): invalid peer certificate: UnknownIssuer",
                Failure::Tls,
            ),
            (
                "client error (Connect): tcp connect error: Connection refused (os error 111)",
                Failure::Connect,
            ),
            (
                "client error (SendRequest): connection closed before message completed",
                Failure::Closed,
            ),
        ] {
            assert_eq!(Failure::of_transport(message), class, "{message}");
        }
    }

    /// The client's real descriptions of a refused connection and of TLS spoken to a
    /// server that does not speak it.
    #[tokio::test]
    async fn real_failures_are_classed() {
        let client = HttpClient::new(Duration::from_secs(2), None).unwrap();
        let addr = crate::testkit::closed_addr();
        let refused = client
            .post_json(
                &format!("http://{addr}/"),
                b"{}".to_vec(),
                Duration::from_secs(2),
            )
            .await
            .unwrap_err();
        assert_eq!(
            Failure::of_transport(&refused),
            Failure::Connect,
            "{refused}"
        );

        // A plain TCP server that answers HTTP/1.1 text to a TLS client hello.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf).await;
                let _ = stream
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                    .await;
            }
        });
        let tls = client
            .post_json(
                &format!("https://{addr}/"),
                b"{}".to_vec(),
                Duration::from_secs(2),
            )
            .await
            .unwrap_err();
        assert_eq!(Failure::of_transport(&tls), Failure::Tls, "{tls}");
    }
}

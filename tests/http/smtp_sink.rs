//! A tiny SMTP sink on 127.0.0.1 for the email tests (RFC 5321's happy path, no TLS):
//! greets 220, answers EHLO without STARTTLS, MAIL and RCPT 250, DATA 354 and then 250
//! once the content ends with `<CRLF>.<CRLF>`, QUIT 221. It keeps each raw message.
//! `refuse` makes RCPT to one address answer 550; `defer_once` makes the next RCPT
//! answer 451.
#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

#[derive(Default)]
struct State {
    messages: Mutex<Vec<String>>,
    refused: Mutex<HashSet<String>>,
    defer: AtomicBool,
}

pub struct SmtpSink {
    pub port: u16,
    state: Arc<State>,
}

impl SmtpSink {
    pub async fn start() -> SmtpSink {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind sink");
        let port = listener.local_addr().expect("sink address").port();
        let state = Arc::new(State::default());
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = shared.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, state).await;
                });
            }
        });
        SmtpSink { port, state }
    }

    /// RCPT to `address` answers 550 from now on.
    pub fn refuse(&self, address: &str) {
        self.state
            .refused
            .lock()
            .unwrap()
            .insert(address.to_ascii_lowercase());
    }

    /// The next RCPT answers 451 (try again later).
    pub fn defer_once(&self) {
        self.state.defer.store(true, Ordering::SeqCst);
    }

    /// Every message accepted so far, raw (dot-stuffing undone), in arrival order.
    pub fn messages(&self) -> Vec<String> {
        self.state.messages.lock().unwrap().clone()
    }
}

async fn serve(stream: tokio::net::TcpStream, state: Arc<State>) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    write.write_all(b"220 sink.test ESMTP\r\n").await?;
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let upper = line.to_ascii_uppercase();
        let answer: &[u8] = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            b"250-sink.test\r\n250 8BITMIME\r\n"
        } else if upper.starts_with("MAIL")
            || upper.starts_with("RSET")
            || upper.starts_with("NOOP")
        {
            b"250 OK\r\n"
        } else if upper.starts_with("RCPT") {
            let address = line
                .split_once('<')
                .and_then(|(_, rest)| rest.split_once('>'))
                .map(|(a, _)| a.to_ascii_lowercase())
                .unwrap_or_default();
            if state.refused.lock().unwrap().contains(&address) {
                b"550 5.1.1 No such user\r\n"
            } else if state.defer.swap(false, Ordering::SeqCst) {
                b"451 4.3.0 Try again later\r\n"
            } else {
                b"250 OK\r\n"
            }
        } else if upper.starts_with("DATA") {
            write
                .write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                .await?;
            let mut message = String::new();
            loop {
                line.clear();
                if lines.read_line(&mut line).await? == 0 {
                    return Ok(());
                }
                if line == ".\r\n" {
                    break;
                }
                message.push_str(line.strip_prefix('.').unwrap_or(&line));
            }
            state.messages.lock().unwrap().push(message);
            b"250 OK queued\r\n"
        } else if upper.starts_with("QUIT") {
            write.write_all(b"221 Bye\r\n").await?;
            return Ok(());
        } else {
            b"500 Unknown command\r\n"
        };
        write.write_all(answer).await?;
    }
}

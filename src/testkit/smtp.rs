//! A tiny SMTP sink on 127.0.0.1 for the email tests (RFC 5321's happy path): greets
//! 220, answers EHLO (8BITMIME, AUTH PLAIN LOGIN, and SMTPUTF8 or STARTTLS when told),
//! AUTH 235, MAIL and RCPT 250, DATA 354 and then 250 once the content ends with
//! `<CRLF>.<CRLF>`, QUIT 221. It keeps each raw message, each `MAIL FROM` and `RCPT TO`
//! line, and counts connections.
//! `refuse` makes RCPT to one address answer 550; `defer_once` makes the next RCPT
//! answer 451; `refuse_auth` makes AUTH answer 535; `offer_smtputf8` adds SMTPUTF8.
//! [`SmtpSink::start_tls`] serves TLS (implicit, or after STARTTLS) with a certificate
//! for 127.0.0.1 issued by a [`TestCa`].

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// A certificate authority of its own (not among any built-in roots) and a server
/// certificate for `127.0.0.1` and `localhost` it issued.
pub struct TestCa {
    /// The CA's certificate, PEM: what `outbound_ca_file` names.
    pub ca_pem: String,
    /// The server's certificate chain (leaf, then CA) and key.
    pub chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    pub key: rustls::pki_types::PrivateKeyDer<'static>,
}

impl Default for TestCa {
    fn default() -> TestCa {
        TestCa::new()
    }
}

impl TestCa {
    /// A new CA and a server certificate it issued.
    pub fn new() -> TestCa {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
        let ca_key = KeyPair::generate().expect("ca key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "engaged test CA");
        let ca = ca_params.self_signed(&ca_key).expect("ca cert");
        let leaf_key = KeyPair::generate().expect("leaf key");
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("leaf params")
            .signed_by(&leaf_key, &ca, &ca_key)
            .expect("leaf cert");
        TestCa {
            ca_pem: ca.pem(),
            chain: vec![leaf.der().clone(), ca.der().clone()],
            key: rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        }
    }

    /// Writes the CA's certificate into `dir` and answers its path.
    pub fn write_ca(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("outbound-ca.pem");
        std::fs::write(&path, &self.ca_pem).expect("write the CA file");
        path
    }
}

/// How the sink speaks TLS.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SinkTls {
    /// TLS from the first byte (port 465 style).
    Implicit,
    /// Plain, offering STARTTLS.
    StartTls,
}

#[derive(Default)]
struct State {
    messages: Mutex<Vec<String>>,
    mail_from: Mutex<Vec<String>>,
    rcpt_to: Mutex<Vec<String>>,
    refused: Mutex<HashSet<String>>,
    defer: AtomicBool,
    refuse_auth: AtomicBool,
    smtputf8: AtomicBool,
    connections: AtomicUsize,
}

pub struct SmtpSink {
    pub port: u16,
    state: Arc<State>,
}

type Tls = Option<(SinkTls, tokio_rustls::TlsAcceptor)>;

impl SmtpSink {
    pub async fn start() -> SmtpSink {
        SmtpSink::serve(None).await
    }

    /// A sink speaking TLS (`mode`) with `ca`'s server certificate.
    pub async fn start_tls(mode: SinkTls, ca: &TestCa) -> SmtpSink {
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("tls versions")
        .with_no_client_auth()
        .with_single_cert(ca.chain.clone(), ca.key.clone_key())
        .expect("sink certificate");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        SmtpSink::serve(Some((mode, acceptor))).await
    }

    async fn serve(tls: Tls) -> SmtpSink {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind sink");
        let port = listener.local_addr().expect("sink address").port();
        let state = Arc::new(State::default());
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                shared.connections.fetch_add(1, Ordering::SeqCst);
                let state = shared.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    let _ = connection(stream, state, tls).await;
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

    /// AUTH answers 535 from now on.
    pub fn refuse_auth(&self) {
        self.state.refuse_auth.store(true, Ordering::SeqCst);
    }

    /// EHLO offers SMTPUTF8 (RFC 6531) from now on.
    pub fn offer_smtputf8(&self) {
        self.state.smtputf8.store(true, Ordering::SeqCst);
    }

    /// Every message accepted so far, raw (dot-stuffing undone), in arrival order.
    pub fn messages(&self) -> Vec<String> {
        self.state.messages.lock().unwrap().clone()
    }

    /// Every `MAIL FROM:` line received (without its CRLF), parameters included.
    pub fn mail_from(&self) -> Vec<String> {
        self.state.mail_from.lock().unwrap().clone()
    }

    /// Every `RCPT TO:` line received (without its CRLF).
    pub fn rcpt_to(&self) -> Vec<String> {
        self.state.rcpt_to.lock().unwrap().clone()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }
}

async fn connection(
    stream: tokio::net::TcpStream,
    state: Arc<State>,
    tls: Tls,
) -> std::io::Result<()> {
    match tls {
        None => {
            dialogue(stream, &state, false, true).await?;
        }
        Some((SinkTls::Implicit, acceptor)) => {
            let stream = acceptor.accept(stream).await?;
            dialogue(stream, &state, false, true).await?;
        }
        Some((SinkTls::StartTls, acceptor)) => {
            if let Some(plain) = dialogue(stream, &state, true, true).await? {
                let secured = acceptor.accept(plain).await?;
                dialogue(secured, &state, false, false).await?;
            }
        }
    }
    Ok(())
}

/// One SMTP dialogue on `stream`; answers the stream when the client asked for
/// STARTTLS (offered when `starttls`), to go on over TLS.
async fn dialogue<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    state: &State,
    starttls: bool,
    greet: bool,
) -> std::io::Result<Option<S>> {
    let mut lines = BufReader::new(stream);
    if greet {
        lines.write_all(b"220 sink.test ESMTP\r\n").await?;
    }
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let upper = line.to_ascii_uppercase();
        let answer: Vec<u8> = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            let mut ehlo = String::from("250-sink.test\r\n250-8BITMIME\r\n");
            if starttls {
                ehlo.push_str("250-STARTTLS\r\n");
            }
            if state.smtputf8.load(Ordering::SeqCst) {
                ehlo.push_str("250-SMTPUTF8\r\n");
            }
            ehlo.push_str("250 AUTH PLAIN LOGIN\r\n");
            ehlo.into_bytes()
        } else if upper.starts_with("STARTTLS") && starttls {
            lines.write_all(b"220 2.0.0 Ready to start TLS\r\n").await?;
            return Ok(Some(lines.into_inner()));
        } else if upper.starts_with("AUTH") {
            if state.refuse_auth.load(Ordering::SeqCst) {
                b"535 5.7.8 Authentication credentials invalid\r\n".to_vec()
            } else {
                b"235 2.7.0 Authentication successful\r\n".to_vec()
            }
        } else if upper.starts_with("MAIL") {
            state
                .mail_from
                .lock()
                .unwrap()
                .push(line.trim_end().to_string());
            b"250 OK\r\n".to_vec()
        } else if upper.starts_with("RSET") || upper.starts_with("NOOP") {
            b"250 OK\r\n".to_vec()
        } else if upper.starts_with("RCPT") {
            state
                .rcpt_to
                .lock()
                .unwrap()
                .push(line.trim_end().to_string());
            let address = line
                .split_once('<')
                .and_then(|(_, rest)| rest.split_once('>'))
                .map(|(a, _)| a.to_lowercase())
                .unwrap_or_default();
            if state.refused.lock().unwrap().contains(&address) {
                b"550 5.1.1 No such user\r\n".to_vec()
            } else if state.defer.swap(false, Ordering::SeqCst) {
                b"451 4.3.0 Try again later\r\n".to_vec()
            } else {
                b"250 OK\r\n".to_vec()
            }
        } else if upper.starts_with("DATA") {
            lines
                .write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                .await?;
            let mut message = String::new();
            loop {
                line.clear();
                if lines.read_line(&mut line).await? == 0 {
                    return Ok(None);
                }
                if line == ".\r\n" {
                    break;
                }
                message.push_str(line.strip_prefix('.').unwrap_or(&line));
            }
            state.messages.lock().unwrap().push(message);
            b"250 OK queued\r\n".to_vec()
        } else if upper.starts_with("QUIT") {
            lines.write_all(b"221 Bye\r\n").await?;
            return Ok(None);
        } else {
            b"500 Unknown command\r\n".to_vec()
        };
        lines.write_all(&answer).await?;
    }
}

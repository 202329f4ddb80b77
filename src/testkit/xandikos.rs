//! A second real CalDAV server for tests: [`Xandikos`] (PyPI's `xandikos`, run as
//! `xandikos serve`, or `python3 -m xandikos.web`) on `127.0.0.1` at a free port, its
//! store in a temporary directory, one calendar collection made with `MKCALENDAR`;
//! killed on drop. Xandikos serves without authentication on plain HTTP (its Basic
//! authentication needs its own TLS), so the credentials engaged sends are ignored.
//! The same CalDAV tests run against it and against [`Radicale`] through
//! [`CalDavServer`].

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hyper::Method;

use crate::http_client::HttpClient;
use crate::testkit::caldav::Radicale;

/// What a test that needs Xandikos says when it is missing.
pub const INSTALL_XANDIKOS: &str = "the Xandikos CalDAV tests need Xandikos: run `bash scripts/test` (it installs it), or `pip install xandikos`";

/// How long Xandikos may take to start and answer.
const START_BOUND: Duration = Duration::from_secs(30);

/// A real CalDAV server a test talks to: its calendar collection and credentials.
pub trait CalDavServer {
    /// The calendar collection's URL, ending in `/`.
    fn url(&self) -> &str;
    fn user(&self) -> &str;
    fn password(&self) -> &str;
}

impl CalDavServer for Radicale {
    fn url(&self) -> &str {
        Radicale::url(self)
    }
    fn user(&self) -> &str {
        Radicale::user(self)
    }
    fn password(&self) -> &str {
        Radicale::password(self)
    }
}

/// A running Xandikos with one calendar collection, `/ana/calendars/sales/`.
pub struct Xandikos {
    child: Child,
    _dir: tempfile::TempDir,
    url: String,
}

impl Xandikos {
    /// Starts Xandikos and makes the collection, answering within a bound; panics
    /// (saying how to install it) when Xandikos is missing.
    pub async fn start() -> Xandikos {
        let dir = tempfile::tempdir().expect("a temporary directory for Xandikos");
        let port = crate::testkit::serve::free_port();
        let mut child = command()
            .arg("serve")
            .arg("-d")
            .arg(dir.path().join("store"))
            .args(["--autocreate", "--current-user-principal", "/ana/"])
            .args(["-l", "127.0.0.1", "-p", &port.to_string()])
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .arg("--no-detect-systemd")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{INSTALL_XANDIKOS} (starting it: {e})"));
        let url = format!("http://127.0.0.1:{port}/ana/calendars/sales/");
        let client = HttpClient::new(Duration::from_secs(5), None).expect("an HTTP client");
        let started = std::time::Instant::now();
        loop {
            let answer = client
                .request(
                    Method::from_bytes(b"MKCALENDAR").expect("a method"),
                    &url,
                    &[],
                    Vec::new(),
                    Duration::from_secs(5),
                    64 * 1024,
                )
                .await;
            match answer {
                Ok(answer) if answer.status == 201 => break,
                Ok(answer) => {
                    let _ = child.kill();
                    panic!("Xandikos's MKCALENDAR answered {}", answer.status)
                }
                Err(_) if started.elapsed() < START_BOUND => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => {
                    let _ = child.kill();
                    panic!("Xandikos does not answer: {e:?}")
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("Xandikos exited: {status} ({INSTALL_XANDIKOS})");
            }
        }
        Xandikos {
            child,
            _dir: dir,
            url,
        }
    }
}

impl CalDavServer for Xandikos {
    fn url(&self) -> &str {
        &self.url
    }
    fn user(&self) -> &str {
        "ana"
    }
    fn password(&self) -> &str {
        "not-checked"
    }
}

impl Drop for Xandikos {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `xandikos` on the PATH, else `python3 -m xandikos`.
fn command() -> Command {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("xandikos").is_file()));
    if on_path {
        Command::new("xandikos")
    } else {
        let mut command = Command::new("python3");
        command.args(["-m", "xandikos"]);
        command
    }
}

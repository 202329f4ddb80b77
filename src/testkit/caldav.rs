//! A real CalDAV server for tests: [`Radicale`] (Debian's `radicale`, or PyPI's run as
//! `python3 -m radicale`) on `127.0.0.1` at a port of its choosing, its storage, config
//! and `htpasswd` file (plain) in a temporary directory, one user and one calendar
//! collection made with `MKCALENDAR`; killed on drop. Without Radicale a test fails and
//! says how to install it ([`INSTALL`]). And [`not_caldav`]: a server answering every
//! request with an HTML page, as a web server at a wrong URL does; [`never_answers`]: one
//! that reads requests and never answers; [`unfiltered_collection`]: a collection that
//! answers every REPORT with the objects it holds, unexpanded and unfiltered (as simple
//! stores do), so that what a hostile event does to engaged's own reading is seen (Radicale
//! and Xandikos themselves hang filtering an event that repeats every second since 1900).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Method;

use crate::http_client::HttpClient;

/// What a test that needs Radicale says when it is missing.
pub const INSTALL: &str = "the CalDAV tests need Radicale: run `bash scripts/test` (it installs it), or `sudo apt-get install radicale` (or `pip install radicale`)";

/// How long Radicale may take to start and answer.
const START_BOUND: Duration = Duration::from_secs(30);

/// A running Radicale with one user and one calendar collection.
pub struct Radicale {
    child: Child,
    _dir: tempfile::TempDir,
    base: String,
    user: String,
    password: String,
    url: String,
}

impl Radicale {
    /// Starts Radicale with user `ana` and her collection `/ana/sales/`, answering
    /// within a bound; panics (saying how to install it) when Radicale is missing.
    pub async fn start() -> Radicale {
        let dir = tempfile::tempdir().expect("a temporary directory for Radicale");
        let (user, password) = ("ana".to_string(), "s3cret-calendar".to_string());
        let users = dir.path().join("users");
        std::fs::write(&users, format!("{user}:{password}\n")).expect("Radicale's users");
        let config = dir.path().join("config");
        // A port of ours: Radicale 3.9 (PyPI) refuses port 0, which Debian's 3.1 took.
        let port = crate::testkit::serve::free_port();
        std::fs::write(
            &config,
            format!(
                "[server]\nhosts = 127.0.0.1:{port}\n\n[auth]\ntype = htpasswd\nhtpasswd_filename = {}\nhtpasswd_encryption = plain\n\n[storage]\nfilesystem_folder = {}\n\n[rights]\ntype = owner_only\n\n[web]\ntype = none\n\n[logging]\nlevel = info\n",
                users.display(),
                dir.path().join("collections").display(),
            ),
        )
        .expect("Radicale's config");
        let mut child = command()
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{INSTALL} (starting it: {e})"));
        let stderr = child.stderr.take().expect("Radicale's log");
        // Its log names the port it bound; the rest of the log is read and dropped so
        // that the pipe never fills.
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut port_tx = Some(port_tx);
            let mut log = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(tx) = port_tx.as_ref() {
                    log.push_str(&line);
                    log.push('\n');
                    if let Some(port) = listening_port(&line) {
                        let _ = tx.send(Ok(port));
                        port_tx = None;
                    }
                }
            }
            if let Some(tx) = port_tx {
                let _ = tx.send(Err(log));
            }
        });
        let port = match port_rx.recv_timeout(START_BOUND) {
            Ok(Ok(port)) => port,
            Ok(Err(log)) => {
                let _ = child.kill();
                panic!("Radicale stopped before listening ({INSTALL}):\n{log}")
            }
            Err(_) => {
                let _ = child.kill();
                panic!("Radicale did not listen within {START_BOUND:?}")
            }
        };
        let base = format!("http://127.0.0.1:{port}");
        let url = format!("{base}/{user}/sales/");
        let mut radicale = Radicale {
            child,
            _dir: dir,
            base,
            user,
            password,
            url,
        };
        radicale.make_calendar().await;
        radicale
    }

    /// `MKCALENDAR` of the collection, tried until Radicale answers.
    async fn make_calendar(&mut self) {
        let client = HttpClient::new(Duration::from_secs(5), None).expect("an HTTP client");
        let started = std::time::Instant::now();
        loop {
            let answer = client
                .request(
                    Method::from_bytes(b"MKCALENDAR").expect("a method"),
                    &self.url,
                    &[("authorization", self.basic())],
                    Vec::new(),
                    Duration::from_secs(5),
                    64 * 1024,
                )
                .await;
            match answer {
                Ok(answer) if answer.status == 201 => return,
                Ok(answer) => panic!("Radicale's MKCALENDAR answered {}", answer.status),
                Err(e) if started.elapsed() < START_BOUND => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("Radicale does not answer: {e:?}"),
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("Radicale exited: {status}");
            }
        }
    }

    /// The calendar collection's URL (`http://127.0.0.1:port/ana/sales/`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server's root (`http://127.0.0.1:port`).
    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn user(&self) -> &str {
        &self.user
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// The `Authorization` header's value for the user.
    pub fn basic(&self) -> String {
        use base64::Engine as _;
        let credentials = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", self.user, self.password));
        format!("Basic {credentials}")
    }
}

impl Drop for Radicale {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `radicale` on the PATH, else `python3 -m radicale`.
fn command() -> Command {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("radicale").is_file()));
    if on_path {
        Command::new("radicale")
    } else {
        let mut command = Command::new("python3");
        command.args(["-m", "radicale"]);
        command
    }
}

/// The port of Radicale's `Listening on '[127.0.0.1]:43311'` (or `'127.0.0.1:43311'`).
fn listening_port(line: &str) -> Option<u16> {
    let rest = &line[line.find("Listening on")?..];
    let quoted = rest.split('\'').nth(1)?;
    quoted
        .rsplit(':')
        .next()?
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// A server answering every request `200` with an HTML page: not CalDAV.
pub async fn not_caldav() -> SocketAddr {
    crate::testkit::serve::serve(|_, _| async {
        let mut response = hyper::Response::new(Full::new(Bytes::from_static(
            b"<!DOCTYPE html>\n<html><head><title>Welcome</title></head><body><p>It works!<br></body></html>\n",
        )));
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/html; charset=utf-8"),
        );
        Some(response)
    })
    .await
}

/// A calendar collection holding `objects` (iCalendar texts): a `PROPFIND` finds a
/// calendar, a `REPORT` answers every object unexpanded and unfiltered, whatever the
/// range asked for; anything else is 405. Its URL: `http://{addr}/cal/`.
pub async fn unfiltered_collection(objects: Vec<String>) -> SocketAddr {
    let objects = std::sync::Arc::new(objects);
    crate::testkit::serve::serve(move |parts, _| {
        let objects = objects.clone();
        async move {
            let body = match parts.method.as_str() {
                "PROPFIND" => concat!(
                    "<?xml version=\"1.0\"?><D:multistatus xmlns:D=\"DAV:\" ",
                    "xmlns:C=\"urn:ietf:params:xml:ns:caldav\"><D:response><D:href>/cal/</D:href>",
                    "<D:propstat><D:prop><D:resourcetype><D:collection/><C:calendar/>",
                    "</D:resourcetype></D:prop><D:status>HTTP/1.1 200 OK</D:status>",
                    "</D:propstat></D:response></D:multistatus>"
                )
                .to_string(),
                "REPORT" => {
                    let mut body = String::from(
                        "<?xml version=\"1.0\"?><D:multistatus xmlns:D=\"DAV:\" xmlns:C=\"urn:ietf:params:xml:ns:caldav\">",
                    );
                    for (i, object) in objects.iter().enumerate() {
                        let escaped = object
                            .replace('&', "&amp;")
                            .replace('<', "&lt;")
                            .replace('>', "&gt;");
                        body.push_str(&format!(
                            "<D:response><D:href>/cal/{i}.ics</D:href><D:propstat><D:prop>\
                             <D:getetag>\"{i}\"</D:getetag><C:calendar-data>{escaped}</C:calendar-data>\
                             </D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>"
                        ));
                    }
                    body.push_str("</D:multistatus>");
                    body
                }
                _ => {
                    let mut refused = hyper::Response::new(Full::new(Bytes::new()));
                    *refused.status_mut() = hyper::StatusCode::METHOD_NOT_ALLOWED;
                    return Some(refused);
                }
            };
            let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
            *response.status_mut() = hyper::StatusCode::MULTI_STATUS;
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/xml; charset=utf-8"),
            );
            Some(response)
        }
    })
    .await
}

/// A server that reads every request and never answers it (a hung server).
pub async fn never_answers() -> SocketAddr {
    crate::testkit::serve::serve(|_, _| std::future::pending()).await
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_port_is_read_from_radicales_log() {
        let line = "[2026-11-26 14:28:30 +0000] [31077] [INFO] Listening on '[127.0.0.1]:43311'";
        assert_eq!(super::listening_port(line), Some(43311));
        assert_eq!(
            super::listening_port("Listening on '127.0.0.1:8080'"),
            Some(8080)
        );
        assert_eq!(super::listening_port("Radicale server ready"), None);
    }
}

//! The real `engaged` binary, run as a process: the `org` and `key` commands with the
//! server stopped and running, the self-signed certificate, stopping on SIGTERM,
//! durability across `kill -9`, plain HTTP, configuration layering and `--help`, and the
//! engagement engine across restarts (a send cut by `kill -9` is never repeated; a step
//! that fell due while stopped runs after the restart), the write-ahead log's refusals
//! (`check`, `recover --accept-loss`) and a full disk (on a tmpfs, where one can be
//! mounted).
//!
//! Every server runs on an ephemeral loopback port in its own temporary data directory;
//! its port is read from the `listening address=...` line it logs. Every child process
//! is killed when its test ends, and every wait is bounded.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use serde_json::{json, Value};

use engaged::testkit::{client_trusting, enc, poll, Reply, Response, WebhookReceiver};

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// How long a server may take to log its address, and a command to finish.
const START_TIMEOUT: Duration = Duration::from_secs(20);
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a server may take to stop after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

const EPOCH: &str = "1970-01-01T00:00:00Z";

// ---- processes ------------------------------------------------------------------------

/// The binary, with no `ENGAGED_*` or `RUST_LOG` inherited from the test's environment.
fn engaged() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_engaged"));
    for (name, _) in std::env::vars_os() {
        if let Some(name) = name.to_str() {
            if name.starts_with("ENGAGED_") || name == "RUST_LOG" {
                cmd.env_remove(name);
            }
        }
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// Runs `cmd` to its end (killed and failed after `COMMAND_TIMEOUT`).
fn run_to_exit(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn engaged");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let status = match wait_with_deadline(&mut child, COMMAND_TIMEOUT) {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            let err = stderr.join().unwrap_or_default();
            panic!(
                "{cmd:?} did not finish within {COMMAND_TIMEOUT:?}; stderr:\n{}",
                String::from_utf8_lossy(&err)
            );
        }
    };
    Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

fn wait_with_deadline(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The result of one `engaged ...` command.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn ok(self, what: &str) -> Ran {
        assert_eq!(
            self.code,
            Some(0),
            "{what}: exit status; stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// `engaged --data-dir <data_dir> <args...>`.
fn cli(data_dir: &Path, args: &[&str]) -> Ran {
    let mut cmd = engaged();
    cmd.arg("--data-dir").arg(data_dir).args(args);
    let out = run_to_exit(cmd);
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Asserts a failure as the binary reports one: status 1, `engaged: <message>`.
fn assert_cli_failure(ran: &Ran, what: &str) {
    assert_eq!(
        ran.code,
        Some(1),
        "{what}: exit status; stdout:\n{}\nstderr:\n{}",
        ran.stdout,
        ran.stderr
    );
    assert!(
        ran.stderr.starts_with("engaged: ") && ran.stderr.trim().len() > "engaged:".len(),
        "{what}: stderr is `engaged: <message>`: {:?}",
        ran.stderr
    );
}

/// `engaged init`: the database a first `engaged serve` would create (the
/// administration commands refuse a directory without one).
fn ensure_database(data_dir: &Path) {
    cli(data_dir, &["init"]).ok("init");
}

/// Creates `org` and a key of `scope` in it; returns the key.
fn create_key(data_dir: &Path, org: &str, scope: &str) -> String {
    ensure_database(data_dir);
    cli(data_dir, &["org", "create", org]).ok("org create");
    let ran = cli(data_dir, &["key", "create", "--org", org, "--scope", scope]).ok("key create");
    let key = ran.stdout.trim().to_string();
    assert!(
        key.starts_with("ek_"),
        "key create prints the key: {:?}",
        ran.stdout
    );
    key
}

/// One row of `engaged key list`.
#[derive(Debug, Clone)]
struct KeyRow {
    id: String,
    org: String,
    scope: String,
    state: String,
    created: String,
    name: String,
}

/// Parses `engaged key list`, checking its header.
fn key_rows(stdout: &str) -> Vec<KeyRow> {
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_else(|| panic!("key list prints a header: {stdout:?}"))
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["ID", "ORG", "SCOPE", "STATE", "CREATED", "NAME"],
        "key list header"
    );
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            assert!(
                cols.len() == 5 || cols.len() == 6,
                "key list row has 5 or 6 columns: {line:?}"
            );
            KeyRow {
                id: cols[0].into(),
                org: cols[1].into(),
                scope: cols[2].into(),
                state: cols[3].into(),
                created: cols[4].into(),
                name: cols.get(5).copied().unwrap_or_default().into(),
            }
        })
        .collect()
}

/// A running `engaged serve`, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    scheme: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// `engaged serve --data-dir <data_dir> --listen 127.0.0.1:0 <extra...>`.
    fn start(data_dir: &Path, extra: &[&str]) -> Server {
        let mut args = vec!["--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        Server::spawn(data_dir, &args, &[])
    }

    /// `engaged serve --data-dir <data_dir> <args...>` with `envs` set; waits for the
    /// `listening` line.
    fn spawn(data_dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Server {
        let mut cmd = engaged();
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(data_dir)
            .args(args)
            .envs(envs.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn engaged serve");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (lines_tx, lines) = mpsc::channel::<String>();
        {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    log.lock().unwrap().push_str(&format!("{line}\n"));
                    let _ = lines_tx.send(line);
                }
            });
        }
        let deadline = Instant::now() + START_TIMEOUT;
        let found = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(address) = listening_address(&line) {
                        break Ok(address);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    break Err(format!("no `listening` line within {START_TIMEOUT:?}"))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Err("the server closed stderr (exited?)".to_string())
                }
            }
        };
        match found {
            Ok((scheme, addr)) => Server {
                child,
                addr,
                scheme,
                log,
            },
            Err(why) => {
                let _ = child.kill();
                let status = child.wait();
                let log = log.lock().unwrap().clone();
                panic!("{cmd:?}: {why}; status {status:?}; stderr:\n{log}");
            }
        }
    }

    fn base(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.pid()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} {}", self.pid());
    }

    fn assert_running(&mut self) {
        let status = self.child.try_wait().expect("try_wait");
        assert!(
            status.is_none(),
            "the server exited ({status:?}); stderr:\n{}",
            self.log()
        );
    }

    /// Waits (bounded) for the process to end.
    fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        wait_with_deadline(&mut self.child, timeout)
    }

    /// `kill -9`, then waits for the process to be gone.
    fn kill_9(&mut self) {
        self.signal("-KILL");
        let status = self
            .wait_exit(STOP_TIMEOUT)
            .expect("a killed server is gone");
        assert!(status.code().is_none(), "killed by a signal: {status:?}");
    }

    /// SIGTERM, then waits for the process to end; returns its status.
    fn terminate(&mut self) -> ExitStatus {
        self.signal("-TERM");
        match self.wait_exit(STOP_TIMEOUT) {
            Some(status) => status,
            None => panic!(
                "the server did not stop within {STOP_TIMEOUT:?} of SIGTERM; stderr:\n{}",
                self.log()
            ),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `(scheme, address)` from the `listening address=https://127.0.0.1:PORT` log line.
fn listening_address(line: &str) -> Option<(String, SocketAddr)> {
    if !line.contains("listening") {
        return None;
    }
    let rest = &line[line.find("address=")? + "address=".len()..];
    let url = rest.split_whitespace().next()?.trim_matches('"');
    let (scheme, addr) = url.split_once("://")?;
    Some((scheme.to_string(), addr.parse().ok()?))
}

// ---- HTTP -----------------------------------------------------------------------------

fn https_client(data_dir: &Path) -> HttpsClient {
    client_trusting(&data_dir.join("tls/cert.pem"))
}

async fn send(
    client: &HttpsClient,
    method: Method,
    url: &str,
    key: Option<&str>,
    body: Option<&Value>,
) -> Response {
    let body = body.map(|body| ("application/json", serde_json::to_vec(body).expect("json")));
    send_bytes(client, method, url, key, body).await
}

/// [`send`] with a body of any content type (`(type, bytes)`).
async fn send_bytes(
    client: &HttpsClient,
    method: Method,
    url: &str,
    key: Option<&str>,
    body: Option<(&str, Vec<u8>)>,
) -> Response {
    let mut builder = Request::builder().method(method).uri(url);
    if let Some(key) = key {
        builder = builder.header("x-api-key", key);
    }
    let bytes = match body {
        Some((content_type, bytes)) => {
            builder = builder.header("content-type", content_type);
            bytes
        }
        None => Vec::new(),
    };
    let request = builder
        .body(Full::new(Bytes::from(bytes)))
        .expect("request");
    let response = tokio::time::timeout(Duration::from_secs(60), client.request(request))
        .await
        .unwrap_or_else(|_| panic!("no answer to {url} within 60s"))
        .unwrap_or_else(|e| panic!("request to {url}: {e:?}"));
    Response::read(response).await
}

fn text(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

fn all_leads_path() -> String {
    format!("/v1/leads?updatedSince={}", enc(EPOCH))
}

/// `GET /healthz` over plain HTTP/1.1 on a raw socket; returns the status line.
fn raw_http_healthz(addr: SocketAddr) -> String {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("write request");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    answer.lines().next().unwrap_or_default().to_string()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

// ---- tests ----------------------------------------------------------------------------

#[test]
fn org_and_key_commands_work_on_a_stopped_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    ensure_database(data);

    let ran = cli(data, &["org", "create", "acme"]).ok("org create");
    let org_id = ran.stdout.trim();
    assert_eq!(ran.stdout.lines().count(), 1, "org create prints one line");
    assert!(
        org_id.starts_with("org_"),
        "org create prints the id: {org_id:?}"
    );

    cli(data, &["org", "create", "beta"]).ok("org create");
    let list = cli(data, &["org", "list"]).ok("org list");
    let lines: Vec<Vec<&str>> = list
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["ID", "CREATED", "NAME"], "{}", list.stdout);
    assert_eq!(lines.len(), 3, "two organizations: {}", list.stdout);
    assert_eq!(
        (lines[1][0], lines[1][2]),
        (org_id, "acme"),
        "{}",
        list.stdout
    );
    assert_eq!(lines[2][2], "beta", "in creation order: {}", list.stdout);

    let ran = cli(
        data,
        &["key", "create", "--org", "acme", "--name", "laptop"],
    )
    .ok("key create");
    assert_eq!(
        ran.stdout.lines().count(),
        1,
        "key create prints the key alone: {:?}",
        ran.stdout
    );
    let key = ran.stdout.trim().to_string();
    assert!(key.starts_with("ek_"), "key: {key:?}");
    assert!(
        !ran.stderr.contains(&key),
        "the key is printed once, on stdout"
    );

    let list = cli(data, &["key", "list"]).ok("key list");
    assert!(!list.stdout.contains(&key), "key list never shows the key");
    assert!(!list.stderr.contains(&key), "key list never shows the key");
    let rows = key_rows(&list.stdout);
    assert_eq!(rows.len(), 1, "one key: {rows:?}");
    let row = &rows[0];
    assert!(row.id.starts_with("key_"), "{row:?}");
    assert_eq!(
        (
            row.org.as_str(),
            row.scope.as_str(),
            row.state.as_str(),
            row.name.as_str()
        ),
        ("acme", "write", "active", "laptop"),
        "{row:?}"
    );
    assert!(!row.created.is_empty());

    assert_cli_failure(&cli(data, &["org", "create", "acme"]), "duplicate org");
    assert_cli_failure(
        &cli(data, &["key", "create", "--org", "nobody"]),
        "key create for an unknown org",
    );
    let ran = cli(
        data,
        &["key", "create", "--org", "acme", "--scope", "owner"],
    );
    assert!(
        ran.code.is_some_and(|c| c != 0),
        "unknown scope fails: {:?} {}",
        ran.code,
        ran.stderr
    );
    assert!(ran.stdout.trim().is_empty(), "no key for an unknown scope");

    // The failures left nothing behind, and no server (so no socket) was involved.
    let rows = key_rows(
        &cli(data, &["key", "list", "--org", "acme"])
            .ok("key list")
            .stdout,
    );
    assert_eq!(rows.len(), 1, "failed creates add no key: {rows:?}");
    assert!(!data.join("admin.sock").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_commands_go_through_the_socket_of_a_running_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let mut server = Server::start(data, &[]);

    let socket = data.join("admin.sock");
    let meta = std::fs::symlink_metadata(&socket).expect("admin.sock exists while running");
    assert!(meta.file_type().is_socket(), "admin.sock is a socket");
    assert_eq!(mode(&socket), 0o600, "admin.sock mode");

    // The server holds the database's lock: these can only succeed through the socket.
    let key = create_key(data, "acme", "read");
    server.assert_running();

    let client = https_client(data);
    let url = format!("{}{}", server.base(), all_leads_path());
    let r = send(&client, Method::GET, &url, Some(&key), None).await;
    assert_eq!(r.status, 200, "a new key authenticates: {}", text(&r));

    let rows = key_rows(&cli(data, &["key", "list"]).ok("key list").stdout);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].state, "active");
    let id = rows[0].id.clone();

    let ran = cli(data, &["key", "revoke", &id]).ok("key revoke");
    assert!(
        ran.stdout.trim().is_empty(),
        "revoke prints nothing on stdout"
    );
    server.assert_running();
    let rows = key_rows(&cli(data, &["key", "list"]).ok("key list").stdout);
    assert_eq!(
        (rows.len(), rows[0].id.as_str(), rows[0].state.as_str()),
        (1, id.as_str(), "revoked"),
        "{rows:?}"
    );

    let r = send(&client, Method::GET, &url, Some(&key), None).await;
    assert_eq!(r.status, 403, "a revoked key is refused: {}", text(&r));
    assert_eq!(r.json(), json!({"message": "Forbidden"}));

    // Errors come back through the socket too.
    assert_cli_failure(&cli(data, &["org", "create", "acme"]), "duplicate org");
    assert_cli_failure(
        &cli(data, &["key", "revoke", "key_doesnotexist"]),
        "revoke an unknown key",
    );
    server.assert_running();
    assert_eq!(mode(&socket), 0o600, "admin.sock mode");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_self_signed_certificate_is_generated_once_and_reused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let (cert_path, key_path) = (data.join("tls/cert.pem"), data.join("tls/key.pem"));
    assert!(!cert_path.exists());

    let mut first = Server::start(data, &[]);
    let cert = std::fs::read(&cert_path).expect("cert.pem written on first start");
    let key = std::fs::read(&key_path).expect("key.pem written on first start");
    assert!(String::from_utf8_lossy(&cert).contains("BEGIN CERTIFICATE"));
    assert!(String::from_utf8_lossy(&key).contains("PRIVATE KEY"));
    assert_eq!(mode(&key_path), 0o600, "key.pem mode");
    let r = send(
        &https_client(data),
        Method::GET,
        &format!("{}/healthz", first.base()),
        None,
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", text(&r));
    let status = first.terminate();
    assert_eq!(status.code(), Some(0), "{}", first.log());
    drop(first);

    // A name added later does not replace a certificate clients may have pinned: the
    // log says which names it lacks and how to get a new one.
    let second = Server::start(data, &["--tls-names", "localhost,engaged.example.test"]);
    assert_eq!(
        std::fs::read(&cert_path).expect("cert.pem"),
        cert,
        "same certificate"
    );
    let warning = second
        .log()
        .lines()
        .find(|l| l.contains("does not cover these names"))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no warning about the new name:\n{}", second.log()));
    assert!(
        warning.trim_end().ends_with("names=engaged.example.test") && warning.contains("move"),
        "{warning}"
    );
    assert_eq!(std::fs::read(&key_path).expect("key.pem"), key, "same key");
    assert_eq!(mode(&key_path), 0o600, "key.pem mode");
    // A client pinned to the first certificate still connects.
    let client = client_trusting_pem(dir.path(), &cert);
    let r = send(
        &client,
        Method::GET,
        &format!("{}/healthz", second.base()),
        None,
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", text(&r));
}

/// A client trusting the certificate `pem` (written next to `dir`'s data).
fn client_trusting_pem(dir: &Path, pem: &[u8]) -> HttpsClient {
    let path: PathBuf = dir.join("pinned-cert.pem");
    std::fs::write(&path, pem).expect("write pinned cert");
    client_trusting(&path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_cleanly_and_removes_the_socket() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let key = create_key(data, "acme", "write");
    let mut server = Server::start(data, &[]);
    assert!(data.join("admin.sock").exists());

    // A client keeps its (idle, keep-alive) connection open across the stop.
    let client = https_client(data);
    let r = send(
        &client,
        Method::POST,
        &format!("{}/v1/leads", server.base()),
        Some(&key),
        Some(&json!({"id": "L1"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", text(&r));

    let status = server.terminate();
    assert_eq!(
        status.code(),
        Some(0),
        "SIGTERM ends with status 0 ({status:?}); stderr:\n{}",
        server.log()
    );
    assert!(
        !data.join("admin.sock").exists(),
        "admin.sock is removed on a clean stop"
    );
    drop(client);
}

/// A request that may meet a killed server: `None` when no whole answer came (none, or
/// its body cut short).
async fn try_send(client: &HttpsClient, url: &str, key: &str, body: &Value) -> Option<Response> {
    let request = Request::builder()
        .method(Method::POST)
        .uri(url)
        .header("x-api-key", key)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            serde_json::to_vec(body).expect("json"),
        )))
        .expect("request");
    let response = tokio::time::timeout(Duration::from_secs(20), client.request(request))
        .await
        .ok()?
        .ok()?;
    Response::try_read(response).await.ok()
}

/// Several clients create leads at once while the server is killed with `kill -9`,
/// three times over: after each kill `engaged check` finds the log sound, and at the
/// end every lead whose 201 came back is there, once, and nothing that was not sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_leads_survive_kill_9() {
    /// Kills, each while the clients write.
    const KILLS: usize = 3;
    /// Clients writing at once.
    const WRITERS: usize = 4;
    /// The most leads one client sends in a round (the kill usually cuts it short).
    const PER_WRITER: usize = 150;
    /// Leads answered in a round before its kill.
    const BEFORE_KILL: usize = 40;
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let key = create_key(data, "acme", "write");

    let acknowledged = Arc::new(Mutex::new(BTreeSet::new()));
    let mut sent = BTreeSet::new();
    for round in 0..KILLS {
        let mut server = Server::start(data, &[]);
        let client = https_client(data);
        let url = format!("{}/v1/leads", server.base());
        let mut tasks = Vec::new();
        for writer in 0..WRITERS {
            let (client, url, key) = (client.clone(), url.clone(), key.clone());
            let acknowledged = acknowledged.clone();
            tasks.push(tokio::spawn(async move {
                let mut sent = Vec::new();
                for i in 0..PER_WRITER {
                    let id = format!("k{round}-w{writer}-{i:03}");
                    sent.push(id.clone());
                    let body = json!({"id": id, "firstName": format!("N{i}")});
                    // No answer: the server was killed; this client stops.
                    let Some(r) = try_send(&client, &url, &key, &body).await else {
                        break;
                    };
                    assert_eq!(r.status, 201, "create {id}: {}", text(&r));
                    acknowledged.lock().unwrap().insert(id);
                }
                sent
            }));
        }
        let target = acknowledged.lock().unwrap().len() + BEFORE_KILL;
        poll(
            "leads answered before the kill",
            Duration::from_secs(60),
            || {
                let acknowledged = acknowledged.clone();
                async move {
                    let answered = acknowledged.lock().unwrap().len();
                    if answered >= target {
                        Ok(())
                    } else {
                        Err(format!("{answered} of {target} in round {round}"))
                    }
                }
            },
        )
        .await;
        server.kill_9();
        drop(server);
        for task in tasks {
            sent.extend(task.await.expect("writer task"));
        }
        drop(client);

        let ran = cli(data, &["check"]).ok("check after kill -9");
        assert!(
            ran.stdout.contains("not stopped cleanly")
                && ran.stdout.contains("names this database"),
            "{}",
            ran.stdout
        );
    }

    let server = Server::start(data, &[]);
    let client = https_client(data);
    let mut listed = Vec::new();
    let mut token: Option<String> = None;
    for _page in 0..=sent.len() / 50 + 1 {
        let mut url = format!("{}{}&limit=50", server.base(), all_leads_path());
        if let Some(token) = &token {
            url.push_str(&format!("&nextToken={}", enc(token)));
        }
        let r = send(&client, Method::GET, &url, Some(&key), None).await;
        assert_eq!(r.status, 200, "{}", text(&r));
        let body = r.json();
        for lead in body["leads"].as_array().expect("leads array") {
            listed.push(lead["id"].as_str().expect("lead id").to_string());
        }
        match &body["nextToken"] {
            Value::Null => {
                token = None;
                break;
            }
            Value::String(next) => token = Some(next.clone()),
            other => panic!("nextToken is a string or null: {other}"),
        }
    }
    assert!(token.is_none(), "paging ends");
    let unique: BTreeSet<String> = listed.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        listed.len(),
        "no lead listed twice: {listed:?}"
    );
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() >= KILLS * BEFORE_KILL);
    let lost: Vec<&String> = acknowledged.difference(&unique).collect();
    assert!(
        lost.is_empty(),
        "every acknowledged lead survived kill -9: lost {lost:?}"
    );
    let unsent: Vec<&String> = unique.difference(&sent).collect();
    assert!(unsent.is_empty(), "only leads sent are listed: {unsent:?}");
}

#[test]
fn insecure_http_serves_plain_http() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &["--insecure-http"]);
    assert_eq!(server.scheme, "http", "{}", server.log());
    let status = raw_http_healthz(server.addr);
    assert!(
        status.starts_with("HTTP/1.1 200"),
        "plain GET /healthz: {status:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration_layers_file_then_env_then_flags() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let file = dir.path().join("engaged.toml");
    std::fs::write(&file, "listen = \"127.0.0.1:0\"\ninsecure_http = true\n").expect("config");
    let file_arg = file.to_str().expect("utf-8 path");

    // The file alone: its listen address and plain HTTP.
    {
        let server = Server::spawn(&data, &["--config", file_arg], &[]);
        assert_eq!(server.scheme, "http", "{}", server.log());
        assert!(server.addr.ip().is_loopback(), "{}", server.addr);
        assert_ne!(
            server.addr.port(),
            8443,
            "the file's port 0, not the default"
        );
        assert!(raw_http_healthz(server.addr).starts_with("HTTP/1.1 200"));
    }

    // The environment over the file: HTTPS.
    {
        let server = Server::spawn(
            &data,
            &["--config", file_arg],
            &[("ENGAGED_INSECURE_HTTP", "false")],
        );
        assert_eq!(server.scheme, "https", "{}", server.log());
        let r = send(
            &https_client(&data),
            Method::GET,
            &format!("{}/healthz", server.base()),
            None,
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{}", text(&r));
    }

    // A flag over the environment: plain HTTP again.
    {
        let server = Server::spawn(
            &data,
            &["--config", file_arg, "--insecure-http"],
            &[("ENGAGED_INSECURE_HTTP", "false")],
        );
        assert_eq!(server.scheme, "http", "{}", server.log());
        assert!(raw_http_healthz(server.addr).starts_with("HTTP/1.1 200"));
    }

    // The file through ENGAGED_CONFIG works the same way.
    {
        let server = Server::spawn(&data, &[], &[("ENGAGED_CONFIG", file_arg)]);
        assert_eq!(server.scheme, "http", "{}", server.log());
    }

    // An unknown key: `serve` refuses to start and names the file.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "listen = \"127.0.0.1:0\"\ncolour = \"blue\"\n").expect("config");
    let mut cmd = engaged();
    cmd.arg("serve")
        .arg("--data-dir")
        .arg(&data)
        .arg("--config")
        .arg(&bad);
    let out = run_to_exit(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "unknown key: stderr:\n{stderr}");
    assert!(
        stderr.contains("engaged: ") && stderr.contains(&bad.display().to_string()),
        "the message names the file: {stderr}"
    );
    assert!(!stderr.contains("listening"), "{stderr}");
}

#[test]
fn help_lists_the_commands() {
    let out = run_to_exit({
        let mut cmd = engaged();
        cmd.arg("--help");
        cmd
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let commands: BTreeSet<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for command in ["serve", "org", "key"] {
        assert!(commands.contains(command), "{command} in --help:\n{stdout}");
    }
    let out = run_to_exit({
        let mut cmd = engaged();
        cmd.args(["key", "create", "--help"]);
        cmd
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (flag, words) in [("--org <ORG>", "organization"), ("--scope <SCOPE>", "read")] {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(flag))
            .unwrap_or_else(|| panic!("{flag} in key create --help:\n{stdout}"));
        assert!(
            line.to_lowercase().contains(words),
            "{flag} is explained: {line:?}"
        );
    }
}

#[test]
fn the_data_directory_and_database_are_private_whoever_creates_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("fresh");
    let server = Server::start(&data, &[]);
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("engaged.redb")), 0o600);
    drop(server);

    // `init` creates the same, and leaves an existing database alone.
    let data = dir.path().join("a/b");
    let ran = cli(&data, &["init"]).ok("init");
    assert!(ran.stderr.contains("created"), "{}", ran.stderr);
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("engaged.redb")), 0o600);
    cli(&data, &["org", "create", "acme"]).ok("org create after init");
    let ran = cli(&data, &["init"]).ok("init again");
    assert!(ran.stderr.contains("already exists"), "{}", ran.stderr);
    let list = cli(&data, &["org", "list"]).ok("org list");
    assert!(
        list.stdout.contains("acme"),
        "init kept the data: {}",
        list.stdout
    );
}

/// A mistyped `--data-dir` must not quietly become a new, empty service: every command
/// but `serve` and `restore` refuses a directory without a database, names the file it
/// looked for and says how to create one, and leaves nothing behind.
#[test]
fn commands_refuse_a_data_directory_without_a_database() {
    let dir = tempfile::tempdir().expect("temp dir");
    let typo = dir.path().join("no/such/dir");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("empty dir");
    let backup = dir.path().join("backup.redb");
    let backup = backup.to_str().expect("utf-8");
    let commands: [&[&str]; 8] = [
        &["org", "create", "acme"],
        &["org", "list"],
        &["key", "create", "--org", "acme"],
        &["key", "list"],
        &["key", "revoke", "key_x"],
        &["backup", backup],
        &["check"],
        &["recover", "--accept-loss"],
    ];
    for data in [&typo, &empty] {
        for args in commands {
            let ran = cli(data, args);
            let what = format!("{args:?} in {}", data.display());
            assert_cli_failure(&ran, &what);
            let looked_at = data.join("engaged.redb");
            assert!(
                ran.stderr
                    .contains(&format!("no database at {}", looked_at.display())),
                "{what}: names the file it looked for: {}",
                ran.stderr
            );
            for how in ["serve", "init", "restore"] {
                assert!(
                    ran.stderr
                        .contains(&format!("--data-dir {} {how}", data.display())),
                    "{what}: says how to create one ({how}): {}",
                    ran.stderr
                );
            }
            assert!(ran.stdout.is_empty(), "{what}: {}", ran.stdout);
        }
    }
    assert!(
        !dir.path().join("no").exists(),
        "the mistyped directory was created"
    );
    assert_eq!(
        std::fs::read_dir(&empty).expect("read empty dir").count(),
        0,
        "something was left in an empty directory"
    );
    assert!(!Path::new(backup).exists());

    // The default `./data`, from a directory that has none.
    let mut cmd = engaged();
    cmd.current_dir(dir.path()).args(["key", "list"]);
    let out = run_to_exit(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no database at ./data/engaged.redb"),
        "{stderr}"
    );
    assert!(!dir.path().join("data").exists());
}

#[test]
fn readiness_and_stopping_are_reported_to_systemd() {
    let dir = tempfile::tempdir().expect("temp dir");
    let notify_path = dir.path().join("notify.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&notify_path).expect("notify socket");
    socket
        .set_read_timeout(Some(START_TIMEOUT))
        .expect("timeout");
    let data = dir.path().join("data");
    let notify = notify_path.to_str().expect("utf-8 path");
    let mut server = Server::spawn(
        &data,
        &["--listen", "127.0.0.1:0"],
        &[("NOTIFY_SOCKET", notify)],
    );
    let mut buf = [0u8; 256];
    let n = socket.recv(&mut buf).expect("a readiness message");
    assert!(String::from_utf8_lossy(&buf[..n]).contains("READY=1"));
    let status = server.terminate();
    assert_eq!(status.code(), Some(0), "{}", server.log());
    let n = socket.recv(&mut buf).expect("a stopping message");
    assert!(String::from_utf8_lossy(&buf[..n]).contains("STOPPING=1"));
}

/// Writes a self-signed certificate for localhost to `cert` and `key`; returns its PEM.
fn write_certificate(cert: &Path, key: &Path) -> String {
    let generated =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("certificate");
    std::fs::write(key, generated.key_pair.serialize_pem()).expect("write key");
    let pem = generated.cert.pem();
    std::fs::write(cert, &pem).expect("write cert");
    pem
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_certificate_for_new_connections_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let first_pem = write_certificate(&cert, &key);
    let (cert_arg, key_arg) = (cert.to_str().expect("utf-8"), key.to_str().expect("utf-8"));
    let server = Server::start(&data, &["--tls-cert", cert_arg, "--tls-key", key_arg]);
    let healthz = format!("{}/healthz", server.base());

    // A connection made with the first certificate, kept open across the reload.
    let old_client = client_trusting_pem(dir.path(), first_pem.as_bytes());
    assert_eq!(
        send(&old_client, Method::GET, &healthz, None, None)
            .await
            .status,
        200
    );

    let second_pem = write_certificate(&cert, &key);
    server.signal("-HUP");
    let deadline = Instant::now() + START_TIMEOUT;
    while !server.log().contains("reloaded the TLS certificate") {
        assert!(
            Instant::now() < deadline,
            "no reload logged:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // New connections see the new certificate...
    let new_client = client_trusting_pem(&dir.path().join("data"), second_pem.as_bytes());
    assert_eq!(
        send(&new_client, Method::GET, &healthz, None, None)
            .await
            .status,
        200
    );
    // ...and the connection opened before the reload still works.
    assert_eq!(
        send(&old_client, Method::GET, &healthz, None, None)
            .await
            .status,
        200
    );
    // A fresh client that trusts only the old certificate is refused.
    let stale = client_trusting_pem(&dir.path().join("data"), first_pem.as_bytes());
    let request = Request::get(&healthz)
        .body(Full::new(Bytes::new()))
        .expect("request");
    let refused = tokio::time::timeout(Duration::from_secs(20), stale.request(request))
        .await
        .expect("bounded");
    assert!(
        refused.is_err(),
        "a client trusting only the old certificate connected"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_of_a_running_server_restores_into_an_empty_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("live");
    let key = create_key(&data, "acme", "write");
    let server = Server::start(&data, &[]);
    let client = https_client(&data);
    for i in 0..20 {
        let r = send(
            &client,
            Method::POST,
            &format!("{}/v1/leads", server.base()),
            Some(&key),
            Some(&json!({"id": format!("b{i}")})),
        )
        .await;
        assert_eq!(r.status, 201, "{}", text(&r));
    }
    let backup = dir.path().join("backup.redb");
    cli(&data, &["backup", backup.to_str().expect("utf-8")]).ok("backup while running");
    // It holds personal data and webhook secrets: the owner's only.
    assert_eq!(mode(&backup), 0o600, "backup mode");
    cli(&data, &["check"]).ok("check while running");
    // A second backup never overwrites the first.
    assert_cli_failure(
        &cli(&data, &["backup", backup.to_str().expect("utf-8")]),
        "backup over a file",
    );
    drop(server);

    let restored = dir.path().join("restored");
    cli(&restored, &["restore", backup.to_str().expect("utf-8")]).ok("restore");
    assert_eq!(mode(&restored.join("engaged.redb")) & 0o777, 0o600);
    cli(&restored, &["check"]).ok("check the restored copy");
    assert_cli_failure(
        &cli(&restored, &["restore", backup.to_str().expect("utf-8")]),
        "restore over data",
    );
    // A write-ahead log left behind by a database moved away is never applied to the
    // backup: the restore is refused and names it.
    let orphan = dir.path().join("orphan");
    std::fs::create_dir(&orphan).expect("orphan dir");
    std::fs::write(orphan.join("engaged.wal"), b"batches of another database").expect("wal");
    let ran = cli(&orphan, &["restore", backup.to_str().expect("utf-8")]);
    assert_cli_failure(&ran, "restore beside another database's log");
    assert!(ran.stderr.contains("engaged.wal"), "{}", ran.stderr);
    assert!(!orphan.join("engaged.redb").exists());
    // A file that is no database is refused, and named once.
    let junk = dir.path().join("junk.redb");
    std::fs::write(&junk, b"not a database").expect("write junk");
    let ran = cli(
        &dir.path().join("from-junk"),
        &["restore", junk.to_str().expect("utf-8")],
    );
    assert_cli_failure(&ran, "restore of a file that is no database");
    assert_eq!(
        ran.stderr.matches(&junk.display().to_string()).count(),
        1,
        "the path once: {}",
        ran.stderr
    );
    assert!(!dir.path().join("from-junk/engaged.redb").exists());
    // The restored copy serves the same leads with the same key.
    let server = Server::start(&restored, &[]);
    let r = send(
        &https_client(&restored),
        Method::GET,
        &format!("{}{}", server.base(), all_leads_path()),
        Some(&key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", text(&r));
    let ids: BTreeSet<String> = r.json()["leads"]
        .as_array()
        .expect("leads")
        .iter()
        .map(|l| l["id"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(ids.len(), 20);
}

/// The `callId`s of every delivery `receiver` answered.
fn answered_call_ids(receiver: &WebhookReceiver) -> BTreeSet<String> {
    receiver
        .answered()
        .iter()
        .filter_map(|r| {
            let v: Value = serde_json::from_slice(&r.body).ok()?;
            Some(v["data"]["callId"].as_str()?.to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_webhooks_survive_kill_9() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let key = create_key(data, "acme", "admin");
    // Takes 300 ms to answer each delivery; a delivery counts once answered.
    let receiver = WebhookReceiver::answering(Reply::ok().after(Duration::from_millis(300))).await;
    let url = receiver.url.clone();
    let mut server = Server::start(data, &[]);
    let client = https_client(data);
    let base = server.base();
    let r = send(
        &client,
        Method::POST,
        &format!("{base}/v1/webhooks"),
        Some(&key),
        Some(&json!({"url": url})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", text(&r));
    let r = send(
        &client,
        Method::POST,
        &format!("{base}/v1/leads"),
        Some(&key),
        Some(&json!({"id": "L1"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", text(&r));
    let n = 40;
    for i in 0..n {
        let body = json!({"leadId": "L1", "direction": "OUTBOUND", "callStatus": "COMPLETE"});
        let r = send(
            &client,
            Method::PUT,
            &format!("{base}/v1/calls/c{i}"),
            Some(&key),
            Some(&body),
        )
        .await;
        assert_eq!(r.status, 201, "{}", text(&r));
    }
    // Every change is acknowledged; the slow receiver has seen only a few webhooks.
    server.kill_9();
    let before = answered_call_ids(&receiver).len();
    assert!(
        before < n,
        "all {n} webhooks arrived before the crash; the test proves nothing"
    );
    drop(server);

    let _restarted = Server::start(data, &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while answered_call_ids(&receiver).len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} webhooks arrived after the restart",
            answered_call_ids(&receiver).len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let expected: BTreeSet<String> = (0..n).map(|i| format!("c{i}")).collect();
    assert_eq!(answered_call_ids(&receiver), expected);
}

// ---- the engagement engine across restarts ---------------------------------------------

/// Sends a request and asserts its status; returns the JSON body (null when empty).
async fn call_json(
    client: &HttpsClient,
    method: Method,
    url: &str,
    key: &str,
    body: Option<&Value>,
    status: u16,
) -> Value {
    let r = send(client, method.clone(), url, Some(key), body).await;
    assert_eq!(r.status, status, "{method} {url}: {}", text(&r));
    if r.body.is_empty() {
        Value::Null
    } else {
        r.json()
    }
}

/// The `MESSAGE` events of `lead`.
async fn sms_events(client: &HttpsClient, base: &str, key: &str, lead: &str) -> Vec<Value> {
    let url = format!("{base}/v1/leads/{lead}/events?types=MESSAGE&limit=1000");
    let page = call_json(client, Method::GET, &url, key, None, 200).await;
    page["events"].as_array().expect("events array").clone()
}

/// The organization's messages to `lead` (owner `user`).
async fn sent_messages(client: &HttpsClient, base: &str, key: &str, lead: &str) -> Vec<Value> {
    let url = format!("{base}/v1/leads/{lead}/messages");
    let page = call_json(client, Method::GET, &url, key, None, 200).await;
    page["messages"]
        .as_array()
        .expect("messages array")
        .iter()
        .filter(|m| m["owner"] == json!("user"))
        .cloned()
        .collect()
}

/// `PUT /v1/profiles/{name}` with one sms step.
async fn one_step_profile(
    client: &HttpsClient,
    base: &str,
    key: &str,
    name: &str,
    after: &str,
    text: &str,
) {
    let body = json!({"instructions": "Be brief.",
                      "cadence": [{"after": after, "channel": "sms", "text": text}]});
    call_json(
        client,
        Method::PUT,
        &format!("{base}/v1/profiles/{name}"),
        key,
        Some(&body),
        200,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_interrupted_by_kill_9_becomes_unknown_and_is_never_resent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let key = create_key(data, "acme", "admin");
    let mut server = Server::start(data, &[]);
    let client = https_client(data);
    let base = server.base();
    // A sandbox that takes 30 s to accept: the send stays `sending` until then.
    let settings = json!({"business": {"name": "Acme Solar"},
                          "providers": {"sms": {"kind": "sandbox", "latencyMs": 30000}}});
    call_json(
        &client,
        Method::PATCH,
        &format!("{base}/v1/org"),
        &key,
        Some(&settings),
        200,
    )
    .await;
    one_step_profile(&client, &base, &key, "once", "0s", "Hello, once only").await;
    let lead = json!({"id": "L1", "phone": "+15551234567", "customerProfile": "once"});
    call_json(
        &client,
        Method::POST,
        &format!("{base}/v1/leads"),
        &key,
        Some(&lead),
        201,
    )
    .await;
    let (client_ref, base_ref, key_ref) = (&client, base.as_str(), key.as_str());
    let sending = poll("a MESSAGE event `sending`", START_TIMEOUT, || async move {
        let events = sms_events(client_ref, base_ref, key_ref, "L1").await;
        events
            .iter()
            .find(|e| e["data"]["status"] == json!("sending"))
            .cloned()
            .ok_or_else(|| format!("{events:?}"))
    })
    .await;
    let id = sending["id"].clone();
    drop(client);
    server.kill_9();
    drop(server);

    let server = Server::start(data, &[]);
    let client = https_client(data);
    let base = server.base();
    let (client_ref, base_ref, id_ref) = (&client, base.as_str(), &id);
    let unknown = poll(
        "the interrupted send becomes `unknown`",
        START_TIMEOUT,
        || async move {
            let events = sms_events(client_ref, base_ref, key_ref, "L1").await;
            events
                .iter()
                .find(|e| &e["id"] == id_ref && e["data"]["status"] == json!("unknown"))
                .cloned()
                .ok_or_else(|| format!("{events:?}"))
        },
    )
    .await;
    assert_eq!(unknown["data"]["error"], json!("interrupted"), "{unknown}");
    // Nothing sends it again by itself.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let sent = sent_messages(&client, &base, &key, "L1").await;
    assert_eq!(sent.len(), 1, "exactly one outbound message: {sent:?}");
    let events = sms_events(&client, &base, &key, "L1").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["id"], id);
    assert_eq!(events[0]["data"]["status"], json!("unknown"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_due_while_the_server_is_stopped_runs_after_the_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let key = create_key(data, "acme", "admin");
    let mut server = Server::start(data, &[]);
    let client = https_client(data);
    let base = server.base();
    one_step_profile(&client, &base, &key, "later", "2s", "Due in two seconds").await;
    let lead = json!({"id": "L1", "phone": "+15551234567", "customerProfile": "later"});
    let created = call_json(
        &client,
        Method::POST,
        &format!("{base}/v1/leads"),
        &key,
        Some(&lead),
        201,
    )
    .await;
    let enrolled = Instant::now();
    assert!(sent_messages(&client, &base, &key, "L1").await.is_empty());
    drop(client);
    let status = server.terminate();
    assert_eq!(status.code(), Some(0), "{}", server.log());
    assert!(
        enrolled.elapsed() < Duration::from_secs(2),
        "stopping took longer than the step's delay; the test proves nothing"
    );
    drop(server);
    // Stay stopped until the step is overdue.
    if let Some(left) = Duration::from_millis(2500).checked_sub(enrolled.elapsed()) {
        tokio::time::sleep(left).await;
    }

    let server = Server::start(data, &[]);
    let client = https_client(data);
    let base = server.base();
    let (client_ref, base_ref, key_ref) = (&client, base.as_str(), key.as_str());
    let sent = poll("the overdue step runs", START_TIMEOUT, || async move {
        let sent = sent_messages(client_ref, base_ref, key_ref, "L1").await;
        if sent.is_empty() {
            Err("no message yet".to_string())
        } else {
            Ok(sent)
        }
    })
    .await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["content"]["text"], json!("Due in two seconds"));
    let at = |v: &Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str().expect("timestamp")).expect("RFC 3339")
    };
    assert!(
        at(&sent[0]["createdAt"]) >= at(&created["createdAt"]) + chrono::Duration::seconds(2),
        "the step did not run early: {sent:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_webhook_attempts_are_logged_at_the_default_level() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let key = create_key(data, "acme", "admin");
    let url = WebhookReceiver::answering(Reply::status(503)).await.url;
    let server = Server::start(data, &[]);
    let client = https_client(data);
    let base = server.base();
    let r = send(
        &client,
        Method::POST,
        &format!("{base}/v1/webhooks"),
        Some(&key),
        Some(&json!({"url": url})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", text(&r));
    let endpoint = r.json()["id"].as_str().expect("endpoint id").to_string();
    let r = send(
        &client,
        Method::POST,
        &format!("{base}/v1/leads"),
        Some(&key),
        Some(&json!({"id": "L1"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", text(&r));
    let call = json!({"leadId": "L1", "direction": "OUTBOUND", "callStatus": "COMPLETE"});
    let r = send(
        &client,
        Method::PUT,
        &format!("{base}/v1/calls/c1"),
        Some(&key),
        Some(&call),
    )
    .await;
    assert_eq!(r.status, 201, "{}", text(&r));
    let deadline = Instant::now() + Duration::from_secs(30);
    let line = loop {
        let log = server.log();
        if let Some(line) = log.lines().find(|l| l.contains("webhook attempt failed")) {
            break line.to_string();
        }
        assert!(
            Instant::now() < deadline,
            "no failed attempt logged:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains(&endpoint), "names the endpoint: {line}");
    assert!(line.contains("status=503"), "names the status: {line}");
    assert!(
        line.contains("host=127.0.0.1"),
        "names the receiver's host: {line}"
    );
}

/// Leads that shared a phone or email before duplicates were refused are listed by
/// The lines of `engaged check`'s report but those on the two files (the database's
/// identity and state, the log's header and what it holds).
fn report(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.contains("engaged.redb:") && !l.contains("engaged.wal:"))
        .collect()
}

/// `engaged check` (not as damage: the check passes); a deleted lead is not one of them.
#[test]
fn check_lists_live_leads_sharing_a_phone_or_email() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    ensure_database(&data);
    let ran = cli(&data, &["check"]).ok("check of a sound store");
    assert_eq!(report(&ran.stdout), ["ok"]);
    {
        // Written past the domain's rule, as an older release could have.
        let store = engaged::store::Store::open(&data.join("engaged.redb")).expect("open");
        store
            .write_blocking(|tx| {
                let leads = [
                    ("a", "+15551234567", "ada@example.com", false),
                    ("b", "+15551234567", "other@example.com", false),
                    ("c", "+15550000000", "ADA@example.com", false),
                    ("d", "+15550000000", "d@example.com", true),
                    ("e", "+15559999999", "e@example.com", false),
                ];
                for (id, phone, email, deleted) in leads {
                    let now = tx.tick();
                    let lead = engaged::store::rows::LeadRecord {
                        id: id.into(),
                        phone: phone.into(),
                        email: email.into(),
                        created_at: now,
                        updated_at: now,
                        last_activity_at: now,
                        deleted_at: deleted.then_some(now),
                        ..Default::default()
                    };
                    tx.put_lead("org_1", &lead, None)?;
                }
                Ok(())
            })
            .expect("write");
    }
    let expected = [
        "2 value(s) shared by live leads (stored before duplicates were refused):",
        "org_1 phone +15551234567: a, b",
        "org_1 email ada@example.com: a, c",
        "ok",
    ];
    let ran = cli(&data, &["check"]).ok("check with shared values");
    assert_eq!(report(&ran.stdout), expected, "stdout:\n{}", ran.stdout);
    // Through a running server's socket, the same list.
    let server = Server::start(&data, &[]);
    let ran = cli(&data, &["check"]).ok("check of a running server");
    assert_eq!(report(&ran.stdout), expected, "stdout:\n{}", ran.stdout);
    drop(server);
}

/// The CSV of `examples/leads.csv`'s shape, with phones a server reads without a
/// default country.
const PLUS_CSV: &str = "firstName,phone,email\nAna,+15125550101,ana@example.com\nAna again,+1 512 555 0101,\nBo,,bo@example.com\nCy,+12,\n";

#[test]
fn import_works_on_a_stopped_server_and_a_dry_run_changes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    create_key(data, "acme", "read");
    let file = data.join("leads.csv");
    std::fs::write(&file, PLUS_CSV).expect("write csv");
    let file = file.to_string_lossy().into_owned();

    let dry = cli(data, &["import", "--org", "acme", "--dry-run", &file]).ok("import --dry-run");
    let last = dry.stdout.lines().last().unwrap_or_default().to_string();
    assert_eq!(
        last, "2 created, 0 updated, 1 merged, 1 refused",
        "{}",
        dry.stdout
    );
    assert!(
        dry.stdout.contains("row 5: Unreadable phone: +12"),
        "{}",
        dry.stdout
    );
    assert!(dry.stdout.contains("dry run: nothing was changed"));
    let spooled = dry
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("the refused rows are in "))
        .expect("where the refused rows are");
    let spooled = std::fs::read_to_string(spooled).expect("the refused rows' file");
    assert!(
        spooled.starts_with("row,reason,") && spooled.contains("Unreadable phone: +12"),
        "{spooled}"
    );

    let real = cli(data, &["import", "--org", "acme", &file]).ok("import");
    assert_eq!(
        real.stdout.lines().last(),
        Some("2 created, 0 updated, 1 merged, 1 refused")
    );
    let again = cli(data, &["import", "--org", "acme", &file]).ok("import again");
    assert_eq!(
        again.stdout.lines().last(),
        Some("0 created, 1 updated, 1 unchanged, 1 merged, 1 refused"),
        "a second import matches instead of duplicating; only the row that changes something counts updated"
    );
    let skipped = cli(
        data,
        &[
            "import",
            "--org",
            "acme",
            "--on-match",
            "skip",
            "--verbose",
            &file,
        ],
    )
    .ok("import --on-match skip");
    assert_eq!(
        skipped.stdout.lines().last(),
        Some("0 created, 0 updated, 0 merged, 1 refused"),
        "{}",
        skipped.stdout
    );
    assert!(
        skipped.stdout.contains("3 matched rows skipped")
            && skipped.stdout.contains("row 2 matched ")
            && skipped.stdout.contains(": no change"),
        "{}",
        skipped.stdout
    );
    // A usage error, as clap reports one (exit status 2).
    let bogus = cli(
        data,
        &["import", "--org", "acme", "--on-match", "bogus", &file],
    );
    assert_eq!(bogus.code, Some(2));
    assert!(
        bogus.stderr.contains("bogus: write update, fill or skip"),
        "{}",
        bogus.stderr
    );
    let unknown = cli(
        data,
        &["import", "--org", "acme", "--profile", "nope", &file],
    );
    assert_cli_failure(&unknown, "an unknown --profile");
    assert!(
        unknown.stderr.contains("Unknown profile: nope"),
        "{}",
        unknown.stderr
    );
    assert_cli_failure(
        &cli(data, &["import", "--org", "nope", &file]),
        "an unknown organization",
    );
    assert_cli_failure(
        &cli(data, &["import", "--org", "acme", "/nonexistent/leads.csv"]),
        "a missing file",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_goes_through_the_socket_of_a_running_server_with_the_sample_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let server = Server::start(data, &[]);
    let admin = create_key(data, "acme", "admin");
    let client = https_client(data);
    let r = send(
        &client,
        Method::PATCH,
        &format!("{}/v1/org", server.base()),
        Some(&admin),
        Some(&json!({"defaultCountry": "US"})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", text(&r));
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/leads.csv");
    let ran = cli(data, &["import", "--org", "acme", sample]).ok("import the sample");
    assert_eq!(
        ran.stdout.lines().last(),
        Some("4 created, 0 updated, 1 merged, 1 refused"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("row 7: Unreadable phone: 12"),
        "{}",
        ran.stdout
    );
    let again = cli(data, &["import", "--org", "acme", sample]).ok("import the sample again");
    assert_eq!(
        again.stdout.lines().last(),
        Some("0 created, 0 updated, 4 unchanged, 1 merged, 1 refused"),
        "the sample again changes nothing, as docs/api.md says"
    );
    let r = send(
        &client,
        Method::GET,
        &format!("{}/v1/leads/search?q=ruiz", server.base()),
        Some(&admin),
        None,
    )
    .await;
    let found = r.json();
    assert_eq!(found["total"], json!(1), "{found}");
    assert_eq!(found["leads"][0]["phone"], json!("+15125550101"));
}

/// An import answered 200 and then `kill -9`: its parts, each logged like any batch
/// (not in the database file until a checkpoint), are all there after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_import_survives_kill_9() {
    /// Rows enough for several of the writer's parts.
    const ROWS: usize = 2_000;
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let key = create_key(data, "acme", "write");
    let mut server = Server::start(data, &[]);
    let client = https_client(data);
    let mut csv = String::from("externalLeadId,firstName,email\n");
    for i in 0..ROWS {
        csv.push_str(&format!("crm-{i},N{i},n{i}@example.com\n"));
    }
    let r = send_bytes(
        &client,
        Method::POST,
        &format!("{}/v1/leads/import", server.base()),
        Some(&key),
        Some(("text/csv", csv.into_bytes())),
    )
    .await;
    assert_eq!(r.status, 200, "{}", text(&r));
    assert_eq!(r.json()["created"], json!(ROWS), "{}", text(&r));
    server.kill_9();
    drop(server);

    let ran = cli(data, &["check"]).ok("check after kill -9");
    assert!(
        ran.stdout.contains("not stopped cleanly") && ran.stdout.contains("names this database"),
        "{}",
        ran.stdout
    );
    let server = Server::start(data, &[]);
    let r = send(
        &client,
        Method::GET,
        &format!("{}/v1/leads/search?limit=1", server.base()),
        Some(&key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", text(&r));
    assert_eq!(
        r.json()["total"],
        json!(ROWS),
        "every imported lead is there"
    );
}

#[test]
fn a_disabled_user_is_enabled_again_by_the_command() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    ensure_database(data);
    cli(data, &["org", "create", "acme"]).ok("org create");
    cli(
        data,
        &[
            "user",
            "create",
            "--org",
            "acme",
            "--email",
            "ana@acme.example",
            "--name",
            "Ana Ruiz",
            "--role",
            "admin",
        ],
    )
    .ok("user create");
    let state = |data: &Path| {
        let list = cli(data, &["user", "list"]).ok("user list");
        list.stdout
            .lines()
            .find(|l| l.contains("ana@acme.example"))
            .map(|l| {
                if l.contains("disabled") {
                    "disabled"
                } else {
                    "active"
                }
            })
            .unwrap_or("missing")
    };
    cli(data, &["user", "disable", "ana@acme.example"]).ok("user disable");
    assert_eq!(state(data), "disabled");
    let ran = cli(data, &["user", "enable", "ana@acme.example"]).ok("user enable");
    assert!(
        ran.stderr.contains("enabled ana@acme.example"),
        "{}",
        ran.stderr
    );
    assert_eq!(state(data), "active");
    assert_cli_failure(
        &cli(data, &["user", "enable", "nobody@acme.example"]),
        "enabling an unknown user",
    );
}

// ---- the write-ahead log's refusals, and a full disk ----------------------------------

/// The answered batches `engaged check` says the next start applies from the log.
fn pending_batches(check_stdout: &str) -> u64 {
    check_stdout
        .lines()
        .find_map(|l| {
            let (n, _) = l.split_once(" answered batch(es) to apply")?;
            n.rsplit(' ').next()?.parse().ok()
        })
        .unwrap_or(0)
}

/// Both files of a data directory's database, byte for byte.
fn database_files(data: &Path) -> (Vec<u8>, Option<Vec<u8>>) {
    (
        std::fs::read(data.join("engaged.redb")).expect("read engaged.redb"),
        std::fs::read(data.join("engaged.wal")).ok(),
    )
}

/// `engaged serve` that must refuse to start: its failure, as `cli` returns it.
fn serve_refused(data: &Path) -> Ran {
    let ran = cli(data, &["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(
        ran.code,
        Some(1),
        "serve exits 1; stdout:\n{}\nstderr:\n{}",
        ran.stdout,
        ran.stderr
    );
    ran
}

/// Creates leads one request (one batch) each, then kills the server with `kill -9`
/// while they are in the log, until `engaged check` says the log holds at least two
/// batches (a checkpoint may come in between: then it writes more). Answers the ids
/// created.
async fn crash_with_batches_in_the_log(data: &Path, key: &str) -> BTreeSet<String> {
    let mut created = BTreeSet::new();
    for round in 0..5 {
        let mut server = Server::start(data, &[]);
        let client = https_client(data);
        for i in 0..12 {
            let id = format!("r{round}-{i}");
            let r = send(
                &client,
                Method::POST,
                &format!("{}/v1/leads", server.base()),
                Some(key),
                Some(&json!({"id": id})),
            )
            .await;
            assert_eq!(r.status, 201, "{}", text(&r));
            created.insert(id);
        }
        server.kill_9();
        drop(server);
        let ran = cli(data, &["check"]).ok("check after kill -9");
        if pending_batches(&ran.stdout) >= 2 {
            return created;
        }
    }
    panic!("a checkpoint came after every round of writes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_log_refuses_to_start_until_recover_accepts_the_loss() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let key = create_key(&data, "acme", "write");
    let created = crash_with_batches_in_the_log(&data, &key).await;

    // After a crash the check reports the log and what it holds, and writes nothing.
    let before = database_files(&data);
    let ran = cli(&data, &["check"]).ok("check after kill -9");
    let pending = pending_batches(&ran.stdout);
    assert!(
        ran.stdout.contains("not stopped cleanly") && ran.stdout.contains("names this database"),
        "{}",
        ran.stdout
    );
    assert!(database_files(&data) == before, "check wrote nothing");

    // One flipped byte in the log's first record: the records after it are valid.
    let wal = data.join("engaged.wal");
    let mut bytes = std::fs::read(&wal).expect("read the log");
    bytes[64 + 20] ^= 0xff;
    std::fs::write(&wal, &bytes).expect("damage the log");

    let ran = serve_refused(&data);
    for words in [
        data.join("engaged.redb").display().to_string(),
        wal.display().to_string(),
        "damaged".to_string(),
        "engaged recover --accept-loss".to_string(),
    ] {
        assert!(ran.stderr.contains(&words), "{words:?} in:\n{}", ran.stderr);
    }
    // (The refused start's redb open may have repaired the file; the check writes nothing.)
    let damaged = database_files(&data);
    let ran = cli(&data, &["check"]);
    assert_cli_failure(&ran, "check of a damaged log");
    assert!(
        ran.stderr.contains("damaged") && ran.stderr.contains("engaged.wal"),
        "{}",
        ran.stderr
    );
    assert!(database_files(&data) == damaged, "check wrote nothing");
    assert_cli_failure(&cli(&data, &["recover"]), "recover without --accept-loss");
    assert!(
        database_files(&data) == damaged,
        "a refused recover wrote nothing"
    );

    let ran = cli(&data, &["recover", "--accept-loss"]).ok("recover --accept-loss");
    assert!(
        ran.stdout
            .contains(&format!("dropped {pending} answered batch(es)")),
        "every batch from the damaged first one on ({pending}):\n{}",
        ran.stdout
    );
    assert!(!wal.exists(), "the damaged log is moved aside");
    cli(&data, &["check"]).ok("check after recover");

    // The server starts, with every lead but those of the dropped batches.
    let server = Server::start(&data, &[]);
    let r = send(
        &https_client(&data),
        Method::GET,
        &format!("{}{}&limit=100", server.base(), all_leads_path()),
        Some(&key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", text(&r));
    let listed = r.json()["leads"].as_array().expect("leads").len() as u64;
    let created = created.len() as u64;
    assert!(
        listed < created && listed + pending >= created,
        "{listed} listed of {created}, {pending} batches dropped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_databases_log_or_none_after_a_crash_refuses_to_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ours, theirs) = (dir.path().join("ours"), dir.path().join("theirs"));
    let key = create_key(&ours, "acme", "write");
    create_key(&theirs, "other", "admin");
    for data in [&ours, &theirs] {
        let mut server = Server::start(data, &[]);
        server.kill_9();
    }
    // The other data directory's log, beside this database.
    std::fs::copy(theirs.join("engaged.wal"), ours.join("engaged.wal")).expect("copy the log");
    let ran = serve_refused(&ours);
    assert!(
        ran.stderr.contains("belongs to another database")
            && ran
                .stderr
                .contains(&ours.join("engaged.redb").display().to_string()),
        "{}",
        ran.stderr
    );
    let ran = cli(&ours, &["check"]);
    assert_cli_failure(&ran, "check beside another database's log");
    assert!(
        ran.stdout.contains("names another database"),
        "{}",
        ran.stdout
    );
    // No log at all after a crash, or an emptied one.
    std::fs::write(ours.join("engaged.wal"), b"").expect("empty the log");
    assert!(serve_refused(&ours).stderr.contains("did not stop cleanly"));
    std::fs::remove_file(ours.join("engaged.wal")).expect("remove the log");
    let ran = serve_refused(&ours);
    assert!(
        ran.stderr.contains("did not stop cleanly") && ran.stderr.contains("missing"),
        "{}",
        ran.stderr
    );
    let ran = cli(&ours, &["recover", "--accept-loss"]).ok("recover");
    assert!(
        ran.stdout.contains("how many, nothing says"),
        "{}",
        ran.stdout
    );

    // After a clean stop the log is not needed: none is no refusal.
    let mut server = Server::start(&ours, &[]);
    assert_eq!(server.terminate().code(), Some(0), "{}", server.log());
    std::fs::remove_file(ours.join("engaged.wal")).expect("remove the log");
    let server = Server::start(&ours, &[]);
    let r = send(
        &https_client(&ours),
        Method::GET,
        &format!("{}{}", server.base(), all_leads_path()),
        Some(&key),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", text(&r));
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// `None` where this process may not mount one (not root, a sandbox).
    fn mount(at: &Path, bytes: u64) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).expect("mount point");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}")])
            .arg("tmpfs")
            .arg(at)
            .stderr(Stdio::null())
            .status()
            .ok()?;
        status.success().then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills the file system of `path` with one file, until it is full.
fn fill(path: &Path) {
    let mut file = std::fs::File::create(path).expect("filler");
    let chunk = vec![0xa5u8; 64 << 10];
    while file
        .write_all(&chunk)
        .and_then(|()| file.sync_data())
        .is_ok()
    {}
    // The last few bytes too.
    while file.write_all(&chunk[..512]).is_ok() {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_and_readiness_until_space_returns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(fs) = Tmpfs::mount(&dir.path().join("fs"), 48 << 20) else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let data = fs.0.join("data");
    let key = create_key(&data, "acme", "write");
    let server = Server::start(&data, &[]);
    let client = https_client(&data);
    let ready = || async {
        send(
            &client,
            Method::GET,
            &format!("{}/readyz", server.base()),
            None,
            None,
        )
        .await
        .status
    };
    assert_eq!(ready().await, 200);
    fill(&fs.0.join("filler"));
    // Writes go on while the log and the file have room, then fail.
    let mut answered = BTreeSet::new();
    let mut failed = None;
    for i in 0..5000 {
        let id = format!("full-{i}");
        let r = send(
            &client,
            Method::POST,
            &format!("{}/v1/leads", server.base()),
            Some(&key),
            Some(&json!({"id": id, "additionalInfo": {"pad": "x".repeat(8000)}})),
        )
        .await;
        match r.status {
            201 => {
                answered.insert(id);
            }
            status => {
                failed = Some(status);
                break;
            }
        }
    }
    assert!(
        matches!(failed, Some(500 | 503)),
        "a write failed on the full disk: {failed:?}"
    );
    eprintln!(
        "{} writes answered before one failed with {failed:?}",
        answered.len()
    );
    assert_eq!(ready().await, 503, "not ready while writes fail");
    let r = send(
        &client,
        Method::POST,
        &format!("{}/v1/leads", server.base()),
        Some(&key),
        Some(&json!({"id": "while-full"})),
    )
    .await;
    assert!(r.status >= 500, "still failing: {}", r.status);

    // Space returns: the server recovers by itself, and writes succeed again.
    std::fs::remove_file(fs.0.join("filler")).expect("free the space");
    poll(
        "ready again once there is space",
        Duration::from_secs(60),
        || async {
            match ready().await {
                200 => Ok(()),
                status => Err(format!("/readyz {status}")),
            }
        },
    )
    .await;
    let r = send(
        &client,
        Method::POST,
        &format!("{}/v1/leads", server.base()),
        Some(&key),
        Some(&json!({"id": "after"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", text(&r));
    // Nothing answered was lost.
    for id in answered.iter().chain(["after".to_string()].iter()) {
        let r = send(
            &client,
            Method::GET,
            &format!("{}/v1/leads/{id}", server.base()),
            Some(&key),
            None,
        )
        .await;
        assert_eq!(r.status, 200, "{id}: {}", text(&r));
    }
    drop(server);
}

// ---- continuous replication -------------------------------------------------------------

/// `engaged --data-dir <data_dir> <args...>` with `envs` set.
fn cli_env(data_dir: &Path, args: &[&str], envs: &[(String, String)]) -> Ran {
    let mut cmd = engaged();
    cmd.arg("--data-dir").arg(data_dir).args(args);
    cmd.envs(envs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let out = run_to_exit(cmd);
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `engaged serve` replicating as `envs` say.
fn serve_replicating(data: &Path, envs: &[(String, String)]) -> Server {
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Server::spawn(data, &["--listen", "127.0.0.1:0"], &envs)
}

/// Creates the leads `ids`, each named `name`; every one answers 201.
async fn create_leads(
    client: &HttpsClient,
    server: &Server,
    key: &str,
    ids: &[String],
    name: &str,
) {
    let url = format!("{}/v1/leads", server.base());
    for id in ids {
        let body = json!({"id": id, "firstName": name, "lastName": "Replica"});
        let r = send(client, Method::POST, &url, Some(key), Some(&body)).await;
        assert_eq!(r.status, 201, "create {id}: {}", text(&r));
    }
}

/// Waits (bounded) until the replica holds every batch committed so far.
async fn replica_caught_up(client: &HttpsClient, server: &Server, key: &str) -> Value {
    let url = format!("{}/v1/admin/replica", server.base());
    let last = Arc::new(Mutex::new(Value::Null));
    poll(
        "the replica holds every committed batch",
        Duration::from_secs(60),
        || {
            let (client, url, key) = (client.clone(), url.clone(), key.to_string());
            let last = last.clone();
            async move {
                let r = send(&client, Method::GET, &url, Some(&key), None).await;
                assert_eq!(r.status, 200, "{}", text(&r));
                let status = r.json();
                *last.lock().unwrap() = status.clone();
                let committed = status["committedSeq"].as_u64().unwrap_or(0);
                let uploaded = status["uploadedSeq"].as_u64().unwrap_or(0);
                if status["generation"].is_string()
                    && committed > 0
                    && uploaded >= committed
                    && status["lastError"].is_null()
                {
                    Ok(())
                } else {
                    Err(format!("{status}"))
                }
            }
        },
    )
    .await;
    let status = last.lock().unwrap().clone();
    status
}

/// The ids of the leads `GET /v1/leads/{id}` finds, of `ids`.
async fn leads_found(
    client: &HttpsClient,
    server: &Server,
    key: &str,
    ids: &[String],
) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for id in ids {
        let url = format!("{}/v1/leads/{}", server.base(), enc(id));
        let r = send(client, Method::GET, &url, Some(key), None).await;
        if r.status == 200 {
            found.insert(id.clone());
        } else {
            assert_eq!(r.status, 404, "{}", text(&r));
        }
    }
    found
}

/// Writes with replication on, `kill -9` and the data directory lost: `restore --from`
/// into a new directory holds every write the replica had taken (all those acknowledged
/// before it caught up), `check` passes on it and it serves them; a second restore
/// into it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_from_the_replica_after_kill_9_holds_the_acknowledged_writes() {
    let weed = engaged::testkit::seaweed::SeaweedFs::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("primary");
    let key = create_key(&data, "acme", "admin");
    let env = weed.env("kill9");
    let mut server = serve_replicating(&data, &env);
    let client = https_client(&data);
    let early: Vec<String> = (0..30).map(|i| format!("early-{i:02}")).collect();
    create_leads(&client, &server, &key, &early, "Early").await;
    let status = replica_caught_up(&client, &server, &key).await;
    assert!(status["bytesTotal"].as_u64().unwrap_or(0) > 0, "{status}");
    let metrics = send(
        &client,
        Method::GET,
        &format!("{}/metrics", server.base()),
        Some(&key),
        None,
    )
    .await;
    let metrics = text(&metrics);
    for name in [
        "engaged_replica_lag_seconds",
        "engaged_replica_bytes_total",
        "engaged_replica_errors_total 0",
    ] {
        assert!(metrics.contains(name), "{name} in /metrics:\n{metrics}");
    }
    // Written right before the kill: some may not have reached the replica.
    let late: Vec<String> = (0..10).map(|i| format!("late-{i:02}")).collect();
    create_leads(&client, &server, &key, &late, "Late").await;
    server.kill_9();
    drop(server);
    std::fs::remove_dir_all(&data).expect("lose the data directory");

    let restored = dir.path().join("restored");
    let from = weed.url("kill9");
    let ran = cli_env(&restored, &["restore", "--from", &from], &env).ok("restore --from");
    assert!(
        ran.stdout.contains("generation ") && ran.stdout.contains("last write "),
        "{}",
        ran.stdout
    );
    let leads: u64 = ran
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("leads "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("a leads line: {}", ran.stdout));
    assert!((30..=40).contains(&leads), "{}", ran.stdout);
    cli(&restored, &["check"]).ok("check on the restored directory");
    let again = cli_env(&restored, &["restore", "--from", &from], &env);
    assert_cli_failure(&again, "restore into a non-empty directory");
    assert!(again.stderr.contains("not empty"), "{}", again.stderr);

    let server = Server::start(&restored, &[]);
    let client = https_client(&restored);
    let found = leads_found(&client, &server, &key, &early).await;
    assert_eq!(
        found.len(),
        early.len(),
        "every write the replica had taken is restored"
    );
    let late_found = leads_found(&client, &server, &key, &late).await;
    assert_eq!(found.len() + late_found.len(), leads as usize);
}

/// Waits (bounded) until the replica has its first snapshot: batches from here on go
/// to segments.
async fn replica_started(client: &HttpsClient, server: &Server, key: &str) {
    let url = format!("{}/v1/admin/replica", server.base());
    poll(
        "the replica's first snapshot",
        Duration::from_secs(60),
        || {
            let (client, url, key) = (client.clone(), url.clone(), key.to_string());
            async move {
                let status = send(&client, Method::GET, &url, Some(&key), None)
                    .await
                    .json();
                if status["generation"].is_string() {
                    Ok(())
                } else {
                    Err(format!("{status}"))
                }
            }
        },
    )
    .await;
}

/// Every object of the replica under `prefix`: its name and bytes.
async fn replica_objects(bucket: &engaged::replica::Bucket) -> Vec<(String, Vec<u8>)> {
    use futures_util::StreamExt;
    use object_store::ObjectStoreExt;
    let mut out = Vec::new();
    let mut listed = bucket.store.list(bucket.root().as_ref());
    while let Some(meta) = listed.next().await {
        let meta = meta.expect("list the bucket");
        let bytes = bucket
            .store
            .get(&meta.location)
            .await
            .expect("get an object")
            .bytes()
            .await
            .expect("read an object");
        out.push((meta.location.to_string(), bytes.to_vec()));
    }
    out
}

/// With `encryption_key_file` the bucket holds no lead's name in plain text, a restore
/// needs the key, and a segment altered in the bucket refuses the restore in words and
/// leaves the directory empty. `--at` restores the store as it was then: the leads
/// written after it are not there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_replica_hides_names_refuses_a_tampered_segment_and_restores_a_point_in_time()
{
    use object_store::{ObjectStoreExt, PutPayload};
    let weed = engaged::testkit::seaweed::SeaweedFs::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let key_file = dir.path().join("replica.key");
    std::fs::write(&key_file, format!("{}\n", "5a".repeat(32))).expect("write the key");
    let data = dir.path().join("primary");
    let key = create_key(&data, "acme", "admin");
    let mut env = weed.env("encrypted");
    env.push((
        "ENGAGED_REPLICA_ENCRYPTION_KEY_FILE".into(),
        key_file.display().to_string(),
    ));
    let mut server = serve_replicating(&data, &env);
    let client = https_client(&data);
    replica_started(&client, &server, &key).await;
    let first: Vec<String> = (0..5).map(|i| format!("first-{i}")).collect();
    create_leads(&client, &server, &key, &first, "Quintessa").await;
    replica_caught_up(&client, &server, &key).await;
    // A moment strictly between the two sets of writes.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let between = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second: Vec<String> = (0..5).map(|i| format!("second-{i}")).collect();
    create_leads(&client, &server, &key, &second, "Quintessa").await;
    replica_caught_up(&client, &server, &key).await;
    assert!(server.terminate().success());

    let mut settings = weed.config("encrypted");
    settings.encryption_key_file = Some(key_file.clone());
    let bucket = engaged::replica::Bucket::open(&settings).expect("the bucket");
    let objects = replica_objects(&bucket).await;
    assert!(
        objects.iter().any(|(name, _)| name.ends_with("/snapshot")),
        "{:?}",
        objects.iter().map(|o| &o.0).collect::<Vec<_>>()
    );
    let segment = objects
        .iter()
        .find(|(name, _)| name.ends_with(".seg"))
        .map(|(name, _)| name.clone())
        .expect("a segment");
    for (name, bytes) in &objects {
        assert!(
            !bytes.windows(9).any(|w| w == b"Quintessa"),
            "{name} holds a lead's name in plain text"
        );
    }

    let from = weed.url("encrypted");
    let at = dir.path().join("at");
    let ran =
        cli_env(&at, &["restore", "--from", &from, "--at", &between], &env).ok("restore --at");
    assert!(ran.stdout.contains("leads 5\n"), "{}", ran.stdout);
    let latest = dir.path().join("latest");
    let ran = cli_env(&latest, &["restore", "--from", &from], &env).ok("restore");
    assert!(ran.stdout.contains("leads 10\n"), "{}", ran.stdout);
    let server = Server::start(&at, &[]);
    let at_client = https_client(&at);
    assert_eq!(
        leads_found(&at_client, &server, &key, &first).await.len(),
        5
    );
    assert!(leads_found(&at_client, &server, &key, &second)
        .await
        .is_empty());
    drop(server);

    let without_key: Vec<(String, String)> = weed.env("encrypted");
    let refused = cli_env(
        &dir.path().join("nokey"),
        &["restore", "--from", &from],
        &without_key,
    );
    assert_cli_failure(&refused, "restore without the key");
    assert!(refused.stderr.contains("encrypted"), "{}", refused.stderr);

    let path = object_store::path::Path::from(segment.as_str());
    let mut bytes = bucket
        .store
        .get(&path)
        .await
        .expect("get")
        .bytes()
        .await
        .expect("read")
        .to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    bucket
        .store
        .put(&path, PutPayload::from(bytes))
        .await
        .expect("put the altered segment");
    let tampered = dir.path().join("tampered");
    let refused = cli_env(&tampered, &["restore", "--from", &from], &env);
    assert_cli_failure(&refused, "restore of a tampered segment");
    assert!(
        refused.stderr.contains("segment") && refused.stderr.contains("fails its checksum"),
        "{}",
        refused.stderr
    );
    assert!(!tampered.join("engaged.redb").exists(), "nothing restored");
}

/// The object store unreachable: writes go on (every one answered 201), the replica
/// reports its errors and its lag, and once the store is back it catches up: a restore
/// after `kill -9` holds every lead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_store_does_not_stop_writes_and_the_replica_catches_up() {
    let mut weed = engaged::testkit::seaweed::SeaweedFs::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("primary");
    let key = create_key(&data, "acme", "admin");
    let env = weed.env("outage");
    let mut server = serve_replicating(&data, &env);
    let client = https_client(&data);
    replica_started(&client, &server, &key).await;
    weed.stop();
    let during: Vec<String> = (0..20).map(|i| format!("during-{i:02}")).collect();
    create_leads(&client, &server, &key, &during, "Outage").await;
    let url = format!("{}/v1/admin/replica", server.base());
    poll(
        "the replica reports the outage",
        Duration::from_secs(60),
        || {
            let (client, url, key) = (client.clone(), url.clone(), key.clone());
            async move {
                let status = send(&client, Method::GET, &url, Some(&key), None)
                    .await
                    .json();
                let failing = status["errorsTotal"].as_u64().unwrap_or(0) > 0
                    && status["lastError"].is_string()
                    && status["lagSeconds"].as_f64().unwrap_or(0.0) > 0.0;
                if failing {
                    Ok(())
                } else {
                    Err(format!("{status}"))
                }
            }
        },
    )
    .await;
    let metrics = send(
        &client,
        Method::GET,
        &format!("{}/metrics", server.base()),
        Some(&key),
        None,
    )
    .await;
    assert!(
        !text(&metrics).contains("engaged_replica_errors_total 0\n"),
        "{}",
        text(&metrics)
    );
    weed.restart().await;
    replica_caught_up(&client, &server, &key).await;
    server.kill_9();
    drop(server);
    let restored = dir.path().join("restored");
    cli_env(&restored, &["restore", "--from", &weed.url("outage")], &env).ok("restore");
    let server = Server::start(&restored, &[]);
    let client = https_client(&restored);
    assert_eq!(
        leads_found(&client, &server, &key, &during).await.len(),
        during.len()
    );
}

/// The generations (folders) of the replica under `prefix`.
/// The generations the bucket lists (names only: retention may delete an object between
/// a listing and a read).
async fn replica_generations(bucket: &engaged::replica::Bucket) -> BTreeSet<String> {
    use futures_util::StreamExt;
    let mut out = BTreeSet::new();
    let mut listed = bucket.store.list(bucket.root().as_ref());
    while let Some(meta) = listed.next().await {
        let name = meta.expect("list the bucket").location.to_string();
        if let Some((generation, _)) = bucket.relative(&name).split_once('/') {
            out.insert(generation.to_string());
        }
    }
    out
}

/// A snapshot every second kept for a second: the older generations are deleted, the
/// newest stays, and a restore still holds every lead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_deletes_the_generations_no_kept_snapshot_needs() {
    let weed = engaged::testkit::seaweed::SeaweedFs::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("primary");
    let key = create_key(&data, "acme", "admin");
    let mut env = weed.env("retention");
    env.push(("ENGAGED_REPLICA_SNAPSHOT_INTERVAL".into(), "1s".into()));
    env.push(("ENGAGED_REPLICA_RETENTION".into(), "1s".into()));
    let mut server = serve_replicating(&data, &env);
    let client = https_client(&data);
    replica_started(&client, &server, &key).await;
    let ids: Vec<String> = (0..5).map(|i| format!("kept-{i}")).collect();
    create_leads(&client, &server, &key, &ids, "Kept").await;
    let bucket = engaged::replica::Bucket::open(&weed.config("retention")).expect("the bucket");
    let first = replica_generations(&bucket)
        .await
        .into_iter()
        .next()
        .expect("a generation");
    poll(
        "the first generation deleted",
        Duration::from_secs(60),
        || {
            let (bucket, first) = (&bucket, first.clone());
            async move {
                let generations = replica_generations(bucket).await;
                if !generations.contains(&first) && !generations.is_empty() {
                    Ok(())
                } else {
                    Err(format!("{generations:?}"))
                }
            }
        },
    )
    .await;
    replica_caught_up(&client, &server, &key).await;
    server.kill_9();
    drop(server);
    let restored = dir.path().join("restored");
    let ran = cli_env(
        &restored,
        &["restore", "--from", &weed.url("retention")],
        &env,
    )
    .ok("restore");
    assert!(ran.stdout.contains("leads 5\n"), "{}", ran.stdout);
}

/// `engaged follow` running, its standard error collected.
struct Follower {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Follower {
    fn start(data_dir: &Path, from: &str, envs: &[(String, String)]) -> Follower {
        let mut cmd = engaged();
        cmd.arg("--data-dir")
            .arg(data_dir)
            .args(["follow", "--from", from])
            .envs(envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn engaged follow");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let collected = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                collected.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        Follower { child, log }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// SIGTERM, then waits (bounded) for it to end.
    fn terminate(&mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
        wait_with_deadline(&mut self.child, STOP_TIMEOUT)
            .unwrap_or_else(|| panic!("follow did not stop; stderr:\n{}", self.log()))
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until the standby's log says, from the line saying `since` on (the whole log
/// when empty), that it applied batch `uploaded`.
async fn standby_applied(follower: &Follower, since: &str, uploaded: u64) {
    poll(
        "the standby applies every uploaded batch",
        Duration::from_secs(60),
        || {
            let log = follower.log();
            async move {
                // From the start of the line that says `since`.
                let Some(at) = log.find(since) else {
                    return Err(log);
                };
                let after = &log[log[..at].rfind('\n').map_or(0, |n| n + 1)..];
                let applied = after
                    .split("up to batch ")
                    .skip(1)
                    .filter_map(|rest| rest.split(',').next()?.parse::<u64>().ok())
                    .max()
                    .unwrap_or(0);
                if applied >= uploaded {
                    Ok(())
                } else {
                    Err(log)
                }
            }
        },
    )
    .await;
}

/// A standby follows the primary's replica as it is written, through a restart of the
/// primary (a new generation, restored in place); after the primary's `kill -9`, stopping the standby and starting `engaged serve` on its directory
/// serves every lead the replica had taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_follows_the_replica_and_becomes_the_primary() {
    let weed = engaged::testkit::seaweed::SeaweedFs::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("primary");
    let key = create_key(&data, "acme", "admin");
    let env = weed.env("standby");
    let mut server = serve_replicating(&data, &env);
    let client = https_client(&data);
    replica_started(&client, &server, &key).await;
    let standby = dir.path().join("standby");
    let mut follower = Follower::start(&standby, &weed.url("standby"), &env);
    let ids: Vec<String> = (0..15).map(|i| format!("followed-{i:02}")).collect();
    create_leads(&client, &server, &key, &ids, "Followed").await;
    let status = replica_caught_up(&client, &server, &key).await;
    standby_applied(
        &follower,
        "",
        status["uploadedSeq"].as_u64().expect("uploadedSeq"),
    )
    .await;

    // The primary restarts: a new generation, whose snapshot the standby restores in
    // place, then its segments.
    assert!(server.terminate().success(), "{}", server.log());
    drop(server);
    server = serve_replicating(&data, &env);
    replica_started(&client, &server, &key).await;
    let more: Vec<String> = (0..5).map(|i| format!("after-restart-{i}")).collect();
    create_leads(&client, &server, &key, &more, "Restarted").await;
    let status = replica_caught_up(&client, &server, &key).await;
    standby_applied(
        &follower,
        "restored from its snapshot",
        status["uploadedSeq"].as_u64().expect("uploadedSeq"),
    )
    .await;
    let ids: Vec<String> = ids.into_iter().chain(more).collect();
    let refused = serve_refused(&standby);
    assert!(refused.stderr.contains("in use"), "{}", refused.stderr);
    server.kill_9();
    drop(server);
    assert!(follower.terminate().success(), "{}", follower.log());
    cli(&standby, &["check"]).ok("check on the standby");
    let server = Server::start(&standby, &[]);
    let client = https_client(&standby);
    assert_eq!(
        leads_found(&client, &server, &key, &ids).await.len(),
        ids.len()
    );
}

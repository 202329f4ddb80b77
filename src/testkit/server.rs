//! The test server: a real `engaged` server on an ephemeral loopback port, over HTTPS
//! with the self-signed certificate it generates, in a temporary data directory, and a
//! client that trusts exactly that certificate.

use std::path::PathBuf;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Request};
use serde_json::Value;

use crate::admin::AdminRequest;
use crate::config::Config;
use crate::server::Server;
use crate::testkit::https::{client_trusting, HttpsClient};
use crate::time::Micros;

/// A whole answer: status, headers and body.
pub struct Response {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Response {
    /// Reads a whole hyper response.
    pub async fn read(response: hyper::Response<hyper::body::Incoming>) -> Response {
        Response::try_read(response).await.expect("body")
    }

    /// Reads a whole hyper response, or the error that cut its body short (a server
    /// killed after its head went out).
    pub async fn try_read(
        response: hyper::Response<hyper::body::Incoming>,
    ) -> Result<Response, hyper::Error> {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await?.to_bytes();
        Ok(Response {
            status,
            headers,
            body,
        })
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// A running server, its `https://localhost:PORT` base, its data directory (removed
/// when dropped) and a client trusting its certificate.
pub struct TestServer {
    pub server: Server,
    pub base: String,
    pub data_dir: PathBuf,
    _dir: tempfile::TempDir,
    pub(crate) client: HttpsClient,
}

impl TestServer {
    pub async fn start() -> TestServer {
        TestServer::start_with(|_| {}).await
    }

    /// Starts a server whose configuration `adjust` may change first.
    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> TestServer {
        TestServer::start_in(tempfile::tempdir().expect("temp dir"), adjust).await
    }

    /// Starts a server on data already in `dir` (a fixture, say).
    pub async fn start_in(dir: tempfile::TempDir, adjust: impl FnOnce(&mut Config)) -> TestServer {
        let data_dir = dir.path().to_path_buf();
        let mut config = Config::for_tests(data_dir.clone());
        adjust(&mut config);
        let server = Server::start(config).await.expect("server starts");
        let base = format!("https://localhost:{}", server.local_addr().port());
        let client = client_trusting(&data_dir.join("tls/cert.pem"));
        TestServer {
            server,
            base,
            data_dir,
            _dir: dir,
            client,
        }
    }

    /// Stops the server (its writer flushed) and starts another on the same data
    /// directory, whose configuration `adjust` may change first: what an operator's
    /// restart with new settings does.
    pub async fn restart_with(self, adjust: impl FnOnce(&mut Config)) -> TestServer {
        let TestServer { server, _dir, .. } = self;
        server.shutdown().await;
        TestServer::start_in(_dir, adjust).await
    }

    /// The certificate the server generated (what its clients trust).
    pub fn cert(&self) -> PathBuf {
        self.data_dir.join("tls/cert.pem")
    }

    /// Runs an admin command (what `engaged org|key ...` does) against the server.
    /// The id of organization `org` (by name). Panics when there is none.
    pub async fn org_id(&self, org: &str) -> String {
        let orgs = self.admin(AdminRequest::OrgList).await.expect("org list");
        orgs["orgs"]
            .as_array()
            .and_then(|all| all.iter().find(|o| o["name"] == org))
            .and_then(|o| o["id"].as_str())
            .expect("the organization")
            .to_string()
    }

    pub async fn admin(&self, request: AdminRequest) -> Result<Value, String> {
        crate::admin::run(self.server.store(), request)
            .await
            .map_err(|e| e.to_string())
    }

    /// A new key of `scope` ("read", "write" or "admin") for organization `org`,
    /// creating the organization on first use.
    pub async fn key(&self, org: &str, scope: &str) -> String {
        let _ = self
            .admin(AdminRequest::OrgCreate {
                name: org.to_string(),
            })
            .await;
        let created = self
            .admin(AdminRequest::KeyCreate {
                org: org.to_string(),
                scope: crate::store::rows::Scope::parse(scope).expect("a scope"),
                name: None,
            })
            .await
            .expect("key create");
        created["key"].as_str().expect("key in answer").to_string()
    }

    /// Sends a request built by the caller with the server's client.
    pub async fn send(&self, request: Request<Full<Bytes>>) -> Response {
        Response::read(self.client.request(request).await.expect("response")).await
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Response {
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path));
        if let Some(key) = key {
            builder = builder.header("x-api-key", HeaderValue::from_str(key).expect("key header"));
        }
        if let Some(ct) = content_type {
            builder = builder.header("content-type", ct);
        }
        let request = builder.body(Full::new(Bytes::from(body))).expect("request");
        Response::read(self.client.request(request).await.expect("response")).await
    }

    /// A JSON POST that is sent again (up to 10 times, 50 ms apart) when it was never
    /// handled: its connection failed before an answer (under many simultaneous new
    /// connections the server closes the oldest ones that have not sent a request head,
    /// `server::limits`) or it was answered 408 (its body not read in time).
    pub async fn post_until_answered(&self, key: &str, path: &str, body: &Value) -> Response {
        let bytes = Bytes::from(serde_json::to_vec(body).expect("json"));
        let mut last = String::new();
        for _ in 0..10 {
            let request = Request::builder()
                .method(Method::POST)
                .uri(format!("{}{}", self.base, path))
                .header("x-api-key", HeaderValue::from_str(key).expect("key header"))
                .header("content-type", "application/json")
                .body(Full::new(bytes.clone()))
                .expect("request");
            match self.client.request(request).await {
                Ok(answer) => {
                    let answer = Response::read(answer).await;
                    if answer.status != 408 {
                        return answer;
                    }
                    last = "408".into();
                }
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("no answer after 10 attempts: {last}")
    }

    /// A POST with `headers` and no API key (provider webhooks sign instead).
    pub async fn post_with_headers(
        &self,
        path: &str,
        headers: &[(&str, String)],
        content_type: &str,
        body: Vec<u8>,
    ) -> Response {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(format!("{}{}", self.base, path))
            .header("content-type", content_type);
        for (name, value) in headers {
            builder = builder.header(*name, HeaderValue::from_str(value).expect("header"));
        }
        let request = builder.body(Full::new(Bytes::from(body))).expect("request");
        Response::read(self.client.request(request).await.expect("response")).await
    }

    pub async fn get(&self, key: &str, path: &str) -> Response {
        self.request(Method::GET, path, Some(key), None, Vec::new())
            .await
    }

    pub async fn delete(&self, key: &str, path: &str) -> Response {
        self.request(Method::DELETE, path, Some(key), None, Vec::new())
            .await
    }

    pub async fn send_json(&self, method: Method, key: &str, path: &str, body: &Value) -> Response {
        let bytes = serde_json::to_vec(body).expect("json");
        self.request(method, path, Some(key), Some("application/json"), bytes)
            .await
    }

    pub async fn post(&self, key: &str, path: &str, body: &Value) -> Response {
        self.send_json(Method::POST, key, path, body).await
    }

    pub async fn patch(&self, key: &str, path: &str, body: &Value) -> Response {
        self.send_json(Method::PATCH, key, path, body).await
    }

    pub async fn put(&self, key: &str, path: &str, body: &Value) -> Response {
        self.send_json(Method::PUT, key, path, body).await
    }

    /// Creates a lead and returns its JSON.
    pub async fn create_lead(&self, key: &str, body: &Value) -> Value {
        let r = self.post(key, "/v1/leads", body).await;
        assert_eq!(
            r.status,
            201,
            "create lead: {}",
            String::from_utf8_lossy(&r.body)
        );
        r.json()
    }

    /// Gives lead `id` of organization `org` (its name) this phone and email in the
    /// store directly, past the duplicate check: what a release from before duplicates
    /// were refused may have stored.
    pub async fn store_contact_directly(&self, org: &str, id: &str, phone: &str, email: &str) {
        let org_id = self.org_id(org).await;
        let (id, phone, email) = (id.to_string(), phone.to_string(), email.to_string());
        self.server
            .store()
            .write(move |tx| {
                use crate::store::Reader;
                let old = tx.lead(&org_id, &id)?.expect("the lead");
                let mut lead = old.clone();
                lead.phone = phone.clone();
                lead.email = email.clone();
                lead.updated_at = tx.tick();
                tx.put_lead(&org_id, &lead, Some(&old))
            })
            .await
            .expect("stored");
    }
}

impl TestServer {
    /// Changes lead `id` of organization `org` (its name) in the store directly, past
    /// every rule on its fields: what an older release may have stored.
    pub async fn change_lead_directly(
        &self,
        org: &str,
        id: &str,
        change: impl Fn(&mut crate::store::rows::LeadRecord) + Send + 'static,
    ) {
        let org_id = self.org_id(org).await;
        let id = id.to_string();
        self.server
            .store()
            .write(move |tx| {
                use crate::store::Reader;
                let old = tx.lead(&org_id, &id)?.expect("the lead");
                let mut lead = old.clone();
                change(&mut lead);
                lead.updated_at = tx.tick();
                tx.put_lead(&org_id, &lead, Some(&old))
            })
            .await
            .expect("stored");
    }
}

impl TestServer {
    /// Makes the timeout of lead `id`'s possible opt-out (`conversation::hold`) due a second
    /// ago, so the engine runs it now as it would after 10 business days. Panics when
    /// the lead is not held.
    pub async fn hold_timeout_due_now(&self, org: &str, id: &str) {
        let org_id = self.org_id(org).await;
        let id = id.to_string();
        self.server
            .store()
            .write(move |tx| {
                use crate::store::Reader;
                let mut hold = tx.hold(&org_id, &id)?.expect("the lead is held");
                let (due, job_id) = hold.timeout_job.clone();
                let job = tx.agenda_job(due, &job_id)?.expect("the timeout row");
                tx.remove_agenda(due, &job_id)?;
                let past = crate::time::now_micros() - 1_000_000;
                tx.put_agenda(past, &job_id, &job)?;
                hold.timeout_job = (past, job_id);
                tx.put_hold(&org_id, &id, &hold)
            })
            .await
            .expect("stored");
    }
}

impl TestServer {
    /// Moves meeting `id` of organization `org` (its name) to start at `start` in the
    /// store directly, past the booking rules: a meeting now in the past, to close.
    pub async fn move_meeting_directly(&self, org: &str, id: &str, start: crate::time::Micros) {
        let org_id = self.org_id(org).await;
        let id = id.to_string();
        self.server
            .store()
            .write(move |tx| {
                use crate::store::calendars::CalendarReader;
                let old = tx.meeting(&org_id, &id)?.expect("the meeting");
                let mut meeting = old.clone();
                meeting.end = start + (old.end - old.start);
                meeting.start = start;
                meeting.updated_at = tx.tick();
                tx.put_meeting(&org_id, &meeting, Some(&old))
            })
            .await
            .expect("stored");
    }

    /// The meeting reminders of lead `id` of organization `org` (its name) in the
    /// agenda: (due, meeting id, the start it reminds of), by due time.
    pub async fn reminders(&self, org: &str, id: &str) -> Vec<(Micros, String, Micros)> {
        let org_id = self.org_id(org).await;
        let read = self.server.store().read().expect("a snapshot");
        let rows = read
            .due_agenda(Micros::MAX, &Default::default(), usize::MAX)
            .expect("the agenda");
        rows.due
            .into_iter()
            .filter(|(_, _, job)| job.org_id == org_id && job.lead_id == id)
            .filter_map(|(due, _, job)| match job.kind {
                crate::store::rows::JobKind::Reminder { meeting_id, start } => {
                    Some((due, meeting_id, start))
                }
                _ => None,
            })
            .collect()
    }

    /// Makes every meeting reminder of lead `id` of organization `org` due a second
    /// ago, so the engine runs it now as it would at its time.
    pub async fn reminders_due_now(&self, org: &str, id: &str) {
        let org_id = self.org_id(org).await;
        let read = self.server.store().read().expect("a snapshot");
        let rows: Vec<_> = read
            .due_agenda(Micros::MAX, &Default::default(), usize::MAX)
            .expect("the agenda")
            .due
            .into_iter()
            .filter(|(_, _, job)| {
                let reminder = matches!(job.kind, crate::store::rows::JobKind::Reminder { .. });
                reminder && job.org_id == org_id && job.lead_id == id
            })
            .collect();
        self.server
            .store()
            .write(move |tx| {
                let past = crate::time::now_micros() - 1_000_000;
                for (due, job_id, job) in &rows {
                    if tx.remove_agenda(*due, job_id)? {
                        tx.put_agenda(past, job_id, job)?;
                    }
                }
                Ok(())
            })
            .await
            .expect("stored");
    }
}

/// Percent-encodes a query value (timestamps carry `+` and `:`).
pub fn enc(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// A test server with organization `acme` and a key of each scope: what most test
/// modules start from.
pub struct Org {
    /// The server.
    pub ts: TestServer,
    /// A `write` key of `acme`.
    pub write: String,
    /// An `admin` key of `acme`.
    pub admin: String,
    /// A `read` key of `acme`.
    pub read: String,
}

impl Org {
    /// A server with the default test configuration.
    pub async fn start() -> Org {
        Org::start_with(|_| {}).await
    }

    /// A server whose configuration `adjust` may change first.
    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> Org {
        let ts = TestServer::start_with(adjust).await;
        let write = ts.key("acme", "write").await;
        let admin = ts.key("acme", "admin").await;
        let read = ts.key("acme", "read").await;
        Org {
            ts,
            write,
            admin,
            read,
        }
    }
}

//! The console as a test sees it without a browser: people created with a known
//! password, a signed-in session (its cookie and CSRF token), and requests carrying
//! them with this server's origin (or another, to try a cross-site POST).

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request};

use super::server::{Response, TestServer};
use crate::admin::AdminRequest;
use crate::domain::people::passwords;
use crate::domain::people::sessions::COOKIE;
use crate::store::rows::Role;

/// A signed-in person: the session cookie's value and the page's CSRF token.
#[derive(Debug, Clone)]
pub struct Session {
    pub cookie: String,
    pub csrf: String,
}

impl TestServer {
    /// A new user of organization `org` (created on first use) with `role`
    /// ("viewer", "agent", "admin"); answers its password.
    pub async fn user(&self, org: &str, email: &str, name: &str, role: &str) -> String {
        let _ = self
            .admin(AdminRequest::OrgCreate {
                name: org.to_string(),
            })
            .await;
        let password = passwords::generate();
        let password_hash = passwords::hash_cheaply(&password).expect("hash");
        self.admin(AdminRequest::UserCreate {
            org: org.to_string(),
            email: email.to_string(),
            name: name.to_string(),
            role: Role::parse(role).expect("a role"),
            password_hash,
        })
        .await
        .expect("user create");
        password
    }

    /// This server's origin, as a browser sends it.
    pub fn origin(&self) -> String {
        self.base.trim_end_matches('/').to_string()
    }

    /// A console request: `cookie` as the session (if any), `origin` as `Origin` (if
    /// any), a url-encoded `form` as the body of a POST.
    pub async fn console(
        &self,
        method: Method,
        path: &str,
        cookie: Option<&str>,
        origin: Option<&str>,
        form: &[(&str, &str)],
    ) -> Response {
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(format!("{}{}", self.base, path));
        if let Some(cookie) = cookie {
            builder = builder.header("cookie", format!("{COOKIE}={cookie}"));
        }
        if let Some(origin) = origin {
            builder = builder.header("origin", origin);
        }
        let body = if method == Method::POST {
            builder = builder.header("content-type", "application/x-www-form-urlencoded");
            serde_urlencoded::to_string(form).expect("form")
        } else {
            String::new()
        };
        let request = builder.body(Full::new(Bytes::from(body))).expect("request");
        self.send(request).await
    }

    /// A console form posted as [`Self::console`] does, then, as a browser does, the
    /// `303`'s page fetched with the same cookie (Post/Redirect/Get): the page's answer.
    /// Panics unless the post answered `303`.
    pub async fn console_post(&self, path: &str, cookie: &str, form: &[(&str, &str)]) -> Response {
        let origin = self.origin();
        let posted = self
            .console(Method::POST, path, Some(cookie), Some(&origin), form)
            .await;
        assert_eq!(posted.status, 303, "{path}: {}", posted.text());
        let to = posted
            .headers
            .get("location")
            .and_then(|l| l.to_str().ok())
            .expect("a 303 names its page")
            .to_string();
        self.console(Method::GET, &to, Some(cookie), None, &[])
            .await
    }

    /// Signs in through the form; panics unless it works.
    pub async fn sign_in(&self, email: &str, password: &str) -> Session {
        let origin = self.origin();
        let answer = self
            .console(
                Method::POST,
                "/console/login",
                None,
                Some(&origin),
                &[("email", email), ("password", password)],
            )
            .await;
        assert_eq!(answer.status, 303, "sign-in: {}", answer.text());
        let cookie = session_cookie(&answer).expect("a session cookie");
        let page = self
            .console(Method::GET, "/console/inbox", Some(&cookie), None, &[])
            .await;
        let csrf = csrf_token(&page.text()).expect("a csrf token on the page");
        Session { cookie, csrf }
    }
}

/// The session token an answer's `set-cookie` gives.
pub fn session_cookie(answer: &Response) -> Option<String> {
    answer
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.strip_prefix(&format!("{COOKIE}=")))
        .and_then(|v| v.split(';').next())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// The CSRF token of a page (`<meta name="csrf-token" content="...">`).
pub fn csrf_token(html: &str) -> Option<String> {
    let at = html.find("name=\"csrf-token\" content=\"")?;
    let rest = &html[at + "name=\"csrf-token\" content=\"".len()..];
    Some(rest[..rest.find('"')?].to_string())
}

/// An open `/console/events` stream: its status and the events read from it.
pub struct EventStream {
    pub status: u16,
    body: hyper::body::Incoming,
    buffer: String,
}

impl EventStream {
    /// The stream of an answer whose body is server-sent events.
    pub fn of(response: hyper::Response<hyper::body::Incoming>) -> EventStream {
        EventStream {
            status: response.status().as_u16(),
            body: response.into_body(),
            buffer: String::new(),
        }
    }

    /// The next event (its lines; comments and `retry:` left out), or `None` when the
    /// stream ended or nothing came within `limit`.
    pub async fn next(&mut self, limit: std::time::Duration) -> Option<String> {
        use http_body_util::BodyExt;
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let lines: Vec<&str> = block
                    .lines()
                    .filter(|l| !l.is_empty() && !l.starts_with(':') && !l.starts_with("retry:"))
                    .collect();
                if !lines.is_empty() {
                    return Some(lines.join("\n"));
                }
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame())
                .await
                .ok()??;
            if let Ok(data) = frame.ok()?.into_data() {
                self.buffer.push_str(&String::from_utf8_lossy(&data));
            }
        }
    }
}

impl TestServer {
    /// Opens `/console/events` with the session `cookie` and, if given, `Last-Event-ID`.
    pub async fn events(&self, cookie: &str, last_event_id: Option<&str>) -> EventStream {
        let mut builder = Request::builder()
            .method(Method::GET)
            .uri(format!("{}/console/events", self.base))
            .header("cookie", format!("{COOKIE}={cookie}"))
            .header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            builder = builder.header("last-event-id", id);
        }
        let request = builder.body(Full::new(Bytes::new())).expect("request");
        let response = self.client.request(request).await.expect("response");
        EventStream {
            status: response.status().as_u16(),
            body: response.into_body(),
            buffer: String::new(),
        }
    }
}

//! Email over SMTP (against `smtp_sink`), the one-click unsubscribe link (RFC 8058),
//! and inbound email from a Mailgun route, signed here with Mailgun's published scheme
//! (hex HMAC-SHA256 of timestamp followed by token), not with the server's code.

use hmac::{Hmac, Mac};
use hyper::Method;
use serde_json::{json, Value};
use sha2::Sha256;

use engaged::testkit::smtp::{SinkTls, SmtpSink, TestCa};
use engaged::testkit::{poll, Captured, Org, WebhookReceiver, WAIT};
use engaged::testkit::{Response, TestServer};

use crate::answers::*;
use crate::engagement::*;
use crate::requests::*;
use crate::twilio_signing::*;

const PUBLIC_URL: &str = "https://engaged.test";
const SIGNING_KEY: &str = "key-mailgun-test-0123456789";
const EMAIL: &str = "ada@example.com";
const FROM: &str = "Sam at Acme <sam@acme.example>";

struct Setup {
    acme: Org,
    sink: SmtpSink,
}

/// The kit's `acme` server and keys (`s.ts`, `s.write`, `s.admin`) and the fakes.
impl std::ops::Deref for Setup {
    type Target = Org;

    fn deref(&self) -> &Org {
        &self.acme
    }
}

/// A server with `public_url`, keys of "acme", and email through the sink.
async fn start() -> Setup {
    let sink = SmtpSink::start().await;
    let acme = Org::start_with(|c| c.public_url = Some(PUBLIC_URL.into())).await;
    let (ts, admin) = (&acme.ts, &acme.admin);
    set_business(ts, admin).await;
    set_org(ts, admin, &json!({"providers": {"email": smtp(sink.port)}})).await;
    Setup { acme, sink }
}

fn smtp(port: u16) -> Value {
    json!({"kind": "smtp", "host": "127.0.0.1", "port": port, "security": "none",
           "from": FROM, "inboundSigningKey": SIGNING_KEY})
}

/// A lead reachable by email only, enrolled in `profile`.
fn email_lead(id: &str, email: &str, profile: &str) -> Value {
    json!({"id": id, "firstName": "Ada", "email": email, "customerProfile": profile})
}

/// Profile "mail": one email at once, a second an hour later.
async fn mail_profile(s: &Setup) {
    put_profile(
        &s.ts,
        &s.admin,
        "mail",
        &profile_with(json!([
            email_step(
                "0s",
                "Your {{business.name}} quote",
                "Hi {{firstName}}, your quote is ready."
            ),
            email_step("1h", "Still there?", "Any questions?"),
        ])),
    )
    .await;
}

/// The value of header `name` in a raw message (folded lines joined).
fn header(raw: &str, name: &str) -> Option<String> {
    let head = raw.split("\r\n\r\n").next().unwrap_or("");
    let mut unfolded: Vec<String> = Vec::new();
    for line in head.split("\r\n") {
        if line.starts_with(' ') || line.starts_with('\t') {
            if let Some(last) = unfolded.last_mut() {
                last.push_str(line.trim_start());
                continue;
            }
        }
        unfolded.push(line.to_string());
    }
    unfolded.into_iter().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

/// The text of a raw message, quoted-printable decoded when it is so encoded (lettre
/// chooses it for lines over 76 characters, such as the unsubscribe line).
fn body(raw: &str) -> String {
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    if header(raw, "Content-Transfer-Encoding").as_deref() != Some("quoted-printable") {
        return body;
    }
    let joined = body.replace("=\r\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&joined[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).expect("utf-8 text")
}

/// Waits until the sink holds `n` messages.
async fn wait_sink(sink: &SmtpSink, n: usize) -> Vec<String> {
    poll(
        &format!("{n} message(s) at the sink"),
        WAIT,
        || async move {
            let got = sink.messages();
            if got.len() >= n {
                Ok(got)
            } else {
                Err(format!("{} so far", got.len()))
            }
        },
    )
    .await
}

async fn open_request(ts: &TestServer, method: Method, path: &str, body: &str) -> Response {
    ts.request(
        method,
        path,
        None,
        Some("application/x-www-form-urlencoded"),
        body.as_bytes().to_vec(),
    )
    .await
}

// ---- sending ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_smtp_step_carries_rfc_8058_headers_and_its_one_click_link_unsubscribes() {
    let s = start().await;
    let hooks = WebhookReceiver::ok().await;
    hooks.register(&s.ts, &s.admin).await;
    mail_profile(&s).await;
    s.ts.create_lead(&s.write, &email_lead("L1", EMAIL, "mail"))
        .await;

    let sent = wait_outbound(&s.ts, &s.write, "L1", 1).await;
    let event = wait_settled(&s.ts, &s.write, "L1", &sent[0]["id"]).await;
    assert_eq!(event["data"]["status"], json!("sent"), "{event}");
    let raw = wait_sink(&s.sink, 1).await.remove(0);

    assert!(
        header(&raw, "From").unwrap().contains("<sam@acme.example>"),
        "{raw}"
    );
    assert_eq!(header(&raw, "To").unwrap(), EMAIL, "{raw}");
    assert_eq!(header(&raw, "Subject").unwrap(), "Your Acme Solar quote");
    assert_eq!(
        header(&raw, "MIME-Version").as_deref(),
        Some("1.0"),
        "{raw}"
    );
    assert_eq!(
        header(&raw, "Message-ID"),
        event["data"]["providerMessageId"]
            .as_str()
            .map(str::to_string),
        "the Message-ID is the providerMessageId: {raw}"
    );
    assert!(header(&raw, "Message-ID")
        .unwrap()
        .ends_with("@acme.example>"));
    assert_eq!(
        header(&raw, "List-Unsubscribe-Post").unwrap(),
        "List-Unsubscribe=One-Click"
    );
    let list = header(&raw, "List-Unsubscribe").unwrap();
    let url = list
        .strip_prefix('<')
        .and_then(|u| u.strip_suffix('>'))
        .unwrap_or_else(|| panic!("List-Unsubscribe is <url>: {list}"));
    let path = url
        .strip_prefix(PUBLIC_URL)
        .unwrap_or_else(|| panic!("under public_url: {url}"));
    assert!(path.starts_with("/v1/unsubscribe/"), "{path}");
    let text = body(&raw);
    assert!(
        text.starts_with("Hi Ada, your quote is ready.\r\n\r\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!("To stop receiving these emails, open {url}")),
        "a visible unsubscribe line: {text}"
    );

    // A GET shows a form and does not unsubscribe.
    let page = open_request(&s.ts, Method::GET, path, "").await;
    assert_eq!(page.status, 200, "{}", text_of(&page));
    assert!(page.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let html = text_of(&page);
    assert!(html.contains("<form method=\"post\""), "{html}");
    assert!(!html.contains("http"), "no external resources: {html}");
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "not framed: {csp}");
    assert_eq!(page.headers["x-frame-options"], "DENY");
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(
        lead["subscriptions"]["email"],
        json!("subscribed"),
        "{lead}"
    );
    assert_eq!(
        engagement(&s.ts, &s.write, "L1").await["state"],
        json!("active")
    );

    // A forged or altered token is 403, for both methods.
    let forged = format!(
        "/v1/unsubscribe/{}",
        tamper(&path["/v1/unsubscribe/".len()..])
    );
    for method in [Method::GET, Method::POST] {
        let r = open_request(&s.ts, method, &forged, "List-Unsubscribe=One-Click").await;
        assert_error(&r, 403, "Forbidden");
    }

    // The one-click POST unsubscribes the email channel: 200, no redirect.
    let r = open_request(&s.ts, Method::POST, path, "List-Unsubscribe=One-Click").await;
    assert_eq!(r.status, 200, "{}", text_of(&r));
    assert!(r.headers.get("location").is_none());
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(
        lead["subscriptions"]["email"],
        json!("unsubscribed"),
        "{lead}"
    );
    wait_state(&s.ts, &s.write, "L1", "stopped", Some("unsubscribed")).await;
    let opted_out = hooks.wait_event("lead.opted_out").await;
    assert_eq!(opted_out["channel"], json!("email"), "{opted_out}");

    // A second POST changes nothing.
    let r = open_request(&s.ts, Method::POST, path, "List-Unsubscribe=One-Click").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        get_lead(&s.ts, &s.write, "L1").await["updatedAt"],
        lead["updatedAt"]
    );
    let count = hooks
        .envelopes()
        .iter()
        .filter(|e| e["event"] == json!("lead.opted_out"))
        .count();
    assert_eq!(count, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unsubscribe_link_of_a_deleted_lead_is_404() {
    let s = start().await;
    mail_profile(&s).await;
    s.ts.create_lead(&s.write, &email_lead("L1", EMAIL, "mail"))
        .await;
    let raw = wait_sink(&s.sink, 1).await.remove(0);
    let list = header(&raw, "List-Unsubscribe").unwrap();
    let path = list
        .trim_start_matches('<')
        .trim_end_matches('>')
        .strip_prefix(PUBLIC_URL)
        .unwrap()
        .to_string();
    expect(&s.ts.delete(&s.write, "/v1/leads/L1").await, 200);
    for method in [Method::GET, Method::POST] {
        let r = open_request(&s.ts, method, &path, "List-Unsubscribe=One-Click").await;
        assert_error(&r, 404, "Resource not found: Lead with id L1");
    }
}

fn text_of(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// The first email to lead `id` at `email` (profile "mail"), once settled.
async fn first_email(s: &Setup, id: &str, email: &str) -> Value {
    mail_profile(s).await;
    s.ts.create_lead(&s.write, &email_lead(id, email, "mail"))
        .await;
    let sent = wait_outbound(&s.ts, &s.write, id, 1).await;
    wait_settled(&s.ts, &s.write, id, &sent[0]["id"]).await
}

#[tokio::test(flavor = "current_thread")]
async fn an_smtp_550_fails_the_message_with_its_code_and_the_servers_reply_logged_at_warn() {
    let (log, _guard) = Captured::install(tracing::Level::WARN);
    let s = start().await;
    s.sink.refuse(EMAIL);
    let event = first_email(&s, "L1", EMAIL).await;
    assert_eq!(event["data"]["status"], json!("failed"), "{event}");
    assert_eq!(event["data"]["errorCode"], json!("550"), "{event}");
    assert_eq!(
        event["data"]["error"],
        json!("550 5.1.1 No such user"),
        "{event}"
    );
    assert!(s.sink.messages().is_empty());
    let log = log.text();
    let line = log
        .lines()
        .find(|l| l.contains("550 5.1.1 No such user"))
        .unwrap_or_else(|| panic!("no log line with the reply: {log}"));
    assert!(line.contains("WARN"), "{line}");
}

#[tokio::test(flavor = "current_thread")]
async fn an_smtp_535_to_our_credentials_fails_the_message_with_the_reply_logged_at_warn() {
    let (log, _guard) = Captured::install(tracing::Level::WARN);
    let s = start().await;
    s.sink.refuse_auth();
    let mut settings = smtp(s.sink.port);
    settings["username"] = json!("sam");
    settings["password"] = json!("wrong");
    set_org(&s.ts, &s.admin, &json!({"providers": {"email": settings}})).await;
    let event = first_email(&s, "L1", EMAIL).await;
    assert_eq!(event["data"]["status"], json!("failed"), "{event}");
    assert_eq!(event["data"]["errorCode"], json!("535"), "{event}");
    assert_eq!(
        event["data"]["error"],
        json!("535 5.7.8 Authentication credentials invalid"),
        "{event}"
    );
    assert!(s.sink.mail_from().is_empty(), "nothing was sent");
    assert_eq!(s.sink.connections(), 1, "a refusal is not tried again");
    let log = log.text();
    let line = log
        .lines()
        .find(|l| l.contains("535 5.7.8 Authentication credentials invalid"))
        .unwrap_or_else(|| panic!("no log line with the reply: {log}"));
    assert!(line.contains("WARN"), "{line}");
    assert!(!log.contains("wrong"), "the password is in the log: {log}");
}

// ---- TLS to the mail server -------------------------------------------------------

/// A server whose email goes to a TLS sink (`mode`) with a certificate of its own CA,
/// trusted through `outbound_ca_file` when `trusted`.
async fn start_tls(mode: SinkTls, trusted: bool) -> (Setup, tempfile::TempDir) {
    let ca = TestCa::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = ca.write_ca(dir.path());
    let sink = SmtpSink::start_tls(mode, &ca).await;
    let acme = Org::start_with(|c| {
        c.public_url = Some(PUBLIC_URL.into());
        c.outbound_ca_file = trusted.then_some(ca_file);
    })
    .await;
    let (ts, admin) = (&acme.ts, &acme.admin);
    set_business(ts, admin).await;
    let mut settings = smtp(sink.port);
    settings["security"] = json!(match mode {
        SinkTls::Implicit => "tls",
        SinkTls::StartTls => "starttls",
    });
    set_org(ts, admin, &json!({"providers": {"email": settings}})).await;
    let setup = Setup { acme, sink };
    (setup, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smtp_over_tls_trusts_the_outbound_ca_file() {
    for mode in [SinkTls::Implicit, SinkTls::StartTls] {
        let (s, _dir) = start_tls(mode, true).await;
        let event = first_email(&s, "L1", EMAIL).await;
        assert_eq!(event["data"]["status"], json!("sent"), "{mode:?}: {event}");
        let raw = wait_sink(&s.sink, 1).await;
        assert_eq!(header(&raw[0], "To").as_deref(), Some(EMAIL), "{mode:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_smtp_certificate_fails_tls_certificate_after_one_connection() {
    for mode in [SinkTls::Implicit, SinkTls::StartTls] {
        let (s, _dir) = start_tls(mode, false).await;
        let event = first_email(&s, "L1", EMAIL).await;
        assert_eq!(
            event["data"]["status"],
            json!("failed"),
            "{mode:?}: {event}"
        );
        assert_eq!(
            event["data"]["errorCode"],
            json!("tls-certificate"),
            "{mode:?}: {event}"
        );
        assert_eq!(s.sink.connections(), 1, "{mode:?}: not tried again");
        assert!(s.sink.messages().is_empty(), "{mode:?}");
    }
}

// ---- addresses that are not ASCII (RFC 6531) --------------------------------------

const UTF8_EMAIL: &str = "jörg@bücher.example";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_that_is_not_ascii_goes_with_smtputf8_and_an_idna_domain() {
    let s = start().await;
    s.sink.offer_smtputf8();
    let event = first_email(&s, "L1", UTF8_EMAIL).await;
    assert_eq!(event["data"]["status"], json!("sent"), "{event}");
    let raw = wait_sink(&s.sink, 1).await;
    let mail = s.sink.mail_from();
    assert_eq!(mail.len(), 1, "{mail:?}");
    assert!(
        mail[0].split_whitespace().any(|p| p == "SMTPUTF8"),
        "MAIL FROM carries SMTPUTF8: {mail:?}"
    );
    assert_eq!(
        s.sink.rcpt_to(),
        ["RCPT TO:<jörg@xn--bcher-kva.example>"],
        "the domain is IDNA-encoded"
    );
    assert_eq!(header(&raw[0], "MIME-Version").as_deref(), Some("1.0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_that_is_not_ascii_to_a_server_without_smtputf8_fails_and_sends_nothing() {
    let s = start().await;
    let event = first_email(&s, "L1", UTF8_EMAIL).await;
    assert_eq!(event["data"]["status"], json!("failed"), "{event}");
    assert_eq!(
        event["data"]["errorCode"],
        json!("smtputf8-unsupported"),
        "{event}"
    );
    assert!(s.sink.mail_from().is_empty(), "{:?}", s.sink.mail_from());
    assert!(s.sink.messages().is_empty());
    assert_eq!(s.sink.connections(), 1, "not tried again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_smtp_451_is_retried_and_one_message_arrives() {
    let s = start().await;
    s.sink.defer_once();
    mail_profile(&s).await;
    s.ts.create_lead(&s.write, &email_lead("L1", EMAIL, "mail"))
        .await;
    let sent = wait_outbound(&s.ts, &s.write, "L1", 1).await;
    let event = wait_settled(&s.ts, &s.write, "L1", &sent[0]["id"]).await;
    assert_eq!(event["data"]["status"], json!("sent"), "{event}");
    let raw = wait_sink(&s.sink, 1).await;
    assert_eq!(raw.len(), 1);
    assert_eq!(
        header(&raw[0], "Message-ID"),
        event["data"]["providerMessageId"]
            .as_str()
            .map(str::to_string)
    );
}

// ---- settings -----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smtp_settings_are_validated_and_their_secrets_write_only() {
    let s = start().await;
    let mut missing = smtp(25);
    missing.as_object_mut().unwrap().remove("host");
    let r =
        s.ts.patch(
            &s.admin,
            "/v1/org",
            &json!({"providers": {"email": missing}}),
        )
        .await;
    assert_error(&r, 400, "Invalid format for field: providers.email.host");
    let mut bad_from = smtp(25);
    bad_from["from"] = json!("not a mailbox");
    let r =
        s.ts.patch(
            &s.admin,
            "/v1/org",
            &json!({"providers": {"email": bad_from}}),
        )
        .await;
    assert_error(&r, 400, "Invalid format for field: providers.email.from");

    let mut with_password = smtp(2525);
    with_password["username"] = json!("sam");
    with_password["password"] = json!("hunter2-secret");
    let view = set_org(
        &s.ts,
        &s.admin,
        &json!({"providers": {"email": with_password}}),
    )
    .await;
    let email = &view["providers"]["email"];
    assert_eq!(email["passwordSet"], json!(true), "{view}");
    assert_eq!(email["inboundSigningKeySet"], json!(true), "{view}");
    assert_eq!(email["port"], json!(2525));
    // Absent secrets keep the stored ones, the password only for the same server.
    let view = set_org(
        &s.ts,
        &s.admin,
        &json!({"providers": {"email": smtp(2525)}}),
    )
    .await;
    assert_eq!(
        view["providers"]["email"]["passwordSet"],
        json!(true),
        "{view}"
    );
    let view = set_org(
        &s.ts,
        &s.admin,
        &json!({"providers": {"email": smtp(2526)}}),
    )
    .await;
    let email = &view["providers"]["email"];
    assert_eq!(email["passwordSet"], json!(false), "another port: {view}");
    assert_eq!(email["inboundSigningKeySet"], json!(true), "{view}");
    let shown = text_of(&s.ts.get(&s.admin, "/v1/org").await);
    assert!(
        !shown.contains("hunter2-secret") && !shown.contains(SIGNING_KEY),
        "{shown}"
    );

    // Without public_url the smtp provider is refused.
    let bare = TestServer::start().await;
    let admin = bare.key("acme", "admin").await;
    let r = bare
        .patch(
            &admin,
            "/v1/org",
            &json!({"providers": {"email": smtp(25)}}),
        )
        .await;
    assert_error(&r, 400, "public_url must be set to use the smtp provider");
}

// ---- inbound email from Mailgun -----------------------------------------------------

fn mailgun_fields(sender: &str, timestamp: i64, key: &str) -> Vec<(String, String)> {
    let token = format!("tok{timestamp}{sender}").replace(['@', '.'], "");
    mailgun_fields_with_token(sender, timestamp, key, &token)
}

/// Mailgun's fields for `sender` with `token`, signed with `key`.
fn mailgun_fields_with_token(
    sender: &str,
    timestamp: i64,
    key: &str,
    token: &str,
) -> Vec<(String, String)> {
    let token = token.to_string();
    let timestamp = timestamp.to_string();
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(timestamp.as_bytes());
    mac.update(token.as_bytes());
    let signature = hex::encode(mac.finalize().into_bytes());
    [
        ("sender", sender.to_string()),
        ("recipient", "sam@acme.example".to_string()),
        ("subject", "Re: Your Acme Solar quote".to_string()),
        (
            "body-plain",
            "How much is it?\n\n> quoted older text".to_string(),
        ),
        ("timestamp", timestamp),
        ("token", token),
        ("signature", signature),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

async fn org_id(s: &Setup) -> String {
    str_of(&s.ts.get(&s.admin, "/v1/org").await.json()["id"]).to_string()
}

async fn post_urlencoded(s: &Setup, org: &str, fields: &[(String, String)]) -> Response {
    let body = serde_urlencoded::to_string(fields).unwrap();
    s.ts.request(
        Method::POST,
        &format!("/v1/providers/mailgun/{org}/inbound"),
        None,
        Some("application/x-www-form-urlencoded"),
        body.into_bytes(),
    )
    .await
}

async fn post_multipart(s: &Setup, org: &str, fields: &[(String, String)]) -> Response {
    let boundary = "----engagedTestBoundary7MA4YWxk";
    let mut body = String::new();
    for (name, value) in fields {
        body.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
        ));
    }
    body.push_str(&format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"attachment-1\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nignored\r\n--{boundary}--\r\n"
    ));
    s.ts.request(
        Method::POST,
        &format!("/v1/providers/mailgun/{org}/inbound"),
        None,
        Some(&format!("multipart/form-data; boundary={boundary}")),
        body.into_bytes(),
    )
    .await
}

/// Leads L1 (Ada) and L2 (Bob) in a cadence whose first email is an hour away.
async fn two_waiting_leads(s: &Setup) {
    put_profile(
        &s.ts,
        &s.admin,
        "later",
        &profile_with(json!([email_step("1h", "Hello", "Hello there")])),
    )
    .await;
    for (id, email) in [("L1", EMAIL), ("L2", "bob@example.com")] {
        s.ts.create_lead(&s.write, &email_lead(id, email, "later"))
            .await;
        wait_state(&s.ts, &s.write, id, "active", None).await;
    }
}

fn from_lead(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["owner"] == json!("lead"))
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_mailgun_posts_are_the_leads_email_and_stop_the_cadence() {
    let s = start().await;
    two_waiting_leads(&s).await;
    let org = org_id(&s).await;
    let now = chrono::Utc::now().timestamp();

    // url-encoded, with stripped-text: that is the reply's text.
    let mut fields = mailgun_fields(EMAIL, now, SIGNING_KEY);
    fields.push(("stripped-text".into(), "How much is it?".into()));
    let r = post_urlencoded(&s, &org, &fields).await;
    assert_eq!(r.status, 200, "{}", text_of(&r));
    assert_eq!(
        r.json()["message"]["content"]["text"],
        json!("How much is it?")
    );
    wait_state(&s.ts, &s.write, "L1", "stopped", Some("replied")).await;
    let theirs = from_lead(&messages_of(&s.ts, &s.write, "L1").await);
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(theirs[0]["channel"], json!("email"));
    assert_eq!(
        theirs[0]["content"]["subject"],
        json!("Re: Your Acme Solar quote")
    );

    // multipart, without stripped-text: body-plain is the text; files are skipped.
    let r = post_multipart(
        &s,
        &org,
        &mailgun_fields("bob@example.com", now, SIGNING_KEY),
    )
    .await;
    assert_eq!(r.status, 200, "{}", text_of(&r));
    wait_state(&s.ts, &s.write, "L2", "stopped", Some("replied")).await;
    let theirs = from_lead(&messages_of(&s.ts, &s.write, "L2").await);
    assert_eq!(
        theirs[0]["content"]["text"],
        json!("How much is it?\n\n> quoted older text")
    );

    // An unknown sender is 404, like POST /v1/inbound/email.
    let r = post_urlencoded(&s, &org, &mailgun_fields("x@y.example", now, SIGNING_KEY)).await;
    assert_error(&r, 404, "Resource not found: Lead with email x@y.example");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mailgun_posts_with_a_bad_signature_or_a_stale_timestamp_are_403() {
    let s = start().await;
    two_waiting_leads(&s).await;
    let org = org_id(&s).await;
    let now = chrono::Utc::now().timestamp();

    let wrong_key = mailgun_fields(EMAIL, now, "another-key");
    assert_error(
        &post_urlencoded(&s, &org, &wrong_key).await,
        403,
        "Forbidden",
    );
    assert_error(
        &post_multipart(&s, &org, &wrong_key).await,
        403,
        "Forbidden",
    );
    let mut altered = mailgun_fields(EMAIL, now, SIGNING_KEY);
    altered[4].1 = (now + 1).to_string(); // the timestamp, after signing
    assert_error(&post_urlencoded(&s, &org, &altered).await, 403, "Forbidden");
    let stale = mailgun_fields(EMAIL, now - 600, SIGNING_KEY);
    assert_error(&post_urlencoded(&s, &org, &stale).await, 403, "Forbidden");
    let unsigned: Vec<(String, String)> = mailgun_fields(EMAIL, now, SIGNING_KEY)
        .into_iter()
        .filter(|(k, _)| k != "signature")
        .collect();
    assert_error(
        &post_urlencoded(&s, &org, &unsigned).await,
        403,
        "Forbidden",
    );

    assert!(messages_of(&s.ts, &s.write, "L1").await.is_empty());
    assert_eq!(
        engagement(&s.ts, &s.write, "L1").await["state"],
        json!("active")
    );

    // An organization without an inbound signing key: 404.
    set_org(&s.ts, &s.admin, &json!({"providers": {"email": null}})).await;
    let r = post_urlencoded(&s, &org, &mailgun_fields(EMAIL, now, SIGNING_KEY)).await;
    assert_eq!(r.status, 404, "{}", text_of(&r));
    let r = post_urlencoded(&s, "no-such-org", &mailgun_fields(EMAIL, now, SIGNING_KEY)).await;
    assert_eq!(r.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mailgun_token_is_accepted_once_and_an_empty_token_is_403() {
    let s = start().await;
    two_waiting_leads(&s).await;
    let org = org_id(&s).await;
    let now = chrono::Utc::now().timestamp();

    let first = mailgun_fields(EMAIL, now, SIGNING_KEY);
    let r = post_urlencoded(&s, &org, &first).await;
    assert_eq!(r.status, 200, "{}", text_of(&r));
    let before = get_lead(&s.ts, &s.write, "L1").await;

    // The same request again, then its signed timestamp and token with other text.
    assert_error(&post_urlencoded(&s, &org, &first).await, 403, "Forbidden");
    let mut forged = first.clone();
    for (name, value) in forged.iter_mut() {
        if name == "body-plain" {
            *value = "Please call my other number".into();
        }
    }
    assert_error(&post_multipart(&s, &org, &forged).await, 403, "Forbidden");
    let theirs = from_lead(&messages_of(&s.ts, &s.write, "L1").await);
    assert_eq!(theirs.len(), 1, "a replay records nothing: {theirs:?}");
    let after = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(after["updatedAt"], before["updatedAt"], "{after}");

    // An empty token, however well signed, is refused.
    let empty = mailgun_fields_with_token("bob@example.com", now, SIGNING_KEY, "");
    assert_error(&post_urlencoded(&s, &org, &empty).await, 403, "Forbidden");
    assert!(from_lead(&messages_of(&s.ts, &s.write, "L2").await).is_empty());
    // Another token is another email.
    let fresh = mailgun_fields("bob@example.com", now, SIGNING_KEY);
    assert_eq!(post_urlencoded(&s, &org, &fresh).await.status, 200);
}

// ---- email threads --------------------------------------------------------------------

/// A header value with its RFC 2047 encoded words (`=?utf-8?b?...?=`, `=?utf-8?q?...?=`)
/// decoded; the whitespace between two encoded words dropped.
fn decoded(value: &str) -> String {
    use base64::Engine as _;
    let mut out = String::new();
    let mut rest = value;
    let mut after_word = false;
    while let Some(start) = rest.find("=?") {
        let before = &rest[..start];
        if !(after_word && before.trim().is_empty()) {
            out.push_str(before);
        }
        let word = &rest[start + 2..];
        let parts: Vec<&str> = word.splitn(3, '?').collect();
        let (encoding, data_end) = (parts[1], parts[2].find("?=").expect("an encoded word"));
        let data = &parts[2][..data_end];
        let bytes = if encoding.eq_ignore_ascii_case("b") {
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .expect("base64")
        } else {
            let data = data.replace('_', " ");
            let mut bytes = Vec::new();
            let mut i = 0;
            while i < data.len() {
                if data.as_bytes()[i] == b'=' {
                    bytes.push(u8::from_str_radix(&data[i + 1..i + 3], 16).expect("hex"));
                    i += 3;
                } else {
                    bytes.push(data.as_bytes()[i]);
                    i += 1;
                }
            }
            bytes
        };
        out.push_str(&String::from_utf8(bytes).expect("utf-8"));
        rest = &parts[2][data_end + 2..];
        after_word = true;
    }
    out.push_str(rest);
    out
}

const THEIR_SUBJECT: &str = "Re: Ihr Angebot – Sonnenstrom ☀ für Jörg";
const THEIR_ID: &str = "<CAF=reply.42@mail.gmail.example>";
const ROOT_ID: &str = "<em_root@acme.example>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_to_a_leads_email_thread_to_it_from_the_api_and_the_console() {
    let s = start().await;
    s.ts.create_lead(
        &s.write,
        &json!({"id": "L1", "firstName": "Jörg", "email": EMAIL}),
    )
    .await;
    let org = org_id(&s).await;
    let now = chrono::Utc::now().timestamp();
    let mut fields = mailgun_fields(EMAIL, now, SIGNING_KEY);
    fields.retain(|(k, _)| k != "subject");
    fields.push(("subject".into(), THEIR_SUBJECT.into()));
    fields.push((
        "message-headers".into(),
        json!([
            ["Message-Id", THEIR_ID],
            ["References", ROOT_ID],
            ["Subject", THEIR_SUBJECT]
        ])
        .to_string(),
    ));
    let r = post_urlencoded(&s, &org, &fields).await;
    assert_eq!(r.status, 200, "{}", text_of(&r));
    let content = &r.json()["message"]["content"];
    assert_eq!(content["messageId"], json!(THEIR_ID), "kept on the message");
    assert_eq!(content["references"], json!(ROOT_ID));
    assert_eq!(content["subject"], json!(THEIR_SUBJECT));

    // The API's message without a subject: `Re:` theirs, not doubled.
    let r =
        s.ts.post(
            &s.write,
            "/v1/leads/L1/messages",
            &json!({"owner": "user", "channel": "email", "content": {"text": "About 9,000 EUR."}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", text_of(&r));
    let raw = wait_sink(&s.sink, 1).await.remove(0);
    assert_eq!(
        decoded(&header(&raw, "Subject").unwrap()),
        THEIR_SUBJECT,
        "{raw}"
    );
    assert_eq!(
        header(&raw, "In-Reply-To").as_deref(),
        Some(THEIR_ID),
        "{raw}"
    );
    assert_eq!(
        header(&raw, "References"),
        Some(format!("{ROOT_ID} {THEIR_ID}")),
        "{raw}"
    );

    // The console's Subject starts as the reply's, and what it sends threads too.
    let password = s.ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let session = s.ts.sign_in("pat@example.com", &password).await;
    let page =
        s.ts.console(
            Method::GET,
            "/console/leads/L1",
            Some(&session.cookie),
            None,
            &[],
        )
        .await;
    let html = page.text();
    assert!(
        html.contains(&format!("name=\"subject\" value=\"{THEIR_SUBJECT}\"")),
        "the Subject is prefilled: {html}"
    );
    let origin = s.ts.origin();
    let reply =
        s.ts.console(
            Method::POST,
            "/console/leads/L1/reply",
            Some(&session.cookie),
            Some(&origin),
            &[
                ("csrf", &session.csrf),
                ("channel", "email"),
                ("message", "Shall we book a visit?"),
                ("subject", THEIR_SUBJECT),
            ],
        )
        .await;
    assert_eq!(reply.status, 303, "{}", reply.text());
    let raw = wait_sink(&s.sink, 2).await.remove(1);
    assert_eq!(
        decoded(&header(&raw, "Subject").unwrap()),
        THEIR_SUBJECT,
        "{raw}"
    );
    assert_eq!(
        header(&raw, "In-Reply-To").as_deref(),
        Some(THEIR_ID),
        "{raw}"
    );
    assert_eq!(
        header(&raw, "References"),
        Some(format!("{ROOT_ID} {THEIR_ID}")),
        "{raw}"
    );
}

/// Issue 41: with Mailgun delivering the lead's emails (`inboundSigningKey` set), a key
/// cannot post one as the lead: 409 in words, nothing recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbound_email_door_is_closed_while_mailgun_delivers() {
    let s = start().await;
    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/leads",
                &email_lead("m1", "ada@example.com", ""),
            )
            .await,
        201,
    );
    let r = s
        .ts
        .post(
            &s.write,
            "/v1/inbound/email",
            &json!({"from": "ada@example.com", "subject": "Re: hi", "text": "Please email me again"}),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(r.text().contains("arrive from Mailgun"), "{}", r.text());
    let messages = expect(&s.ts.get(&s.write, "/v1/leads/m1/messages").await, 200);
    assert_eq!(messages["messages"], json!([]), "{messages}");
}

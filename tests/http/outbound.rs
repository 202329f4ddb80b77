//! Where the server's outbound clients may go, and what travels there.
//!
//! - Write-only secrets are bound to their endpoint: a changed Twilio `baseUrl`, SMTP
//!   host or port, assistant `baseUrl` or CalDAV URL without the secret given again
//!   clears the stored one (the view says it is not set), through the API and the
//!   console alike.
//! - Under `outbound_allow_private = false`, a calendar, webhook, Twilio, SMTP, model or
//!   compliance address in a loopback, link-local or private range is a 400 naming its
//!   field when saved and changes nothing; one saved before is refused when connecting.
//! - Every CalDAV server that cannot be read (closed, TLS, HTML, a redirect, another
//!   status) answers the same 424 words.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use chrono::{Duration as ChronoDuration, Utc};
use hyper::Method;
use serde_json::{json, Value};

use engaged::testkit::console::Session;
use engaged::testkit::serve::{respond, serve};
use engaged::testkit::{closed_addr, enc, Org, TestServer};

use crate::answers::*;

const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";

fn calendar_at(url: &str, password: Option<&str>) -> Value {
    let day = json!([["00:00", "24:00"]]);
    let mut caldav = json!({"url": url, "username": "ana"});
    if let Some(password) = password {
        caldav["password"] = json!(password);
    }
    json!({"timeZone": "UTC",
        "hours": {"mon": day, "tue": day, "wed": day, "thu": day, "fri": day, "sat": day, "sun": day},
        "caldav": caldav})
}

fn twilio(base_url: &str, token: Option<&str>) -> Value {
    let mut sms = json!({"kind": "twilio", "accountSid": ACCOUNT, "from": "+15550100000",
        "baseUrl": base_url});
    if let Some(token) = token {
        sms["authToken"] = json!(token);
    }
    json!({"providers": {"sms": sms}})
}

fn smtp(host: &str, port: u16, password: Option<&str>) -> Value {
    let mut email = json!({"kind": "smtp", "host": host, "port": port, "security": "tls",
        "from": "sales@solar.example"});
    if let Some(password) = password {
        email["password"] = json!(password);
    }
    json!({"providers": {"email": email}})
}

fn assistant(base_url: &str, key: Option<&str>) -> Value {
    let mut assistant = json!({"baseUrl": base_url, "model": "llama"});
    if let Some(key) = key {
        assistant["apiKey"] = json!(key);
    }
    json!({ "assistant": assistant })
}

async fn org_view(org: &Org) -> Value {
    expect(&org.ts.get(&org.admin, "/v1/org").await, 200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_endpoint_without_the_secret_clears_it_in_the_api() {
    let org = Org::start_with(|c| c.public_url = Some("https://engaged.test".into())).await;
    let (ts, admin) = (&org.ts, org.admin.as_str());

    // Twilio's auth token.
    expect(
        &ts.patch(
            admin,
            "/v1/org",
            &twilio("https://api.twilio.com", Some("tok")),
        )
        .await,
        200,
    );
    expect(
        &ts.patch(admin, "/v1/org", &twilio("https://api.twilio.com/", None))
            .await,
        200,
    );
    let sms = &org_view(&org).await["providers"]["sms"];
    assert_eq!(
        sms["authTokenSet"],
        json!(true),
        "the same place keeps it: {sms}"
    );
    let moved = expect(
        &ts.patch(
            admin,
            "/v1/org",
            &twilio("https://twilio.elsewhere.example", None),
        )
        .await,
        200,
    );
    assert_eq!(
        moved["providers"]["sms"]["authTokenSet"],
        json!(false),
        "{moved}"
    );
    assert_eq!(
        org_view(&org).await["providers"]["sms"]["authTokenSet"],
        json!(false)
    );

    // The SMTP password: another host, then another port.
    expect(
        &ts.patch(admin, "/v1/org", &smtp("mail.example.com", 465, Some("pw")))
            .await,
        200,
    );
    expect(
        &ts.patch(admin, "/v1/org", &smtp("MAIL.example.com", 465, None))
            .await,
        200,
    );
    assert_eq!(
        org_view(&org).await["providers"]["email"]["passwordSet"],
        json!(true)
    );
    expect(
        &ts.patch(admin, "/v1/org", &smtp("mail.example.com", 2465, None))
            .await,
        200,
    );
    assert_eq!(
        org_view(&org).await["providers"]["email"]["passwordSet"],
        json!(false)
    );
    expect(
        &ts.patch(
            admin,
            "/v1/org",
            &smtp("mail.example.com", 2465, Some("pw")),
        )
        .await,
        200,
    );
    expect(
        &ts.patch(
            admin,
            "/v1/org",
            &smtp("relay.elsewhere.example", 2465, None),
        )
        .await,
        200,
    );
    assert_eq!(
        org_view(&org).await["providers"]["email"]["passwordSet"],
        json!(false)
    );

    // The model's API key: kept for the same baseUrl (or none given), cleared for another.
    expect(
        &ts.patch(
            admin,
            "/v1/org",
            &assistant("https://models.example.com/v1", Some("sk-1")),
        )
        .await,
        200,
    );
    expect(
        &ts.patch(admin, "/v1/org", &json!({"assistant": {"model": "other"}}))
            .await,
        200,
    );
    assert_eq!(org_view(&org).await["assistant"]["apiKeySet"], json!(true));
    let moved = expect(
        &ts.patch(
            admin,
            "/v1/org",
            &json!({"assistant": {"baseUrl": "https://models.elsewhere.example/v1"}}),
        )
        .await,
        200,
    );
    assert_eq!(moved["assistant"]["apiKeySet"], json!(false), "{moved}");

    // The CalDAV password.
    let first = "https://cal.example.com/ana/sales/";
    expect(
        &ts.put(
            admin,
            "/v1/calendars/sales",
            &calendar_at(first, Some("pw")),
        )
        .await,
        200,
    );
    let kept = expect(
        &ts.put(admin, "/v1/calendars/sales", &calendar_at(first, None))
            .await,
        200,
    );
    assert_eq!(kept["caldav"]["passwordSet"], json!(true));
    let moved = expect(
        &ts.put(
            admin,
            "/v1/calendars/sales",
            &calendar_at("https://cal.elsewhere.example/ana/", None),
        )
        .await,
        200,
    );
    assert_eq!(moved["caldav"]["passwordSet"], json!(false), "{moved}");
    let read = expect(&ts.get(admin, "/v1/calendars/sales").await, 200);
    assert_eq!(read["caldav"]["passwordSet"], json!(false));
}

async fn admin_session(ts: &TestServer) -> Session {
    let password = ts.user("acme", "boss@example.com", "Bo", "admin").await;
    ts.sign_in("boss@example.com", &password).await
}

async fn post(
    ts: &TestServer,
    s: &Session,
    path: &str,
    form: &[(&str, &str)],
) -> engaged::testkit::Response {
    let mut fields = vec![("csrf", s.csrf.as_str())];
    fields.extend_from_slice(form);
    ts.console(
        Method::POST,
        path,
        Some(&s.cookie),
        Some(&ts.origin()),
        &fields,
    )
    .await
}

/// [`post`] of a form that is refused: the settings page its redirect leads to, which
/// shows the refusal (Post/Redirect/Get).
async fn refused_post(
    ts: &TestServer,
    s: &Session,
    path: &str,
    form: &[(&str, &str)],
) -> engaged::testkit::Response {
    let mut fields = vec![("csrf", s.csrf.as_str())];
    fields.extend_from_slice(form);
    ts.console_post(path, &s.cookie, &fields).await
}

fn smtp_form<'a>(host: &'a str, password: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut form = vec![
        ("sms-kind", "sandbox"),
        ("voice-kind", "sandbox"),
        ("email-kind", "smtp"),
        ("email-host", host),
        ("email-port", "465"),
        ("email-security", "tls"),
        ("email-from", "sales@solar.example"),
    ];
    if let Some(password) = password {
        form.push(("email-password", password));
    }
    form
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_endpoint_without_the_secret_clears_it_in_the_console() {
    let org = Org::start_with(|c| c.public_url = Some("https://engaged.test".into())).await;
    let ts = &org.ts;
    let boss = admin_session(ts).await;
    let saved = post(
        ts,
        &boss,
        "/console/settings/providers",
        &smtp_form("mail.example.com", Some("pw")),
    )
    .await;
    assert_eq!(saved.status, 303, "{}", saved.text());
    let again = post(
        ts,
        &boss,
        "/console/settings/providers",
        &smtp_form("mail.example.com", None),
    )
    .await;
    assert_eq!(again.status, 303, "{}", again.text());
    assert_eq!(
        org_view(&org).await["providers"]["email"]["passwordSet"],
        json!(true)
    );
    let moved = post(
        ts,
        &boss,
        "/console/settings/providers",
        &smtp_form("relay.elsewhere.example", None),
    )
    .await;
    assert_eq!(moved.status, 303, "{}", moved.text());
    assert_eq!(
        org_view(&org).await["providers"]["email"]["passwordSet"],
        json!(false)
    );

    let assistant_form = |url: &'static str, key: &'static str| {
        vec![
            ("op", "save"),
            ("assistant-url", url),
            ("assistant-model", "llama"),
            ("assistant-key", key),
        ]
    };
    let form = assistant_form("https://models.example.com/v1", "sk-1");
    assert_eq!(
        post(ts, &boss, "/console/settings/assistant", &form)
            .await
            .status,
        303
    );
    let form = assistant_form("https://models.example.com/v1", "");
    assert_eq!(
        post(ts, &boss, "/console/settings/assistant", &form)
            .await
            .status,
        303
    );
    assert_eq!(org_view(&org).await["assistant"]["apiKeySet"], json!(true));
    let form = assistant_form("https://models.elsewhere.example/v1", "");
    assert_eq!(
        post(ts, &boss, "/console/settings/assistant", &form)
            .await
            .status,
        303
    );
    assert_eq!(org_view(&org).await["assistant"]["apiKeySet"], json!(false));
}

/// The 400 of a refused address: its field named, in words.
fn assert_refused(answer: &engaged::testkit::Response, field: &str) {
    assert_eq!(answer.status, 400, "{field}: {}", answer.text());
    let message = answer.json()["message"].as_str().unwrap_or("").to_string();
    assert_eq!(
        message,
        format!(
            "{field} may not point at a loopback, link-local or private address on this server"
        ),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_are_refused_by_field_when_outbound_allow_private_is_off() {
    let org = Org::start_with(|c| {
        c.public_url = Some("https://engaged.test".into());
        c.outbound_allow_private = false;
    })
    .await;
    let (ts, admin) = (&org.ts, org.admin.as_str());
    let before = org_view(&org).await;

    for url in [
        "http://127.0.0.1:5232/ana/",
        "https://localhost/ana/",
        "http://[::1]/ana/",
        "http://10.0.0.7/ana/",
        "http://169.254.169.254/latest/",
        "http://[::ffff:192.168.1.1]/ana/",
        "http://2130706433/ana/",
    ] {
        let refused = ts
            .put(admin, "/v1/calendars/sales", &calendar_at(url, Some("pw")))
            .await;
        assert_refused(&refused, "caldav.url");
    }
    assert_eq!(ts.get(admin, "/v1/calendars/sales").await.status, 404);

    for url in ["http://10.1.2.3/hook", "https://100.64.0.9/hook"] {
        let refused = ts.post(admin, "/v1/webhooks", &json!({ "url": url })).await;
        assert_refused(&refused, "url");
    }
    let hooks = expect(&ts.get(admin, "/v1/webhooks").await, 200);
    assert_eq!(hooks["webhooks"], json!([]), "{hooks}");

    let refused = ts
        .patch(
            admin,
            "/v1/org",
            &twilio("http://localhost:8080", Some("t")),
        )
        .await;
    assert_refused(&refused, "providers.sms.baseUrl");
    let refused = ts
        .patch(admin, "/v1/org", &smtp("192.168.1.10", 25, Some("pw")))
        .await;
    assert_refused(&refused, "providers.email.host");
    let refused = ts
        .patch(
            admin,
            "/v1/org",
            &assistant("http://[fd00::5]:8080/v1", Some("k")),
        )
        .await;
    assert_refused(&refused, "assistant.baseUrl");
    let refused = ts
        .patch(
            admin,
            "/v1/org",
            &json!({"complianceUrl": "http://172.16.0.1/check"}),
        )
        .await;
    assert_refused(&refused, "complianceUrl");
    assert_eq!(org_view(&org).await, before, "a refusal changes nothing");

    // Public places are taken.
    expect(
        &ts.put(
            admin,
            "/v1/calendars/sales",
            &calendar_at("https://cal.example.com/ana/", Some("pw")),
        )
        .await,
        200,
    );
    expect(
        &ts.post(
            admin,
            "/v1/webhooks",
            &json!({"url": "https://crm.example.com/hook"}),
        )
        .await,
        201,
    );
    expect(
        &ts.patch(
            admin,
            "/v1/org",
            &twilio("https://api.twilio.com", Some("t")),
        )
        .await,
        200,
    );
    expect(
        &ts.patch(admin, "/v1/org", &smtp("smtp.example.com", 465, Some("pw")))
            .await,
        200,
    );
    expect(
        &ts.patch(
            admin,
            "/v1/org",
            &assistant("https://models.example.com/v1", Some("k")),
        )
        .await,
        200,
    );

    // The console's forms take the same path: the refusal beside its field.
    let boss = admin_session(ts).await;
    let refused = refused_post(
        ts,
        &boss,
        "/console/settings/providers",
        &smtp_form("10.0.0.25", None),
    )
    .await;
    assert_eq!(refused.status, 200, "{}", refused.text());
    assert!(
        refused.text().contains(
            "providers.email.host may not point at a loopback, link-local or private address"
        ),
        "{}",
        refused.text()
    );
    let refused = refused_post(
        ts,
        &boss,
        "/console/settings/webhooks",
        &[("url", "http://127.0.0.1:9000/hook")],
    )
    .await;
    assert_eq!(refused.status, 200, "{}", refused.text());
    assert!(
        refused.text().contains("url may not point at a loopback"),
        "{}",
        refused.text()
    );
    assert_eq!(
        org_view(&org).await["providers"]["email"]["host"],
        json!("smtp.example.com")
    );
}

/// A plain HTTP server on loopback answering every request 207 with an empty
/// multistatus; it counts the connections it accepted.
async fn counting_caldav() -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let addr = serve(move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            Some(respond(
                207,
                r#"<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"></d:multistatus>"#,
            ))
        }
    })
    .await;
    (addr, seen)
}

fn times_path() -> String {
    let from = Utc::now() + ChronoDuration::days(1);
    let to = from + ChronoDuration::hours(3);
    let wire = |t: chrono::DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    format!(
        "/v1/calendars/sales/times?from={}&to={}",
        enc(&wire(from)),
        enc(&wire(to))
    )
}

const UNREACHABLE: &str = "Calendar unavailable: the CalDAV server could not be reached";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_address_saved_before_is_refused_when_connecting() {
    let org = Org::start().await;
    let (caldav, seen) = counting_caldav().await;
    let url = format!("http://{caldav}/ana/");
    expect(
        &org.ts
            .put(
                &org.admin,
                "/v1/calendars/sales",
                &calendar_at(&url, Some("pw")),
            )
            .await,
        200,
    );
    expect(&org.ts.get(&org.write, &times_path()).await, 200);
    let reached = seen.load(Ordering::SeqCst);
    assert!(reached >= 1, "read while private addresses are allowed");

    // The operator turns private addresses off: the stored URL is not dialed.
    let ts = org
        .ts
        .restart_with(|c| c.outbound_allow_private = false)
        .await;
    let refused = ts.get(&org.write, &times_path()).await;
    assert_eq!(refused.status, 424, "{}", refused.text());
    assert_eq!(refused.json()["message"], json!(UNREACHABLE));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        reached,
        "nothing more reached it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_caldav_server_that_cannot_be_read_answers_the_same_words() {
    let org = Org::start().await;
    let html = serve(|_, _| async {
        let mut page = respond(200, "<html><body>router login</body></html>");
        page.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/html"),
        );
        Some(page)
    })
    .await;
    let (elsewhere, seen_elsewhere) = counting_caldav().await;
    let redirect = serve(move |_, _| async move {
        let mut moved = respond(302, "");
        if let Ok(location) =
            hyper::header::HeaderValue::from_str(&format!("http://{elsewhere}/ana/"))
        {
            moved
                .headers_mut()
                .insert(hyper::header::LOCATION, location);
        }
        Some(moved)
    })
    .await;
    let missing = serve(|_, _| async { Some(respond(404, "")) }).await;
    for url in [
        format!("http://{}/ana/", closed_addr()),
        format!("http://{html}/ana/"),
        format!("http://{redirect}/ana/"),
        format!("http://{missing}/ana/"),
        // TLS spoken to a server that speaks plain HTTP.
        format!("https://{html}/ana/"),
    ] {
        expect(
            &org.ts
                .put(
                    &org.admin,
                    "/v1/calendars/sales",
                    &calendar_at(&url, Some("pw")),
                )
                .await,
            200,
        );
        let answer = org.ts.get(&org.write, &times_path()).await;
        assert_eq!(answer.status, 424, "{url}: {}", answer.text());
        assert_eq!(answer.json()["message"], json!(UNREACHABLE), "{url}");
    }
    assert_eq!(
        seen_elsewhere.load(Ordering::SeqCst),
        0,
        "a redirect is never followed"
    );
}

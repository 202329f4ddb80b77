//! Email notifications about leads that need attention: a person turns them on for
//! themselves; a lead entering "Needs attention" sends each such person one email
//! through the organization's email provider, at most one per lead per hour, linking
//! the lead's page; the sandbox logs them and Settings → Notifications lists them.

use hyper::Method;
use serde_json::json;

use engaged::testkit::console::Session;
use engaged::testkit::smtp::SmtpSink;
use engaged::testkit::{poll, Org, TestServer, WAIT};

use crate::engagement::set_org;
use crate::requests::inbound_sms;

/// Turns the signed-in person's notification emails on.
async fn turn_on(ts: &TestServer, session: &Session) {
    let r = ts
        .console(
            Method::POST,
            "/console/notifications",
            Some(&session.cookie),
            Some(&ts.origin()),
            &[("csrf", &session.csrf), ("notify", "on")],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text());
    let page = ts
        .console(
            Method::GET,
            "/console/notifications?saved=on",
            Some(&session.cookie),
            None,
            &[],
        )
        .await;
    let text = page.text();
    assert!(text.contains("Saved: you will get an email"), "{text}");
    assert!(text.contains("checked"), "the box stays ticked: {text}");
}

/// A lead with the assistant off: its own message needs a person ("Waiting for a reply").
async fn waiting_lead(org: &Org, id: &str, name: &str, phone: &str) {
    org.ts
        .create_lead(
            &org.write,
            &json!({"id": id, "firstName": name, "phone": phone, "isAiOn": false}),
        )
        .await;
    inbound_sms(&org.ts, &org.write, phone, "Can someone call me?").await;
}

/// The Settings page's notifications, as an admin reads them.
async fn settings_text(ts: &TestServer, admin: &Session) -> String {
    let page = ts
        .console(
            Method::GET,
            "/console/settings/notifications",
            Some(&admin.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(page.status, 200);
    let text = page.text();
    let at = text
        .find("id=\"notifications\"")
        .expect("a Notifications section");
    text[at..].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_needing_attention_notifies_each_person_who_asked_once_an_hour() {
    let org = Org::start().await;
    let ts = &org.ts;
    let password = ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let pat = ts.sign_in("pat@example.com", &password).await;
    turn_on(ts, &pat).await;
    ts.user("acme", "quiet@example.com", "Quinn", "agent").await;
    let password = ts.user("acme", "boss@example.com", "Bo", "admin").await;
    let boss = ts.sign_in("boss@example.com", &password).await;

    waiting_lead(&org, "n-1", "Ana", "+15125550101").await;
    let text = poll("the notification is listed", WAIT, || async {
        let text = settings_text(ts, &boss).await;
        if text.contains("Needs attention: Ana") {
            Ok(text)
        } else {
            Err("not yet".to_string())
        }
    })
    .await;
    assert!(text.contains("pat@example.com"), "to the person who asked");
    assert!(
        !text.contains("quiet@example.com"),
        "not to one who did not: {text}"
    );
    assert!(text.contains("Logged (sandbox)"));
    assert!(text.contains("/console/leads/n-1"));

    // Ana writes again after a person answered her: she needs attention again, within
    // the hour, and nobody is emailed a second time. Bea's notice, queued after, shows
    // the queue went past Ana's.
    let reply = ts
        .console(
            Method::POST,
            "/console/leads/n-1/reply",
            Some(&pat.cookie),
            Some(&ts.origin()),
            &[
                ("csrf", &pat.csrf),
                ("channel", "sms"),
                ("message", "Calling you now"),
            ],
        )
        .await;
    assert_eq!(reply.status, 303, "{}", reply.text());
    inbound_sms(ts, &org.write, "+15125550101", "Still there?").await;
    waiting_lead(&org, "n-2", "Bea", "+15125550102").await;
    let text = poll("Bea's notification is listed", WAIT, || async {
        let text = settings_text(ts, &boss).await;
        if text.contains("Needs attention: Bea") {
            Ok(text)
        } else {
            Err("not yet".to_string())
        }
    })
    .await;
    assert_eq!(
        text.matches("Needs attention: Ana").count(),
        1,
        "one an hour: {text}"
    );

    // The agent's own page lists them too; a viewer has no such page.
    let mine = ts
        .console(
            Method::GET,
            "/console/notifications",
            Some(&pat.cookie),
            None,
            &[],
        )
        .await;
    assert!(mine.text().contains("Needs attention: Bea"));
    let password = ts.user("acme", "vi@example.com", "Vi", "viewer").await;
    let viewer = ts.sign_in("vi@example.com", &password).await;
    let refused = ts
        .console(
            Method::GET,
            "/console/notifications",
            Some(&viewer.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(refused.status, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_smtp_the_notification_is_an_email_linking_the_leads_page() {
    let sink = SmtpSink::start().await;
    let org = Org::start_with(|c| c.public_url = Some("https://crm.example".into())).await;
    let ts = &org.ts;
    set_org(
        ts,
        &org.admin,
        &json!({"providers": {"email": {"kind": "smtp", "host": "127.0.0.1", "port": sink.port,
            "security": "none", "from": "sales@solar.example"}}}),
    )
    .await;
    let password = ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let pat = ts.sign_in("pat@example.com", &password).await;
    turn_on(ts, &pat).await;
    waiting_lead(&org, "n-1", "Ana", "+15125550101").await;
    let message = poll("the email reaches the SMTP server", WAIT, || async {
        sink.messages()
            .into_iter()
            .next()
            .ok_or_else(|| "no email".to_string())
    })
    .await;
    assert!(
        message.contains("Subject: Needs attention: Ana"),
        "{message}"
    );
    assert!(message.contains("pat@example.com"), "{message}");
    assert!(
        message.contains("https://crm.example/console/leads/n-1"),
        "{message}"
    );
    assert!(message.contains("Waiting for a reply"), "{message}");
}

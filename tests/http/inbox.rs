//! The inbox's rules over HTTPS: a failed send needs attention until a person sends it
//! again (a new message) or dismisses it, each a `USER_ACTION`; and `/console/events`,
//! the live stream: a session's own organization's changes, `Last-Event-ID` catch-up,
//! and the end of a session ending the stream.

use std::time::Duration;

use hyper::Method;
use serde_json::json;

use engaged::admin::AdminRequest;
use engaged::testkit::console::Session;
use engaged::testkit::twilio::FakeTwilio;
use engaged::testkit::{poll, Org, TestServer, WAIT};

use crate::engagement::set_org;
use crate::requests::{all_events, inbound_sms};

const PHONE: &str = "+15125550101";

struct Setup {
    org: Org,
    twilio: FakeTwilio,
    agent: Session,
}

/// A lead `f-1` whose SMS provider is the fake Twilio, and a signed-in agent.
async fn setup() -> Setup {
    let twilio = FakeTwilio::start().await;
    let org = Org::start_with(|c| c.public_url = Some("https://engaged.test".into())).await;
    set_org(
        &org.ts,
        &org.admin,
        &json!({"providers": {"sms": {"kind": "twilio", "accountSid": "AC0123456789abcdef0123456789abcdef",
            "authToken": "twilio-auth-token-secret", "from": "+15550100000", "baseUrl": twilio.base_url}}}),
    )
    .await;
    org.ts
        .create_lead(
            &org.write,
            &json!({"id": "f-1", "firstName": "Ana", "phone": PHONE}),
        )
        .await;
    let password = org.ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let agent = org.ts.sign_in("pat@example.com", &password).await;
    Setup { org, twilio, agent }
}

async fn post(ts: &TestServer, session: &Session, path: &str, form: &[(&str, &str)]) -> u16 {
    let mut fields = vec![("csrf", session.csrf.as_str())];
    fields.extend_from_slice(form);
    let r = ts
        .console(
            Method::POST,
            path,
            Some(&session.cookie),
            Some(&ts.origin()),
            &fields,
        )
        .await;
    assert!(r.status < 400, "{path}: {} {}", r.status, r.text());
    r.status
}

async fn page(ts: &TestServer, session: &Session, path: &str) -> String {
    ts.console(Method::GET, path, Some(&session.cookie), None, &[])
        .await
        .text()
}

/// Sends a reply the fake Twilio refuses; answers the failed message's event id once
/// the lead's page offers "Send again".
async fn failed_send(s: &Setup) -> String {
    s.twilio.script(&[(400, None)]);
    post(
        &s.org.ts,
        &s.agent,
        "/console/leads/f-1/reply",
        &[("channel", "sms"), ("message", "Your quote is ready")],
    )
    .await;
    let lead = poll("the lead page offers Send again", WAIT, || async {
        let text = page(&s.org.ts, &s.agent, "/console/leads/f-1").await;
        if text.contains("Send again") {
            Ok(text)
        } else {
            Err("no Send again yet".to_string())
        }
    })
    .await;
    let inbox = page(&s.org.ts, &s.agent, "/console/inbox").await;
    assert!(inbox.contains("Send failed"), "{inbox}");
    assert!(inbox.contains("<title>(1) Inbox"), "{inbox}");
    let at = lead
        .find("name=\"message\" value=\"")
        .expect("the failed message's id")
        + 22;
    lead[at..at + lead[at..].find('"').expect("end")].to_string()
}

async fn user_actions(s: &Setup) -> Vec<String> {
    all_events(&s.org.ts, &s.org.read, "f-1")
        .await
        .iter()
        .filter(|e| e["type"] == "USER_ACTION")
        .map(|e| e["data"]["action"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_send_sent_again_is_a_new_message_and_leaves_the_tab() {
    let s = setup().await;
    let failed = failed_send(&s).await;
    post(
        &s.org.ts,
        &s.agent,
        "/console/leads/f-1/send-again",
        &[("message", &failed)],
    )
    .await;
    let sent = poll("the new message reaches Twilio", WAIT, || async {
        let sent = s.twilio.sent();
        if sent.len() == 2 {
            Ok(sent)
        } else {
            Err(format!("{} requests", sent.len()))
        }
    })
    .await;
    assert_eq!(sent[1].field("Body"), Some("Your quote is ready"));
    assert!(user_actions(&s).await.contains(&"retry_send".to_string()));
    let inbox = page(&s.org.ts, &s.agent, "/console/inbox").await;
    assert!(!inbox.contains("Send failed"), "{inbox}");
    assert!(
        inbox.contains("Needs attention <span class=\"count\">(0)"),
        "{inbox}"
    );
    // The old message stays failed in the timeline: two messages now, not one re-sent.
    let messages: Vec<_> = all_events(&s.org.ts, &s.org.read, "f-1")
        .await
        .into_iter()
        .filter(|e| e["type"] == "MESSAGE")
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages
        .iter()
        .any(|m| m["id"] == failed.as_str() && m["data"]["status"] == "failed"));
    // Sending the same failure again finds nothing to send.
    let again = page(&s.org.ts, &s.agent, "/console/leads/f-1").await;
    assert!(!again.contains("Send again"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissed_failure_leaves_the_tab_and_sends_nothing() {
    let s = setup().await;
    let failed = failed_send(&s).await;
    post(
        &s.org.ts,
        &s.agent,
        "/console/leads/f-1/dismiss-failure",
        &[("message", &failed)],
    )
    .await;
    assert!(user_actions(&s)
        .await
        .contains(&"dismiss_failure".to_string()));
    let inbox = page(&s.org.ts, &s.agent, "/console/inbox").await;
    assert!(!inbox.contains("Send failed"), "{inbox}");
    assert_eq!(s.twilio.sent().len(), 1, "nothing sent again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_tells_of_its_organizations_changes_only() {
    let org = Org::start().await;
    let ts = &org.ts;
    let globex = ts.key("globex", "write").await;
    let password = ts.user("acme", "pat@example.com", "Pat", "viewer").await;
    let pat = ts.sign_in("pat@example.com", &password).await;
    let mut stream = ts.events(&pat.cookie, None).await;
    assert_eq!(stream.status, 200);

    ts.create_lead(&globex, &json!({"id": "g-1", "phone": "+15125550199"}))
        .await;
    ts.create_lead(&org.write, &json!({"id": "a-1", "phone": PHONE}))
        .await;
    let event = stream.next(WAIT).await.expect("a change");
    assert!(event.contains("event: change"), "{event}");
    assert!(event.contains("\"a-1\""), "{event}");
    assert!(
        !event.contains("g-1"),
        "another organization's lead: {event}"
    );
    let id: String = event
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("an id")
        .to_string();

    // A page that reconnects with an older id catches up at once.
    let older = (id.parse::<u64>().expect("a number") - 1).to_string();
    let mut again = ts.events(&pat.cookie, Some(&older)).await;
    let first = again.next(WAIT).await.expect("a catch-up change");
    assert!(first.contains("event: change"), "{first}");

    inbound_sms(ts, &org.write, PHONE, "Hello?").await;
    let next = stream
        .next(WAIT)
        .await
        .expect("the inbound message's change");
    assert!(next.contains("\"a-1\""), "{next}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_ends_with_its_session_and_needs_one() {
    let ts = TestServer::start().await;
    let password = ts.user("acme", "pat@example.com", "Pat", "viewer").await;
    let pat = ts.sign_in("pat@example.com", &password).await;
    let mut stream = ts.events(&pat.cookie, None).await;
    assert_eq!(stream.status, 200);
    ts.admin(AdminRequest::UserDisable {
        email: "pat@example.com".into(),
    })
    .await
    .expect("disable");
    let event = stream.next(WAIT).await.expect("signed-out");
    assert!(event.contains("event: signed-out"), "{event}");
    assert_eq!(
        stream.next(Duration::from_secs(2)).await,
        None,
        "the stream ends"
    );

    let refused = ts.events(&pat.cookie, None).await;
    assert_eq!(refused.status, 303, "no session, no stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_ids_count_the_organizations_own_changes_only() {
    let org = Org::start().await;
    let ts = &org.ts;
    let globex = ts.key("globex", "write").await;
    let password = ts.user("acme", "pat@example.com", "Pat", "viewer").await;
    let pat = ts.sign_in("pat@example.com", &password).await;
    let mut stream = ts.events(&pat.cookie, None).await;
    assert_eq!(stream.status, 200);
    // Another organization writes a lot, in windows of its own.
    for n in 0..5 {
        ts.create_lead(
            &globex,
            &json!({"id": format!("g-{n}"), "phone": format!("+1512555019{n}")}),
        )
        .await;
    }
    ts.create_lead(&org.write, &json!({"id": "a-1", "phone": PHONE}))
        .await;
    let event = stream.next(WAIT).await.expect("a change");
    assert!(event.contains("\"a-1\""), "{event}");
    assert!(
        event.lines().any(|l| l == "id: 1"),
        "acme's first change is its window 1, whatever globex wrote: {event}"
    );
}

/// With no assistant connected nothing answers a lead: its reply waits under "Needs
/// attention" ("Replied — no assistant connected"), no lead reads Owner "Assistant" or
/// "Assistant on", there is no "Assistant" tab; connecting one takes the reason away at
/// once, and removing it brings it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_nobody_will_answer_needs_a_person() {
    let org = Org::start().await;
    let ts = &org.ts;
    ts.create_lead(
        &org.write,
        &json!({"id": "q-1", "firstName": "Ana", "phone": PHONE}),
    )
    .await;
    let password = ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let agent = ts.sign_in("pat@example.com", &password).await;
    let inbox = page(ts, &agent, "/console/inbox").await;
    assert!(
        inbox.contains("No assistant connected: replies wait for you"),
        "{inbox}"
    );
    assert!(inbox.contains("Nothing needs you now."), "{inbox}");
    inbound_sms(ts, &org.write, PHONE, "Is this a scam?").await;
    let inbox = poll("the reply needs attention", WAIT, || async {
        let text = page(ts, &agent, "/console/inbox").await;
        if text.contains("Replied — no assistant connected") {
            Ok(text)
        } else {
            Err(text)
        }
    })
    .await;
    assert!(!inbox.contains("Nothing needs you now."), "{inbox}");
    assert!(inbox.contains("<title>(1) Inbox"), "{inbox}");
    assert!(inbox.contains("Is this a scam?"), "{inbox}");
    assert!(!inbox.contains("tab=assistant"), "{inbox}");
    assert!(!inbox.contains(">Assistant<"), "{inbox}");
    assert!(inbox.contains(">Unassigned<"), "{inbox}");
    let lead = page(ts, &agent, "/console/leads/q-1").await;
    assert!(
        lead.contains("No assistant connected — a person answers"),
        "{lead}"
    );
    assert!(!lead.contains("Assistant on"), "{lead}");
    assert!(lead.contains("<dd>Unassigned</dd>"), "{lead}");
    assert!(!lead.contains("from the assistant first"), "{lead}");

    // Connecting an assistant: it answers from now on, nobody needs to.
    let model = engaged::testkit::model::FakeModel::start().await;
    set_org(ts, &org.admin, &model.settings()).await;
    let inbox = page(ts, &agent, "/console/inbox").await;
    assert!(
        !inbox.contains("Replied — no assistant connected"),
        "{inbox}"
    );
    assert!(!inbox.contains("No assistant connected"), "{inbox}");
    assert!(inbox.contains("tab=assistant"), "{inbox}");
    let lead = page(ts, &agent, "/console/leads/q-1").await;
    assert!(lead.contains("Assistant on"), "{lead}");

    // And without it again, the reply waits again.
    set_org(ts, &org.admin, &json!({"assistant": null})).await;
    let inbox = page(ts, &agent, "/console/inbox").await;
    assert!(
        inbox.contains("Replied — no assistant connected"),
        "{inbox}"
    );
}

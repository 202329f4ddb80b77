//! Possible opt-outs (`consent.md`, "SMS, possible"): a per-se word inside a longer
//! message holds the lead (engagement `held`, no assistant reply sent, "Possible
//! opt-out" in Needs attention) until a person decides ("Opt out" / "Not an opt-out"),
//! the assistant's `opt_out` decides it, or its timeout opts the lead out.
//!
//! The organization's assistant points at its own fake; lead "L1" follows profile
//! "assist" (`replyDelay` 1s, one cadence step a day away).

use std::time::Duration;

use hyper::Method;
use serde_json::{json, Value};

use engaged::testkit::console::Session;
use engaged::testkit::model::{FakeModel, Step};
use engaged::testkit::{poll, Org, WAIT};

use crate::answers::expect;
use crate::engagement::*;
use crate::requests::*;

const PHONE: &str = "+15551234567";
/// Past the reply delay (1s), for "nothing was sent" checks.
const SETTLE: Duration = Duration::from_millis(2500);
const CONFIRMATION: &str =
    "Acme Solar: You are unsubscribed and will receive no more messages. Reply START to resubscribe.";

struct Setup {
    acme: Org,
    model: FakeModel,
    agent: Session,
}

async fn start() -> Setup {
    let acme = Org::start().await;
    let (ts, key, admin) = (&acme.ts, &acme.write, &acme.admin);
    let model = FakeModel::start().await;
    set_business(ts, admin).await;
    set_org(ts, admin, &model.settings()).await;
    put_profile(
        ts,
        admin,
        "assist",
        &json!({"instructions": "Qualify the lead.",
                "cadence": [sms_step("1d", "Checking in, {{firstName}}.")],
                "replyDelay": "1s"}),
    )
    .await;
    ts.create_lead(
        key,
        &json!({"id": "L1", "firstName": "Ada", "phone": PHONE, "email": "ada@example.com",
                "customerProfile": "assist"}),
    )
    .await;
    let password = ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let agent = ts.sign_in("pat@example.com", &password).await;
    Setup { acme, model, agent }
}

async fn say(s: &Setup, text: &str) -> Value {
    inbound_sms(&s.acme.ts, &s.acme.write, PHONE, text).await
}

/// The console page at `path`, as the agent sees it.
async fn page(s: &Setup, path: &str) -> String {
    let r = s
        .acme
        .ts
        .console(Method::GET, path, Some(&s.agent.cookie), None, &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.text()
}

/// The agent presses `action` (`opt-out`, `not-opt-out`) on L1's page.
async fn decide(s: &Setup, action: &str) -> String {
    let ts = &s.acme.ts;
    let r = ts
        .console_post(
            &format!("/console/leads/L1/{action}"),
            &s.agent.cookie,
            &[("csrf", s.agent.csrf.as_str())],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.text()
}

async fn state(s: &Setup) -> Value {
    engagement(&s.acme.ts, &s.acme.write, "L1").await
}

async fn sent_texts(s: &Setup) -> Vec<String> {
    texts(&outbound(&s.acme.ts, &s.acme.write, "L1").await)
}

async fn user_actions(s: &Setup) -> Vec<String> {
    events_of_type(&s.acme.ts, &s.acme.write, "L1", "USER_ACTION")
        .await
        .iter()
        .map(|e| e["data"]["action"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// L1's SMS ledger entries as (status, source, proof text).
async fn sms_ledger(s: &Setup) -> Vec<(String, String, String)> {
    let l = expect(
        &s.acme.ts.get(&s.acme.write, "/v1/leads/L1/consent").await,
        200,
    );
    l["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|e| e["channel"] == json!("sms"))
        .map(|e| {
            let field = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (
                field(&e["status"]),
                field(&e["source"]),
                field(&e["proof"]["text"]),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_possible_example_holds_the_lead_and_sends_no_reply() {
    for words in [
        "I want to stop getting these but call me next week",
        "can we end this",
    ] {
        let s = start().await;
        say(&s, words).await;
        let held = state(&s).await;
        assert_eq!(held["state"], json!("held"), "{words}: {held}");
        assert_eq!(held["stoppedReason"], Value::Null, "{held}");
        let lead = get_lead(&s.acme.ts, &s.acme.write, "L1").await;
        assert_eq!(lead["subscriptions"]["sms"], json!("subscribed"));
        // Another message and a hand-back leave the hold to be decided.
        say(&s, "hello?").await;
        expect(
            &s.acme
                .ts
                .post(&s.acme.write, "/v1/leads/L1/turn-on", &json!({}))
                .await,
            200,
        );
        tokio::time::sleep(SETTLE).await;
        assert!(s.model.count() >= 1, "the assistant still sees the message");
        assert_eq!(sent_texts(&s).await, Vec::<String>::new(), "{words}");
        assert_eq!(state(&s).await["state"], json!("held"));
        let inbox = page(&s, "/console/inbox").await;
        assert!(inbox.contains("Possible opt-out"), "{inbox}");
        let lead_page = page(&s, "/console/leads/L1").await;
        assert!(lead_page.contains(words), "the lead's words are quoted");
        assert!(
            lead_page.contains(">Opt out<") && lead_page.contains(">Not an opt-out<"),
            "{lead_page}"
        );
        assert!(sms_ledger(&s).await.is_empty(), "nothing decided yet");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_end_that_is_a_noun_holds_nothing() {
    let s = start().await;
    say(&s, "I'll be there at the end of the day").await;
    let e = state(&s).await;
    assert_eq!(e["state"], json!("stopped"), "{e}");
    assert_eq!(e["stoppedReason"], json!("replied"));
    wait_outbound(&s.acme.ts, &s.acme.write, "L1", 1).await;
    assert!(!page(&s, "/console/inbox")
        .await
        .contains("Possible opt-out"));
    assert!(!page(&s, "/console/leads/L1")
        .await
        .contains("Not an opt-out"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opt_out_unsubscribes_with_one_confirmation_and_a_ledger_entry() {
    let s = start().await;
    say(&s, "can we end this").await;
    decide(&s, "opt-out").await;
    let lead = get_lead(&s.acme.ts, &s.acme.write, "L1").await;
    assert_eq!(
        lead["subscriptions"]["sms"],
        json!("unsubscribed"),
        "{lead}"
    );
    // `revocationScope` `all` (the default): every channel, as Settings → Consent says.
    assert_eq!(
        (
            &lead["subscriptions"]["voice"],
            &lead["subscriptions"]["email"]
        ),
        (&json!("unsubscribed"), &json!("unsubscribed")),
        "{lead}"
    );
    let e = state(&s).await;
    assert_eq!(
        (&e["state"], &e["stoppedReason"]),
        (&json!("stopped"), &json!("unsubscribed"))
    );
    let lead_page = page(&s, "/console/leads/L1").await;
    assert!(lead_page.contains("<dd>Opted out</dd>"), "{lead_page}");
    assert!(
        lead_page.contains("Consent for SMS revoked by Pat — the lead wrote “can we end this”"),
        "{lead_page}"
    );
    assert_eq!(
        sms_ledger(&s).await,
        [(
            "revoked".to_string(),
            "reply".to_string(),
            "can we end this".to_string()
        )]
    );
    wait_outbound(&s.acme.ts, &s.acme.write, "L1", 1).await;
    tokio::time::sleep(SETTLE).await;
    assert_eq!(
        sent_texts(&s).await,
        [CONFIRMATION],
        "one confirmation only"
    );
    assert_eq!(user_actions(&s).await, ["confirm_opt_out"]);
    // Decided: a second decision is refused and records nothing.
    let again = decide(&s, "opt-out").await;
    assert!(
        again.contains("Lead is not held by a possible opt-out"),
        "{again}"
    );
    assert_eq!(user_actions(&s).await, ["confirm_opt_out"]);
    assert!(!page(&s, "/console/inbox")
        .await
        .contains("Possible opt-out"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_an_opt_out_resumes_the_cadence_where_it_was() {
    let s = start().await;
    let before = state(&s).await;
    assert_eq!(before["state"], json!("active"));
    say(&s, "I want to stop getting these but call me next week").await;
    decide(&s, "not-opt-out").await;
    let after = state(&s).await;
    assert_eq!(after["state"], json!("active"), "{after}");
    assert_eq!(after["step"], before["step"]);
    assert_eq!(
        after["nextStepAt"], before["nextStepAt"],
        "the same step waits"
    );
    assert_eq!(user_actions(&s).await, ["dismiss_opt_out"]);
    let lead = get_lead(&s.acme.ts, &s.acme.write, "L1").await;
    assert_eq!(lead["subscriptions"]["sms"], json!("subscribed"));
    assert!(sms_ledger(&s).await.is_empty());
    assert!(!page(&s, "/console/inbox")
        .await
        .contains("Possible opt-out"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecided_the_timeout_opts_the_lead_out() {
    let s = start().await;
    say(&s, "can we end this").await;
    s.acme.ts.hold_timeout_due_now("acme", "L1").await;
    let (ts, key) = (&s.acme.ts, s.acme.write.as_str());
    poll("the timeout opts L1 out", WAIT, || async move {
        let lead = get_lead(ts, key, "L1").await;
        if lead["subscriptions"]["sms"] == json!("unsubscribed") {
            Ok(())
        } else {
            Err(lead.to_string())
        }
    })
    .await;
    assert_eq!(
        sms_ledger(&s).await,
        [(
            "revoked".to_string(),
            "timeout".to_string(),
            "can we end this".to_string()
        )]
    );
    assert_eq!(state(&s).await["stoppedReason"], json!("unsubscribed"));
    wait_outbound(ts, key, "L1", 1).await;
    assert_eq!(sent_texts(&s).await, [CONFIRMATION]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_assistants_opt_out_decides_the_hold() {
    let s = start().await;
    s.model.push(Step::tool(
        "call_1",
        "opt_out",
        json!({"channels": ["sms"]}),
    ));
    s.model.push(Step::text("Sorry to see you go!"));
    say(&s, "can we end this").await;
    let e = wait_state(
        &s.acme.ts,
        &s.acme.write,
        "L1",
        "stopped",
        Some("unsubscribed"),
    )
    .await;
    assert_eq!(e["stoppedReason"], json!("unsubscribed"));
    let lead = get_lead(&s.acme.ts, &s.acme.write, "L1").await;
    assert_eq!(lead["subscriptions"]["sms"], json!("unsubscribed"));
    tokio::time::sleep(SETTLE).await;
    assert!(
        !sent_texts(&s)
            .await
            .iter()
            .any(|t| t == "Sorry to see you go!"),
        "the reply is not sent"
    );
    assert!(!page(&s, "/console/inbox")
        .await
        .contains("Possible opt-out"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_possible_opt_out_in_an_emails_subject_holds_the_lead() {
    let s = start().await;
    let r = inbound_email(
        &s.acme.ts,
        &s.acme.write,
        "ada@example.com",
        "can we end this",
        "Thanks for the quote.",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(state(&s).await["state"], json!("held"));
    decide(&s, "opt-out").await;
    let lead = get_lead(&s.acme.ts, &s.acme.write, "L1").await;
    assert_eq!(lead["subscriptions"]["email"], json!("unsubscribed"));
    // `revocationScope` `all` (the default): the opt-out reaches every channel.
    assert_eq!(lead["subscriptions"]["sms"], json!("unsubscribed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definite_stop_after_a_possible_one_ends_the_hold_as_an_opt_out() {
    let s = start().await;
    say(&s, "can we end this").await;
    let answer = say(&s, "STOP please").await;
    assert_eq!(answer["optOut"], json!(true));
    let e = state(&s).await;
    assert_eq!(
        (&e["state"], &e["stoppedReason"]),
        (&json!("stopped"), &json!("unsubscribed")),
        "{e}"
    );
    assert!(!page(&s, "/console/inbox")
        .await
        .contains("Possible opt-out"));
    wait_outbound(&s.acme.ts, &s.acme.write, "L1", 1).await;
    tokio::time::sleep(SETTLE).await;
    assert_eq!(
        sent_texts(&s).await,
        [CONFIRMATION],
        "one confirmation only"
    );
}

/// Under `revocationScope` `channel` "Opt out" unsubscribes the channel the words came
/// on (SMS with its voice coupling) and leaves email.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opt_out_keeps_to_the_channel_when_the_scope_says_so() {
    let s = start().await;
    set_org(
        &s.acme.ts,
        &s.acme.admin,
        &json!({"revocationScope": "channel"}),
    )
    .await;
    say(&s, "can we end this").await;
    decide(&s, "opt-out").await;
    let lead = get_lead(&s.acme.ts, &s.acme.write, "L1").await;
    assert_eq!(
        lead["subscriptions"]["sms"],
        json!("unsubscribed"),
        "{lead}"
    );
    assert_eq!(
        lead["subscriptions"]["email"],
        json!("subscribed"),
        "{lead}"
    );
}

/// A lead who texts "Stop please" is stopped as an opt-out, not as a reply: the
/// campaign's "Stopped: replied" counts replies only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definite_stop_stops_the_cadence_as_an_opt_out() {
    let s = start().await;
    say(&s, "Stop please").await;
    let e = state(&s).await;
    assert_eq!(
        (&e["state"], &e["stoppedReason"]),
        (&json!("stopped"), &json!("unsubscribed"))
    );
    let stats = expect(
        &s.acme
            .ts
            .get(&s.acme.write, "/v1/profiles/assist/stats")
            .await,
        200,
    );
    assert_eq!(stats["stopped"]["unsubscribed"], json!(1), "{stats}");
    assert!(
        stats["stopped"]["replied"].as_u64().unwrap_or(0) == 0,
        "{stats}"
    );
    assert_eq!(stats["replied"], json!(0), "{stats}");
    let lead_page = page(&s, "/console/leads/L1").await;
    assert!(lead_page.contains("<dd>Opted out</dd>"), "{lead_page}");
    let campaign = page(&s, "/console/campaigns/assist").await;
    assert!(campaign.contains("Stopped: opted out"), "{campaign}");
    assert!(!campaign.contains("Stopped: replied"), "{campaign}");
}

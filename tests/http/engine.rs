//! The engagement engine with the sandbox providers (the default: nothing configured):
//! enrolment and the cadence (rendering, order, the engagement view), each stop rule,
//! the turn-off pause, a blocked step moving on, quiet hours deferring a step (and a
//! change of the quiet hours or a time zone moving it again), the SMS
//! keywords and their confirmations, API sends through the provider, the engine's
//! organization settings, and its metrics. The assistant itself is in `assistant.rs`.

use std::time::Duration;

use chrono::{DateTime, Timelike, Utc};
use serde_json::{json, Value};

use engaged::testkit::model::FakeModel;
use engaged::testkit::WAIT;
use engaged::testkit::{Org, TestServer};

use crate::answers::*;
use crate::engagement::*;
use crate::requests::*;

const PHONE: &str = "+15551234567";
const EMAIL: &str = "ada@example.com";

type Setup = Org;

/// A server, keys of "acme", and the business name and help text set.
async fn start() -> Setup {
    let s = Org::start().await;
    set_business(&s.ts, &s.admin).await;
    s
}

/// Ada, reachable by SMS and email, in Austin; enrolled in `profile` unless it is "".
fn ada(id: &str, profile: &str) -> Value {
    json!({"id": id, "firstName": "Ada", "phone": PHONE, "email": EMAIL,
           "additionalInfo": {"city": "Austin"}, "customerProfile": profile})
}

/// Sleeps until `at` (+ `margin`) has passed; returns at once when it already has.
async fn sleep_past(at: DateTime<Utc>, margin: Duration) {
    let until = at + chrono::Duration::from_std(margin).expect("margin");
    if let Ok(left) = (until - Utc::now()).to_std() {
        tokio::time::sleep(left).await;
    }
}

/// Profile "steady" (`First` at once, `Second` after `second_after`), the lead `body`
/// enrolled in it; waits until `First` went out and step 2 is pending. Returns `First`.
async fn started_with(s: &Setup, body: Value, second_after: &str) -> Value {
    put_profile(
        &s.ts,
        &s.admin,
        "steady",
        &profile_with(json!([
            sms_step("0s", "First"),
            sms_step(second_after, "Second")
        ])),
    )
    .await;
    let lead = s.ts.create_lead(&s.write, &body).await;
    let id = str_of(&lead["id"]);
    let sent = wait_outbound(&s.ts, &s.write, id, 1).await;
    assert_eq!(texts(&sent), ["First"]);
    wait_engagement(&s.ts, &s.write, id, "step 2 pending", |v| {
        v["state"] == json!("active") && v["step"] == json!(2)
    })
    .await;
    sent[0].clone()
}

/// `started_with` for Ada ("L1") with the second step an hour away.
async fn started(s: &Setup) -> Value {
    started_with(s, ada("L1", "steady"), "1h").await
}

// ---- the cadence ----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cadence_sends_every_rendered_step_in_order_then_finishes() {
    let s = start().await;
    put_profile(
        &s.ts,
        &s.admin,
        "intro",
        &profile_with(json!([
            sms_step("0s", "Hi {{firstName}}, Sam from {{business.name}} here. Still interested in {{additionalInfo.city}}?"),
            email_step("1s", "Your {{business.name}} quote", "Hi {{firstName}}{{lastName}}, your quote for {{additionalInfo.city}} is ready."),
            sms_step("1s", "Last note, {{firstName}}: reply any time."),
        ])),
    )
    .await;
    s.ts.create_lead(&s.write, &ada("L1", "intro")).await;

    let sent = wait_outbound(&s.ts, &s.write, "L1", 3).await;
    assert_eq!(
        texts(&sent),
        [
            "Hi Ada, Sam from Acme Solar here. Still interested in Austin?",
            "Hi Ada, your quote for Austin is ready.",
            "Last note, Ada: reply any time.",
        ],
        "rendered from the lead and the organization; a missing value is empty"
    );
    let channels: Vec<&Value> = sent.iter().map(|m| &m["channel"]).collect();
    assert_eq!(channels, [&json!("sms"), &json!("email"), &json!("sms")]);
    assert_eq!(
        sent[1]["content"]["subject"],
        json!("Your Acme Solar quote")
    );
    for pair in sent.windows(2) {
        let gap = time_of(&pair[1]["createdAt"]) - time_of(&pair[0]["createdAt"]);
        assert!(
            gap >= chrono::Duration::milliseconds(800),
            "a 1s step does not run early: {gap}"
        );
    }
    for (message, kind) in sent.iter().zip(["MESSAGE", "EMAIL", "MESSAGE"]) {
        let event = wait_settled(&s.ts, &s.write, "L1", &message["id"]).await;
        assert_eq!(event["type"], json!(kind));
        assert_eq!(event["data"]["owner"], json!("user"));
        assert_sandbox_delivered(&event, "cadence");
    }
    let view = wait_state(&s.ts, &s.write, "L1", "finished", None).await;
    assert_eq!(
        view,
        json!({"profile": "intro", "state": "finished", "step": 0, "nextStepAt": null,
               "stoppedReason": null, "lastError": null})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enrolled_lead_is_active_with_its_next_step_and_time() {
    let s = start().await;
    let first = started(&s).await;
    let view = engagement(&s.ts, &s.read, "L1").await;
    assert_eq!(view["profile"], json!("steady"));
    assert_eq!(view["state"], json!("active"));
    assert_eq!(view["step"], json!(2));
    assert_eq!(view["stoppedReason"], Value::Null);
    assert_eq!(view["lastError"], Value::Null);
    let next = time_of(&view["nextStepAt"]);
    let sent_at = time_of(&first["createdAt"]);
    assert!(
        next >= sent_at + chrono::Duration::minutes(59)
            && next <= Utc::now() + chrono::Duration::minutes(61),
        "the second step is due an hour after the first: {next} (first sent {sent_at})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_without_a_profile_has_no_engagement() {
    let s = start().await;
    s.ts.create_lead(&s.write, &ada("L1", "")).await;
    let view = engagement(&s.ts, &s.read, "L1").await;
    assert!(
        view["profile"].is_null() || view["profile"] == json!(""),
        "no profile: {view}"
    );
    assert_eq!(view["state"], json!("none"));
    assert_eq!(view["step"], json!(0));
    for field in ["nextStepAt", "stoppedReason", "lastError"] {
        assert_eq!(view[field], Value::Null, "{field}: {view}");
    }
    assert_error(
        &s.ts.get(&s.read, "/v1/leads/ghost/engagement").await,
        404,
        "Resource not found: Lead with id ghost",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_that_does_not_exist_enrols_nothing() {
    let s = start().await;
    s.ts.create_lead(&s.write, &ada("L1", "nonexistent")).await;
    assert_eq!(
        engagement(&s.ts, &s.write, "L1").await["state"],
        json!("none")
    );
    assert!(outbound(&s.ts, &s.write, "L1").await.is_empty());
}

/// The duplicate of an enrolled lead is refused whole: it is not created, so nothing is
/// enrolled and the opener is not texted to the same phone again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_lead_is_refused_and_enrols_nothing() {
    let s = start().await;
    started(&s).await;
    let r = s.ts.post(&s.write, "/v1/leads", &ada("L2", "steady")).await;
    assert_error(&r, 409, "Lead exists: L1");
    assert_eq!(s.ts.get(&s.write, "/v1/leads/L2").await.status, 404);
    assert_eq!(
        s.ts.get(&s.write, "/v1/leads/L2/engagement").await.status,
        404
    );
    let page = expect(
        &s.ts
            .get(&s.write, "/v1/leads?createdSince=1970-01-01T00%3A00%3A00Z")
            .await,
        200,
    );
    assert_eq!(page["leads"].as_array().map(Vec::len), Some(1));
    assert_eq!(texts(&outbound(&s.ts, &s.write, "L1").await), ["First"]);
}

// ---- stop rules -----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_sms_stops_the_cadence_as_replied() {
    let s = start().await;
    let first = started_with(&s, ada("L1", "steady"), "2s").await;
    inbound_sms(&s.ts, &s.write, PHONE, "Who is this?").await;
    wait_state(&s.ts, &s.write, "L1", "stopped", Some("replied")).await;
    assert_eq!(
        get_lead(&s.ts, &s.write, "L1").await["hasReplied"],
        json!(true)
    );
    // The second step's time passes and nothing more is sent.
    sleep_past(time_of(&first["createdAt"]), Duration::from_millis(2500)).await;
    assert_eq!(texts(&outbound(&s.ts, &s.write, "L1").await), ["First"]);
    assert_eq!(
        engagement(&s.ts, &s.write, "L1").await["stoppedReason"],
        json!("replied"),
        "a stopped cadence is never resumed by itself"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_email_stops_the_cadence_as_replied() {
    let s = start().await;
    started(&s).await;
    let r = inbound_email(&s.ts, &s.write, EMAIL, "Re: your quote", "How much is it?").await;
    assert_eq!(r.status, 200, "{}", text(&r));
    wait_state(&s.ts, &s.write, "L1", "stopped", Some("replied")).await;
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(lead["hasRepliedEmail"], json!(true));
    let theirs: Vec<Value> = messages_of(&s.ts, &s.write, "L1")
        .await
        .into_iter()
        .filter(|m| m["owner"] == json!("lead"))
        .collect();
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(theirs[0]["channel"], json!("email"));
    assert_eq!(theirs[0]["content"]["text"], json!("How much is it?"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_email_from_an_unknown_address_is_404() {
    let s = start().await;
    s.ts.create_lead(&s.write, &ada("L1", "")).await;
    let r = inbound_email(&s.ts, &s.write, "x@y.example", "Hello", "Hi").await;
    assert_error(&r, 404, "Resource not found: Lead with email x@y.example");
    // A soft-deleted lead is not live.
    expect(&s.ts.delete(&s.write, "/v1/leads/L1").await, 200);
    let r = inbound_email(&s.ts, &s.write, EMAIL, "Hello", "Hi").await;
    assert_error(
        &r,
        404,
        &format!("Resource not found: Lead with email {EMAIL}"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsubscribing_every_channel_stops_the_cadence() {
    let s = start().await;
    started(&s).await;
    expect(
        &s.ts
            .post(&s.write, "/v1/leads/L1/unsubscribe", &json!({}))
            .await,
        200,
    );
    wait_state(&s.ts, &s.write, "L1", "stopped", Some("unsubscribed")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dnc_stops_the_cadence_of_a_lead_without_email() {
    let s = start().await;
    let body = json!({"id": "L1", "firstName": "Ada", "phone": PHONE, "customerProfile": "steady"});
    started_with(&s, body, "1h").await;
    expect(
        &s.ts
            .post(&s.write, "/v1/dnc/register", &json!({"phone": PHONE}))
            .await,
        200,
    );
    wait_state(&s.ts, &s.write, "L1", "stopped", Some("dnc")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dnc_does_not_stop_a_lead_with_email() {
    let s = start().await;
    started(&s).await;
    expect(
        &s.ts
            .post(&s.write, "/v1/dnc/register", &json!({"phone": PHONE}))
            .await,
        200,
    );
    // Give the engine the time it takes to see a change (other stop rules show within it).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let view = engagement(&s.ts, &s.write, "L1").await;
    assert_eq!(view["state"], json!("active"), "{view}");
    assert_eq!(view["step"], json!(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_lead_stops_the_cadence() {
    let s = start().await;
    started(&s).await;
    expect(&s.ts.delete(&s.write, "/v1/leads/L1").await, 200);
    wait_state(&s.ts, &s.read, "L1", "stopped", Some("deleted")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qualifying_the_lead_stops_the_cadence() {
    let s = start().await;
    started(&s).await;
    expect(
        &s.ts
            .patch(&s.write, "/v1/leads/L1", &json!({"isQualified": true}))
            .await,
        200,
    );
    wait_state(&s.ts, &s.write, "L1", "stopped", Some("qualified")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clearing_the_profile_stops_the_cadence() {
    let s = start().await;
    started(&s).await;
    expect(
        &s.ts
            .patch(&s.write, "/v1/leads/L1", &json!({"customerProfile": ""}))
            .await,
        200,
    );
    wait_state(&s.ts, &s.write, "L1", "stopped", Some("profile_changed")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_profile_stops_its_cadences() {
    let s = start().await;
    started(&s).await;
    expect(&s.ts.delete(&s.admin, &profile_path("steady")).await, 200);
    wait_state(&s.ts, &s.write, "L1", "stopped", Some("profile_deleted")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_profile_re_enrols_at_step_1() {
    let s = start().await;
    started(&s).await;
    put_profile(
        &s.ts,
        &s.admin,
        "other",
        &profile_with(json!([
            sms_step("0s", "Other first"),
            sms_step("1h", "Other second")
        ])),
    )
    .await;
    expect(
        &s.ts
            .patch(
                &s.write,
                "/v1/leads/L1",
                &json!({"customerProfile": "other"}),
            )
            .await,
        200,
    );
    let sent = wait_outbound(&s.ts, &s.write, "L1", 2).await;
    assert_eq!(texts(&sent), ["First", "Other first"]);
    let view = wait_engagement(&s.ts, &s.write, "L1", "other's step 2 pending", |v| {
        v["profile"] == json!("other") && v["step"] == json!(2)
    })
    .await;
    assert_eq!(view["state"], json!("active"));
    assert_eq!(view["stoppedReason"], Value::Null);
}

// ---- pause, blocked steps, quiet hours --------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turning_off_pauses_the_cadence_and_turning_on_resumes_it() {
    let s = start().await;
    let first = started_with(&s, ada("L1", "steady"), "2s").await;
    expect(
        &s.ts
            .post(&s.write, "/v1/leads/L1/turn-off", &json!({}))
            .await,
        200,
    );
    wait_state(&s.ts, &s.write, "L1", "paused", None).await;
    sleep_past(time_of(&first["createdAt"]), Duration::from_millis(3000)).await;
    assert_eq!(
        texts(&outbound(&s.ts, &s.write, "L1").await),
        ["First"],
        "no step runs while the lead is turned off"
    );
    assert_eq!(
        engagement(&s.ts, &s.write, "L1").await["state"],
        json!("paused")
    );
    expect(
        &s.ts
            .post(&s.write, "/v1/leads/L1/turn-on", &json!({}))
            .await,
        200,
    );
    let sent = wait_outbound(&s.ts, &s.write, "L1", 2).await;
    assert_eq!(texts(&sent), ["First", "Second"]);
    wait_state(&s.ts, &s.write, "L1", "finished", None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_blocked_by_the_gate_is_skipped_and_the_next_runs() {
    let s = start().await;
    put_profile(
        &s.ts,
        &s.admin,
        "mixed",
        &profile_with(json!([
            sms_step("0s", "By SMS"),
            email_step("1s", "By email", "Hello by email"),
        ])),
    )
    .await;
    s.ts.create_lead(&s.write, &ada("L1", "")).await;
    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/leads/L1/unsubscribe",
                &json!({"channels": ["sms"]}),
            )
            .await,
        200,
    );
    expect(
        &s.ts
            .patch(
                &s.write,
                "/v1/leads/L1",
                &json!({"customerProfile": "mixed"}),
            )
            .await,
        200,
    );
    let sent = wait_outbound(&s.ts, &s.write, "L1", 1).await;
    assert_eq!(texts(&sent), ["Hello by email"]);
    assert_eq!(sent[0]["channel"], json!("email"));
    let blocks = events_of_type(&s.ts, &s.write, "L1", "COMPLIANCE_BLOCKED").await;
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    assert_eq!(
        blocks[0]["data"],
        json!({"reason": "UNSUBSCRIBED", "source": "configuration", "channel": "sms", "step": 1})
    );
    wait_state(&s.ts, &s.write, "L1", "finished", None).await;
}

/// Quiet hours from an hour ago to two hours ahead in UTC, as "HH:MM"; returns the
/// window's end as an instant (the next time the clock shows it).
async fn quiet_now(s: &Setup) -> DateTime<Utc> {
    let now = Utc::now();
    let minute = |t: DateTime<Utc>| t.with_second(0).and_then(|t| t.with_nanosecond(0)).unwrap();
    let start = minute(now - chrono::Duration::hours(1));
    let end = minute(now + chrono::Duration::hours(2));
    set_org(
        &s.ts,
        &s.admin,
        &json!({"quietHours": {"start": start.format("%H:%M").to_string(),
                               "end": end.format("%H:%M").to_string()}}),
    )
    .await;
    end
}

/// Asserts the first step of "steady" waits for `end` on `lead`: nothing sent, no block.
async fn assert_deferred_to(s: &Setup, lead: &str, end: DateTime<Utc>) {
    let view = wait_engagement(&s.ts, &s.write, lead, "the first step deferred", |v| {
        v["nextStepAt"]
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .is_some_and(|t| t >= end - chrono::Duration::seconds(1))
    })
    .await;
    let next = time_of(&view["nextStepAt"]);
    assert!(
        next >= end && next <= end + chrono::Duration::seconds(60),
        "deferred to the window's end {end}: {view}"
    );
    assert_eq!(view["state"], json!("active"));
    assert_eq!(view["step"], json!(1));
    assert!(outbound(&s.ts, &s.write, lead).await.is_empty());
    assert!(
        events_of_type(&s.ts, &s.write, lead, "COMPLIANCE_BLOCKED")
            .await
            .is_empty(),
        "deferring writes no event"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_hours_defer_a_step_to_the_window_end_in_the_lead_time_zone() {
    let s = start().await;
    let end = quiet_now(&s).await;
    put_profile(
        &s.ts,
        &s.admin,
        "steady",
        &profile_with(json!([sms_step("0s", "First")])),
    )
    .await;
    let mut body = ada("L1", "steady");
    body["timeZone"] = json!("UTC");
    s.ts.create_lead(&s.write, &body).await;
    assert_deferred_to(&s, "L1", end).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_hours_use_the_organization_time_zone_when_the_lead_has_none() {
    let s = start().await;
    let end = quiet_now(&s).await;
    let org = set_org(&s.ts, &s.admin, &json!({"timeZone": "UTC"})).await;
    assert_eq!(org["timeZone"], json!("UTC"));
    put_profile(
        &s.ts,
        &s.admin,
        "steady",
        &profile_with(json!([sms_step("0s", "First")])),
    )
    .await;
    s.ts.create_lead(&s.write, &ada("L1", "steady")).await;
    assert_deferred_to(&s, "L1", end).await;
}

/// Profile "steady" with one step at once; lead L1 (`time_zone` when given) enrolled
/// in it, and its step deferred to `end`.
async fn deferred_first_step(s: &Setup, time_zone: Option<&str>, end: DateTime<Utc>) {
    put_profile(
        &s.ts,
        &s.admin,
        "steady",
        &profile_with(json!([sms_step("0s", "First")])),
    )
    .await;
    let mut body = ada("L1", "steady");
    if let Some(zone) = time_zone {
        body["timeZone"] = json!(zone);
    }
    s.ts.create_lead(&s.write, &body).await;
    assert_deferred_to(s, "L1", end).await;
}

/// Waits until L1's deferred first step went out.
async fn assert_first_step_sent(s: &Setup) {
    let sent = wait_outbound(&s.ts, &s.write, "L1", 1).await;
    assert_eq!(texts(&sent), ["First"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clearing_quiet_hours_runs_a_deferred_step_at_once() {
    let s = start().await;
    let end = quiet_now(&s).await;
    deferred_first_step(&s, Some("UTC"), end).await;
    set_org(&s.ts, &s.admin, &json!({"quietHours": null})).await;
    assert_first_step_sent(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_longer_quiet_window_moves_a_deferred_step_to_its_new_end() {
    let s = start().await;
    let end = quiet_now(&s).await;
    deferred_first_step(&s, Some("UTC"), end).await;
    let later = end + chrono::Duration::hours(1);
    let start = Utc::now() - chrono::Duration::hours(1);
    set_org(
        &s.ts,
        &s.admin,
        &json!({"quietHours": {"start": start.format("%H:%M").to_string(),
                               "end": later.format("%H:%M").to_string()}}),
    )
    .await;
    let view = engagement(&s.ts, &s.write, "L1").await;
    let next = time_of(&view["nextStepAt"]);
    assert!(
        next >= later && next <= later + chrono::Duration::seconds(60),
        "moved to the new end {later} in the same write: {view}"
    );
    assert!(outbound(&s.ts, &s.write, "L1").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organization_time_zone_outside_the_window_runs_a_deferred_step() {
    let s = start().await;
    let end = quiet_now(&s).await;
    set_org(&s.ts, &s.admin, &json!({"timeZone": "UTC"})).await;
    deferred_first_step(&s, None, end).await;
    // Six hours ahead of UTC, the clock is outside the window.
    set_org(&s.ts, &s.admin, &json!({"timeZone": "Asia/Dhaka"})).await;
    assert_first_step_sent(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_time_zone_outside_the_window_runs_its_deferred_step() {
    let s = start().await;
    let end = quiet_now(&s).await;
    deferred_first_step(&s, Some("UTC"), end).await;
    let r =
        s.ts.patch(&s.write, "/v1/leads/L1", &json!({"timeZone": "Asia/Dhaka"}))
            .await;
    expect(&r, 200);
    assert_first_step_sent(&s).await;
}

// ---- keywords ---------------------------------------------------------------------------

const UNSUBSCRIBED_TEXT: &str =
    "Acme Solar: You are unsubscribed and will receive no more messages. Reply START to resubscribe.";
const RESUBSCRIBED_TEXT: &str = "Acme Solar: You are resubscribed. Reply STOP to opt out.";

/// Asserts the `n`-th (0-based) outbound message is a keyword confirmation `text`.
async fn assert_confirmation(s: &Setup, lead: &str, n: usize, text: &str) {
    let sent = wait_outbound(&s.ts, &s.write, lead, n + 1).await;
    assert_eq!(
        sent.len(),
        n + 1,
        "one confirmation each: {:?}",
        texts(&sent)
    );
    assert_eq!(sent[n]["content"]["text"], json!(text));
    assert_eq!(sent[n]["channel"], json!("sms"));
    let event = wait_settled(&s.ts, &s.write, lead, &sent[n]["id"]).await;
    assert_sandbox_delivered(&event, "keyword");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_unsubscribes_and_sends_one_confirmation_past_the_gate() {
    let s = start().await;
    s.ts.create_lead(&s.write, &ada("L1", "")).await;
    let answer = inbound_sms(&s.ts, &s.write, PHONE, "STOP").await;
    assert_eq!(answer["optOut"], json!(true));
    assert_eq!(
        get_lead(&s.ts, &s.write, "L1").await["subscriptions"]["sms"],
        json!("unsubscribed")
    );
    assert_confirmation(&s, "L1", 0, UNSUBSCRIBED_TEXT).await;
    assert!(
        events_of_type(&s.ts, &s.write, "L1", "COMPLIANCE_BLOCKED")
            .await
            .is_empty(),
        "the confirmation bypasses the gate"
    );
}

/// The definite forms of `consent.md` (and the hostile spellings): each one
/// unsubscribes its lead with exactly one confirmation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_definite_opt_out_unsubscribes_with_one_confirmation() {
    let s = start().await;
    let texts = [
        "Stop please",
        "STOP!!!",
        "stop texting me",
        "Please unsubscribe me",
        "opt out",
        "Remove me from your list",
        "Wrong number",
        "ＳＴＯＰ",
        "stop.",
        "\"STOP\"",
        "STOP\u{200b}",
        "UNSUBSCRIBE ME",
        "OPT-OUT",
        "STOP ALL",
        "STOP STOP",
    ];
    for (i, text) in texts.iter().enumerate() {
        let id = format!("L{i}");
        let phone = format!("+1555200{i:04}");
        let lead = json!({"id": id, "firstName": "Ada", "phone": phone});
        s.ts.create_lead(&s.write, &lead).await;
        let answer = inbound_sms(&s.ts, &s.write, &phone, text).await;
        assert_eq!(answer["optOut"], json!(true), "{text:?}");
        assert_eq!(
            get_lead(&s.ts, &s.write, &id).await["subscriptions"]["sms"],
            json!("unsubscribed"),
            "{text:?}"
        );
        assert_confirmation(&s, &id, 0, UNSUBSCRIBED_TEXT).await;
    }
}

/// Words that only mention stopping, or not even that, unsubscribe nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinary_words_are_no_opt_out() {
    let s = start().await;
    s.ts.create_lead(&s.write, &ada("L1", "")).await;
    for text in [
        "I'll be there at the end of the day",
        "Can you call me tomorrow?",
        // (Spelled out, `S T O P` is STOP: `revocation`.)
        "The bus stop is right there",
    ] {
        let answer = inbound_sms(&s.ts, &s.write, PHONE, text).await;
        assert_eq!(answer["optOut"], json!(false), "{text:?}");
    }
    assert_eq!(
        get_lead(&s.ts, &s.write, "L1").await["subscriptions"]["sms"],
        json!("subscribed")
    );
}

/// An email reply whose subject or first line asks to stop unsubscribes every channel
/// (`revocationScope` `all`, the default), with one confirmation, by email only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_asking_to_be_removed_unsubscribes_email_once() {
    let s = start().await;
    s.ts.create_lead(&s.write, &ada("L1", "")).await;
    let r = inbound_email(
        &s.ts,
        &s.write,
        EMAIL,
        "Re: Your solar quote",
        "please remove me from your list\n\nOn Monday you wrote: ...",
    )
    .await;
    assert_eq!(expect(&r, 200)["optOut"], json!(true));
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(lead["subscriptions"]["email"], json!("unsubscribed"));
    assert_eq!(lead["subscriptions"]["sms"], json!("unsubscribed"));
    let sent = wait_outbound(&s.ts, &s.write, "L1", 1).await;
    assert_eq!(sent.len(), 1, "one confirmation: {:?}", texts(&sent));
    assert_eq!(sent[0]["channel"], json!("email"));
    let r = inbound_email(&s.ts, &s.write, EMAIL, "Unsubscribe", "").await;
    assert_eq!(expect(&r, 200)["optOut"], json!(true));
    let r = inbound_email(&s.ts, &s.write, EMAIL, "Question", "When can you come by?").await;
    assert_eq!(expect(&r, 200)["optOut"], json!(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_resubscribes_and_confirms() {
    let s = start().await;
    s.ts.create_lead(&s.write, &ada("L1", "")).await;
    inbound_sms(&s.ts, &s.write, PHONE, "STOP").await;
    assert_confirmation(&s, "L1", 0, UNSUBSCRIBED_TEXT).await;
    let answer = inbound_sms(&s.ts, &s.write, PHONE, "start").await;
    assert_eq!(answer["optIn"], json!(true));
    assert_eq!(
        get_lead(&s.ts, &s.write, "L1").await["subscriptions"]["sms"],
        json!("subscribed")
    );
    assert_confirmation(&s, "L1", 1, RESUBSCRIBED_TEXT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_and_info_answer_with_the_help_text() {
    let s = start().await;
    s.ts.create_lead(&s.write, &ada("L1", "")).await;
    inbound_sms(&s.ts, &s.write, PHONE, "HELP").await;
    assert_confirmation(&s, "L1", 0, HELP_TEXT).await;
    inbound_sms(&s.ts, &s.write, PHONE, "info").await;
    assert_confirmation(&s, "L1", 1, HELP_TEXT).await;
    assert_eq!(
        get_lead(&s.ts, &s.write, "L1").await["subscriptions"]["sms"],
        json!("subscribed")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keywords_never_ask_the_assistant() {
    let s = start().await;
    let model = FakeModel::start().await;
    set_org(&s.ts, &s.admin, &model.settings()).await;
    put_profile(
        &s.ts,
        &s.admin,
        "assist",
        &json!({"instructions": "Be brief.", "cadence": [], "replyDelay": "1s"}),
    )
    .await;
    s.ts.create_lead(&s.write, &ada("L1", "assist")).await;
    for (n, word) in ["STOP", "start", "HELP", "info"].into_iter().enumerate() {
        inbound_sms(&s.ts, &s.write, PHONE, word).await;
        wait_outbound(&s.ts, &s.write, "L1", n + 1).await;
    }
    // Past the reply delay, still no question to the model.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(model.count(), 0, "{:?}", model.requests());
    assert_eq!(outbound(&s.ts, &s.write, "L1").await.len(), 4);
    // The assistant is wired: an ordinary text is answered.
    inbound_sms(&s.ts, &s.write, PHONE, "What does it cost?").await;
    model.wait_requests(1, WAIT).await;
}

/// A reply is due (the lead wrote, the reply delay runs) when the lead's `Stop please`
/// arrives: the revocation is read in the write of that message, so the due reply never
/// reaches the lead; only the one confirmation goes out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_while_a_reply_is_due_leaves_only_the_confirmation() {
    let s = start().await;
    let model = FakeModel::start().await;
    set_org(&s.ts, &s.admin, &model.settings()).await;
    put_profile(
        &s.ts,
        &s.admin,
        "assist",
        &json!({"instructions": "Be brief.", "cadence": [], "replyDelay": "1s"}),
    )
    .await;
    s.ts.create_lead(&s.write, &ada("L1", "assist")).await;
    inbound_sms(&s.ts, &s.write, PHONE, "What does it cost?").await;
    // Inside the reply delay.
    let answer = inbound_sms(&s.ts, &s.write, PHONE, "Stop please").await;
    assert_eq!(answer["optOut"], json!(true));
    assert_confirmation(&s, "L1", 0, UNSUBSCRIBED_TEXT).await;
    // Well past the reply's due time: still only the confirmation left.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let sent = outbound(&s.ts, &s.write, "L1").await;
    assert_eq!(sent.len(), 1, "only the confirmation: {:?}", texts(&sent));
}

// ---- API sends --------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_message_from_the_user_is_sent_through_the_sandbox() {
    let s = start().await;
    s.ts.create_lead(&s.write, &ada("L1", "")).await;
    for body in [
        json!({"owner": "user", "channel": "sms", "content": {"text": "Hi Ada"}}),
        json!({"owner": "user", "channel": "email", "content": {"text": "Hi Ada", "subject": "Quote"}}),
    ] {
        let r = s.ts.post(&s.write, "/v1/leads/L1/messages", &body).await;
        let sent = expect(&r, 201);
        assert_eq!(sent["outcome"], json!("sent"));
        let event = wait_settled(&s.ts, &s.write, "L1", &sent["id"]).await;
        assert_sandbox_delivered(&event, "api");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_only_message_is_recorded_without_sending() {
    let s = start().await;
    s.ts.create_lead(&s.write, &ada("L1", "")).await;
    let body = json!({"owner": "user", "channel": "sms", "content": {"text": "Sent from my phone"},
                      "recordOnly": true});
    let r = s.ts.post(&s.write, "/v1/leads/L1/messages", &body).await;
    let recorded = expect(&r, 201);
    let listed = outbound(&s.ts, &s.write, "L1").await;
    assert_eq!(texts(&listed), ["Sent from my phone"]);
    let event = message_event(&s.ts, &s.write, "L1", &recorded["id"]).await;
    assert!(
        event["data"]
            .get("providerMessageId")
            .is_none_or(Value::is_null),
        "nothing went to a provider: {event}"
    );
}

// ---- organization settings --------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_assistant_api_key_is_write_only() {
    let s = start().await;
    let secret = "sk-very-secret-value";
    let body = json!({"assistant": {"baseUrl": "http://127.0.0.1:11434/v1", "model": "llama3.1:8b",
                                    "apiKey": secret, "timeoutMs": 30000}});
    let r = s.ts.patch(&s.admin, "/v1/org", &body).await;
    let patched = expect(&r, 200);
    assert!(!text(&r).contains(secret), "PATCH shows the key: {patched}");
    let r = s.ts.get(&s.admin, "/v1/org").await;
    let org = expect(&r, 200);
    assert!(!text(&r).contains(secret), "GET shows the key: {org}");
    assert_eq!(patched, org);
    let assistant = &org["assistant"];
    assert_eq!(assistant["baseUrl"], json!("http://127.0.0.1:11434/v1"));
    assert_eq!(assistant["model"], json!("llama3.1:8b"));
    assert_eq!(assistant["timeoutMs"], json!(30000));
    assert_eq!(assistant["apiKeySet"], json!(true));
    assert!(assistant.get("apiKey").is_none(), "{org}");
    // `null` clears it.
    let cleared = set_org(&s.ts, &s.admin, &json!({"assistant": null})).await;
    assert!(
        cleared.get("assistant").is_none_or(Value::is_null),
        "{cleared}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_twilio_sms_provider_needs_public_url_and_keeps_its_token_secret() {
    let body = json!({"providers": {"sms": {"kind": "twilio", "accountSid": "AC0123456789abcdef0123456789abcdef",
                                            "authToken": "token-secret", "from": "+15550100000"}}});
    let bare = TestServer::start().await;
    let admin = bare.key("acme", "admin").await;
    assert_error(
        &bare.patch(&admin, "/v1/org", &body).await,
        400,
        "public_url must be set to use the twilio provider",
    );
    let ts =
        TestServer::start_with(|c| c.public_url = Some("https://engaged.example.com".into())).await;
    let admin = ts.key("acme", "admin").await;
    let org = expect(&ts.patch(&admin, "/v1/org", &body).await, 200);
    assert_eq!(org["providers"]["sms"]["kind"], json!("twilio"));
    assert_eq!(org["providers"]["sms"]["authTokenSet"], json!(true));
    assert!(!org.to_string().contains("token-secret"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_sms_provider_is_accepted() {
    let s = start().await;
    let org = set_org(
        &s.ts,
        &s.admin,
        &json!({"providers": {"sms": {"kind": "sandbox"}}}),
    )
    .await;
    assert_eq!(org["providers"]["sms"]["kind"], json!("sandbox"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_engine_settings_name_the_field() {
    let s = start().await;
    let before = expect(&s.ts.get(&s.admin, "/v1/org").await, 200);
    let url = "http://127.0.0.1:11434/v1";
    for (body, field) in [
        (
            json!({"assistant": {"baseUrl": "not a url", "model": "m"}}),
            "assistant.baseUrl",
        ),
        (json!({"assistant": {"baseUrl": url}}), "assistant.model"),
        (
            json!({"assistant": {"baseUrl": url, "model": "m", "timeoutMs": "slow"}}),
            "assistant.timeoutMs",
        ),
        (
            json!({"providers": {"sms": {"kind": "carrier-pigeon"}}}),
            "providers.sms.kind",
        ),
        (json!({"timeZone": "Mars/Olympus"}), "timeZone"),
    ] {
        let r = s.ts.patch(&s.admin, "/v1/org", &body).await;
        assert_error(&r, 400, &format!("Invalid format for field: {field}"));
    }
    let after = expect(&s.ts.get(&s.admin, "/v1/org").await, 200);
    assert_eq!(after, before, "a refused PATCH changes nothing");
}

// ---- metrics ----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_metrics_are_exported() {
    let s = start().await;
    put_profile(
        &s.ts,
        &s.admin,
        "one",
        &profile_with(json!([sms_step("0s", "Hello")])),
    )
    .await;
    s.ts.create_lead(&s.write, &ada("L1", "one")).await;
    wait_outbound(&s.ts, &s.write, "L1", 1).await;
    let r = s.ts.get(&s.admin, "/metrics").await;
    assert_eq!(r.status, 200);
    let body = text(&r);
    for name in ["engaged_agenda_due", "engaged_provider_requests_total"] {
        assert!(body.contains(name), "missing {name} in\n{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_longer_than_its_channel_once_rendered_is_blocked_not_sent() {
    let s = start().await;
    put_profile(
        &s.ts,
        &s.admin,
        "long",
        &profile_with(json!([
            sms_step("0s", "Note: {{additionalInfo.note}}"),
            sms_step("0s", "Short one"),
        ])),
    )
    .await;
    let mut lead = ada("L1", "long");
    lead["additionalInfo"] = json!({"note": "x".repeat(1_600)});
    s.ts.create_lead(&s.write, &lead).await;
    let sent = wait_outbound(&s.ts, &s.write, "L1", 1).await;
    assert_eq!(texts(&sent), ["Short one"]);
    let blocks = events_of_type(&s.ts, &s.write, "L1", "COMPLIANCE_BLOCKED").await;
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    assert_eq!(
        blocks[0]["data"],
        json!({"reason": "CONTENT_TOO_LONG", "source": "configuration", "channel": "sms", "step": 1})
    );
    wait_state(&s.ts, &s.write, "L1", "finished", None).await;
}

/// Why it waits: a step quiet hours deferred says so on the lead's page (until the
/// window's end) and is counted on its campaign's page; turned off, the lead's page
/// says the assistant is off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lead_and_campaign_pages_say_why_a_step_waits() {
    let s = start().await;
    let end = quiet_now(&s).await;
    put_profile(
        &s.ts,
        &s.admin,
        "steady",
        &profile_with(json!([sms_step("0s", "First")])),
    )
    .await;
    let mut body = ada("L1", "steady");
    body["timeZone"] = json!("UTC");
    s.ts.create_lead(&s.write, &body).await;
    assert_deferred_to(&s, "L1", end).await;

    let password = s.ts.user("acme", "ana@acme.example", "Ana", "admin").await;
    let session = s.ts.sign_in("ana@acme.example", &password).await;
    let get = |path: &'static str| {
        let cookie = session.cookie.clone();
        let ts = &s.ts;
        async move {
            ts.console(hyper::Method::GET, path, Some(&cookie), None, &[])
                .await
                .text()
        }
    };
    let page = get("/console/leads/L1").await;
    assert!(page.contains("<dt>Waiting</dt>"), "{page}");
    assert!(page.contains("Quiet hours, until"), "{page}");
    let campaign = get("/console/campaigns/steady").await;
    assert!(
        campaign.contains("<dt>Quiet hours</dt><dd>1</dd>"),
        "{campaign}"
    );

    expect(
        &s.ts
            .post(&s.write, "/v1/leads/L1/turn-off", &json!({}))
            .await,
        200,
    );
    let page = get("/console/leads/L1").await;
    assert!(page.contains("Assistant off"), "{page}");
}

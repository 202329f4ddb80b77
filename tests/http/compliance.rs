//! The compliance gate: each step with its exact reason and source, the organization's
//! compliance service in every state it can be in, and the outcomes.

use std::time::Duration;

use serde_json::{json, Value};

use engaged::testkit::compliance::{closed_url, Answer, FakeCompliance};
use engaged::testkit::Captured;
use engaged::testkit::Org;

use crate::answers::{assert_error, expect};

type Setup = Org;

async fn setup() -> Setup {
    let s = Org::start().await;
    // The consent policy (`policy.rs`) is off: these tests hold the other steps.
    let none = json!({"consentRequired": []});
    expect(&s.ts.patch(&s.admin, "/v1/org", &none).await, 200);
    s.ts.create_lead(
        &s.write,
        &json!({"id": "p", "phone": "+15551234567", "email": "p@example.com"}),
    )
    .await;
    s
}

fn outreach(channel: &str) -> Value {
    json!({"owner": "user", "channel": channel, "content": {"text": "An offer"}})
}

/// Sends a message to `lead`; returns (reason, source) of a block, or None when sent.
async fn attempt(s: &Setup, lead: &str, channel: &str) -> Option<(String, String)> {
    let r =
        s.ts.post(
            &s.write,
            &format!("/v1/leads/{lead}/messages"),
            &outreach(channel),
        )
        .await;
    let body = r.json();
    match body["outcome"].as_str() {
        Some("sent") => {
            assert_eq!(r.status, 201);
            None
        }
        Some("blocked") => {
            assert_eq!(r.status, 200);
            let event = &body["event"];
            assert_eq!(event["type"], json!("COMPLIANCE_BLOCKED"));
            assert_eq!(event["data"]["channel"], json!(channel));
            assert!(event["id"].as_str().is_some_and(|id| !id.is_empty()));
            assert!(
                event["data"].get("id").is_none(),
                "the block's id is not repeated in data"
            );
            Some((
                event["data"]["reason"].as_str()?.to_string(),
                event["data"]["source"].as_str()?.to_string(),
            ))
        }
        _ => panic!("unexpected answer {}: {body}", r.status),
    }
}

fn blocked(reason: &str, source: &str) -> Option<(String, String)> {
    Some((reason.to_string(), source.to_string()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reachable_subscribed_lead_is_contacted() {
    let s = setup().await;
    assert_eq!(attempt(&s, "p", "sms").await, None);
    assert_eq!(attempt(&s, "p", "email").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_1_no_target_is_configuration() {
    let s = setup().await;
    s.ts.create_lead(&s.write, &json!({"id": "bare"})).await;
    assert_eq!(
        attempt(&s, "bare", "sms").await,
        blocked("COMPLIANCE_TARGET_MISSING", "configuration")
    );
    assert_eq!(
        attempt(&s, "bare", "email").await,
        blocked("COMPLIANCE_TARGET_MISSING", "configuration")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_2_unsubscribed_channel_is_configuration() {
    let s = setup().await;
    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/leads/p/unsubscribe",
                &json!({"channels": ["email"]}),
            )
            .await,
        200,
    );
    assert_eq!(
        attempt(&s, "p", "email").await,
        blocked("UNSUBSCRIBED", "configuration")
    );
    assert_eq!(attempt(&s, "p", "sms").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_3_dnc_is_service_dnc_and_spares_email() {
    let s = setup().await;
    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/dnc/register",
                &json!({"phone": "+15551234567"}),
            )
            .await,
        200,
    );
    assert_eq!(attempt(&s, "p", "sms").await, blocked("DNC", "service-dnc"));
    assert_eq!(attempt(&s, "p", "email").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_run_in_order_unsubscribed_before_dnc() {
    let s = setup().await;
    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/dnc/register",
                &json!({"phone": "+15551234567"}),
            )
            .await,
        200,
    );
    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/leads/p/unsubscribe",
                &json!({"channels": ["sms"]}),
            )
            .await,
        200,
    );
    assert_eq!(
        attempt(&s, "p", "sms").await,
        blocked("UNSUBSCRIBED", "configuration")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_hours_in_the_lead_time_zone_block() {
    let s = setup().await;
    let now = chrono::Utc::now();
    let hhmm = |t: chrono::DateTime<chrono::Utc>| t.format("%H:%M").to_string();
    let window = json!({"start": hhmm(now - chrono::Duration::hours(1)), "end": hhmm(now + chrono::Duration::hours(1))});
    expect(
        &s.ts
            .patch(&s.admin, "/v1/org", &json!({"quietHours": window}))
            .await,
        200,
    );
    // Without a time zone the lead has no quiet hours.
    assert_eq!(attempt(&s, "p", "sms").await, None);
    expect(
        &s.ts
            .patch(&s.write, "/v1/leads/p", &json!({"timeZone": "Etc/UTC"}))
            .await,
        200,
    );
    assert_eq!(
        attempt(&s, "p", "sms").await,
        blocked("QUIET_HOURS", "configuration")
    );
    let r =
        s.ts.patch(
            &s.write,
            "/v1/leads/p",
            &json!({"timeZone": "Mars/Olympus"}),
        )
        .await;
    assert_error(&r, 400, "Invalid format for field: timeZone");
}

async fn with_service(s: &Setup, url: &str, extra: Value) {
    let mut body = json!({"complianceUrl": url, "complianceTimeoutMs": 300});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    expect(&s.ts.patch(&s.admin, "/v1/org", &body).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_4_the_service_is_asked_and_its_yes_sends() {
    let s = setup().await;
    let service = FakeCompliance::start(Answer::Json(200, r#"{"allowed": true}"#)).await;
    let url = service.url.clone();
    with_service(&s, &url, json!({})).await;
    assert_eq!(attempt(&s, "p", "sms").await, None);
    let asked = service.requests();
    assert_eq!(asked.len(), 1);
    let org = expect(&s.ts.get(&s.admin, "/v1/org").await, 200);
    assert_eq!(
        asked[0],
        json!({"leadId": "p", "channel": "sms", "phone": "+15551234567", "email": "p@example.com", "organization": org["id"]})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_4_a_no_gives_its_reason_or_the_default() {
    let s = setup().await;
    let url = FakeCompliance::start(Answer::Json(
        200,
        r#"{"allowed": false, "reason": "STATE_LAW_FL"}"#,
    ))
    .await
    .url;
    with_service(&s, &url, json!({})).await;
    assert_eq!(
        attempt(&s, "p", "sms").await,
        blocked("STATE_LAW_FL", "http")
    );
    let url = FakeCompliance::start(Answer::Json(200, r#"{"allowed": false}"#))
        .await
        .url;
    with_service(&s, &url, json!({})).await;
    assert_eq!(
        attempt(&s, "p", "email").await,
        blocked("BLOCKED_BY_COMPLIANCE_SERVICE", "http")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_4_fails_closed_when_down_broken_garbled_or_slow() {
    let s = setup().await;
    let unavailable = blocked("COMPLIANCE_SERVICE_UNAVAILABLE", "http");
    // Down: nothing listens on the port any more.
    let closed = closed_url();
    with_service(&s, &closed, json!({})).await;
    assert_eq!(attempt(&s, "p", "sms").await, unavailable);
    for answer in [
        Answer::Json(500, r#"{"allowed": true}"#),
        Answer::Json(200, "<html>ok</html>"),
        Answer::Json(200, r#"{"allowed": "yes"}"#),
        Answer::Slow(Duration::from_secs(3)),
    ] {
        let url = FakeCompliance::start(answer).await.url;
        with_service(&s, &url, json!({})).await;
        assert_eq!(attempt(&s, "p", "sms").await, unavailable);
    }
}

/// The service's URL may point anywhere: a failed check is logged with its class
/// (`connect`, `status 500`, `malformed answer`), never with what the service answered.
#[tokio::test(flavor = "current_thread")]
async fn a_failed_check_is_logged_by_its_class_only() {
    let (log, _guard) = Captured::install(tracing::Level::DEBUG);
    let s = setup().await;
    let unavailable = blocked("COMPLIANCE_SERVICE_UNAVAILABLE", "http");
    let closed = closed_url();
    with_service(&s, &closed, json!({})).await;
    assert_eq!(attempt(&s, "p", "sms").await, unavailable);
    for answer in [
        Answer::Json(500, "SECRET-INTERNAL-123"),
        Answer::Json(200, "SECRET-INTERNAL-123"),
    ] {
        let url = FakeCompliance::start(answer).await.url;
        with_service(&s, &url, json!({})).await;
        assert_eq!(attempt(&s, "p", "sms").await, unavailable);
    }
    let log = log.text();
    for class in [
        "failure=connect",
        "failure=status 500",
        "failure=malformed answer",
    ] {
        assert!(log.contains(class), "{class} in the log: {log}");
    }
    assert!(
        !log.contains("SECRET"),
        "the service's answer in the log: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_4_applies_only_to_the_configured_channels() {
    let s = setup().await;
    let service =
        FakeCompliance::start(Answer::Json(200, r#"{"allowed": false, "reason": "NO"}"#)).await;
    let url = service.url.clone();
    with_service(&s, &url, json!({"complianceChannels": ["sms"]})).await;
    assert_eq!(attempt(&s, "p", "email").await, None);
    assert_eq!(attempt(&s, "p", "sms").await, blocked("NO", "http"));
    assert_eq!(service.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_are_events_and_nothing_is_sent() {
    let s = setup().await;
    expect(
        &s.ts
            .post(&s.write, "/v1/leads/p/unsubscribe", &json!({}))
            .await,
        200,
    );
    let r =
        s.ts.post(&s.write, "/v1/leads/p/messages", &outreach("sms"))
            .await;
    let answer = expect(&r, 200);
    assert_eq!(answer.as_object().map(|o| o.len()), Some(2), "{answer}");
    let block = &answer["event"];
    assert!(block["id"]
        .as_str()
        .is_some_and(|id| id.starts_with("blk_")));
    let events = expect(
        &s.ts
            .get(&s.write, "/v1/leads/p/events?types=COMPLIANCE_BLOCKED")
            .await,
        200,
    );
    assert_eq!(events["events"], json!([block.clone()]));
    assert_eq!(
        block["data"],
        json!({"reason": "UNSUBSCRIBED", "source": "configuration", "channel": "sms"})
    );
    let messages = expect(&s.ts.get(&s.write, "/v1/leads/p/messages").await, 200);
    assert_eq!(messages["messages"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbound_calls_are_queued_or_blocked() {
    let s = setup().await;
    let r =
        s.ts.post(
            &s.write,
            "/v1/leads/p/calls",
            &json!({"direction": "OUTBOUND"}),
        )
        .await;
    let sent = expect(&r, 201);
    assert_eq!(sent["outcome"], json!("sent"));
    assert_eq!(sent["call"]["callStatus"], json!("QUEUED"));
    let call_id = sent["call"]["id"].as_str().unwrap().to_string();
    expect(
        &s.ts.get(&s.write, &format!("/v1/calls/{call_id}")).await,
        200,
    );

    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/leads/p/unsubscribe",
                &json!({"channels": ["voice"]}),
            )
            .await,
        200,
    );
    let r =
        s.ts.post(
            &s.write,
            "/v1/leads/p/calls",
            &json!({"direction": "OUTBOUND"}),
        )
        .await;
    let body = expect(&r, 200);
    assert_eq!(body["outcome"], json!("blocked"));
    assert_eq!(
        body["event"]["data"],
        json!({"reason": "UNSUBSCRIBED", "source": "configuration", "channel": "voice"})
    );
    let r =
        s.ts.post(
            &s.write,
            "/v1/leads/p/calls",
            &json!({"direction": "INBOUND"}),
        )
        .await;
    assert_error(&r, 400, "Invalid format for field: direction");
    let r =
        s.ts.post(
            &s.write,
            "/v1/leads/ghost/calls",
            &json!({"direction": "OUTBOUND"}),
        )
        .await;
    assert_error(&r, 404, "Resource not found: Lead with id ghost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_hours_follow_each_lead_time_zone_on_every_channel() {
    let s = setup().await;
    // The window is the two hours around now in Kolkata (UTC+05:30), far from now in UTC.
    let zone: chrono_tz::Tz = "Asia/Kolkata".parse().unwrap();
    let local = chrono::Utc::now().with_timezone(&zone);
    let hhmm = |t: chrono::DateTime<chrono_tz::Tz>| t.format("%H:%M").to_string();
    let window = json!({"start": hhmm(local - chrono::Duration::hours(1)), "end": hhmm(local + chrono::Duration::hours(1))});
    expect(
        &s.ts
            .patch(&s.admin, "/v1/org", &json!({"quietHours": window}))
            .await,
        200,
    );
    s.ts.create_lead(
        &s.write,
        &json!({"id": "in", "phone": "+15551230001", "email": "in@example.com", "timeZone": "Asia/Kolkata"}),
    )
    .await;
    s.ts.create_lead(
        &s.write,
        &json!({"id": "utc", "phone": "+15551230002", "timeZone": "Etc/UTC"}),
    )
    .await;
    let quiet = blocked("QUIET_HOURS", "configuration");
    assert_eq!(attempt(&s, "in", "sms").await, quiet);
    assert_eq!(attempt(&s, "in", "email").await, quiet);
    assert_eq!(attempt(&s, "utc", "sms").await, None);
    let r =
        s.ts.post(
            &s.write,
            "/v1/leads/in/calls",
            &json!({"direction": "OUTBOUND"}),
        )
        .await;
    assert_eq!(
        expect(&r, 200)["event"]["data"],
        json!({"reason": "QUIET_HOURS", "source": "configuration", "channel": "voice"})
    );
    // Quiet hours come after the local steps: an opted-out channel says so.
    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/leads/in/unsubscribe",
                &json!({"channels": ["email"]}),
            )
            .await,
        200,
    );
    assert_eq!(
        attempt(&s, "in", "email").await,
        blocked("UNSUBSCRIBED", "configuration")
    );
    // Cleared, the window blocks nothing.
    expect(
        &s.ts
            .patch(&s.admin, "/v1/org", &json!({"quietHours": null}))
            .await,
        200,
    );
    assert_eq!(attempt(&s, "in", "sms").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opt_out_committed_while_the_service_is_asked_still_blocks() {
    let s = setup().await;
    let service = FakeCompliance::start(Answer::Slow(Duration::from_millis(1500))).await;
    let url = service.url.clone();
    expect(
        &s.ts
            .patch(
                &s.admin,
                "/v1/org",
                &json!({"complianceUrl": url, "complianceTimeoutMs": 10000}),
            )
            .await,
        200,
    );
    let opt_out = async {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while service.requests().is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!service.requests().is_empty(), "the service was asked");
        // The service has the question and has not answered yet.
        expect(
            &s.ts
                .post(
                    &s.write,
                    "/v1/leads/p/unsubscribe",
                    &json!({"channels": ["sms"]}),
                )
                .await,
            200,
        );
    };
    let (outcome, ()) = tokio::join!(attempt(&s, "p", "sms"), opt_out);
    assert_eq!(outcome, blocked("UNSUBSCRIBED", "configuration"));
    let messages = expect(&s.ts.get(&s.write, "/v1/leads/p/messages").await, 200);
    assert_eq!(messages["messages"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_is_asked_about_calls_and_a_lead_without_email() {
    let s = setup().await;
    let service = FakeCompliance::start(Answer::Json(
        200,
        r#"{"allowed": false, "reason": "LITIGATOR"}"#,
    ))
    .await;
    let url = service.url.clone();
    with_service(&s, &url, json!({"complianceChannels": ["voice"]})).await;
    s.ts.create_lead(&s.write, &json!({"id": "v", "phone": "+15551230003"}))
        .await;
    let r =
        s.ts.post(
            &s.write,
            "/v1/leads/v/calls",
            &json!({"direction": "OUTBOUND"}),
        )
        .await;
    assert_eq!(
        expect(&r, 200)["event"]["data"],
        json!({"reason": "LITIGATOR", "source": "http", "channel": "voice"})
    );
    let org = expect(&s.ts.get(&s.admin, "/v1/org").await, 200);
    assert_eq!(
        service.requests(),
        vec![
            json!({"leadId": "v", "channel": "voice", "phone": "+15551230003", "organization": org["id"]})
        ]
    );
    // A local step that blocks first means the service is not asked at all.
    s.ts.create_lead(&s.write, &json!({"id": "bare"})).await;
    let r =
        s.ts.post(
            &s.write,
            "/v1/leads/bare/calls",
            &json!({"direction": "OUTBOUND"}),
        )
        .await;
    assert_eq!(
        expect(&r, 200)["event"]["data"]["reason"],
        json!("COMPLIANCE_TARGET_MISSING")
    );
    assert_eq!(service.requests().len(), 1);
    // A lead's own message is not outreach and is never gated.
    let r =
        s.ts.post(
            &s.write,
            "/v1/leads/v/messages",
            &json!({"owner": "lead", "channel": "sms", "content": {"text": "hi"}}),
        )
        .await;
    assert!(expect(&r, 201).get("outcome").is_none());
}

//! SMS over a Twilio-compatible provider (against `fake_twilio`) and Twilio's webhooks,
//! signed here with Twilio's published algorithm (base64 HMAC-SHA1 of the URL and the
//! sorted parameters), not with the server's code.

use base64::Engine as _;
use serde_json::{json, Value};

use engaged::testkit::twilio::FakeTwilio;
use engaged::testkit::Response;
use engaged::testkit::{poll, Captured, Org, WebhookReceiver};

use crate::answers::*;
use crate::engagement::*;
use crate::requests::*;
use crate::twilio_signing::*;

const PUBLIC_URL: &str = "https://engaged.test";
const SID: &str = "AC0123456789abcdef0123456789abcdef";
const TOKEN: &str = "twilio-auth-token-secret";
const FROM: &str = "+15550100000";
const PHONE: &str = "+15551230001";

struct Setup {
    acme: Org,
    org: String,
    twilio: FakeTwilio,
}

/// The kit's `acme` server and keys (`s.ts`, `s.write`, `s.admin`) and the fakes.
impl std::ops::Deref for Setup {
    type Target = Org;

    fn deref(&self) -> &Org {
        &self.acme
    }
}

async fn start() -> Setup {
    start_with(PUBLIC_URL, json!({})).await
}

/// A server with `public_url`, whose SMS provider is the fake Twilio with the extra
/// settings `more` (e.g. `ratePerSecond`).
async fn start_with(public_url: &str, more: Value) -> Setup {
    let twilio = FakeTwilio::start().await;
    let public_url = public_url.to_string();
    let acme = Org::start_with(|c| c.public_url = Some(public_url)).await;
    let (ts, admin) = (&acme.ts, &acme.admin);
    set_business(ts, admin).await;
    let mut sms = json!({"kind": "twilio", "accountSid": SID, "authToken": TOKEN,
        "from": FROM, "baseUrl": twilio.base_url});
    for (k, v) in more.as_object().unwrap() {
        sms[k] = v.clone();
    }
    let settings = set_org(ts, admin, &json!({"providers": {"sms": sms}})).await;
    assert_eq!(settings["providers"]["sms"]["authTokenSet"], json!(true));
    assert!(
        !settings.to_string().contains(TOKEN),
        "the token is write-only"
    );
    let org = settings["id"].as_str().unwrap().to_string();
    put_profile(
        ts,
        admin,
        "solar",
        &profile_with(json!([sms_step("0s", "Hi {{firstName}}, Sam here.")])),
    )
    .await;
    Setup { acme, org, twilio }
}

async fn lead(s: &Setup, id: &str, phone: &str, profile: &str) {
    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/leads",
                &json!({"id": id, "firstName": "Ada", "phone": phone, "customerProfile": profile}),
            )
            .await,
        201,
    );
}

async fn webhook(
    s: &Setup,
    hook: &str,
    params: &[(&str, &str)],
    signature: Option<String>,
) -> Response {
    let path = format!("/v1/providers/twilio/{}/{hook}", s.org);
    let signature = signature
        .unwrap_or_else(|| twilio_signature(TOKEN, &format!("{PUBLIC_URL}{path}"), params));
    let body = serde_urlencoded::to_string(params).unwrap().into_bytes();
    s.ts.post_with_headers(
        &path,
        &[("x-twilio-signature", signature)],
        "application/x-www-form-urlencoded",
        body,
    )
    .await
}

async fn first_message(s: &Setup, lead: &str) -> Value {
    let sent = wait_outbound(&s.ts, &s.write, lead, 1).await;
    wait_settled(&s.ts, &s.write, lead, &sent[0]["id"]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cadence_step_goes_out_through_twilio_with_its_fields_auth_and_callback() {
    let s = start().await;
    lead(&s, "L1", PHONE, "solar").await;
    let event = first_message(&s, "L1").await;
    assert_eq!(event["data"]["status"], json!("queued"));
    assert!(event["data"]["providerMessageId"]
        .as_str()
        .unwrap()
        .starts_with("SM"));
    let sent = s.twilio.sent();
    assert_eq!(sent.len(), 1);
    let request = &sent[0];
    assert_eq!(
        request.path,
        format!("/2010-04-01/Accounts/{SID}/Messages.json")
    );
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{SID}:{TOKEN}"));
    assert_eq!(request.authorization, format!("Basic {basic}"));
    assert_eq!(request.field("To"), Some(PHONE));
    assert_eq!(request.field("From"), Some(FROM));
    assert_eq!(request.field("Body"), Some("Hi Ada, Sam here."));
    let callback = format!("{PUBLIC_URL}/v1/providers/twilio/{}/sms-status", s.org);
    assert_eq!(request.field("StatusCallback"), Some(callback.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_stored_with_control_characters_reaches_twilio_clean() {
    let s = start().await;
    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/leads",
                &json!({"id": "L1", "firstName": "Bob", "phone": PHONE}),
            )
            .await,
        201,
    );
    // Stored before the character rule (the API refuses it now).
    s.ts.change_lead_directly("acme", "L1", |lead| {
        lead.first_name = "Bob\u{1}\u{1b}[2J\r\nBcc: spy@evil.example\u{202e}\u{fffe}".into();
    })
    .await;
    expect(
        &s.ts
            .patch(
                &s.write,
                "/v1/leads/L1",
                &json!({"customerProfile": "solar"}),
            )
            .await,
        200,
    );
    let event = first_message(&s, "L1").await;
    let body = "Hi Bob[2J\nBcc: spy@evil.example, Sam here.";
    assert_eq!(event["data"]["content"]["text"], json!(body));
    let sent = s.twilio.sent();
    assert_eq!(sent[0].field("Body"), Some(body));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_callback_moves_the_message_and_it_syncs_again() {
    let s = start().await;
    lead(&s, "L1", PHONE, "solar").await;
    let event = first_message(&s, "L1").await;
    let sid = event["data"]["providerMessageId"]
        .as_str()
        .unwrap()
        .to_string();
    let since = event["updatedAt"].as_str().unwrap().to_string();
    let r = webhook(
        &s,
        "sms-status",
        &[
            ("MessageSid", &sid),
            ("MessageStatus", "delivered"),
            ("AccountSid", SID),
        ],
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("text/xml")
    );
    let moved = message_event(&s.ts, &s.write, "L1", &event["id"]).await;
    assert_eq!(moved["data"]["status"], json!("delivered"));
    assert!(moved["updatedAt"].as_str().unwrap() > since.as_str());
    let path = format!(
        "/v1/leads/L1/events?updatedSince={}",
        since.replace(':', "%3A").replace('+', "%2B")
    );
    let synced = expect(&s.ts.get(&s.write, &path).await, 200);
    assert!(
        synced["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["id"] == event["id"] && e["data"]["status"] == json!("delivered")),
        "the moved message re-appears in a sync: {synced}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_or_wrongly_signed_webhooks_are_403_and_change_nothing() {
    let s = start().await;
    lead(&s, "L1", PHONE, "").await;
    let params = [
        ("MessageSid", "SMin1"),
        ("From", PHONE),
        ("To", FROM),
        ("Body", "hello"),
    ];
    let path = format!("/v1/providers/twilio/{}/sms", s.org);
    let body = serde_urlencoded::to_string(params).unwrap().into_bytes();
    let unsigned =
        s.ts.post_with_headers(&path, &[], "application/x-www-form-urlencoded", body)
            .await;
    assert_error(&unsigned, 403, "Forbidden");
    let forged = webhook(
        &s,
        "sms",
        &params,
        Some("AAAAAAAAAAAAAAAAAAAAAAAAAAA=".into()),
    )
    .await;
    assert_error(&forged, 403, "Forbidden");
    // Signed for other parameters (the body was altered on the way).
    let other = twilio_signature(
        TOKEN,
        &format!("{PUBLIC_URL}{path}"),
        &[("MessageSid", "SMin1")],
    );
    let altered = webhook(&s, "sms", &params, Some(other)).await;
    assert_error(&altered, 403, "Forbidden");
    assert!(messages_of(&s.ts, &s.write, "L1").await.is_empty());
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(lead["hasReplied"], json!(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_sms_is_recorded_once_per_message_sid() {
    let s = start().await;
    lead(&s, "L1", PHONE, "").await;
    let params = [
        ("MessageSid", "SMin1"),
        ("From", PHONE),
        ("To", FROM),
        ("Body", "hello"),
    ];
    for _ in 0..2 {
        let r = webhook(&s, "sms", &params, None).await;
        assert_eq!(r.status, 200, "{}", text(&r));
        assert_eq!(text(&r), "<Response/>");
    }
    let messages = messages_of(&s.ts, &s.write, "L1").await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["owner"], json!("lead"));
    assert_eq!(
        get_lead(&s.ts, &s.write, "L1").await["hasReplied"],
        json!(true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_21610_is_the_gates_fifth_step_and_an_sms_opt_out() {
    let s = start().await;
    let hooks = WebhookReceiver::ok().await;
    hooks.register(&s.ts, &s.admin).await;
    s.twilio.opt_out(PHONE);
    lead(&s, "L1", PHONE, "solar").await;
    let event = first_message(&s, "L1").await;
    assert_eq!(event["data"]["status"], json!("failed"));
    assert_eq!(event["data"]["errorCode"], json!("21610"));
    let blocked = events_of_type(&s.ts, &s.write, "L1", "COMPLIANCE_BLOCKED").await;
    assert_eq!(blocked.len(), 1, "{blocked:?}");
    assert_eq!(blocked[0]["data"]["source"], json!("provider-error"));
    assert_eq!(blocked[0]["data"]["reason"], json!("21610"));
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(
        lead["subscriptions"]["sms"],
        json!("unsubscribed"),
        "{lead}"
    );
    let opted_out = hooks.wait_event("lead.opted_out").await;
    assert_eq!(opted_out["channel"], json!("sms"), "{opted_out}");
    assert_eq!(opted_out["source"], json!("provider"), "{opted_out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_tried_again_after_retry_after_and_one_message_reaches_the_provider() {
    let s = start().await;
    s.twilio.script(&[(429, Some(1))]);
    lead(&s, "L1", PHONE, "solar").await;
    let event = first_message(&s, "L1").await;
    assert_eq!(event["data"]["status"], json!("queued"), "{event}");
    let sent = s.twilio.sent();
    assert_eq!(sent.len(), 2, "one refused with 429, one accepted");
    assert!(
        sent[1].at.duration_since(sent[0].at) >= std::time::Duration::from_millis(950),
        "Retry-After (1 s) is honoured"
    );
    assert_eq!(outbound(&s.ts, &s.write, "L1").await.len(), 1);
    // Both requests are counted.
    let metrics = text(&s.ts.get(&s.admin, "/metrics").await);
    for outcome in ["retried", "accepted"] {
        let line = format!(
            "engaged_provider_requests_total{{channel=\"sms\",kind=\"twilio\",outcome=\"{outcome}\"}} 1"
        );
        assert!(metrics.contains(&line), "missing {line} in\n{metrics}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_is_tried_three_times_at_most_then_the_message_fails() {
    let s = start().await;
    s.twilio.script(&[(503, None), (503, None), (503, None)]);
    lead(&s, "L1", PHONE, "solar").await;
    let event = first_message(&s, "L1").await;
    assert_eq!(event["data"]["status"], json!("failed"), "{event}");
    assert_eq!(event["data"]["errorCode"], json!("20503"), "{event}");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(s.twilio.sent().len(), 3, "three tries, no more");
    assert_eq!(outbound(&s.ts, &s.write, "L1").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_or_502_after_the_request_was_written_is_never_sent_again() {
    for status in [500, 502] {
        let s = start().await;
        s.twilio.script(&[(status, None)]);
        lead(&s, "L1", PHONE, "solar").await;
        let event = first_message(&s, "L1").await;
        assert_eq!(event["data"]["status"], json!("unknown"), "{event}");
        // A status and a short class, never Twilio's answer.
        assert_eq!(
            event["data"]["error"],
            json!(format!("status {status}")),
            "{event}"
        );
        assert!(!event.to_string().contains("Internal Server Error"));
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        assert_eq!(s.twilio.sent().len(), 1, "at most once");
        assert_eq!(outbound(&s.ts, &s.write, "L1").await.len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_the_provider_may_have_received_is_unknown_and_never_sent_again() {
    let s = start().await;
    s.twilio.hang_next();
    lead(&s, "L1", PHONE, "solar").await;
    let event = first_message(&s, "L1").await;
    assert_eq!(event["data"]["status"], json!("unknown"), "{event}");
    assert!(event["data"]["error"].is_string(), "{event}");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(s.twilio.sent().len(), 1, "the request arrived once");
    assert_eq!(outbound(&s.ts, &s.write, "L1").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_whose_certificate_is_not_trusted_fails_tls_certificate_untried_again() {
    let s = start().await;
    // engaged's own self-signed certificate is in no trusted root, nor outbound_ca_file.
    set_org(
        &s.ts,
        &s.admin,
        &json!({"providers": {"sms": {"kind": "twilio", "accountSid": SID, "authToken": TOKEN,
            "from": FROM, "baseUrl": s.ts.base}}}),
    )
    .await;
    lead(&s, "L1", PHONE, "solar").await;
    let event = first_message(&s, "L1").await;
    assert_eq!(event["data"]["status"], json!("failed"), "{event}");
    assert_eq!(
        event["data"]["errorCode"],
        json!("tls-certificate"),
        "{event}"
    );
    let metrics = text(&s.ts.get(&s.admin, "/metrics").await);
    assert!(
        !metrics.contains("kind=\"twilio\",outcome=\"retried\""),
        "not tried again:\n{metrics}"
    );
}

/// Posts a signed status callback; answers the message event after it.
async fn status_callback(
    s: &Setup,
    sid: &str,
    status: &str,
    error_code: Option<&str>,
    event_id: &Value,
) -> Value {
    let mut params = vec![("MessageSid", sid), ("MessageStatus", status)];
    if let Some(code) = error_code {
        params.push(("ErrorCode", code));
    }
    let r = webhook(s, "sms-status", &params, None).await;
    assert_eq!(r.status, 200, "{}", text(&r));
    message_event(&s.ts, &s.write, "L1", event_id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_callbacks_never_move_a_message_back_and_unknown_sids_change_nothing() {
    let s = start().await;
    lead(&s, "L1", PHONE, "solar").await;
    let event = first_message(&s, "L1").await;
    let sid = event["data"]["providerMessageId"]
        .as_str()
        .unwrap()
        .to_string();
    let id = &event["id"];
    // Only Twilio's numeric code is kept of a callback's ErrorCode.
    let sent = status_callback(&s, &sid, "sent", Some("<b>not a code</b>"), id).await;
    assert_eq!(sent["data"]["status"], json!("sent"));
    assert!(sent["data"].get("errorCode").is_none(), "{sent}");
    let last = status_callback(&s, &sid, "undelivered", Some("30003"), id).await;
    assert_eq!(last["data"]["status"], json!("undelivered"));
    assert_eq!(last["data"]["errorCode"], json!("30003"));
    // Late or repeated callbacks change nothing.
    for status in ["sent", "delivered", "undelivered"] {
        let again = status_callback(&s, &sid, status, None, id).await;
        assert_eq!(again, last, "{status}");
    }
    let unknown = webhook(
        &s,
        "sms-status",
        &[("MessageSid", "SMnot-ours"), ("MessageStatus", "delivered")],
        None,
    )
    .await;
    assert_eq!(unknown.status, 200);
    assert_eq!(
        message_event(&s.ts, &s.write, "L1", &event["id"]).await,
        last
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_for_another_number_or_an_org_without_twilio_are_404() {
    let s = start().await;
    lead(&s, "L1", PHONE, "").await;
    let params = [
        ("MessageSid", "SMin1"),
        ("From", PHONE),
        ("To", "+15550199999"),
        ("Body", "hello"),
    ];
    assert_error(&webhook(&s, "sms", &params, None).await, 404, "Not found");
    // An organization with the sandbox provider has no Twilio webhooks.
    let other_admin = s.ts.key("other", "admin").await;
    let other = expect(&s.ts.get(&other_admin, "/v1/org").await, 200);
    for org in [other["id"].as_str().unwrap(), "org_none"] {
        let path = format!("/v1/providers/twilio/{org}/sms");
        let signature = twilio_signature(TOKEN, &format!("{PUBLIC_URL}{path}"), &params);
        let body = serde_urlencoded::to_string(params).unwrap().into_bytes();
        let r =
            s.ts.post_with_headers(
                &path,
                &[("x-twilio-signature", signature)],
                "application/x-www-form-urlencoded",
                body,
            )
            .await;
        assert_error(&r, 404, "Not found");
    }
    assert!(messages_of(&s.ts, &s.write, "L1").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_twilio_already_answered_gets_no_second_confirmation() {
    let s = start().await;
    lead(&s, "L1", PHONE, "").await;
    let params = [
        ("MessageSid", "SMstop"),
        ("From", PHONE),
        ("To", FROM),
        ("Body", "stop please"),
        ("OptOutType", "STOP"),
    ];
    assert_eq!(webhook(&s, "sms", &params, None).await.status, 200);
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(
        lead["subscriptions"]["sms"],
        json!("unsubscribed"),
        "{lead}"
    );
    // Our own STOP (no OptOutType) is confirmed through Twilio; Twilio's was not.
    let ours = [
        ("MessageSid", "SMstop2"),
        ("From", PHONE),
        ("To", FROM),
        ("Body", "STOP"),
    ];
    assert_eq!(webhook(&s, "sms", &ours, None).await.status, 200);
    let confirmations = wait_outbound(&s.ts, &s.write, "L1", 1).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        outbound(&s.ts, &s.write, "L1").await.len(),
        1,
        "{confirmations:?}"
    );
    assert_eq!(s.twilio.sent().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn provider_secrets_never_reach_the_log_at_debug_level() {
    let (captured, _guard) = Captured::install(tracing::Level::DEBUG);
    let s = start().await;
    // A send through Twilio, a refused one, a forged webhook, a settings change.
    s.twilio.opt_out("+15551230002");
    lead(&s, "L1", PHONE, "solar").await;
    lead(&s, "L2", "+15551230002", "solar").await;
    first_message(&s, "L1").await;
    first_message(&s, "L2").await;
    let params = [
        ("MessageSid", "SMx"),
        ("From", PHONE),
        ("To", FROM),
        ("Body", "hi"),
    ];
    let forged = webhook(&s, "sms", &params, Some("bm90IGEgc2lnbmF0dXJl".into())).await;
    assert_eq!(forged.status, 403);
    let log = captured.text();
    // The handlers, the engine's provider calls and the HTTP client are captured.
    assert!(
        log.contains("wrong signature"),
        "the log was captured: {log}"
    );
    // hyper-util's own "connecting to" line is not asserted: tracing caches a
    // callsite's interest process-wide, and a test on another thread hitting it first
    // (with no subscriber) makes it come and go here.
    assert!(!log.contains(TOKEN), "the auth token is in the log");
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{SID}:{TOKEN}"));
    assert!(
        !log.contains(&basic),
        "the Basic credentials are in the log"
    );
}

// ---- signatures as Twilio's validators check them ---------------------------------------

/// Posts one inbound text per URL, each signed over that URL, and expects each taken.
async fn signed_texts_are_accepted(s: &Setup, urls: &[String]) {
    for (n, url) in urls.iter().enumerate() {
        let sid = format!("SMport{n}");
        let params = [
            ("MessageSid", sid.as_str()),
            ("From", PHONE),
            ("To", FROM),
            ("Body", "hello"),
        ];
        let signature = twilio_signature(TOKEN, url, &params);
        let r = webhook(s, "sms", &params, Some(signature)).await;
        assert_eq!(r.status, 200, "signed over {url}: {}", text(&r));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_over_the_url_with_its_default_port_is_accepted() {
    let s = start().await;
    lead(&s, "L1", PHONE, "").await;
    let path = format!("/v1/providers/twilio/{}/sms", s.org);
    signed_texts_are_accepted(
        &s,
        &[
            format!("{PUBLIC_URL}{path}"),
            format!("https://engaged.test:443{path}"),
        ],
    )
    .await;
    assert_eq!(messages_of(&s.ts, &s.write, "L1").await.len(), 2);
    // Another port is another URL; a wrong token is still refused.
    let params = [
        ("MessageSid", "SMport9"),
        ("From", PHONE),
        ("To", FROM),
        ("Body", "hello"),
    ];
    for signature in [
        twilio_signature(TOKEN, &format!("https://engaged.test:8443{path}"), &params),
        twilio_signature(
            "another-token",
            &format!("https://engaged.test:443{path}"),
            &params,
        ),
    ] {
        assert_error(
            &webhook(&s, "sms", &params, Some(signature)).await,
            403,
            "Forbidden",
        );
    }
    assert_eq!(messages_of(&s.ts, &s.write, "L1").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_url_with_a_port_accepts_a_signature_without_it() {
    let public_url = "https://engaged.test:8443";
    let s = start_with(public_url, json!({})).await;
    lead(&s, "L1", PHONE, "").await;
    let path = format!("/v1/providers/twilio/{}/sms", s.org);
    signed_texts_are_accepted(
        &s,
        &[
            format!("{public_url}{path}"),
            format!("https://engaged.test{path}"),
        ],
    )
    .await;
    let params = [("MessageSid", "SMx"), ("MessageStatus", "delivered")];
    let wrong = twilio_signature(TOKEN, &format!("https://engaged.test:443{path}"), &params);
    assert_error(
        &webhook(&s, "sms-status", &params, Some(wrong)).await,
        403,
        "Forbidden",
    );
    assert_eq!(messages_of(&s.ts, &s.write, "L1").await.len(), 2);
}

// ---- settings checked when saved ------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twilio_ids_and_the_sending_rate_are_checked_when_saved() {
    let s = start().await;
    let before = expect(&s.ts.get(&s.admin, "/v1/org").await, 200);
    assert_eq!(before["providers"]["sms"]["ratePerSecond"], json!(10.0));
    let base = |channel: &str, more: Value| {
        let mut provider = json!({"kind": "twilio", "accountSid": SID, "authToken": TOKEN,
            "from": FROM});
        for (k, v) in more.as_object().unwrap() {
            provider[k] = v.clone();
        }
        json!({"providers": {channel: provider}})
    };
    for (body, field) in [
        (
            base("sms", json!({"accountSid": "AC0123456789"})),
            "providers.sms.accountSid",
        ),
        (
            base(
                "voice",
                json!({"accountSid": "SK0123456789abcdef0123456789abcdef"}),
            ),
            "providers.voice.accountSid",
        ),
        (
            base("sms", json!({"from": null, "messagingServiceSid": "MG123"})),
            "providers.sms.messagingServiceSid",
        ),
        (
            base("sms", json!({"ratePerSecond": 0})),
            "providers.sms.ratePerSecond",
        ),
        (
            base("voice", json!({"ratePerSecond": 5000})),
            "providers.voice.ratePerSecond",
        ),
        (
            json!({"providers": {"sms": {"kind": "sandbox", "ratePerSecond": -1}}}),
            "providers.sms.ratePerSecond",
        ),
    ] {
        let r = s.ts.patch(&s.admin, "/v1/org", &body).await;
        assert_error(&r, 400, &format!("Invalid format for field: {field}"));
    }
    assert_eq!(
        expect(&s.ts.get(&s.admin, "/v1/org").await, 200),
        before,
        "a refused PATCH changes nothing"
    );
    let org = set_org(
        &s.ts,
        &s.admin,
        &json!({"providers": {
            "sms": {"kind": "twilio", "accountSid": SID, "authToken": TOKEN,
                "messagingServiceSid": "MG0123456789abcdef0123456789abcdef", "ratePerSecond": 2.5},
            "voice": {"kind": "sandbox"}}}),
    )
    .await;
    assert_eq!(org["providers"]["sms"]["ratePerSecond"], json!(2.5));
    assert_eq!(
        org["providers"]["voice"]["ratePerSecond"],
        json!(null),
        "unlimited"
    );
    assert!(org["providers"]["email"].get("ratePerSecond").is_none());
}

// ---- pacing -----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_enrolments_leaves_at_the_providers_rate() {
    const LEADS: usize = 30;
    const RATE: f64 = 10.0;
    let s = start_with(PUBLIC_URL, json!({"ratePerSecond": RATE})).await;
    let started = std::time::Instant::now();
    for n in 0..LEADS {
        let phone = format!("+1555123{n:04}");
        lead(&s, &format!("L{n}"), &phone, "solar").await;
    }
    let sent = poll(
        "every lead's first step reaches the provider",
        std::time::Duration::from_secs(60),
        || async {
            let sent = s.twilio.sent();
            if sent.len() >= LEADS {
                Ok(sent)
            } else {
                Err(format!("{} sent", sent.len()))
            }
        },
    )
    .await;
    // Slot k is k / rate after the first one, which is no earlier than the first
    // enrolment: the last request cannot arrive sooner (a lower bound only).
    let last = sent.iter().map(|r| r.at).max().unwrap();
    let least = std::time::Duration::from_secs_f64((LEADS - 1) as f64 / RATE);
    assert!(
        last.duration_since(started) >= least,
        "{LEADS} sends at {RATE}/s took {:?}, less than {least:?}",
        last.duration_since(started)
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(s.twilio.sent().len(), LEADS, "each step once");
}

/// Issue 41: only the lead undoes a revocation. After the lead's STOP (through Twilio,
/// every channel), a write key can neither speak as the lead through the sandbox's door
/// nor resubscribe without proof of the lead's new consent; with proof it restores what
/// a keyword does not hold, and the ledger names the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_key_cannot_undo_the_leads_stop() {
    let s = start().await;
    expect(
        &s.ts
            .post(
                &s.write,
                "/v1/leads",
                &json!({"id": "L1", "firstName": "Ada", "phone": PHONE, "email": "ada@example.com"}),
            )
            .await,
        201,
    );
    let stop = [
        ("MessageSid", "SMstop"),
        ("From", PHONE),
        ("To", FROM),
        ("Body", "STOP"),
    ];
    assert_eq!(webhook(&s, "sms", &stop, None).await.status, 200);
    let before = ledger(&s).await;
    let entries = before["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 3, "{before}");
    assert!(entries
        .iter()
        .all(|e| e["status"] == json!("revoked") && e["source"] == json!("keyword")));

    // The sandbox's door is closed while Twilio delivers the lead's texts.
    let start_word =
        s.ts.post(
            &s.write,
            "/v1/inbound/sms",
            &json!({"from": PHONE, "text": "START"}),
        )
        .await;
    assert_eq!(start_word.status, 409, "{}", start_word.text());
    assert!(start_word
        .text()
        .contains("POST /v1/inbound/sms is the sandbox's"));

    // A resubscribe without proof: 409 naming the channels, nothing changed.
    let bare =
        s.ts.post(&s.write, "/v1/leads/L1/resubscribe", &json!({}))
            .await;
    assert_eq!(bare.status, 409, "{}", bare.text());
    assert!(
        bare.text().contains("revoked consent for voice, email"),
        "{}",
        bare.text()
    );
    let grant =
        s.ts.post(
            &s.write,
            "/v1/leads/L1/consent",
            &json!({"channel": "voice", "status": "granted", "source": "api"}),
        )
        .await;
    assert_eq!(grant.status, 409, "{}", grant.text());
    assert_eq!(ledger(&s).await, before, "nothing written");
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    for channel in ["sms", "voice", "email"] {
        assert_eq!(
            lead["subscriptions"][channel],
            json!("unsubscribed"),
            "{lead}"
        );
    }

    // With the lead's words: voice and email come back, SMS waits for the lead's START.
    let proven =
        s.ts.post(
            &s.write,
            "/v1/leads/L1/resubscribe",
            &json!({"proof": {"text": "Ada on the phone: call or email me again"}}),
        )
        .await;
    assert_eq!(expect(&proven, 200)["channels"], json!(["voice", "email"]));
    let after = ledger(&s).await;
    let granted: Vec<&Value> = after["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == json!("granted"))
        .collect();
    assert_eq!(granted.len(), 2, "{after}");
    for entry in granted {
        assert_eq!(entry["source"], json!("api"), "{entry}");
        assert_eq!(
            entry["proof"]["text"],
            json!("Ada on the phone: call or email me again")
        );
        assert!(entry["proof"]["recordedBy"]["keyId"].is_string(), "{entry}");
    }
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(
        lead["subscriptions"]["sms"],
        json!("unsubscribed"),
        "{lead}"
    );
}

async fn ledger(s: &Setup) -> Value {
    expect(&s.ts.get(&s.write, "/v1/leads/L1/consent").await, 200)
}

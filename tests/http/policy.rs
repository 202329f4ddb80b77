//! The organization's consent policy (`consent.md`): `consentRequired`,
//! `optOutKeywords` and `revocationScope` in `GET/PATCH /v1/org`, what they refuse, the
//! organization's own keywords and the scope applied to an inbound revocation, and the
//! gate's `CONSENT_MISSING`.

use serde_json::{json, Value};

use engaged::testkit::twilio::FakeTwilio;
use engaged::testkit::{poll, Org, WAIT};

use crate::answers::*;
use crate::engagement::*;
use crate::requests::*;

const PHONE: &str = "+15551234567";
const EMAIL: &str = "ada@example.com";
const UNSUBSCRIBED_TEXT: &str =
    "Acme Solar: You are unsubscribed and will receive no more messages. Reply START to resubscribe.";

async fn start() -> Org {
    let s = Org::start().await;
    set_business(&s.ts, &s.admin).await;
    s
}

/// Ada ("L1"), reachable by SMS, voice and email.
async fn ada(s: &Org) {
    s.ts.create_lead(
        &s.write,
        &json!({"id": "L1", "firstName": "Ada", "phone": PHONE, "email": EMAIL}),
    )
    .await;
}

async fn org(s: &Org) -> Value {
    expect(&s.ts.get(&s.admin, "/v1/org").await, 200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_org_requires_consent_for_voice_marketing_and_revokes_every_channel() {
    let s = start().await;
    let o = org(&s).await;
    assert_eq!(
        o["consentRequired"],
        json!([{"channel": "voice", "purpose": "marketing"}])
    );
    assert_eq!(o["optOutKeywords"], json!([]));
    assert_eq!(o["revocationScope"], json!("all"));
    let set = set_org(
        &s.ts,
        &s.admin,
        &json!({"consentRequired": [{"channel": "sms", "purpose": "informational"},
                                    {"channel": "voice", "purpose": "marketing"}],
                "optOutKeywords": ["Basta!", "No más"], "revocationScope": "channel"}),
    )
    .await;
    assert_eq!(
        set["consentRequired"],
        json!([{"channel": "sms", "purpose": "informational"},
               {"channel": "voice", "purpose": "marketing"}])
    );
    assert_eq!(set["optOutKeywords"], json!(["basta", "no más"]));
    assert_eq!(set["revocationScope"], json!("channel"));
    assert_eq!(org(&s).await, set);
    let cleared = set_org(&s.ts, &s.admin, &json!({"consentRequired": []})).await;
    assert_eq!(cleared["consentRequired"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_consent_settings_are_400_by_field_and_change_nothing() {
    let s = start().await;
    let before = org(&s).await;
    let too_many: Vec<String> = (0..21).map(|i| format!("word{i}")).collect();
    for (body, field) in [
        (
            json!({"consentRequired": [{"channel": "fax", "purpose": "marketing"}]}),
            "consentRequired",
        ),
        (
            json!({"consentRequired": [{"channel": "voice", "purpose": "sales"}]}),
            "consentRequired",
        ),
        (
            json!({"consentRequired": [{"channel": "voice"}]}),
            "consentRequired",
        ),
        (json!({"consentRequired": null}), "consentRequired"),
        (json!({"optOutKeywords": too_many}), "optOutKeywords"),
        (json!({"optOutKeywords": ["🙂"]}), "optOutKeywords"),
        (
            json!({"optOutKeywords": ["x".repeat(41)]}),
            "optOutKeywords",
        ),
        (json!({"optOutKeywords": "basta"}), "optOutKeywords"),
        (json!({"revocationScope": "lead"}), "revocationScope"),
        (json!({"revocationScope": null}), "revocationScope"),
    ] {
        let r = s.ts.patch(&s.admin, "/v1/org", &body).await;
        let message = assert_error_status(&r, 400);
        assert!(message.contains(field), "{body}: {message}");
    }
    assert_eq!(org(&s).await, before, "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_own_keyword_opts_out_with_one_confirmation() {
    let s = start().await;
    set_org(&s.ts, &s.admin, &json!({"optOutKeywords": ["basta"]})).await;
    ada(&s).await;
    let answer = inbound_sms(&s.ts, &s.write, PHONE, "¡BASTA!").await;
    assert_eq!(answer["optOut"], json!(true));
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(lead["subscriptions"]["sms"], json!("unsubscribed"));
    let sent = wait_outbound(&s.ts, &s.write, "L1", 1).await;
    assert_eq!(texts(&sent), [UNSUBSCRIBED_TEXT]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scope_all_unsubscribes_every_channel_on_an_sms_stop_confirmed_by_sms_only() {
    let s = start().await;
    ada(&s).await;
    let answer = inbound_sms(&s.ts, &s.write, PHONE, "Stop please").await;
    assert_eq!(answer["optOut"], json!(true));
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(
        lead["subscriptions"],
        json!({"sms": "unsubscribed", "voice": "unsubscribed", "email": "unsubscribed"})
    );
    let sent = wait_outbound(&s.ts, &s.write, "L1", 1).await;
    assert_eq!(texts(&sent), [UNSUBSCRIBED_TEXT]);
    assert_eq!(sent[0]["channel"], json!("sms"));
    let entries = expect(&s.ts.get(&s.read, "/v1/leads/L1/consent").await, 200);
    assert_eq!(entries["current"]["email"], json!("revoked"), "{entries}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scope_channel_keeps_email_on_an_sms_stop_and_sms_on_an_email_opt_out() {
    let s = start().await;
    set_org(&s.ts, &s.admin, &json!({"revocationScope": "channel"})).await;
    ada(&s).await;
    inbound_sms(&s.ts, &s.write, PHONE, "STOP").await;
    let lead = get_lead(&s.ts, &s.write, "L1").await;
    assert_eq!(lead["subscriptions"]["sms"], json!("unsubscribed"));
    assert_eq!(lead["subscriptions"]["email"], json!("subscribed"));
    s.ts.create_lead(
        &s.write,
        &json!({"id": "L2", "phone": "+15557654321", "email": "grace@example.com"}),
    )
    .await;
    let r = inbound_email(&s.ts, &s.write, "grace@example.com", "Unsubscribe", "").await;
    expect(&r, 200);
    let lead = get_lead(&s.ts, &s.write, "L2").await;
    assert_eq!(lead["subscriptions"]["email"], json!("unsubscribed"));
    assert_eq!(lead["subscriptions"]["sms"], json!("subscribed"), "{lead}");
}

// ---- the gate's CONSENT_MISSING ---------------------------------------------------------

const SID: &str = "AC0123456789abcdef0123456789abcdef";
const TOKEN: &str = "policy-auth-token";

/// A new organization (`consentRequired` voice/marketing) whose voice provider is the
/// fake Twilio, with profiles `first` and `again` of one call step each.
async fn with_calls() -> (Org, FakeTwilio) {
    let twilio = FakeTwilio::start().await;
    let s = Org::start_with(|c| c.public_url = Some("https://engaged.test".into())).await;
    set_business(&s.ts, &s.admin).await;
    set_org(
        &s.ts,
        &s.admin,
        &json!({"providers": {"voice": {"kind": "twilio", "accountSid": SID, "authToken": TOKEN,
            "from": "+15550100000", "baseUrl": twilio.base_url}}}),
    )
    .await;
    for name in ["first", "again"] {
        let step = json!({"after": "0s", "channel": "voice", "text": "Hi {{firstName}}"});
        put_profile(&s.ts, &s.admin, name, &profile_with(json!([step]))).await;
    }
    (s, twilio)
}

/// Waits for the `n`-th `COMPLIANCE_BLOCKED` event of L1; returns its data.
async fn wait_blocked(s: &Org, n: usize) -> Value {
    poll(&format!("{n} block(s)"), WAIT, || async move {
        let blocked = events_of_type(&s.ts, &s.write, "L1", "COMPLIANCE_BLOCKED").await;
        match blocked.get(n - 1) {
            Some(event) => Ok(event["data"].clone()),
            None => Err(format!("{blocked:?}")),
        }
    })
    .await
}

async fn consent(s: &Org, status: &str) {
    let body = json!({"channel": "voice", "status": status, "source": "web_form",
                      "proof": {"text": "I agree to calls from Acme Solar"}});
    expect(
        &s.ts.post(&s.write, "/v1/leads/L1/consent", &body).await,
        201,
    );
}

async fn enrol(s: &Org, profile: &str) {
    let body = json!({"customerProfile": profile});
    expect(&s.ts.patch(&s.write, "/v1/leads/L1", &body).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_step_needs_consent_dials_once_granted_and_is_blocked_again_after_revocation() {
    let (s, twilio) = with_calls().await;
    s.ts.create_lead(
        &s.write,
        &json!({"id": "L1", "firstName": "Ada", "phone": PHONE, "customerProfile": "first"}),
    )
    .await;
    assert_eq!(
        wait_blocked(&s, 1).await,
        json!({"reason": "CONSENT_MISSING", "source": "configuration", "channel": "voice", "step": 1})
    );
    assert!(twilio.calls().is_empty());
    consent(&s, "granted").await;
    enrol(&s, "again").await;
    poll("the call dialled", WAIT, || async {
        match twilio.calls().len() {
            1 => Ok(()),
            n => Err(format!("{n} calls")),
        }
    })
    .await;
    consent(&s, "revoked").await;
    enrol(&s, "first").await;
    assert_eq!(
        wait_blocked(&s, 2).await["reason"],
        json!("CONSENT_MISSING")
    );
    assert_eq!(twilio.calls().len(), 1, "no second call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informational_step_an_empty_policy_and_a_reply_are_not_held_to_it() {
    let (s, twilio) = with_calls().await;
    let step = json!({"after": "0s", "channel": "voice", "text": "Your visit is at 9", "purpose": "informational"});
    let p = put_profile(&s.ts, &s.admin, "notice", &profile_with(json!([step]))).await;
    assert_eq!(p["cadence"][0]["purpose"], json!("informational"));
    let bad = json!({"after": "0s", "channel": "voice", "text": "Hi", "purpose": "sales"});
    let r =
        s.ts.put(&s.admin, "/v1/profiles/bad", &profile_with(json!([bad])))
            .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let message = r.json()["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("cadence[0].purpose"), "{message}");
    s.ts.create_lead(
        &s.write,
        &json!({"id": "L1", "firstName": "Ada", "phone": PHONE, "customerProfile": "notice"}),
    )
    .await;
    poll("the informational call dialled", WAIT, || async {
        match twilio.calls().len() {
            1 => Ok(()),
            n => Err(format!("{n} calls")),
        }
    })
    .await;
    // SMS marketing required: a message to a lead who never wrote is blocked, a reply to
    // one who did is not.
    set_org(
        &s.ts,
        &s.admin,
        &json!({"consentRequired": [{"channel": "sms", "purpose": "marketing"}]}),
    )
    .await;
    let send = json!({"owner": "user", "channel": "sms", "content": {"text": "Any questions?"}});
    let r = expect(
        &s.ts.post(&s.write, "/v1/leads/L1/messages", &send).await,
        200,
    );
    assert_eq!(r["outcome"], json!("blocked"), "{r}");
    assert_eq!(r["event"]["data"]["reason"], json!("CONSENT_MISSING"));
    inbound_sms(&s.ts, &s.write, PHONE, "What does it cost?").await;
    let r = s.ts.post(&s.write, "/v1/leads/L1/messages", &send).await;
    assert_eq!(expect(&r, 201)["outcome"], json!("sent"));
    // No policy: a call step dials without consent.
    set_org(&s.ts, &s.admin, &json!({"consentRequired": []})).await;
    enrol(&s, "first").await;
    poll("the second call dialled", WAIT, || async {
        match twilio.calls().len() {
            2 => Ok(()),
            n => Err(format!("{n} calls")),
        }
    })
    .await;
}

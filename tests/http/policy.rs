//! The organization's consent policy (`consent.md`): `consentRequired`,
//! `optOutKeywords` and `revocationScope` in `GET/PATCH /v1/org`, what they refuse, the
//! organization's own keywords and the scope applied to an inbound revocation, and the
//! gate's `CONSENT_MISSING`.

use serde_json::{json, Value};

use engaged::testkit::Org;

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

//! The console's settings (admins): the organization saved as `PATCH /v1/org` saves it,
//! a refusal beside its field changing nothing; people added (a password shown once
//! that signs in), a role changed, disabled; API keys created (shown once) and revoked;
//! webhook endpoints added (their secret shown once) and removed; agents and viewers
//! refused; another organization's person, key or endpoint not found.

use hyper::Method;
use serde_json::json;

use engaged::store::Reader;
use engaged::testkit::console::Session;
use engaged::testkit::{Org, TestServer};

use crate::answers::*;

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
    let posted = ts
        .console(
            Method::POST,
            path,
            Some(&s.cookie),
            Some(&ts.origin()),
            &fields,
        )
        .await;
    // A form that shows something (a refusal, a result, a secret once) redirects to
    // its page, which shows it (Post/Redirect/Get); a plain save to `?saved=1`.
    let to = posted
        .headers
        .get("location")
        .and_then(|l| l.to_str().ok())
        .map(str::to_string);
    match to {
        Some(to) if posted.status == 303 && !to.contains("saved=1") => {
            ts.console(Method::GET, &to, Some(&s.cookie), None, &[])
                .await
        }
        _ => posted,
    }
}

fn org_form<'a>(zone: &'a str, country: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("business-name", "Acme Solar"),
        ("help-text", "Call 512-555-0100"),
        ("time-zone", zone),
        ("default-country", country),
        ("quiet-start", "21:00"),
        ("quiet-end", "08:00"),
        ("coupled", "on"),
        ("day", "mon"),
        ("day", "tue"),
        ("day", "wed"),
        ("day", "thu"),
        ("day", "fri"),
        ("holidays", "2026-12-25 2027-01-01"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_organization_saves_like_the_api_and_a_refusal_changes_nothing() {
    let org = Org::start().await;
    let ts = &org.ts;
    let boss = admin_session(ts).await;
    let saved = post(
        ts,
        &boss,
        "/console/settings/organization",
        &org_form("America/Chicago", "us"),
    )
    .await;
    assert_eq!(saved.status, 303, "{}", saved.text());
    let settings = expect(&ts.get(&org.admin, "/v1/org").await, 200);
    assert_eq!(settings["timeZone"], json!("America/Chicago"));
    assert_eq!(settings["defaultCountry"], json!("US"));
    assert_eq!(settings["business"]["name"], json!("Acme Solar"));
    assert_eq!(
        settings["quietHours"],
        json!({"start": "21:00", "end": "08:00"})
    );
    assert_eq!(settings["smsVoiceOptOutCoupled"], json!(true));
    assert_eq!(
        settings["followUpDays"],
        json!(["mon", "tue", "wed", "thu", "fri"]),
        "{settings}"
    );
    assert_eq!(settings["holidays"], json!(["2026-12-25", "2027-01-01"]));

    let refused = post(
        ts,
        &boss,
        "/console/settings/organization",
        &org_form("Mars/Olympus", "us"),
    )
    .await;
    assert_eq!(refused.status, 200, "the page again, with the refusal");
    let page = refused.text();
    assert!(
        page.contains("Choose a time zone from the list") && !page.contains("Invalid format"),
        "the refusal in words beside the field: {page}"
    );
    assert!(
        page.contains("value=\"Mars/Olympus\""),
        "what was typed stays: {page}"
    );
    assert_eq!(
        expect(&ts.get(&org.admin, "/v1/org").await, 200)["timeZone"],
        json!("America/Chicago")
    );
}

/// Three fields wrong at once: one save shows all three refusals, each beside its
/// field in words, with what was typed kept, and saves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_organization_form_shows_every_refusal_of_a_save_at_once() {
    let org = Org::start().await;
    let ts = &org.ts;
    let boss = admin_session(ts).await;
    let mut form = org_form("Mars/Olympus", "Atlantis");
    form.retain(|(name, _)| !name.starts_with("quiet-"));
    form.extend([("quiet-start", "late"), ("quiet-end", "8am")]);
    let refused = post(ts, &boss, "/console/settings/organization", &form).await;
    assert_eq!(refused.status, 200, "the page again, with the refusals");
    let page = refused.text();
    assert!(page.contains("Not done: 3 fields need a change."), "{page}");
    for words in [
        "Choose a time zone from the list",
        "Use a time like 9:00 PM.",
    ] {
        assert!(page.contains(words), "{words}: {page}");
    }
    assert!(
        page.contains("value=\"Atlantis\"") && page.contains("value=\"late\""),
        "what was typed stays: {page}"
    );
    let settings = expect(&ts.get(&org.admin, "/v1/org").await, 200);
    assert!(
        settings.get("timeZone").is_none_or(|z| z != "Mars/Olympus"),
        "{settings}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_organization_form_reads_what_a_person_types_in_one_save() {
    let org = Org::start().await;
    let ts = &org.ts;
    let boss = admin_session(ts).await;
    let mut form = org_form("Central Time", "USA");
    form.retain(|(name, _)| !name.starts_with("quiet-"));
    form.extend([("quiet-start", "9pm"), ("quiet-end", "8:00 AM")]);
    let saved = post(ts, &boss, "/console/settings/organization", &form).await;
    assert_eq!(saved.status, 303, "{}", saved.text());
    let settings = expect(&ts.get(&org.admin, "/v1/org").await, 200);
    assert_eq!(settings["timeZone"], json!("America/Chicago"));
    assert_eq!(settings["defaultCountry"], json!("US"));
    assert_eq!(
        settings["quietHours"],
        json!({"start": "21:00", "end": "08:00"})
    );

    let mut late = org_form("UTC", "US");
    late.retain(|(name, _)| !name.starts_with("quiet-"));
    late.extend([("quiet-start", "late"), ("quiet-end", "8am")]);
    let refused = post(ts, &boss, "/console/settings/organization", &late).await;
    assert_eq!(refused.status, 200, "the page again, with the refusal");
    assert!(refused.text().contains("Use a time like 9:00 PM."));
    // The API keeps its exact forms.
    let api = ts
        .patch(&org.admin, "/v1/org", &json!({"timeZone": "Central Time"}))
        .await;
    assert_eq!(api.status, 400, "{}", api.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_and_keys_are_managed_within_the_organization() {
    let org = Org::start().await;
    let ts = &org.ts;
    let boss = admin_session(ts).await;
    let added = post(
        ts,
        &boss,
        "/console/settings/people",
        &[
            ("email", "pat@example.com"),
            ("name", "Pat"),
            ("role", "agent"),
        ],
    )
    .await;
    assert_eq!(added.status, 200);
    let page = added.text();
    let at = page
        .find("<code class=\"secret\">")
        .expect("the password, once")
        + "<code class=\"secret\">".len();
    let password = page[at..at + page[at..].find('<').expect("end")].to_string();
    let pat = ts.sign_in("pat@example.com", &password).await;
    assert!(!pat.cookie.is_empty());
    assert!(
        !settings_page(ts, &boss, "people").await.contains(&password),
        "shown only once"
    );

    let changed = post(
        ts,
        &boss,
        "/console/settings/role",
        &[("email", "pat@example.com"), ("role", "viewer")],
    )
    .await;
    assert!(
        changed.text().contains("Pat is now viewer."),
        "{}",
        changed.text()
    );
    let disabled = post(
        ts,
        &boss,
        "/console/settings/disable",
        &[("email", "pat@example.com")],
    )
    .await;
    assert!(disabled.text().contains("Pat is disabled"));
    let page = ts
        .console(Method::GET, "/console/inbox", Some(&pat.cookie), None, &[])
        .await;
    assert_eq!(page.status, 303, "a disabled person's session ended");

    let created = post(
        ts,
        &boss,
        "/console/settings/keys",
        &[("name", "crm-sync"), ("scope", "read")],
    )
    .await;
    let page = created.text();
    let at = page.find("<code class=\"secret\">").expect("the key, once")
        + "<code class=\"secret\">".len();
    let key = page[at..at + page[at..].find('<').expect("end")].to_string();
    assert_eq!(
        ts.get(&key, "/v1/leads/search").await.status,
        200,
        "the new key works"
    );
    let id = {
        let read = ts.server.store().read().expect("read");
        engaged::domain::records::auth::keys_of(
            &read,
            &read
                .key(&engaged::domain::records::auth::hash_key(&key))
                .unwrap()
                .unwrap()
                .org_id,
        )
        .unwrap()
        .into_iter()
        .find(|k| k.name == "crm-sync")
        .expect("the key")
        .id
    };
    let revoked = post(ts, &boss, "/console/settings/revoke", &[("id", &id)]).await;
    assert!(revoked.text().contains("is revoked"));
    assert_eq!(
        ts.get(&key, "/v1/leads/search").await.status,
        403,
        "a revoked key is refused"
    );

    // Another organization's admin reaches neither.
    let password = ts.user("globex", "lee@example.com", "Lee", "admin").await;
    let lee = ts.sign_in("lee@example.com", &password).await;
    let other = post(
        ts,
        &lee,
        "/console/settings/role",
        &[("email", "boss@example.com"), ("role", "viewer")],
    )
    .await;
    assert_eq!(other.status, 404);
    let other = post(ts, &lee, "/console/settings/revoke", &[("id", &id)]).await;
    assert_eq!(other.status, 404);
}

/// The settings page of `section` (`people`, `webhooks`, ...).
async fn settings_page(ts: &TestServer, s: &Session, section: &str) -> String {
    let path = format!("/console/settings/{section}");
    ts.console(Method::GET, &path, Some(&s.cookie), None, &[])
        .await
        .text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_and_viewers_are_refused_settings() {
    let org = Org::start().await;
    let ts = &org.ts;
    for role in ["agent", "viewer"] {
        let email = format!("{role}@example.com");
        let password = ts.user("acme", &email, role, role).await;
        let s = ts.sign_in(&email, &password).await;
        let page = ts
            .console(Method::GET, "/console/settings", Some(&s.cookie), None, &[])
            .await;
        assert_eq!(page.status, 403, "{role}");
        let saved = post(
            ts,
            &s,
            "/console/settings/organization",
            &org_form("UTC", ""),
        )
        .await;
        assert_eq!(saved.status, 403, "{role}");
        let key = post(
            ts,
            &s,
            "/console/settings/keys",
            &[("name", "x"), ("scope", "admin")],
        )
        .await;
        assert_eq!(key.status, 403, "{role}");
    }
    assert_eq!(
        expect(&ts.get(&org.admin, "/v1/org").await, 200)["timeZone"],
        json!(null)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_assistant_and_a_provider_are_tested_from_settings() {
    use engaged::testkit::model::{FakeModel, Step};
    use engaged::testkit::smtp::SmtpSink;
    let org = Org::start_with(|c| c.public_url = Some("https://engaged.test".into())).await;
    let ts = &org.ts;
    let boss = admin_session(ts).await;
    let model = FakeModel::start().await;
    crate::engagement::set_org(ts, &org.admin, &model.settings()).await;
    model.push(Step::text("Yes, I am here."));
    let tested = post(ts, &boss, "/console/settings/assistant-test", &[]).await;
    assert!(
        tested.text().contains("The assistant answered in"),
        "{}",
        tested.text()
    );
    assert!(tested.text().contains("Yes, I am here."));
    model.push(Step::status(500));
    model.push(Step::status(500));
    model.push(Step::status(500));
    let failed = post(ts, &boss, "/console/settings/assistant-test", &[]).await;
    assert!(
        failed.text().contains("The assistant did not answer"),
        "{}",
        failed.text()
    );

    let sent = post(
        ts,
        &boss,
        "/console/settings/send-test",
        &[("channel", "sms"), ("to", "+1 512 555 0100")],
    )
    .await;
    assert!(sent.text().contains("sandbox took it"), "{}", sent.text());
    let sink = SmtpSink::start().await;
    crate::engagement::set_org(
        ts,
        &org.admin,
        &json!({"providers": {"email": {"kind": "smtp", "host": "127.0.0.1", "port": sink.port,
            "security": "none", "from": "sales@solar.example"}}}),
    )
    .await;
    let sent = post(
        ts,
        &boss,
        "/console/settings/send-test",
        &[("channel", "email"), ("to", "me@example.com")],
    )
    .await;
    assert!(sent.text().contains("smtp took it"), "{}", sent.text());
    assert!(sink
        .messages()
        .iter()
        .any(|m| m.contains("A test from engaged")));
    let bad = post(
        ts,
        &boss,
        "/console/settings/send-test",
        &[("channel", "sms"), ("to", "nope")],
    )
    .await;
    assert_eq!(bad.status, 200, "the page again, with the refusal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_webhook_delivery_is_shown_and_retried_from_settings() {
    use engaged::testkit::{Reply, WebhookReceiver};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let org = Org::start().await;
    let ts = &org.ts;
    let boss = admin_session(ts).await;
    // The first delivery fails at every attempt (the dispatcher's own retries too) until
    // the receiver is healed; every other delivery succeeds.
    let healed = Arc::new(AtomicBool::new(false));
    let failing: Arc<Mutex<Option<String>>> = Arc::default();
    let (heal, first) = (healed.clone(), failing.clone());
    let hooks = WebhookReceiver::with_policy(Arc::new(move |received, _| {
        let id = received.id().to_string();
        let mut first = first.lock().unwrap();
        let failing = first.get_or_insert_with(|| id.clone());
        if *failing == id && !heal.load(Ordering::SeqCst) {
            Reply::status(500)
        } else {
            Reply::ok()
        }
    }))
    .await;
    hooks.register(ts, &org.admin).await;
    ts.create_lead(&org.write, &json!({"id": "w-1", "phone": "+15125550101"}))
        .await;
    ts.send_json(
        Method::POST,
        &org.write,
        "/v1/inbound/sms",
        &json!({"from": "+15125550101", "text": "STOP"}),
    )
    .await;
    hooks.wait_for(1).await;
    let page = engaged::testkit::poll(
        "the failed attempt is shown",
        engaged::testkit::WAIT,
        || async {
            let page = settings_page(ts, &boss, "webhooks").await;
            if page.contains("HTTP 500") {
                Ok(page)
            } else {
                Err("no HTTP 500 yet".to_string())
            }
        },
    )
    .await;
    let at = page
        .find("name=\"delivery\" value=\"")
        .expect("a Retry form")
        + "name=\"delivery\" value=\"".len();
    let delivery = page[at..at + page[at..].find('"').expect("end")].to_string();
    let at = page
        .find("name=\"endpoint\" value=\"")
        .expect("its endpoint")
        + "name=\"endpoint\" value=\"".len();
    let endpoint = page[at..at + page[at..].find('"').expect("end")].to_string();
    // Healed, then retried by hand: the delivery goes through and its Retry leaves the
    // page (the dispatcher's own retry, every attempt failing until now, cannot have
    // taken it first).
    healed.store(true, Ordering::SeqCst);
    let retried = post(
        ts,
        &boss,
        "/console/settings/retry-delivery",
        &[("endpoint", &endpoint), ("delivery", &delivery)],
    )
    .await;
    assert!(
        retried.text().contains("The delivery is queued again."),
        "{}",
        retried.text()
    );
    let form = format!("name=\"delivery\" value=\"{delivery}\"");
    engaged::testkit::poll(
        "the retried delivery succeeds",
        engaged::testkit::WAIT,
        || async {
            let page = settings_page(ts, &boss, "webhooks").await;
            if page.contains(&form) {
                Err("still failing".to_string())
            } else {
                Ok(())
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_endpoint_is_added_with_its_secret_shown_once_and_removed() {
    use engaged::testkit::WebhookReceiver;
    let org = Org::start().await;
    let ts = &org.ts;
    let boss = admin_session(ts).await;

    let refused = post(
        ts,
        &boss,
        "/console/settings/webhooks",
        &[("url", "ftp://nope")],
    )
    .await;
    assert_eq!(refused.status, 200, "the page again, with the refusal");
    assert!(
        refused.text().contains("Invalid format for field: url"),
        "{}",
        refused.text()
    );
    let refused = post(
        ts,
        &boss,
        "/console/settings/webhooks",
        &[("url", "https://crm.example/h"), ("events", "lead.nothing")],
    )
    .await;
    assert_eq!(refused.status, 200, "the page again, with the refusal");
    assert!(refused.text().contains("Invalid format for field: events"));
    let listed = expect(&ts.get(&org.admin, "/v1/webhooks").await, 200);
    assert_eq!(listed["webhooks"], json!([]), "a refusal adds nothing");

    let hooks = WebhookReceiver::ok().await;
    let added = post(
        ts,
        &boss,
        "/console/settings/webhooks",
        &[("url", &hooks.url), ("events", "lead.opted_out")],
    )
    .await;
    let page = added.text();
    assert_eq!(added.status, 200, "{page}");
    let marker = "<code class=\"secret\">";
    let at = page.find(marker).expect("the secret") + marker.len();
    let secret = page[at..at + page[at..].find('<').expect("its end")].to_string();
    assert!(
        secret.starts_with("whsec_"),
        "the secret shown once: {page}"
    );
    assert!(
        !settings_page(ts, &boss, "webhooks").await.contains(&secret),
        "never shown again"
    );
    let listed = expect(&ts.get(&org.admin, "/v1/webhooks").await, 200);
    assert_eq!(listed["webhooks"][0]["url"], json!(hooks.url));
    assert_eq!(listed["webhooks"][0]["events"], json!(["lead.opted_out"]));

    ts.create_lead(&org.write, &json!({"id": "w-1", "phone": "+15125550101"}))
        .await;
    ts.send_json(
        Method::POST,
        &org.write,
        "/v1/inbound/sms",
        &json!({"from": "+15125550101", "text": "STOP"}),
    )
    .await;
    let delivered = hooks.wait_for(1).await;
    crate::webhooks::verify(&secret, &delivered[0]);

    let id = str_of(&listed["webhooks"][0]["id"]).to_string();
    let globex = ts.key("globex", "admin").await;
    let theirs = expect(
        &ts.post(
            &globex,
            "/v1/webhooks",
            &json!({"url": "https://globex.example/h"}),
        )
        .await,
        201,
    );
    let foreign = post(
        ts,
        &boss,
        "/console/settings/remove-webhook",
        &[("id", str_of(&theirs["id"]))],
    )
    .await;
    assert_eq!(foreign.status, 404, "another organization's endpoint");
    let removed = post(
        ts,
        &boss,
        "/console/settings/remove-webhook",
        &[("id", &id)],
    )
    .await;
    assert!(
        removed.text().contains("The endpoint is removed."),
        "{}",
        removed.text()
    );
    let listed = expect(&ts.get(&org.admin, "/v1/webhooks").await, 200);
    assert_eq!(listed["webhooks"], json!([]));
    let theirs_left = expect(&ts.get(&globex, "/v1/webhooks").await, 200);
    assert_eq!(theirs_left["webhooks"].as_array().map(Vec::len), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_assistant_and_the_providers_are_saved_with_write_only_secrets() {
    let org = Org::start_with(|c| c.public_url = Some("https://engaged.test".into())).await;
    let ts = &org.ts;
    let boss = admin_session(ts).await;
    let saved = post(
        ts,
        &boss,
        "/console/settings/assistant",
        &[
            ("op", "save"),
            ("assistant-url", "http://127.0.0.1:8080/v1"),
            ("assistant-model", "llama"),
            ("assistant-key", "sk-secret"),
            ("assistant-timeout", "9000"),
        ],
    )
    .await;
    assert_eq!(saved.status, 303, "{}", saved.text());
    let settings = expect(&ts.get(&org.admin, "/v1/org").await, 200);
    assert_eq!(settings["assistant"]["model"], json!("llama"));
    assert_eq!(settings["assistant"]["timeoutMs"], json!(9000));
    assert!(
        !settings_page(ts, &boss, "assistant")
            .await
            .contains("sk-secret"),
        "a secret is never shown"
    );

    let providers = [
        ("sms-kind", "twilio"),
        ("sms-accountSid", "AC0123456789abcdef0123456789abcdef"),
        ("sms-authToken", "twilio-token"),
        ("sms-from", "+15550100000"),
        ("voice-kind", "sandbox"),
        ("email-kind", "smtp"),
        ("email-host", "127.0.0.1"),
        ("email-port", "2525"),
        ("email-security", "none"),
        ("email-password", "mail-secret"),
        ("email-from", "sales@solar.example"),
    ];
    let saved = post(ts, &boss, "/console/settings/providers", &providers).await;
    assert_eq!(saved.status, 303, "{}", saved.text());
    let settings = expect(&ts.get(&org.admin, "/v1/org").await, 200);
    assert_eq!(
        settings["providers"]["sms"]["kind"],
        json!("twilio"),
        "{settings}"
    );
    assert_eq!(settings["providers"]["sms"]["authTokenSet"], json!(true));
    assert_eq!(settings["providers"]["email"]["kind"], json!("smtp"));
    let page = settings_page(ts, &boss, "providers").await;
    assert!(
        !page.contains("twilio-token") && !page.contains("mail-secret"),
        "secrets are write-only"
    );

    // Saved again without the secrets: they are kept.
    let again: Vec<(&str, &str)> = providers
        .iter()
        .copied()
        .filter(|(k, _)| *k != "sms-authToken" && *k != "email-password")
        .collect();
    assert_eq!(
        post(ts, &boss, "/console/settings/providers", &again)
            .await
            .status,
        303
    );
    let settings = expect(&ts.get(&org.admin, "/v1/org").await, 200);
    assert_eq!(
        settings["providers"]["sms"]["authTokenSet"],
        json!(true),
        "{settings}"
    );

    let mut bad = again.clone();
    bad.retain(|(k, _)| *k != "email-port");
    bad.push(("email-port", "ninety"));
    let refused = post(ts, &boss, "/console/settings/providers", &bad).await;
    assert_eq!(refused.status, 200, "the page again, with the refusal");
    assert!(
        refused
            .text()
            .contains("Invalid format for field: providers.email.port"),
        "{}",
        refused.text()
    );

    let removed = post(
        ts,
        &boss,
        "/console/settings/assistant",
        &[("op", "remove")],
    )
    .await;
    assert_eq!(removed.status, 303);
    assert_eq!(
        expect(&ts.get(&org.admin, "/v1/org").await, 200)["assistant"],
        json!(null)
    );
}

/// "Send test" reads a phone typed any way in the organization's `defaultCountry`; a
/// number it cannot read, or a provider's refusal, is shown on the settings page (with
/// its navigation) beside the field, never on a bare error page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_test_reads_a_local_phone_and_shows_refusals_on_the_settings_page() {
    async fn send(ts: &TestServer, s: &Session, to: &str) -> engaged::testkit::Response {
        post(
            ts,
            s,
            "/console/settings/send-test",
            &[("channel", "sms"), ("to", to)],
        )
        .await
    }
    let org = Org::start().await;
    let ts = &org.ts;
    let boss = admin_session(ts).await;
    // No default country yet: a number without + cannot be read, and the page says how.
    let refused = send(ts, &boss, "(512) 555-0100").await;
    assert_eq!(refused.status, 200, "the page again, with the refusal");
    let text = refused.text();
    assert!(
        text.contains("Write the number with its country code"),
        "{text}"
    );
    assert!(
        text.contains("id=\"test-to-error\""),
        "beside the field: {text}"
    );
    assert!(
        text.contains("Sign out") && text.contains("Providers"),
        "the whole page: {text}"
    );
    assert!(
        text.contains("value=\"(512) 555-0100\""),
        "what was typed stays"
    );

    expect(
        &ts.patch(&org.admin, "/v1/org", &json!({"defaultCountry": "US"}))
            .await,
        200,
    );
    let sent = send(ts, &boss, "(512) 555-0100").await;
    assert_eq!(sent.status, 200);
    assert!(sent.text().contains("sandbox took it"), "{}", sent.text());
    let bad = send(ts, &boss, "12").await;
    assert_eq!(bad.status, 200, "the page again, with the refusal");
    assert!(
        bad.text().contains("This is not a phone number"),
        "{}",
        bad.text()
    );
    assert!(bad.text().contains("Sign out"));
}

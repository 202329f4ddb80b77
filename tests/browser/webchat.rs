//! The web chat widget in a real browser: a page served from another origin embeds
//! `/webchat.js`; the visitor chats with the test kit's fake model, leaves a contact with
//! the consent box ticked (a lead and its ledger entry), comes back and the chat
//! resumes; a page of a refused origin gets no chat; the widget fits 360 px. The widget
//! lives in a shadow root, so the test reaches it through the page's script.

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{json, Value};

use engaged::testkit::browser::Browser;
use engaged::testkit::model::{FakeModel, Step};
use engaged::testkit::serve::serve;
use engaged::testkit::{poll, TestServer, WAIT};

/// Serves a page embedding the widget of `base` for `org`; answers the page's origin.
async fn site(base: String, org: String) -> String {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Shop</title></head><body><h1>Solar shop</h1>\
         <script src=\"{base}/webchat.js\" data-org=\"{org}\" async></script></body></html>"
    );
    let addr = serve(move |_, _| {
        let page = page.clone();
        async move {
            let mut response = hyper::Response::new(Full::new(Bytes::from(page)));
            response.headers_mut().insert(
                "content-type",
                hyper::header::HeaderValue::from_static("text/html; charset=utf-8"),
            );
            Some(response)
        }
    })
    .await;
    format!("http://127.0.0.1:{}", addr.port())
}

/// The widget's element by CSS `selector` inside its shadow root, as script.
fn within(selector: &str, then: &str) -> String {
    format!(
        "const host = document.querySelector('[data-engaged-webchat]'); \
         const el = host && host.shadowRoot.querySelector({selector:?}); {then}"
    )
}

async fn log_text(browser: &Browser) -> String {
    browser
        .run(&within(".log", "return el ? el.textContent : '';"))
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn wait_log(browser: &Browser, text: &str) {
    poll(&format!("{text:?} in the chat"), WAIT, || async move {
        let log = log_text(browser).await;
        if log.contains(text) {
            Ok(())
        } else {
            Err(log)
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_visitor_chats_leaves_a_contact_with_consent_and_resumes_at_360_px() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let org = server.org_id("acme").await;
    let model = FakeModel::start().await;
    let origin = site(server.base.clone(), org.clone()).await;
    let put = server
        .put(
            &admin,
            "/v1/profiles/web",
            &json!({"instructions": "You are Sam from Acme Solar."}),
        )
        .await;
    assert_eq!(put.status, 200, "{}", put.text());
    let set = server.patch(&admin, "/v1/org", &model.settings()).await;
    assert_eq!(set.status, 200, "{}", set.text());
    let set = server
        .patch(
            &admin,
            "/v1/org",
            &json!({"webchat": {"enabled": true, "allowedOrigins": [origin], "profile": "web",
                    "greeting": "Hi! Questions about solar?",
                    "consentText": "I agree that Acme Solar may text me."}}),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.text());

    let browser = Browser::phone(&server).await;
    browser
        .client
        .goto(&format!("{origin}/"))
        .await
        .expect("the site");
    poll("the widget", WAIT, || async {
        let found = browser.run(&within(".launch", "return !!el;")).await;
        if found == json!(true) {
            Ok(())
        } else {
            Err(found.to_string())
        }
    })
    .await;
    browser
        .run(&within(".launch", "el.click(); return true;"))
        .await;
    wait_log(&browser, "Hi! Questions about solar?").await;
    // The panel fits the phone's 360 px.
    let width = browser
        .run(&within(
            ".panel",
            "return el.getBoundingClientRect().right - el.getBoundingClientRect().left;",
        ))
        .await;
    assert!(width.as_f64().is_some_and(|w| w <= 360.0), "{width}");

    model.push(Step::text("Solar pays back in <b>7</b> years."));
    browser
        .run(&within(
            "textarea",
            "el.value = 'When does solar pay back?'; el.closest('form').requestSubmit(); return true;",
        ))
        .await;
    wait_log(&browser, "Solar pays back in <b>7</b> years.").await;
    // Text, never HTML: no element came from the assistant's words.
    let bold = browser.run(&within(".log b", "return !!el;")).await;
    assert_eq!(bold, json!(false));

    // The contact form with the consent box ticked.
    browser
        .run(&within(
            ".more",
            "el.click(); const r = host.shadowRoot; \
             r.querySelector('input[name=name]').value = 'Dana Reyes'; \
             r.querySelector('input[name=email]').value = 'dana@example.com'; \
             r.querySelector('input[name=consent]').checked = true; \
             r.querySelector('form.contact').requestSubmit(); return true;",
        ))
        .await;
    wait_log(&browser, "Thanks!").await;
    let key = server.key("acme", "read").await;
    let leads = server
        .get(
            &key,
            "/v1/leads?createdSince=2000-01-01T00%3A00%3A00.000000Z",
        )
        .await
        .json();
    let lead = leads["leads"][0].clone();
    assert_eq!(lead["email"], json!("dana@example.com"), "{leads}");
    let id = lead["id"].as_str().expect("id");
    let ledger: Value = server
        .get(&key, &format!("/v1/leads/{id}/consent"))
        .await
        .json();
    let entry = &ledger["entries"][0];
    assert_eq!(entry["source"], json!("webchat"), "{ledger}");
    assert_eq!(
        entry["proof"]["text"],
        json!("I agree that Acme Solar may text me.")
    );
    assert_eq!(entry["proof"]["url"], json!(format!("{origin}/")));

    // A return visit resumes the chat: the transcript comes back.
    browser
        .client
        .goto(&format!("{origin}/?again"))
        .await
        .expect("the site again");
    poll("the widget again", WAIT, || async {
        let found = browser.run(&within(".launch", "return !!el;")).await;
        if found == json!(true) {
            Ok(())
        } else {
            Err(found.to_string())
        }
    })
    .await;
    browser
        .run(&within(".launch", "el.click(); return true;"))
        .await;
    wait_log(&browser, "When does solar pay back?").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_an_origin_not_allowed_gets_no_chat() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let org = server.org_id("acme").await;
    let origin = site(server.base.clone(), org.clone()).await;
    let set = server
        .patch(
            &admin,
            "/v1/org",
            &json!({"webchat": {"enabled": true, "allowedOrigins": ["https://shop.example"]}}),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.text());
    let browser = Browser::open(&server).await;
    browser
        .client
        .goto(&format!("{origin}/"))
        .await
        .expect("the site");
    poll("the widget", WAIT, || async {
        let found = browser.run(&within(".launch", "return !!el;")).await;
        if found == json!(true) {
            Ok(())
        } else {
            Err(found.to_string())
        }
    })
    .await;
    browser
        .run(&within(".launch", "el.click(); return true;"))
        .await;
    // The browser refuses the answer (no CORS header): the widget says the chat is
    // not available on this page.
    poll("the refusal in words", WAIT, || async {
        let status = browser
            .run(&within(".status", "return el ? el.textContent : '';"))
            .await;
        match status.as_str() {
            Some(s) if !s.is_empty() => Ok(()),
            _ => Err(status.to_string()),
        }
    })
    .await;
    assert_eq!(log_text(&browser).await, "");
}

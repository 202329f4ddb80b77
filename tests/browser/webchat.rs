//! The web chat widget in a real browser: a page served from another origin embeds
//! `/webchat.js`; the visitor chats with the test kit's fake model, leaves a contact with
//! the consent box ticked (a lead and its ledger entry), comes back and the chat
//! resumes; a page of a refused origin gets no chat; the widget fits 360 px; a visitor
//! books a meeting with the assistant, watches a person take over from the console and
//! reads the messages-a-minute bound in words; the Call button with voice on; the
//! console's Web chats update live. The widget lives in a shadow root, so the tests
//! reach it through the page's script.

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

/// Sets the organization's `webchat` settings to `webchat`.
async fn set_webchat(server: &TestServer, admin: &str, webchat: Value) {
    let set = server
        .patch(admin, "/v1/org", &json!({ "webchat": webchat }))
        .await;
    assert_eq!(set.status, 200, "{}", set.text());
}

/// Opens the page at `url` in `browser`, waits for the widget and opens the chat.
async fn open_widget(browser: &Browser, url: &str) {
    browser.client.goto(url).await.expect("the site");
    wait_widget(
        browser,
        "the widget",
        ".launch",
        "return !!el;",
        json!(true),
    )
    .await;
    browser
        .run(&within(".launch", "el.click(); return true;"))
        .await;
}

/// Opens `origin`'s page in `browser`, opens the chat and waits for its `greeting`.
async fn open_chat(browser: &Browser, origin: &str, greeting: &str) {
    open_widget(browser, &format!("{origin}/")).await;
    wait_log(browser, greeting).await;
}

/// A console agent, Ana Ruiz, signed in.
async fn signed_in_agent(server: &TestServer) -> Browser {
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    browser
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
    set_webchat(
        &server,
        &admin,
        json!({"enabled": true, "allowedOrigins": [origin], "profile": "web",
                    "greeting": "Hi! Questions about solar?",
                    "consentText": "I agree that Acme Solar may text me."}),
    )
    .await;

    let browser = Browser::phone(&server).await;
    open_chat(&browser, &origin, "Hi! Questions about solar?").await;
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
    open_widget(&browser, &format!("{origin}/?again")).await;
    wait_log(&browser, "When does solar pay back?").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_an_origin_not_allowed_gets_no_chat() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let org = server.org_id("acme").await;
    let origin = site(server.base.clone(), org.clone()).await;
    set_webchat(
        &server,
        &admin,
        json!({"enabled": true, "allowedOrigins": ["https://shop.example"]}),
    )
    .await;
    let browser = Browser::open(&server).await;
    open_widget(&browser, &format!("{origin}/")).await;
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

/// Polls the widget's `selector` with script `then` until it answers `want`.
async fn wait_widget(browser: &Browser, what: &str, selector: &str, then: &str, want: Value) {
    poll(what, WAIT, || async {
        let got = browser.run(&within(selector, then)).await;
        if got == want {
            Ok(())
        } else {
            Err(got.to_string())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_button_shows_with_voice_and_loads_the_vendored_sdk() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let org = server.org_id("acme").await;
    let origin = site(server.base.clone(), org.clone()).await;
    set_webchat(
        &server,
        &admin,
        json!({"enabled": true, "allowedOrigins": [origin],
                    "greeting": "Hello from Acme."}),
    )
    .await;
    let browser = Browser::open(&server).await;
    open_chat(&browser, &origin, "Hello from Acme.").await;
    // Voice off: no Call button.
    let hidden = browser.run(&within(".call", "return el.hidden;")).await;
    assert_eq!(hidden, json!(true));

    // Voice on (the provider's keys not set): the chat resumes with a Call button,
    // which loads the SDK from engaged and says in words why the call cannot start.
    let set = server
        .patch(&admin, "/v1/org", &json!({"webchat": {"voice": true}}))
        .await;
    assert_eq!(set.status, 200, "{}", set.text());
    open_widget(&browser, &format!("{origin}/?again")).await;
    wait_widget(
        &browser,
        "the Call button",
        ".call",
        "return !!el && !el.hidden;",
        json!(true),
    )
    .await;
    let label = browser
        .run(&within(
            ".dial",
            "return el.getAttribute('aria-label') + '|' + el.textContent;",
        ))
        .await;
    assert_eq!(label, json!("Call us from your browser|Call"));
    browser
        .run(&within(".dial", "el.click(); return true;"))
        .await;
    wait_widget(
        &browser,
        "the refusal in words",
        ".call-state",
        "return el.textContent.includes('not set up');",
        json!(true),
    )
    .await;
    poll("the vendored SDK", WAIT, || async {
        let loaded = browser
            .run("return !!(window.Twilio && window.Twilio.Device);")
            .await;
        if loaded == json!(true) {
            Ok(())
        } else {
            Err(loaded.to_string())
        }
    })
    .await;
    let hang = browser.run(&within(".hang", "return el.hidden;")).await;
    assert_eq!(hang, json!(true), "no call, no Hang up");
}

/// A person watching the console's Web chats sees a visitor who is not yet a lead
/// start a chat and write, without a reload; the chat's page shows the next line live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_chats_list_and_a_chat_update_live_before_the_visitor_is_a_lead() {
    const SITE: &str = "https://shop.example";
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let org = server.org_id("acme").await;
    set_webchat(
        &server,
        &admin,
        json!({"enabled": true, "allowedOrigins": [SITE],
                    "greeting": "Hi! Questions about solar?"}),
    )
    .await;
    let browser = signed_in_agent(&server).await;
    browser.click_link("Web chats").await;
    browser.wait_for_text("No chats yet.").await;
    browser.run("window.notReloaded = true; return true;").await;

    let started = server
        .webchat(
            hyper::Method::POST,
            &format!("/webchat/{org}/sessions"),
            Some(SITE),
            None,
            None,
        )
        .await;
    assert_eq!(started.status, 201, "{}", started.text());
    let session = started.json();
    let (id, token) = (
        session["sessionId"].as_str().expect("sessionId"),
        session["token"].as_str().expect("token"),
    );
    let say = |text: &'static str| {
        let server = &server;
        let path = format!("/webchat/{org}/sessions/{id}/messages");
        async move {
            let r = server
                .webchat(
                    hyper::Method::POST,
                    &path,
                    Some(SITE),
                    Some(token),
                    Some(&json!({ "text": text })),
                )
                .await;
            assert_eq!(r.status, 202, "{}", r.text());
        }
    };
    say("Do you install in Austin?").await;
    browser
        .wait_for_text("Visitor: Do you install in Austin?")
        .await;
    assert_eq!(
        browser.run("return window.notReloaded === true;").await,
        true,
        "the list updated in place, not reloaded"
    );

    browser.goto(&format!("/console/webchats/{id}")).await;
    browser.wait_for_text("Chat with a website visitor").await;
    browser.run("window.notReloaded = true; return true;").await;
    say("And in Dallas?").await;
    browser.wait_for_text("And in Dallas?").await;
    assert_eq!(
        browser.run("return window.notReloaded === true;").await,
        true,
        "the chat updated in place, not reloaded"
    );
}

/// The visitor's message, typed into the widget and sent with its form.
async fn visitor_says(browser: &Browser, text: &str) {
    browser
        .run(&within(
            "textarea",
            &format!("el.value = {text:?}; el.closest('form').requestSubmit(); return true;"),
        ))
        .await;
}

/// A visitor who left a contact books a meeting with the assistant; a person takes the
/// chat over from the console while the visitor watches and answers; a visitor who
/// writes too fast reads the bound in words in the widget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_visitor_books_watches_a_person_take_over_and_reads_a_bound() {
    let server = TestServer::start().await;
    let admin = server.key("acme", "admin").await;
    let org = server.org_id("acme").await;
    let model = FakeModel::start().await;
    let origin = site(server.base.clone(), org.clone()).await;
    let calendar = engaged::testkit::fixtures::always_open_calendar("Consultation");
    for (path, body) in [
        ("/v1/calendars/sales", calendar),
        (
            "/v1/profiles/web",
            json!({"instructions": "You are Sam from Acme Solar.", "calendar": "sales"}),
        ),
    ] {
        let put = server.put(&admin, path, &body).await;
        assert_eq!(put.status, 200, "{path}: {}", put.text());
    }
    let set = server.patch(&admin, "/v1/org", &model.settings()).await;
    assert_eq!(set.status, 200, "{}", set.text());
    set_webchat(
        &server,
        &admin,
        json!({"enabled": true, "allowedOrigins": [origin], "profile": "web",
                    "greeting": "Hi! Questions about solar?"}),
    )
    .await;

    let visitor = Browser::phone(&server).await;
    open_chat(&visitor, &origin, "Hi! Questions about solar?").await;
    visitor
        .run(&within(
            ".more",
            "el.click(); const r = host.shadowRoot; \
             r.querySelector('input[name=name]').value = 'Dana Reyes'; \
             r.querySelector('input[name=phone]').value = '+15125550142'; \
             r.querySelector('form.contact').requestSubmit(); return true;",
        ))
        .await;
    wait_log(&visitor, "Thanks!").await;

    // A booking: the assistant calls book_meeting with the lead's tools.
    let start = (chrono::Utc::now() + chrono::Duration::days(1))
        .date_naive()
        .and_hms_opt(15, 0, 0)
        .expect("a time")
        .and_utc();
    model.push(Step::tool(
        "call_book",
        "book_meeting",
        json!({"start": start.format("%Y-%m-%dT%H:%M:%SZ").to_string()}),
    ));
    model.push(Step::text("You're booked for tomorrow at 3 PM."));
    visitor_says(&visitor, "Can we talk tomorrow at 3pm?").await;
    wait_log(&visitor, "You're booked for tomorrow at 3 PM.").await;
    let read = server.key("acme", "read").await;
    let meetings = server.get(&read, "/v1/meetings").await.json();
    let booked = &meetings["meetings"][0];
    assert_eq!(booked["bookedBy"], json!("assistant"), "{meetings}");
    assert_eq!(booked["status"], json!("booked"), "{meetings}");
    let lead = server
        .get(
            &read,
            &format!("/v1/leads/{}", booked["leadId"].as_str().expect("leadId")),
        )
        .await
        .json();
    assert_eq!(lead["additionalInfo"]["source"], json!("webchat"), "{lead}");
    let session = lead["additionalInfo"]["webchatSessionId"]
        .as_str()
        .expect("the chat")
        .to_string();

    // A person takes over from the console; the visitor sees them join and answer.
    let person = signed_in_agent(&server).await;
    person.goto(&format!("/console/webchats/{session}")).await;
    person.wait_for_text("Can we talk tomorrow at 3pm?").await;
    person.click_button("Take over").await;
    wait_log(&visitor, "Ana Ruiz joined the chat").await;
    person
        .fill("Reply", "Hi Dana, I'm Ana. See you tomorrow!")
        .await;
    person.click_button("Send").await;
    wait_log(&visitor, "Hi Dana, I'm Ana. See you tomorrow!").await;

    // Too fast: the chat's bound of messages a minute, in words in the widget.
    let token = visitor
        .run(&format!(
            "return JSON.parse(localStorage.getItem('engaged-webchat:{org}')).token;"
        ))
        .await;
    let token = token.as_str().expect("the session's token").to_string();
    let path = format!("/webchat/{org}/sessions/{session}/messages");
    for n in 0.. {
        let r = server
            .webchat(
                hyper::Method::POST,
                &path,
                Some(&origin),
                Some(&token),
                Some(&json!({ "text": format!("message {n}") })),
            )
            .await;
        if r.status == 429 {
            break;
        }
        assert_eq!(r.status, 202, "{}", r.text());
        assert!(n < 25, "a bound of 20 a minute");
    }
    visitor_says(&visitor, "One more?").await;
    wait_widget(
        &visitor,
        "the bound in words",
        ".status",
        "return el.textContent;",
        json!("You are sending messages too fast: at most 20 a minute. Wait a moment."),
    )
    .await;
}

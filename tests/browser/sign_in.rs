//! Signing in and out, the session cookie, throttling, and roles.

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;
use hyper::Method;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_refused_and_the_right_one_lands_on_the_inbox() {
    let server = TestServer::start().await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let browser = Browser::open(&server).await;

    browser.goto("/").await;
    assert_eq!(
        browser.path().await,
        "/console/login",
        "/ leads to the sign-in page"
    );
    browser
        .sign_in("ana@acme.example", "not the password")
        .await;
    browser.wait_for_text("Wrong email or password").await;

    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    assert_eq!(browser.path().await, "/console/inbox");
    let text = browser.text().await;
    for item in ["Inbox", "Leads", "Campaigns", "Settings", "Ana Ruiz"] {
        assert!(text.contains(item), "the navigation shows {item:?}: {text}");
    }

    let cookies = browser.cookies().await;
    let session = cookies
        .iter()
        .find(|c| c.name() == "__Host-engaged_session")
        .expect("the session cookie");
    assert_eq!(session.secure(), Some(true));
    assert_eq!(session.http_only(), Some(true));
    assert_eq!(session.path(), Some("/"));
    assert_eq!(format!("{:?}", session.same_site()), "Some(Strict)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_five_failures_sign_in_asks_to_wait() {
    let server = TestServer::start().await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(&server).await;
    for _ in 0..5 {
        browser.sign_in("ana@acme.example", "wrong password").await;
        browser.wait_for_text("Wrong email or password").await;
    }
    browser.sign_in("ana@acme.example", &password).await;
    browser
        .wait_for_text("Too many attempts. Try again in")
        .await;
    assert_eq!(browser.path().await, "/console/login");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_out_ends_the_session_on_the_server() {
    let server = TestServer::start().await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    let cookie = browser
        .cookies()
        .await
        .into_iter()
        .find(|c| c.name() == "__Host-engaged_session")
        .expect("the session cookie")
        .value()
        .to_string();

    browser.click_button("Sign out").await;
    browser.wait_for_text("Sign in").await;
    assert_eq!(browser.path().await, "/console/login");

    // The old cookie, replayed, is no session any more.
    let replayed = server
        .console(Method::GET, "/console/inbox", Some(&cookie), None, &[])
        .await;
    assert_eq!(replayed.status, 303);
    assert_eq!(
        replayed
            .headers
            .get("location")
            .and_then(|v| v.to_str().ok()),
        Some("/console/login")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_reads_a_lead_but_cannot_take_it_over() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    server
        .create_lead(&key, &serde_json::json!({"id": "lead-1", "firstName": "Ada", "lastName": "Lovelace", "phone": "+15125550101"}))
        .await;
    let password = server
        .user("acme", "val@acme.example", "Val Viewer", "viewer")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("val@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    assert!(
        !browser.text().await.contains("Settings"),
        "no Settings for a viewer"
    );

    browser.goto("/console/leads/lead-1").await;
    browser.wait_for_text("Ada Lovelace").await;
    assert!(!browser.has_button("Take over").await);
    assert!(!browser.has_button("Send").await);

    // Forced through a form the page never offered: refused, and nothing changes.
    let session = server.sign_in("val@acme.example", &password).await;
    let origin = server.origin();
    let forced = server
        .console(
            Method::POST,
            "/console/leads/lead-1/take-over",
            Some(&session.cookie),
            Some(&origin),
            &[("csrf", &session.csrf)],
        )
        .await;
    assert_eq!(forced.status, 403);
    assert!(forced.text().contains("You do not have permission"));
    let lead = server.get(&key, "/v1/leads/lead-1").await.json();
    assert_eq!(lead["isAiOn"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_site_post_is_refused_and_changes_nothing() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    server
        .create_lead(
            &key,
            &serde_json::json!({"id": "lead-1", "firstName": "Ada", "phone": "+15125550101"}),
        )
        .await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let session = server.sign_in("ana@acme.example", &password).await;
    let path = "/console/leads/lead-1/take-over";
    let csrf = [("csrf", session.csrf.as_str())];
    let foreign = server
        .console(
            Method::POST,
            path,
            Some(&session.cookie),
            Some("https://evil.example"),
            &csrf,
        )
        .await;
    assert_eq!(foreign.status, 403, "a foreign origin");
    let origin = server.origin();
    let no_token = server
        .console(
            Method::POST,
            path,
            Some(&session.cookie),
            Some(&origin),
            &[],
        )
        .await;
    assert_eq!(no_token.status, 403, "no CSRF token");
    let lead = server.get(&key, "/v1/leads/lead-1").await.json();
    assert_eq!(lead["isAiOn"], true, "nothing changed");
}

/// The first run in the browser: the login page says where the link is, the link from
/// the start log opens the setup form, "Create admin" signs the new admin in on the
/// inbox, and the link is used up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_run_creates_the_first_admin_from_the_logged_link() {
    let (captured, _guard) = engaged::testkit::logs::Captured::install(tracing::Level::INFO);
    let server = TestServer::start().await;
    let link = captured
        .setup_path()
        .expect("the start log holds the setup link");
    drop(_guard);
    let browser = Browser::open(&server).await;

    browser.goto("/console/login").await;
    browser
        .wait_for_text("No account yet? The server's log holds a one-time setup link.")
        .await;

    browser.goto(&link).await;
    browser.wait_for_text("Set up engaged").await;
    // The password's help is the field's own description, in the field's column.
    browser.wait_for_text("At least 12 characters.").await;
    assert_eq!(
        browser
            .field("Password")
            .await
            .attr("aria-describedby")
            .await
            .unwrap()
            .as_deref(),
        Some("password-hint")
    );
    browser.fill("Organization", "Acme Solar").await;
    browser.fill("Email", "ana@acme.example").await;
    browser.fill("Name", "Ana Ruiz").await;
    browser.fill("Password", "short").await;
    browser.click_button("Create admin").await;
    browser.wait_for_text("Password too short").await;
    assert_eq!(
        browser
            .field("Email")
            .await
            .prop("value")
            .await
            .unwrap()
            .as_deref(),
        Some("ana@acme.example"),
        "what was typed stays"
    );
    browser.fill("Password", "a long enough password").await;
    browser.click_button("Create admin").await;
    browser.wait_for_text("Sign out").await;
    assert_eq!(browser.path().await, "/console/inbox");
    assert!(browser.text().await.contains("Ana Ruiz"));

    browser.goto(&link).await;
    browser.wait_for_text("There is nothing here.").await;
    browser.goto("/console/inbox").await;
    browser.click_button("Sign out").await;
    browser.wait_for_text("Sign in").await;
    assert!(!browser.text().await.contains("No account yet?"));
    browser
        .sign_in("ana@acme.example", "a long enough password")
        .await;
    browser.wait_for_text("Sign out").await;
}

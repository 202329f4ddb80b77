//! The first run (`console.md`, "First run"): the one-time setup link the start log
//! prints while no user exists, its page and form, the login page's hint.

use hyper::Method;

use engaged::testkit::console::session_cookie;
use engaged::testkit::logs::Captured;
use engaged::testkit::TestServer;

const HINT: &str = "No account yet? The server's log holds a one-time setup link.";

fn form<'a>(token: &'a str, password: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("token", token),
        ("organization", "Acme Solar"),
        ("email", "ana@acme.example"),
        ("name", "Ana Ruiz"),
        ("password", password),
    ]
}

#[tokio::test(flavor = "current_thread")]
async fn the_setup_link_makes_the_first_admin_once_and_then_is_gone() {
    let (captured, _guard) = Captured::install(tracing::Level::INFO);
    let ts = TestServer::start().await;
    let log = captured.text();
    assert!(
        log.contains("console=https://localhost:"),
        "the start log names the console: {log}"
    );
    let path = captured.setup_path().expect("a setup link in the log");
    let token = path.split("token=").nth(1).expect("a token").to_string();
    assert_eq!(token.len(), 43, "256 bits, base64url");

    let login = ts
        .console(Method::GET, "/console/login", None, None, &[])
        .await;
    assert!(login.text().contains(HINT), "{}", login.text());

    let wrong = ts
        .console(Method::GET, "/console/setup?token=nope", None, None, &[])
        .await;
    assert_eq!(wrong.status, 403);
    assert!(wrong.text().contains("This setup link is not valid"));
    let page = ts.console(Method::GET, &path, None, None, &[]).await;
    assert_eq!(page.status, 200);
    for words in ["Organization", "Email", "Name", "Password", "Create admin"] {
        assert!(page.text().contains(words), "{words}");
    }

    let origin = ts.origin();
    let password = "a long enough password";
    // Another site's page cannot post the form, even with the token.
    let foreign = ts
        .console(
            Method::POST,
            "/console/setup",
            None,
            Some("https://evil.example"),
            &form(&token, password),
        )
        .await;
    assert_eq!(foreign.status, 403);
    let wrong_post = ts
        .console(
            Method::POST,
            "/console/setup",
            None,
            Some(&origin),
            &form("nope", password),
        )
        .await;
    assert_eq!(wrong_post.status, 403);
    let short = ts
        .console(
            Method::POST,
            "/console/setup",
            None,
            Some(&origin),
            &form(&token, "short"),
        )
        .await;
    assert_eq!(short.status, 400);
    assert!(
        short.text().contains("Password too short"),
        "{}",
        short.text()
    );
    assert!(
        short.text().contains("ana@acme.example"),
        "what was typed stays"
    );

    let created = ts
        .console(
            Method::POST,
            "/console/setup",
            None,
            Some(&origin),
            &form(&token, password),
        )
        .await;
    assert_eq!(created.status, 303, "{}", created.text());
    assert_eq!(created.headers["location"], "/console/inbox");
    let cookie = session_cookie(&created).expect("signed in");
    let inbox = ts
        .console(Method::GET, "/console/inbox", Some(&cookie), None, &[])
        .await;
    assert_eq!(inbox.status, 200);
    assert!(inbox.text().contains("Ana Ruiz"));
    let orgs = ts
        .admin(engaged::admin::AdminRequest::OrgList)
        .await
        .unwrap();
    assert_eq!(orgs["orgs"][0]["name"], "Acme Solar", "{orgs}");

    // Used: once a user exists there is nothing to set up.
    let again = ts.console(Method::GET, &path, None, None, &[]).await;
    assert_eq!(again.status, 404);
    let again = ts
        .console(
            Method::POST,
            "/console/setup",
            None,
            Some(&origin),
            &form(&token, password),
        )
        .await;
    assert_eq!(again.status, 404);
    let login = ts
        .console(Method::GET, "/console/login", None, None, &[])
        .await;
    assert!(!login.text().contains(HINT));
}

#[tokio::test(flavor = "current_thread")]
async fn once_a_user_exists_setup_is_404_and_the_login_page_has_no_hint() {
    let ts = TestServer::start().await;
    ts.user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await;
    let page = ts
        .console(Method::GET, "/console/setup?token=x", None, None, &[])
        .await;
    assert_eq!(page.status, 404);
    let login = ts
        .console(Method::GET, "/console/login", None, None, &[])
        .await;
    assert!(!login.text().contains(HINT));
}

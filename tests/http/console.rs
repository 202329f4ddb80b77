//! The console's security rules over real HTTPS, one by one: the security headers, the
//! session cookie's attributes, a tampered or ended session, a POST without its CSRF
//! token or from another origin, a role below the page's, and another organization's
//! lead. Each refusal changes nothing (the lead's events say so).

use hyper::Method;
use serde_json::json;

use engaged::testkit::console::{session_cookie, Session};
use engaged::testkit::TestServer;

use crate::requests::all_events;

/// A server with one lead of `acme` (`c-1`), an API key to read it, and a signed-in
/// person of `role`.
async fn start(role: &str) -> (TestServer, String, Session) {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    ts.create_lead(
        &key,
        &json!({"id": "c-1", "firstName": "Ana", "phone": "+15125550101"}),
    )
    .await;
    let password = ts.user("acme", "pat@example.com", "Pat", role).await;
    let session = ts.sign_in("pat@example.com", &password).await;
    (ts, key, session)
}

/// The USER_ACTION events of lead `c-1`.
async fn user_actions(ts: &TestServer, key: &str) -> usize {
    all_events(ts, key, "c-1")
        .await
        .iter()
        .filter(|e| e["type"] == "USER_ACTION")
        .count()
}

async fn take_over(ts: &TestServer, cookie: &str, origin: Option<&str>, csrf: &str) -> u16 {
    ts.console(
        Method::POST,
        "/console/leads/c-1/take-over",
        Some(cookie),
        origin,
        &[("csrf", csrf)],
    )
    .await
    .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_console_answer_carries_the_security_headers() {
    let ts = TestServer::start().await;
    for path in [
        "/console/login",
        "/console/inbox",
        "/console/assets/console.css",
        "/console/nope",
    ] {
        let r = ts.console(Method::GET, path, None, None, &[]).await;
        let csp = r.headers["content-security-policy"]
            .to_str()
            .unwrap_or_default();
        assert!(csp.contains("default-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{path}: {csp}"
        );
        assert_eq!(r.headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(r.headers["x-frame-options"], "DENY", "{path}");
    }
    let root = ts.console(Method::GET, "/", None, None, &[]).await;
    assert_eq!(root.status, 303);
    assert_eq!(root.headers["location"], "/console/inbox");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_favicon_is_an_image_without_a_session() {
    let ts = TestServer::start().await;
    let r = ts
        .console(Method::GET, "/favicon.ico", None, None, &[])
        .await;
    assert_eq!(r.status, 200);
    let kind = r.headers["content-type"].to_str().unwrap_or_default();
    assert!(kind.starts_with("image/"), "{kind}");
    assert!(r.text().contains("<svg"), "{}", r.text());
    let head = ts
        .console(Method::HEAD, "/favicon.ico", None, None, &[])
        .await;
    assert_eq!(head.status, 200);
    let post = ts
        .console(Method::POST, "/favicon.ico", None, None, &[])
        .await;
    assert_eq!(post.status, 405);
    // Pages link it.
    let login = ts
        .console(Method::GET, "/console/login", None, None, &[])
        .await;
    assert!(
        login
            .text()
            .contains(r#"<link rel="icon" type="image/svg+xml" href="/favicon.ico">"#),
        "{}",
        login.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cookie_is_host_only_secure_http_only_and_strict() {
    let ts = TestServer::start().await;
    let password = ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let r = ts
        .console(
            Method::POST,
            "/console/login",
            None,
            Some(&ts.origin()),
            &[("email", "pat@example.com"), ("password", &password)],
        )
        .await;
    assert_eq!(r.status, 303);
    let set = r.headers["set-cookie"].to_str().unwrap_or_default();
    assert!(set.starts_with("__Host-engaged_session="), "{set}");
    for attribute in ["Secure", "HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(attribute), "{attribute} in {set}");
    }
    assert!(
        !set.contains("Domain"),
        "a __Host- cookie has no Domain: {set}"
    );
    let token = session_cookie(&r).unwrap_or_default();
    assert!(token.len() >= 32, "the token is long and random: {token}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_and_an_unknown_email_get_the_same_answer() {
    let ts = TestServer::start().await;
    ts.user("acme", "pat@example.com", "Pat", "agent").await;
    let mut bodies = Vec::new();
    for (email, password) in [
        ("pat@example.com", "wrong-password"),
        ("nobody@example.com", "x"),
    ] {
        let r = ts
            .console(
                Method::POST,
                "/console/login",
                None,
                Some(&ts.origin()),
                &[("email", email), ("password", password)],
            )
            .await;
        assert_eq!(r.status, 401, "{email}");
        assert!(session_cookie(&r).is_none(), "no session for {email}");
        bodies.push(r.text().replace(email, "EMAIL"));
    }
    assert!(
        bodies[0].contains("Wrong email or password"),
        "{}",
        bodies[0]
    );
    assert_eq!(bodies[0], bodies[1], "one message for every failure");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_cookie_is_no_session() {
    let (ts, key, session) = start("agent").await;
    let mut tampered = session.cookie.clone();
    let last = if tampered.ends_with('A') { "B" } else { "A" };
    tampered.replace_range(tampered.len() - 1.., last);
    let page = ts
        .console(
            Method::GET,
            "/console/leads/c-1",
            Some(&tampered),
            None,
            &[],
        )
        .await;
    assert_eq!(page.status, 303);
    assert_eq!(page.headers["location"], "/console/login");
    let origin = ts.origin();
    assert_eq!(
        take_over(&ts, &tampered, Some(&origin), &session.csrf).await,
        403
    );
    assert_eq!(user_actions(&ts, &key).await, 0, "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_without_its_token_or_from_elsewhere_changes_nothing() {
    let (ts, key, session) = start("agent").await;
    let origin = ts.origin();
    assert_eq!(
        take_over(&ts, &session.cookie, Some(&origin), "").await,
        403,
        "no token"
    );
    assert_eq!(
        take_over(&ts, &session.cookie, Some(&origin), "0123456789abcdef").await,
        403,
        "a wrong token"
    );
    assert_eq!(
        take_over(
            &ts,
            &session.cookie,
            Some("https://evil.example"),
            &session.csrf
        )
        .await,
        403,
        "a foreign origin"
    );
    assert_eq!(
        take_over(&ts, &session.cookie, None, &session.csrf).await,
        403,
        "no origin"
    );
    assert_eq!(user_actions(&ts, &key).await, 0, "nothing changed");
    assert_eq!(
        take_over(&ts, &session.cookie, Some(&origin), &session.csrf).await,
        303
    );
    assert_eq!(user_actions(&ts, &key).await, 1, "the real one is recorded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_reads_but_is_refused_every_action_and_settings() {
    let (ts, key, session) = start("viewer").await;
    let page = ts
        .console(
            Method::GET,
            "/console/leads/c-1",
            Some(&session.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(page.status, 200);
    assert!(page.text().contains("Ana"));
    let origin = ts.origin();
    assert_eq!(
        take_over(&ts, &session.cookie, Some(&origin), &session.csrf).await,
        403
    );
    let reply = ts
        .console(
            Method::POST,
            "/console/leads/c-1/reply",
            Some(&session.cookie),
            Some(&origin),
            &[("csrf", &session.csrf), ("channel", "sms"), ("text", "hi")],
        )
        .await;
    assert_eq!(reply.status, 403);
    let settings = ts
        .console(
            Method::GET,
            "/console/settings",
            Some(&session.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(settings.status, 403);
    let export = ts
        .console(
            Method::GET,
            "/console/leads.csv",
            Some(&session.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(export.status, 403);
    assert_eq!(user_actions(&ts, &key).await, 0, "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_organizations_lead_is_not_found() {
    let (ts, key, _) = start("agent").await;
    let password = ts.user("globex", "lee@example.com", "Lee", "admin").await;
    let other = ts.sign_in("lee@example.com", &password).await;
    let page = ts
        .console(
            Method::GET,
            "/console/leads/c-1",
            Some(&other.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(page.status, 404);
    assert!(!page.text().contains("Ana"));
    let origin = ts.origin();
    assert_eq!(
        take_over(&ts, &other.cookie, Some(&origin), &other.csrf).await,
        404
    );
    let unknown = ts
        .console(
            Method::GET,
            "/console/leads/nobody",
            Some(&other.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(unknown.status, 404);
    assert_eq!(user_actions(&ts, &key).await, 0, "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_out_session_cannot_be_used_again() {
    let (ts, key, session) = start("agent").await;
    let origin = ts.origin();
    let out = ts
        .console(
            Method::POST,
            "/console/logout",
            Some(&session.cookie),
            Some(&origin),
            &[("csrf", &session.csrf)],
        )
        .await;
    assert_eq!(out.status, 303);
    let page = ts
        .console(
            Method::GET,
            "/console/inbox",
            Some(&session.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(page.status, 303, "the old cookie is no session");
    assert_eq!(
        take_over(&ts, &session.cookie, Some(&origin), &session.csrf).await,
        403
    );
    assert_eq!(user_actions(&ts, &key).await, 0);
}

/// A multipart upload to `/console/import` with these fields before the file.
async fn upload(
    ts: &TestServer,
    cookie: &str,
    fields: &[(&str, &str)],
) -> engaged::testkit::Response {
    use bytes::Bytes;
    use http_body_util::Full;
    let mut body = String::new();
    for (name, value) in fields {
        body.push_str(&format!(
            "--XyZ\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
        ));
    }
    body.push_str("--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"leads.csv\"\r\nContent-Type: text/csv\r\n\r\nfirstName,phone\nZed,+15125550188\n\r\n--XyZ--\r\n");
    let request = hyper::Request::post(format!("{}/console/import", ts.origin()))
        .header("cookie", format!("__Host-engaged_session={cookie}"))
        .header("origin", ts.origin())
        .header("content-type", "multipart/form-data; boundary=XyZ")
        .body(Full::new(Bytes::from(body)))
        .expect("request");
    ts.send(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_needs_its_token_first_and_an_agent() {
    let (ts, key, session) = start("agent").await;
    let refused = upload(&ts, &session.cookie, &[]).await;
    assert_eq!(refused.status, 403, "no token");
    let refused = upload(&ts, &session.cookie, &[("csrf", "wrong")]).await;
    assert_eq!(refused.status, 403, "a wrong token");
    let uploaded = upload(&ts, &session.cookie, &[("csrf", &session.csrf)]).await;
    assert_eq!(uploaded.status, 303, "{}", uploaded.text());
    let to = uploaded.headers["location"].to_str().unwrap().to_string();
    let preview = ts
        .console(Method::GET, &to, Some(&session.cookie), None, &[])
        .await;
    assert_eq!(preview.status, 200, "{}", preview.text());
    assert!(preview.text().contains("What importing would do"));
    // Another person's session cannot open it: uploads are per organization and the
    // page reads only this organization's folder.
    let other = ts.user("globex", "gx@example.com", "Gx", "agent").await;
    let other = ts.sign_in("gx@example.com", &other).await;
    let peek = ts
        .console(Method::GET, &to, Some(&other.cookie), None, &[])
        .await;
    assert_eq!(peek.status, 404, "{}", peek.text());
    let leads = ts.get(&key, "/v1/leads/search?q=zed").await.json();
    assert_eq!(leads["total"], json!(0), "a preview imports nothing");

    let password = ts.user("acme", "vi@example.com", "Vi", "viewer").await;
    let viewer = ts.sign_in("vi@example.com", &password).await;
    assert_eq!(
        upload(&ts, &viewer.cookie, &[("csrf", &viewer.csrf)])
            .await
            .status,
        403
    );
    let page = ts
        .console(
            Method::GET,
            "/console/import",
            Some(&viewer.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(page.status, 403);
    let other = ts
        .console(
            Method::GET,
            "/console/import/0123456789abcdef0123456789abcdef/refused.csv",
            Some(&session.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(other.status, 404, "no such import");
    let traversal = ts
        .console(
            Method::GET,
            "/console/import/..%2F..%2Fengaged.redb/refused.csv",
            Some(&session.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(traversal.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_https_answer_carries_hsts() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "read").await;
    let answers = [
        ts.console(Method::GET, "/console/login", None, None, &[])
            .await,
        ts.console(Method::GET, "/console/nope", None, None, &[])
            .await,
        ts.get(&key, "/v1/leads?updatedSince=2020-01-01T00:00:00Z")
            .await,
        ts.get(&key, "/v1/nope").await,
        ts.get("not-a-key", "/v1/leads").await,
    ];
    for r in answers {
        assert_eq!(
            r.headers["strict-transport-security"], "max-age=31536000",
            "status {}",
            r.status
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_named_with_quotes_accents_or_question_marks_open_and_new_is_refused() {
    let ts = TestServer::start().await;
    let admin = ts.key("acme", "admin").await;
    let password = ts.user("acme", "pat@example.com", "Pat", "admin").await;
    let pat = ts.sign_in("pat@example.com", &password).await;
    let names = ["say\"hi\"", "café", "what?"];
    for name in names {
        let path = format!("/v1/profiles/{}", engaged::testkit::enc(name));
        let r = ts
            .put(&admin, &path, &json!({"instructions": "Be brief."}))
            .await;
        assert_eq!(r.status, 200, "{name}: {}", r.text());
    }
    let list = ts
        .console(
            Method::GET,
            "/console/campaigns",
            Some(&pat.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(list.status, 200);
    let html = list.text();
    for name in names {
        for tail in ["", "/edit"] {
            let path = format!("/console/campaigns/{}{tail}", engaged::testkit::enc(name));
            assert!(
                tail == "/edit" || html.contains(&format!("href=\"{path}\"")),
                "the list links {name} encoded: {html}"
            );
            let page = ts
                .console(Method::GET, &path, Some(&pat.cookie), None, &[])
                .await;
            assert_eq!(page.status, 200, "{path}: {}", page.text());
        }
    }
    // `new` is the new campaign's editor, never a profile's name: a campaign called
    // "New" takes another id.
    let saved = ts
        .console_post(
            "/console/campaigns/new",
            &pat.cookie,
            &[
                ("csrf", pat.csrf.as_str()),
                ("display-name", "new"),
                ("op", "save"),
                ("replyDelay", "5s"),
            ],
        )
        .await;
    assert_eq!(saved.status, 200, "the campaign's page: {}", saved.text());
    let r = ts.get(&admin, "/v1/profiles/new").await;
    assert_eq!(r.status, 404, "no profile named new");
    let r = ts.get(&admin, "/v1/profiles/campaign").await;
    assert_eq!(r.json()["displayName"], json!("new"));
    let put = ts
        .put(
            &admin,
            "/v1/profiles/new",
            &json!({"instructions": "Be brief."}),
        )
        .await;
    assert_eq!(put.status, 400, "{}", put.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_of_another_organization_is_refused_without_saying_it_exists() {
    let ts = TestServer::start().await;
    let theirs = ts.user("beta", "bob@beta.example", "Bob", "admin").await;
    let password = ts.user("acme", "pat@example.com", "Pat", "admin").await;
    let pat = ts.sign_in("pat@example.com", &password).await;
    let add = |email: &'static str| {
        let (ts, pat) = (&ts, &pat);
        async move {
            ts.console_post(
                "/console/settings/people",
                &pat.cookie,
                &[
                    ("csrf", pat.csrf.as_str()),
                    ("email", email),
                    ("name", "Someone"),
                    ("role", "agent"),
                ],
            )
            .await
            .text()
        }
    };
    let taken = add("BOB@beta.example").await;
    let invalid = add("not-an-address").await;
    assert!(taken.contains("Invalid format for field: email"), "{taken}");
    assert!(
        invalid.contains("Invalid format for field: email"),
        "{invalid}"
    );
    assert!(!taken.contains("exists"), "{taken}");
    // Nothing was taken over: Bob still signs in to his own organization.
    ts.sign_in("bob@beta.example", &theirs).await;
    // The same through the admin commands (`engaged user create`).
    let refused = ts
        .admin(engaged::admin::AdminRequest::UserCreate {
            org: "acme".into(),
            email: "bob@beta.example".into(),
            name: "Bob".into(),
            role: engaged::store::rows::Role::Agent,
            password_hash: "x".into(),
        })
        .await
        .expect_err("refused");
    assert_eq!(refused, "Invalid format for field: email");
}

/// The lead list pages with the API's bound `nextToken`: the "Next page" link opens the
/// next page; the same token changed, or given with another filter, is refused in words
/// (400) instead of showing another page; an unknown filter value is refused visibly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_list_page_token_changed_or_for_another_filter_is_refused() {
    let (ts, key, session) = start("viewer").await;
    for i in 0..50 {
        ts.create_lead(&key, &json!({"id": format!("p-{i:02}"), "firstName": "Bo"}))
            .await;
    }
    let get = |path: String| {
        let (ts, cookie) = (&ts, session.cookie.clone());
        async move {
            ts.console(Method::GET, &path, Some(&cookie), None, &[])
                .await
        }
    };
    let first = get("/console/leads".into()).await;
    assert_eq!(first.status, 200);
    let text = first.text();
    let at = text.find("nextToken=").expect("a next page link");
    let token: String = text[at + "nextToken=".len()..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    let next = get(format!("/console/leads?nextToken={token}")).await;
    assert_eq!(next.status, 200);
    assert!(next.text().contains("First page"));
    assert!(!next.text().contains("role=\"alert\""));

    let mut tampered = token.clone();
    let last = if tampered.ends_with('A') { 'B' } else { 'A' };
    tampered.pop();
    tampered.push(last);
    for path in [
        format!("/console/leads?nextToken={tampered}"),
        format!("/console/leads?hot=true&nextToken={token}"),
    ] {
        let refused = get(path.clone()).await;
        assert_eq!(refused.status, 400, "{path}");
        assert!(
            refused.text().contains("This page&#39;s link is not valid")
                || refused.text().contains("This page's link is not valid"),
            "{path}"
        );
        assert!(!refused.text().contains("First page"), "{path}");
    }
    let typo = get("/console/leads?hot=yes".into()).await;
    assert_eq!(typo.status, 400);
    assert!(typo.text().contains("Invalid format for field: hot"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_additional_field_without_a_name_or_past_its_bounds_is_refused_beside_it() {
    let (ts, key, session) = start("agent").await;
    let origin = ts.origin();
    let set = |field: String, value: String| {
        let (ts, session, origin) = (&ts, &session, &origin);
        async move {
            ts.console(
                Method::POST,
                "/console/leads/c-1/fields-set",
                Some(&session.cookie),
                Some(origin),
                &[
                    ("csrf", session.csrf.as_str()),
                    ("field", field.as_str()),
                    ("value", value.as_str()),
                ],
            )
            .await
        }
    };
    // A refusal redirects to the page, which shows it beside the field.
    let refused = |field: String, value: String| {
        let (ts, session) = (&ts, &session);
        async move {
            ts.console_post(
                "/console/leads/c-1/fields-set",
                &session.cookie,
                &[
                    ("csrf", session.csrf.as_str()),
                    ("field", field.as_str()),
                    ("value", value.as_str()),
                ],
            )
            .await
        }
    };
    let nameless = refused("  ".into(), "tile".into()).await;
    assert_eq!(nameless.status, 200);
    assert!(
        nameless.text().contains("Write the field&#39;s name")
            || nameless.text().contains("Write the field's name")
    );
    let huge = refused("Notes".into(), "x".repeat(17 * 1024)).await;
    assert_eq!(huge.status, 200, "{}", huge.text());
    assert!(huge.text().contains("additionalInfo"), "{}", huge.text());
    let lead = ts.get(&key, "/v1/leads/c-1").await.json();
    assert_eq!(lead["additionalInfo"], json!({}), "nothing changed");
    assert_eq!(user_actions(&ts, &key).await, 0);
    let saved = set("Roof type".into(), "tile".into()).await;
    assert_eq!(saved.status, 303);
    let lead = ts.get(&key, "/v1/leads/c-1").await.json();
    assert_eq!(lead["additionalInfo"], json!({"Roof type": "tile"}));
}

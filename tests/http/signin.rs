//! Sign-in under a flood, over real HTTPS: the throttle counts an attempt before its
//! password is checked (a concurrent burst for one email gets 5 checks), and when every
//! password check is taken and the queue is full the page answers 503 at once.

use std::sync::Arc;

use hyper::Method;

use engaged::testkit::TestServer;

async fn post_login(ts: &TestServer, email: &str, password: &str) -> (u16, String) {
    let origin = ts.origin();
    let r = ts
        .console(
            Method::POST,
            "/console/login",
            None,
            Some(&origin),
            &[("email", email), ("password", password)],
        )
        .await;
    (r.status, r.text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_40_guesses_for_one_email_gets_5_checks() {
    let ts = Arc::new(TestServer::start().await);
    let right = ts.user("acme", "pat@example.com", "Pat", "admin").await;
    let mut burst = tokio::task::JoinSet::new();
    for i in 0..40 {
        let ts = ts.clone();
        // The right password is among the guesses, sent last.
        let password = if i == 39 {
            right.clone()
        } else {
            format!("wrong guess number {i}")
        };
        burst.spawn(async move { post_login(&ts, "pat@example.com", &password).await.0 });
    }
    let (mut failed, mut throttled, mut signed_in) = (0, 0, 0);
    while let Some(status) = burst.join_next().await {
        match status.expect("a request") {
            401 => failed += 1,
            303 => signed_in += 1,
            429 => throttled += 1,
            other => panic!("unexpected status {other}"),
        }
    }
    assert!(signed_in <= 1);
    assert_eq!(failed + signed_in + throttled, 40);
    if signed_in == 0 {
        assert_eq!((failed, throttled), (5, 35), "5 checks, the rest throttled");
    } else {
        // A success is forgotten, so one more guess may be checked after it (and fail):
        // never more than 5 failures, never more than 6 checks.
        assert!(
            (4..=5).contains(&failed),
            "{failed} failures, {throttled} throttled"
        );
    }
    // With 5 failures counted, the right password is refused too, unchecked.
    let (status, page) = post_login(&ts, "pat@example.com", &right).await;
    if failed == 5 {
        assert_eq!(status, 429, "{page}");
        assert!(page.contains("Too many attempts"), "{page}");
    } else {
        assert_eq!(status, 303, "{page}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_beyond_the_checks_and_their_queue_is_busy_at_once_and_not_counted() {
    let ts = TestServer::start().await;
    let right = ts.user("acme", "pat@example.com", "Pat", "admin").await;
    let held = ts.server.passwords().occupy();
    for _ in 0..6 {
        let (status, page) = post_login(&ts, "pat@example.com", "a wrong guess here").await;
        assert_eq!(status, 503, "{page}");
        assert!(page.contains("Sign-in is busy, try again"), "{page}");
    }
    drop(held);
    // The busy answers counted nothing: the right password signs in.
    let (status, page) = post_login(&ts, "pat@example.com", &right).await;
    assert_eq!(status, 303, "{page}");
}

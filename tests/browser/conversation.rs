//! A lead's page gives the page to the conversation: at 1280 pixels its column keeps at
//! least 60 % of the width (and 65 % of the page's content) while the sidebar holds
//! tables of meetings and consent, the reply box is at least 400 pixels wide; at 360
//! pixels the sidebar follows the conversation and nothing is wider than the viewport.

use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;

/// A lead "l-1" with a booked meeting and consent entries (tables in the sidebar), on
/// an organization without an assistant; the admin "ana@acme.example"'s password.
pub async fn lead_with_a_full_sidebar(server: &TestServer) -> String {
    let admin = server.key("acme", "admin").await;
    let key = server.key("acme", "write").await;
    let mut calendar =
        engaged::testkit::fixtures::always_open_calendar("Consultation with Acme Solar");
    calendar["location"] = json!("Phone call at the number the lead gave");
    assert_eq!(
        server
            .put(&admin, "/v1/calendars/sales", &calendar)
            .await
            .status,
        200
    );
    server
        .create_lead(&key, &json!({"id": "l-1", "firstName": "Maximiliana", "lastName": "Oppenheimer-Castellanos",
            "phone": "+15125550101", "email": "maximiliana.oppenheimer-castellanos@solar-installers.example"}))
        .await;
    let start = (chrono::Utc::now() + chrono::Duration::days(2))
        .date_naive()
        .and_hms_opt(15, 0, 0)
        .map(|t| t.and_utc().to_rfc3339())
        .unwrap_or_default();
    let booked = server
        .post(
            &key,
            "/v1/leads/l-1/meetings",
            &json!({"calendar": "sales", "start": start}),
        )
        .await;
    assert_eq!(booked.status, 201, "{:?}", booked.body);
    for (channel, text) in [
        (
            "sms",
            "I agree to receive texts from Acme Solar about my quote and installation",
        ),
        (
            "email",
            "Yes, email me the quote and the installation schedule for the roof",
        ),
    ] {
        let given = server
            .post(&key, "/v1/leads/l-1/consent", &json!({"channel": channel, "status": "granted", "source": "web_form",
                "proof": {"text": text, "url": "https://acme-solar-installers.example/forms/quote-request-2027"}}))
            .await;
        assert!(given.status < 300, "{:?}", given.body);
    }
    server
        .user("acme", "ana@acme.example", "Ana Ruiz", "admin")
        .await
}

/// The conversation's, the sidebar's and the reply box's boxes, in pixels.
const MEASURE: &str =
    "const c = document.querySelector('.columns > .conversation').getBoundingClientRect(); \
    const s = document.querySelector('.columns > .sidebar').getBoundingClientRect(); \
    const m = document.getElementById('message').getBoundingClientRect(); \
    const all = document.querySelector('.columns').getBoundingClientRect(); \
    return [c.width, all.width, window.innerWidth, m.width, s.top - c.bottom, s.left - c.left];";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_1280_pixels_the_conversation_keeps_the_page() {
    let server = TestServer::start().await;
    let password = lead_with_a_full_sidebar(&server).await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.goto("/console/leads/l-1").await;
    browser.wait_for_text("Meetings").await;
    browser.wait_for_text("I agree to receive texts").await;
    let m = browser.run(MEASURE).await;
    let n = |i: usize| m[i].as_f64().unwrap_or_default();
    let (conversation, columns, viewport, reply) = (n(0), n(1), n(2), n(3));
    assert!(
        conversation >= 0.6 * viewport && conversation >= 0.65 * columns,
        "the conversation is {conversation} px of {columns} (viewport {viewport})"
    );
    assert!(reply >= 400.0, "the reply box is {reply} px wide");
    assert!(
        n(5) > conversation,
        "the sidebar is beside the conversation"
    );
    let faults = browser.layout_faults().await;
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_360_pixels_the_sidebar_follows_the_conversation() {
    let server = TestServer::start().await;
    let password = lead_with_a_full_sidebar(&server).await;
    let browser = Browser::phone(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.goto("/console/leads/l-1").await;
    browser.wait_for_text("I agree to receive texts").await;
    let m = browser.run(MEASURE).await;
    let n = |i: usize| m[i].as_f64().unwrap_or_default();
    assert!(
        n(4) >= 0.0,
        "the sidebar starts below the conversation: {m}"
    );
    assert!(n(0) <= n(2), "the conversation fits the viewport: {m}");
    let faults = browser.layout_faults().await;
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

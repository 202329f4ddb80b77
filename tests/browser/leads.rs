//! The leads list: filters, search, the total, and a phone's width.

use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;
use serde_json::json;

async fn three_leads(server: &TestServer) -> String {
    let key = server.key("acme", "write").await;
    for (id, first, last, phone, hot) in [
        ("l-1", "Ada", "Lovelace", "+15125550101", true),
        ("l-2", "Grace", "Hopper", "+15125550102", false),
        ("l-3", "Alan", "Turing", "+15125550103", true),
    ] {
        server
            .create_lead(
                &key,
                &json!({"id": id, "firstName": first, "lastName": last, "phone": phone}),
            )
            .await;
        if hot {
            server
                .patch(&key, &format!("/v1/leads/{id}"), &json!({"isHot": true}))
                .await;
        }
    }
    key
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leads_filters_and_search_narrow_the_list_and_its_total() {
    let server = TestServer::start().await;
    let key = three_leads(&server).await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "viewer")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    browser.click_link("Leads").await;
    browser.wait_for_text("3 leads").await;

    browser.select("Hot", "Yes").await;
    browser.click_button("Filter").await;
    browser.wait_for_text("2 leads").await;
    let text = browser.text().await;
    assert!(
        text.contains("Ada Lovelace") && text.contains("Alan Turing"),
        "{text}"
    );
    assert!(!text.contains("Grace Hopper"), "{text}");

    browser.fill("Search", "turing").await;
    browser.click_button("Filter").await;
    browser.wait_for_text("1 lead").await;
    assert!(browser.text().await.contains("Alan Turing"));

    // The same query for integrators.
    let found = server.get(&key, "/v1/leads/search?hot=true&q=turing").await;
    assert_eq!(found.status, 200);
    let ids: Vec<String> = found.json()["leads"]
        .as_array()
        .expect("leads")
        .iter()
        .map(|l| l["id"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(ids, ["l-3"]);
    let refused = server.get(&key, "/v1/leads/search?isHot=true").await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.json()["message"], "Unknown parameter: isHot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leads_page_fits_a_phone() {
    let server = TestServer::start().await;
    three_leads(&server).await;
    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::phone(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.wait_for_text("Sign out").await;
    browser.goto("/console/leads").await;
    browser.wait_for_text("3 leads").await;
    let width = browser
        .run("return document.documentElement.scrollWidth;")
        .await;
    let wide = browser
        .run("return Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > 361).map(e => e.tagName + '.' + e.className + '#' + e.id + ' ' + Math.round(e.getBoundingClientRect().right)).slice(0, 12);")
        .await;
    assert!(
        width.as_u64().is_some_and(|w| w <= 360),
        "no sideways scrolling: {width} {wide}"
    );
    browser.goto("/console/leads/l-1").await;
    browser.wait_for_text("Ada Lovelace").await;
    let width = browser
        .run("return document.documentElement.scrollWidth;")
        .await;
    assert!(
        width.as_u64().is_some_and(|w| w <= 360),
        "no sideways scrolling: {width}"
    );
}

//! "Export CSV" on the leads page: the lead's fields, each channel's subscription and
//! the DNC list, then a column `additionalInfo.<key>` for each key the set uses; a lead
//! who texted STOP exports `smsSubscribed` false. Fetched with the browser's session.

use hyper::Method;
use serde_json::json;

use engaged::domain::people::sessions::COOKIE;
use engaged::testkit::browser::Browser;
use engaged::testkit::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_csv_carries_subscriptions_dnc_and_additional_fields() {
    let server = TestServer::start().await;
    let key = server.key("acme", "write").await;
    server
        .create_lead(
            &key,
            &json!({"id": "derek", "firstName": "Derek", "phone": "+15125550101",
                "additionalInfo": {"Roof type": "tile", "Monthly bill": 120}}),
        )
        .await;
    server
        .create_lead(
            &key,
            &json!({"id": "priya", "firstName": "Priya", "phone": "+15125550102",
                "additionalInfo": {"Notes": "Call, after 5"}}),
        )
        .await;
    let stop = server
        .send_json(
            Method::POST,
            &key,
            "/v1/inbound/sms",
            &json!({"from": "+15125550101", "text": "STOP"}),
        )
        .await;
    assert!(stop.status < 300, "{}", stop.text());
    let dnc = server
        .post(&key, "/v1/dnc/register", &json!({"phone": "+15125550102"}))
        .await;
    assert!(dnc.status < 300, "{}", dnc.text());

    let password = server
        .user("acme", "ana@acme.example", "Ana Ruiz", "agent")
        .await;
    let browser = Browser::open(&server).await;
    browser.sign_in("ana@acme.example", &password).await;
    browser.click_link("Leads").await;
    browser.wait_for_text("Export CSV").await;
    let href = browser
        .run("return document.evaluate(\"//a[normalize-space(.)='Export CSV']\", document, null, 9, null).singleNodeValue.getAttribute('href')")
        .await;
    let href = href.as_str().expect("the link's address").to_string();
    let cookie = browser
        .cookies()
        .await
        .into_iter()
        .find(|c| c.name() == COOKIE)
        .expect("the session cookie");
    let csv = server
        .console(Method::GET, &href, Some(cookie.value()), None, &[])
        .await;
    assert_eq!(csv.status, 200);
    let text = csv.text();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .expect("header")
        .iter()
        .map(str::to_string)
        .collect();
    let tail: Vec<&str> = header.iter().skip(15).map(String::as_str).collect();
    assert_eq!(
        tail,
        vec![
            "smsSubscribed",
            "voiceSubscribed",
            "emailSubscribed",
            "dnc",
            "additionalInfo.Roof type",
            "additionalInfo.Monthly bill",
            "additionalInfo.Notes"
        ],
        "{text}"
    );
    let rows: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.expect("row").iter().map(str::to_string).collect())
        .collect();
    let row = |id: &str| {
        rows.iter()
            .find(|r| r[0] == id)
            .unwrap_or_else(|| panic!("{id} in {text}"))
            .iter()
            .skip(15)
            .map(String::as_str)
            .collect::<Vec<_>>()
    };
    // STOP opts out of SMS, and of voice with it (the organization couples them).
    assert_eq!(
        row("derek"),
        vec!["false", "false", "true", "false", "tile", "120", ""]
    );
    assert_eq!(
        row("priya"),
        vec!["true", "true", "true", "true", "", "", "Call, after 5"]
    );
}

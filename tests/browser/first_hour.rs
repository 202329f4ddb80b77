//! "The first hour": what a new user does, in one walk through a real headless Chromium
//! at 1280 pixels, by labels and visible words only. The setup link from the server's
//! log creates the first admin of "Acme Solar"; Settings → Organization takes the time
//! zone, the country and the quiet hours as people write them ("Central Time", "USA",
//! "9pm"); Settings → Assistant connects the test kit's fake model; Settings →
//! Calendars makes "sales" with "9am-5pm" on weekdays; a new campaign with one SMS
//! step; a CSV of 30 leads imported into it; one lead replies by SMS and the assistant
//! answers; from the inbox, a meeting is booked with that lead by clicking a time.
//!
//! Each form must take one save. Each stage is timed and printed as a table with the
//! person's actions (links opened, fields typed or chosen, clicks) and its form's saves
//! (`--nocapture` shows it); nothing asserts a time.

use std::cell::Cell;
use std::time::{Duration, Instant};

use chrono::Datelike;
use serde_json::json;

use engaged::testkit::browser::Browser;
use engaged::testkit::model::{FakeModel, Step};
use engaged::testkit::TestServer;

/// The 30 leads' first and last names: lead `i` is `FIRST[i % 10] LAST[i / 10]`.
const FIRST: [&str; 10] = [
    "Maria", "James", "Linda", "Robert", "Susan", "David", "Karen", "Miguel", "Nancy", "Peter",
];
const LAST: [&str; 3] = ["Gonzalez", "Whitfield", "Okafor"];

/// The lead who replies (the 8th row): Miguel Gonzalez, (512) 555-0108.
const REPLYING: usize = 7;

/// A CSV as a CRM exports it: 30 leads with US phones written without +1, and their
/// time zones; the replying lead's is `daytime` (see [`daytime_zone`]).
fn leads_csv(daytime: &str) -> String {
    let mut csv = String::from("First Name,Last Name,Phone Number,Email,Time Zone\n");
    for i in 0..30 {
        let (first, last) = (FIRST[i % 10], LAST[i / 10]);
        let zone = if i == REPLYING {
            daytime
        } else {
            "America/Chicago"
        };
        csv.push_str(&format!(
            "{first},{last},(512) 555-{:04},{}.{}@example.com,{zone}\n",
            101 + i,
            first.to_lowercase(),
            last.to_lowercase()
        ));
    }
    csv
}

/// A time zone where it is now between 10:00 and 18:59: the replying lead's, so that
/// the organization's quiet hours (9pm to 8am, in the lead's zone) never defer the
/// assistant's answer, whenever the test runs. Chicago (the organization's own) when
/// it is day there.
fn daytime_zone() -> &'static str {
    use chrono::Timelike;
    let now = chrono::Utc::now();
    ["America/Chicago", "Europe/London", "Asia/Tokyo"]
        .into_iter()
        .find(|zone| {
            zone.parse::<chrono_tz::Tz>()
                .is_ok_and(|tz| (10..19).contains(&now.with_timezone(&tz).hour()))
        })
        .unwrap_or("America/Chicago")
}

/// A person at the browser: what they do (open a link, type into a field, choose an
/// option or a file, click) counted as actions, and their form submissions as saves,
/// for the stage under way.
struct User<'a> {
    browser: &'a Browser,
    actions: Cell<u32>,
    saves: Cell<u32>,
}

impl<'a> User<'a> {
    fn new(browser: &'a Browser) -> User<'a> {
        User {
            browser,
            actions: Cell::new(0),
            saves: Cell::new(0),
        }
    }

    fn act(&self) {
        self.actions.set(self.actions.get() + 1);
    }

    async fn goto(&self, path: &str) {
        self.act();
        self.browser.goto(path).await;
    }

    async fn fill(&self, label: &str, text: &str) {
        self.act();
        self.browser.fill(label, text).await;
    }

    async fn select(&self, label: &str, option: &str) {
        self.act();
        self.browser.select(label, option).await;
    }

    async fn attach(&self, label: &str, path: &std::path::Path) {
        self.act();
        self.browser.attach(label, path).await;
    }

    async fn click_button(&self, text: &str) {
        self.act();
        self.browser.click_button(text).await;
    }

    async fn click_link(&self, text: &str) {
        self.act();
        self.browser.click_link(text).await;
    }

    /// Submits a form with its button `text` and waits for `saved`: a refusal instead
    /// fails the walk with the page it showed, so each form is asserted to take one.
    async fn save(&self, button: &str, saved: &str) {
        self.saves.set(self.saves.get() + 1);
        self.click_button(button).await;
        self.browser.wait_for_text(saved).await;
    }
}

/// One stage of the walk: its time, the person's actions, and its form's saves.
struct Stage {
    name: &'static str,
    took: Duration,
    actions: u32,
    form: &'static str,
    saves: u32,
}

/// The stages walked, in order.
#[derive(Default)]
struct Walk {
    stages: Vec<Stage>,
}

impl Walk {
    /// Ends the stage `name` begun at `started`, whose form (if any) is `form`: takes
    /// (and clears) what `user` counted.
    fn stage(&mut self, name: &'static str, started: Instant, form: &'static str, user: &User<'_>) {
        self.stages.push(Stage {
            name,
            took: started.elapsed(),
            actions: user.actions.replace(0),
            form,
            saves: user.saves.replace(0),
        });
    }

    fn table(&self) -> String {
        let mut out = format!(
            "{:<36} {:>10} {:>8}  {}\n",
            "stage", "time", "actions", "form: saves"
        );
        let (mut took, mut actions, mut saves) = (Duration::ZERO, 0, 0);
        for stage in &self.stages {
            took += stage.took;
            actions += stage.actions;
            saves += stage.saves;
            let form = if stage.form.is_empty() {
                String::from("-")
            } else {
                format!("{}: {}", stage.form, stage.saves)
            };
            out.push_str(&format!(
                "{:<36} {:>7} ms {:>8}  {form}\n",
                stage.name,
                stage.took.as_millis(),
                stage.actions
            ));
        }
        out.push_str(&format!(
            "{:<36} {:>7} ms {:>8}  saves: {saves}\n",
            "total",
            took.as_millis(),
            actions
        ));
        out
    }
}

/// The value the field labelled `label` holds.
async fn value(browser: &Browser, label: &str) -> String {
    browser
        .field(label)
        .await
        .prop("value")
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Waits (at most 20 seconds) until the page shows `text`: what the assistant answers
/// after its reply delay, pushed to the open page.
async fn wait_long_for(browser: &Browser, text: &str) {
    let started = Instant::now();
    loop {
        let shown = browser.text().await;
        if shown.contains(text) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the page never showed {text:?}; it shows:\n{shown}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A weekday at least two days from now (`YYYY-MM-DD`, the same in Chicago and UTC
/// then): one the calendar has open times on.
fn next_weekday() -> chrono::NaiveDate {
    let mut day = (chrono::Utc::now() + chrono::Duration::days(2)).date_naive();
    while day.weekday().number_from_monday() > 5 {
        day += chrono::Duration::days(1);
    }
    day
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_hour_from_the_setup_link_to_a_booked_meeting() {
    let (captured, guard) = engaged::testkit::logs::Captured::install(tracing::Level::INFO);
    let server = TestServer::start().await;
    let link = captured
        .setup_path()
        .expect("the start log holds the setup link");
    drop(guard);
    let model = FakeModel::start().await;
    let browser = Browser::open(&server).await;
    let user = User::new(&browser);
    let mut walk = Walk::default();

    // 1. The setup link: the first admin, of "Acme Solar".
    let started = Instant::now();
    user.goto(&link).await;
    browser.wait_for_text("Set up engaged").await;
    user.fill("Organization", "Acme Solar").await;
    user.fill("Email", "ana@acme.example").await;
    user.fill("Name", "Ana Ruiz").await;
    user.fill("Password", "a long enough password").await;
    user.save("Create admin", "Sign out").await;
    assert_eq!(browser.path().await, "/console/inbox");
    walk.stage("1 setup link → first admin", started, "setup", &user);
    let admin = server.key("Acme Solar", "admin").await;

    // 2. Settings → Organization, as people write a zone, a country and times.
    let started = Instant::now();
    user.click_link("Settings").await;
    user.click_link("Organization").await;
    browser.wait_for_text("Business name").await;
    user.fill("Time zone", "Central Time").await;
    user.fill("Default country", "USA").await;
    user.fill("Quiet hours from", "9pm").await;
    user.fill("Quiet hours until", "8am").await;
    user.save("Save", "Saved.").await;
    assert_eq!(value(&browser, "Time zone").await, "America/Chicago");
    assert_eq!(value(&browser, "Default country").await, "US");
    walk.stage("2 settings → organization", started, "organization", &user);
    let org = server.get(&admin, "/v1/org").await.json();
    assert_eq!(org["timeZone"], json!("America/Chicago"), "{org}");
    assert_eq!(org["defaultCountry"], json!("US"), "{org}");
    assert!(
        org["quietHours"].to_string().contains("21:00")
            && org["quietHours"].to_string().contains("08:00"),
        "{org}"
    );

    // 3. Settings → Assistant: the fake model, tried once.
    let started = Instant::now();
    user.click_link("Assistant").await;
    browser.wait_for_text("Model server URL").await;
    user.fill("Model server URL", &model.base_url()).await;
    user.fill("Model", FakeModel::MODEL).await;
    user.fill("API key", FakeModel::API_KEY).await;
    user.save("Save assistant", "Saved.").await;
    user.click_button("Test connection").await;
    browser.wait_for_text("The assistant answered in").await;
    walk.stage("3 settings → assistant", started, "assistant", &user);

    // 4. Settings → Calendars: "sales", weekdays 9am-5pm, in the organization's zone.
    let started = Instant::now();
    user.click_link("Calendars").await;
    browser.wait_for_text("No calendar yet.").await;
    user.fill("Name", "sales").await;
    assert_eq!(
        value(&browser, "Time zone").await,
        "America/Chicago",
        "a new calendar starts in the organization's zone"
    );
    for day in ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"] {
        user.fill(day, "9am-5pm").await;
    }
    user.save("Save calendar", "Saved.").await;
    walk.stage("4 settings → calendars", started, "calendar", &user);
    let calendar = server.get(&admin, "/v1/calendars/sales").await.json();
    assert_eq!(
        calendar["hours"]["fri"],
        json!([["09:00", "17:00"]]),
        "{calendar}"
    );

    // 5. Campaigns → New campaign, one SMS step.
    let started = Instant::now();
    user.click_link("Campaigns").await;
    user.click_link("New campaign").await;
    browser.wait_for_text("Cadence").await;
    user.fill("Campaign name", "Spring Solar Push").await;
    user.fill(
        "Instructions",
        "You are Sam from Acme Solar. Answer briefly and offer a meeting.",
    )
    .await;
    user.fill("Reply delay", "1s").await;
    user.select("Calendar", "sales").await;
    user.fill(
        "Text (step 1)",
        "Hi {{firstName}}, Sam from Acme Solar: would solar save you money? Reply to talk.",
    )
    .await;
    user.save("Save", "Funnel").await;
    walk.stage("5 new campaign", started, "campaign", &user);
    assert_eq!(browser.path().await, "/console/campaigns/spring-solar-push");

    // 6. Leads → Import: 30 leads into the campaign.
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("leads.csv");
    let daytime = daytime_zone();
    std::fs::write(&file, leads_csv(daytime)).expect("write the file");
    let started = Instant::now();
    user.click_link("Leads").await;
    user.click_link("Import").await;
    user.attach("File", &file).await;
    user.click_button("Upload and preview").await;
    browser.wait_for_text("What importing would do").await;
    user.select("Add the imported leads to a campaign", "Spring Solar Push")
        .await;
    user.save("Import", "Import done").await;
    browser.wait_for_text("30 created").await;
    walk.stage("6 import 30 leads", started, "import", &user);
    let found = server.get(&admin, "/v1/leads/search").await.json();
    assert_eq!(found["total"], json!(30), "{found}");

    // 7. One lead replies by SMS; the assistant answers after its reply delay.
    let key = server.key("Acme Solar", "write").await;
    let name = format!("{} {}", FIRST[REPLYING % 10], LAST[REPLYING / 10]);
    let answer = "Great to hear, Miguel! Would Tuesday morning suit you for a call?";
    model.push(Step::text(answer));
    let started = Instant::now();
    user.click_link("Inbox").await;
    browser.wait_for_text("Sign out").await;
    let reply = server
        .post(
            &key,
            "/v1/inbound/sms",
            &json!({"from": format!("+1512555{:04}", 101 + REPLYING), "text": "Yes, I'm interested. How much would it cost?"}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    // The count of "Replied" moves without a reload; its tab lists the lead.
    browser.wait_for_text("Replied (1)").await;
    user.click_link("Replied (1)").await;
    browser
        .wait_for_text("Yes, I'm interested. How much would it cost?")
        .await;
    wait_long_for(&browser, answer).await;
    walk.stage("7 a lead replies, assistant answers", started, "", &user);
    let lead = server
        .get(
            &admin,
            &format!("/v1/leads/search?q={}", FIRST[REPLYING % 10]),
        )
        .await
        .json();
    let lead_id = lead["leads"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(lead["leads"][0]["timeZone"], json!(daytime), "{lead}");
    assert_eq!(
        lead["leads"][0]["customerProfile"],
        json!("spring-solar-push"),
        "{lead}"
    );
    let messages = server
        .get(&admin, &format!("/v1/leads/{lead_id}/messages"))
        .await
        .json();
    let sent = |origin: &str| {
        messages["messages"].as_array().map(|all| {
            all.iter()
                .filter(|m| m["origin"] == json!(origin))
                .map(|m| {
                    m["content"]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        sent("cadence"),
        Some(vec![
            "Hi Miguel, Sam from Acme Solar: would solar save you money? Reply to talk.".into()
        ]),
        "the campaign's step went out at once: {messages}"
    );
    assert_eq!(
        sent("assistant"),
        Some(vec![answer.to_string()]),
        "{messages}"
    );

    // 8. Inbox → the lead → Book a meeting → a time.
    let day = next_weekday();
    let started = Instant::now();
    user.click_link(&name).await;
    browser.wait_for_text("Book a meeting").await;
    user.select("Calendar", "sales").await;
    // A date field takes the date as the browser's (en-US) locale writes it.
    user.fill("Day", &day.format("%m/%d/%Y").to_string()).await;
    user.click_button("Show open times").await;
    browser
        .wait_for_text(&format!("Meetings with {name}"))
        .await;
    browser
        .wait_for_text(&format!("Open times on {}", day.format("%A %Y-%m-%d")))
        .await;
    user.save("9:00 AM", "Meeting booked.").await;
    walk.stage("8 inbox → lead → book a meeting", started, "booking", &user);
    browser.wait_for_text("Ana Ruiz").await;
    let meetings = server.get(&admin, "/v1/meetings").await.json();
    assert_eq!(
        meetings["meetings"].as_array().map(Vec::len),
        Some(1),
        "{meetings}"
    );
    assert!(
        meetings["meetings"][0]["start"].as_str().is_some_and(|s| s
            .starts_with(&format!("{}T15:00", day.format("%Y-%m-%d")))
            || s.starts_with(&format!("{}T14:00", day.format("%Y-%m-%d")))),
        "9:00 AM in Chicago: {meetings}"
    );
    assert_eq!(
        meetings["meetings"][0]["leadId"],
        json!(lead_id),
        "{meetings}"
    );

    println!("\nThe first hour at 1280 px:\n{}", walk.table());
}

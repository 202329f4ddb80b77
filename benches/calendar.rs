//! Calendars measured: `find_times` (a snapshot, the calendar's booked meetings in the
//! window, `availability::open_times`) over a calendar holding 10,000 booked meetings
//! with 2,000 external busy intervals passed in; a booking's latency over HTTPS with the
//! built-in calendar (the slot re-checked in its write); 100 concurrent bookings of one
//! slot (exactly one booked); and `find_times` taking the 2,000 busy intervals from the
//! CalDAV `BusyCache` (a cache hit, as `Engine::external_busy` reads it).
//!
//! `cargo bench --bench calendar` (not criterion: it prints one measured run).

mod support;

use std::time::{Duration, Instant};

use serde_json::json;

use engaged::domain::records::meetings;
use engaged::domain::settings::calendars::{self, CalendarInput};
use engaged::engine::calendar_sync::{BusyKey, CACHE_CALENDARS};
use engaged::providers::caldav::{Busy, BusyCache};
use engaged::store::calendars::{BookedBy, CalendarSync, MeetingRecord, MeetingStatus};
use engaged::testkit::TestServer;

const MINUTE: i64 = 60_000_000;
const DAY: i64 = 24 * 60 * MINUTE;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

fn all_day(days_ahead: u32) -> serde_json::Value {
    let day = json!([["00:00", "24:00"]]);
    json!({"timeZone": "America/New_York",
        "hours": {"mon": day, "tue": day, "wed": day, "thu": day, "fri": day, "sat": day, "sun": day},
        "meetingMinutes": 30, "bufferMinutes": 10, "minNoticeMinutes": 0, "daysAhead": days_ahead})
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn run() {
    let ts = TestServer::start().await;
    let store = ts.server.store();
    let write = ts.key("acme", "write").await;
    let admin = ts.key("acme", "admin").await;
    let caller = engaged::domain::records::auth::authenticate(
        store,
        Some(&admin),
        engaged::store::rows::Scope::Admin,
    )
    .expect("caller");

    // A calendar of 180 days ahead holding 10,000 booked meetings: 40 minutes apart from
    // 100 days ago to about 178 days on, stored directly (they need not be open slots).
    for name in ["big", "book"] {
        let input = CalendarInput::from_json(&support::object(all_day(180))).expect("calendar");
        let c = caller.clone();
        store
            .write(move |tx| calendars::put(tx, &c, name, &input, Default::default()))
            .await
            .expect("put calendar");
    }
    let lead = ts
        .create_lead(
            &write,
            &json!({"firstName": "Bench", "phone": "+15550009999"}),
        )
        .await;
    let lead_id = lead["id"].as_str().expect("id").to_string();
    let now = engaged::time::now_micros();
    let first = now - 100 * DAY;
    for chunk in 0..20 {
        let org = caller.org_id.clone();
        let lead_id = lead_id.clone();
        store
            .write(move |tx| {
                for i in chunk * 500..(chunk + 1) * 500 {
                    let start = first + i64::from(i) * 40 * MINUTE;
                    let m = MeetingRecord {
                        id: format!("mtg_bench_{i:05}"),
                        lead_id: lead_id.clone(),
                        calendar: "big".into(),
                        start,
                        end: start + 30 * MINUTE,
                        time_zone: "UTC".into(),
                        status: MeetingStatus::Booked,
                        booked_by: BookedBy::Api,
                        location: String::new(),
                        calendar_sync: CalendarSync::None,
                        sync_error: String::new(),
                        sequence: 0,
                        created_at: now,
                        updated_at: tx.tick(),
                        etag: String::new(),
                        etag_collection: String::new(),
                    };
                    tx.put_meeting(&org, &m, None)?;
                }
                Ok(())
            })
            .await
            .expect("seed meetings");
    }
    // 2,000 external busy intervals of 20 minutes over the next 180 days.
    let external: Vec<(i64, i64)> = (0..2000)
        .map(|i| {
            let start = now + i * (180 * DAY / 2000) + 7 * MINUTE;
            (start, start + 20 * MINUTE)
        })
        .collect();

    let measure = |label: &str, from: Option<i64>, to: Option<i64>| {
        let mut samples = Vec::with_capacity(1000);
        let mut found = 0;
        for _ in 0..1000 {
            let started = Instant::now();
            let read = store.read().expect("read");
            let (_, times) =
                meetings::open_times(&read, &caller, "big", from, to, &external).expect("times");
            samples.push(started.elapsed());
            found = times.len();
        }
        println!(
            "find_times {label} (10,000 booked, 2,000 external busy; {found} times): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            ms(support::percentile(&samples, 0.5)),
            ms(support::percentile(&samples, 0.99)),
            ms(support::percentile(&samples, 1.0)),
        );
    };
    measure("first 500 of 180 days", None, None);
    measure(
        "one day a week on",
        Some(now + 7 * DAY),
        Some(now + 8 * DAY),
    );
    measure("the last 30 days", Some(now + 150 * DAY), None);

    // The same 2,000 busy intervals as a CalDAV collection's, read from the engine's
    // `BusyCache` as `Engine::external_busy` does on a hit (lookup, copy, conversion).
    let cache: BusyCache<BusyKey> = BusyCache::new(CACHE_CALENDARS);
    let key: BusyKey = (
        caller.org_id.clone(),
        "big".into(),
        "https://cal.example/ana/".into(),
        "ana".into(),
    );
    let utc = |t: i64| chrono::DateTime::from_timestamp_micros(t).expect("time");
    let cached: Vec<Busy> = external
        .iter()
        .map(|&(start, end)| Busy {
            start: utc(start),
            end: utc(end),
        })
        .collect();
    let (span_from, span_to) = (utc(now - DAY), utc(now + 182 * DAY));
    cache.put(key.clone(), span_from, span_to, cached);
    let mut samples = Vec::with_capacity(1000);
    let mut found = 0;
    for _ in 0..1000 {
        let started = Instant::now();
        let hit = cache.get(&key, span_from, span_to).expect("a fresh entry");
        let busy: Vec<(i64, i64)> = hit
            .busy
            .iter()
            .map(|b| (b.start.timestamp_micros(), b.end.timestamp_micros()))
            .collect();
        let read = store.read().expect("read");
        let (_, times) =
            meetings::open_times(&read, &caller, "big", None, None, &busy).expect("times");
        samples.push(started.elapsed());
        found = times.len();
    }
    println!(
        "find_times with the BusyCache (10,000 booked, 2,000 cached CalDAV busy; {found} times): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        ms(support::percentile(&samples, 0.5)),
        ms(support::percentile(&samples, 0.99)),
        ms(support::percentile(&samples, 1.0)),
    );

    // Bookings over HTTPS, one after another, each on its own open slot.
    let read = store.read().expect("read");
    let (_, slots) = meetings::open_times(&read, &caller, "book", None, None, &[]).expect("slots");
    drop(read);
    let mut samples = Vec::new();
    // Every other slot: a 10-minute buffer closes the neighbours of a booked one.
    for start in slots.iter().step_by(2).take(200) {
        let body = json!({"calendar": "book", "start": engaged::time::format(*start)});
        let started = Instant::now();
        let r = ts
            .post(&write, &format!("/v1/leads/{lead_id}/meetings"), &body)
            .await;
        samples.push(started.elapsed());
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }
    println!(
        "booking over HTTPS ({} sequential, built-in calendar): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        samples.len(),
        ms(support::percentile(&samples, 0.5)),
        ms(support::percentile(&samples, 0.99)),
        ms(support::percentile(&samples, 1.0)),
    );

    // 100 concurrent bookings of one slot.
    let mut leads = Vec::new();
    for i in 0..100 {
        let l = ts
            .create_lead(
                &write,
                &json!({"firstName": format!("C{i}"), "phone": format!("+1555300{i:04}")}),
            )
            .await;
        leads.push(l["id"].as_str().expect("id").to_string());
    }
    let slot = engaged::time::format(slots[401]);
    let started = Instant::now();
    let answers = futures_util::future::join_all(leads.iter().map(|id| {
        let body = json!({"calendar": "book", "start": slot});
        let path = format!("/v1/leads/{id}/meetings");
        let ts = &ts;
        let write = &write;
        async move { ts.post_until_answered(write, &path, &body).await.status }
    }))
    .await;
    let elapsed = started.elapsed();
    let booked = answers.iter().filter(|s| **s == 201).count();
    let refused = answers.iter().filter(|s| **s == 409).count();
    println!(
        "100 concurrent bookings of one slot: {booked} booked, {refused} × 409, all answered in {:.1} ms",
        ms(elapsed)
    );
    assert_eq!((booked, refused), (1, 99));
}

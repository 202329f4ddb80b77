//! Incremental sync under concurrent writers: unique `updatedAt`, keyset pagination that
//! never skips, and a client following the sync recipe of docs/api.md that ends with an exact copy.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

use engaged::testkit::{enc, TestServer};

use crate::answers::*;
use crate::requests::*;

const WRITERS: usize = 4;
const WRITES: usize = 50;

/// One writer: creates its own leads, patches them, posts events and messages on them,
/// and also writes to the lead `shared` that every writer touches.
async fn writer(ts: &TestServer, key: &str, w: usize, done: &AtomicUsize) {
    let mut own: Vec<String> = Vec::new();
    for i in 0..WRITES {
        let pick = |own: &Vec<String>| own[i % own.len()].clone();
        match i % 5 {
            0 => {
                let id = format!("w{w}-{i}");
                ts.create_lead(
                    key,
                    &json!({"id": id, "firstName": format!("W{w}"), "phone": format!("+1555{:07}", w * 10_000 + i)}),
                )
                .await;
                own.push(id);
            }
            1 => {
                let id = pick(&own);
                let body = json!({"lastName": format!("L{i}"), "additionalInfo": {"step": i, format!("k{i}"): true}});
                expect(&ts.patch(key, &lead_path(&id), &body).await, 200);
            }
            2 => {
                // Concurrent upserts of the same few events of the shared lead.
                let body = json!({"type": "CUSTOM", "id": format!("e{}", i % 3), "data": {"by": w, "i": i}});
                post_event(ts, key, "shared", &body).await;
            }
            3 => {
                let id = pick(&own);
                if i % 2 == 0 {
                    let msg = json!({"owner": "lead", "channel": "sms", "content": {"text": format!("m{w}-{i}")}});
                    expect(
                        &ts.post(key, &format!("/v1/leads/{id}/messages"), &msg)
                            .await,
                        201,
                    );
                } else {
                    post_event(
                        ts,
                        key,
                        &id,
                        &json!({"type": "TOOL_CALL", "data": {"i": i}}),
                    )
                    .await;
                    post_event(
                        ts,
                        key,
                        &id,
                        &json!({"type": "CUSTOM", "id": "state", "data": {"i": i}}),
                    )
                    .await;
                }
            }
            _ => {
                let body = json!({"additionalInfo": {format!("w{w}"): i}});
                expect(&ts.patch(key, "/v1/leads/shared", &body).await, 200);
            }
        }
    }
    done.fetch_add(1, Ordering::SeqCst);
}

/// The client's copy, built only from what the sync recipe reads.
#[derive(Default)]
struct Replica {
    cursor: Option<String>,
    leads: BTreeMap<String, Value>,
    seen_activity: HashMap<String, String>,
    event_since: HashMap<String, String>,
    events: BTreeMap<(String, String, String), Value>,
}

fn later(a: &str, b: &str) -> bool {
    time_of(&json!(a)) > time_of(&json!(b))
}

impl Replica {
    async fn pass(&mut self, ts: &TestServer, key: &str) {
        let since = self.cursor.clone().unwrap_or_else(|| EPOCH.to_string());
        let (leads, _) = walk(
            ts,
            key,
            &format!("/v1/leads?updatedSince={}&limit=7", enc(&since)),
            "leads",
        )
        .await;
        let mut max = self.cursor.clone();
        for lead in leads {
            let id = str_of(&lead["id"]).to_string();
            let updated = str_of(&lead["updatedAt"]).to_string();
            if max.as_deref().is_none_or(|m| later(&updated, m)) {
                max = Some(updated.clone());
            }
            let newer = self
                .leads
                .get(&id)
                .is_none_or(|old| !later(str_of(&old["updatedAt"]), &updated));
            if !newer {
                continue;
            }
            let activity = str_of(&lead["lastActivityAt"]).to_string();
            self.leads.insert(id.clone(), lead);
            if self.seen_activity.get(&id) == Some(&activity) {
                continue;
            }
            // lastActivityAt moved: fetch the lead's events since the largest updatedAt seen.
            let from = self
                .event_since
                .get(&id)
                .cloned()
                .unwrap_or_else(|| EPOCH.to_string());
            let path = format!("/v1/leads/{id}/events?since={}&limit=5", enc(&from));
            let (events, _) = walk(ts, key, &path, "events").await;
            for e in events {
                let at = str_of(&e["updatedAt"]).to_string();
                if self.event_since.get(&id).is_none_or(|s| later(&at, s)) {
                    self.event_since.insert(id.clone(), at);
                }
                let k = (
                    id.clone(),
                    str_of(&e["type"]).to_string(),
                    str_of(&e["id"]).to_string(),
                );
                self.events.insert(k, e);
            }
            self.seen_activity.insert(id, activity);
        }
        self.cursor = max;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syncing_client_ends_with_an_exact_copy_under_concurrent_writers() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    ts.create_lead(&key, &json!({"id": "shared", "phone": "+15550009999"}))
        .await;
    let done = AtomicUsize::new(0);
    let mut replica = Replica::default();

    let syncer = async {
        let mut passes = 0;
        while done.load(Ordering::SeqCst) < WRITERS {
            replica.pass(&ts, &key).await;
            passes += 1;
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        // One final pass once every writer is done.
        replica.pass(&ts, &key).await;
        passes + 1
    };
    let (_, _, _, _, passes) = tokio::join!(
        writer(&ts, &key, 0, &done),
        writer(&ts, &key, 1, &done),
        writer(&ts, &key, 2, &done),
        writer(&ts, &key, 3, &done),
        syncer
    );
    assert!(passes >= 1);

    // The server's state, read from scratch.
    let server_leads = all_leads(&ts, &key).await;
    assert_eq!(
        server_leads.len(),
        1 + WRITERS * WRITES / 5,
        "every created lead is listed"
    );
    let mut server_events = BTreeMap::new();
    for lead in &server_leads {
        let id = str_of(&lead["id"]).to_string();
        for e in all_events(&ts, &key, &id).await {
            let k = (
                id.clone(),
                str_of(&e["type"]).to_string(),
                str_of(&e["id"]).to_string(),
            );
            assert!(
                server_events.insert(k.clone(), e).is_none(),
                "event {k:?} listed twice"
            );
        }
    }
    let server_leads: BTreeMap<String, Value> = server_leads
        .into_iter()
        .map(|l| (str_of(&l["id"]).to_string(), l))
        .collect();

    let client_ids: BTreeSet<_> = replica.leads.keys().collect();
    let server_ids: BTreeSet<_> = server_leads.keys().collect();
    assert_eq!(
        client_ids, server_ids,
        "the client has exactly the server's leads"
    );
    for (id, lead) in &server_leads {
        assert_eq!(
            &replica.leads[id], lead,
            "the client's copy of lead {id} is the latest"
        );
    }
    let client_keys: BTreeSet<_> = replica.events.keys().collect();
    let server_keys: BTreeSet<_> = server_events.keys().collect();
    assert_eq!(
        client_keys, server_keys,
        "the client has exactly the server's events"
    );
    for (k, e) in &server_events {
        assert_eq!(replica.events[k]["data"], e["data"], "data of event {k:?}");
        assert_eq!(&replica.events[k], e, "event {k:?}");
    }
    // The shared events were upserted, never duplicated.
    let shared: Vec<_> = server_events
        .keys()
        .filter(|(l, _, _)| l == "shared")
        .collect();
    assert_eq!(shared.len(), 3, "{shared:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updated_at_is_unique_across_concurrent_writes() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    ts.create_lead(&key, &json!({"id": "shared"})).await;
    let work = |w: usize| {
        let ts = &ts;
        let key = &key;
        async move {
            ts.create_lead(key, &json!({"id": format!("w{w}")})).await;
            for i in 0..15 {
                ts.create_lead(key, &json!({"id": format!("w{w}-{i}")}))
                    .await;
                post_event(
                    ts,
                    key,
                    "shared",
                    &json!({"type": "CUSTOM", "id": format!("w{w}-{i}")}),
                )
                .await;
                post_event(
                    ts,
                    key,
                    &format!("w{w}"),
                    &json!({"type": "CUSTOM", "id": format!("e{i}")}),
                )
                .await;
            }
        }
    };
    tokio::join!(work(0), work(1), work(2), work(3));

    let leads = all_leads(&ts, &key).await;
    assert_eq!(leads.len(), 1 + 4 + 4 * 15);
    let lead_times: BTreeSet<_> = leads
        .iter()
        .map(|l| str_of(&l["updatedAt"]).to_string())
        .collect();
    assert_eq!(
        lead_times.len(),
        leads.len(),
        "no two leads share an updatedAt"
    );
    for pair in leads.windows(2) {
        assert!(
            later(str_of(&pair[1]["updatedAt"]), str_of(&pair[0]["updatedAt"])),
            "strictly ascending"
        );
    }

    let mut event_times = BTreeSet::new();
    let mut count = 0;
    for lead in &leads {
        for e in all_events(&ts, &key, str_of(&lead["id"])).await {
            event_times.insert(str_of(&e["updatedAt"]).to_string());
            count += 1;
        }
    }
    assert_eq!(count, 4 * 15 * 2);
    assert_eq!(event_times.len(), count, "no two events share an updatedAt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_updated_during_a_walk_reappears_later_and_nothing_is_skipped() {
    let ts = TestServer::start().await;
    let key = ts.key("acme", "write").await;
    for i in 0..7 {
        ts.create_lead(&key, &json!({"id": format!("l{i}")})).await;
    }
    let base = format!("/v1/leads?updatedSince={}&limit=2", enc(EPOCH));
    let mut seen: Vec<Value> = Vec::new();
    let mut token: Option<String> = None;
    let mut page_no = 0;
    loop {
        let path = match &token {
            Some(t) => format!("{base}&nextToken={}", enc(t)),
            None => base.clone(),
        };
        let body = expect(&ts.get(&key, &path).await, 200);
        seen.extend(body["leads"].as_array().expect("leads").iter().cloned());
        page_no += 1;
        if page_no == 1 {
            // l0 was already passed; l3 is still ahead of the walk.
            expect(
                &ts.patch(&key, "/v1/leads/l0", &json!({"firstName": "changed"}))
                    .await,
                200,
            );
            expect(
                &ts.patch(&key, "/v1/leads/l3", &json!({"firstName": "moved"}))
                    .await,
                200,
            );
        }
        match &body["nextToken"] {
            Value::Null => break,
            Value::String(t) => token = Some(t.clone()),
            other => panic!("nextToken {other}"),
        }
        assert!(page_no < 100);
    }
    let order: Vec<&str> = seen.iter().map(|l| str_of(&l["id"])).collect();
    assert_eq!(
        order,
        ["l0", "l1", "l2", "l4", "l5", "l6", "l0", "l3"],
        "keyset walk by (updatedAt, id)"
    );
    assert_eq!(
        seen[6]["firstName"],
        json!("changed"),
        "the re-appearing l0 is the new version"
    );
    assert_eq!(seen[7]["firstName"], json!("moved"));
    let distinct: BTreeSet<&str> = order.iter().copied().collect();
    assert_eq!(distinct.len(), 7, "nothing skipped");
}

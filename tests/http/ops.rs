//! Operational endpoints: readiness, metrics, request ids.

use hyper::Method;

use engaged::testkit::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_answers_without_a_key_when_the_store_is_open() {
    let ts = TestServer::start().await;
    let r = ts
        .request(Method::GET, "/readyz", None, None, Vec::new())
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "ready");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_an_admin_key() {
    let ts = TestServer::start().await;
    let write = ts.key("acme", "write").await;
    assert_eq!(
        ts.request(Method::GET, "/metrics", None, None, Vec::new())
            .await
            .status,
        401
    );
    assert_eq!(ts.get(&write, "/metrics").await.status, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replica_status_needs_an_admin_key_and_says_when_replication_is_off() {
    let ts = TestServer::start().await;
    let write = ts.key("acme", "write").await;
    let admin = ts.key("acme", "admin").await;
    assert_eq!(
        ts.request(Method::GET, "/v1/admin/replica", None, None, Vec::new())
            .await
            .status,
        401
    );
    assert_eq!(ts.get(&write, "/v1/admin/replica").await.status, 403);
    let r = ts.get(&admin, "/v1/admin/replica").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), serde_json::json!({"enabled": false}));
    let metrics = ts.get(&admin, "/metrics").await;
    let text = String::from_utf8_lossy(&metrics.body).into_owned();
    assert!(
        !text.contains("engaged_replica_"),
        "no replica metrics when it is off"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_by_route_and_status_and_show_the_writer() {
    let ts = TestServer::start().await;
    let admin = ts.key("acme", "admin").await;
    ts.create_lead(&admin, &serde_json::json!({"id": "m1"}))
        .await;
    assert_eq!(ts.get(&admin, "/v1/leads/nope").await.status, 404);
    let r = ts.get(&admin, "/metrics").await;
    assert_eq!(r.status, 200);
    let content_type = r
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let text = String::from_utf8_lossy(&r.body).to_string();
    for needle in [
        "engaged_requests_total{route=\"create_lead\",status=\"201\"} 1",
        "engaged_requests_total{route=\"get_lead\",status=\"404\"} 1",
        "engaged_request_duration_seconds_bucket{route=\"create_lead\",le=\"+Inf\"} 1",
        "engaged_writer_batch_size_count",
        "engaged_writer_commit_seconds_bucket",
        "engaged_outbox_depth 0",
        "engaged_outbox_oldest_pending_seconds",
        "engaged_database_bytes",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_carries_a_request_id_and_keeps_a_given_one() {
    let ts = TestServer::start().await;
    let r = ts
        .request(Method::GET, "/healthz", None, None, Vec::new())
        .await;
    let generated = r
        .headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(generated.starts_with("req_"), "{generated}");
    let r = ts
        .request(Method::GET, "/v1/nope", None, None, Vec::new())
        .await;
    assert!(r.headers.contains_key("x-request-id"));
    let client = engaged::testkit::https_client(&ts.cert(), engaged::testkit::Versions::Http1);
    let req = hyper::Request::get(format!("{}/healthz", ts.base))
        .header("x-request-id", "trace-abc-123")
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.headers().get("x-request-id").unwrap(), "trace-abc-123");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_over_its_rate_gets_429_with_retry_after() {
    let ts = TestServer::start_with(|c| {
        c.limits.rate_limit_per_second = Some(0.5);
        c.limits.rate_limit_burst = 2;
    })
    .await;
    let key = ts.key("acme", "read").await;
    let other = ts.key("acme", "read").await;
    let path = "/v1/leads?updatedSince=1970-01-01T00:00:00Z";
    assert_eq!(ts.get(&key, path).await.status, 200);
    assert_eq!(ts.get(&key, path).await.status, 200);
    let limited = ts.get(&key, path).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.json()["message"], "Too many requests");
    let retry_after: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    // Buckets are per key.
    assert_eq!(ts.get(&other, path).await.status, 200);
}

/// A TLS connection to the test server with nothing sent on it.
async fn idle_tls_connection(
    ts: &TestServer,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(
        engaged::testkit::tls_trusting(&ts.data_dir.join("tls/cert.pem")),
    ));
    let tcp = tokio::net::TcpStream::connect(ts.server.local_addr())
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    connector.connect(name, tcp).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_sends_no_headers_is_disconnected() {
    use tokio::io::AsyncReadExt;
    let ts = TestServer::start_with(|c| {
        c.limits.header_read_timeout = std::time::Duration::from_millis(500)
    })
    .await;
    let mut stream = idle_tls_connection(&ts).await;
    let mut buf = [0u8; 64];
    // The server closes the connection (EOF or an error); bounded so the test ends.
    let closed =
        tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "connection still open: {closed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_wait_for_a_free_slot() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ts = TestServer::start_with(|c| c.limits.max_connections = 1).await;
    // The only slot is taken by a connection that made a request and stays open (one
    // that never sent a request head would be closed to make room).
    let mut first = idle_tls_connection(&ts).await;
    first
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.ends_with(br#"{"status":"ok"}"#) {
        let n = first.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed before the answer");
        answer.extend_from_slice(&buf[..n]);
    }
    // A second client is not served meanwhile...
    let waiting = tokio::time::timeout(
        std::time::Duration::from_millis(700),
        idle_tls_connection(&ts),
    )
    .await;
    assert!(
        waiting.is_err(),
        "a second connection was served beyond the cap"
    );
    // ...and is once the first goes away.
    drop(first);
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        ts.request(Method::GET, "/healthz", None, None, Vec::new()),
    )
    .await
    .expect("served after the slot was freed");
    assert_eq!(r.status, 200);
}

/// Every route of `src/api/router.rs`: (`Route::name`, method, path template of the
/// OpenAPI document).
const ROUTES: [(&str, &str, &str); 87] = [
    ("healthz", "get", "/healthz"),
    ("readyz", "get", "/readyz"),
    ("metrics", "get", "/metrics"),
    ("admin_replica", "get", "/v1/admin/replica"),
    ("openapi", "get", "/v1/openapi.json"),
    ("list_leads", "get", "/v1/leads"),
    ("search_leads", "get", "/v1/leads/search"),
    ("import_leads", "post", "/v1/leads/import"),
    (
        "import_refused",
        "get",
        "/v1/leads/import/{importId}/refused.csv",
    ),
    ("create_lead", "post", "/v1/leads"),
    ("get_lead", "get", "/v1/leads/{leadId}"),
    ("update_lead", "patch", "/v1/leads/{leadId}"),
    ("delete_lead", "delete", "/v1/leads/{leadId}"),
    ("list_events", "get", "/v1/leads/{leadId}/events"),
    ("post_event", "post", "/v1/leads/{leadId}/events"),
    ("list_messages", "get", "/v1/leads/{leadId}/messages"),
    ("post_message", "post", "/v1/leads/{leadId}/messages"),
    ("request_call", "post", "/v1/leads/{leadId}/calls"),
    ("unsubscribe", "post", "/v1/leads/{leadId}/unsubscribe"),
    ("resubscribe", "post", "/v1/leads/{leadId}/resubscribe"),
    ("turn_off", "post", "/v1/leads/{leadId}/turn-off"),
    ("turn_on", "post", "/v1/leads/{leadId}/turn-on"),
    ("add_tags", "post", "/v1/leads/{leadId}/tags/add"),
    ("remove_tags", "post", "/v1/leads/{leadId}/tags/remove"),
    ("get_call", "get", "/v1/calls/{callId}"),
    ("put_call", "put", "/v1/calls/{callId}"),
    ("get_recording", "get", "/v1/calls/{callId}/recording"),
    ("put_recording", "put", "/v1/calls/{callId}/recording"),
    ("delete_recording", "delete", "/v1/calls/{callId}/recording"),
    ("recording_file", "get", "/v1/recordings/{org}/{callId}"),
    ("list_dnc", "get", "/v1/dnc"),
    ("register_dnc", "post", "/v1/dnc/register"),
    ("remove_dnc", "delete", "/v1/dnc/{phone}"),
    ("inbound_sms", "post", "/v1/inbound/sms"),
    ("inbound_email", "post", "/v1/inbound/email"),
    ("list_profiles", "get", "/v1/profiles"),
    ("get_profile", "get", "/v1/profiles/{name}"),
    ("profile_stats", "get", "/v1/profiles/{name}/stats"),
    ("put_profile", "put", "/v1/profiles/{name}"),
    ("create_replay", "post", "/v1/profiles/{name}/replays"),
    ("list_replays", "get", "/v1/replays"),
    ("get_replay", "get", "/v1/replays/{id}"),
    ("cancel_replay", "post", "/v1/replays/{id}/cancel"),
    ("delete_profile", "delete", "/v1/profiles/{name}"),
    ("get_engagement", "get", "/v1/leads/{leadId}/engagement"),
    ("list_calendars", "get", "/v1/calendars"),
    ("get_calendar", "get", "/v1/calendars/{name}"),
    ("put_calendar", "put", "/v1/calendars/{name}"),
    ("delete_calendar", "delete", "/v1/calendars/{name}"),
    (
        "rotate_feed_token",
        "post",
        "/v1/calendars/{name}/rotate-feed-token",
    ),
    ("calendar_times", "get", "/v1/calendars/{name}/times"),
    ("calendar_feed", "get", "/v1/calendars/{name}/feed.ics"),
    ("book_meeting", "post", "/v1/leads/{leadId}/meetings"),
    ("list_meetings", "get", "/v1/meetings"),
    ("get_meeting", "get", "/v1/meetings/{meetingId}"),
    ("update_meeting", "patch", "/v1/meetings/{meetingId}"),
    ("cancel_meeting", "post", "/v1/meetings/{meetingId}/cancel"),
    (
        "reschedule_meeting",
        "post",
        "/v1/meetings/{meetingId}/reschedule",
    ),
    ("get_consent", "get", "/v1/leads/{leadId}/consent"),
    ("post_consent", "post", "/v1/leads/{leadId}/consent"),
    ("get_org", "get", "/v1/org"),
    ("update_org", "patch", "/v1/org"),
    ("list_webhooks", "get", "/v1/webhooks"),
    ("create_webhook", "post", "/v1/webhooks"),
    ("delete_webhook", "delete", "/v1/webhooks/{webhookId}"),
    (
        "list_deliveries",
        "get",
        "/v1/webhooks/{webhookId}/deliveries",
    ),
    (
        "retry_delivery",
        "post",
        "/v1/webhooks/{webhookId}/deliveries/{deliveryId}/retry",
    ),
    ("unsubscribe_page", "get", "/v1/unsubscribe/{token}"),
    ("unsubscribe_one_click", "post", "/v1/unsubscribe/{token}"),
    (
        "mailgun_inbound",
        "post",
        "/v1/providers/mailgun/{orgId}/inbound",
    ),
    ("twilio_sms", "post", "/v1/providers/twilio/{orgId}/sms"),
    (
        "twilio_sms_status",
        "post",
        "/v1/providers/twilio/{orgId}/sms-status",
    ),
    (
        "twilio_voice_inbound",
        "post",
        "/v1/providers/twilio/{orgId}/voice/inbound",
    ),
    (
        "twilio_voice_twiml",
        "post",
        "/v1/providers/twilio/{orgId}/voice/{callId}/twiml",
    ),
    (
        "twilio_voice_status",
        "post",
        "/v1/providers/twilio/{orgId}/voice/{callId}/status",
    ),
    (
        "twilio_voice_recording",
        "post",
        "/v1/providers/twilio/{orgId}/voice/{callId}/recording",
    ),
    (
        "twilio_voice_transfer",
        "post",
        "/v1/providers/twilio/{orgId}/voice/{callId}/transfer",
    ),
    (
        "twilio_voice_warm",
        "post",
        "/v1/providers/twilio/{orgId}/voice/{callId}/warm",
    ),
    (
        "twilio_voice_relay",
        "get",
        "/v1/providers/twilio/{orgId}/voice/{callId}/relay",
    ),
    ("webchat_script", "get", "/webchat.js"),
    (
        "webchat_create_session",
        "post",
        "/webchat/{orgId}/sessions",
    ),
    (
        "webchat_post_message",
        "post",
        "/webchat/{orgId}/sessions/{sessionId}/messages",
    ),
    (
        "webchat_events",
        "get",
        "/webchat/{orgId}/sessions/{sessionId}/events",
    ),
    (
        "webchat_contact",
        "post",
        "/webchat/{orgId}/sessions/{sessionId}/contact",
    ),
    (
        "webchat_voice_token",
        "post",
        "/webchat/{orgId}/sessions/{sessionId}/voice-token",
    ),
    (
        "webchat_voice_sdk",
        "get",
        "/webchat/twilio-voice-2.18.5.js",
    ),
    (
        "webchat_voice_sdk_license",
        "get",
        "/webchat/twilio-voice-2.18.5.LICENSE.md",
    ),
];

/// Does not compile once `Route` gains a variant: add the route to `ROUTES` and to
/// `openapi/openapi.json`, then here.
fn listed(route: engaged::api::router::Route<'_>) -> bool {
    use engaged::api::router::Route;
    match route {
        Route::Healthz
        | Route::Readyz
        | Route::OpenApi
        | Route::Metrics
        | Route::AdminReplica
        | Route::ListLeads
        | Route::SearchLeads
        | Route::GetConsent(_)
        | Route::PostConsent(_)
        | Route::ImportLeads
        | Route::ImportRefused(_)
        | Route::CreateLead
        | Route::GetLead(_)
        | Route::UpdateLead(_)
        | Route::DeleteLead(_)
        | Route::ListEvents(_)
        | Route::PostEvent(_)
        | Route::ListMessages(_)
        | Route::PostMessage(_)
        | Route::GetCall(_)
        | Route::PutCall(_)
        | Route::Unsubscribe(_)
        | Route::Resubscribe(_)
        | Route::TurnOff(_)
        | Route::TurnOn(_)
        | Route::AddTags(_)
        | Route::RemoveTags(_)
        | Route::RequestCall(_)
        | Route::RegisterDnc
        | Route::ListDnc
        | Route::RemoveDnc(_)
        | Route::InboundSms
        | Route::GetOrg
        | Route::UpdateOrg
        | Route::CreateWebhook
        | Route::ListWebhooks
        | Route::DeleteWebhook(_)
        | Route::ListDeliveries(_)
        | Route::RetryDelivery(_, _)
        | Route::GetRecording(_)
        | Route::PutRecording(_)
        | Route::DeleteRecording(_)
        | Route::RecordingFile(_, _)
        | Route::ListProfiles
        | Route::GetProfile(_)
        | Route::ProfileStats(_)
        | Route::PutProfile(_)
        | Route::CreateReplay(_)
        | Route::ListReplays
        | Route::GetReplay(_)
        | Route::CancelReplay(_)
        | Route::DeleteProfile(_)
        | Route::GetEngagement(_)
        | Route::ListCalendars
        | Route::GetCalendar(_)
        | Route::PutCalendar(_)
        | Route::DeleteCalendar(_)
        | Route::RotateFeedToken(_)
        | Route::CalendarTimes(_)
        | Route::CalendarFeed(_)
        | Route::BookMeeting(_)
        | Route::ListMeetings
        | Route::GetMeeting(_)
        | Route::UpdateMeeting(_)
        | Route::CancelMeeting(_)
        | Route::RescheduleMeeting(_)
        | Route::InboundEmail
        | Route::UnsubscribePage(_)
        | Route::UnsubscribeOneClick(_)
        | Route::MailgunInbound(_)
        | Route::TwilioSms(_)
        | Route::TwilioSmsStatus(_)
        | Route::TwilioVoiceInbound(_)
        | Route::TwilioVoiceTwiml(_, _)
        | Route::TwilioVoiceStatus(_, _)
        | Route::TwilioVoiceRecording(_, _)
        | Route::TwilioVoiceTransfer(_, _)
        | Route::TwilioVoiceWarm(_, _)
        | Route::TwilioVoiceRelay(_, _)
        | Route::WebchatScript
        | Route::WebchatCreateSession(_)
        | Route::WebchatPostMessage(_, _)
        | Route::WebchatEvents(_, _)
        | Route::WebchatContact(_, _)
        | Route::WebchatVoiceToken(_, _)
        | Route::WebchatVoiceSdk
        | Route::WebchatVoiceSdkLicense => true,
        // Any path's OPTIONS: described in the document's introduction, not as an
        // operation.
        Route::Options(_) => false,
    }
}

/// `list_leads` → `listLeads`: the document's operationId of a route.
fn operation_id(route_name: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in route_name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_is_served_without_a_key_and_lists_every_route() {
    use engaged::api::router;
    let ts = TestServer::start().await;
    let r = ts
        .request(Method::GET, "/v1/openapi.json", None, None, Vec::new())
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    let doc = r.json();
    assert!(doc["openapi"]
        .as_str()
        .is_some_and(|v| v.starts_with("3.1")));
    let file: serde_json::Value =
        serde_json::from_str(include_str!("../../openapi/openapi.json")).expect("valid JSON");
    assert_eq!(doc, file, "the served document is openapi/openapi.json");

    for (name, method, template) in ROUTES {
        let op = &doc["paths"][template][method];
        assert!(op.is_object(), "{method} {template} is not documented");
        // The template leads the router to this very route...
        let path = template.replace('{', "x").replace('}', "");
        let segments = router::segments(&path).expect("segments");
        let http_method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
        let route = router::route(&http_method, &segments)
            .unwrap_or_else(|e| panic!("{method} {template}: {e}"));
        assert!(listed(route));
        assert_eq!(route.name(), name, "{method} {template}");
        // HEAD takes every GET route (the document lists GET only).
        if http_method == Method::GET {
            assert_eq!(router::route(&Method::HEAD, &segments).ok(), Some(route));
        }
        // ...which the document names and guards with the router's scope.
        assert_eq!(op["operationId"], operation_id(name).as_str(), "{name}");
        match route.scope() {
            None => {
                assert_eq!(op["security"], serde_json::json!([]), "{name} is open");
                assert!(op.get("x-required-scope").is_none(), "{name} is open");
            }
            Some(scope) => {
                assert!(op.get("security").is_none(), "{name} needs a key");
                assert_eq!(op["x-required-scope"], scope.as_str(), "{name}");
                for status in ["401", "403"] {
                    assert!(op["responses"][status].is_object(), "{name}: {status}");
                }
            }
        }
    }
    let documented: usize = doc["paths"]
        .as_object()
        .expect("paths")
        .values()
        .map(|p| {
            p.as_object()
                .expect("path item")
                .keys()
                .filter(|k| *k != "parameters")
                .count()
        })
        .sum();
    assert_eq!(
        documented,
        ROUTES.len(),
        "the document lists an operation the router does not have"
    );
}

/// The object store unreachable from the start and a spool of 64 bytes: the first
/// batch fills it, replication pauses (said by `GET /v1/admin/replica`, and by a banner
/// on every console page an admin sees, not an agent), and writes go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_spool_pauses_replication_with_a_banner_for_admins_and_writes_go_on() {
    let mut weed = engaged::testkit::seaweed::SeaweedFs::start().await;
    let mut settings = weed.config("paused");
    settings.spool_max = 64;
    weed.stop();
    let ts = TestServer::start_with(|c| c.replica = Some(settings)).await;
    let admin = ts.key("acme", "admin").await;
    for i in 0..3 {
        let body = serde_json::json!({"id": format!("p-{i}"), "firstName": "Paused"});
        assert_eq!(ts.post(&admin, "/v1/leads", &body).await.status, 201);
    }
    engaged::testkit::poll(
        "replication paused",
        std::time::Duration::from_secs(60),
        || async {
            let status = ts.get(&admin, "/v1/admin/replica").await.json();
            if status["paused"].is_string() && status["errorsTotal"].as_u64() > Some(0) {
                Ok(())
            } else {
                Err(status.to_string())
            }
        },
    )
    .await;
    let password = ts.user("acme", "ad@example.com", "Ad", "admin").await;
    let session = ts.sign_in("ad@example.com", &password).await;
    let page = ts
        .console(
            Method::GET,
            "/console/leads",
            Some(&session.cookie),
            None,
            &[],
        )
        .await;
    assert_eq!(page.status, 200);
    let html = String::from_utf8_lossy(&page.body).into_owned();
    assert!(
        html.contains("Replication to object storage is paused"),
        "{html}"
    );
    let password = ts.user("acme", "ag@example.com", "Ag", "agent").await;
    let agent = ts.sign_in("ag@example.com", &password).await;
    let page = ts
        .console(
            Method::GET,
            "/console/leads",
            Some(&agent.cookie),
            None,
            &[],
        )
        .await;
    assert!(!String::from_utf8_lossy(&page.body).contains("Replication to object storage"));
}

/// A snapshot larger than a part goes up in parts (64 KiB in the test kit), and a
/// restore joins them into the database; a part altered in the bucket refuses the
/// restore in words and leaves nothing behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_goes_up_in_parts_and_an_altered_part_refuses_the_restore() {
    use futures_util::StreamExt;
    use object_store::{ObjectStoreExt, PutPayload};
    let weed = engaged::testkit::seaweed::SeaweedFs::start().await;
    let settings = weed.config("parts");
    let ts = TestServer::start_with(|c| c.replica = Some(settings.clone())).await;
    let admin = ts.key("acme", "admin").await;
    for i in 0..3 {
        let body = serde_json::json!({"id": format!("part-{i}"), "firstName": "Parted"});
        assert_eq!(ts.post(&admin, "/v1/leads", &body).await.status, 201);
    }
    let bucket = engaged::replica::Bucket::open(&settings).expect("the bucket");
    let parts = engaged::testkit::poll(
        "the snapshot and its parts uploaded",
        std::time::Duration::from_secs(60),
        || async {
            let mut names = Vec::new();
            let mut listed = bucket.store.list(bucket.root().as_ref());
            while let Some(meta) = listed.next().await {
                names.push(meta.map_err(|e| e.to_string())?.location.to_string());
            }
            let parts: Vec<String> = names.into_iter().filter(|n| n.ends_with(".part")).collect();
            let status = ts.get(&admin, "/v1/admin/replica").await.json();
            if parts.len() >= 2 && status["lastSnapshotAt"].is_string() {
                Ok(parts)
            } else {
                Err(format!("{parts:?} {status}"))
            }
        },
    )
    .await;
    let dir = tempfile::tempdir().expect("a directory");
    let restored = engaged::replica::restore::restore(&settings, &dir.path().join("whole"), None)
        .await
        .expect("the restore");
    assert!(restored.leads >= 3, "{restored:?}");

    // One byte of a middle part altered: the part's checksum refuses it.
    let middle = object_store::path::Path::from(parts[parts.len() / 2].as_str());
    let mut bytes = bucket
        .store
        .get(&middle)
        .await
        .expect("the part")
        .bytes()
        .await
        .expect("its bytes")
        .to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    bucket
        .store
        .put(&middle, PutPayload::from(bytes))
        .await
        .expect("put back");
    let target = dir.path().join("altered");
    let refused = engaged::replica::restore::restore(&settings, &target, None)
        .await
        .expect_err("an altered part");
    assert!(refused.contains("snapshot part"), "{refused}");
    assert!(refused.contains("fails its checksum"), "{refused}");
    assert!(
        std::fs::read_dir(&target).map_or(true, |mut d| d.next().is_none()),
        "nothing left behind"
    );
}

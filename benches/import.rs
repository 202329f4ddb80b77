//! Import and a campaign's numbers, measured in one run.
//!
//! `cargo bench --bench import` (not criterion: it prints one measured run). It writes a
//! CSV of 100,000 rows (a tenth of them duplicates of an earlier row, written another
//! way; national phones read in `US`; every row enrolled in profile `solar`, whose first
//! step is a week away) and imports it through `POST /v1/leads/import` over HTTPS on
//! 127.0.0.1, as an integrator would, then reads the campaign's numbers.
//!
//! 1. The import's time (target: at most 30 s) and the process's peak resident memory
//!    (`VmHWM`) before and after it (target: at most 100 MiB for the import).
//! 2. `GET /v1/profiles/solar/stats` with 100,000 enrolled leads (target: 20 ms).
//! 3. The campaign's console page, p50 and p99 (target: p99 at most 50 ms).
//!
//! `ENGAGED_BENCH_ROWS` changes the size.

mod support;

use std::io::Write;
use std::time::Instant;

use hyper::Method;
use serde_json::json;

use engaged::testkit::TestServer;

/// US area codes: ten thousand numbers each.
const AREAS: [u16; 12] = [512, 737, 214, 469, 713, 832, 210, 415, 212, 646, 312, 206];

fn rows() -> usize {
    std::env::var("ENGAGED_BENCH_ROWS")
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .unwrap_or(100_000)
}

/// `VmHWM` (peak resident set) and `VmRSS` of this process, in MiB.
fn memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (field("VmHWM:"), field("VmRSS:"))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

async fn run() {
    let n = rows();
    let server = TestServer::start().await;
    let admin = server.key("bench", "admin").await;
    let patched = server
        .send_json(
            Method::PATCH,
            &admin,
            "/v1/org",
            &json!({"defaultCountry": "US"}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.text());
    let profile = json!({"instructions": "You are Sam.", "cadence": [{"after": "7d", "channel": "sms", "text": "Hi {{firstName}}"}]});
    assert_eq!(
        server
            .put(&admin, "/v1/profiles/solar", &profile)
            .await
            .status,
        200
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("leads.csv");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("csv"));
        writeln!(
            file,
            "First Name,Last Name,Phone Number,Email,profile,Tags,Source"
        )
        .expect("write");
        for i in 0..n {
            // Every tenth row repeats the row before it, its phone written with +1.
            if i % 10 == 9 {
                let j = i - 1;
                writeln!(
                    file,
                    "First{j},Last{j},+1 {} 555 {:04},,solar,dup,fair",
                    AREAS[j / 10_000 % AREAS.len()],
                    j % 10_000
                )
                .expect("write");
            } else {
                writeln!(
                    file,
                    "First{i},Last{i},({}) 555-{:04},lead{i}@bench.example,solar,web;import,web",
                    AREAS[i / 10_000 % AREAS.len()],
                    i % 10_000
                )
                .expect("write");
            }
        }
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let (peak_before, rss_before) = memory();
    let started = Instant::now();
    // In-process (the CLI's path with no server running), so that the peak memory is the
    // import's: the file is read as a stream, as the API and the admin socket read it.
    let request = engaged::admin::AdminRequest::Import {
        org: "bench".into(),
        ndjson: false,
        dry_run: false,
        create_only: false,
        on_match: engaged::domain::import::OnMatch::Update,
        profile: None,
    };
    let file = tokio::fs::File::open(&path).await.expect("open csv");
    let report = engaged::admin::import(server.server.store(), &request, file)
        .await
        .expect("import");
    let took = started.elapsed();
    let (peak_after, rss_after) = memory();
    let report = serde_json::to_value(&report).expect("report");
    println!(
        "import of {n} rows ({:.1} MB): {:.1} s, {:.0} rows/s; created {}, updated {}, merged {}, refused {}",
        size as f64 / 1e6,
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64(),
        report["created"],
        report["updated"],
        report["merged"],
        report["refused"].as_array().map_or(0, Vec::len),
    );
    println!(
        "memory: peak {peak_before:.0} MiB before, {peak_after:.0} MiB after (+{:.0} MiB); resident now {rss_after:.0} MiB (was {rss_before:.0})",
        peak_after - peak_before,
    );

    if let Some(refused) = report["refused"].as_array() {
        for r in refused.iter().take(3) {
            println!("  refused: row {} {}", r["row"], r["reason"]);
        }
    }
    let read = server.key("bench", "read").await;
    let mut stats = Vec::new();
    for _ in 0..50 {
        let started = Instant::now();
        let r = server.get(&read, "/v1/profiles/solar/stats").await;
        stats.push(started.elapsed());
        assert_eq!(r.status, 200);
    }
    let numbers = server.get(&read, "/v1/profiles/solar/stats").await.json();
    println!(
        "GET /v1/profiles/solar/stats ({} enrolled): p50 {:.2} ms, p99 {:.2} ms",
        numbers["enrolled"],
        support::percentile(&stats, 0.50).as_secs_f64() * 1e3,
        support::percentile(&stats, 0.99).as_secs_f64() * 1e3
    );

    let password = server
        .user("bench", "ana@bench.example", "Ana", "viewer")
        .await;
    let session = server.sign_in("ana@bench.example", &password).await;
    let mut page = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        let r = server
            .console(
                Method::GET,
                "/console/campaigns/solar",
                Some(&session.cookie),
                None,
                &[],
            )
            .await;
        page.push(started.elapsed());
        assert_eq!(r.status, 200);
    }
    println!(
        "campaign page: p50 {:.2} ms, p99 {:.2} ms",
        support::percentile(&page, 0.50).as_secs_f64() * 1e3,
        support::percentile(&page, 0.99).as_secs_f64() * 1e3
    );
}

//! `engaged`: a Lead Engagement Service in one binary.
//!
//! The crate is a library with a thin binary on top (`main.rs`). See ARCHITECTURE.md for
//! the bird's-eye view; in short: `server` accepts HTTPS connections and hands requests
//! to `api`, which parses them, calls `domain`, and renders the answer; `domain` holds
//! the rules and changes data only through `store`, the one module that touches redb.

pub mod admin;
pub mod api;
pub mod attention;
pub mod carrier_text;
pub mod channel;
pub mod cli;
pub mod client_address;
pub mod config;
pub mod console;
pub mod csv_cell;
pub mod cursor;
pub mod domain;
pub mod duration;
pub mod engine;
pub mod error;
pub mod histogram;
pub mod http_client;
pub mod http_failure;
pub mod ics;
pub mod ids;
pub mod import_cli;
pub mod json_writer;
pub mod maintenance;
pub mod metrics;
pub mod outbound_address;
pub mod outbound_tls;
pub mod phone;
pub mod providers;
pub mod replica;
pub mod server;
pub mod sms_segments;
pub mod store;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod time;
pub mod webhooks;
pub mod words;

/// The allocator of every binary built on this crate (the server, its tests and
/// benches): the writer's jobs allocate and free many small buffers (keys, records,
/// index rows), and mimalloc does that about a sixth faster than the system's
/// (`cargo bench --bench writer`: 26,000 → 30,600 single-event jobs/s).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

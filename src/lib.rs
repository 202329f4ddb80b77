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

/// Turns transparent huge pages off for this process (`prctl(PR_SET_THP_DISABLE)`),
/// first thing in `main`.
///
/// mimalloc asks the kernel for huge pages on the memory it maps (`MADV_HUGEPAGE`),
/// and the kernel then zeroes a whole 2 MiB page at the first touch of any byte of
/// it. The writer touches fresh memory in the middle of a batch's commit (redb's page
/// buffers, the set of pages its commits free), and on this machine each such touch
/// held the writer 6-10 ms, several times between two checkpoints. Under `wrk -c64`
/// of durable `POST` with the events spread over 10,000 leads, redb's commits slower
/// than 5 ms took 199-281 ms of a 10 s run with huge pages and 133-173 ms without,
/// and the p99 fell in two runs of three, from 22-24 ms to 17 ms; with every event on
/// one lead, 119-190 ms fell to 22-49 ms and the p99 from 11.9-12.4 ms to 9.1-11.0 ms
/// (docs/performance.md). The kernel reads the flag at each fault, so it also covers
/// what was mapped before `main`.
///
/// A kernel that refuses it (too old, a seccomp filter) leaves the default, which
/// only costs that latency: the error is for the caller to ignore or report.
pub fn no_huge_pages() -> std::io::Result<()> {
    rustix::thread::disable_transparent_huge_pages(true).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    /// The kernel answers the flag back: the process's later faults take small pages.
    #[test]
    fn no_huge_pages_sets_the_process_flag_the_kernel_reads() {
        super::no_huge_pages().expect("prctl(PR_SET_THP_DISABLE)");
        assert!(rustix::thread::transparent_huge_pages_are_disabled().expect("PR_GET_THP_DISABLE"));
    }
}

//! The `engaged` binary: parse the command line and hand over to the library.

use clap::Parser;

fn main() {
    // Latency, not correctness: a kernel that refuses keeps its default.
    let _ = engaged::no_huge_pages();
    let cli = engaged::cli::Cli::parse();
    if let Err(message) = engaged::cli::run(cli) {
        eprintln!("engaged: {message}");
        std::process::exit(1);
    }
}

//! The `engram` binary: parses the command line and hands over to [`cli`].
//!
//! The crates below it, top first: `engram-eval` (the instruments behind `engram bench`
//! and `engram eval`), `engram-server` (HTTP, MCP, the console, the wiring),
//! `engram-core` (what engram does with memory) and `engram-base` (settings, types,
//! the database, models and keys). ARCHITECTURE.md draws them.

use clap::Parser;

mod cli;

fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    // One TLS provider for every client in the process, before any is built.
    engram_base::tls::provider();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("engram: cannot start the async runtime: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("engram: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

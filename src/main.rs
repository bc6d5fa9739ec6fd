//! The `engram` binary: parses the command line and hands over to [`engram::cli`].

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = engram::cli::Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("engram: cannot start the async runtime: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(engram::cli::run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("engram: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

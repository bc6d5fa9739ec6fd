//! Logging setup: human-readable by default, JSON by configuration, filtered by
//! `RUST_LOG` or `log.filter`. Logs go to stderr so stdout stays for command output.

use tracing_subscriber::EnvFilter;

use crate::configuration::{LogFormat, LogSettings};

pub fn init(settings: &LogSettings) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&settings.filter))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // A second init (tests build several apps in one process) is not an error.
    let _ = match settings.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

//! The OpenAI-compatible client (OpenAI, vLLM, Ollama, llama.cpp server, TEI, …)
//! built from explicit settings only: async-openai's defaults would read
//! `OPENAI_API_KEY` and friends from the environment, so every field is set here.

use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;

use super::ModelError;
use super::retry::{RetryPolicy, RetryingTransport};
use crate::tls::Trust;

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

pub fn base_url(configured: Option<&str>) -> String {
    configured.unwrap_or(DEFAULT_BASE_URL).trim_end_matches('/').to_owned()
}

pub fn client(
    base_url: Option<&str>,
    api_key: Option<&str>,
    deadline: Duration,
    trust: &Trust,
) -> Result<Client<OpenAIConfig>, ModelError> {
    let config = OpenAIConfig::new()
        .with_api_base(self::base_url(base_url))
        .with_api_key(api_key.unwrap_or_default())
        .with_org_id("")
        .with_project_id("");
    let http = trust.http_client(Duration::from_secs(5)).map_err(ModelError::Config)?;
    Ok(Client::with_config(config)
        .with_http_client(http.clone())
        .with_http_service(RetryingTransport::new(http, RetryPolicy::with_deadline(deadline))))
}

/// Maps a failed call to a [`ModelError`] that is safe to log and to show operators.
pub fn classify(err: OpenAIError) -> ModelError {
    match err {
        OpenAIError::ApiError(response) => {
            let status = response.status_code.as_u16();
            let message: String = response.api_error.message.chars().take(300).collect();
            if status >= 500 {
                ModelError::Exhausted { attempts: 0, last: format!("HTTP {status}: {message}") }
            } else {
                ModelError::Rejected { status, message }
            }
        }
        OpenAIError::JSONDeserialize(err, _) => ModelError::Malformed(err.to_string()),
        OpenAIError::Reqwest(err) => ModelError::from_request(&err),
        OpenAIError::InvalidArgument(message) => ModelError::Config(message),
        other => ModelError::Malformed(other.to_string().chars().take(300).collect()),
    }
}

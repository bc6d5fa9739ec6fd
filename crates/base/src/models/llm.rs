//! Structured chat completions from an OpenAI-compatible endpoint.
//!
//! The answer's JSON schema goes out as `response_format: json_schema` where the
//! server accepts it. A server that rejects that is remembered and asked for
//! `json_object` with the schema both in the prompt and as the `schema` extension
//! (llama.cpp and vLLM constrain decoding to it), and one that rejects that too gets
//! the schema in the prompt alone. Either way the answer is parsed tolerantly (code
//! fences and prose around the JSON object are ignored) into the caller's type.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestSystemMessageArgs, ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequestArgs,
    CreateChatCompletionResponse, ResponseFormat, ResponseFormatJsonSchema,
};
use serde::de::DeserializeOwned;

use super::{ModelError, Prompt, openai};
use crate::configuration::{LlmProvider, LlmSettings};
use crate::metrics::Metrics;
use crate::tls::Trust;
use tracing::Instrument;

use super::model_span;

pub struct Llm {
    client: Client<OpenAIConfig>,
    /// For the readiness check, with the same trust as `client`.
    http: reqwest::Client,
    base_url: String,
    api_key: String,
    model: String,
    max_tokens: u32,
    temperature: f32,
    /// The strongest [`Format`] this server has not rejected yet.
    format: AtomicU8,
    metrics: Metrics,
}

/// A run's LLM token allowance; jobs check it before each call.
#[derive(Debug, Default)]
pub struct TokenBudget {
    limit: Option<u64>,
    used: AtomicU64,
}

impl TokenBudget {
    pub fn new(limit: Option<u64>) -> Self {
        Self { limit, used: AtomicU64::new(0) }
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    pub fn check(&self) -> Result<(), ModelError> {
        match self.limit {
            Some(limit) if self.used() >= limit => Err(ModelError::BudgetExceeded(limit)),
            _ => Ok(()),
        }
    }

    fn spend(&self, tokens: u64) {
        self.used.fetch_add(tokens, Ordering::Relaxed);
    }
}

impl Llm {
    /// `None` when `llm.provider = none`.
    pub fn from_settings(settings: &LlmSettings, trust: &Trust, metrics: Metrics) -> Result<Option<Self>, ModelError> {
        if settings.provider == LlmProvider::None {
            return Ok(None);
        }
        let model = settings
            .model
            .clone()
            .ok_or_else(|| ModelError::Config("llm.model is required with llm.provider = openai".into()))?;
        let deadline = Duration::from_secs(settings.timeout_secs);
        let llm = Self {
            client: openai::client(settings.base_url.as_deref(), settings.api_key.as_deref(), deadline, trust)?,
            http: trust.http_client(Duration::from_secs(5)).map_err(ModelError::Config)?,
            base_url: openai::base_url(settings.base_url.as_deref()),
            api_key: settings.api_key.clone().unwrap_or_default(),
            model,
            max_tokens: settings.max_tokens,
            temperature: settings.temperature,
            format: AtomicU8::new(Format::JsonSchema as u8),
            metrics,
        };
        llm.show_format(Format::JsonSchema);
        Ok(Some(llm))
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// For readiness: the endpoint answers `GET /models` with a success. Only the status
    /// is checked: compatible servers differ in the body's details.
    pub async fn check(&self) -> Result<(), ModelError> {
        let url = format!("{}/models", self.base_url);
        let response = self
            .http
            .get(url)
            .bearer_auth(&self.api_key)
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .map_err(|e| ModelError::from_request(&e))?;
        match response.status() {
            status if status.is_success() => Ok(()),
            status => Err(ModelError::Rejected { status: status.as_u16(), message: "GET /models failed".into() }),
        }
    }

    /// Fills `prompt` with `vars`, asks the model, and parses its answer as `T`.
    /// `purpose` labels the metrics (a job or prompt name, never user data).
    pub async fn complete<T: DeserializeOwned>(
        &self,
        purpose: &str,
        prompt: &Prompt,
        vars: &HashMap<&str, String>,
        budget: &TokenBudget,
    ) -> Result<T, ModelError> {
        budget.check()?;
        let (system, user) = prompt.render(vars)?;
        let started = Instant::now();
        let span = model_span("llm", &self.model, purpose);
        let parsed = async {
            loop {
                let format = Format::from(self.format.load(Ordering::Relaxed));
                let answer = self.ask(purpose, prompt, &system, &user, budget, format).await;
                // A refused format, or an answer with no JSON in it at all, is the format's
                // failure: the next weaker one is tried, and kept for later calls.
                let format_failed = match &answer {
                    Err(err) => rejects_response_format(err),
                    Ok(text) => extract_json(text).is_none(),
                };
                let parsed = answer.and_then(|text| parse(&text));
                match format.weaker() {
                    Some(weaker) if format_failed && budget.check().is_ok() => self.fall_back(format, weaker),
                    _ => break parsed,
                }
            }
        }
        .instrument(span.clone())
        .await;
        let status = match &parsed {
            Ok(_) => "ok",
            Err(err) => err.status_label(),
        };
        span.record("outcome", status);
        self.metrics.llm_requests.with_label_values(&[purpose, &self.model, status]).inc();
        self.metrics.llm_duration.with_label_values(&[purpose, &self.model]).observe(started.elapsed().as_secs_f64());
        parsed
    }

    /// Asks in `weaker` from now on, once any caller has seen `failed` fail.
    fn fall_back(&self, failed: Format, weaker: Format) {
        if self.format.compare_exchange(failed as u8, weaker as u8, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            tracing::info!(model = %self.model, from = failed.name(), to = weaker.name(), "the endpoint does not take this response format; falling back");
            self.show_format(weaker);
        }
    }

    /// `engram_llm_response_format`: 1 for the format this endpoint is asked in.
    fn show_format(&self, current: Format) {
        for format in [Format::JsonSchema, Format::JsonObject, Format::Prompt] {
            let on = if format == current { 1.0 } else { 0.0 };
            self.metrics.llm_response_format.with_label_values(&[&self.model, format.name()]).set(on);
        }
    }

    async fn ask(
        &self,
        purpose: &str,
        prompt: &Prompt,
        system: &str,
        user: &str,
        budget: &TokenBudget,
        format: Format,
    ) -> Result<String, ModelError> {
        let system = match format {
            Format::JsonSchema => system.to_owned(),
            Format::JsonObject | Format::Prompt => {
                format!("{system}\n\nAnswer with one JSON object only, matching this JSON schema:\n{}", prompt.schema)
            }
        };
        let messages = vec![
            ChatCompletionRequestSystemMessageArgs::default().content(system).build().map_err(openai::classify)?.into(),
            ChatCompletionRequestUserMessageArgs::default().content(user).build().map_err(openai::classify)?.into(),
        ];
        let mut request = CreateChatCompletionRequestArgs::default();
        request.model(&self.model).messages(messages).max_tokens(self.max_tokens).temperature(self.temperature);
        match format {
            Format::JsonSchema => {
                request.response_format(ResponseFormat::JsonSchema {
                    json_schema: ResponseFormatJsonSchema {
                        name: prompt.name.clone(),
                        description: None,
                        schema: prompt.schema.clone(),
                        strict: Some(true),
                    },
                });
            }
            Format::JsonObject | Format::Prompt => {}
        }
        let mut body = serde_json::to_value(request.build().map_err(openai::classify)?)
            .map_err(|e| ModelError::Config(e.to_string()))?;
        if format == Format::JsonObject {
            // `schema` is the llama.cpp / vLLM extension that constrains decoding to it.
            body["response_format"] = serde_json::json!({"type": "json_object", "schema": prompt.schema});
        }
        let response: CreateChatCompletionResponse =
            self.client.chat().create_byot(body).await.map_err(openai::classify)?;
        if let Some(usage) = &response.usage {
            let (prompt_tokens, completion_tokens) =
                (u64::from(usage.prompt_tokens), u64::from(usage.completion_tokens));
            budget.spend(prompt_tokens + completion_tokens);
            let span = tracing::Span::current();
            span.record("gen_ai.usage.input_tokens", prompt_tokens);
            span.record("gen_ai.usage.output_tokens", completion_tokens);
            let tokens = &self.metrics.llm_tokens;
            tokens.with_label_values(&[purpose, &self.model, "prompt"]).inc_by(prompt_tokens);
            tokens.with_label_values(&[purpose, &self.model, "completion"]).inc_by(completion_tokens);
        }
        response
            .choices
            .into_iter()
            .next()
            .and_then(|choice| choice.message.content)
            .ok_or_else(|| ModelError::Malformed("the answer has no message content".into()))
    }
}

/// How the answer's shape is requested, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Format {
    JsonSchema = 0,
    JsonObject = 1,
    Prompt = 2,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Self::JsonSchema => "json_schema",
            Self::JsonObject => "json_object",
            Self::Prompt => "prompt",
        }
    }

    fn weaker(self) -> Option<Self> {
        match self {
            Self::JsonSchema => Some(Self::JsonObject),
            Self::JsonObject => Some(Self::Prompt),
            Self::Prompt => None,
        }
    }
}

impl From<u8> for Format {
    fn from(value: u8) -> Self {
        match value {
            0 => Self::JsonSchema,
            1 => Self::JsonObject,
            _ => Self::Prompt,
        }
    }
}

/// Servers reject an unsupported `response_format` with 400, 422 or even 500; the
/// message names the field either way.
fn rejects_response_format(err: &ModelError) -> bool {
    let text = match err {
        ModelError::Rejected { message, .. } => message,
        ModelError::Exhausted { last, .. } => last,
        _ => return false,
    }
    .to_lowercase();
    text.contains("response_format") || text.contains("json_schema") || text.contains("json_object")
}

/// The answer's JSON object as `T`: prose and fences around it ignored, raw line breaks
/// in its strings escaped and trailing commas dropped, as small models write them.
fn parse<T: DeserializeOwned>(text: &str) -> Result<T, ModelError> {
    let json = extract_json(text).ok_or_else(|| ModelError::Malformed("the answer holds no JSON object".into()))?;
    let json = escape_controls_in_strings(json);
    serde_json::from_str(&super::answers::without_trailing_commas(&json))
        .map_err(|e| ModelError::Malformed(format!("the answer does not fit the schema: {e}")))
}

/// The outermost JSON object in a model's answer, ignoring fences and prose around it.
pub fn extract_json(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (end > start).then(|| &text[start..=end])
}

/// Small models write raw line breaks and tabs inside JSON strings, which JSON forbids:
/// those are escaped; nothing else changes.
fn escape_controls_in_strings(json: &str) -> std::borrow::Cow<'_, str> {
    if !json.chars().any(char::is_control) {
        return json.into();
    }
    let (mut out, mut in_string, mut escaped) = (String::with_capacity(json.len() + 16), false, false);
    for c in json.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '\n' if in_string => {
                out.push_str("\\n");
                continue;
            }
            '\t' if in_string => {
                out.push_str("\\t");
                continue;
            }
            c if in_string && (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_line_breaks_inside_strings_are_escaped() {
        let answer = "{\"summary\": \"line one\nline two\tend\", \"n\": [1,\n 2]}";
        let value: serde_json::Value = serde_json::from_str(&escape_controls_in_strings(answer)).unwrap();
        assert_eq!(value["summary"], "line one\nline two\tend");
        assert_eq!(value["n"][1], 2);
        assert_eq!(escape_controls_in_strings("{\"a\": \"q\\\"\\n\"}"), "{\"a\": \"q\\\"\\n\"}");
    }

    #[test]
    fn json_is_found_inside_fences_and_prose() {
        assert_eq!(extract_json("```json\n{\"a\": {\"b\": 1}}\n```"), Some("{\"a\": {\"b\": 1}}"));
        assert_eq!(extract_json("Sure! {\"a\": 1} Hope that helps."), Some("{\"a\": 1}"));
        assert_eq!(extract_json("no json here"), None);
        assert_eq!(extract_json("} backwards {"), None);
    }

    #[test]
    fn a_budget_stops_calls_once_spent() {
        let budget = TokenBudget::new(Some(100));
        assert!(budget.check().is_ok());
        budget.spend(100);
        assert!(matches!(budget.check(), Err(ModelError::BudgetExceeded(100))));
        assert!(TokenBudget::new(None).check().is_ok());
    }
}

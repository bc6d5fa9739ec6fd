//! Structured chat completions from an OpenAI-compatible endpoint.
//!
//! The answer's JSON schema goes out as `response_format: json_schema` where the
//! server accepts it; a server that rejects that field is remembered and asked
//! through the prompt instead. Either way the answer is parsed tolerantly (code
//! fences and prose around the JSON object are ignored) into the caller's type.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestSystemMessageArgs, ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequestArgs,
    ResponseFormat, ResponseFormatJsonSchema,
};
use serde::de::DeserializeOwned;

use super::{ModelError, Prompt, openai};
use crate::configuration::{LlmProvider, LlmSettings};
use crate::metrics::Metrics;

pub struct Llm {
    client: Client<OpenAIConfig>,
    model: String,
    max_tokens: u32,
    temperature: f32,
    /// Cleared when the server rejects `response_format: json_schema`.
    schema_supported: AtomicBool,
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
    pub fn from_settings(settings: &LlmSettings, metrics: Metrics) -> Result<Option<Self>, ModelError> {
        if settings.provider == LlmProvider::None {
            return Ok(None);
        }
        let model = settings.model.clone().ok_or_else(|| ModelError::Config("llm.model is required with llm.provider = openai".into()))?;
        let deadline = Duration::from_secs(settings.timeout_secs);
        Ok(Some(Self {
            client: openai::client(settings.base_url.as_deref(), settings.api_key.as_deref(), deadline)?,
            model,
            max_tokens: settings.max_tokens,
            temperature: settings.temperature,
            schema_supported: AtomicBool::new(true),
            metrics,
        }))
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// For readiness: the endpoint answers its model list.
    pub async fn check(&self) -> Result<(), ModelError> {
        self.client.models().list().await.map(|_| ()).map_err(openai::classify)
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
        let mut result = self.ask(purpose, prompt, &system, &user, budget, self.schema_supported.load(Ordering::Relaxed)).await;
        if let Err(ModelError::Rejected { status: 400, message }) = &result {
            let lower = message.to_lowercase();
            if self.schema_supported.load(Ordering::Relaxed) && (lower.contains("response_format") || lower.contains("schema")) {
                tracing::info!(model = %self.model, "the endpoint rejects json_schema response formats; asking through the prompt");
                self.schema_supported.store(false, Ordering::Relaxed);
                result = self.ask(purpose, prompt, &system, &user, budget, false).await;
            }
        }
        let parsed = result.and_then(|text| {
            let json = extract_json(&text).ok_or_else(|| ModelError::Malformed("the answer holds no JSON object".into()))?;
            serde_json::from_str(json).map_err(|e| ModelError::Malformed(format!("the answer does not fit the schema: {e}")))
        });
        let status = match &parsed {
            Ok(_) => "ok",
            Err(err) => err.status_label(),
        };
        self.metrics.llm_requests.with_label_values(&[purpose, &self.model, status]).inc();
        self.metrics.llm_duration.with_label_values(&[purpose, &self.model]).observe(started.elapsed().as_secs_f64());
        parsed
    }

    async fn ask(
        &self,
        purpose: &str,
        prompt: &Prompt,
        system: &str,
        user: &str,
        budget: &TokenBudget,
        with_schema: bool,
    ) -> Result<String, ModelError> {
        let system = if with_schema {
            system.to_owned()
        } else {
            format!("{system}\n\nAnswer with one JSON object only, matching this JSON schema:\n{}", prompt.schema)
        };
        let messages = vec![
            ChatCompletionRequestSystemMessageArgs::default().content(system).build().map_err(openai::classify)?.into(),
            ChatCompletionRequestUserMessageArgs::default().content(user).build().map_err(openai::classify)?.into(),
        ];
        let mut request = CreateChatCompletionRequestArgs::default();
        request.model(&self.model).messages(messages).max_tokens(self.max_tokens).temperature(self.temperature);
        if with_schema {
            request.response_format(ResponseFormat::JsonSchema {
                json_schema: ResponseFormatJsonSchema {
                    name: prompt.name.clone(),
                    description: None,
                    schema: prompt.schema.clone(),
                    strict: Some(true),
                },
            });
        }
        let response = self.client.chat().create(request.build().map_err(openai::classify)?).await.map_err(openai::classify)?;
        if let Some(usage) = &response.usage {
            let (prompt_tokens, completion_tokens) = (u64::from(usage.prompt_tokens), u64::from(usage.completion_tokens));
            budget.spend(prompt_tokens + completion_tokens);
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

/// The outermost JSON object in a model's answer, ignoring fences and prose around it.
pub fn extract_json(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (end > start).then(|| &text[start..=end])
}

#[cfg(test)]
mod tests {
    use super::*;

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

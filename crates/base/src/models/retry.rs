//! Retrying remote model calls by error class, under a per-call deadline:
//!
//! | outcome | action |
//! |---|---|
//! | 2xx, 400, 401, 403, 404, other 4xx | returned as is: retrying cannot help |
//! | 429 | wait `Retry-After` (seconds or HTTP date) or back off, then retry |
//! | 5xx, timeout, connection error | exponential backoff with jitter, then retry |
//! | a TLS failure (unknown CA, name mismatch, …) | returned at once |
//!
//! Retries stop at `max_attempts` or when the next wait would pass the deadline;
//! the last response or error is then returned. The policy runs as the HTTP
//! transport of the async-openai client, where response headers are visible.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use reqwest::header::{HeaderMap, RETRY_AFTER};

#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub deadline: Duration,
    pub max_attempts: u32,
    pub base_backoff: Duration,
    pub max_backoff: Duration,
}

impl RetryPolicy {
    pub fn with_deadline(deadline: Duration) -> Self {
        Self {
            deadline,
            max_attempts: 6,
            base_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
        }
    }

    /// Exponential backoff with "equal jitter": between half and all of base·2^(attempt-1).
    pub fn backoff(&self, attempt: u32) -> Duration {
        use rand::Rng;
        let exp = self.base_backoff.saturating_mul(1u32 << attempt.saturating_sub(1).min(16)).min(self.max_backoff);
        exp.mul_f64(rand::rng().random_range(0.5..=1.0))
    }
}

/// What to do after one attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Return,
    RetryAfter(Duration),
}

pub fn verdict_for_status(status: u16, headers: &HeaderMap, policy: &RetryPolicy, attempt: u32) -> Verdict {
    match status {
        429 => Verdict::RetryAfter(retry_after(headers).unwrap_or_else(|| policy.backoff(attempt))),
        500..=599 => Verdict::RetryAfter(policy.backoff(attempt)),
        _ => Verdict::Return,
    }
}

pub fn verdict_for_error(err: &reqwest::Error, policy: &RetryPolicy, attempt: u32) -> Verdict {
    // A certificate the client does not trust stays untrusted: only configuration helps.
    let tls = crate::tls::ConnectFailure::diagnose(err).is_some_and(|cause| cause.is_tls());
    if !tls && (err.is_timeout() || err.is_connect() || err.is_request()) {
        Verdict::RetryAfter(policy.backoff(attempt))
    } else {
        Verdict::Return
    }
}

/// `Retry-After` as seconds or as an HTTP date.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    (at.with_timezone(&chrono::Utc) - chrono::Utc::now()).to_std().ok().or(Some(Duration::ZERO))
}

/// The async-openai transport that applies a [`RetryPolicy`].
#[derive(Clone)]
pub struct RetryingTransport {
    client: reqwest::Client,
    policy: RetryPolicy,
}

impl RetryingTransport {
    pub fn new(client: reqwest::Client, policy: RetryPolicy) -> Self {
        Self { client, policy }
    }
}

impl tower_service::Service<HttpRequestFactory> for RetryingTransport {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let (client, policy) = (self.client.clone(), self.policy.clone());
        Box::pin(async move {
            let started = Instant::now();
            let mut attempt = 0;
            loop {
                attempt += 1;
                let mut request = factory.build().await?;
                crate::telemetry::traces::inject(request.headers_mut());
                let remaining = policy.deadline.saturating_sub(started.elapsed());
                *request.timeout_mut() = Some(remaining.max(Duration::from_millis(1)));
                let result = client.execute(request).await;
                let verdict = match &result {
                    Ok(response) => {
                        verdict_for_status(response.status().as_u16(), response.headers(), &policy, attempt)
                    }
                    Err(err) => verdict_for_error(err, &policy, attempt),
                };
                match verdict {
                    Verdict::RetryAfter(wait)
                        if attempt < policy.max_attempts && started.elapsed() + wait < policy.deadline =>
                    {
                        tracing::debug!(attempt, wait_ms = wait.as_millis() as u64, "retrying a model call");
                        tokio::time::sleep(wait).await;
                    }
                    _ => {
                        let response = result.map_err(OpenAIError::Reqwest)?;
                        return Ok(openai_shaped_errors(response).await);
                    }
                }
            }
        })
    }
}

/// Servers that are OpenAI-compatible on success often are not on failure (FastAPI's
/// `{"detail": ...}`, plain text from a proxy). async-openai then loses the status, so
/// error bodies are rewritten into OpenAI's `{"error": {...}}` shape here.
async fn openai_shaped_errors(response: reqwest::Response) -> reqwest::Response {
    let status = response.status();
    if status.is_success() {
        return response;
    }
    let headers = response.headers().clone();
    let body = response.bytes().await.unwrap_or_default();
    let shaped = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .is_some_and(|v| v.get("error").and_then(|e| e.get("message")).is_some());
    let body = if shaped {
        body.to_vec()
    } else {
        let message: String = String::from_utf8_lossy(&body).chars().take(500).collect();
        serde_json::json!({"error": {"message": message, "type": "http_error", "param": null, "code": null}})
            .to_string()
            .into_bytes()
    };
    let mut rebuilt = http::Response::new(body);
    *rebuilt.status_mut() = status;
    *rebuilt.headers_mut() = headers;
    rebuilt.headers_mut().remove(reqwest::header::CONTENT_LENGTH);
    reqwest::Response::from(rebuilt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(retry_after: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, retry_after.parse().unwrap());
        h
    }

    #[test]
    fn client_errors_are_not_retried_and_server_errors_are() {
        let policy = RetryPolicy::with_deadline(Duration::from_secs(10));
        for status in [200, 400, 401, 403, 404, 422] {
            assert_eq!(verdict_for_status(status, &HeaderMap::new(), &policy, 1), Verdict::Return);
        }
        for status in [500, 502, 503] {
            assert!(matches!(verdict_for_status(status, &HeaderMap::new(), &policy, 1), Verdict::RetryAfter(_)));
        }
    }

    #[test]
    fn rate_limits_honour_retry_after() {
        let policy = RetryPolicy::with_deadline(Duration::from_secs(10));
        assert_eq!(verdict_for_status(429, &headers("3"), &policy, 1), Verdict::RetryAfter(Duration::from_secs(3)));
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(30)).to_rfc2822();
        let Verdict::RetryAfter(wait) = verdict_for_status(429, &headers(&soon), &policy, 1) else { panic!() };
        assert!(wait > Duration::from_secs(25) && wait <= Duration::from_secs(30), "{wait:?}");
        assert!(matches!(verdict_for_status(429, &headers("soon"), &policy, 1), Verdict::RetryAfter(_)));
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let policy = RetryPolicy::with_deadline(Duration::from_secs(10));
        let first = policy.backoff(1);
        assert!(first >= Duration::from_millis(100) && first <= Duration::from_millis(200));
        let fourth = policy.backoff(4);
        assert!(fourth >= Duration::from_millis(800) && fourth <= Duration::from_millis(1600));
        assert!(policy.backoff(30) <= policy.max_backoff);
    }
}

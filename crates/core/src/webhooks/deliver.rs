//! The worker's deliveries: every half second it takes the outbox's due rows — for each
//! subscription and user only the oldest, so a user's changes arrive in order — posts
//! them signed, and deletes each once its receiver answered 2xx. A failed attempt is
//! tried again after 1 s, 2 s, 4 s … (at most an hour apart) until 24 hours have passed
//! since the change; then it is given up (`expired`). A claimed row is leased, not
//! locked: a worker killed mid-way leaves it to the next after the lease, and what an
//! attempt writes afterwards counts only if the row was not claimed again meanwhile.
//!
//! Each body is signed: `Engram-Signature: t=<unix seconds>,v1=<hex>`, the hex being
//! HMAC-SHA256 under the subscription's secret of `<t>.<body>`. A memory's content is
//! read when the delivery is made, not when it was queued: what was forgotten
//! meanwhile is not sent.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value, json};
use sha2::Sha256;
use sqlx::PgPool;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::Event;
use engram_base::configuration::WebhookSettings;
use engram_base::metrics::Metrics;
use engram_base::tls::{ConnectFailure, Trust};

/// How long a change is tried for.
const RETRY_FOR: chrono::TimeDelta = chrono::TimeDelta::hours(24);
/// The longest wait between two attempts.
const MAX_BACKOFF_SECS: i64 = 3600;
/// Rows taken per round; each is a different subscription and user.
const BATCH: i64 = 32;
const POLL: Duration = Duration::from_millis(500);

/// The running delivery loop of a worker.
pub struct Deliverer {
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Deliverer {
    pub fn start(pool: PgPool, trust: &Trust, metrics: Metrics, settings: WebhookSettings) -> anyhow::Result<Self> {
        let client = trust
            .http_builder()
            .timeout(Duration::from_millis(settings.timeout_ms))
            .connect_timeout(Duration::from_millis(settings.timeout_ms))
            .user_agent(concat!("engram/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the webhook client: {e}"))?;
        let (shutdown, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let lease = Duration::from_millis(settings.timeout_ms) + Duration::from_secs(5);
            let mut pruned: Option<Instant> = None;
            loop {
                let sent = match deliver_due(&pool, &client, &metrics, &settings, lease).await {
                    Ok(sent) => sent,
                    Err(err) => {
                        tracing::warn!(error = %err, "cannot read the webhook outbox");
                        0
                    }
                };
                if let Ok(age) = oldest_age(&pool).await {
                    metrics.webhook_outbox_age.set(age);
                }
                if pruned.is_none_or(|at| at.elapsed() > Duration::from_secs(60)) {
                    pruned = Some(Instant::now());
                    if let Err(err) = prune(&pool).await {
                        tracing::warn!(error = %err, "cannot prune the webhook outbox and record");
                    }
                }
                if sent == 0 {
                    tokio::select! {
                        _ = tokio::time::sleep(POLL) => {}
                        _ = stopped.changed() => break,
                    }
                } else if *stopped.borrow() {
                    break;
                }
            }
        });
        Ok(Self { shutdown, task })
    }

    /// Stops after the round in flight.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
    }
}

/// A due row, leased to this worker.
#[derive(sqlx::FromRow)]
struct Due {
    id: i64,
    tenant_id: String,
    webhook_id: Uuid,
    event: String,
    user_id: Option<String>,
    memory_id: Option<Uuid>,
    details: Value,
    created_at: DateTime<Utc>,
    attempts: i32,
    url: String,
    secret: String,
}

/// Takes and sends one round of due rows; returns how many were taken.
async fn deliver_due(
    pool: &PgPool,
    client: &reqwest::Client,
    metrics: &Metrics,
    settings: &WebhookSettings,
    lease: Duration,
) -> sqlx::Result<usize> {
    let due: Vec<Due> = sqlx::query_as!(
        Due,
        r#"WITH due AS (
             SELECT o.id FROM webhook_outbox o
               JOIN webhooks w ON w.tenant_id = o.tenant_id AND w.id = o.webhook_id
              WHERE o.next_attempt_at <= now()
                AND NOT EXISTS (SELECT FROM webhook_outbox p WHERE p.webhook_id = o.webhook_id
                                   AND p.user_id IS NOT DISTINCT FROM o.user_id AND p.id < o.id)
              ORDER BY o.id LIMIT $1 FOR UPDATE OF o SKIP LOCKED)
         UPDATE webhook_outbox o SET next_attempt_at = now() + make_interval(secs => $2), attempts = o.attempts + 1
           FROM due, webhooks w
          WHERE o.id = due.id AND w.tenant_id = o.tenant_id AND w.id = o.webhook_id
         RETURNING o.id AS "id!", o.tenant_id AS "tenant_id!", o.webhook_id AS "webhook_id!", o.event AS "event!", o.user_id, o.memory_id, o.details AS "details!", o.created_at AS "created_at!",
                   o.attempts AS "attempts!", w.url AS "url!", w.secret AS "secret!""#,
        BATCH,
        lease.as_secs_f64()
    )
    .fetch_all(pool)
    .await?;
    let taken = due.len();
    let sends = due.into_iter().map(|row| async move {
        if let Err(err) = deliver_one(pool, client, metrics, settings, row).await {
            tracing::warn!(error = %err, "cannot record a webhook delivery");
        }
    });
    futures_util::future::join_all(sends).await;
    Ok(taken)
}

/// What one attempt came to.
struct Attempt {
    outcome: &'static str,
    status_code: Option<i32>,
    error: Option<String>,
}

async fn deliver_one(
    pool: &PgPool,
    client: &reqwest::Client,
    metrics: &Metrics,
    settings: &WebhookSettings,
    row: Due,
) -> sqlx::Result<()> {
    let started = Instant::now();
    let body = body_of(pool, &row).await?.to_string();
    let host = reqwest::Url::parse(&row.url).ok().and_then(|u| u.host_str().map(str::to_owned));
    let attempt = match host {
        Some(host) if settings.allows(&host) => send(client, &row, &body).await,
        _ => Attempt {
            outcome: "refused",
            status_code: None,
            error: Some("the URL's host is not in webhooks.allowed_hosts".into()),
        },
    };
    let attempt = match attempt.outcome {
        "failed" if Utc::now() >= row.created_at + RETRY_FOR => Attempt { outcome: "expired", ..attempt },
        _ => attempt,
    };
    metrics.webhook_deliveries.with_label_values(&[attempt.outcome]).inc();
    let mut tx = pool.begin().await?;
    match attempt.outcome {
        "failed" => {
            let wait = (1i64 << (row.attempts - 1).clamp(0, 12)).min(MAX_BACKOFF_SECS);
            sqlx::query!(
                "UPDATE webhook_outbox SET next_attempt_at = now() + make_interval(secs => $2), last_error = $3
                  WHERE id = $1 AND attempts = $4",
                row.id,
                wait as f64,
                attempt.error.as_deref(),
                row.attempts
            )
            .execute(&mut *tx)
            .await?;
        }
        _ => {
            sqlx::query!("DELETE FROM webhook_outbox WHERE id = $1 AND attempts = $2", row.id, row.attempts)
                .execute(&mut *tx)
                .await?;
        }
    }
    sqlx::query!(
        "INSERT INTO webhook_deliveries (tenant_id, webhook_id, delivery_id, event, attempt, outcome, status_code,
                                         error, duration_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &row.tenant_id,
        row.webhook_id,
        row.id,
        &row.event,
        row.attempts,
        attempt.outcome,
        attempt.status_code,
        attempt.error.as_deref(),
        started.elapsed().as_millis().min(i32::MAX as u128) as i32
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// Posts the body signed; what came of it.
async fn send(client: &reqwest::Client, row: &Due, body: &str) -> Attempt {
    let t = Utc::now().timestamp();
    let signature = format!("t={t},v1={}", sign(&row.secret, t, body));
    let sent = client
        .post(&row.url)
        .header("content-type", "application/json")
        .header("engram-signature", signature)
        .header("engram-event", &row.event)
        .header("engram-delivery", row.id.to_string())
        .body(body.to_owned())
        .send()
        .await;
    match sent {
        Ok(response) if response.status().is_success() => {
            Attempt { outcome: "delivered", status_code: Some(response.status().as_u16().into()), error: None }
        }
        Ok(response) => Attempt {
            outcome: "failed",
            status_code: Some(response.status().as_u16().into()),
            error: Some(format!("the receiver answered {}", response.status())),
        },
        Err(err) => {
            let why =
                ConnectFailure::diagnose(&err).map_or_else(|| engram_base::tls::chain_text(&err), |f| f.to_string());
            Attempt { outcome: "failed", status_code: None, error: Some(why) }
        }
    }
}

/// `hex(HMAC-SHA256(secret, "<t>.<body>"))`.
pub fn sign(secret: &str, t: i64, body: &str) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(format!("{t}.{body}").as_bytes());
    hex(&mac.finalize().into_bytes())
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The delivery's body: the event, whose it is, and for a memory created or updated its
/// content as it is now (none when it has been deleted since).
async fn body_of(pool: &PgPool, row: &Due) -> sqlx::Result<Value> {
    let mut body = Map::new();
    body.insert("id".into(), json!(row.id.to_string()));
    body.insert("event".into(), json!(row.event));
    body.insert("occurred_at".into(), json!(row.created_at));
    body.insert("tenant_id".into(), json!(row.tenant_id));
    if let Some(user) = &row.user_id {
        body.insert("user_id".into(), json!(user));
    }
    if let Some(memory) = row.memory_id {
        body.insert("memory_id".into(), json!(memory));
    }
    let carries_content = Event::ALL.iter().any(|e| e.as_str() == row.event && e.carries_content());
    if let (true, Some(memory)) = (carries_content, row.memory_id) {
        let found: Option<(String, String, Option<String>, Option<String>)> = sqlx::query!(
            "SELECT content, category, key, value FROM memories WHERE tenant_id = $1 AND id = $2 AND status <> 'deleted'",
            &row.tenant_id,
            memory
        )
        .map(|r| (r.content, r.category, r.key, r.value))
        .fetch_optional(pool)
        .await?;
        let (content, category, key, value) =
            found.map_or((None, None, None, None), |(c, g, k, v)| (Some(c), Some(g), k, v));
        body.insert("content".into(), json!(content));
        body.insert("category".into(), json!(category));
        if key.is_some() {
            body.insert("key".into(), json!(key));
            body.insert("value".into(), json!(value));
        }
    }
    if let Value::Object(details) = &row.details {
        for (name, value) in details {
            if name != "status" || row.event == Event::MemoryDeleted.as_str() {
                body.insert(name.clone(), value.clone());
            }
        }
    }
    Ok(Value::Object(body))
}

/// Drops the record of attempts older than 7 days, and rows of the outbox whose
/// subscription was deleted while a change that saw it was being written.
async fn prune(pool: &PgPool) -> sqlx::Result<()> {
    sqlx::query!("DELETE FROM webhook_deliveries WHERE attempted_at < now() - interval '7 days'").execute(pool).await?;
    sqlx::query!(
        "DELETE FROM webhook_outbox o
          WHERE NOT EXISTS (SELECT FROM webhooks w WHERE w.tenant_id = o.tenant_id AND w.id = o.webhook_id)"
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Seconds since the oldest waiting row whose subscription exists was written; 0 when none waits.
async fn oldest_age(pool: &PgPool) -> sqlx::Result<f64> {
    let age: Option<f64> = sqlx::query_scalar!(
        r#"SELECT extract(epoch FROM now() - o.created_at)::float8 AS "age!" FROM webhook_outbox o
           JOIN webhooks w ON w.tenant_id = o.tenant_id AND w.id = o.webhook_id
          ORDER BY o.id LIMIT 1"#
    )
    .fetch_optional(pool)
    .await?;
    Ok(age.unwrap_or(0.0).max(0.0))
}

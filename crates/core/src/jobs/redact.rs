//! `redact`: applies the current secret rules (`ingest.redact`) to everything already
//! stored — turns' content and metadata, memories, their history, session and period
//! summaries, relations and the graph's history, feedback notes — so that a kind added
//! to `ingest.redact`, or a rule that learned a new shape, reaches the rows written
//! before it. Per user, in batches, at most `max_rows_per_user` a run: the user's
//! checkpoint keeps where it stopped, and the fingerprint of the rules it finished
//! with, so that a run with unchanged rules finds nobody and a run after a change
//! starts every user again. A row it changes keeps its id, times and everything else;
//! the vectors made from its text are made again from the redacted text. It counts rows
//! per table and kind of secret (`events.phone`), never the values.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::job::{Candidate, InTransaction, Job, Unit, Units};
use super::{Counts, Models, Scope, checkpoints, summarize_periods, summarize_sessions};
use engram_base::domain::{TenantId, UserId};
use engram_base::stored_texts::{Row, TextColumns};
use engram_language::secrets::{redact_found, redact_json_found};

/// Every table with free text, in the order a user's pass goes through them.
const TABLES: [&TextColumns; 8] = [
    &TextColumns::by_id("events", &["content"], &["metadata"], Some(&crate::ingest::vectors::VECTORS)),
    &TextColumns::by_id(
        "memories",
        &["content", "value", "source_quote"],
        &["metadata"],
        Some(&crate::memories::VECTORS),
    ),
    &TextColumns::by_id("memory_history", &["reason"], &["before", "after"], None),
    &TextColumns {
        name: "session_summaries",
        table: "sessions",
        key: "session_id",
        key_type: "text",
        texts: &["summary"],
        jsons: &["summary_history"],
        vectors: Some(&summarize_sessions::VECTORS),
    },
    &TextColumns::by_id("period_summaries", &["summary"], &[], Some(&summarize_periods::VECTORS)),
    &TextColumns::by_id("relations", &["fact"], &[], None),
    &TextColumns::by_id("graph_history", &["reason"], &["before", "after"], None),
    &TextColumns::by_id("feedback", &["note"], &[], None),
];

const JOB: &str = "redact";

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedactParams {
    /// Rows read and written per statement.
    pub batch_size: i64,
    /// Rows read per user in one run; the rest wait for the next.
    pub max_rows_per_user: i64,
}

impl Default for RedactParams {
    fn default() -> Self {
        Self { batch_size: 500, max_rows_per_user: 5_000 }
    }
}

/// Where a user's pass stands: the rules it applies, the table and the last key done.
struct Progress {
    table: usize,
    after: Option<String>,
}

async fn run_unit(
    conn: &mut PgConnection,
    params: &RedactParams,
    unit: &Unit<'_>,
    models: &Models,
) -> anyhow::Result<Counts> {
    let kinds = &models.secret_kinds;
    let fingerprint = crate::ingest::secrets::fingerprint(kinds);
    let state = checkpoints::state(conn, unit.tenant, unit.user, JOB).await?;
    let mut counts = Counts::default();
    if state["rules"] == fingerprint.as_str() {
        return Ok(counts);
    }
    // The table is kept by name: a release that reorders them resumes at the right one.
    let resumed =
        TABLES.iter().position(|t| state["table"] == t.name).filter(|_| state["redacting"] == fingerprint.as_str());
    let mut progress = match resumed {
        Some(table) => Progress { table, after: state["after"].as_str().map(str::to_owned) },
        None => Progress { table: 0, after: None },
    };
    let mut relations_changed = false;
    let wanted = |kind: &str| kinds.iter().any(|k| k == kind);
    let mut left = params.max_rows_per_user;
    while progress.table < TABLES.len() && left > 0 {
        let table = TABLES[progress.table];
        let limit = left.min(params.batch_size);
        let rows = table.batch(conn, unit.tenant, unit.user.as_str(), progress.after.as_deref(), limit).await?;
        let Some((last, _)) = rows.last() else {
            progress = Progress { table: progress.table + 1, after: None };
            continue;
        };
        left -= rows.len() as i64;
        progress.after = Some(last.clone());
        let mut changed: Vec<Row> = Vec::new();
        for (key, mut values) in rows {
            let mut found: Vec<&'static str> = Vec::new();
            let before = values.clone();
            for (i, value) in values.iter_mut().enumerate() {
                let kinds_here = match (i < table.texts.len(), value) {
                    (true, Value::String(text)) => {
                        let (redacted, kinds) = redact_found(text, wanted);
                        *text = redacted;
                        kinds
                    }
                    (false, value) => redact_json_found(value, &wanted),
                    _ => Vec::new(),
                };
                for kind in kinds_here {
                    if !found.contains(&kind) {
                        found.push(kind);
                    }
                }
            }
            if values != before {
                for kind in found {
                    counts.add(&format!("{}.{kind}", table.name), 1);
                }
                changed.push((key, values));
            }
        }
        table.write(conn, unit.tenant, unit.user.as_str(), &changed).await?;
        remake_vectors(conn, unit, models, table, &changed).await?;
        relations_changed |= table.name == "relations" && !changed.is_empty();
    }
    // The walkable graph holds the relations' sentences and vectors too.
    if relations_changed {
        crate::graph::snapshot::refresh(conn, unit.tenant, unit.user, models.graph.settings.scan_limit).await?;
    }
    // What changed, counted without a value, in the audit log.
    if counts.iter().any(|(action, _)| action.contains('.')) {
        let details = json!({"redacted": counts.to_json(), "rules": fingerprint});
        crate::users::audit(
            conn,
            unit.tenant,
            &engram_base::domain::Actor::Job(JOB.into()).to_string(),
            "redact",
            unit.user.as_str(),
            details,
        )
        .await?;
    }
    let fields = match progress.table >= TABLES.len() {
        true => json!({"rules": fingerprint, "redacting": null, "table": null, "after": null}),
        false => {
            counts.add("users_with_more", 1);
            json!({"redacting": fingerprint, "table": TABLES[progress.table].name, "after": progress.after})
        }
    };
    checkpoints::set_state(conn, unit.tenant, unit.user, JOB, &fields).await?;
    Ok(counts)
}

/// The vectors made from the changed rows' text, made again: a turn's and the next
/// turn's (made with it), a memory's, a summary's, a relation's.
async fn remake_vectors(
    conn: &mut PgConnection,
    unit: &Unit<'_>,
    models: &Models,
    table: &TextColumns,
    changed: &[Row],
) -> anyhow::Result<()> {
    if changed.is_empty() {
        return Ok(());
    }
    let mut keys: Vec<String> = changed.iter().map(|(key, _)| key.clone()).collect();
    let embedder = &models.embedder;
    if table.name == "relations" {
        let ids: Vec<Uuid> = keys.iter().filter_map(|k| k.parse().ok()).collect();
        crate::graph::remake_relation_vectors(conn, unit.tenant, unit.user, &ids, embedder).await?;
        return Ok(());
    }
    let Some(vectors) = table.vectors else { return Ok(()) };
    if table.name == "events" {
        let ids: Vec<Uuid> = keys.iter().filter_map(|k| k.parse().ok()).collect();
        keys.extend(
            crate::ingest::rewrite::next_turns(conn, unit.tenant, unit.user, &ids).await?.iter().map(Uuid::to_string),
        );
        keys.sort();
        keys.dedup();
    }
    vectors.remake(conn, unit.tenant, unit.user.as_str(), &keys, embedder).await?;
    Ok(())
}

/// Users with sessions or memories whose checkpoint does not hold the current rules' fingerprint.
async fn candidates(pool: &PgPool, scope: &Scope, fingerprint: &str) -> sqlx::Result<Vec<Candidate>> {
    let (tenant, user) = scope.columns();
    sqlx::query!(
        r#"SELECT u.tenant_id AS "tenant_id!: TenantId", u.user_id AS "user_id!: UserId" FROM (
                SELECT DISTINCT tenant_id, user_id FROM sessions
                 WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)
                UNION
                SELECT DISTINCT tenant_id, user_id FROM memories
                 WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR user_id = $2)) u
          WHERE NOT EXISTS (SELECT FROM job_checkpoints k
                             WHERE k.tenant_id = u.tenant_id AND k.user_id = u.user_id AND k.job = $4
                               AND k.state ->> 'rules' = $3)
          ORDER BY 1, 2"#,
        tenant,
        user,
        fingerprint,
        JOB
    )
    .map(|r| (r.tenant_id, r.user_id))
    .fetch_all(pool)
    .await
}

impl Job for RedactParams {
    fn check(&self, _concurrency: usize) -> Result<(), String> {
        if !(1..=10_000).contains(&self.batch_size) {
            return Err("params.batch_size: must be between 1 and 10000".into());
        }
        match self.max_rows_per_user {
            1.. => Ok(()),
            _ => Err("params.max_rows_per_user: must be at least 1".into()),
        }
    }

    async fn candidates(
        &self,
        pool: &PgPool,
        scope: &Scope,
        _now: DateTime<Utc>,
        models: &Models,
    ) -> sqlx::Result<Vec<Candidate>> {
        candidates(pool, scope, &crate::ingest::secrets::fingerprint(&models.secret_kinds)).await
    }

    fn units(&self) -> Units<'_> {
        Units::InTransaction { custom_plans: false, job: self }
    }
}

impl InTransaction for RedactParams {
    async fn run_unit(&self, conn: &mut PgConnection, unit: &Unit<'_>, models: &Models) -> anyhow::Result<Counts> {
        run_unit(conn, self, unit, models).await
    }
}

//! Questions about the present ("where does the user currently live?", "现在前端用什么";
//! `engram_language::when::present` knows their words): the newest statement on a topic
//! answers them. Among a search's candidate facts and raw turns, when a newer one on
//! the same topic follows a result (their stored vectors at least [`SAME_TOPIC`]
//! similar), the newest of those takes the result's score if it had less — from below
//! `min_score` too — and the result ranks just below it. So "I've officially started at
//! Initech now" comes before "I work as a data analyst at Globex" whatever their words
//! share with the question. The older result is not dropped: it is the history the
//! newer one changed, and often what a question means after all. Without a word of the
//! present, with a time phrase ("what was she reading in May 2023") or with `as_of`,
//! nothing moves.
//!
//! The same test tells the context which standing lines a present question has
//! outdated ([`changed`]): a profile fact or a relation with a newer result on its topic
//! is history there, not what stands.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::SearchResult;
use engram_base::domain::{ResultKind, TenantId};

/// Results this similar are taken to be about the same thing. The local model scores
/// one topic said in other words low ("Born and raised in Chicago" and "Traded Chicago
/// winters for Austin summers"), so the bar is low: a close call reorders results, and
/// in a context leaves a standing line out for a newer one on its topic.
pub const SAME_TOPIC: f32 = 0.2;

/// When a result says it happened: a turn's time, a memory's `valid_from`.
fn said_at(result: &SearchResult) -> DateTime<Utc> {
    result.created_at.unwrap_or(result.updated_at)
}

/// Ranks the newest fact or turn on each topic first, each older one just below it;
/// `results` come sorted best first and are left so.
pub async fn newest_first(
    conn: &mut PgConnection,
    tenant: &TenantId,
    results: &mut [SearchResult],
) -> sqlx::Result<()> {
    if results.iter().filter(|r| matches!(r.kind, ResultKind::Fact | ResultKind::Insight | ResultKind::Event)).count()
        < 2
    {
        return Ok(());
    }
    let vectors = vectors(conn, tenant, results).await?;
    // Newest first, so that a result is compared with newer ones already in place.
    let mut order: Vec<usize> = (0..results.len()).filter(|&i| vectors.contains_key(&results[i].id)).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(said_at(&results[i])));
    for (n, &older) in order.iter().enumerate() {
        let v = &vectors[&results[older].id];
        // The newest result on the topic, among those already in place.
        let newest = order[..n]
            .iter()
            .copied()
            .filter(|&newer| said_at(&results[newer]) > said_at(&results[older]))
            .find(|&newer| same_topic(v, &vectors[&results[newer].id]));
        let Some(newest) = newest else { continue };
        if results[newest].score < results[older].score {
            // What the question is about, said last: it takes the older one's place,
            // even from below `min_score`.
            let lifted = results[older].score;
            if let Some(explanation) = results[newest].explanation.as_mut() {
                explanation.time *= lifted / results[newest].score.max(f64::MIN_POSITIVE);
            }
            results[newest].score = lifted;
        }
        let lowered = results[newest].score * 0.99;
        if results[older].score > lowered {
            if let Some(explanation) = results[older].explanation.as_mut() {
                explanation.time *= lowered / results[older].score.max(f64::MIN_POSITIVE);
            }
            results[older].score = lowered;
        }
    }
    results.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(())
}

/// Of `standing` (ids of memories and relations a context shows as what stands), those
/// that a result of `found` said later on the same topic has changed.
pub async fn changed(
    conn: &mut PgConnection,
    tenant: &TenantId,
    standing: &[Uuid],
    found: &[SearchResult],
) -> sqlx::Result<HashSet<Uuid>> {
    if standing.is_empty() || found.is_empty() {
        return Ok(HashSet::new());
    }
    let old: Vec<(Uuid, DateTime<Utc>, pgvector::Vector)> = sqlx::query!(
        r#"SELECT id AS "id!", coalesce(valid_from, created_at) AS "at!", embedding::vector AS "embedding!: pgvector::Vector" FROM memories
          WHERE tenant_id = $1 AND id = ANY($2) AND embedding IS NOT NULL
         UNION ALL
         SELECT id, valid_from, embedding::vector FROM relations
          WHERE tenant_id = $1 AND id = ANY($2) AND embedding IS NOT NULL"#,
        tenant.as_str(),
        standing
    )
    .map(|r| (r.id, r.at, r.embedding))
    .fetch_all(&mut *conn)
    .await?;
    let new = vectors(conn, tenant, found).await?;
    Ok(old
        .into_iter()
        .filter(|(id, at, vector)| {
            let vector = vector.as_slice();
            found.iter().any(|r| {
                r.id != id.to_string() && said_at(r) > *at && new.get(&r.id).is_some_and(|v| same_topic(vector, v))
            })
        })
        .map(|(id, _, _)| id)
        .collect())
}

/// The stored vectors of the facts, insights and raw turns among `results`, by id.
async fn vectors(
    conn: &mut PgConnection,
    tenant: &TenantId,
    results: &[SearchResult],
) -> sqlx::Result<HashMap<String, Vec<f32>>> {
    let ids = |kinds: &[ResultKind]| -> Vec<Uuid> {
        results.iter().filter(|r| kinds.contains(&r.kind)).filter_map(|r| r.id.parse().ok()).collect()
    };
    let (memories, events) = (ids(&[ResultKind::Fact, ResultKind::Insight]), ids(&[ResultKind::Event]));
    let rows: Vec<(Uuid, pgvector::Vector)> = sqlx::query!(
        r#"SELECT id AS "id!", embedding::vector AS "embedding!: pgvector::Vector" FROM memories WHERE tenant_id = $1 AND id = ANY($2) AND embedding IS NOT NULL
         UNION ALL
         SELECT id, embedding::vector FROM events WHERE tenant_id = $1 AND id = ANY($3) AND embedding IS NOT NULL"#,
        tenant.as_str(),
        &memories,
        &events
    )
    .map(|r| (r.id, r.embedding))
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|(id, v)| (id.to_string(), v.to_vec())).collect())
}

fn same_topic(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (norm(a) * norm(b)).max(f32::MIN_POSITIVE) >= SAME_TOPIC
    }
}

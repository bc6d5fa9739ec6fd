//! Graph retrieval: which entities a lookup starts from, the bounded walk from them,
//! and each relation reached as a result on search's scale.
//!
//! ```text
//! seeds  = entities named in the query: by normal form or alias (weight 1), by trigram
//!          similarity ≥ graph.name_similarity (that similarity), or, when none is named,
//!          by embedding ≥ graph.seed_similarity (that similarity); and the entities of
//!          the relations stated in the turns of the best results (weight hop_decay)
//! walk   = recursive SQL from the seeds, both directions, at most graph.max_depth hops,
//!          the most recent graph.fan_out edges of each entity at the first hop, half as
//!          many at the second, a quarter at the third (farther is less relevant and costs
//!          more), graph.max_relations in all; each
//!          relation by its shortest path from the surest seed
//! graph  = seed weight × hop_decay^(hop − 1)
//! ```
//!
//! A relation is scored on search's scale (see [`crate::search`]). What the query asks of
//! the entities it names is the query without their names ([`residual`]: "张伟用的什么
//! 数据库" asks of 张伟's relations which one is about a database): a relation's
//! similarity is the mean of its similarity to the query and to that, and its keyword
//! share is of that. Its tier is `graph.relation_weight × (1 + graph) / 2`.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::names::{Aliases, normalise};
use super::{GraphSettings, line};
use crate::domain::{TenantId, UserId};
use crate::models::Embedding;

/// An entity a walk starts from, and how surely the query means it (0..1).
#[derive(Debug, Clone, Copy)]
pub struct Seed {
    pub entity: Uuid,
    pub weight: f64,
}

/// The query without the names (and aliases) of the entities it names: what it asks of them.
pub fn residual(query: &str, names: &[String]) -> String {
    let mut rest = query.to_lowercase();
    let mut names: Vec<&String> = names.iter().filter(|n| !n.is_empty()).collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.chars().count()));
    for name in names {
        rest = rest.replace(&format!("{name}'s"), " ").replace(name.as_str(), " ");
    }
    let rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
    if rest.chars().filter(|c| c.is_alphanumeric()).count() < 2 { query.to_owned() } else { rest }
}

/// The names (normal forms and aliases) of `seeds`.
pub async fn names_of(conn: &mut PgConnection, tenant: &TenantId, seeds: &[Seed]) -> sqlx::Result<Vec<String>> {
    let ids: Vec<Uuid> = seeds.iter().filter(|s| s.weight >= 1.0).map(|s| s.entity).collect();
    sqlx::query_scalar(
        "SELECT DISTINCT unnest(aliases || norm_name || split_part(norm_name, ' ', 1)) FROM entities
          WHERE tenant_id = $1 AND id = ANY($2)",
    )
    .bind(tenant.as_str())
    .bind(&ids)
    .fetch_all(conn)
    .await
}

/// The candidate names in a query: its words and runs of up to three words, every two to
/// six characters of unspaced (CJK) text, and the canonical names of the aliases among them.
pub fn names_in(query: &str, aliases: &Aliases) -> Vec<String> {
    let lower = query.to_lowercase().replace('’', "'");
    let mut names: Vec<String> = Vec::new();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '+' | '#' | '.' | '-' | '\'')))
        .map(|w| w.strip_suffix("'s").unwrap_or(w).trim_matches(['.', '\'', '-']))
        .filter(|w| !w.is_empty())
        .collect();
    for n in 1..=3 {
        for window in words.windows(n) {
            names.push(window.join(" "));
        }
    }
    let han: Vec<char> = lower.chars().collect();
    let mut run = Vec::new();
    for c in han.iter().copied().chain(std::iter::once(' ')) {
        if ('\u{4e00}'..='\u{9fff}').contains(&c) {
            run.push(c);
            continue;
        }
        for len in 2..=6.min(run.len()) {
            for start in 0..=run.len() - len {
                names.push(run[start..start + len].iter().collect());
            }
        }
        run.clear();
    }
    let canonical: Vec<String> = names.iter().filter_map(|n| aliases.canonical(n)).map(normalise).collect();
    names.extend(canonical);
    names.sort();
    names.dedup();
    names
}

/// The entities a lookup starts from (see the module documentation): `conn` reads the
/// names, `custom` (a connection planning each statement for its values; needed with
/// `from_events`) the relations of the best results' turns, which a generic plan would
/// read through all the user's relations.
#[allow(clippy::too_many_arguments)]
pub async fn seeds(
    conn: &mut PgConnection,
    custom: Option<&mut PgConnection>,
    tenant: &TenantId,
    user: &UserId,
    query: &str,
    vector: Option<&Embedding>,
    from_events: &[Uuid],
    aliases: &Aliases,
    settings: &GraphSettings,
) -> sqlx::Result<Vec<Seed>> {
    let names = names_in(query, aliases);
    let long: Vec<&String> = names.iter().filter(|n| n.chars().count() >= 4 && n.is_ascii()).collect();
    // Names and aliases, each branch through its own index.
    let mut found: Vec<(Uuid, f64)> = sqlx::query_as(
        "SELECT id, 1::float8 FROM entities
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND norm_name = ANY($3)
         UNION ALL
         SELECT id, 1::float8 FROM entities
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND aliases && $3",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(&names)
    .fetch_all(&mut *conn)
    .await?;
    // A person by their first name ("Sam" for Sam Carter), or a misspelt name
    // ("Postgress"), only when the query names none in full: a user with many alike
    // names would otherwise match them all.
    if found.is_empty() {
        found.extend(
            sqlx::query_as::<_, (Uuid, f64)>(
                "SELECT id, 1::float8 FROM entities
                  WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND type = 'person'
                    AND split_part(norm_name, ' ', 1) = ANY($3)
                  LIMIT 8",
            )
            .bind(tenant.as_str())
            .bind(user.as_str())
            .bind(&names)
            .fetch_all(&mut *conn)
            .await?,
        );
    }
    if found.is_empty() && !long.is_empty() {
        found.extend(
            sqlx::query_as::<_, (Uuid, f64)>(
                "SELECT e.id, max(similarity(e.norm_name, w))::float8 AS s FROM entities e, unnest($3::text[]) w
                  WHERE e.tenant_id = $1 AND e.user_id = $2 AND e.status = 'active' AND e.norm_name % w
                  GROUP BY e.id HAVING max(similarity(e.norm_name, w)) >= $4 ORDER BY s DESC LIMIT 8",
            )
            .bind(tenant.as_str())
            .bind(user.as_str())
            .bind(&long)
            .bind(settings.name_similarity as f64)
            .fetch_all(&mut *conn)
            .await?,
        );
    }
    let named = !found.is_empty();
    if let Some(custom) = custom
        && !from_events.is_empty()
    {
        found.extend(
            sqlx::query_as::<_, (Uuid, f64)>(
                "SELECT DISTINCT unnest(ARRAY[subject_id, object_id]), $3::float8 FROM relations
                  WHERE tenant_id = $1 AND source_event_ids && $2 AND status = 'active' AND user_id = $4",
            )
            .bind(tenant.as_str())
            .bind(from_events)
            .bind(settings.hop_decay)
            .bind(user.as_str())
            .fetch_all(custom)
            .await?,
        );
    }
    if !named && let Some(vector) = vector {
        let dims = vector.dims();
        let sql = format!(
            "SELECT id, (1 - (embedding::halfvec({dims}) <=> $3::halfvec({dims})))::float8 AS s FROM entities
              WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND embedding_dims = {dims}
              ORDER BY embedding::halfvec({dims}) <=> $3::halfvec({dims}) LIMIT 3"
        );
        let near: Vec<(Uuid, f64)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(user.as_str())
            .bind(vector.to_pgvector())
            .fetch_all(&mut *conn)
            .await?;
        found.extend(near.into_iter().filter(|(_, s)| *s >= settings.seed_similarity as f64));
    }
    let mut best: HashMap<Uuid, f64> = HashMap::new();
    for (entity, weight) in found {
        let slot = best.entry(entity).or_insert(0.0);
        *slot = slot.max(weight);
    }
    let mut seeds: Vec<Seed> = best.into_iter().map(|(entity, weight)| Seed { entity, weight }).collect();
    seeds.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.entity.cmp(&b.entity)));
    seeds.truncate(8);
    Ok(seeds)
}

/// One relation a walk reached.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Reached {
    pub id: Uuid,
    pub subject_id: Uuid,
    pub subject: String,
    pub predicate: String,
    pub object_id: Uuid,
    pub object: String,
    pub fact: String,
    pub valid_from: DateTime<Utc>,
    pub valid_to: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
    pub source_event_ids: Vec<Uuid>,
    /// Hops from the seed (1 for an edge of the seed itself).
    pub hop: i32,
    /// The relations from the seed to this one, this one last.
    pub path: Vec<Uuid>,
    /// The entity the path starts at.
    pub start: Uuid,
    /// The seed's weight.
    pub weight: f64,
    /// The mean cosine similarity of the relation to the query and to what it asks of
    /// the entities it names (0 without a query vector).
    pub similarity: f64,
}

/// Which relations a walk may follow: those that hold now, or at `as_of` (the ones
/// superseded since included).
fn validity(as_of: bool) -> &'static str {
    if as_of {
        "r.status IN ('active', 'superseded') AND r.valid_from <= $6 AND (r.valid_to IS NULL OR r.valid_to > $6)"
    } else {
        "r.status = 'active' AND $6::timestamptz IS NULL"
    }
}

/// The walk from `seeds`: at most `depth` hops, `fan_out` edges per entity at the first
/// hop and half as many at each further one, `max_relations` relations, each with its
/// shortest path from its surest seed; nearest hops first.
#[allow(clippy::too_many_arguments)]
pub async fn walk(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    seeds: &[Seed],
    depth: u8,
    settings: &GraphSettings,
    as_of: Option<DateTime<Utc>>,
    vectors: Option<(&Embedding, &Embedding)>,
) -> sqlx::Result<Vec<Reached>> {
    if seeds.is_empty() {
        return Ok(Vec::new());
    }
    // The mean of the relation's similarity to the query and to what it asks of the
    // entities it names (see `residual`).
    let similarity = match vectors {
        Some((v, _)) => format!(
            "CASE WHEN r.embedding_dims = {dims}
                  THEN 1 - ((r.embedding::halfvec({dims}) <=> $8::halfvec({dims}))
                            + (r.embedding::halfvec({dims}) <=> $10::halfvec({dims}))) / 2 ELSE 0 END",
            dims = v.dims()
        ),
        None => "0".to_owned(),
    };
    let sql = format!(
        "WITH RECURSIVE walk (node, hop, path, start, weight) AS (
            SELECT s.id, 0, ARRAY[]::uuid[], s.id, s.w FROM unnest($3::uuid[], $4::float8[]) s(id, w)
          UNION ALL
            SELECT next.node, w.hop + 1, w.path || next.rel, w.start, w.weight
              FROM walk w
             CROSS JOIN LATERAL (
                SELECT e.rel, e.node FROM (
                    (SELECT r.id AS rel, r.object_id AS node, r.valid_from FROM relations r
                      WHERE r.tenant_id = $1 AND r.subject_id = w.node AND r.user_id = $2 AND {validity}
                      ORDER BY r.valid_from DESC LIMIT ceil($7::float8 / (1 << w.hop))::int + 1)
                    UNION ALL
                    (SELECT r.id, r.subject_id, r.valid_from FROM relations r
                      WHERE r.tenant_id = $1 AND r.object_id = w.node AND r.user_id = $2 AND {validity}
                      ORDER BY r.valid_from DESC LIMIT ceil($7::float8 / (1 << w.hop))::int + 1)
                ) e
                 WHERE e.rel <> ALL (w.path)
                 ORDER BY e.valid_from DESC LIMIT ceil($7::float8 / (1 << w.hop))::int
             ) next
             WHERE w.hop < $5
         ), shortest AS (
            SELECT DISTINCT ON (path[array_length(path, 1)]) path[array_length(path, 1)] AS rel, hop, path, start, weight
              FROM walk WHERE hop > 0
             ORDER BY path[array_length(path, 1)], weight DESC, hop
         ), reached AS (
            SELECT * FROM shortest ORDER BY hop, weight DESC LIMIT $9
         )
         SELECT r.id, r.subject_id, s.name AS subject, r.predicate, r.object_id, o.name AS object, r.fact,
                r.valid_from, r.valid_to, r.updated_at, r.source_event_ids, x.hop, x.path, x.start, x.weight,
                ({similarity})::float8 AS similarity
           FROM reached x
           JOIN relations r ON r.tenant_id = $1 AND r.id = x.rel
           JOIN entities s ON s.tenant_id = $1 AND s.id = r.subject_id
           JOIN entities o ON o.tenant_id = $1 AND o.id = r.object_id
          ORDER BY x.hop, x.weight DESC, r.valid_from DESC
          LIMIT $9",
        validity = validity(as_of.is_some())
    );
    let ids: Vec<Uuid> = seeds.iter().map(|s| s.entity).collect();
    let weights: Vec<f64> = seeds.iter().map(|s| s.weight).collect();
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.as_str())
        .bind(user.as_str())
        .bind(&ids)
        .bind(&weights)
        .bind(depth as i32)
        .bind(as_of)
        .bind(settings.fan_out)
        .bind(vectors.map(|(v, _)| v.to_pgvector()))
        .bind(settings.max_relations)
        .bind(vectors.map(|(_, v)| v.to_pgvector()))
        .fetch_all(conn)
        .await
}

/// The chain from a relation's seed to it: `张伟 —colleague→ 李明 —leads→ 电商项目`.
pub fn chain(reached: &Reached, all: &HashMap<Uuid, &Reached>) -> String {
    let mut at = reached.start;
    let mut text = String::new();
    for id in &reached.path {
        let Some(r) = all.get(id).copied().or((*id == reached.id).then_some(reached)) else {
            return relation_line(reached);
        };
        let forward = r.subject_id == at;
        if text.is_empty() {
            text.push_str(if forward { &r.subject } else { &r.object });
        }
        if forward {
            text.push_str(&format!(" —{}→ {}", r.predicate, r.object));
            at = r.object_id;
        } else {
            text.push_str(&format!(" ←{}— {}", r.predicate, r.subject));
            at = r.subject_id;
        }
    }
    text
}

pub fn relation_line(r: &Reached) -> String {
    line(&r.subject, &r.predicate, &r.object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_names_its_words_runs_and_aliases() {
        let names = names_in("张伟用的什么数据库？", &Aliases::default());
        assert!(names.contains(&"张伟".to_owned()));
        let names = names_in("Which database does the billing service use with PG?", &Aliases::default());
        assert!(names.contains(&"billing service".to_owned()));
        assert!(names.contains(&"postgresql".to_owned()), "the alias's canonical name: {names:?}");
    }
}

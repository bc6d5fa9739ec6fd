//! Graph retrieval: which entities a lookup starts from, the bounded walk from them,
//! and each relation reached as a result on search's scale.
//!
//! ```text
//! seeds  = entities named in the query: by normal form or alias (weight 1), by trigram
//!          similarity ≥ graph.name_similarity (that similarity), or, when none is named,
//!          by embedding ≥ graph.seed_similarity (that similarity); and the entities of
//!          the relations stated in the turns of the best results (weight hop_decay)
//! walk   = breadth first from the seeds, both directions, at most graph.max_depth hops,
//!          the most recent graph.fan_out edges of each entity at the first hop, half as
//!          many at the second, a quarter at the third (farther is less relevant and costs
//!          more), walkers in turn (surest seed first, then the most recent edge that
//!          led to them) until graph.max_relations are reached; each relation by its
//!          shortest path from the surest seed
//! graph  = seed weight × hop_decay^(hop − 1)
//! ```
//!
//! Where the walk reads the graph: a user with a graph row (see [`crate::graph::snapshot`]:
//! at most `graph.scan_limit` relations) has it read in one statement, and seeds, walk and
//! similarities are found in memory ([`in_graph`], [`reached_in`]). A user without one,
//! or a lookup `as_of` a past time, is walked through the database: seeds by statements
//! ([`start`]), a statement per hop through `relations_subject` and `relations_object` for
//! as many entities as the relations still wanted need, then one statement reads the
//! relations reached ([`relations`]).
//!
//! A relation is scored on search's scale (see [`crate::search`]). What the query asks of
//! the entities it names is the query without their names ([`residual`]: "张伟用的什么
//! 数据库" asks of 张伟's relations which one is about a database): a relation's
//! similarity is the mean of its similarity to the query and to that, and its keyword
//! share is of that. Its tier is `graph.relation_weight × (1 + graph) / 2`.
//!
//! [`seeds`] finds where a walk starts, [`walk`] walks; this module reads what it reached.

mod seeds;
mod walk;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::line;
use super::snapshot::UserGraph;
use engram_base::domain::TenantId;
use engram_base::models::Embedding;

pub use seeds::{Seed, Start, in_graph, names_in, residual, start};
pub use walk::{Edge, Step, walk};

/// Which relations a walk may follow: those that hold now, or at `as_of` (`$as_of`; the
/// ones superseded since included).
fn validity(as_of: bool, param: &str) -> String {
    match as_of {
        true => format!(
            "r.status IN ('active', 'superseded') AND r.valid_from <= {param} AND (r.valid_to IS NULL OR r.valid_to > {param})"
        ),
        false => format!("r.status = 'active' AND {param}::timestamptz IS NULL"),
    }
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
    #[sqlx(skip)]
    pub hop: i32,
    /// The relations from the seed to this one, this one last.
    #[sqlx(skip)]
    pub path: Vec<Uuid>,
    /// The entity the path starts at.
    #[sqlx(skip)]
    pub start: Uuid,
    /// The seed's weight.
    #[sqlx(skip)]
    pub weight: f64,
    /// The mean cosine similarity of the relation to the query and to what it asks of
    /// the entities it names (0 without query vectors).
    pub similarity: f64,
}

/// The relations `steps` reached, in their order, with their similarity to `vectors`
/// (the query and what it asks of the entities it names).
pub async fn relations(
    conn: &mut PgConnection,
    tenant: &TenantId,
    steps: &[Step],
    vectors: Option<(&Embedding, &Embedding)>,
) -> sqlx::Result<Vec<Reached>> {
    if steps.is_empty() {
        return Ok(Vec::new());
    }
    // The query vectors are cast once, not once per relation: the plan is cached and generic.
    let similarity = match vectors {
        Some((v, _)) => format!(
            "CASE WHEN r.embedding_dims = {dims}
                  THEN 1 - ((r.embedding::halfvec({dims}) <=> (SELECT $3::halfvec({dims})))
                            + (r.embedding::halfvec({dims}) <=> (SELECT $4::halfvec({dims})))) / 2 ELSE 0 END",
            dims = v.dims()
        ),
        None => "0".to_owned(),
    };
    // Each entity's name read once: a walk's relations share their entities.
    let sql = format!(
        "WITH r AS MATERIALIZED (
            SELECT r.id, r.subject_id, r.predicate, r.object_id, r.fact, r.valid_from, r.valid_to, r.updated_at,
                   r.source_event_ids, ({similarity})::float8 AS similarity
              FROM relations r WHERE r.tenant_id = $1 AND r.id = ANY($2)
         ), named AS MATERIALIZED (
            SELECT id, name FROM entities
             WHERE tenant_id = $1 AND id = ANY(ARRAY(SELECT subject_id FROM r UNION SELECT object_id FROM r))
         )
         SELECT r.id, r.subject_id, r.predicate, r.object_id, r.fact, s.name AS subject, o.name AS object,
                r.valid_from, r.valid_to, r.updated_at, r.source_event_ids, r.similarity
           FROM r JOIN named s ON s.id = r.subject_id JOIN named o ON o.id = r.object_id"
    );
    let ids: Vec<Uuid> = steps.iter().map(|s| s.relation).collect();
    let found: Vec<Reached> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.as_str())
        .bind(&ids)
        .bind(vectors.map(|(v, _)| v.to_pgvector()))
        .bind(vectors.map(|(_, v)| v.to_pgvector()))
        .fetch_all(conn)
        .await?;
    let mut by_id: HashMap<Uuid, Reached> = found.into_iter().map(|r| (r.id, r)).collect();
    Ok(steps
        .iter()
        .filter_map(|step| {
            let mut r = by_id.remove(&step.relation)?;
            r.hop = step.hop;
            r.path = step.path.clone();
            r.start = step.start;
            r.weight = step.weight;
            Some(r)
        })
        .collect())
}

/// The relations `steps` reached in the user's `graph` row, in their order, with their
/// similarity to `vectors` as [`relations`] finds it (from 8-bit vectors).
pub fn reached_in(graph: &UserGraph, steps: &[Step], vectors: (&Embedding, &Embedding)) -> Vec<Reached> {
    let name = |id: Uuid| graph.name(id).unwrap_or_default().to_owned();
    steps
        .iter()
        .filter_map(|step| {
            let r = graph.relation(step.relation)?;
            let similarity = (r.vector.cosine(vectors.0.as_slice()) + r.vector.cosine(vectors.1.as_slice())) / 2.0;
            Some(Reached {
                id: r.id,
                subject_id: r.subject_id,
                subject: name(r.subject_id),
                predicate: r.predicate.to_owned(),
                object_id: r.object_id,
                object: name(r.object_id),
                fact: r.fact.to_owned(),
                valid_from: r.valid_from,
                valid_to: r.valid_to,
                updated_at: r.updated_at,
                source_event_ids: r.source_event_ids.iter().collect(),
                hop: step.hop,
                path: step.path.clone(),
                start: step.start,
                weight: step.weight,
                similarity,
            })
        })
        .collect()
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

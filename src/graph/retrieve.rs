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
//!          more), until graph.max_relations are reached; each relation by its shortest
//!          path from the surest seed
//! graph  = seed weight × hop_decay^(hop − 1)
//! ```
//!
//! Where the walk reads edges: a user with at most `graph.scan_limit` edges has them
//! all read once, in the statement that finds the seeds (one index-only scan), and
//! walked in memory; a user with more is walked through the database one hop per
//! statement, each entity's most recent edges through `relations_subject` and
//! `relations_object`. Then one statement reads the relations reached.
//!
//! A relation is scored on search's scale (see [`crate::search`]). What the query asks of
//! the entities it names is the query without their names ([`residual`]: "张伟用的什么
//! 数据库" asks of 张伟's relations which one is about a database): a relation's
//! similarity is the mean of its similarity to the query and to that, and its keyword
//! share is of that. Its tier is `graph.relation_weight × (1 + graph) / 2`.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres};
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

/// An edge as a walk follows it.
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub struct Edge {
    pub id: Uuid,
    pub subject_id: Uuid,
    pub object_id: Uuid,
    pub valid_from: DateTime<Utc>,
}

impl Edge {
    fn other(&self, node: Uuid) -> Uuid {
        if self.subject_id == node { self.object_id } else { self.subject_id }
    }
}

/// Where a lookup's walk starts, and the user's edges when they were few enough to read.
#[derive(Debug, Default)]
pub struct Start {
    pub seeds: Vec<Seed>,
    /// The names (normal forms, aliases, first names) of the seeds named in full.
    pub names: Vec<String>,
    /// All the user's edges that hold (now or at `as_of`); `None` when there are more
    /// than `graph.scan_limit`, or they were not asked for.
    pub edges: Option<Vec<Edge>>,
    /// The names of all the user's entities, read with the edges (`None` with them).
    pub entity_names: Option<HashMap<Uuid, String>>,
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

/// What the names of an entity are matched by in a query: its normal form, its aliases
/// and its first word (a person's first name).
const NAMES: &str = "aliases || norm_name || split_part(norm_name, ' ', 1)";

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

/// The entities a lookup starts from (see the module documentation), and with
/// `scan_edges` the user's edges and entity names when they are at most
/// `graph.scan_limit`, in one statement on `conn` (plans cached). For a user with more,
/// a misspelt name and the relations of the best results' turns are looked up on a
/// connection of `planned`, which plans each statement for its values: a generic plan
/// reads all of a large user's entities or relations for them.
#[allow(clippy::too_many_arguments)]
pub async fn start(
    conn: &mut PgConnection,
    planned: &PgPool,
    tenant: &TenantId,
    user: &UserId,
    query: &str,
    vector: Option<&Embedding>,
    from_events: &[Uuid],
    as_of: Option<DateTime<Utc>>,
    scan_edges: bool,
    aliases: &Aliases,
    settings: &GraphSettings,
) -> sqlx::Result<Start> {
    let names = names_in(query, aliases);
    // Names and aliases, each branch through its own index; the edges through
    // `relations_edges` and the entities' names through `entities_listing`, index-only.
    // A row is a seed (`kind` 0, with its names), an edge (1) or an entity's name (2).
    let sql = format!(
        "WITH named AS (
            SELECT id, {NAMES} AS names FROM entities
             WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND norm_name = ANY($3)
            UNION
            SELECT id, {NAMES} FROM entities
             WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND aliases && $3
         ), edges AS (
            SELECT r.id, r.subject_id, r.object_id, r.valid_from, r.source_event_ids && $4 AS stated FROM relations r
             WHERE r.tenant_id = $1 AND r.user_id = $2 AND {validity} AND $6 LIMIT $5
         ), entity_names AS (
            SELECT id, name FROM entities
             WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND $6 LIMIT $5
         )
         SELECT 0::int2, id, NULL::uuid, NULL::uuid, NULL::timestamptz, false, names, NULL::text FROM named
         UNION ALL
         SELECT 1::int2, id, subject_id, object_id, valid_from, stated, NULL::text[], NULL::text FROM edges
         UNION ALL
         SELECT 2::int2, id, NULL::uuid, NULL::uuid, NULL::timestamptz, false, NULL::text[], name FROM entity_names",
        validity = validity(as_of.is_some(), "$7")
    );
    type Row =
        (i16, Uuid, Option<Uuid>, Option<Uuid>, Option<DateTime<Utc>>, bool, Option<Vec<String>>, Option<String>);
    let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.as_str())
        .bind(user.as_str())
        .bind(&names)
        .bind(from_events)
        .bind(settings.scan_limit + 1)
        .bind(scan_edges)
        .bind(as_of)
        .fetch_all(&mut *conn)
        .await?;
    let mut found: Vec<(Uuid, f64)> = Vec::new();
    let mut seed_names: Vec<String> = Vec::new();
    let mut edges: Vec<Edge> = Vec::new();
    let mut stated: Vec<(Uuid, f64)> = Vec::new();
    let mut entity_names: HashMap<Uuid, String> = HashMap::new();
    for (kind, id, subject, object, valid_from, was_stated, row_names, name) in rows {
        match (kind, subject, object, valid_from) {
            (1, Some(subject_id), Some(object_id), Some(valid_from)) => {
                if was_stated {
                    stated.extend([(subject_id, settings.hop_decay), (object_id, settings.hop_decay)]);
                }
                edges.push(Edge { id, subject_id, object_id, valid_from });
            }
            (2, ..) => {
                entity_names.insert(id, name.unwrap_or_default());
            }
            _ => {
                found.push((id, 1.0));
                seed_names.extend(row_names.unwrap_or_default());
            }
        }
    }
    let within = |n: usize| scan_edges && n as i64 <= settings.scan_limit;
    let entity_names = (within(edges.len()) && within(entity_names.len())).then_some(entity_names);
    let edges = within(edges.len()).then_some(edges);
    // A person by their first name ("Sam" for Sam Carter), or a misspelt name
    // ("Postgress"), only when the query names none in full: a user with many alike
    // names would otherwise match them all.
    if found.is_empty() {
        let sql = format!(
            "SELECT id, {NAMES} FROM entities
              WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND type = 'person'
                AND split_part(norm_name, ' ', 1) = ANY($3)
              LIMIT 8"
        );
        let people: Vec<(Uuid, Vec<String>)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(user.as_str())
            .bind(&names)
            .fetch_all(&mut *conn)
            .await?;
        for (id, names) in people {
            found.push((id, 1.0));
            seed_names.extend(names);
        }
    }
    let mut own = None;
    let long: Vec<&String> = names.iter().filter(|n| n.chars().count() >= 4 && n.is_ascii()).collect();
    if found.is_empty() && !long.is_empty() {
        let conn = match edges {
            Some(_) => &mut *conn,
            None => for_values(&mut own, planned).await?,
        };
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
    found.extend(stated);
    if edges.is_none() && !from_events.is_empty() {
        let custom = for_values(&mut own, planned).await?;
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
    seed_names.sort();
    seed_names.dedup();
    Ok(Start { seeds, names: seed_names, edges, entity_names })
}

/// The connection in `slot`, taken from `pool` (planning each statement for its values) the first time.
async fn for_values<'a>(
    slot: &'a mut Option<PoolConnection<Postgres>>,
    pool: &PgPool,
) -> sqlx::Result<&'a mut PgConnection> {
    let conn = match slot.take() {
        Some(conn) => conn,
        None => pool.acquire().await?,
    };
    Ok(&mut **slot.insert(conn))
}

/// A relation a walk reached, and how.
#[derive(Debug, Clone)]
pub struct Step {
    pub relation: Uuid,
    /// Hops from the seed (1 for an edge of the seed itself).
    pub hop: i32,
    /// The relations from the seed to this one, this one last.
    pub path: Vec<Uuid>,
    /// The entity the path starts at.
    pub start: Uuid,
    /// The seed's weight.
    pub weight: f64,
    valid_from: DateTime<Utc>,
}

/// A path being walked: where it is, how far it came and from which seed.
struct Walker {
    node: Uuid,
    path: Vec<Uuid>,
    start: Uuid,
    weight: f64,
}

/// The walk from `seeds` (see the module documentation): at most `depth` hops, through
/// `edges` when the user's were read, else through the database; nearest hops first,
/// then surest seeds, then most recent.
#[allow(clippy::too_many_arguments)]
pub async fn walk(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    seeds: &[Seed],
    depth: u8,
    settings: &GraphSettings,
    as_of: Option<DateTime<Utc>>,
    edges: Option<&[Edge]>,
) -> sqlx::Result<Vec<Step>> {
    let loaded = edges.map(adjacency);
    let mut frontier: Vec<Walker> =
        seeds.iter().map(|s| Walker { node: s.entity, path: Vec::new(), start: s.entity, weight: s.weight }).collect();
    // The surest weight each entity was walked on from: a later path from a seed no
    // surer adds nothing the earlier did not.
    let mut walked: HashMap<Uuid, f64> = HashMap::new();
    let mut reached: HashMap<Uuid, Step> = HashMap::new();
    for hop in 0..depth as i32 {
        frontier.retain(|w| {
            let done = walked.get(&w.node).is_some_and(|weight| *weight >= w.weight);
            if !done {
                walked.insert(w.node, w.weight);
            }
            !done
        });
        if frontier.is_empty() {
            break;
        }
        let limit = (settings.fan_out as f64 / f64::from(1 << hop)).ceil() as usize;
        let mut nodes: Vec<Uuid> = frontier.iter().map(|w| w.node).collect();
        nodes.sort();
        nodes.dedup();
        let fetched;
        let adjacent: &HashMap<Uuid, Vec<Edge>> = match &loaded {
            Some(by_node) => by_node,
            None => {
                fetched = edges_of(conn, tenant, user, &nodes, limit + 1, as_of).await?;
                &fetched
            }
        };
        let mut next = expand(&frontier, adjacent, hop, limit, &mut reached);
        if reached.len() as i64 >= settings.max_relations {
            break;
        }
        next.sort_by(|a, b| b.weight.total_cmp(&a.weight));
        frontier = next;
    }
    let mut steps: Vec<Step> = reached.into_values().collect();
    steps.sort_by(|a, b| {
        (a.hop.cmp(&b.hop).then(b.weight.total_cmp(&a.weight)))
            .then(b.valid_from.cmp(&a.valid_from))
            .then(a.relation.cmp(&b.relation))
    });
    steps.truncate(settings.max_relations.max(0) as usize);
    Ok(steps)
}

/// Each entity's edges, both directions, most recent first.
fn adjacency(edges: &[Edge]) -> HashMap<Uuid, Vec<Edge>> {
    let mut by_node: HashMap<Uuid, Vec<Edge>> = HashMap::new();
    for edge in edges {
        by_node.entry(edge.subject_id).or_default().push(*edge);
        by_node.entry(edge.object_id).or_default().push(*edge);
    }
    for list in by_node.values_mut() {
        list.sort_by(|a, b| b.valid_from.cmp(&a.valid_from).then(a.id.cmp(&b.id)));
    }
    by_node
}

/// One hop: each walker's `limit` most recent edges not on its path; the relations they
/// reach are kept by the surest seed, then the fewest hops. Returns the walkers one hop on.
fn expand(
    frontier: &[Walker],
    adjacent: &HashMap<Uuid, Vec<Edge>>,
    hop: i32,
    limit: usize,
    reached: &mut HashMap<Uuid, Step>,
) -> Vec<Walker> {
    let mut next = Vec::new();
    for walker in frontier {
        let Some(edges) = adjacent.get(&walker.node) else { continue };
        for edge in edges.iter().filter(|e| !walker.path.contains(&e.id)).take(limit) {
            let mut path = walker.path.clone();
            path.push(edge.id);
            if reached.get(&edge.id).is_none_or(|known| known.weight < walker.weight) {
                let step = Step {
                    relation: edge.id,
                    hop: hop + 1,
                    path: path.clone(),
                    start: walker.start,
                    weight: walker.weight,
                    valid_from: edge.valid_from,
                };
                reached.insert(edge.id, step);
            }
            next.push(Walker { node: edge.other(walker.node), path, start: walker.start, weight: walker.weight });
        }
    }
    next
}

/// The most recent `limit` edges of each of `nodes` (both directions) that hold now or at `as_of`.
async fn edges_of(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    nodes: &[Uuid],
    limit: usize,
    as_of: Option<DateTime<Utc>>,
) -> sqlx::Result<HashMap<Uuid, Vec<Edge>>> {
    let sql = format!(
        "SELECT n.node, e.id, e.subject_id, e.object_id, e.valid_from FROM unnest($3::uuid[]) n(node)
          CROSS JOIN LATERAL (
            SELECT * FROM (
                (SELECT r.id, r.subject_id, r.object_id, r.valid_from FROM relations r
                  WHERE r.tenant_id = $1 AND r.subject_id = n.node AND r.user_id = $2 AND {validity}
                  ORDER BY r.valid_from DESC LIMIT $4)
                UNION ALL
                (SELECT r.id, r.subject_id, r.object_id, r.valid_from FROM relations r
                  WHERE r.tenant_id = $1 AND r.object_id = n.node AND r.user_id = $2 AND {validity}
                  ORDER BY r.valid_from DESC LIMIT $4)
            ) both_ways ORDER BY valid_from DESC LIMIT $4
          ) e",
        validity = validity(as_of.is_some(), "$5")
    );
    let rows: Vec<(Uuid, Uuid, Uuid, Uuid, DateTime<Utc>)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(tenant.as_str())
        .bind(user.as_str())
        .bind(nodes)
        .bind(limit as i64)
        .bind(as_of)
        .fetch_all(conn)
        .await?;
    let mut by_node: HashMap<Uuid, Vec<Edge>> = HashMap::new();
    for (node, id, subject_id, object_id, valid_from) in rows {
        by_node.entry(node).or_default().push(Edge { id, subject_id, object_id, valid_from });
    }
    Ok(by_node)
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
/// (the query and what it asks of the entities it names); the entities' names from
/// `names` when the lookup read them, else from `entities`.
pub async fn relations(
    conn: &mut PgConnection,
    tenant: &TenantId,
    steps: &[Step],
    vectors: Option<(&Embedding, &Embedding)>,
    names: Option<&HashMap<Uuid, String>>,
) -> sqlx::Result<Vec<Reached>> {
    if steps.is_empty() {
        return Ok(Vec::new());
    }
    let similarity = match vectors {
        Some((v, _)) => format!(
            "CASE WHEN r.embedding_dims = {dims}
                  THEN 1 - ((r.embedding::halfvec({dims}) <=> $3::halfvec({dims}))
                            + (r.embedding::halfvec({dims}) <=> $4::halfvec({dims}))) / 2 ELSE 0 END",
            dims = v.dims()
        ),
        None => "0".to_owned(),
    };
    let (named, joins) = match names {
        Some(_) => ("''::text AS subject, ''::text AS object", ""),
        None => (
            "s.name AS subject, o.name AS object",
            "JOIN entities s ON s.tenant_id = $1 AND s.id = r.subject_id
             JOIN entities o ON o.tenant_id = $1 AND o.id = r.object_id",
        ),
    };
    let sql = format!(
        "SELECT r.id, r.subject_id, r.predicate, r.object_id, r.fact, {named},
                r.valid_from, r.valid_to, r.updated_at, r.source_event_ids, ({similarity})::float8 AS similarity
           FROM relations r {joins}
          WHERE r.tenant_id = $1 AND r.id = ANY($2)"
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
            if let Some(names) = names {
                r.subject = names.get(&r.subject_id).cloned().unwrap_or_default();
                r.object = names.get(&r.object_id).cloned().unwrap_or_default();
            }
            r.hop = step.hop;
            r.path = step.path.clone();
            r.start = step.start;
            r.weight = step.weight;
            Some(r)
        })
        .collect())
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

    fn edge(id: u128, subject: u128, object: u128, days_ago: i64) -> Edge {
        let (id, subject_id, object_id) = (Uuid::from_u128(id), Uuid::from_u128(subject), Uuid::from_u128(object));
        Edge { id, subject_id, object_id, valid_from: Utc::now() - chrono::Duration::days(days_ago) }
    }

    #[test]
    fn a_hop_follows_the_most_recent_edges_both_ways_and_not_back() {
        // 1 —10→ 2, 3 —11→ 1 (older), 1 —12→ 4 (oldest); 2 —13→ 5.
        let edges = [edge(10, 1, 2, 1), edge(11, 3, 1, 2), edge(12, 1, 4, 3), edge(13, 2, 5, 0)];
        let adjacent = adjacency(&edges);
        let seed = Uuid::from_u128(1);
        let mut reached = HashMap::new();
        let first = [Walker { node: seed, path: Vec::new(), start: seed, weight: 1.0 }];
        let next = expand(&first, &adjacent, 0, 2, &mut reached);
        let mut ids: Vec<u128> = reached.keys().map(|id| id.as_u128()).collect();
        ids.sort();
        assert_eq!(ids, [10, 11], "the two most recent of the seed's three edges, the incoming one too");
        assert_eq!(next.iter().map(|w| w.node.as_u128()).collect::<Vec<_>>(), [2, 3]);
        let then = expand(&next, &adjacent, 1, 1, &mut reached);
        assert_eq!(reached[&Uuid::from_u128(13)].path, [Uuid::from_u128(10), Uuid::from_u128(13)]);
        assert_eq!(reached[&Uuid::from_u128(13)].hop, 2);
        assert!(then.iter().all(|w| w.node != seed), "no walker goes back along the edge it came by");
    }

    #[test]
    fn a_relation_is_kept_as_the_surest_seed_reaches_it() {
        let edges = [edge(10, 1, 2, 1)];
        let adjacent = adjacency(&edges);
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let mut reached = HashMap::new();
        let walkers = [
            Walker { node: a, path: Vec::new(), start: a, weight: 0.8 },
            Walker { node: b, path: Vec::new(), start: b, weight: 1.0 },
        ];
        expand(&walkers, &adjacent, 0, 10, &mut reached);
        let step = &reached[&Uuid::from_u128(10)];
        assert_eq!((step.start, step.weight), (b, 1.0));
    }
}

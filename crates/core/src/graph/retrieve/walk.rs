//! The bounded breadth-first walk from the seeds: in memory over the user's edges when
//! they were read, else through the database one hop per statement.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::seeds::Seed;
use super::validity;
use crate::graph::GraphSettings;
use engram_base::domain::{Owner, TenantId, UserId};

/// An edge as a walk follows it.
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub struct Edge {
    pub id: Uuid,
    pub subject_id: Uuid,
    pub object_id: Uuid,
    pub valid_from: DateTime<Utc>,
}

impl From<&crate::graph::snapshot::Relation<'_>> for Edge {
    fn from(r: &crate::graph::snapshot::Relation<'_>) -> Self {
        Self { id: r.id, subject_id: r.subject_id, object_id: r.object_id, valid_from: r.valid_from }
    }
}

impl Edge {
    fn other(&self, node: Uuid) -> Uuid {
        if self.subject_id == node { self.object_id } else { self.subject_id }
    }
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
/// `edges` when the user's were read, else through the database; walkers in turn
/// (nearest hops first, then surest seeds, then most recent edge) until
/// `graph.max_relations` are reached. Through the database a hop reads the edges of only
/// as many entities as the relations still wanted need, then more if they fall short: a
/// last hop that fills two places reads one or two entities' edges, not forty.
pub async fn walk(
    conn: &mut PgConnection,
    owner: Owner<'_>,
    seeds: &[Seed],
    depth: u8,
    settings: &GraphSettings,
    as_of: Option<DateTime<Utc>>,
    edges: Option<&[Edge]>,
) -> sqlx::Result<Vec<Step>> {
    let Owner { tenant, user } = owner;
    let budget = settings.max_relations.max(0) as usize;
    let mut adjacent = edges.map(Adjacency::of).unwrap_or_default();
    // The entities whose edges were read so far (sorted), when they are read hop by hop.
    let mut fetched: Option<Vec<Uuid>> = edges.is_none().then(Vec::new);
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
        // New relations an entity gives at most: past the seeds, one of its edges is the
        // one the walker came by.
        let per_entity = if hop == 0 { limit } else { limit.saturating_sub(1).max(1) };
        let mut next = Vec::new();
        let mut at = 0;
        while at < frontier.len() && reached.len() < budget {
            if let Some(fetched) = fetched.as_mut() {
                let wanted = (budget - reached.len()).div_ceil(per_entity);
                let nodes = unfetched(&frontier[at..], fetched, wanted);
                if !nodes.is_empty() {
                    adjacent.add(edges_of(conn, tenant, user, &nodes, limit + 1, as_of).await?);
                    fetched.extend(nodes);
                    fetched.sort_unstable();
                }
            }
            let ready = frontier[at..]
                .iter()
                .take_while(|w| fetched.as_ref().is_none_or(|f| f.binary_search(&w.node).is_ok()))
                .count();
            next.extend(expand(&frontier[at..at + ready], &adjacent, hop, limit, budget, &mut reached));
            at += ready;
        }
        if reached.len() >= budget {
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
    Ok(steps)
}

/// The entities of `walkers`, in their order, whose edges are not read yet: the first
/// `wanted` of them.
fn unfetched(walkers: &[Walker], fetched: &[Uuid], wanted: usize) -> Vec<Uuid> {
    let mut nodes: Vec<Uuid> = Vec::new();
    for walker in walkers {
        if nodes.len() >= wanted {
            break;
        }
        if fetched.binary_search(&walker.node).is_err() && !nodes.contains(&walker.node) {
            nodes.push(walker.node);
        }
    }
    nodes
}

/// Each entity's edges, both directions, most recent first: one list sorted by entity,
/// read by binary search (a map of lists would cost an allocation an entity, at every lookup).
#[derive(Default)]
struct Adjacency(Vec<(Uuid, Edge)>);

impl Adjacency {
    fn new(mut pairs: Vec<(Uuid, Edge)>) -> Self {
        Self::order(&mut pairs);
        Self(pairs)
    }

    fn order(pairs: &mut [(Uuid, Edge)]) {
        pairs.sort_unstable_by(|(a, x), (b, y)| a.cmp(b).then(y.valid_from.cmp(&x.valid_from)).then(x.id.cmp(&y.id)));
    }

    /// Adds the edges of entities read since.
    fn add(&mut self, more: Adjacency) {
        self.0.extend(more.0);
        Self::order(&mut self.0);
    }

    fn of(edges: &[Edge]) -> Self {
        Self::new(edges.iter().flat_map(|e| [(e.subject_id, *e), (e.object_id, *e)]).collect())
    }

    fn at(&self, node: Uuid) -> impl Iterator<Item = &Edge> {
        let from = self.0.partition_point(|(n, _)| *n < node);
        self.0[from..].iter().take_while(move |(n, _)| *n == node).map(|(_, e)| e)
    }
}

/// One hop of `walkers`, in turn: each one's `limit` most recent edges not on its path,
/// until `budget` relations are reached; a relation is kept by the surest seed, then
/// the fewest hops. Returns the walkers one hop on.
fn expand(
    walkers: &[Walker],
    adjacent: &Adjacency,
    hop: i32,
    limit: usize,
    budget: usize,
    reached: &mut HashMap<Uuid, Step>,
) -> Vec<Walker> {
    let mut next = Vec::new();
    for walker in walkers {
        for edge in adjacent.at(walker.node).filter(|e| !walker.path.contains(&e.id)).take(limit) {
            if reached.len() >= budget {
                return next;
            }
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
) -> sqlx::Result<Adjacency> {
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
    Ok(Adjacency::new(
        rows.into_iter()
            .map(|(node, id, subject_id, object_id, valid_from)| (node, Edge { id, subject_id, object_id, valid_from }))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(id: u128, subject: u128, object: u128, days_ago: i64) -> Edge {
        let (id, subject_id, object_id) = (Uuid::from_u128(id), Uuid::from_u128(subject), Uuid::from_u128(object));
        Edge { id, subject_id, object_id, valid_from: Utc::now() - chrono::Duration::days(days_ago) }
    }

    #[test]
    fn a_hop_follows_the_most_recent_edges_both_ways_and_not_back() {
        // 1 —10→ 2, 3 —11→ 1 (older), 1 —12→ 4 (oldest); 2 —13→ 5.
        let edges = [edge(10, 1, 2, 1), edge(11, 3, 1, 2), edge(12, 1, 4, 3), edge(13, 2, 5, 0)];
        let adjacent = Adjacency::of(&edges);
        let seed = Uuid::from_u128(1);
        let mut reached = HashMap::new();
        let first = [Walker { node: seed, path: Vec::new(), start: seed, weight: 1.0 }];
        let next = expand(&first, &adjacent, 0, 2, 50, &mut reached);
        let mut ids: Vec<u128> = reached.keys().map(|id| id.as_u128()).collect();
        ids.sort();
        assert_eq!(ids, [10, 11], "the two most recent of the seed's three edges, the incoming one too");
        assert_eq!(next.iter().map(|w| w.node.as_u128()).collect::<Vec<_>>(), [2, 3]);
        let then = expand(&next, &adjacent, 1, 1, 50, &mut reached);
        assert_eq!(reached[&Uuid::from_u128(13)].path, [Uuid::from_u128(10), Uuid::from_u128(13)]);
        assert_eq!(reached[&Uuid::from_u128(13)].hop, 2);
        assert!(then.iter().all(|w| w.node != seed), "no walker goes back along the edge it came by");
    }

    #[test]
    fn a_relation_is_kept_as_the_surest_seed_reaches_it() {
        let edges = [edge(10, 1, 2, 1)];
        let adjacent = Adjacency::of(&edges);
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let mut reached = HashMap::new();
        let walkers = [
            Walker { node: a, path: Vec::new(), start: a, weight: 0.8 },
            Walker { node: b, path: Vec::new(), start: b, weight: 1.0 },
        ];
        expand(&walkers, &adjacent, 0, 10, 50, &mut reached);
        let step = &reached[&Uuid::from_u128(10)];
        assert_eq!((step.start, step.weight), (b, 1.0));
    }

    #[test]
    fn a_hop_stops_when_the_budget_is_reached_keeping_the_first_walkers_edges() {
        // Two walkers, each with three edges; a budget of four keeps the first's three.
        let edges = [edge(10, 1, 5, 1), edge(11, 1, 6, 2), edge(12, 1, 7, 3), edge(13, 2, 8, 0), edge(14, 2, 9, 1)];
        let adjacent = Adjacency::of(&edges);
        let walker =
            |n: u128| Walker { node: Uuid::from_u128(n), path: Vec::new(), start: Uuid::from_u128(n), weight: 1.0 };
        let mut reached = HashMap::new();
        let next = expand(&[walker(1), walker(2)], &adjacent, 0, 10, 4, &mut reached);
        let mut ids: Vec<u128> = reached.keys().map(|id| id.as_u128()).collect();
        ids.sort();
        assert_eq!(ids, [10, 11, 12, 13], "the second walker's most recent edge fills the last place");
        assert_eq!(next.len(), 4);
    }

    #[test]
    fn the_entities_to_read_are_the_walkers_next_unread_ones_in_order() {
        let walker = |n: u128| Walker { node: Uuid::from_u128(n), path: Vec::new(), start: Uuid::nil(), weight: 1.0 };
        let walkers = [walker(3), walker(1), walker(3), walker(4), walker(2)];
        let fetched = [Uuid::from_u128(1)];
        let nodes: Vec<u128> = unfetched(&walkers, &fetched, 2).iter().map(|n| n.as_u128()).collect();
        assert_eq!(nodes, [3, 4], "read ones skipped, repeats once");
        assert_eq!(unfetched(&walkers, &fetched, 10).len(), 3);
    }
}

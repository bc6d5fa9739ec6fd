//! The relation tier of a lookup: the graph walk from the entities the query names and
//! those of the best results' turns (see [`crate::graph::retrieve`]), each relation
//! reached scored on the one scale.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Lookup, SearchError, SearchResult};
use crate::domain::{TenantId, UserId};
use crate::graph::retrieve;
use crate::models::Embedding;

/// What a relation lookup starts from.
pub struct RelationQuery<'a> {
    pub user: &'a UserId,
    pub text: &'a str,
    pub vector: Option<&'a Embedding>,
    /// The turns of the best results so far: the relations stated in them seed the walk too.
    pub from_events: &'a [Uuid],
    pub as_of: Option<DateTime<Utc>>,
}

/// The relations the walk reaches, unscored (`parts` set; the caller scores).
pub async fn search(
    lookup: &Lookup<'_>,
    tenant: &TenantId,
    query: &RelationQuery<'_>,
) -> Result<Vec<SearchResult>, SearchError> {
    let graph = lookup.graph;
    let mut conn = lookup.lookups.scans.acquire().await?;
    let mut custom = match query.from_events.is_empty() {
        true => None,
        false => Some(lookup.lookups.shared_graph.acquire().await?),
    };
    let seeds = retrieve::seeds(
        &mut conn,
        custom.as_deref_mut(),
        tenant,
        query.user,
        query.text,
        query.vector,
        query.from_events,
        &graph.aliases,
        &graph.settings,
    )
    .await?;
    if seeds.is_empty() {
        return Ok(Vec::new());
    }
    // What the query asks of the entities it names: it is what a relation must match.
    let names = retrieve::names_of(&mut conn, tenant, &seeds).await?;
    let asked = retrieve::residual(query.text, &names);
    let whole = match query.vector {
        Some(vector) => vector.clone(),
        None => lookup.embedder.embed_one(query.text).await?,
    };
    let asked_vector = match asked == query.text {
        true => whole.clone(),
        false => lookup.embedder.embed_one(&asked).await?,
    };
    let reached = retrieve::walk(
        &mut conn,
        tenant,
        query.user,
        &seeds,
        graph.settings.max_depth,
        &graph.settings,
        query.as_of,
        Some((&whole, &asked_vector)),
    )
    .await?;
    let terms = super::terms::terms(&asked);
    let weights = super::terms::normalised(terms.weights.iter().copied());
    Ok(retrieve::results(reached, &terms.all, &weights, &graph.settings))
}

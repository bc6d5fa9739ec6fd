//! The relation tier of a lookup: the graph walk from the entities the query names and
//! those of the best results' turns (see [`crate::graph::retrieve`]), each relation
//! reached scored on the one scale.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use std::collections::HashMap;

use super::{Lookup, Parts, SearchError, SearchResult};
use crate::graph::GraphSettings;
use crate::graph::retrieve::{self, Edge, Reached};
use crate::graph::snapshot;
use engram_base::db::lend::Held;
use engram_base::domain::{Owner, ResultKind, TenantId, UserId};
use engram_base::models::Embedding;
use engram_language::when::Window;

/// What a relation lookup starts from.
pub struct RelationQuery<'a> {
    pub user: &'a UserId,
    pub text: &'a str,
    pub vector: Option<&'a Embedding>,
    /// The turns of the best results so far: the relations stated in them seed the walk too.
    pub from_events: &'a [Uuid],
    pub as_of: Option<DateTime<Utc>>,
    /// How many of the best-scoring relations the lookup returns (`usize::MAX` for all);
    /// only those are described.
    pub keep: usize,
    /// The time the query asks about, which scores them.
    pub window: Option<Window>,
}

/// The best `keep` of the relations the walk reaches, scored, best first; its
/// statements on `scans` (see [`super::lookups::Lookups::scan_connection`]): the user's
/// graph row, walked in memory, or without one (or `as_of` a past time, which the row
/// does not hold) the tables.
pub async fn search(
    lookup: &Lookup<'_>,
    scans: &mut Held<'_>,
    tenant: &TenantId,
    query: &RelationQuery<'_>,
) -> Result<Vec<SearchResult>, SearchError> {
    let (graph, settings) = (lookup.graph, &lookup.graph.settings);
    let conn = scans.get().await?;
    let stored = match query.as_of {
        None => snapshot::read(conn, tenant, query.user).await?,
        Some(_) => None,
    };
    let row = stored.as_ref().and_then(snapshot::Stored::graph).filter(|row| row.fits(settings.scan_limit));
    let (text, vector, from_events) = (query.text, query.vector, query.from_events);
    let start = match &row {
        Some(row) => retrieve::in_graph(row, text, vector, from_events, &graph.aliases, settings),
        None => {
            let planned = &lookup.lookups.shared_graph;
            retrieve::start(
                conn,
                planned,
                Owner::new(tenant, query.user),
                (text, vector),
                from_events,
                &graph.aliases,
                settings,
            )
            .await?
        }
    };
    if start.seeds.is_empty() {
        return Ok(Vec::new());
    }
    let edges: Option<Vec<Edge>> = row.as_ref().map(|row| row.relations.iter().map(Edge::from).collect());
    let steps = retrieve::walk(
        conn,
        Owner::new(tenant, query.user),
        &start.seeds,
        settings.max_depth,
        settings,
        query.as_of,
        edges.as_deref(),
    )
    .await?;
    if steps.is_empty() {
        return Ok(Vec::new());
    }
    // What the query asks of the entities it names: it is what a relation must match.
    let asked = retrieve::residual(query.text, &start.names);
    let whole = match query.vector {
        Some(vector) => vector.clone(),
        None => lookup.embedder.embed_one(query.text).await?,
    };
    let asked_vector = match asked == query.text {
        true => whole.clone(),
        false => lookup.embedder.embed_one(&asked).await?,
    };
    let reached = match &row {
        Some(row) => retrieve::reached_in(row, &steps, (&whole, &asked_vector)),
        None => retrieve::relations(conn, tenant, &steps, Some((&whole, &asked_vector))).await?,
    };
    let terms = engram_language::terms::terms(&asked);
    let weights = engram_language::terms::normalised(terms.weights.iter().copied());
    let question = super::features::Asked::new(query.text, query.window, lookup.now);
    let mut results = scored(&reached, &terms.all, &weights, settings);
    super::score::rank(&mut results, lookup.ranker, lookup.settings, &question, false);
    // As the lookup ranks its results: a tie goes to the most recent.
    results.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.updated_at.cmp(&a.updated_at)));
    results.truncate(query.keep);
    // Only what is kept is described with its chain.
    let all: HashMap<Uuid, &Reached> = reached.iter().map(|r| (r.id, r)).collect();
    for result in results.iter_mut() {
        if let Some(r) = result.id.parse().ok().and_then(|id: Uuid| all.get(&id)) {
            result.path = Some(retrieve::chain(r, &all));
        }
    }
    Ok(results)
}

/// What a relation's keyword share is counted in, lowercased, into `text`: its line
/// ([`retrieve::relation_line`]), its sentence and, for a technology, its kind.
fn match_text(r: &Reached, text: &mut String) {
    // Each part lowercased on its own: most are ASCII, lowercased in place.
    let lower = |text: &mut String, part: &str| match part.is_ascii() {
        true => {
            let from = text.len();
            text.push_str(part);
            text[from..].make_ascii_lowercase();
        }
        false => text.push_str(&part.to_lowercase()),
    };
    text.clear();
    lower(text, &r.subject);
    text.push_str(" —");
    lower(text, &r.predicate);
    text.push_str("→ ");
    lower(text, &r.object);
    text.push('\n');
    lower(text, &r.fact);
    lower(text, &crate::graph::kind_label(&r.object));
}

/// The keyword share of the lowercased `text`: the weights of the terms it contains (the
/// weights sum to 1).
fn keyword_share(terms: &[String], weights: &[f64], lower: &str) -> f64 {
    terms
        .iter()
        .zip(weights)
        .filter(|(term, _)| {
            if term.is_ascii() && term.len() <= 2 {
                lower.split(|c: char| !c.is_alphanumeric()).any(|w| w == term.as_str())
            } else {
                lower.contains(term.as_str())
            }
        })
        .map(|(_, w)| *w)
        .sum()
}

/// Every relation `reached` as a search result with the parts of its score: content the
/// relation's line, `fact` the sentence that states it (its chain is added once it is kept).
fn scored(reached: &[Reached], terms: &[String], weights: &[f64], settings: &GraphSettings) -> Vec<SearchResult> {
    let mut text = String::new();
    reached
        .iter()
        .map(|r| {
            match_text(r, &mut text);
            let keyword = keyword_share(terms, weights, &text);
            let graph = r.weight * settings.hop_decay.powi(r.hop - 1);
            let parts = Parts::relation(r.similarity, keyword, graph, r.hop, settings.relation_weight, r.valid_from);
            let content = retrieve::relation_line(r);
            let sources = r.source_event_ids.clone();
            SearchResult {
                predicate: Some(r.predicate.clone()),
                fact: Some(r.fact.clone()),
                ..SearchResult::new(r.id.to_string(), ResultKind::Relation, content, r.updated_at, sources, parts)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_match_text_is_the_relation_lowercased_whole() {
        let at = chrono::Utc::now();
        let relation = |subject: &str, predicate: &str, object: &str, fact: &str| Reached {
            id: Uuid::nil(),
            subject_id: Uuid::nil(),
            subject: subject.into(),
            predicate: predicate.into(),
            object_id: Uuid::nil(),
            object: object.into(),
            fact: fact.into(),
            valid_from: at,
            valid_to: None,
            updated_at: at,
            source_event_ids: Vec::new(),
            hop: 1,
            path: Vec::new(),
            start: Uuid::nil(),
            weight: 1.0,
            similarity: 0.0,
        };
        let mut text = String::new();
        for r in [
            relation("Priya", "uses", "PostgreSQL", "Priya's Team Uses PostgreSQL"),
            relation("张伟", "colleague", "李明", "张伟是李明的同事, Ödön ÄLTER"),
        ] {
            match_text(&r, &mut text);
            let whole = format!("{}\n{}{}", retrieve::relation_line(&r), r.fact, crate::graph::kind_label(&r.object));
            assert_eq!(text, whole.to_lowercase());
        }
    }
}

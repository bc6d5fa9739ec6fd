//! A search: each tier's lookup, and how their results come together on one scale
//! ([`run`]). Which connections and which way (scan or index) a lookup takes is
//! [`super::lookups`]'s.

use uuid::Uuid;

use super::events::EventLookup;
use super::facts::MemoryLookup;
use super::features::Asked;
use super::ranker::Ranker;
use super::relations::{self, RelationQuery};
use super::{Lookup, SearchQuery, SearchResult, present, rerank, score, summaries};
use engram_base::configuration::SearchSettings;
use engram_base::domain::{ResultKind, TenantId};
use engram_base::models::ModelError;
use engram_language::terms::terms;
use engram_language::when;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("cannot embed the query: {0}")]
    Embedding(#[from] ModelError),
    #[error("database error during search")]
    Database(#[from] sqlx::Error),
}

/// Runs a validated search as of the lookup's clock; results are sorted by score and at
/// or above `min_score`.
pub async fn run(
    lookup: &Lookup<'_>,
    tenant: &TenantId,
    query: &SearchQuery,
) -> Result<Vec<SearchResult>, SearchError> {
    let Lookup { lookups, embedder, settings, now, .. } = *lookup;
    let mut scans = lookups.scan_connection();
    // What the question asks of the user, without the names every memory is about ([`names`]).
    let names = lookups.names.of(&mut scans, tenant, query.user.as_str(), now).await?;
    let asked = engram_language::question_names::without(&query.text, &names.in_question(&query.text));
    let asked = asked.as_deref().unwrap_or(&query.text);
    let vector = match &query.embedding {
        Some(vector) => vector.clone(),
        None => embedder.embed_one(asked).await?,
    };
    let mut terms = terms(asked);
    let window = when::resolve(&query.text, now);
    // The query's terms are weighed by the first statement that reads the user's latest
    // turns anyway, or whose plan is made for the lookup (the index way); else by a
    // statement of their own.
    let mut turns = None;
    if query.events {
        turns = lookups.scan(&mut scans, &EventLookup::new(tenant, query, &vector, &terms, window, settings)).await?;
        if let Some(weights) = turns.as_mut().and_then(|scanned| scanned.weights.take()) {
            terms.weigh(weights);
        }
    }
    let mut results = Vec::new();
    if !query.memory_kinds.is_empty() {
        let memories = MemoryLookup::new(lookup, tenant, query, &vector, &terms, terms.unweighed());
        let found = match lookups.scan(&mut scans, &memories).await? {
            Some(scanned) => scanned,
            None => lookups.indexed(&memories).await?,
        };
        if let Some(weights) = found.weights {
            terms.weigh(weights);
        }
        results.extend(found.results);
    }
    if (query.events && turns.is_none()) || query.session_summaries || query.period_summaries {
        lookups.weigh(&mut scans, tenant, query.user.as_str(), &mut terms).await?;
    }
    if query.events {
        match turns {
            Some(scanned) => results.extend(scanned.results),
            None => {
                let lookup = EventLookup::new(tenant, query, &vector, &terms, window, settings);
                results.extend(lookups.indexed(&lookup).await?.results);
            }
        }
    }
    for (wanted, table) in
        [(query.session_summaries, summaries::SESSIONS), (query.period_summaries, summaries::PERIODS)]
    {
        if wanted {
            let conn = scans.get().await?;
            results.extend(summaries::search(conn, table, tenant, query, &vector, &terms, settings).await?);
        }
    }
    let asked = Asked::new(&query.text, window, now);
    let ranker = lookup.ranker;
    score_all(&mut results, query, ranker, settings, &asked);
    if query.relations {
        let from_events: Vec<Uuid> = results
            .iter()
            .filter(|r| r.score >= query.min_score)
            .take(3)
            .flat_map(|r| r.source_event_ids.iter().copied())
            .collect();
        let relation_query = RelationQuery {
            user: &query.user,
            text: &query.text,
            vector: Some(&vector),
            from_events: &from_events,
            as_of: query.as_of,
            keep: query.limit,
            window,
        };
        let mut reached = relations::search(lookup, &mut scans, tenant, &relation_query).await?;
        score_all(&mut reached, query, ranker, settings, &asked);
        results.extend(reached);
        sort(&mut results);
    }
    if let Some(reranker) = lookup.reranker {
        rerank::reorder(reranker, &query.text, &mut results).await;
    }
    if query.as_of.is_none() && window.is_none() && engram_language::when::present::asks(&query.text) {
        present::newest_first(scans.get().await?, tenant, &mut results).await?;
    }
    scans.give_back();
    results.retain(|r| r.score >= query.min_score);
    // A turn is shown without what was forgotten from it, or not at all.
    results.retain_mut(|r| match r.kind {
        ResultKind::Event => engram_language::text::visible(&r.content).map(|text| r.content = text).is_some(),
        _ => true,
    });
    let mut results = score::one_slot_per_turn(results);
    results.truncate(query.limit);
    Ok(results)
}

/// Scores `results` by the ranker, best first; those under `min_score` are dropped
/// once every result is scored.
fn score_all(
    results: &mut [SearchResult],
    query: &SearchQuery,
    ranker: &Ranker,
    settings: &SearchSettings,
    asked: &Asked,
) {
    score::rank(results, ranker, settings, asked, query.explain);
    sort(results);
}

/// Best first; on a tie a memory before a turn, then the most recent.
fn sort(results: &mut [SearchResult]) {
    results.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| (a.kind == ResultKind::Event).cmp(&(b.kind == ResultKind::Event)))
            .then_with(|| b.updated_at.cmp(&a.updated_at))
    });
}

//! The optional rerank stage: a lookup's best candidates, of every tier together, are
//! scored again by a cross-encoder ([`engram_base::models::Reranker`]) and put in its order,
//! each with its relevance as the score (so `min_score` applies to it), before the newest
//! statement is put first for a question about the present. Whatever goes wrong with the
//! call — a timeout, an error, an answer that cannot be read — the lookup keeps engram's
//! own ranking; the metrics count it.

use super::SearchResult;
use engram_base::models::Reranker;

/// Reorders the first `reranker.candidates` of `results` (sorted best first) by the
/// reranker's relevance to `query`; the rest follow unchanged.
pub async fn reorder(reranker: &Reranker, query: &str, results: &mut [SearchResult]) {
    let sent = reranker.candidates.min(results.len());
    if sent < 2 {
        return;
    }
    let documents: Vec<&str> = results[..sent].iter().map(|r| r.content.as_str()).collect();
    match reranker.scores(query, &documents).await {
        Ok(scores) => {
            for (result, score) in results[..sent].iter_mut().zip(scores) {
                result.score = score;
            }
            results[..sent].sort_by(|a, b| b.score.total_cmp(&a.score));
        }
        Err(err) => tracing::warn!(error = %err, "the reranker gave no usable answer; engram's order stands"),
    }
}

//! The graph half of `extract_facts`: the same user messages (sensitive data already
//! dropped or redacted), read for entities and relations by the rules of
//! `engram_language::relations::extract` and, with an LLM, also by the `extract_graph` prompt: what
//! the LLM adds goes beside what the rules found (a relation the rules read in a message
//! stands against the LLM's with the same predicate), so no answer takes anything away. One job rather than two: the messages are read once, under one watermark, and
//! a relation can name the fact stored from its sentence.

use sqlx::PgConnection;
use uuid::Uuid;

use super::super::job::Unit;
use super::super::{Counts, Models};
use super::{Event, ExtractParams};
use crate::graph::Extracted;
use crate::graph::store::{Said, Writer};
use engram_base::domain::Owner;
use engram_language::relations::extract::extract as by_rules;
use engram_language::relations::mention::{Discourse, is_chinese};
use engram_language::text::sentences;

/// A fact stored in this run: the turn, the user's words, the memory.
pub(super) struct Stored {
    pub event: Uuid,
    pub quote: String,
    pub memory: Uuid,
}

pub(super) async fn extract(
    conn: &mut PgConnection,
    unit: &Unit<'_>,
    models: &Models,
    params: &ExtractParams,
    said: &[(&Event, String)],
    stored: &[Stored],
    counts: &mut Counts,
) -> anyhow::Result<()> {
    let graph = &models.graph;
    let writer_by = |how: &str| Writer {
        tenant: unit.tenant,
        user: unit.user,
        embedder: &models.embedder,
        aliases: &graph.aliases,
        merge_similarity: graph.settings.merge_similarity,
        change: unit.change(how),
    };
    let (writer, by_llm_writer) = (writer_by("extracted by rules"), writer_by("extracted by the LLM"));
    // The LLM's reading, per message, when there is one and its answer is usable; only
    // the messages past the pre-filter are sent, as for facts.
    let mut by_llm: Option<Vec<Extracted>> = None;
    let triggers = &params.triggers;
    let sent: Vec<usize> = (0..said.len()).filter(|&i| triggers.is_empty() || triggers.matches(&said[i].1)).collect();
    if models.llm.is_some() && sent.is_empty() {
        by_llm = Some(vec![Extracted::default(); said.len()]);
    }
    if let Some(llm) = &models.llm
        && !sent.is_empty()
    {
        let messages: Vec<&str> = sent.iter().map(|&i| said[i].1.as_str()).collect();
        counts.add("graph_llm_calls", 1);
        let found = crate::graph::llm::extract(
            conn,
            Owner::new(unit.tenant, unit.user),
            llm,
            &models.prompts,
            graph,
            &messages,
            unit.budget.max_llm_tokens,
        )
        .await;
        match found {
            Ok(found) => {
                counts.add("graph_invalid", found.invalid);
                counts.add("llm_tokens", found.tokens);
                match found.per_message {
                    Some(per_message) => {
                        let mut all = vec![Extracted::default(); said.len()];
                        for (found, &i) in per_message.into_iter().zip(&sent) {
                            all[i] = found;
                        }
                        by_llm = Some(all);
                    }
                    None => counts.add("graph_llm_unusable", 1),
                }
            }
            Err(err) if stops_the_unit(&err) => return Err(err),
            Err(err) => {
                counts.add("graph_llm_failed", 1);
                tracing::warn!(error = %err, "extract_facts: no usable graph answer from the LLM; the rules' relations stand");
            }
        }
    }
    let mut discourse = Discourse::default();
    let mut changed = false;
    for (i, (event, text)) in said.iter().enumerate() {
        let mut readings: Vec<(String, Extracted, &Writer)> = Vec::new();
        for sentence in sentences(text) {
            let mut extracted = by_rules(sentence, &graph.aliases, &mut discourse);
            segmented(graph, sentence, &mut extracted).await;
            readings.push((sentence.to_owned(), extracted, &writer));
        }
        if let Some(extracted) = by_llm.as_ref().and_then(|per_message| per_message.get(i)) {
            // What the rules read in this message stands: the LLM's relations with a
            // predicate they already found here would only compete with theirs.
            let mut extracted = extracted.clone();
            let before = extracted.triples.len();
            extracted
                .triples
                .retain(|t| !readings.iter().any(|(_, r, _)| r.triples.iter().any(|o| o.predicate == t.predicate)));
            counts.add("graph_llm_same_as_rules", (before - extracted.triples.len()) as i64);
            readings.push((text.clone(), extracted, &by_llm_writer));
        }
        for (sentence, extracted, writer) in readings {
            if extracted.triples.is_empty() && extracted.user_name.is_none() {
                continue;
            }
            let memory = stored
                .iter()
                .filter(|s| s.event == event.id)
                .find(|s| sentence.contains(&s.quote) || s.quote.contains(&sentence))
                .or_else(|| stored.iter().find(|s| s.event == event.id))
                .map(|s| s.memory);
            let said = Said {
                event_id: event.id,
                at: event.created_at,
                sentence: &sentence,
                memory_id: memory,
                confidence: 1.0,
            };
            let written = writer.write(conn, &said, extracted.user_name.as_deref(), &extracted.triples).await?;
            counts.add("entities_created", written.entities_created);
            counts.add("relations_created", written.relations_created);
            counts.add("relations_refreshed", written.relations_refreshed);
            counts.add("relations_ended", written.relations_ended);
            changed = true;
        }
    }
    if changed {
        crate::graph::snapshot::refresh(conn, unit.tenant, unit.user, graph.settings.scan_limit).await?;
    }
    Ok(())
}

/// Whether a failed graph call must stop the unit: a spent token budget, a broken
/// configuration or the database, which the rules cannot stand in for. The model's own
/// failures leave the rules' reading.
fn stops_the_unit(err: &anyhow::Error) -> bool {
    use engram_base::models::ModelError;
    match err.downcast_ref::<ModelError>() {
        Some(ModelError::BudgetExceeded(_) | ModelError::Config(_)) | None => true,
        Some(_) => false,
    }
}

/// The Chinese names of `extracted` cut at the words the segmenter finds in `sentence`
/// (on a blocking thread: the model runs on the CPU); unchanged without one.
async fn segmented(graph: &crate::graph::Graph, sentence: &str, extracted: &mut Extracted) {
    let names_chinese = extracted
        .user_name
        .iter()
        .chain(extracted.triples.iter().flat_map(|t| [&t.subject.name, &t.object.name]))
        .any(|name| is_chinese(name));
    let Some(segmenter) = graph.segmenter.clone().filter(|_| names_chinese) else { return };
    let text = sentence.to_owned();
    match tokio::task::spawn_blocking(move || segmenter.words(&text)).await {
        Ok(Ok(words)) => engram_language::relations::segmented::snap(extracted, sentence, &words),
        Ok(Err(err)) => tracing::warn!(error = %err, "the Chinese segmenter failed: the rules' names stand"),
        Err(err) => tracing::warn!(error = %err, "the Chinese segmenter panicked: the rules' names stand"),
    }
}

//! `engram eval --locomo FILE --diagnose`: where each question's evidence is lost. For
//! every evidence turn of a question, in the order a lookup meets it:
//!
//! - **stored**: the user has the turn (`metadata.dia_id`), and whether a fact or insight
//!   was taken from it (`source_event_ids`);
//! - **candidate**: how deep each tier's own ranked list reaches it, searched alone with
//!   the largest `limit` (so the most candidates a lookup takes): raw turns, facts and
//!   insights, and session summaries (a summary reaches the turns of its session);
//!   Those lookups are made to look, not to serve: what they found does not count as
//!   accessed, so the figures are those of a run without `--diagnose`.
//! - **ranked**: whether the lookup a client makes (`limit` 10, every tier together) has
//!   it in its top 10;
//! - **context**: whether the 1,024-token context shows it, as the turn or as a memory
//!   taken from it.
//!
//! Per category, the share of evidence turns at each step; and where each was lost: not
//! stored, neither the turns' nor the memories' list reaching it within the largest
//! `limit`, ranked out of the top 10, or in the top 10.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Value, json};
use uuid::Uuid;

use super::Harness;

/// A tier searched alone: its name and the `kinds` of its lookup.
const TIERS: [(&str, &[&str]); 3] =
    [("turns", &["event"]), ("memories", &["fact", "insight"]), ("summaries", &["session_summary"])];

/// The depths a tier's list is read to.
const DEPTHS: [usize; 3] = [10, 20, 50];

/// What became of one evidence turn.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    stored: bool,
    /// A fact or insight was taken from it.
    remembered: bool,
    /// The 1-based place of the first result holding it in each tier's list ([`TIERS`]).
    depth: [Option<usize>; 3],
    top10: bool,
    in_context: bool,
}

impl Trace {
    /// The trace as a question's JSON shows it.
    pub fn json(&self) -> Value {
        let depth: serde_json::Map<String, Value> =
            TIERS.iter().zip(self.depth).map(|((tier, _), d)| ((*tier).to_owned(), json!(d))).collect();
        json!({"stored": self.stored, "remembered": self.remembered, "depth": depth, "top10": self.top10,
               "in_context_1024": self.in_context})
    }
}

/// What a client's lookup and context returned for a question.
pub struct Served<'a> {
    /// The sources of the top 10, best first.
    pub top: &'a [Vec<Uuid>],
    /// The ids and kinds of the 1,024-token context's items.
    pub context: &'a [(String, String)],
}

/// The traces of `evidence` (dialogue ids) for `question` asked of `user`.
pub async fn trace(
    harness: &Harness,
    user: &str,
    question: &str,
    evidence: &[String],
    served: &Served<'_>,
    max_limit: usize,
) -> anyhow::Result<Vec<Trace>> {
    let events: HashMap<String, Uuid> = sqlx::query!(
        r#"SELECT metadata ->> 'dia_id' AS "dia_id!", id FROM events WHERE user_id = $1 AND metadata ->> 'dia_id' = ANY($2)"#,
        user,
        evidence,
    )
    .map(|row| (row.dia_id, row.id))
    .fetch_all(&harness.db.pool)
    .await?
    .into_iter()
    .collect();
    let ids: Vec<Uuid> = events.values().copied().collect();
    let remembered: HashSet<Uuid> = sqlx::query_scalar!(
        r#"SELECT DISTINCT s AS "s!" FROM memories, unnest(source_event_ids) s
          WHERE user_id = $1 AND status = 'active' AND s = ANY($2)"#,
        user,
        &ids,
    )
    .fetch_all(&harness.db.pool)
    .await?
    .into_iter()
    .collect();
    let mut lists = Vec::new();
    for (_, kinds) in TIERS {
        let found = harness
            .post(
                "/v1/search",
                &json!({"user_id": user, "query": question, "limit": max_limit, "min_score": 0.0, "kinds": kinds}),
            )
            .await?;
        lists.push(sources(&found));
    }
    harness.discard_access(&harness.tenant, user)?;
    let shown = shown(harness, served.context).await?;
    Ok(evidence
        .iter()
        .map(|dia| match events.get(dia) {
            None => Trace::default(),
            Some(id) => Trace {
                stored: true,
                remembered: remembered.contains(id),
                depth: std::array::from_fn(|t| lists[t].iter().position(|s| s.contains(id)).map(|p| p + 1)),
                top10: served.top.iter().take(10).any(|s| s.contains(id)),
                in_context: shown.contains(id),
            },
        })
        .collect())
}

/// Each result's sources, best first (a summary's are its session's turns).
pub fn sources(found: &Value) -> Vec<Vec<Uuid>> {
    found["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            r["source_event_ids"].as_array().into_iter().flatten().filter_map(|s| s.as_str()?.parse().ok()).collect()
        })
        .collect()
}

/// The turns a context shows: its turns, and the sources of its facts, insights and
/// relations.
pub(super) async fn shown(harness: &Harness, items: &[(String, String)]) -> anyhow::Result<HashSet<Uuid>> {
    let ids = |wanted: &dyn Fn(&str) -> bool| -> Vec<Uuid> {
        items.iter().filter(|(_, kind)| wanted(kind)).filter_map(|(id, _)| id.parse().ok()).collect()
    };
    let mut shown: HashSet<Uuid> = ids(&|kind| kind == "event").into_iter().collect();
    let memories = ids(&|kind| kind == "fact" || kind == "insight");
    shown.extend(
        sqlx::query_scalar!(
            r#"SELECT DISTINCT s AS "s!" FROM memories, unnest(source_event_ids) s WHERE id = ANY($1)"#,
            &memories
        )
        .fetch_all(&harness.db.pool)
        .await?,
    );
    let relations = ids(&|kind| kind == "relation");
    shown.extend(
        sqlx::query_scalar!(
            r#"SELECT DISTINCT s AS "s!" FROM relations, unnest(source_event_ids) s WHERE id = ANY($1)"#,
            &relations,
        )
        .fetch_all(&harness.db.pool)
        .await?,
    );
    Ok(shown)
}

/// Per category and overall: the share of evidence turns at each step, and where the
/// rest were lost.
pub fn summarize(per_category: &BTreeMap<String, Vec<Trace>>) -> Value {
    let summarize = |rows: &[&Trace]| {
        let share = |keep: &dyn Fn(&Trace) -> bool| {
            if rows.is_empty() { 0.0 } else { rows.iter().filter(|t| keep(t)).count() as f64 / rows.len() as f64 }
        };
        // Any tier of evidence: turns or memories. A summary covers its whole session, so
        // reaching one is a route to the turn, not the turn.
        let within = |t: &Trace, tier: Option<usize>, depth: usize| {
            t.depth
                .iter()
                .take(2)
                .enumerate()
                .any(|(i, d)| tier.is_none_or(|tier| tier == i) && d.is_some_and(|d| d <= depth))
                || tier == Some(2) && t.depth[2].is_some_and(|d| d <= depth)
        };
        let mut candidates = serde_json::Map::new();
        for (i, (tier, _)) in TIERS.iter().enumerate() {
            let at: serde_json::Map<String, Value> =
                DEPTHS.iter().map(|&d| (format!("at_{d}"), json!(share(&|t| within(t, Some(i), d))))).collect();
            candidates.insert((*tier).to_owned(), Value::Object(at));
        }
        let any: serde_json::Map<String, Value> =
            DEPTHS.iter().map(|&d| (format!("at_{d}"), json!(share(&|t| within(t, None, d))))).collect();
        candidates.insert("any".into(), Value::Object(any));
        let deepest = DEPTHS[DEPTHS.len() - 1];
        json!({
            "evidence_turns": rows.len(),
            "stored": share(&|t| t.stored),
            "remembered": share(&|t| t.remembered),
            "candidates": candidates,
            "top10": share(&|t| t.top10),
            "in_context_1024": share(&|t| t.in_context),
            "lost": {
                "not_stored": share(&|t| !t.stored),
                "not_a_candidate": share(&|t| t.stored && !within(t, None, deepest)),
                "ranked_out": share(&|t| within(t, None, deepest) && !t.top10),
                "kept": share(&|t| t.top10),
            },
        })
    };
    let all: Vec<&Trace> = per_category.values().flatten().collect();
    let categories: serde_json::Map<String, Value> =
        per_category.iter().map(|(c, rows)| (c.clone(), summarize(&rows.iter().collect::<Vec<_>>()))).collect();
    json!({"categories": categories, "overall": summarize(&all)})
}

/// The diagnosis as a table.
pub fn print(diagnosis: &Value) {
    println!(
        "\n{:<9} {:>8} {:>7} {:>10} {:>8} {:>8} {:>8} {:>7} {:>8} {:>11} {:>10} {:>9} {:>10}",
        "category",
        "evidence",
        "stored",
        "remembered",
        "any@10",
        "any@20",
        "any@50",
        "top10",
        "context",
        "no-cand.",
        "ranked-out",
        "turns@50",
        "summary@10"
    );
    let rows = diagnosis["categories"].as_object().into_iter().flatten().map(|(c, v)| (c.as_str(), v));
    for (category, v) in rows.chain([("overall", &diagnosis["overall"])]) {
        let f = |v: &Value| format!("{:.3}", v.as_f64().unwrap_or(0.0));
        let any = &v["candidates"]["any"];
        println!(
            "{:<9} {:>8} {:>7} {:>10} {:>8} {:>8} {:>8} {:>7} {:>8} {:>11} {:>10} {:>9} {:>10}",
            category,
            v["evidence_turns"],
            f(&v["stored"]),
            f(&v["remembered"]),
            f(&any["at_10"]),
            f(&any["at_20"]),
            f(&any["at_50"]),
            f(&v["top10"]),
            f(&v["in_context_1024"]),
            f(&v["lost"]["not_a_candidate"]),
            f(&v["lost"]["ranked_out"]),
            f(&v["candidates"]["turns"]["at_50"]),
            f(&v["candidates"]["summaries"]["at_10"])
        );
    }
}

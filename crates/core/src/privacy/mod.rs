//! What a person can make engram forget. [`erase`] deletes memories for good and
//! rewrites the turns that stated them, through each table's owner, in the caller's
//! transaction; [`requests`] recognises "forget that" said in conversation and
//! [`referents`] finds what it refers to. What engram never keeps, passwords, keys and
//! numbers, is redacted before a turn is stored ([`crate::ingest::secrets`]).

pub mod forget;
pub mod referents;

use std::collections::BTreeMap;

use sqlx::PgConnection;
use uuid::Uuid;

use crate::graph::forget::{Gone, forget_sources};
use crate::ingest::rewrite::{DELETED, rewrite_turns};
use crate::memories::Change;
use crate::memories::edit;
use engram_base::domain::{TenantId, UserId};
use engram_language::forget::values;

/// What to erase.
#[derive(Debug, Default, Clone)]
pub struct Erasure {
    pub memories: Vec<Uuid>,
    /// Also replace the turns the memories came from by [`DELETED`].
    pub with_sources: bool,
    /// Turns to rewrite (id, the text that stays), besides those sources.
    pub rewrites: Vec<(Uuid, String)>,
    /// The texts being removed from those turns, for finding the graph's names in them.
    pub removed_texts: Vec<String>,
}

/// What was erased: counts per kind of row, and the turns to embed again.
#[derive(Debug, Default, Clone)]
pub struct Erased {
    pub counts: BTreeMap<&'static str, u64>,
    pub to_embed: Vec<Uuid>,
}

/// Erases `erasure` for `user`; see the module documentation.
pub async fn erase(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    erasure: &Erasure,
    change: &Change,
    graph_scan_limit: i64,
) -> sqlx::Result<Erased> {
    let removed = edit::delete(conn, tenant, user, &erasure.memories, change).await?;
    let mut rewrites = erasure.rewrites.clone();
    if erasure.with_sources {
        for id in &removed.source_event_ids {
            if !rewrites.iter().any(|(r, _)| r == id) {
                rewrites.push((*id, DELETED.to_owned()));
            }
        }
    }
    if erasure.with_sources {
        let values: Vec<String> = removed.contents.iter().flat_map(|c| values::of(c)).collect();
        rewrites.extend(echoes(conn, tenant, user, &removed.source_event_ids, &values, &rewrites).await?);
    }
    let rewritten = rewrite_turns(conn, tenant, user, &rewrites).await?;
    let turns: Vec<Uuid> = rewrites.iter().map(|(id, _)| *id).collect();
    let mut texts = removed.contents.clone();
    texts.extend(erasure.removed_texts.iter().cloned());
    let gone = Gone { memories: &removed.ids, memory_sources: &removed.source_event_ids, turns: &turns, texts: &texts };
    let (relations, entities) = forget_sources(conn, tenant, user, &gone, graph_scan_limit).await?;
    let counts = BTreeMap::from([
        ("memories", removed.ids.len() as u64),
        ("memory_access", removed.memory_access),
        ("history_redacted", removed.history_redacted),
        ("relations", relations as u64),
        ("entities", entities as u64),
        ("events_redacted", rewritten.turns),
        ("summaries_cleared", rewritten.summaries_cleared),
    ]);
    Ok(Erased { counts, to_embed: rewritten.to_embed })
}

/// The assistant's turns right after `turns` that repeat one of `values`, with the
/// sentences repeating it replaced ("Reykjavik sounds lovely." after "I live in Reykjavik").
pub async fn echoes(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    turns: &[Uuid],
    values: &[String],
    already: &[(Uuid, String)],
) -> sqlx::Result<Vec<(Uuid, String)>> {
    if values.is_empty() || turns.is_empty() {
        return Ok(Vec::new());
    }
    let next: Vec<(Uuid, String)> = sqlx::query!(
        r#"SELECT n.id AS "id!", n.content AS "content!" FROM events e
           JOIN LATERAL (SELECT x.id, x.content, x.role FROM events x
                          WHERE x.tenant_id = e.tenant_id AND x.user_id = e.user_id AND x.session_id = e.session_id
                            AND (x.created_at, x.seq) > (e.created_at, e.seq)
                          ORDER BY x.created_at, x.seq LIMIT 1) n ON n.role = 'assistant'
          WHERE e.tenant_id = $1 AND e.user_id = $2 AND e.id = ANY($3)"#,
        tenant.as_str(),
        user.as_str(),
        turns
    )
    .map(|r| (r.id, r.content))
    .fetch_all(conn)
    .await?;
    Ok(next
        .into_iter()
        .filter(|(id, _)| !already.iter().any(|(a, _)| a == id))
        .filter_map(|(id, content)| without(&content, |s| values::repeats(s, values)).map(|kept| (id, kept)))
        .collect())
}

/// `text` with the sentences `gone` picks replaced by [`DELETED`]; `None` when none is.
pub fn without(text: &str, gone: impl Fn(&str) -> bool) -> Option<String> {
    let sentences = engram_language::text::sentences(text);
    if !sentences.iter().any(|s| gone(s)) {
        return None;
    }
    let mut kept: Vec<&str> = Vec::new();
    for sentence in sentences {
        let next = if gone(sentence) { DELETED } else { sentence };
        if !(next == DELETED && kept.last() == Some(&DELETED)) {
            kept.push(next);
        }
    }
    Some(kept.join(" "))
}

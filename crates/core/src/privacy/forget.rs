//! Honouring "forget that" said in conversation: each request among a user's turns is
//! resolved to what it refers to ([`super::referents`]) and erased as a deletion with
//! its sources would be ([`super::erase`]); the request's own sentence goes too. What
//! stays is a memory without content saying that the user asked to forget something,
//! and when, and an audit row. Called at ingest, so that nothing of it is served even
//! before the jobs run, and by `extract_facts` for turns stored some other way.

use std::collections::BTreeMap;

use serde_json::json;
use sqlx::PgConnection;
use uuid::Uuid;

use super::referents::{self, ResolveError, Turn};
use super::{Erasure, erase};
use crate::ingest::rewrite::DELETED;
use crate::memories::{self, Change, NewMemory};
use engram_base::domain::{Category, Kind, Owner, Role, TenantId, UserId};
use engram_base::models::Embedder;
use engram_language::forget::{self as requests, values};
use engram_language::text::sentences;

/// What honouring the requests came to.
#[derive(Debug, Default, Clone)]
pub struct Honoured {
    pub requests: u64,
    pub counts: BTreeMap<&'static str, u64>,
    /// Turns whose vectors were dropped, to be embedded again.
    pub to_embed: Vec<Uuid>,
}

/// Whether `text` holds a request to forget; cheap, no database.
pub fn asks_to_forget(text: &str) -> bool {
    sentences(text).into_iter().any(|s| requests::detect(s).is_some())
}

/// Honours the requests in the user's turns `ids`, oldest first, in the caller's
/// transaction (which should hold the user's lock alone).
pub async fn honour(
    conn: &mut PgConnection,
    embedder: &Embedder,
    owner: Owner<'_>,
    ids: &[Uuid],
    change: &Change,
    graph_scan_limit: i64,
) -> Result<Honoured, ResolveError> {
    let Owner { tenant, user } = owner;
    let mut honoured = Honoured::default();
    for id in ids {
        // Read again: an earlier request may have rewritten it.
        let turn: Option<Turn> = sqlx::query_as!(
            Turn,
            r#"SELECT id, session_id, role AS "role: Role", content, created_at FROM events WHERE tenant_id = $1 AND user_id = $2 AND id = $3"#,
            tenant.as_str(),
            user.as_str(),
            id
        )
        .fetch_optional(&mut *conn)
        .await?;
        let Some(turn) = turn.filter(|t| t.role == Role::User) else { continue };
        let found = sentences(&turn.content).into_iter().find_map(|s| requests::detect(s).map(|r| (s.to_owned(), r)));
        let Some((sentence, request)) = found else { continue };
        let referents = referents::resolve(conn, embedder, tenant, user, &turn, &sentence, &request).await?;
        let erasure = Erasure {
            memories: referents.memories,
            with_sources: false,
            rewrites: referents.rewrites,
            removed_texts: referents.removed,
        };
        let mut erased = erase(conn, tenant, user, &erasure, change, graph_scan_limit).await?;
        // The reply to it, when already stored ("Done, I won't keep 42 Maple Court").
        let replies = crate::ingest::rewrite::next_turns(conn, tenant, user, &[turn.id]).await?;
        let acknowledged = acknowledgments(conn, tenant, user, &replies).await?;
        *erased.counts.entry("events_redacted").or_default() += acknowledged.turns;
        erased.to_embed.extend(acknowledged.to_embed);
        note(conn, embedder, tenant, user, &turn, change).await?;
        let details = json!({"deleted": erased.counts});
        crate::users::audit(conn, tenant, &change.actor, "forget_request", &turn.id.to_string(), details).await?;
        honoured.requests += 1;
        for (kind, n) in erased.counts {
            *honoured.counts.entry(kind).or_default() += n;
        }
        honoured.to_embed.extend(erased.to_embed);
    }
    Ok(honoured)
}

/// The assistant's replies among `turns` that answer a request to forget (the user's turn
/// just before holds [`DELETED`]) lose their sentences that speak of forgetting and name
/// a value: the value is the one forgotten ("Done — I won't remember 1187 Birchwood
/// Lane."). The rest of the reply stays ("Try the café on Union Square at 7:30."). Called for the reply already stored when the
/// request is honoured, and for a reply stored after it.
pub async fn acknowledgments(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    turns: &[Uuid],
) -> sqlx::Result<crate::ingest::rewrite::Rewritten> {
    let rewrites: Vec<(Uuid, String)> = acknowledging(conn, tenant, turns)
        .await?
        .into_iter()
        .filter(|(owner, _, _)| owner == user)
        .map(|(_, id, kept)| (id, kept))
        .collect();
    crate::ingest::rewrite::rewrite_turns(conn, tenant, user, &rewrites).await
}

/// The replies among `turns`, of any of the tenant's users, that [`acknowledgments`]
/// would rewrite: their user, id and what stays of them; reads only, one statement for
/// a whole batch. The turn before a reply is the one stored before it (by `seq`, which an
/// index walks back from the reply): a reply is stored after what it answers.
pub async fn acknowledging(
    conn: &mut PgConnection,
    tenant: &TenantId,
    turns: &[Uuid],
) -> sqlx::Result<Vec<(UserId, Uuid, String)>> {
    if turns.is_empty() {
        return Ok(Vec::new());
    }
    let replies: Vec<(UserId, Uuid, String)> = sqlx::query!(
        r#"SELECT a.user_id AS "user_id: UserId", a.id, a.content FROM events a
           JOIN LATERAL (SELECT p.role, p.content FROM events p
                          WHERE p.tenant_id = a.tenant_id AND p.user_id = a.user_id AND p.seq < a.seq
                            AND p.session_id = a.session_id
                          ORDER BY p.seq DESC LIMIT 1) p
             ON p.role = 'user' AND strpos(p.content, $3) > 0
          WHERE a.tenant_id = $1 AND a.id = ANY($2) AND a.role = 'assistant'"#,
        tenant.as_str(),
        turns,
        DELETED
    )
    .map(|r| (r.user_id, r.id, r.content))
    .fetch_all(&mut *conn)
    .await?;
    Ok(replies
        .into_iter()
        .filter_map(|(user, id, content)| super::without(&content, acknowledges).map(|kept| (user, id, kept)))
        .collect())
}

/// A sentence that speaks of forgetting or keeping and names a value.
fn acknowledges(sentence: &str) -> bool {
    requests::speaks_of_keeping(sentence) && !values::of(sentence).is_empty()
}

/// The memory that stays: that the user asked to forget something, and when.
async fn note(
    conn: &mut PgConnection,
    embedder: &Embedder,
    tenant: &TenantId,
    user: &UserId,
    turn: &Turn,
    change: &Change,
) -> Result<(), ResolveError> {
    let content =
        format!("The user asked to forget something they had shared ({}).", turn.created_at.format("%-d %B %Y"));
    let embedding = embedder.embed_one(&content).await?;
    let memory = NewMemory {
        user_id: user.clone(),
        kind: Kind::Fact,
        category: Category::Other,
        key: None,
        value: None,
        content,
        importance: 0.2,
        source_event_ids: vec![turn.id],
        source_quote: None,
        derived_from: Vec::new(),
        valid_from: turn.created_at,
        pinned: false,
    };
    memories::insert(conn, tenant, &memory, &embedding, embedder.model(), change).await?;
    Ok(())
}

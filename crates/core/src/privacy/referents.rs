//! What a request to forget refers to, among the user's turns and memories.
//!
//! A sentence states what is to be forgotten when:
//! - the request points back ("forget that", "当我没说") and the sentence is the user's
//!   last statement before it: earlier in the same message, or the user's previous turn
//!   in the session;
//! - it is the user's and names the topic: one of its words, or for Chinese two
//!   characters of it in a row ("my *address*", "身份证");
//! - it is the user's and talks about the kind of information the topic names
//!   ([`super::topics`]: "my address" → "we just moved into 42 Maple Court"), in the
//!   request's conversation (earlier ones: when it is also somewhat similar);
//! - it is the user's and means the topic: clearly similar to it by the embedding model
//!   (in any session), or, when nothing else is found, the closest of the session's
//!   statements, if close enough (a request is usually about something said shortly
//!   before);
//! - it goes on about a sentence found above ("She also put me on metformin");
//! - it repeats a distinctive value of a sentence found above ([`super::values`]): the
//!   assistant's "Got it, 42 Maple Court", a later mention, a memory's text.
//!
//! Memories go when they came from a sentence that goes (by their quote, or by their
//! source turn when they have no quote), or when their own text does one of the above.
//! What does not: a memory or turn that says none of this, even in the same session.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use engram_base::domain::{Owner, Role, TenantId, UserId};
use engram_base::models::{Embedder, Embedding, ModelError};
use engram_language::forget::{self as requests, Request, topics, values};
use engram_language::text::{is_small_talk, sentences, word_count};

/// Similar enough to the topic to be about it, wherever it was said.
const CLEARLY_SIMILAR: f32 = 0.5;
/// The least similarity at which the closest statement of the request's session, or a
/// statement of an earlier one that talks about the topic's kind, is about the topic.
const SESSION_SIMILAR: f32 = 0.2;
/// The least similarity to what goes at which a sentence with no subject of its own may
/// go on about it.
const GOES_ON: f32 = 0.05;
/// What being right after a sentence that goes adds to a sentence's similarity to what
/// goes, when it is weighed against what the turn keeps.
const NEXT_TO_GONE: f32 = 0.1;
/// Turns of the request's session read, latest first.
const SESSION_TURNS: i64 = 60;
/// Older turns read because they name or mean the topic.
const OLDER_TURNS: i64 = 100;

/// One stored turn.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Turn {
    pub id: Uuid,
    pub session_id: String,
    pub role: Role,
    pub content: String,
    pub created_at: DateTime<Utc>,
}

/// What a request refers to: turns to rewrite, memories to delete, and the sentences
/// removed (for the graph's names).
#[derive(Debug, Default, Clone)]
pub struct Referents {
    pub rewrites: Vec<(Uuid, String)>,
    pub memories: Vec<Uuid>,
    pub removed: Vec<String>,
}

#[derive(sqlx::FromRow)]
struct MemoryText {
    id: Uuid,
    content: String,
    source_quote: Option<String>,
    source_event_ids: Vec<Uuid>,
}

/// Finds what `request`, said in `sentence` of `turn`, refers to.
pub async fn resolve(
    conn: &mut PgConnection,
    embedder: &Embedder,
    tenant: &TenantId,
    user: &UserId,
    turn: &Turn,
    sentence: &str,
    request: &Request,
) -> Result<Referents, ResolveError> {
    let turns = candidates(conn, embedder, tenant, user, turn, request).await?;
    // Every sentence of every candidate turn, the request's own excepted.
    let mut said: Vec<Said> = Vec::new();
    for t in &turns {
        for s in sentences(&t.content) {
            if t.id == turn.id && s == sentence || s.contains(super::DELETED) || requests::detect(s).is_some() {
                continue;
            }
            let in_session = t.session_id == turn.session_id && t.created_at <= turn.created_at;
            said.push(Said { turn: t, text: s.to_owned(), in_session, gone: false });
        }
    }
    if request.points_back {
        point_back(&mut said, turn, request.stated_before);
    }
    let topic = request.topic.trim();
    let mut topic_vector = None;
    if !topic.is_empty() {
        let texts: Vec<String> = std::iter::once(topic.to_owned()).chain(said.iter().map(|s| s.text.clone())).collect();
        let vectors = embedder.embed(&texts).await?;
        let (topic_v, rest) = vectors.split_first().expect("the topic's vector");
        by_topic(&mut said, topic, topic_v, rest);
        topic_vector = Some(topic_v.clone());
    }
    // What the sentences found say again elsewhere.
    let found_values: Vec<String> =
        said.iter().filter(|s| s.gone && s.turn.role == Role::User).flat_map(|s| values::of(&s.text)).collect();
    for s in said.iter_mut().filter(|s| !s.gone) {
        s.gone = values::repeats(&s.text, &found_values);
    }
    let memories =
        memories_of(conn, embedder, Owner::new(tenant, user), &said, topic, topic_vector.as_ref(), &found_values)
            .await?;

    let mut by_turn: BTreeMap<Uuid, Vec<&str>> = BTreeMap::new();
    for s in said.iter().filter(|s| s.gone) {
        by_turn.entry(s.turn.id).or_default().push(&s.text);
    }
    by_turn.entry(turn.id).or_default().push(sentence);
    let mut referents = Referents { memories, ..Default::default() };
    for t in &turns {
        let Some(gone) = by_turn.get(&t.id) else { continue };
        let own_request = |s: &str| t.id == turn.id && s == sentence;
        if let Some(kept) = super::without(&t.content, |s| gone.contains(&s) || own_request(s)) {
            referents.rewrites.push((t.id, kept));
        }
        referents.removed.extend(gone.iter().map(|s| (*s).to_owned()));
    }
    Ok(referents)
}

/// Why the referents could not be found.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("database error")]
    Database(#[from] sqlx::Error),
    #[error("cannot embed: {0}")]
    Model(#[from] ModelError),
}

/// A sentence of a candidate turn, and whether it goes.
struct Said<'t> {
    turn: &'t Turn,
    text: String,
    /// Said in the request's conversation, before it.
    in_session: bool,
    gone: bool,
}

/// The request points back: at what the same message said before it, or else the
/// user's last statement in the session, and what the assistant said between. A request
/// whose own sentence said it first ("My PIN is 4821 — forget I said that") points no
/// further.
fn point_back(said: &mut [Said], request: &Turn, stated_before: bool) {
    if stated_before {
        return;
    }
    let statement = |s: &Said| s.turn.role == Role::User && !is_small_talk(&s.text) && word_count(&s.text) >= 3;
    if said.iter().any(|s| s.turn.id == request.id && statement(s)) {
        for s in said.iter_mut().filter(|s| s.turn.id == request.id) {
            s.gone = true;
        }
        return;
    }
    let last = said
        .iter()
        .filter(|s| s.in_session && s.turn.id != request.id && statement(s))
        .max_by_key(|s| s.turn.created_at)
        .map(|s| (s.turn.id, s.turn.created_at));
    let Some((id, at)) = last else { return };
    for s in said.iter_mut() {
        let between = s.turn.role == Role::Assistant && s.in_session && s.turn.created_at > at;
        if s.turn.id == id || between {
            s.gone = true;
        }
    }
}

/// The sentences that name, talk about or mean `topic`: the user's, and the assistant's
/// in the request's conversation that name it or talk about it. When none of the user's
/// does, the user's statement in the conversation closest to it in meaning, if close
/// enough; and a turn that goes on about a sentence that goes ("She also put me on …")
/// goes with it.
fn by_topic(said: &mut [Said], topic: &str, topic_v: &Embedding, vectors: &[Embedding]) {
    let similarity: Vec<f32> = vectors.iter().map(|v| v.cosine(topic_v)).collect();
    for (s, sim) in said.iter_mut().zip(&similarity) {
        if s.gone {
            continue;
        }
        let kind = topics::talks_about(topic, &s.text) && (s.in_session || *sim >= SESSION_SIMILAR);
        s.gone = match s.turn.role {
            Role::User => topics::names(&s.text, topic) || kind || *sim >= CLEARLY_SIMILAR,
            _ => s.in_session && (topics::names(&s.text, topic) || kind),
        };
    }
    let user_statement = |s: &Said| s.turn.role == Role::User && s.in_session && !is_small_talk(&s.text);
    if !said.iter().any(|s| s.gone && s.turn.role == Role::User) {
        let closest = said
            .iter()
            .zip(&similarity)
            .enumerate()
            .filter(|(_, (s, sim))| user_statement(s) && **sim >= SESSION_SIMILAR)
            .max_by(|a, b| a.1.1.total_cmp(b.1.1))
            .map(|(i, _)| i);
        if let Some(i) = closest {
            said[i].gone = true;
        }
    }
    // Going on about what goes: the next sentence of the same turn, or the user's next
    // turn, opening with a word that points back ("It was devastating.", "他经常值夜班").
    for i in 1..said.len() {
        let same_turn = said[i - 1].turn.id == said[i].turn.id;
        if same_turn && said[i - 1].gone && said[i].turn.role == Role::User && topics::continues(&said[i].text) {
            said[i].gone = true;
            continue;
        }
        let previous_user =
            (0..i).rev().find(|&j| said[j].turn.role == Role::User && said[j].turn.id != said[i].turn.id);
        // "It is." alone says nothing of its own: it stays.
        let continues = said[i].turn.role == Role::User
            && said[i].in_session
            && topics::continues(&said[i].text)
            && word_count(&said[i].text) > 3;
        if continues && previous_user.is_some_and(|j| said[j].gone) && !said[i].gone {
            said[i].gone = true;
        }
    }
    going_on(said, topic, vectors);
}

/// Going on about a person without a word that points back ("My sister Dana is going
/// through a divorce. Crying every night."): when the topic names a person by their
/// relation to the user, a later sentence of a user turn that already loses one, with no
/// subject of its own ([`topics::no_new_subject`]), goes when it is close in meaning to
/// what goes from the turn (at least [`GOES_ON`]) and closer to it than to anything the
/// turn keeps. Decided against what went before this step, so one decision does not
/// tip the next.
fn going_on(said: &mut [Said], topic: &str, vectors: &[Embedding]) {
    if !topics::names_a_person(topic) {
        return;
    }
    let gone: Vec<bool> = said.iter().map(|s| s.gone).collect();
    for i in 0..said.len() {
        let s = &said[i];
        if gone[i] || s.turn.role != Role::User || !topics::no_new_subject(&s.text) {
            continue;
        }
        let turn = s.turn.id;
        let closest = |went: bool, before: bool| {
            (0..said.len())
                .filter(|&j| j != i && said[j].turn.id == turn && gone[j] == went && (!before || j < i))
                .map(|j| vectors[i].cosine(&vectors[j]))
                .fold(None, |best: Option<f32>, sim| Some(best.map_or(sim, |b| b.max(sim))))
        };
        let Some(to_gone) = closest(true, true).filter(|sim| *sim >= GOES_ON) else { continue };
        // The sentence right after one that goes is a little more likely to go on about it.
        let next_to = i > 0 && said[i - 1].turn.id == turn && gone[i - 1];
        let to_gone = to_gone + if next_to { NEXT_TO_GONE } else { 0.0 };
        if closest(false, false).is_none_or(|to_kept| to_gone > to_kept) {
            said[i].gone = true;
        }
    }
}

/// The turns a request may refer to: its session's latest, and older ones that name the
/// topic or whose vectors are close to it.
async fn candidates(
    conn: &mut PgConnection,
    embedder: &Embedder,
    tenant: &TenantId,
    user: &UserId,
    turn: &Turn,
    request: &Request,
) -> Result<Vec<Turn>, ResolveError> {
    let mut turns: Vec<Turn> = sqlx::query_as!(
        Turn,
        r#"SELECT id, session_id, role AS "role: Role", content, created_at FROM events
          WHERE tenant_id = $1 AND user_id = $2 AND session_id = $3 AND created_at <= $4
          ORDER BY created_at DESC, seq DESC LIMIT $5"#,
        tenant.as_str(),
        user.as_str(),
        &turn.session_id,
        turn.created_at,
        SESSION_TURNS
    )
    .fetch_all(&mut *conn)
    .await?;
    let words: Vec<String> = topics::words(&request.topic).iter().map(|w| format!("%{w}%")).collect();
    if !words.is_empty() {
        let vector = embedder.embed_one(&request.topic).await?;
        let dims = vector.dims();
        let sql = format!(
            "(SELECT id, session_id, role, content, created_at FROM events
               WHERE tenant_id = $1 AND user_id = $2 AND session_id <> $3 AND content ILIKE ANY($4) LIMIT $5)
             UNION
             (SELECT id, session_id, role, content, created_at FROM events
               WHERE tenant_id = $1 AND user_id = $2 AND session_id <> $3 AND embedding_dims = {dims}
               ORDER BY embedding::halfvec({dims}) <=> $6::vector::halfvec({dims}) LIMIT 20)"
        );
        let older: Vec<Turn> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(user.as_str())
            .bind(&turn.session_id)
            .bind(&words)
            .bind(OLDER_TURNS)
            .bind(vector.to_pgvector())
            .fetch_all(&mut *conn)
            .await?;
        turns.extend(older);
    }
    turns.sort_by_key(|t| (t.created_at, t.id));
    turns.dedup_by_key(|t| t.id);
    Ok(turns)
}

/// The user's memories that go: from a sentence that goes, or saying the same.
async fn memories_of(
    conn: &mut PgConnection,
    embedder: &Embedder,
    owner: Owner<'_>,
    said: &[Said<'_>],
    topic: &str,
    topic_vector: Option<&Embedding>,
    found_values: &[String],
) -> Result<Vec<Uuid>, ResolveError> {
    let Owner { tenant, user } = owner;
    let memories: Vec<MemoryText> = sqlx::query_as!(
        MemoryText,
        "SELECT id, content, source_quote, source_event_ids FROM memories
          WHERE tenant_id = $1 AND user_id = $2 AND status <> 'deleted'",
        tenant.as_str(),
        user.as_str()
    )
    .fetch_all(&mut *conn)
    .await?;
    let gone: Vec<&Said> = said.iter().filter(|s| s.gone).collect();
    let kept_turns: HashSet<Uuid> = said.iter().filter(|s| !s.gone).map(|s| s.turn.id).collect();
    let gone_turns: HashSet<Uuid> = gone.iter().map(|s| s.turn.id).collect();
    let session_turns: HashSet<Uuid> = said.iter().filter(|s| s.in_session).map(|s| s.turn.id).collect();
    let mut found = Vec::new();
    let mut undecided = Vec::new();
    for m in memories {
        let from_gone_sentence = match &m.source_quote {
            Some(quote) => gone.iter().any(|s| s.text.contains(quote.as_str()) || quote.contains(s.text.as_str())),
            None => m.source_event_ids.iter().any(|e| gone_turns.contains(e) && !kept_turns.contains(e)),
        };
        let from_session = m.source_event_ids.iter().any(|e| session_turns.contains(e));
        let named = !topic.is_empty()
            && (topics::names(&m.content, topic) || from_session && topics::talks_about(topic, &m.content));
        if from_gone_sentence || named || values::repeats(&m.content, found_values) {
            found.push(m.id);
        } else if topic_vector.is_some() {
            undecided.push(m);
        }
    }
    if let Some(topic_v) = topic_vector
        && !undecided.is_empty()
    {
        let texts: Vec<String> = undecided.iter().map(|m| m.content.clone()).collect();
        for (m, v) in undecided.iter().zip(embedder.embed(&texts).await?) {
            if v.cosine(topic_v) >= CLEARLY_SIMILAR {
                found.push(m.id);
            }
        }
    }
    Ok(found)
}

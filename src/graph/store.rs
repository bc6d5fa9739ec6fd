//! Writing the graph: resolving a mention to an entity, stating a relation (ending the
//! edges it replaces), merging duplicate entities and undoing a merge, forgetting and
//! purging. Every change writes its `graph_history` row in the caller's transaction.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::PgConnection;
use uuid::Uuid;

use super::extract::Triple;
use super::mention::Mention;
use super::names::{Aliases, normalise};
use super::{EntityType, Exclusive, Predicate};
use crate::domain::{TenantId, UserId};
use crate::memories::Change;
use crate::models::{Embedder, Embedding};
use crate::technologies::technologies;

/// Where graph writes happen: the user, the embedder, the aliases and who is writing.
pub struct Writer<'a> {
    pub tenant: &'a TenantId,
    pub user: &'a UserId,
    pub embedder: &'a Embedder,
    pub aliases: &'a Aliases,
    pub merge_similarity: f32,
    pub change: Change,
}

/// What one sentence's relations came to: entities and relations created, refreshed, ended.
#[derive(Debug, Default, Clone, Copy)]
pub struct Written {
    pub entities_created: i64,
    pub relations_created: i64,
    pub relations_refreshed: i64,
    pub relations_ended: i64,
}

/// The turn a relation is stated in.
pub struct Said<'a> {
    pub event_id: Uuid,
    pub at: DateTime<Utc>,
    pub sentence: &'a str,
    /// The fact stored from the same sentence, if any.
    pub memory_id: Option<Uuid>,
    pub confidence: f32,
}

impl Writer<'_> {
    /// States `triples` as said in `said`; a named user renames the user's own entity first.
    pub async fn write(
        &self,
        conn: &mut PgConnection,
        said: &Said<'_>,
        user_name: Option<&str>,
        triples: &[Triple],
    ) -> anyhow::Result<Written> {
        let mut written = Written::default();
        if let Some(name) = user_name {
            self.name_user(conn, name, said.at, &mut written).await?;
        }
        for triple in triples {
            let subject = self.resolve(conn, &triple.subject, said.at, &mut written).await?;
            let object = self.resolve(conn, &triple.object, said.at, &mut written).await?;
            if subject == object {
                continue;
            }
            let ended = match &triple.ended {
                Some(old) => self.find(conn, old).await?,
                None => None,
            };
            self.relate(conn, said, subject, triple.predicate, object, ended, &mut written).await?;
        }
        Ok(written)
    }

    /// The entity `mention` names: known by name or alias, or similar enough, or new.
    pub async fn resolve(
        &self,
        conn: &mut PgConnection,
        mention: &Mention,
        at: DateTime<Utc>,
        written: &mut Written,
    ) -> anyhow::Result<Uuid> {
        if mention.is_user {
            return self.user_entity(conn, at, written).await;
        }
        if let Some(id) = self.find(conn, mention).await? {
            self.seen(conn, id, &mention.name, at).await?;
            return Ok(id);
        }
        let name = self.aliases.canonical(&mention.name).unwrap_or(&mention.name).to_owned();
        let embedding = self.embedder.embed_one(&name).await?;
        if let Some(id) = self.similar(conn, &name, mention.kind, &embedding).await? {
            self.seen(conn, id, &mention.name, at).await?;
            return Ok(id);
        }
        written.entities_created += 1;
        self.insert(conn, &name, mention.kind, false, &embedding, at).await
    }

    /// An active entity known by `mention`'s name or one of its aliases.
    pub async fn find(&self, conn: &mut PgConnection, mention: &Mention) -> sqlx::Result<Option<Uuid>> {
        if mention.is_user {
            return sqlx::query_scalar(
                "SELECT id FROM entities WHERE tenant_id = $1 AND user_id = $2 AND is_user AND status = 'active'",
            )
            .bind(self.tenant.as_str())
            .bind(self.user.as_str())
            .fetch_optional(conn)
            .await;
        }
        let names = self.aliases.all_names_of(&mention.name);
        let mut names = names;
        let own = normalise(&mention.name);
        if !names.contains(&own) {
            names.push(own);
        }
        sqlx::query_scalar(
            "SELECT id FROM entities
              WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND (norm_name = ANY($3) OR aliases && $3)
              ORDER BY is_user DESC, first_seen LIMIT 1",
        )
        .bind(self.tenant.as_str())
        .bind(self.user.as_str())
        .bind(&names)
        .fetch_optional(conn)
        .await
    }

    /// An entity of `kind` whose name's embedding is at least `merge_similarity` like
    /// `embedding`, unless the two names are told apart (see [`distinct`]).
    async fn similar(
        &self,
        conn: &mut PgConnection,
        name: &str,
        kind: EntityType,
        embedding: &Embedding,
    ) -> sqlx::Result<Option<Uuid>> {
        let dims = embedding.dims();
        let sql = format!(
            "SELECT id, name, (1 - (embedding::halfvec({dims}) <=> $4::halfvec({dims})))::real FROM entities
              WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND type = $3 AND embedding_dims = {dims}
              ORDER BY embedding::halfvec({dims}) <=> $4::halfvec({dims}) LIMIT 3"
        );
        let near: Vec<(Uuid, String, f32)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(self.tenant.as_str())
            .bind(self.user.as_str())
            .bind(kind.as_str())
            .bind(embedding.to_pgvector())
            .fetch_all(conn)
            .await?;
        Ok(near
            .into_iter()
            .find(|(_, other, similarity)| *similarity >= self.merge_similarity && !distinct(name, other))
            .map(|(id, ..)| id))
    }

    async fn insert(
        &self,
        conn: &mut PgConnection,
        name: &str,
        kind: EntityType,
        is_user: bool,
        embedding: &Embedding,
        at: DateTime<Utc>,
    ) -> anyhow::Result<Uuid> {
        let id = Uuid::now_v7();
        let aliases: Vec<String> =
            self.aliases.all_names_of(name).into_iter().filter(|a| *a != normalise(name)).collect();
        let sql = format!(
            "INSERT INTO entities (tenant_id, id, user_id, name, norm_name, type, aliases, is_user, embedding,
                                   embedding_model, embedding_dims, first_seen, last_seen)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::halfvec({dims}), $10, {dims}, $11, $11)",
            dims = embedding.dims()
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(self.tenant.as_str())
            .bind(id)
            .bind(self.user.as_str())
            .bind(name)
            .bind(normalise(name))
            .bind(kind.as_str())
            .bind(&aliases)
            .bind(is_user)
            .bind(embedding.to_pgvector())
            .bind(self.embedder.model())
            .bind(at)
            .execute(&mut *conn)
            .await?;
        let after = json!({"name": name, "type": kind.as_str(), "aliases": aliases, "is_user": is_user});
        record(conn, self.tenant, self.user, Target::Entity(id), "created", None, Some(after), &self.change).await?;
        Ok(id)
    }

    /// Seen again: `last_seen` moves on and a new spelling becomes an alias.
    async fn seen(&self, conn: &mut PgConnection, id: Uuid, spelled: &str, at: DateTime<Utc>) -> sqlx::Result<()> {
        sqlx::query(
            "UPDATE entities SET last_seen = greatest(last_seen, $3), updated_at = now(),
                    aliases = CASE WHEN $4 = norm_name OR $4 = ANY(aliases) THEN aliases ELSE aliases || $4 END
              WHERE tenant_id = $1 AND id = $2",
        )
        .bind(self.tenant.as_str())
        .bind(id)
        .bind(at)
        .bind(normalise(spelled))
        .execute(conn)
        .await?;
        Ok(())
    }

    /// The user's own entity, made on first mention (named "user" until they say their name).
    async fn user_entity(
        &self,
        conn: &mut PgConnection,
        at: DateTime<Utc>,
        written: &mut Written,
    ) -> anyhow::Result<Uuid> {
        if let Some(id) = self.find(conn, &Mention::user()).await? {
            self.touch(conn, id, at).await?;
            return Ok(id);
        }
        written.entities_created += 1;
        let embedding = self.embedder.embed_one("user").await?;
        self.insert(conn, "user", EntityType::Person, true, &embedding, at).await
    }

    async fn touch(&self, conn: &mut PgConnection, id: Uuid, at: DateTime<Utc>) -> sqlx::Result<()> {
        sqlx::query("UPDATE entities SET last_seen = greatest(last_seen, $3) WHERE tenant_id = $1 AND id = $2")
            .bind(self.tenant.as_str())
            .bind(id)
            .bind(at)
            .execute(conn)
            .await?;
        Ok(())
    }

    /// The user said their name: their entity takes it, and an entity already known by
    /// it (someone mentioned them before) is merged into theirs.
    async fn name_user(
        &self,
        conn: &mut PgConnection,
        name: &str,
        at: DateTime<Utc>,
        written: &mut Written,
    ) -> anyhow::Result<()> {
        let me = self.user_entity(conn, at, written).await?;
        let namesake = Mention { name: name.to_owned(), kind: EntityType::Person, is_user: false };
        if let Some(other) = self.find(conn, &namesake).await?
            && other != me
        {
            merge(conn, self.tenant, self.user, other, me, &self.change).await?;
        }
        let before: Option<(String, Vec<String>)> =
            sqlx::query_as("SELECT name, aliases FROM entities WHERE tenant_id = $1 AND id = $2")
                .bind(self.tenant.as_str())
                .bind(me)
                .fetch_optional(&mut *conn)
                .await?;
        let Some((old, aliases)) = before else { return Ok(()) };
        if normalise(&old) == normalise(name) {
            return Ok(());
        }
        let embedding = self.embedder.embed_one(name).await?;
        let sql = format!(
            "UPDATE entities SET name = $3, norm_name = $4, embedding = $5::halfvec({dims}), embedding_model = $6,
                    embedding_dims = {dims}, updated_at = now(),
                    aliases = CASE WHEN norm_name = 'user' THEN aliases ELSE array_append(aliases, norm_name) END
              WHERE tenant_id = $1 AND id = $2",
            dims = embedding.dims()
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(self.tenant.as_str())
            .bind(me)
            .bind(name)
            .bind(normalise(name))
            .bind(embedding.to_pgvector())
            .bind(self.embedder.model())
            .execute(&mut *conn)
            .await?;
        let (before, after) = (json!({"name": old, "aliases": aliases}), json!({"name": name}));
        let change = Change { reason: "the user said their name".into(), ..self.change.clone() };
        record(conn, self.tenant, self.user, Target::Entity(me), "updated", Some(before), Some(after), &change).await?;
        Ok(())
    }

    /// States `subject predicate object`: said again, it gains the turn as a source; new,
    /// it ends the edges it replaces (see [`Predicate::exclusive`]) and `ended`'s.
    #[allow(clippy::too_many_arguments)]
    async fn relate(
        &self,
        conn: &mut PgConnection,
        said: &Said<'_>,
        subject: Uuid,
        predicate: Predicate,
        object: Uuid,
        ended: Option<Uuid>,
        written: &mut Written,
    ) -> anyhow::Result<()> {
        let same: Option<Uuid> = sqlx::query_scalar(
            "SELECT id FROM relations
              WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND predicate = $3
                AND ((subject_id = $4 AND object_id = $5) OR ($6 AND subject_id = $5 AND object_id = $4))
              LIMIT 1",
        )
        .bind(self.tenant.as_str())
        .bind(self.user.as_str())
        .bind(predicate.as_str())
        .bind(subject)
        .bind(object)
        .bind(predicate.symmetric())
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(id) = same {
            sqlx::query(
                "UPDATE relations SET updated_at = now(),
                        source_event_ids = CASE WHEN $3 = ANY(source_event_ids) THEN source_event_ids
                                                ELSE source_event_ids || $3 END
                  WHERE tenant_id = $1 AND id = $2",
            )
            .bind(self.tenant.as_str())
            .bind(id)
            .bind(said.event_id)
            .execute(&mut *conn)
            .await?;
            written.relations_refreshed += 1;
            return Ok(());
        }
        let names: Vec<(Uuid, String)> =
            sqlx::query_as("SELECT id, name FROM entities WHERE tenant_id = $1 AND id = ANY($2)")
                .bind(self.tenant.as_str())
                .bind([subject, object])
                .fetch_all(&mut *conn)
                .await?;
        let name_of = |id: Uuid| names.iter().find(|(i, _)| *i == id).map(|(_, n)| n.clone()).unwrap_or_default();
        let (subject_name, object_name) = (name_of(subject), name_of(object));
        let replaced = self.replaced(conn, subject, predicate, object, &object_name, ended).await?;
        let text = match_text(said.sentence, &subject_name, predicate, &object_name);
        let embedding = self.embedder.embed_one(&text).await?;
        let id = Uuid::now_v7();
        let sql = format!(
            "INSERT INTO relations (tenant_id, id, user_id, subject_id, predicate, object_id, fact, valid_from,
                                    source_event_ids, memory_id, confidence, embedding, embedding_model, embedding_dims)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::halfvec({dims}), $13, {dims})",
            dims = embedding.dims()
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(self.tenant.as_str())
            .bind(id)
            .bind(self.user.as_str())
            .bind(subject)
            .bind(predicate.as_str())
            .bind(object)
            .bind(said.sentence)
            .bind(said.at)
            .bind(vec![said.event_id])
            .bind(said.memory_id)
            .bind(said.confidence)
            .bind(embedding.to_pgvector())
            .bind(self.embedder.model())
            .execute(&mut *conn)
            .await?;
        let after = json!({"subject": subject_name, "predicate": predicate.as_str(), "object": object_name,
                           "fact": said.sentence, "valid_from": said.at});
        record(conn, self.tenant, self.user, Target::Relation(id), "created", None, Some(after), &self.change).await?;
        written.relations_created += 1;
        for old in replaced {
            let ended = sqlx::query(
                "UPDATE relations SET status = 'superseded', valid_to = $3, expired_at = now(), superseded_by = $4,
                        updated_at = now()
                  WHERE tenant_id = $1 AND id = $2 AND status = 'active'",
            )
            .bind(self.tenant.as_str())
            .bind(old)
            .bind(said.at)
            .bind(id)
            .execute(&mut *conn)
            .await?;
            if ended.rows_affected() == 1 {
                let change = Change { reason: "a new relation replaces it".into(), ..self.change.clone() };
                let after = json!({"status": "superseded", "valid_to": said.at, "superseded_by": id});
                record(conn, self.tenant, self.user, Target::Relation(old), "superseded", None, Some(after), &change)
                    .await?;
                written.relations_ended += 1;
            }
        }
        Ok(())
    }

    /// The active edges a new `subject predicate object` ends.
    async fn replaced(
        &self,
        conn: &mut PgConnection,
        subject: Uuid,
        predicate: Predicate,
        object: Uuid,
        object_name: &str,
        ended: Option<Uuid>,
    ) -> sqlx::Result<Vec<Uuid>> {
        let rows: Vec<(Uuid, Uuid, Uuid, String, String)> = sqlx::query_as(
            "SELECT r.id, r.subject_id, r.object_id, o.name, o.type FROM relations r
               JOIN entities o ON o.tenant_id = r.tenant_id AND o.id = r.object_id
              WHERE r.tenant_id = $1 AND r.user_id = $2 AND r.status = 'active' AND r.predicate = $3
                AND (r.subject_id = $4 OR r.object_id = $5)",
        )
        .bind(self.tenant.as_str())
        .bind(self.user.as_str())
        .bind(predicate.as_str())
        .bind(subject)
        .bind(object)
        .fetch_all(conn)
        .await?;
        let kind_of = |name: &str| technologies(name).first().map(|(key, _)| *key);
        let new_kind = kind_of(object_name);
        Ok(rows
            .into_iter()
            .filter(|(_, s, o, name, _)| {
                let moved_from = ended.is_some_and(|e| *o == e && *s == subject);
                let replaced = match predicate.exclusive() {
                    Some(Exclusive::Object) => *s == subject && *o != object,
                    Some(Exclusive::Subject) => *o == object && *s != subject,
                    Some(Exclusive::TechnologyKind) => {
                        *s == subject && *o != object && new_kind.is_some() && kind_of(name) == new_kind
                    }
                    None => false,
                };
                moved_from || replaced
            })
            .map(|(id, ..)| id)
            .collect())
    }
}

/// What a relation's vector is made from: the sentence and the relation in words, with
/// the kind of technology it names (`uses PostgreSQL, a database`).
pub fn match_text(sentence: &str, subject: &str, predicate: Predicate, object: &str) -> String {
    format!("{sentence}\n{subject} {} {object}{}", predicate.words(), kind_label(object))
}

/// The kind of technology `name` is, in words English and Chinese questions use:
/// `, a database (数据库)`; empty for anything else.
pub fn kind_label(name: &str) -> String {
    const KINDS: &[(&str, &str, &str)] = &[
        ("database", "database", "数据库"),
        ("framework", "web framework", "框架"),
        ("language", "programming language", "编程语言"),
        ("cloud", "cloud", "云"),
        ("ci", "CI/CD pipeline", "持续集成"),
        ("bundler", "frontend bundler", "打包工具"),
        ("orchestration", "container orchestration", "容器编排"),
    ];
    let Some((key, _)) = technologies(name).into_iter().next() else { return String::new() };
    match KINDS.iter().find(|(k, ..)| *k == key) {
        Some((_, words, chinese)) => format!(", a {words} ({chinese})"),
        None => format!(", a {}", key.replace('_', " ")),
    }
}

/// Whether two names are told apart however alike their vectors: two different
/// technologies, or names whose words differ in a letter or a number ("Project A").
pub fn distinct(a: &str, b: &str) -> bool {
    let (ta, tb) = (technologies(a), technologies(b));
    if !ta.is_empty() && !tb.is_empty() && ta != tb {
        return true;
    }
    let words = |s: &str| -> Vec<String> { normalise(s).split_whitespace().map(str::to_owned).collect() };
    let (wa, wb) = (words(a), words(b));
    let short = |w: &String| w.chars().count() <= 2 || w.chars().any(|c| c.is_ascii_digit());
    wa.iter().filter(|w| short(w)).any(|w| !wb.contains(w)) || wb.iter().filter(|w| short(w)).any(|w| !wa.contains(w))
}

/// What a history row is about.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    Entity(Uuid),
    Relation(Uuid),
}

/// One `graph_history` row.
#[allow(clippy::too_many_arguments)]
pub async fn record(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    target: Target,
    action: &str,
    before: Option<Value>,
    after: Option<Value>,
    change: &Change,
) -> sqlx::Result<()> {
    let (entity, relation) = match target {
        Target::Entity(id) => (Some(id), None),
        Target::Relation(id) => (None, Some(id)),
    };
    sqlx::query(
        "INSERT INTO graph_history (tenant_id, id, user_id, entity_id, relation_id, action, before, after, reason,
                                    job_run_id, actor)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(tenant.as_str())
    .bind(Uuid::now_v7())
    .bind(user.as_str())
    .bind(entity)
    .bind(relation)
    .bind(action)
    .bind(before)
    .bind(after)
    .bind(&change.reason)
    .bind(change.run_id)
    .bind(&change.actor)
    .execute(conn)
    .await?;
    Ok(())
}

/// Merges entity `from` into `into`: its names become aliases, its relations move
/// over (the moved ids are in the history row, so [`restore`] can move them back).
pub async fn merge(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    from: Uuid,
    into: Uuid,
    change: &Change,
) -> sqlx::Result<()> {
    let moved: Vec<(Uuid, bool, bool)> = sqlx::query_as(
        "UPDATE relations SET subject_id = CASE WHEN subject_id = $2 THEN $3 ELSE subject_id END,
                object_id = CASE WHEN object_id = $2 THEN $3 ELSE object_id END, updated_at = now()
          WHERE tenant_id = $1 AND (subject_id = $2 OR object_id = $2)
         RETURNING id, subject_id = $3, object_id = $3",
    )
    .bind(tenant.as_str())
    .bind(from)
    .bind(into)
    .fetch_all(&mut *conn)
    .await?;
    sqlx::query(
        "WITH gone AS (
            UPDATE entities SET status = 'merged', merged_into = $3, updated_at = now()
             WHERE tenant_id = $1 AND id = $2 AND status = 'active' RETURNING norm_name, aliases, first_seen, last_seen
         )
         UPDATE entities e SET aliases = ARRAY(SELECT DISTINCT unnest(e.aliases || g.aliases || g.norm_name)
                                                EXCEPT SELECT e.norm_name),
                merged_from = e.merged_from || $2, first_seen = least(e.first_seen, g.first_seen),
                last_seen = greatest(e.last_seen, g.last_seen), updated_at = now()
           FROM gone g WHERE e.tenant_id = $1 AND e.id = $3",
    )
    .bind(tenant.as_str())
    .bind(from)
    .bind(into)
    .execute(&mut *conn)
    .await?;
    let subjects: Vec<Uuid> = moved.iter().filter(|(_, s, _)| *s).map(|(id, ..)| *id).collect();
    let objects: Vec<Uuid> = moved.iter().filter(|(_, _, o)| *o).map(|(id, ..)| *id).collect();
    let after = json!({"status": "merged", "merged_into": into, "moved_subjects": subjects, "moved_objects": objects});
    record(conn, tenant, user, Target::Entity(from), "merged", Some(json!({"status": "active"})), Some(after), change)
        .await
}

/// Why an entity cannot be restored.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("no such entity")]
    NotFound,
    #[error("the entity is not merged")]
    NotMerged,
    #[error("an active entity already has its name")]
    NameTaken,
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Undoes the merge of `id`: it is active again with the relations it had.
pub async fn restore(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    id: Uuid,
    change: &Change,
) -> Result<(), RestoreError> {
    let merged: Option<(String, Option<Uuid>, String)> = sqlx::query_as(
        "SELECT status, merged_into, norm_name FROM entities WHERE tenant_id = $1 AND user_id = $2 AND id = $3",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((status, Some(into), norm_name)) = merged.clone().filter(|(s, ..)| s == "merged") else {
        return Err(if merged.is_none() { RestoreError::NotFound } else { RestoreError::NotMerged });
    };
    let _ = status;
    let after: Option<Value> = sqlx::query_scalar(
        "SELECT after FROM graph_history WHERE tenant_id = $1 AND entity_id = $2 AND action = 'merged'
          ORDER BY created_at DESC LIMIT 1",
    )
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?
    .flatten();
    let ids = |field: &str| -> Vec<Uuid> {
        after
            .as_ref()
            .and_then(|a| a.get(field))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    };
    let taken: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT FROM entities WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND norm_name = $3)",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(&norm_name)
    .fetch_one(&mut *conn)
    .await?;
    if taken {
        return Err(RestoreError::NameTaken);
    }
    sqlx::query("UPDATE relations SET subject_id = $3, updated_at = now() WHERE tenant_id = $1 AND id = ANY($2) AND subject_id = $4")
        .bind(tenant.as_str())
        .bind(ids("moved_subjects"))
        .bind(id)
        .bind(into)
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE relations SET object_id = $3, updated_at = now() WHERE tenant_id = $1 AND id = ANY($2) AND object_id = $4")
        .bind(tenant.as_str())
        .bind(ids("moved_objects"))
        .bind(id)
        .bind(into)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "UPDATE entities SET merged_from = array_remove(merged_from, $2),
                aliases = array_remove(aliases, $4), updated_at = now() WHERE tenant_id = $1 AND id = $3",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(into)
    .bind(&norm_name)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE entities SET status = 'active', merged_into = NULL, updated_at = now() WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_str())
        .bind(id)
        .execute(&mut *conn)
        .await?;
    let before = json!({"status": "merged", "merged_into": into});
    record(conn, tenant, user, Target::Entity(id), "restored", Some(before), Some(json!({"status": "active"})), change)
        .await?;
    Ok(())
}

/// Merges each entity of the user's created after `since` into its nearest older one of
/// the same type, when their names' vectors are at least `threshold` alike and the names
/// are not told apart ([`distinct`]): the older stays. Nearest neighbours only, never all
/// pairs. Returns how many were merged.
pub async fn merge_duplicates(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    since: Option<DateTime<Utc>>,
    threshold: f32,
    change: &Change,
) -> sqlx::Result<i64> {
    let new: Vec<(Uuid, String)> = sqlx::query_as(
        "SELECT id, name FROM entities
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND NOT is_user AND embedding IS NOT NULL
            AND created_at > coalesce($3, '-infinity') ORDER BY created_at",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(since)
    .fetch_all(&mut *conn)
    .await?;
    let mut merged = 0;
    for (id, name) in new {
        let near: Vec<(Uuid, String, f64)> = sqlx::query_as(
            "SELECT o.id, o.name, (1 - (o.embedding <=> e.embedding))::float8 FROM entities e
               JOIN entities o ON o.tenant_id = e.tenant_id AND o.user_id = e.user_id AND o.type = e.type
                              AND o.status = 'active' AND o.id <> e.id AND o.embedding_dims = e.embedding_dims
                              AND o.first_seen <= e.first_seen
              WHERE e.tenant_id = $1 AND e.id = $2 AND e.status = 'active'
              ORDER BY o.embedding <=> e.embedding LIMIT 3",
        )
        .bind(tenant.as_str())
        .bind(id)
        .fetch_all(&mut *conn)
        .await?;
        if let Some((into, ..)) =
            near.into_iter().find(|(_, other, similarity)| *similarity >= threshold as f64 && !distinct(&name, other))
        {
            merge(conn, tenant, user, id, into, change).await?;
            merged += 1;
        }
    }
    Ok(merged)
}

/// Deletes the user's graph; returns the rows removed from `graph_history`, `relations`
/// and `entities`.
pub async fn forget_user(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
) -> sqlx::Result<[(&'static str, u64); 3]> {
    crate::db::delete_user_rows(conn, tenant, user, ["graph_history", "relations", "entities"]).await
}

/// Hard-deletes the user's relations superseded before `before` and entities merged
/// before it (with their history) that no relation names any more.
pub async fn purge(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    before: DateTime<Utc>,
) -> sqlx::Result<i64> {
    let (relations, entities): (i64, i64) = sqlx::query_as(
        "WITH gone AS (
            DELETE FROM relations WHERE tenant_id = $1 AND user_id = $2 AND status IN ('superseded', 'deleted')
               AND updated_at < $3 RETURNING id
         ), unnamed AS (
            DELETE FROM entities e WHERE e.tenant_id = $1 AND e.user_id = $2 AND e.status IN ('merged', 'deleted')
               AND e.updated_at < $3
               AND NOT EXISTS (SELECT FROM relations r WHERE r.tenant_id = $1 AND (r.subject_id = e.id OR r.object_id = e.id)
                                  AND r.id NOT IN (SELECT id FROM gone))
            RETURNING id
         ), history AS (
            DELETE FROM graph_history WHERE tenant_id = $1
               AND (relation_id IN (SELECT id FROM gone) OR entity_id IN (SELECT id FROM unnamed)) RETURNING 1
         )
         SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM unnamed) + 0 * (SELECT count(*) FROM history)",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(before)
    .fetch_one(conn)
    .await?;
    Ok(relations + entities)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_differ_in_a_letter_or_technology_stay_apart() {
        assert!(distinct("Project A", "Project B"));
        assert!(distinct("PostgreSQL", "MySQL"));
        assert!(distinct("plan 2", "plan 3"));
        assert!(!distinct("payment module", "the payment module"));
        assert!(!distinct("checkout service", "checkout services"));
    }
}

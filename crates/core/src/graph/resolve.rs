//! Resolving a mention to an entity: known by its normal form or an alias, or similar
//! enough by embedding within its type, or new; the user's own entity, and the name
//! they give it.

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::PgConnection;
use uuid::Uuid;

use super::Action;
use super::EntityType;
use super::merge::merge;
use super::store::{Target, Writer, Written, record};
use crate::memories::Change;
use engram_base::domain::Owner;
use engram_base::models::Embedding;
use engram_language::relations::mention::Mention;
use engram_language::relations::names::{distinct, normalise};

/// Entities' vectors, made from their names (for an import).
pub const VECTORS: engram_base::stored_vectors::VectorColumn = engram_base::stored_vectors::VectorColumn {
    name: "entities",
    table: "entities",
    key: "id",
    key_type: "uuid",
    text: || "name",
    storage: "halfvec",
    filter: "true",
};

impl Writer<'_> {
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
            return sqlx::query_scalar!(
                "SELECT id FROM entities WHERE tenant_id = $1 AND user_id = $2 AND is_user AND status = 'active'",
                self.tenant.as_str(),
                self.user.as_str()
            )
            .fetch_optional(conn)
            .await;
        }
        let names = self.aliases.all_names_of(&mention.name);
        let mut names = names;
        let own = normalise(&mention.name);
        if !names.contains(&own) {
            names.push(own);
        }
        sqlx::query_scalar!(
            "SELECT id FROM entities
              WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND (norm_name = ANY($3) OR aliases && $3)
              ORDER BY is_user DESC, first_seen LIMIT 1",
            self.tenant.as_str(),
            self.user.as_str(),
            &names
        )
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
        record(
            conn,
            Owner::new(self.tenant, self.user),
            Target::Entity(id),
            Action::Created,
            None,
            Some(after),
            &self.change,
        )
        .await?;
        Ok(id)
    }

    /// Seen again: `last_seen` moves on and a new spelling becomes an alias.
    async fn seen(&self, conn: &mut PgConnection, id: Uuid, spelled: &str, at: DateTime<Utc>) -> sqlx::Result<()> {
        sqlx::query!(
            "UPDATE entities SET last_seen = greatest(last_seen, $3), updated_at = now(),
                    aliases = CASE WHEN $4 = norm_name OR $4 = ANY(aliases) THEN aliases ELSE aliases || $4 END
              WHERE tenant_id = $1 AND id = $2",
            self.tenant.as_str(),
            id,
            at,
            normalise(spelled)
        )
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
        sqlx::query!(
            "UPDATE entities SET last_seen = greatest(last_seen, $3) WHERE tenant_id = $1 AND id = $2",
            self.tenant.as_str(),
            id,
            at
        )
        .execute(conn)
        .await?;
        Ok(())
    }

    /// The user said their name: their entity takes it, and an entity already known by
    /// it (someone mentioned them before) is merged into theirs.
    pub(super) async fn name_user(
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
        let before: Option<(String, Vec<String>)> = sqlx::query!(
            "SELECT name, aliases FROM entities WHERE tenant_id = $1 AND id = $2",
            self.tenant.as_str(),
            me
        )
        .map(|r| (r.name, r.aliases))
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
        record(
            conn,
            Owner::new(self.tenant, self.user),
            Target::Entity(me),
            Action::Updated,
            Some(before),
            Some(after),
            &change,
        )
        .await?;
        Ok(())
    }
}

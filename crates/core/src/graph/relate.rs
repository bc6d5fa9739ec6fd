//! Stating a relation: said again, it gains the turn as a source; new, it is stored with
//! its vector and ends the edges it replaces.

use serde_json::json;
use sqlx::PgConnection;
use uuid::Uuid;

use super::Action;
use super::store::{Said, Target, Writer, Written, record};
use super::{Exclusive, Predicate};
use crate::memories::Change;
use engram_base::domain::Owner;
use engram_language::technologies::technologies;

/// The turns a relation keeps as its sources: the latest ones. The relations' edge index
/// holds them, and a B-tree index row is at most about 2.7 kB, so a relation said in
/// hundreds of turns cannot keep them all.
const MAX_SOURCES: i32 = 64;

impl Writer<'_> {
    /// States `subject predicate object`: said again, it gains the turn as a source; new,
    /// it ends the edges it replaces (see [`Predicate::exclusive`]) and `ended`'s.
    #[allow(
        clippy::too_many_arguments,
        reason = "a relation's three parts, the turn that says it and the edge it ends"
    )]
    pub(super) async fn relate(
        &self,
        conn: &mut PgConnection,
        said: &Said<'_>,
        subject: Uuid,
        predicate: Predicate,
        object: Uuid,
        ended: Option<Uuid>,
        written: &mut Written,
    ) -> anyhow::Result<()> {
        let same: Option<Uuid> = sqlx::query_scalar!(
            "SELECT id FROM relations
              WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND predicate = $3
                AND ((subject_id = $4 AND object_id = $5) OR ($6 AND subject_id = $5 AND object_id = $4))
              LIMIT 1",
            self.tenant.as_str(),
            self.user.as_str(),
            predicate.as_str(),
            subject,
            object,
            predicate.symmetric()
        )
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(id) = same {
            sqlx::query!("UPDATE relations SET updated_at = now(),
                        source_event_ids = CASE WHEN $3 = ANY(source_event_ids) THEN source_event_ids
                                                ELSE (source_event_ids || $3)[greatest(1, cardinality(source_event_ids) + 2 - $4):] END
                  WHERE tenant_id = $1 AND id = $2", self.tenant.as_str(), id, said.event_id, MAX_SOURCES)
            .execute(&mut *conn)
            .await?;
            written.relations_refreshed += 1;
            return Ok(());
        }
        let names: Vec<(Uuid, String)> = sqlx::query!(
            "SELECT id, name FROM entities WHERE tenant_id = $1 AND id = ANY($2)",
            self.tenant.as_str(),
            &[subject, object][..]
        )
        .map(|r| (r.id, r.name))
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
        record(
            conn,
            Owner::new(self.tenant, self.user),
            Target::Relation(id),
            Action::Created,
            None,
            Some(after),
            &self.change,
        )
        .await?;
        written.relations_created += 1;
        for old in replaced {
            let ended = sqlx::query!(
                "UPDATE relations SET status = 'superseded', valid_to = $3, expired_at = now(), superseded_by = $4,
                        updated_at = now()
                  WHERE tenant_id = $1 AND id = $2 AND status = 'active'",
                self.tenant.as_str(),
                old,
                said.at,
                id
            )
            .execute(&mut *conn)
            .await?;
            if ended.rows_affected() == 1 {
                let change = Change { reason: "a new relation replaces it".into(), ..self.change.clone() };
                let after = json!({"status": "superseded", "valid_to": said.at, "superseded_by": id});
                record(
                    conn,
                    Owner::new(self.tenant, self.user),
                    Target::Relation(old),
                    Action::Superseded,
                    None,
                    Some(after),
                    &change,
                )
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
        let rows: Vec<(Uuid, Uuid, Uuid, String, String)> = sqlx::query!(
            "SELECT r.id, r.subject_id, r.object_id, o.name, o.type FROM relations r
               JOIN entities o ON o.tenant_id = r.tenant_id AND o.id = r.object_id
              WHERE r.tenant_id = $1 AND r.user_id = $2 AND r.status = 'active' AND r.predicate = $3
                AND (r.subject_id = $4 OR r.object_id = $5)",
            self.tenant.as_str(),
            self.user.as_str(),
            predicate.as_str(),
            subject,
            object
        )
        .map(|r| (r.id, r.subject_id, r.object_id, r.name, r.r#type))
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
fn match_text(sentence: &str, subject: &str, predicate: Predicate, object: &str) -> String {
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

/// Makes the vectors of the user's relations `ids` again from their sentence as it is
/// now (after the `redact` job rewrote it); returns how many took one.
pub async fn remake_vectors(
    conn: &mut PgConnection,
    tenant: &engram_base::domain::TenantId,
    user: &engram_base::domain::UserId,
    ids: &[Uuid],
    embedder: &engram_base::models::Embedder,
) -> anyhow::Result<u64> {
    let rows: Vec<(Uuid, String, String, String, String)> = sqlx::query!(
        "SELECT r.id, r.fact, s.name AS subject, r.predicate, o.name AS object FROM relations r
           JOIN entities s ON s.tenant_id = r.tenant_id AND s.id = r.subject_id
           JOIN entities o ON o.tenant_id = r.tenant_id AND o.id = r.object_id
          WHERE r.tenant_id = $1 AND r.user_id = $2 AND r.id = ANY($3)",
        tenant.as_str(),
        user.as_str(),
        ids
    )
    .map(|r| (r.id, r.fact, r.subject, r.predicate, r.object))
    .fetch_all(&mut *conn)
    .await?;
    let (ids, texts): (Vec<Uuid>, Vec<String>) = rows
        .into_iter()
        .filter_map(|(id, fact, subject, predicate, object)| {
            Predicate::parse(&predicate).map(|p| (id, match_text(&fact, &subject, p, &object)))
        })
        .unzip();
    if ids.is_empty() {
        return Ok(0);
    }
    let vectors = embedder.embed(&texts).await?;
    let dims = vectors.first().map_or(0, |v| v.dims());
    let sql = format!(
        "UPDATE relations r SET embedding = v.embedding::halfvec({dims}), embedding_model = $5, embedding_dims = {dims}
           FROM unnest($3::uuid[], $4::vector[]) AS v(id, embedding)
          WHERE r.tenant_id = $1 AND r.user_id = $2 AND r.id = v.id"
    );
    let vectors: Vec<pgvector::Vector> = vectors.iter().map(|v| v.to_pgvector()).collect();
    let done = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(tenant.as_str())
        .bind(user.as_str())
        .bind(&ids)
        .bind(&vectors)
        .bind(embedder.model())
        .execute(conn)
        .await?;
    Ok(done.rows_affected())
}

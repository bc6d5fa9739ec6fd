//! The graph a lookup walks, one row per user (`user_graphs`, this module its only
//! writer): the user's active entities and relations, with their vectors in 8 bits, in
//! one value a lookup reads whole. Without it a lookup reads the user's edges from an
//! index, then each relation it reached from the heap, about 200 buffers scattered over
//! the table; the row is a few contiguous pages.
//!
//! Every flow that changes a user's entities or relations ends with [`refresh`] in its
//! transaction (extraction, `dedup`'s merges, an admin's restore); forgetting the user
//! deletes the row with the rest of their graph ([`super::store::forget_user`]). A user
//! with more than `graph.scan_limit` relations or entities has none, and is walked in the
//! database, as is a lookup `as_of` a past time.
//!
//! The value: a version byte, then the entities and the relations, each field in order,
//! integers little-endian, a string as its length (u32) and bytes, a vector as its
//! dimensions (u16, 0 for none) and one byte per dimension: the value scaled so that the
//! largest magnitude is 127, which keeps a cosine similarity within about 0.005.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Row};
use uuid::Uuid;

use crate::domain::{TenantId, UserId};

const VERSION: u8 = 1;

/// An active entity as a lookup finds it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Entity {
    pub id: Uuid,
    pub name: String,
    pub norm_name: String,
    pub person: bool,
    pub aliases: Vec<String>,
    #[sqlx(try_from = "Option<pgvector::Vector>")]
    pub vector: Vector,
}

/// An active relation as a lookup walks and scores it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Relation {
    pub id: Uuid,
    pub subject_id: Uuid,
    pub object_id: Uuid,
    pub predicate: String,
    pub fact: String,
    pub valid_from: DateTime<Utc>,
    pub valid_to: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
    pub source_event_ids: Vec<Uuid>,
    #[sqlx(try_from = "Option<pgvector::Vector>")]
    pub vector: Vector,
}

/// A vector in 8 bits per dimension (empty without one).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vector(Vec<i8>);

impl From<Option<pgvector::Vector>> for Vector {
    fn from(v: Option<pgvector::Vector>) -> Self {
        v.map_or_else(Self::default, |v| Self::quantise(v.as_slice()))
    }
}

impl Vector {
    pub fn quantise(values: &[f32]) -> Self {
        let largest = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        if largest == 0.0 || !largest.is_finite() {
            return Self(vec![0; values.len()]);
        }
        Self(values.iter().map(|v| (v * 127.0 / largest).round() as i8).collect())
    }

    pub fn dims(&self) -> usize {
        self.0.len()
    }

    /// The cosine similarity to `query` (0 without a vector, or of other dimensions).
    pub fn cosine(&self, query: &[f32]) -> f64 {
        if self.0.len() != query.len() || query.is_empty() {
            return 0.0;
        }
        let (mut dot, mut own, mut theirs) = (0.0f32, 0.0f32, 0.0f32);
        for (a, b) in self.0.iter().zip(query) {
            let a = f32::from(*a);
            dot += a * b;
            own += a * a;
            theirs += b * b;
        }
        match own * theirs {
            0.0 => 0.0,
            norms => f64::from(dot / norms.sqrt()),
        }
    }
}

/// A user's graph as a lookup reads it.
#[derive(Debug, Default, PartialEq)]
pub struct UserGraph {
    pub entities: Vec<Entity>,
    pub relations: Vec<Relation>,
}

impl UserGraph {
    /// Whether it holds at most `limit` relations and entities (`graph.scan_limit`:
    /// written under another configuration, it may not).
    pub fn fits(&self, limit: i64) -> bool {
        self.entities.len().max(self.relations.len()) as i64 <= limit
    }

    /// The entities' names by id.
    pub fn names(&self) -> HashMap<Uuid, &str> {
        self.entities.iter().map(|e| (e.id, e.name.as_str())).collect()
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Out(vec![VERSION]);
        out.u32(self.entities.len() as u32);
        for e in &self.entities {
            out.uuid(e.id);
            out.str(&e.name);
            out.str(&e.norm_name);
            out.0.push(u8::from(e.person));
            out.u32(e.aliases.len() as u32);
            e.aliases.iter().for_each(|a| out.str(a));
            out.vector(&e.vector);
        }
        out.u32(self.relations.len() as u32);
        for r in &self.relations {
            for id in [r.id, r.subject_id, r.object_id] {
                out.uuid(id);
            }
            out.str(&r.predicate);
            out.str(&r.fact);
            out.time(Some(r.valid_from));
            out.time(r.valid_to);
            out.time(Some(r.updated_at));
            out.u32(r.source_event_ids.len() as u32);
            r.source_event_ids.iter().for_each(|id| out.uuid(*id));
            out.vector(&r.vector);
        }
        out.0
    }

    /// `None` for a value this version does not read, or one cut short.
    fn decode(bytes: &[u8]) -> Option<Self> {
        let mut at = In(bytes);
        if at.take(1)?[0] != VERSION {
            return None;
        }
        let mut graph = Self::default();
        for _ in 0..at.u32()? {
            let (id, name, norm_name) = (at.uuid()?, at.str()?, at.str()?);
            let person = at.take(1)?[0] == 1;
            let aliases = (0..at.u32()?).map(|_| at.str()).collect::<Option<_>>()?;
            graph.entities.push(Entity { id, name, norm_name, person, aliases, vector: at.vector()? });
        }
        for _ in 0..at.u32()? {
            let (id, subject_id, object_id) = (at.uuid()?, at.uuid()?, at.uuid()?);
            let (predicate, fact) = (at.str()?, at.str()?);
            let (valid_from, valid_to, updated_at) = (at.time()??, at.time()?, at.time()??);
            let source_event_ids = (0..at.u32()?).map(|_| at.uuid()).collect::<Option<_>>()?;
            let vector = at.vector()?;
            graph.relations.push(Relation {
                id,
                subject_id,
                object_id,
                predicate,
                fact,
                valid_from,
                valid_to,
                updated_at,
                source_event_ids,
                vector,
            });
        }
        at.0.is_empty().then_some(graph)
    }
}

struct Out(Vec<u8>);

impl Out {
    fn u32(&mut self, n: u32) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn uuid(&mut self, id: Uuid) {
        self.0.extend_from_slice(id.as_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    /// Microseconds since 1970, `i64::MIN` for none.
    fn time(&mut self, t: Option<DateTime<Utc>>) {
        self.0.extend_from_slice(&t.map_or(i64::MIN, |t| t.timestamp_micros()).to_le_bytes());
    }
    fn vector(&mut self, v: &Vector) {
        self.0.extend_from_slice(&(v.0.len() as u16).to_le_bytes());
        self.0.extend(v.0.iter().map(|x| *x as u8));
    }
}

struct In<'a>(&'a [u8]);

impl<'a> In<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn uuid(&mut self) -> Option<Uuid> {
        Uuid::from_slice(self.take(16)?).ok()
    }
    fn str(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
    /// `Some(None)` for none.
    fn time(&mut self) -> Option<Option<DateTime<Utc>>> {
        match i64::from_le_bytes(self.take(8)?.try_into().ok()?) {
            i64::MIN => Some(None),
            micros => DateTime::from_timestamp_micros(micros).map(Some),
        }
    }
    fn vector(&mut self) -> Option<Vector> {
        let n = u16::from_le_bytes(self.take(2)?.try_into().ok()?) as usize;
        Some(Vector(self.take(n)?.iter().map(|x| *x as i8).collect()))
    }
}

/// The user's graph, if it has one that this version reads.
pub async fn read(conn: &mut PgConnection, tenant: &TenantId, user: &UserId) -> sqlx::Result<Option<UserGraph>> {
    let row = sqlx::query("SELECT body FROM user_graphs WHERE tenant_id = $1 AND user_id = $2")
        .bind(tenant.as_str())
        .bind(user.as_str())
        .fetch_optional(conn)
        .await?;
    // Read where it arrived, not copied first.
    let body: Option<&[u8]> = row.as_ref().map(|row| row.try_get(0)).transpose()?;
    Ok(body.and_then(UserGraph::decode))
}

/// Writes the user's graph row from their entities and relations as they are in this
/// transaction; removes it when they have none, or more than `limit` of either.
pub async fn refresh(conn: &mut PgConnection, tenant: &TenantId, user: &UserId, limit: i64) -> sqlx::Result<()> {
    // Counted first, through the indexes: a user over the limit would otherwise have up to
    // `limit` rows and their vectors read at every change, only for the row to be deleted.
    let (entity_count, relation_count): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM (SELECT FROM entities
                  WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' LIMIT $3) e),
                (SELECT count(*) FROM (SELECT FROM relations
                  WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' LIMIT $3) r)",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(limit + 1)
    .fetch_one(&mut *conn)
    .await?;
    let over = |n: i64| n > limit;
    if relation_count == 0 || over(entity_count) || over(relation_count) {
        return forget(conn, tenant, user).await;
    }
    let entities: Vec<Entity> = sqlx::query_as(
        "SELECT id, name, norm_name, type = 'person' AS person, aliases, embedding::vector AS vector FROM entities
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' ORDER BY id LIMIT $3",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(limit + 1)
    .fetch_all(&mut *conn)
    .await?;
    let relations: Vec<Relation> = sqlx::query_as(
        "SELECT id, subject_id, object_id, predicate, fact, valid_from, valid_to, updated_at, source_event_ids,
                embedding::vector AS vector
           FROM relations WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' ORDER BY id LIMIT $3",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(limit + 1)
    .fetch_all(&mut *conn)
    .await?;
    // Changed since the count by another transaction: the same rule.
    if relations.is_empty() || over(entities.len() as i64) || over(relations.len() as i64) {
        forget(conn, tenant, user).await?;
        return Ok(());
    }
    let graph = UserGraph { entities, relations };
    sqlx::query(
        "INSERT INTO user_graphs (tenant_id, user_id, body) VALUES ($1, $2, $3)
         ON CONFLICT (tenant_id, user_id) DO UPDATE SET body = EXCLUDED.body, built_at = now()",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .bind(graph.encode())
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes the user's graph row.
pub async fn forget(conn: &mut PgConnection, tenant: &TenantId, user: &UserId) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM user_graphs WHERE tenant_id = $1 AND user_id = $2")
        .bind(tenant.as_str())
        .bind(user.as_str())
        .execute(conn)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_graph_reads_back_as_written_and_a_cut_one_not_at_all() {
        let at = DateTime::from_timestamp_micros(1_780_000_000_123_456).unwrap();
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let graph = UserGraph {
            entities: vec![
                Entity {
                    id: a,
                    name: "张伟".into(),
                    norm_name: "张伟".into(),
                    person: true,
                    aliases: vec!["zhang wei".into()],
                    vector: Vector::quantise(&[0.5, -1.0, 0.25]),
                },
                Entity {
                    id: b,
                    name: "PostgreSQL".into(),
                    norm_name: "postgresql".into(),
                    person: false,
                    aliases: vec![],
                    vector: Vector::default(),
                },
            ],
            relations: vec![Relation {
                id: Uuid::from_u128(3),
                subject_id: a,
                object_id: b,
                predicate: "uses".into(),
                fact: "张伟用 PostgreSQL".into(),
                valid_from: at,
                valid_to: None,
                updated_at: at,
                source_event_ids: vec![Uuid::from_u128(4)],
                vector: Vector::quantise(&[0.1, 0.2, 0.3]),
            }],
        };
        let bytes = graph.encode();
        assert_eq!(UserGraph::decode(&bytes), Some(graph));
        assert_eq!(UserGraph::decode(&bytes[..bytes.len() - 1]), None);
        let mut other = bytes.clone();
        other[0] = VERSION + 1;
        assert_eq!(UserGraph::decode(&other), None, "a value of another version is not read");
    }

    #[test]
    fn an_eight_bit_vector_keeps_the_cosine() {
        let v: Vec<f32> = (0..512).map(|i| ((i * 37 % 101) as f32 - 50.0) / 61.0).collect();
        let q: Vec<f32> = (0..512).map(|i| ((i * 53 % 97) as f32 - 48.0) / 59.0 + v[i] * 0.7).collect();
        let exact = crate::models::Embedding::new(v.clone(), 512)
            .unwrap()
            .cosine(&crate::models::Embedding::new(q.clone(), 512).unwrap());
        let eight = Vector::quantise(&v).cosine(&q);
        assert!((eight - f64::from(exact)).abs() < 0.005, "{eight} against {exact}");
        assert_eq!(Vector::default().cosine(&q), 0.0);
        assert_eq!(Vector::quantise(&v).cosine(&q[..511]), 0.0, "other dimensions");
    }
}

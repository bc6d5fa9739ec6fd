//! The graph row's value: a version byte, then the entities and the relations, each
//! field in order, integers little-endian, a string as its length (u32) and bytes, a
//! vector as its dimensions (u16, 0 for none) and one byte per dimension: the value
//! scaled so that the largest magnitude is 127, which keeps a cosine similarity within
//! about 0.005. Entities and relations are written in id order, which a lookup searches
//! by. A lookup reads the value in place ([`UserGraph::decode`] copies nothing).

use chrono::{DateTime, Utc};
use uuid::Uuid;

const VERSION: u8 = 1;

/// An active entity as a lookup finds it, borrowed from the value it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct Entity<'a> {
    pub id: Uuid,
    pub name: &'a str,
    pub norm_name: &'a str,
    pub person: bool,
    pub aliases: Vec<&'a str>,
    pub vector: Vector<'a>,
}

/// An active relation as a lookup walks and scores it, borrowed likewise.
#[derive(Debug, Clone, PartialEq)]
pub struct Relation<'a> {
    pub id: Uuid,
    pub subject_id: Uuid,
    pub object_id: Uuid,
    pub predicate: &'a str,
    pub fact: &'a str,
    pub valid_from: DateTime<Utc>,
    pub valid_to: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
    pub source_event_ids: Ids<'a>,
    pub vector: Vector<'a>,
}

/// Event ids, 16 bytes each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ids<'a>(pub(super) &'a [u8]);

impl Ids<'_> {
    pub fn iter(&self) -> impl Iterator<Item = Uuid> + '_ {
        self.0.chunks_exact(16).map(|id| Uuid::from_slice(id).unwrap_or_default())
    }
}

/// A vector in 8 bits per dimension, each byte a signed value (empty without one).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Vector<'a>(pub(super) &'a [u8]);

/// Values in 8 bits, scaled so that the largest magnitude is 127.
pub(super) fn quantise(values: &[f32]) -> Vec<u8> {
    let largest = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    if largest == 0.0 || !largest.is_finite() {
        return vec![0; values.len()];
    }
    values.iter().map(|v| (v * 127.0 / largest).round() as i8 as u8).collect()
}

impl Vector<'_> {
    pub fn dims(&self) -> usize {
        self.0.len()
    }

    /// The cosine similarity to `query` (0 without a vector, or of other dimensions).
    pub fn cosine(&self, query: &[f32]) -> f64 {
        if self.0.len() != query.len() || query.is_empty() {
            return 0.0;
        }
        // Sixteen running sums, one per lane, so that the loop is vectorised.
        const LANES: usize = 16;
        let (mut dot, mut own, mut theirs) = ([0.0f32; LANES], [0.0f32; LANES], [0.0f32; LANES]);
        let (whole, rest) = (self.0.chunks_exact(LANES), query.chunks_exact(LANES));
        let tail = whole.remainder().iter().zip(rest.remainder());
        for (a, b) in whole.zip(rest) {
            for lane in 0..LANES {
                let a = f32::from(a[lane] as i8);
                dot[lane] += a * b[lane];
                own[lane] += a * a;
                theirs[lane] += b[lane] * b[lane];
            }
        }
        for (a, b) in tail {
            let a = f32::from(*a as i8);
            dot[0] += a * b;
            own[0] += a * a;
            theirs[0] += b * b;
        }
        let sum = |lanes: [f32; LANES]| lanes.iter().sum::<f32>();
        match sum(own) * sum(theirs) {
            0.0 => 0.0,
            norms => f64::from(sum(dot) / norms.sqrt()),
        }
    }
}

/// A user's graph as a lookup reads it.
#[derive(Debug, Default, PartialEq)]
pub struct UserGraph<'a> {
    pub entities: Vec<Entity<'a>>,
    pub relations: Vec<Relation<'a>>,
}

impl<'a> UserGraph<'a> {
    /// Whether it holds at most `limit` relations and entities (`graph.scan_limit`:
    /// written under another configuration, it may not).
    pub fn fits(&self, limit: i64) -> bool {
        self.entities.len().max(self.relations.len()) as i64 <= limit
    }

    /// The name of the entity `id` (read by binary search: entities are in id order).
    pub fn name(&self, id: Uuid) -> Option<&'a str> {
        self.entities.binary_search_by_key(&id, |e| e.id).ok().map(|at| self.entities[at].name)
    }

    /// The relation `id` (relations are in id order too).
    pub fn relation(&self, id: Uuid) -> Option<&Relation<'a>> {
        self.relations.binary_search_by_key(&id, |r| r.id).ok().map(|at| &self.relations[at])
    }

    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = Out(vec![VERSION]);
        out.u32(self.entities.len() as u32);
        for e in &self.entities {
            out.uuid(e.id);
            out.str(e.name);
            out.str(e.norm_name);
            out.0.push(u8::from(e.person));
            out.u32(e.aliases.len() as u32);
            e.aliases.iter().for_each(|a| out.str(a));
            out.vector(e.vector);
        }
        out.u32(self.relations.len() as u32);
        for r in &self.relations {
            for id in [r.id, r.subject_id, r.object_id] {
                out.uuid(id);
            }
            out.str(r.predicate);
            out.str(r.fact);
            out.time(Some(r.valid_from));
            out.time(r.valid_to);
            out.time(Some(r.updated_at));
            out.u32((r.source_event_ids.0.len() / 16) as u32);
            out.0.extend_from_slice(r.source_event_ids.0);
            out.vector(r.vector);
        }
        out.0
    }

    /// `None` for a value this version does not read, or one cut short. Nothing is
    /// copied: the graph borrows its names, sentences, ids and vectors from `bytes`.
    pub(super) fn decode(bytes: &'a [u8]) -> Option<Self> {
        let mut at = In(bytes);
        if at.take(1)?[0] != VERSION {
            return None;
        }
        let mut graph = Self::default();
        let entities = at.u32()? as usize;
        graph.entities.reserve(entities.min(bytes.len()));
        for _ in 0..entities {
            let (id, name, norm_name) = (at.uuid()?, at.str()?, at.str()?);
            let person = at.take(1)?[0] == 1;
            let aliases = (0..at.u32()?).map(|_| at.str()).collect::<Option<_>>()?;
            graph.entities.push(Entity { id, name, norm_name, person, aliases, vector: at.vector()? });
        }
        let relations = at.u32()? as usize;
        graph.relations.reserve(relations.min(bytes.len()));
        for _ in 0..relations {
            let (id, subject_id, object_id) = (at.uuid()?, at.uuid()?, at.uuid()?);
            let (predicate, fact) = (at.str()?, at.str()?);
            let (valid_from, valid_to, updated_at) = (at.time()??, at.time()?, at.time()??);
            let sources = at.u32()? as usize;
            let source_event_ids = Ids(at.take(sources.checked_mul(16)?)?);
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
        // Written in id order; a value that is not is put in order rather than misread.
        if !graph.entities.is_sorted_by_key(|e| e.id) {
            graph.entities.sort_by_key(|e| e.id);
        }
        if !graph.relations.is_sorted_by_key(|r| r.id) {
            graph.relations.sort_by_key(|r| r.id);
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
    fn vector(&mut self, v: Vector) {
        self.0.extend_from_slice(&(v.0.len() as u16).to_le_bytes());
        self.0.extend_from_slice(v.0);
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
    fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }
    /// `Some(None)` for none.
    fn time(&mut self) -> Option<Option<DateTime<Utc>>> {
        match i64::from_le_bytes(self.take(8)?.try_into().ok()?) {
            i64::MIN => Some(None),
            micros => DateTime::from_timestamp_micros(micros).map(Some),
        }
    }
    fn vector(&mut self) -> Option<Vector<'a>> {
        let n = u16::from_le_bytes(self.take(2)?.try_into().ok()?) as usize;
        Some(Vector(self.take(n)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_graph_reads_back_as_written_in_id_order_and_a_cut_one_not_at_all() {
        let at = DateTime::from_timestamp_micros(1_780_000_000_123_456).unwrap();
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let (person, fact) = (quantise(&[0.5, -1.0, 0.25]), quantise(&[0.1, 0.2, 0.3]));
        let source = Uuid::from_u128(4);
        let graph = UserGraph {
            entities: vec![
                Entity {
                    id: a,
                    name: "张伟",
                    norm_name: "张伟",
                    person: true,
                    aliases: vec!["zhang wei"],
                    vector: Vector(&person),
                },
                Entity {
                    id: b,
                    name: "PostgreSQL",
                    norm_name: "postgresql",
                    person: false,
                    aliases: vec![],
                    vector: Vector::default(),
                },
            ],
            relations: vec![Relation {
                id: Uuid::from_u128(3),
                subject_id: a,
                object_id: b,
                predicate: "uses",
                fact: "张伟用 PostgreSQL",
                valid_from: at,
                valid_to: None,
                updated_at: at,
                source_event_ids: Ids(source.as_bytes()),
                vector: Vector(&fact),
            }],
        };
        let bytes = graph.encode();
        let read = UserGraph::decode(&bytes);
        assert_eq!(read.as_ref(), Some(&graph));
        assert_eq!(read.unwrap().relations[0].source_event_ids.iter().collect::<Vec<_>>(), [source]);
        assert_eq!(UserGraph::decode(&bytes[..bytes.len() - 1]), None);
        let reversed = UserGraph { entities: graph.entities.iter().rev().cloned().collect(), ..graph };
        let written = reversed.encode();
        let read = UserGraph::decode(&written).unwrap();
        assert_eq!(read.entities.iter().map(|e| e.id).collect::<Vec<_>>(), [a, b], "read in id order");
        assert_eq!((read.name(b), read.name(Uuid::from_u128(9))), (Some("PostgreSQL"), None));
        assert_eq!(read.relation(Uuid::from_u128(3)).map(|r| r.fact), Some("张伟用 PostgreSQL"));
        let mut other = bytes.clone();
        other[0] = VERSION + 1;
        assert_eq!(UserGraph::decode(&other), None, "a value of another version is not read");
    }

    #[test]
    fn an_eight_bit_vector_keeps_the_cosine() {
        for dims in [512, 384, 7] {
            let v: Vec<f32> = (0..dims).map(|i| ((i * 37 % 101) as f32 - 50.0) / 61.0).collect();
            let q: Vec<f32> = (0..dims).map(|i| ((i * 53 % 97) as f32 - 48.0) / 59.0 + v[i] * 0.7).collect();
            let exact = engram_base::models::Embedding::new(v.clone(), dims)
                .unwrap()
                .cosine(&engram_base::models::Embedding::new(q.clone(), dims).unwrap());
            let bytes = quantise(&v);
            let eight = Vector(&bytes).cosine(&q);
            assert!((eight - f64::from(exact)).abs() < 0.005, "{dims} dimensions: {eight} against {exact}");
            assert_eq!(Vector(&bytes).cosine(&q[..dims - 1]), 0.0, "other dimensions");
        }
        assert_eq!(Vector::default().cosine(&[1.0, 2.0]), 0.0);
    }
}

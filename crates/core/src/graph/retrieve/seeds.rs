//! Where a walk starts: the entities a query names (by name, alias, trigram or
//! embedding) and those of the best results' turns, found in the user's graph row or,
//! without one, in the tables.

use std::collections::HashMap;

use sqlx::PgConnection;
use uuid::Uuid;

use crate::graph::GraphSettings;
use crate::graph::snapshot::{Entity, UserGraph};
use engram_base::db::lend::{Held, LendingPool};
use engram_base::domain::Owner;
use engram_base::models::Embedding;
use engram_language::relations::names::{Aliases, normalise, similarity, trigrams};

/// An entity a walk starts from, and how surely the query means it (0..1).
#[derive(Debug, Clone, Copy)]
pub struct Seed {
    pub entity: Uuid,
    pub weight: f64,
}

/// Where a lookup's walk starts.
#[derive(Debug, Default)]
pub struct Start {
    pub seeds: Vec<Seed>,
    /// The names (normal forms, aliases, first names) of the seeds named in full.
    pub names: Vec<String>,
}

/// The query without the names (and aliases) of the entities it names: what it asks of them.
pub fn residual(query: &str, names: &[String]) -> String {
    let mut rest = query.to_lowercase();
    let mut names: Vec<&String> = names.iter().filter(|n| !n.is_empty()).collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.chars().count()));
    for name in names {
        rest = rest.replace(&format!("{name}'s"), " ").replace(name.as_str(), " ");
    }
    let rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
    if rest.chars().filter(|c| c.is_alphanumeric()).count() < 2 { query.to_owned() } else { rest }
}

/// The candidate names in a query: its words and runs of up to three words, every two to
/// six characters of unspaced (CJK) text, and the canonical names of the aliases among them.
pub fn names_in(query: &str, aliases: &Aliases) -> Vec<String> {
    let lower = query.to_lowercase().replace('’', "'");
    let mut names: Vec<String> = Vec::new();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '+' | '#' | '.' | '-' | '\'')))
        .map(|w| w.strip_suffix("'s").unwrap_or(w).trim_matches(['.', '\'', '-']))
        .filter(|w| !w.is_empty())
        .collect();
    for n in 1..=3 {
        for window in words.windows(n) {
            names.push(window.join(" "));
        }
    }
    let han: Vec<char> = lower.chars().collect();
    let mut run = Vec::new();
    for c in han.iter().copied().chain(std::iter::once(' ')) {
        if ('\u{4e00}'..='\u{9fff}').contains(&c) {
            run.push(c);
            continue;
        }
        for len in 2..=6.min(run.len()) {
            for start in 0..=run.len() - len {
                names.push(run[start..start + len].iter().collect());
            }
        }
        run.clear();
    }
    let canonical: Vec<String> = names.iter().filter_map(|n| aliases.canonical(n)).map(normalise).collect();
    names.extend(canonical);
    names.sort();
    names.dedup();
    names
}

/// SQL: the three entities nearest the query vector `$3` of `dims` dimensions.
fn nearest(dims: usize) -> String {
    format!(
        "SELECT id, (1 - (embedding::halfvec({dims}) <=> $3::halfvec({dims})))::float8 AS s FROM entities
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND embedding_dims = {dims}
          ORDER BY embedding::halfvec({dims}) <=> $3::halfvec({dims}) LIMIT 3"
    )
}

/// The entities a lookup starts from (see the module documentation), read from the
/// database on `conn` (plans cached). A seed found a surer way stops the less sure ones
/// (a name in full, a first name, a misspelt name, the query's meaning, in that order): a
/// user with many alike names would otherwise match them all. A misspelt name and the
/// relations of the best results' turns are looked up on a connection of `planned`, which
/// plans each statement for its values: a generic plan reads all of a large user's
/// entities or relations for them.
pub async fn start(
    conn: &mut PgConnection,
    planned: &LendingPool,
    owner: Owner<'_>,
    (query, vector): (&str, Option<&Embedding>),
    from_events: &[Uuid],
    aliases: &Aliases,
    settings: &GraphSettings,
) -> sqlx::Result<Start> {
    let Owner { tenant, user } = owner;
    let names = names_in(query, aliases);
    // The entities the query names in full (`$3`: [`names_in`]), by normal form or alias,
    // each branch through its own index, with the names they are matched by in a query:
    // normal form, aliases and first word (a person's first name).
    let named: Vec<(Uuid, Vec<String>)> = sqlx::query!(
        r#"SELECT id AS "id!", aliases || norm_name || split_part(norm_name, ' ', 1) AS "names!" FROM entities
     WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND norm_name = ANY($3)
    UNION
    SELECT id, aliases || norm_name || split_part(norm_name, ' ', 1) FROM entities
     WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND aliases && $3"#,
        tenant.as_str(),
        user.as_str(),
        &names
    )
    .map(|r| (r.id, r.names))
    .fetch_all(&mut *conn)
    .await?;
    let mut found: Vec<(Uuid, f64)> = named.iter().map(|(id, _)| (*id, 1.0)).collect();
    let mut seed_names: Vec<String> = named.into_iter().flat_map(|(_, names)| names).collect();
    let long: Vec<&String> = names.iter().filter(|n| n.chars().count() >= 4 && n.is_ascii()).collect();
    let mut own = Held::new(planned);
    if found.is_empty() {
        let ways = one_by_one(conn, &mut own, Owner::new(tenant, user), &names, &long, vector, settings).await?;
        take(ways, settings, &mut found, &mut seed_names);
    }
    if !from_events.is_empty() {
        let custom = own.get().await?;
        found.extend(
            sqlx::query!(
                r#"SELECT DISTINCT unnest(ARRAY[subject_id, object_id]) AS "entity!", $3::float8 AS "weight!" FROM relations
                  WHERE tenant_id = $1 AND source_event_ids && $2 AND status = 'active' AND user_id = $4"#,
                tenant.as_str(),
                from_events,
                settings.hop_decay,
                user.as_str()
            )
            .map(|r| (r.entity, r.weight))
            .fetch_all(custom)
            .await?,
        );
    }
    own.give_back();
    Ok(Start::of(found, seed_names))
}

/// The entities a lookup starts from (see the module documentation), found in the
/// user's `graph` row the way [`start`] finds them in the tables.
pub fn in_graph(
    graph: &UserGraph,
    query: &str,
    vector: Option<&Embedding>,
    from_events: &[Uuid],
    aliases: &Aliases,
    settings: &GraphSettings,
) -> Start {
    let names = names_in(query, aliases);
    let named = |n: &str| names.binary_search_by(|name| name.as_str().cmp(n)).is_ok();
    let names_of = |e: &Entity| {
        e.aliases.iter().copied().chain([e.norm_name, first_name(e)]).map(str::to_owned).collect::<Vec<_>>()
    };
    let mut found: Vec<(Uuid, f64)> = Vec::new();
    let mut seed_names: Vec<String> = Vec::new();
    for entity in graph.entities.iter().filter(|e| named(e.norm_name) || e.aliases.iter().any(|a| named(a))) {
        found.push((entity.id, 1.0));
        seed_names.extend(names_of(entity));
    }
    if found.is_empty() {
        let long: Vec<&String> = names.iter().filter(|n| n.chars().count() >= 4 && n.is_ascii()).collect();
        let mut ways: Vec<Way> = graph
            .entities
            .iter()
            .filter(|e| e.person && named(first_name(e)))
            .take(8)
            .map(|e| Way { id: e.id, similarity: 1.0, names: names_of(e), named: true })
            .collect();
        if ways.is_empty() {
            let forms: Vec<(Uuid, String)> = graph.entities.iter().map(|e| (e.id, e.norm_name.to_owned())).collect();
            ways = misspelt_among(&forms, &long, settings);
        }
        if let (true, Some(vector)) = (ways.is_empty(), vector) {
            let mut near: Vec<Way> = graph
                .entities
                .iter()
                .filter(|e| e.vector.dims() == vector.dims())
                .map(|e| Way::by(e.id, e.vector.cosine(vector.as_slice()), false))
                .collect();
            near.sort_by(|a, b| b.similarity.total_cmp(&a.similarity));
            near.truncate(3);
            ways = near;
        }
        take(ways, settings, &mut found, &mut seed_names);
    }
    for r in graph.relations.iter().filter(|r| r.source_event_ids.iter().any(|id| from_events.contains(&id))) {
        found.extend([(r.subject_id, settings.hop_decay), (r.object_id, settings.hop_decay)]);
    }
    Start::of(found, seed_names)
}

/// The first word of an entity's normal form: a person's first name.
fn first_name<'a>(e: &Entity<'a>) -> &'a str {
    e.norm_name.split(' ').next().unwrap_or_default()
}

/// The ways that name an entity, or come near enough in meaning, as seeds.
fn take(ways: Vec<Way>, settings: &GraphSettings, found: &mut Vec<(Uuid, f64)>, seed_names: &mut Vec<String>) {
    for way in ways {
        if way.named || way.similarity >= settings.seed_similarity as f64 {
            found.push((way.id, way.similarity));
            seed_names.extend(way.names);
        }
    }
}

impl Start {
    /// The surest eight of the entities `found`, each at its surest weight.
    fn of(found: Vec<(Uuid, f64)>, mut names: Vec<String>) -> Self {
        let mut best: HashMap<Uuid, f64> = HashMap::new();
        for (entity, weight) in found {
            let slot = best.entry(entity).or_insert(0.0);
            *slot = slot.max(weight);
        }
        let mut seeds: Vec<Seed> = best.into_iter().map(|(entity, weight)| Seed { entity, weight }).collect();
        seeds.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.entity.cmp(&b.entity)));
        seeds.truncate(8);
        names.sort();
        names.dedup();
        Self { seeds, names }
    }
}

/// An entity found by a way other than its name in full.
struct Way {
    id: Uuid,
    similarity: f64,
    /// A first name's names, matched in the query.
    names: Vec<String>,
    /// Whether found by a name (first or misspelt) rather than by meaning, which must
    /// reach `graph.seed_similarity`.
    named: bool,
}

impl Way {
    fn by(id: Uuid, similarity: f64, named: bool) -> Self {
        Self { id, similarity, names: Vec::new(), named }
    }
}

/// The seeds of a query that names no entity in full for a user with many edges, a
/// statement per way and each only when the surer ones found nothing; a misspelt name on
/// the connection `own` (planned for its values).
async fn one_by_one(
    conn: &mut PgConnection,
    own: &mut Held<'_>,
    owner: Owner<'_>,
    names: &[String],
    long: &[&String],
    vector: Option<&Embedding>,
    settings: &GraphSettings,
) -> sqlx::Result<Vec<Way>> {
    let Owner { tenant, user } = owner;
    // People by their first name among `$3` ("Sam" for Sam Carter).
    let people: Vec<(Uuid, Vec<String>)> = sqlx::query!(
        r#"SELECT id, aliases || norm_name || split_part(norm_name, ' ', 1) AS "names!" FROM entities
     WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND type = 'person'
       AND split_part(norm_name, ' ', 1) = ANY($3) LIMIT 8"#,
        tenant.as_str(),
        user.as_str(),
        names
    )
    .map(|r| (r.id, r.names))
    .fetch_all(&mut *conn)
    .await?;
    let mut ways: Vec<Way> =
        people.into_iter().map(|(id, names)| Way { id, similarity: 1.0, names, named: true }).collect();
    if ways.is_empty() && !long.is_empty() {
        // The eight entities whose name is likest one of the words `$3` by trigrams, at
        // least `$4` (through `entities_trgm`; [`misspelt_among`] does the same in the service).
        let misspelt: Vec<(Uuid, f64)> = sqlx::query!(
            r#"SELECT e.id, max(similarity(e.norm_name, w))::float8 AS "s!" FROM entities e, unnest($3::text[]) w
     WHERE e.tenant_id = $1 AND e.user_id = $2 AND e.status = 'active' AND e.norm_name % w
     GROUP BY e.id HAVING max(similarity(e.norm_name, w)) >= $4 ORDER BY "s!" DESC LIMIT 8"#,
            tenant.as_str(),
            user.as_str(),
            long as _,
            settings.name_similarity as f64
        )
        .map(|r| (r.id, r.s))
        .fetch_all(own.get().await?)
        .await?;
        ways.extend(misspelt.into_iter().map(|(id, similarity)| Way::by(id, similarity, true)));
    }
    if let (true, Some(vector)) = (ways.is_empty(), vector) {
        let near: Vec<(Uuid, f64)> = sqlx::query_as(sqlx::AssertSqlSafe(nearest(vector.dims())))
            .bind(tenant.as_str())
            .bind(user.as_str())
            .bind(vector.to_pgvector())
            .fetch_all(&mut *conn)
            .await?;
        ways.extend(near.into_iter().map(|(id, similarity)| Way::by(id, similarity, false)));
    }
    Ok(ways)
}

/// The entities with a normal form among `normal_forms` like one of `long` (trigrams,
/// as `pg_trgm` finds them: `%` at its threshold 0.3, and `graph.name_similarity`), the
/// likest eight.
fn misspelt_among(normal_forms: &[(Uuid, String)], long: &[&String], settings: &GraphSettings) -> Vec<Way> {
    let words: Vec<Vec<[char; 3]>> = long.iter().map(|w| trigrams(w)).collect();
    let least = (settings.name_similarity as f64).max(0.3);
    let mut found: Vec<Way> = normal_forms
        .iter()
        .filter_map(|(id, form)| {
            let name = trigrams(form);
            let best = words.iter().map(|w| similarity(&name, w)).fold(0.0f32, f32::max);
            (best as f64 >= least).then(|| Way::by(*id, best as f64, true))
        })
        .collect();
    found.sort_by(|a, b| b.similarity.total_cmp(&a.similarity));
    found.truncate(8);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_names_its_words_runs_and_aliases() {
        let names = names_in("张伟用的什么数据库？", &Aliases::default());
        assert!(names.contains(&"张伟".to_owned()));
        let names = names_in("Which database does the billing service use with PG?", &Aliases::default());
        assert!(names.contains(&"billing service".to_owned()));
        assert!(names.contains(&"postgresql".to_owned()), "the alias's canonical name: {names:?}");
    }
}

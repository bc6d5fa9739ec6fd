//! The benchmark's memory corpus, generated inside PostgreSQL in the benchmark's own
//! database and reused while its size matches. Vectors are clustered like real
//! embeddings: one of 1,024 random centroids plus one of 4,096 noise vectors. One
//! memory in 20 has a planted near-duplicate (its text said again, its embedding
//! slightly perturbed, newer), listed in `bench_planted` for scoring `dedup`. The same
//! users hold as many raw turns (events, half of them the assistant's) with vectors of
//! the same kind, for lookups over facts and turns together, and a graph of entities and
//! relations ([`ensure_graph`]) for lookups that walk it.

use std::time::Instant;

use anyhow::Context;
use sqlx::{PgPool, Row};

use engram_base::configuration::{EmbeddingProvider, EmbeddingSettings};
use engram_base::domain::{TenantId, UserId};

pub const TENANT: &str = "bench";
pub const LARGE_USER: &str = "large";
const CHUNK: i64 = 50_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CorpusSize {
    pub users: i64,
    pub per_user: i64,
    pub large_user: i64,
    /// One memory in this many has a planted near-duplicate.
    pub planted_every: i64,
    /// The configured embedder's dimension, so text queries meet vectors of their own kind.
    pub dims: i64,
}

impl CorpusSize {
    /// The corpus of the full benchmark (1.1 M memories) or of `--quick` (40,000),
    /// before the planted near-duplicates.
    pub fn new(quick: bool, embeddings: &EmbeddingSettings) -> Self {
        let (users, large_user) = if quick { (300, 10_000) } else { (10_000, 100_000) };
        let dims = match embeddings.provider {
            EmbeddingProvider::Local => embeddings.local_model.dims(),
            EmbeddingProvider::Openai => embeddings.dimensions.unwrap_or(384) as usize,
        };
        Self { users, per_user: 100, large_user, planted_every: 20, dims: dims as i64 }
    }

    pub fn generated(&self) -> i64 {
        self.users * self.per_user + self.large_user
    }
}

/// The database holding the corpus of a run's size: the full and the quick corpus
/// apart, so a quick run does not replace the full one (whose build is long) nor the
/// full run the quick one.
pub fn database(quick: bool) -> &'static str {
    if quick { "engram_bench_quick" } else { "engram_bench" }
}

/// Makes sure the corpus of `size` exists; returns the seconds spent building it (0 when reused).
pub async fn ensure(pool: &PgPool, size: CorpusSize) -> anyhow::Result<f64> {
    sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS bench_corpus_size (users bigint, per_user bigint, large_user bigint, planted_every bigint);
         ALTER TABLE bench_corpus_size ADD COLUMN IF NOT EXISTS events bigint;
         ALTER TABLE bench_corpus_size ADD COLUMN IF NOT EXISTS dims bigint",
    )
    .execute(pool)
    .await?;
    let built = with_size(
        "SELECT EXISTS (SELECT FROM bench_corpus_size WHERE users = $1 AND per_user = $2 AND large_user = $3
                                                         AND planted_every = $4 AND events = $5 AND dims = $6)",
        size,
    )
    .fetch_one(pool)
    .await?
    .get::<bool, _>(0);
    if built {
        return Ok(0.0);
    }
    let started = Instant::now();
    eprintln!(
        "bench: building a corpus of {} memories and their near-duplicates (reused by later runs)",
        size.generated()
    );
    // The table's indexes are dropped for the load and built afterwards from their own
    // definitions, which `bench_indexes` keeps until then (a build cut short resumes them).
    let prepare = format!(
        "DELETE FROM bench_corpus_size;
         CREATE TABLE IF NOT EXISTS bench_indexes (name text PRIMARY KEY, definition text NOT NULL);
         INSERT INTO bench_indexes SELECT indexname, indexdef FROM pg_indexes
          WHERE schemaname = current_schema() AND tablename IN ('memories', 'events')
            AND indexname NOT IN ('memories_pkey', 'events_pkey', 'events_tenant_id_client_event_id_key')
         ON CONFLICT DO NOTHING;
         DO $$ DECLARE i record; BEGIN
             FOR i IN SELECT name FROM bench_indexes LOOP EXECUTE format('DROP INDEX IF EXISTS %I', i.name); END LOOP;
         END $$;
         DELETE FROM memory_history WHERE tenant_id = 'bench';
         DELETE FROM memory_access WHERE tenant_id = 'bench';
         DELETE FROM job_checkpoints WHERE tenant_id = 'bench';
         DELETE FROM memories WHERE tenant_id = 'bench';
         DELETE FROM events WHERE tenant_id = 'bench';
         DROP TABLE IF EXISTS bench_vectors, bench_planted;
         CREATE TABLE bench_vectors (kind text, i int, v vector({dims}), PRIMARY KEY (kind, i));
         INSERT INTO bench_vectors
              SELECT 'centroid', i, (SELECT array_agg(random() * 2 - 1) FROM generate_series(1, {dims}) WHERE i >= 0)::vector
                FROM generate_series(0, 1023) i;
         INSERT INTO bench_vectors
              SELECT 'noise', i, (SELECT array_agg((random() * 2 - 1) * 0.35) FROM generate_series(1, {dims}) WHERE i >= 0)::vector
                FROM generate_series(0, 4095) i;
         INSERT INTO bench_vectors
              SELECT 'tiny', i, (SELECT array_agg((random() * 2 - 1) * 0.01) FROM generate_series(1, {dims}) WHERE i >= 0)::vector
                FROM generate_series(0, 255) i;
         CREATE TABLE bench_planted (planted uuid PRIMARY KEY, original uuid NOT NULL);",
        dims = size.dims
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(prepare)).execute(pool).await.context("cannot prepare the corpus")?;
    let memories = "INSERT INTO memories (tenant_id, id, user_id, kind, category, content, embedding, embedding_model,
                                          embedding_dims, importance, valid_from, created_at, updated_at)
        SELECT 'bench', gen_random_uuid(), CASE WHEN g < $3 THEN 'large' ELSE 'u' || ((g - $3) / $4) END,
               'fact', (ARRAY['identity','preference','project','technical','decision','event'])[1 + g % 6],
               'bench memory ' || g || ' about topic ' || (g % 997),
               c.v + n.v, 'bench', $5, 0.3 + (g % 7) / 10.0,
               now() - (g % 365) * interval '1 day', now() - (g % 365) * interval '1 day', now()
          FROM generate_series($1::bigint, $2::bigint - 1) g
          JOIN bench_vectors c ON c.kind = 'centroid' AND c.i = (hashint8(g) & 1023)
          JOIN bench_vectors n ON n.kind = 'noise' AND n.i = (hashint8(g + 7919) & 4095)";
    let events = "INSERT INTO events (tenant_id, id, user_id, session_id, role, content, created_at,
                                      embedding, embedding_model, embedding_dims)
        SELECT 'bench', gen_random_uuid(), CASE WHEN g < $3 THEN 'large' ELSE 'u' || ((g - $3) / $4) END,
               's' || (g / 20), (ARRAY['user', 'assistant'])[1 + g % 2],
               'bench turn ' || g || ' about topic ' || (g % 997),
               now() - (g % 365) * interval '1 day', (c.v + n.v)::halfvec, 'bench', $5
          FROM generate_series($1::bigint, $2::bigint - 1) g
          JOIN bench_vectors c ON c.kind = 'centroid' AND c.i = (hashint8(g + 104729) & 1023)
          JOIN bench_vectors n ON n.kind = 'noise' AND n.i = (hashint8(g + 1299709) & 4095)";
    for (what, sql) in [("memories", memories), ("events", events)] {
        let mut from = 0;
        while from < size.generated() {
            let to = (from + CHUNK).min(size.generated());
            sqlx::query(sql)
                .bind(from)
                .bind(to)
                .bind(size.large_user)
                .bind(size.per_user)
                .bind(size.dims)
                .execute(pool)
                .await
                .with_context(|| format!("cannot insert the corpus's {what}"))?;
            from = to;
            eprintln!("bench: {from} {what}");
        }
    }
    // Created (with a history row, as the API would write) after the originals, so
    // `dedup` sees them as changed since its last run.
    let planted = format!(
        "INSERT INTO bench_planted SELECT gen_random_uuid(), id FROM memories WHERE tenant_id = 'bench' AND abs(hashtext(id::text)) % {every} = 0;
         INSERT INTO memories (tenant_id, id, user_id, kind, category, content, embedding, embedding_model, embedding_dims,
                               importance, valid_from, created_at, updated_at)
              SELECT m.tenant_id, p.planted, m.user_id, m.kind, m.category, m.content || ' (said again)',
                     m.embedding::vector({dims}) + t.v, m.embedding_model, {dims}, m.importance, now(), now(), now()
                FROM bench_planted p
                JOIN memories m ON m.tenant_id = 'bench' AND m.id = p.original
                JOIN bench_vectors t ON t.kind = 'tiny' AND t.i = abs(hashtext(p.planted::text)) % 256;
         INSERT INTO memory_history (tenant_id, id, memory_id, user_id, action, reason)
              SELECT 'bench', gen_random_uuid(), p.planted, m.user_id, 'created', 'bench: planted near-duplicate'
                FROM bench_planted p JOIN memories m ON m.tenant_id = 'bench' AND m.id = p.original;",
        every = size.planted_every,
        dims = size.dims
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(planted)).execute(pool).await.context("cannot plant near-duplicates")?;
    eprintln!("bench: building the indexes");
    sqlx::raw_sql(
        "SET maintenance_work_mem = '4GB';
         SET max_parallel_maintenance_workers = 1;
         DO $$ DECLARE i record; BEGIN
             FOR i IN SELECT definition FROM bench_indexes LOOP EXECUTE i.definition; END LOOP;
         END $$;
         DROP TABLE bench_indexes;
         ANALYZE memories, memory_history, events;",
    )
    .execute(pool)
    .await
    .context("cannot index the corpus")?;
    with_size(
        "INSERT INTO bench_corpus_size (users, per_user, large_user, planted_every, events, dims)
         VALUES ($1, $2, $3, $4, $5, $6)",
        size,
    )
    .execute(pool)
    .await?;
    Ok(started.elapsed().as_secs_f64())
}

/// `sql` with what identifies a corpus of `size` bound as `$1` … `$6`.
fn with_size(
    sql: &'static str,
    size: CorpusSize,
) -> sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments> {
    sqlx::query(sql)
        .bind(size.users)
        .bind(size.per_user)
        .bind(size.large_user)
        .bind(size.planted_every)
        .bind(size.generated())
        .bind(size.dims)
}

/// How many memories the corpus holds, planted near-duplicates included.
pub async fn count(pool: &PgPool) -> sqlx::Result<i64> {
    sqlx::query_scalar!(r#"SELECT count(*) AS "n!" FROM memories WHERE tenant_id = 'bench'"#).fetch_one(pool).await
}

/// How many raw turns the corpus holds.
pub async fn count_events(pool: &PgPool) -> sqlx::Result<i64> {
    sqlx::query_scalar!(r#"SELECT count(*) AS "n!" FROM events WHERE tenant_id = 'bench'"#).fetch_one(pool).await
}

/// The centroids and noise vectors, to compose query vectors like the corpus's.
pub async fn vectors(pool: &PgPool) -> anyhow::Result<(Vec<Vec<f32>>, Vec<Vec<f32>>)> {
    let rows: Vec<(String, pgvector::Vector)> =
        sqlx::query_as("SELECT kind, v FROM bench_vectors ORDER BY kind, i").fetch_all(pool).await?;
    let (mut centroids, mut noise) = (Vec::new(), Vec::new());
    for (kind, v) in rows {
        if kind == "centroid" { centroids.push(v.to_vec()) } else { noise.push(v.to_vec()) }
    }
    Ok((centroids, noise))
}

/// Loads the corpus and its indexes into PostgreSQL's buffers (as much as fits), so
/// the load test measures a service in steady state rather than its first minutes.
pub async fn warm(pool: &PgPool) -> anyhow::Result<f64> {
    let started = Instant::now();
    // The tables lookups read, with their indexes (the large user's own HNSW index among
    // them) and their TOAST tables: a vector of 512 dimensions is stored out of line.
    let sql = "CREATE EXTENSION IF NOT EXISTS pg_prewarm;
         WITH t AS (SELECT oid, reltoastrelid FROM pg_class
                     WHERE relkind = 'r' AND relname IN ('memories', 'memory_access', 'events', 'entities', 'relations', 'user_graphs'))
         SELECT pg_prewarm(oid) FROM (
             SELECT oid FROM t
             UNION ALL SELECT reltoastrelid FROM t WHERE reltoastrelid <> 0
             UNION ALL SELECT indexrelid FROM pg_index
              WHERE indrelid IN (SELECT oid FROM t UNION ALL SELECT reltoastrelid FROM t)) r;";
    sqlx::raw_sql(sql).execute(pool).await.context("cannot warm the buffers")?;
    Ok(started.elapsed().as_secs_f64())
}

/// Entities of each ordinary user of the graph corpus, and of the large user.
const ENTITIES_PER_USER: i64 = 40;
const LARGE_USER_ENTITIES: i64 = 20_000;

/// How many relations the graph corpus holds per ordinary user: as many as memories.
pub fn relations(size: CorpusSize) -> i64 {
    size.generated()
}

/// Makes sure the corpus's users have a graph: 40 entities ("Entity 0" … "Entity 39") and
/// 100 relations per user, 20,000 entities and 100,000 relations for the large user, with
/// vectors of the corpus's kind; returns the seconds spent building it (0 when reused).
pub async fn ensure_graph(pool: &PgPool, size: CorpusSize) -> anyhow::Result<f64> {
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS bench_graph_size (relations bigint, dims bigint)").execute(pool).await?;
    let built: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT FROM bench_graph_size WHERE relations = $1 AND dims = $2)")
            .bind(relations(size))
            .bind(size.dims)
            .fetch_one(pool)
            .await?;
    if built {
        return Ok(0.0);
    }
    let started = Instant::now();
    eprintln!("bench: building a graph of {} relations (reused by later runs)", relations(size));
    sqlx::raw_sql(
        "DELETE FROM bench_graph_size; DELETE FROM graph_history WHERE tenant_id = 'bench';
         DELETE FROM user_graphs WHERE tenant_id = 'bench';
         DELETE FROM relations WHERE tenant_id = 'bench'; DELETE FROM entities WHERE tenant_id = 'bench';",
    )
    .execute(pool)
    .await?;
    let entity_id = "md5('bench-entity/' || u || '/' || k)::uuid";
    let entities = format!(
        "INSERT INTO entities (tenant_id, id, user_id, name, norm_name, type, embedding, embedding_model, embedding_dims,
                               first_seen, last_seen)
         SELECT 'bench', {entity_id}, u, 'Entity ' || k, 'entity ' || k,
                (ARRAY['person','project','technology','organization','place','product','concept','other'])[1 + k % 8],
                (c.v + n.v)::halfvec, 'bench', $3, now() - interval '30 days', now()
           FROM (SELECT g, CASE WHEN g < {large} THEN 'large' ELSE 'u' || ((g - {large}) / {per}) END AS u,
                        CASE WHEN g < {large} THEN g ELSE (g - {large}) % {per} END AS k
                   FROM generate_series($1::bigint, $2::bigint - 1) g) x
           JOIN bench_vectors c ON c.kind = 'centroid' AND c.i = (hashint8(g + 15485863) & 1023)
           JOIN bench_vectors n ON n.kind = 'noise' AND n.i = (hashint8(g + 32452843) & 4095)",
        large = LARGE_USER_ENTITIES,
        per = ENTITIES_PER_USER
    );
    let predicates: Vec<String> =
        engram_core::graph::Predicate::ALL.iter().map(|p| format!("'{}'", p.as_str())).collect();
    // Subject s and object (s + 1 + …) % e of the user's e entities: never the same.
    let relations_sql = format!(
        "INSERT INTO relations (tenant_id, id, user_id, subject_id, predicate, object_id, fact, valid_from,
                                embedding, embedding_model, embedding_dims)
         SELECT 'bench', gen_random_uuid(), u, md5('bench-entity/' || u || '/' || (h % e))::uuid,
                (ARRAY[{predicates}])[1 + g % {n}],
                md5('bench-entity/' || u || '/' || ((h % e + 1 + (h / e) % (e - 1)) % e))::uuid,
                'bench relation ' || g, now() - (g % 365) * interval '1 day', (c.v + n.v)::halfvec, 'bench', $3
           FROM (SELECT g, CASE WHEN g < {large_relations} THEN 'large' ELSE 'u' || ((g - {large_relations}) / {per_user}) END AS u,
                        CASE WHEN g < {large_relations} THEN {large} ELSE {per} END AS e, abs(hashint8(g)) AS h
                   FROM generate_series($1::bigint, $2::bigint - 1) g) x
           JOIN bench_vectors c ON c.kind = 'centroid' AND c.i = (hashint8(g + 49979687) & 1023)
           JOIN bench_vectors n ON n.kind = 'noise' AND n.i = (hashint8(g + 67867967) & 4095)",
        predicates = predicates.join(", "),
        n = predicates.len(),
        large_relations = size.large_user,
        per_user = size.per_user,
        large = LARGE_USER_ENTITIES,
        per = ENTITIES_PER_USER
    );
    let total_entities = LARGE_USER_ENTITIES + size.users * ENTITIES_PER_USER;
    for (what, sql, total) in [("entities", entities, total_entities), ("relations", relations_sql, relations(size))] {
        let mut from = 0;
        while from < total {
            let to = (from + CHUNK).min(total);
            sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                .bind(from)
                .bind(to)
                .bind(size.dims)
                .execute(pool)
                .await
                .with_context(|| format!("cannot insert the graph's {what}"))?;
            from = to;
            eprintln!("bench: {from} {what}");
        }
    }
    sqlx::raw_sql("ANALYZE entities, relations").execute(pool).await?;
    sqlx::query("INSERT INTO bench_graph_size (relations, dims) VALUES ($1, $2)")
        .bind(relations(size))
        .bind(size.dims)
        .execute(pool)
        .await?;
    Ok(started.elapsed().as_secs_f64())
}

/// Makes sure each ordinary user of the graph corpus has the graph row extraction would
/// have written (see [`engram_core::graph::snapshot`]); returns the seconds spent (0 when none
/// was missing).
pub async fn ensure_graph_rows(pool: &PgPool, limit: i64) -> anyhow::Result<f64> {
    let started = Instant::now();
    let missing: Vec<String> = sqlx::query_scalar!(
        r#"SELECT DISTINCT user_id AS "user_id!" FROM relations WHERE tenant_id = 'bench' AND user_id <> 'large'
         EXCEPT SELECT user_id FROM user_graphs WHERE tenant_id = 'bench'"#
    )
    .fetch_all(pool)
    .await?;
    if missing.is_empty() {
        return Ok(0.0);
    }
    let tenant = TenantId::parse(TENANT)?;
    for (i, users) in missing.chunks(500).enumerate() {
        let mut tx = pool.begin().await?;
        for user in users {
            let user = UserId::parse(user.as_str())?;
            engram_core::graph::snapshot::refresh(&mut tx, &tenant, &user, limit)
                .await
                .context("cannot write a graph row")?;
        }
        tx.commit().await?;
        eprintln!("bench: {} graph rows", (i * 500 + users.len()).min(missing.len()));
    }
    Ok(started.elapsed().as_secs_f64())
}

/// How many relations the corpus's graph holds.
pub async fn count_relations(pool: &PgPool) -> sqlx::Result<i64> {
    sqlx::query_scalar!(r#"SELECT count(*) AS "n!" FROM relations WHERE tenant_id = 'bench'"#).fetch_one(pool).await
}

//! The benchmark's memory corpus, generated inside PostgreSQL in the benchmark's own
//! database and reused while its size matches. Vectors are clustered like real
//! embeddings: one of 1,024 random centroids plus one of 4,096 noise vectors.

use std::time::Instant;

use anyhow::Context;
use sqlx::PgPool;

pub const TENANT: &str = "bench";
pub const LARGE_USER: &str = "large";
const CHUNK: i64 = 50_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CorpusSize {
    pub users: i64,
    pub per_user: i64,
    pub large_user: i64,
}

impl CorpusSize {
    /// The corpus of the full benchmark (1.1 M memories) or of `--quick` (40,000).
    pub fn new(quick: bool) -> Self {
        if quick { Self { users: 300, per_user: 100, large_user: 10_000 } } else { Self { users: 10_000, per_user: 100, large_user: 100_000 } }
    }

    pub fn total(&self) -> i64 {
        self.users * self.per_user + self.large_user
    }
}

/// Makes sure the corpus of `size` exists; returns the seconds spent building it (0 when reused).
pub async fn ensure(pool: &PgPool, size: CorpusSize) -> anyhow::Result<f64> {
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS bench_corpus (users bigint, per_user bigint, large_user bigint)")
        .execute(pool)
        .await?;
    let existing: Option<(i64, i64, i64)> = sqlx::query_as("SELECT users, per_user, large_user FROM bench_corpus")
        .fetch_optional(pool)
        .await?;
    if existing == Some((size.users, size.per_user, size.large_user)) {
        return Ok(0.0);
    }
    let started = Instant::now();
    eprintln!("bench: building a corpus of {} memories (reused by later runs)", size.total());
    sqlx::raw_sql(
        "DELETE FROM bench_corpus;
         DELETE FROM memories WHERE tenant_id = 'bench';
         DROP TABLE IF EXISTS bench_vectors;
         CREATE TABLE bench_vectors (kind text, i int, v vector(384), PRIMARY KEY (kind, i));
         INSERT INTO bench_vectors
              SELECT 'centroid', i, (SELECT array_agg(random() * 2 - 1) FROM generate_series(1, 384) WHERE i >= 0)::vector
                FROM generate_series(0, 1023) i;
         INSERT INTO bench_vectors
              SELECT 'noise', i, (SELECT array_agg((random() * 2 - 1) * 0.35) FROM generate_series(1, 384) WHERE i >= 0)::vector
                FROM generate_series(0, 4095) i;
         DROP INDEX IF EXISTS memories_embedding_384;",
    )
    .execute(pool)
    .await
    .context("cannot prepare the corpus")?;
    let mut from = 0;
    while from < size.total() {
        let to = (from + CHUNK).min(size.total());
        sqlx::query(
            "INSERT INTO memories (tenant_id, id, user_id, kind, category, content, embedding, embedding_model,
                                   embedding_dims, importance, valid_from, created_at, updated_at)
             SELECT 'bench', gen_random_uuid(),
                    CASE WHEN g < $3 THEN 'large' ELSE 'u' || ((g - $3) / $4) END,
                    'fact', (ARRAY['identity','preference','project','technical','decision','event'])[1 + g % 6],
                    'bench memory ' || g || ' about topic ' || (g % 997),
                    c.v + n.v, 'bench', 384, 0.3 + (g % 7) / 10.0,
                    now() - (g % 365) * interval '1 day', now() - (g % 365) * interval '1 day', now()
               FROM generate_series($1::bigint, $2::bigint - 1) g
               JOIN bench_vectors c ON c.kind = 'centroid' AND c.i = (hashint8(g) & 1023)
               JOIN bench_vectors n ON n.kind = 'noise' AND n.i = (hashint8(g + 7919) & 4095)",
        )
        .bind(from)
        .bind(to)
        .bind(size.large_user)
        .bind(size.per_user)
        .execute(pool)
        .await
        .context("cannot insert the corpus")?;
        from = to;
        eprintln!("bench: {from} memories");
    }
    eprintln!("bench: building the HNSW index");
    sqlx::raw_sql(
        "SET maintenance_work_mem = '4GB';
         SET max_parallel_maintenance_workers = 1;
         CREATE INDEX memories_embedding_384 ON memories
             USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE embedding_dims = 384 AND status = 'active';
         ANALYZE memories;",
    )
    .execute(pool)
    .await
    .context("cannot index the corpus")?;
    sqlx::query("INSERT INTO bench_corpus VALUES ($1, $2, $3)")
        .bind(size.users)
        .bind(size.per_user)
        .bind(size.large_user)
        .execute(pool)
        .await?;
    Ok(started.elapsed().as_secs_f64())
}

/// The centroids and noise vectors, to compose query vectors like the corpus's.
pub async fn vectors(pool: &PgPool) -> anyhow::Result<(Vec<Vec<f32>>, Vec<Vec<f32>>)> {
    let rows: Vec<(String, pgvector::Vector)> = sqlx::query_as("SELECT kind, v FROM bench_vectors ORDER BY kind, i")
        .fetch_all(pool)
        .await?;
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
    sqlx::raw_sql(
        "CREATE EXTENSION IF NOT EXISTS pg_prewarm;
         SELECT pg_prewarm(c.oid) FROM pg_class c
          WHERE c.relname IN ('memories', 'memories_embedding_384', 'memories_user_key', 'memories_pkey', 'memories_tsv', 'memories_trgm');",
    )
    .execute(pool)
    .await
    .context("cannot warm the buffers")?;
    Ok(started.elapsed().as_secs_f64())
}

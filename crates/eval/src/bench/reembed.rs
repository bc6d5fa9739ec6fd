//! `reembed` moving an installation to the configured model: memories and raw turns
//! with distinct texts whose vectors another model made, in a database of its own
//! (`engram_bench_reembed`, dropped afterwards), moved by one real run of the job.

use std::time::Instant;

use super::Figure;
use super::jobs::{executor, run_job};
use engram_base::configuration::Settings;
use engram_base::db::Database;
use engram_base::domain::TenantId;
use engram_core::jobs::Scope;

const DATABASE: &str = "engram_bench_reembed";

pub async fn run(settings: &Settings, quick: bool) -> anyhow::Result<Vec<Figure>> {
    let server = Database::open_named(&settings.database, &settings.home, Some("postgres")).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")))
        .execute(&server.pool)
        .await?;
    let db = Database::open_named(&settings.database, &settings.home, Some(DATABASE)).await?;
    db.migrate().await?;
    let per_table: i64 = if quick { 100 } else { 2_000 };
    seed(&db, per_table).await?;
    let executor = executor(&db.pool, settings)?;
    let started = Instant::now();
    let run = run_job(&executor, "reembed", &Scope::tenant(TenantId::parse("bench")?)).await?;
    let seconds = started.elapsed().as_secs_f64();
    let moved: f64 =
        ["memories", "events"].iter().map(|name| run.counts.get(*name).and_then(|v| v.as_f64()).unwrap_or(0.0)).sum();
    db.close().await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")))
        .execute(&server.pool)
        .await?;
    server.close().await;
    let figure = |metric: &str, value, unit| Figure { scenario: "reembed", metric: metric.into(), value, unit };
    Ok(vec![
        figure("texts", moved, "texts"),
        figure("seconds", seconds, "s"),
        figure("throughput", moved / seconds.max(1e-9), "texts/s"),
    ])
}

/// 40 users' memories and raw turns, `per_table` of each, every text distinct (no cache
/// helps), with vectors of an older 3-dimension model.
async fn seed(db: &Database, per_table: i64) -> anyhow::Result<()> {
    let statements = [
        "INSERT INTO tenants (tenant_id) VALUES ('bench') ON CONFLICT DO NOTHING".to_owned(),
        format!(
            "INSERT INTO events (tenant_id, id, user_id, session_id, role, content, created_at, embedding, embedding_model, embedding_dims)
             SELECT 'bench', gen_random_uuid(), 'u' || (g % 40), 's' || (g / 20), 'user',
                    'turn ' || g || ': we talked about the release of version ' || (g % 97) || ' and the ' || md5(g::text) || ' ticket',
                    now(), '[1,0,0]'::halfvec, 'older-model', 3
               FROM generate_series(1, {per_table}) g"
        ),
        format!(
            "INSERT INTO memories (tenant_id, id, user_id, kind, category, content, embedding, embedding_model, embedding_dims,
                                   importance, valid_from, created_at, updated_at)
             SELECT 'bench', gen_random_uuid(), 'u' || (g % 40), 'fact', 'project',
                    'memory ' || g || ': the team prefers ' || md5((g * 7)::text) || ' for release ' || (g % 89),
                    '[1,0,0]'::vector, 'older-model', 3, 0.5, now(), now(), now()
               FROM generate_series(1, {per_table}) g"
        ),
    ];
    for statement in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement)).execute(&db.pool).await?;
    }
    Ok(())
}

//! `llm_usage`: the LLM tokens each tenant's job units spent per UTC day, so that
//! `jobs.tenant_daily_llm_tokens` keeps one tenant's jobs from spending everyone's
//! budget. Read and written inside the unit's own transaction: a unit rolled back (or a
//! dry run) spends nothing.

use sqlx::PgConnection;

use engram_base::domain::TenantId;

/// Whether the tenant has spent `limit` tokens or more today.
pub async fn exhausted(conn: &mut PgConnection, tenant: &TenantId, limit: u64) -> sqlx::Result<bool> {
    let spent: i64 = sqlx::query_scalar!(r#"SELECT coalesce((SELECT tokens FROM llm_usage WHERE tenant_id = $1 AND day = (now() AT TIME ZONE 'UTC')::date), 0) AS "spent!""#, tenant.as_str())
    .fetch_one(conn)
    .await?;
    Ok(spent as u64 >= limit)
}

pub async fn record(conn: &mut PgConnection, tenant: &TenantId, tokens: i64) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO llm_usage (tenant_id, day, tokens) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2)
         ON CONFLICT (tenant_id, day) DO UPDATE SET tokens = llm_usage.tokens + excluded.tokens",
        tenant.as_str(),
        tokens
    )
    .execute(conn)
    .await?;
    Ok(())
}

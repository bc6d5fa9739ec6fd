//! The prompt-ready context block for one user: identity and profile facts first,
//! then the memories most relevant to the query, then recent session and period
//! summaries — never over the token budget ([`estimate_tokens`] per line, plus one per
//! line for its bullet and newline).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgConnection;

use crate::domain::{Kind, ResultKind, TenantId, UserId};
pub use crate::text::estimate_tokens;

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ContextItem {
    pub id: String,
    pub kind: ResultKind,
    pub section: &'static str,
    pub tokens: usize,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Context {
    pub text: String,
    pub tokens: usize,
    pub max_tokens: usize,
    pub items: Vec<ContextItem>,
}

/// `GET /v1/users/{user_id}/context`: the block and how long it took.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ContextResponse {
    #[serde(flatten)]
    pub context: Context,
    pub took_ms: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error(transparent)]
    Invalid(#[from] crate::domain::ValidationError),
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
    #[error("database error while building a context")]
    Database(#[from] sqlx::Error),
}

/// The block for `user` within `max_tokens`: profile, the memories most relevant to
/// `query` (when given), recent summaries. Also says whether the query found anything.
pub async fn build(
    db: &crate::db::Database,
    lookup: &crate::search::Lookup<'_>,
    tenant: &TenantId,
    user: &UserId,
    query: Option<&str>,
    max_tokens: usize,
) -> Result<(Context, bool), ContextError> {
    let mut tx = crate::db::begin_tenant_tx(&db.read_pool, tenant).await?;
    let profile = profile(&mut tx, tenant, user).await?;
    let (sessions, periods) = recent_summaries(&mut tx, tenant, user).await?;
    tx.commit().await?;
    let relevant = match query {
        None => Vec::new(),
        Some(text) => {
            let query =
                crate::search::SearchQuery::for_context(user.clone(), text, lookup.settings, lookup.embedder.dims())?;
            lookup.search(tenant, &query).await?
        }
    };
    let hit = !relevant.is_empty();
    let relevant = relevant.into_iter().map(|r| Candidate { id: r.id, kind: r.kind, content: r.content }).collect();
    let context = assemble(
        vec![
            ("profile", "## About the user", profile),
            ("relevant", "## Relevant memories", relevant),
            ("sessions", "## Recent conversations", sessions),
            ("periods", "## Earlier periods", periods),
        ],
        max_tokens,
    );
    Ok((context, hit))
}

/// One candidate line of the block.
pub struct Candidate {
    pub id: String,
    pub kind: ResultKind,
    pub content: String,
}

/// Assembles sections in order, each line only if it still fits the budget.
pub fn assemble(sections: Vec<(&'static str, &'static str, Vec<Candidate>)>, max_tokens: usize) -> Context {
    let mut text = String::new();
    let mut used = 0;
    let mut items = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (section, heading, candidates) in sections {
        let heading_tokens = estimate_tokens(heading) + 1;
        let mut wrote_heading = false;
        for candidate in candidates {
            if !seen.insert(candidate.id.clone()) {
                continue;
            }
            let line = format!("- {}", candidate.content.replace('\n', " "));
            let tokens = estimate_tokens(&line) + 1;
            let extra = if wrote_heading { 0 } else { heading_tokens + usize::from(!text.is_empty()) };
            if used + tokens + extra > max_tokens {
                continue;
            }
            if !wrote_heading {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(heading);
                text.push('\n');
                wrote_heading = true;
            }
            text.push_str(&line);
            text.push('\n');
            used += tokens + extra;
            items.push(ContextItem { id: candidate.id, kind: candidate.kind, section, tokens });
        }
    }
    Context { text, tokens: used, max_tokens, items }
}

/// Identity and profile facts, most important first.
pub async fn profile(conn: &mut PgConnection, tenant: &TenantId, user: &UserId) -> sqlx::Result<Vec<Candidate>> {
    let rows: Vec<(uuid::Uuid, Kind, String)> = sqlx::query_as(
        "SELECT id, kind, content FROM memories
          WHERE tenant_id = $1 AND user_id = $2 AND status = 'active' AND category IN ('identity', 'personal')
          ORDER BY pinned DESC, importance DESC, updated_at DESC LIMIT 20",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, kind, content)| Candidate { id: id.to_string(), kind: kind.into(), content })
        .collect())
}

/// The latest session summaries and period summaries.
pub async fn recent_summaries(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
) -> sqlx::Result<(Vec<Candidate>, Vec<Candidate>)> {
    let sessions: Vec<(String, String, Option<DateTime<Utc>>)> = sqlx::query_as(
        "SELECT session_id, summary, summarized_at FROM sessions
          WHERE tenant_id = $1 AND user_id = $2 AND summary IS NOT NULL
          ORDER BY last_event_at DESC LIMIT 3",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .fetch_all(&mut *conn)
    .await?;
    let periods: Vec<(uuid::Uuid, String)> = sqlx::query_as(
        "SELECT id, summary FROM period_summaries WHERE tenant_id = $1 AND user_id = $2
          ORDER BY period_start DESC LIMIT 2",
    )
    .bind(tenant.as_str())
    .bind(user.as_str())
    .fetch_all(conn)
    .await?;
    Ok((
        sessions
            .into_iter()
            .map(|(id, content, _)| Candidate { id, kind: ResultKind::SessionSummary, content })
            .collect(),
        periods
            .into_iter()
            .map(|(id, content)| Candidate { id: id.to_string(), kind: ResultKind::PeriodSummary, content })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: &str, content: &str) -> Candidate {
        Candidate { id: id.into(), kind: ResultKind::Fact, content: content.into() }
    }

    #[test]
    fn tokens_count_cjk_characters_one_each() {
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("我叫李明"), 4);
        assert_eq!(estimate_tokens(""), 0);
    }

    #[test]
    fn the_block_never_exceeds_its_budget_and_skips_duplicates() {
        let sections = || {
            vec![
                ("profile", "## About the user", vec![c("1", "Name: Alice"), c("2", "Lives in Lisbon")]),
                ("relevant", "## Relevant memories", vec![c("1", "Name: Alice"), c("3", &"long ".repeat(50))]),
            ]
        };
        for budget in [0, 5, 10, 20, 80, 1000] {
            let context = assemble(sections(), budget);
            assert!(context.tokens <= budget, "{budget}: {}", context.tokens);
            assert!(estimate_tokens(&context.text) <= context.tokens, "the estimate covers the text");
        }
        let all = assemble(sections(), 1000);
        assert_eq!(all.items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), vec!["1", "2", "3"]);
        assert!(all.text.starts_with("## About the user\n- Name: Alice\n"));
    }
}

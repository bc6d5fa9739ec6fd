//! Forgetting part of a user's graph: the relations that rest only on memories or turns
//! deleted at the person's request, and the entities nothing names any more, are deleted
//! for good with their history; the graph row is written again.

use sqlx::PgConnection;
use uuid::Uuid;

use engram_base::domain::{TenantId, UserId};

/// What is gone, by the memories and turns it came from and the texts that stated it.
pub struct Gone<'a> {
    pub memories: &'a [Uuid],
    /// The turns those memories came from: a relation stated with one of the memories
    /// and from these turns alone goes with it.
    pub memory_sources: &'a [Uuid],
    /// Turns rewritten: a relation stated in these alone goes.
    pub turns: &'a [Uuid],
    /// The deleted texts: an entity no relation names any more and whose name one of
    /// them holds is deleted too.
    pub texts: &'a [String],
}

/// Deletes what rests only on `gone`; returns the relations and entities deleted.
pub async fn forget_sources(
    conn: &mut PgConnection,
    tenant: &TenantId,
    user: &UserId,
    gone: &Gone<'_>,
    scan_limit: i64,
) -> sqlx::Result<(i64, i64)> {
    let texts: Vec<String> = gone.texts.iter().map(|t| t.to_lowercase()).collect();
    let (relations, entities): (i64, i64) = sqlx::query!(
        r#"WITH doomed AS (
            DELETE FROM relations r WHERE r.tenant_id = $1 AND r.user_id = $2
               AND ((r.memory_id = ANY($3) AND r.source_event_ids <@ ($4::uuid[] || $6::uuid[]))
                    OR (cardinality(r.source_event_ids) > 0 AND r.source_event_ids <@ $6::uuid[]))
            RETURNING r.id, r.subject_id, r.object_id
         ), unnamed AS (
            DELETE FROM entities e WHERE e.tenant_id = $1 AND e.user_id = $2 AND NOT e.is_user
               AND e.id IN (SELECT subject_id FROM doomed UNION SELECT object_id FROM doomed)
               AND EXISTS (SELECT FROM unnest($5::text[]) t WHERE strpos(t, e.norm_name) > 0)
               AND NOT EXISTS (SELECT FROM relations r WHERE r.tenant_id = $1 AND r.user_id = $2
                                  AND (r.subject_id = e.id OR r.object_id = e.id)
                                  AND r.id NOT IN (SELECT id FROM doomed))
            RETURNING e.id
         ), history AS (
            DELETE FROM graph_history WHERE tenant_id = $1 AND user_id = $2
               AND (relation_id IN (SELECT id FROM doomed) OR entity_id IN (SELECT id FROM unnamed)) RETURNING 1
         )
         SELECT (SELECT count(*) FROM doomed) AS "relations!", (SELECT count(*) FROM unnamed) + 0 * (SELECT count(*) FROM history) AS "entities!""#,
        tenant.as_str(),
        user.as_str(),
        gone.memories,
        gone.memory_sources,
        &texts,
        gone.turns
    )
    .map(|r| (r.relations, r.entities))
    .fetch_one(&mut *conn)
    .await?;
    if relations > 0 || entities > 0 {
        super::snapshot::refresh(conn, tenant, user, scan_limit).await?;
    }
    Ok((relations, entities))
}

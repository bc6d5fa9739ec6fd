-- The decay weight: importance × recency × access frequency. One function with two
-- users: search re-ranks by it and the evict job scores by it (see src/memories/decay.rs).
--   recency   = exp(-lambda · days since the memory was last touched)
--   frequency = 0.5 + 0.5 · min(1, ln(1 + access_count) / ln(11))   (never accessed: 0.5)
CREATE FUNCTION engram_decay(importance real, touched_at timestamptz, access_count integer,
                             lambda double precision, at timestamptz)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT importance
         * exp(-lambda * greatest(0, extract(epoch FROM at - touched_at) / 86400.0))
         * (0.5 + 0.5 * least(1.0, ln(1 + greatest(access_count, 0)) / ln(11)))
$$;

-- Access statistics change often: leave room on each page and index neither column, so
-- those updates stay heap-only (HOT) and never touch the HNSW, GIN or btree indexes.
ALTER TABLE memories SET (fillfactor = 80);
CREATE INDEX feedback_memory ON feedback (tenant_id, memory_id);
CREATE INDEX sessions_summary_tsv ON sessions USING gin (to_tsvector('simple', coalesce(summary, '')));

-- Jobs change memories in two ways, and both should cost little:
--
-- * A status change (evicted, merged, superseded) writes a new row version, which every
--   index whose predicate holds must take. The text indexes now cover only what search
--   can return, active memories and superseded ones for `as_of` lookups, as the HNSW
--   index covers active ones; searches say `status = 'active'` or
--   `status IN ('active', 'superseded')` in so many words, which implies the predicate.
-- * Bookkeeping (importance, sources, updated_at of a merge survivor or a reinforced
--   fact) changes no indexed column, so PostgreSQL updates the row in place on its page
--   (a heap-only tuple) and no index, least of all the HNSW graph, takes a new entry.
--   Listings page by id within a status, which `memories_user` now serves in order;
--   purge finds inactive rows by user and reads their age from the row.
DROP INDEX IF EXISTS memories_tsv;
DROP INDEX IF EXISTS memories_trgm;
DROP INDEX IF EXISTS memories_user;
DROP INDEX IF EXISTS memories_inactive;
CREATE INDEX memories_tsv ON memories USING gin (content_tsv) WHERE status IN ('active', 'superseded');
CREATE INDEX memories_trgm ON memories USING gin (content gin_trgm_ops) WHERE status IN ('active', 'superseded');
CREATE INDEX memories_user ON memories (tenant_id, user_id, status, id);
CREATE INDEX memories_inactive ON memories (tenant_id, user_id) WHERE status <> 'active';

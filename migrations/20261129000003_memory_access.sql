-- Access statistics move out of `memories` into a narrow table of their own. A lookup
-- touches them for every memory it serves; on the wide, heavily indexed memories row
-- (HNSW, two GIN, btrees) each such update could cost an index insertion per index,
-- here it is a heap-only update of a 60-byte row.
CREATE TABLE memory_access (
    tenant_id         text NOT NULL,
    memory_id         uuid NOT NULL,
    user_id           text NOT NULL,
    access_count      integer NOT NULL DEFAULT 0,
    last_accessed_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, memory_id)
) WITH (fillfactor = 70);
CREATE INDEX memory_access_user ON memory_access (tenant_id, user_id);

INSERT INTO memory_access (tenant_id, memory_id, user_id, access_count, last_accessed_at)
SELECT tenant_id, id, user_id, access_count, last_accessed_at FROM memories WHERE last_accessed_at IS NOT NULL;

ALTER TABLE memories DROP COLUMN access_count, DROP COLUMN last_accessed_at;
ALTER TABLE memories RESET (fillfactor);

ALTER TABLE memory_access ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_access FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON memory_access TO engram_tenant
    USING (tenant_id = current_setting('engram.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('engram.tenant_id', true));
DO $$ BEGIN
    EXECUTE format('CREATE POLICY service ON memory_access TO %I USING (true) WITH CHECK (true)', current_user);
END $$;
GRANT SELECT, INSERT, UPDATE, DELETE ON memory_access TO engram_tenant;

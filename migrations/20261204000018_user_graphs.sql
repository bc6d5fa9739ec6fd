-- The graph a lookup walks, one row per user: the active entities and relations of a
-- user with at most graph.scan_limit of each, their vectors in 8 bits, in one value
-- written whole by every change to the user's graph (src/graph/snapshot.rs). A lookup
-- reads it instead of an index of edges and then each relation it reached. Stored out
-- of line uncompressed: vectors do not compress, and a lookup would pay to decompress.
CREATE TABLE user_graphs (
    tenant_id  text NOT NULL,
    user_id    text NOT NULL,
    body       bytea NOT NULL,
    built_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, user_id)
);
ALTER TABLE user_graphs ALTER COLUMN body SET STORAGE EXTERNAL;

ALTER TABLE user_graphs ENABLE ROW LEVEL SECURITY;
ALTER TABLE user_graphs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON user_graphs TO engram_tenant
    USING (tenant_id = current_setting('engram.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('engram.tenant_id', true));
DO $$
BEGIN
    EXECUTE format('CREATE POLICY service ON user_graphs TO %I USING (true) WITH CHECK (true)', current_user);
END
$$;
GRANT SELECT, INSERT, UPDATE, DELETE ON user_graphs TO engram_tenant;

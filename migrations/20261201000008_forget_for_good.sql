-- A deletion that stays a deletion, and sessions that take late events.

-- Forgetting a user removes the registry row of their own vector index in the same
-- tenant transaction as everything else of theirs (the index itself is dropped after).
ALTER TABLE user_vector_indexes ENABLE ROW LEVEL SECURITY;
ALTER TABLE user_vector_indexes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON user_vector_indexes TO engram_tenant
    USING (tenant_id = current_setting('engram.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('engram.tenant_id', true));
DO $$ BEGIN
    EXECUTE format('CREATE POLICY service ON user_vector_indexes TO %I USING (true) WITH CHECK (true)', current_user);
END $$;
GRANT SELECT, INSERT, UPDATE, DELETE ON user_vector_indexes TO engram_tenant;

-- An event that arrives for a session already summarised re-opens it; the summary it
-- had is kept here, newest last: [{"summary", "event_ids", "summarized_at"}].
ALTER TABLE sessions ADD COLUMN summary_history jsonb NOT NULL DEFAULT '[]';

-- Secrets of this installation, readable by the service role only. `audit` keys the
-- HMAC that stands for a deleted user's id in the audit log: enough to answer "was
-- this user deleted, and when" for someone who knows the id, useless to anyone else.
CREATE TABLE instance_secrets (
    name    text PRIMARY KEY,
    secret  bytea NOT NULL
);
INSERT INTO instance_secrets (name, secret)
VALUES ('audit', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));

-- Deletions recorded before kept the id in clear; the id goes, the record stays.
UPDATE audit_log SET target = NULL WHERE action = 'delete_user';

-- A key's own request rate (`50/s`, `600/m`, `10000/h`); NULL takes server.rate_limit.
ALTER TABLE api_keys ADD COLUMN rate_limit text;

-- LLM tokens spent by each tenant's job units per UTC day, against llm.tenant_daily_tokens.
CREATE TABLE llm_usage (
    tenant_id  text NOT NULL,
    day        date NOT NULL,
    tokens     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, day)
);
ALTER TABLE llm_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE llm_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON llm_usage TO engram_tenant
    USING (tenant_id = current_setting('engram.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('engram.tenant_id', true));
DO $$ BEGIN
    EXECUTE format('CREATE POLICY service ON llm_usage TO %I USING (true) WITH CHECK (true)', current_user);
END $$;
GRANT SELECT, INSERT, UPDATE, DELETE ON llm_usage TO engram_tenant;

-- The consolidation worker's coordination state (see src/jobs/mod.rs for the model).

-- A scheduled tick is enqueued once however many replicas see it: (job, tick_at) is unique.
-- `pass_id` ties a run that resumes an abandoned or cancelled one to the units that run
-- already finished; `as_of` is the clock the run used; `stop_reason` says why a run
-- ended early (a budget, the timeout, shutdown).
ALTER TABLE job_runs
    ADD COLUMN tick_at      timestamptz,
    ADD COLUMN as_of        timestamptz,
    ADD COLUMN pass_id      uuid,
    ADD COLUMN stop_reason  text;
CREATE UNIQUE INDEX job_runs_tick ON job_runs (job, tick_at) WHERE tick_at IS NOT NULL;
CREATE INDEX job_runs_active ON job_runs (job, created_at) WHERE status IN ('queued', 'running');

-- Operator switches that every replica honours. Jobs are global, so this table has no
-- tenant and tenant roles get no access to it.
CREATE TABLE job_state (
    job         text PRIMARY KEY,
    paused      boolean NOT NULL DEFAULT false,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text
);

-- One row per (job, user): the unit's lock (FOR UPDATE SKIP LOCKED), the pass that last
-- finished it, the job's own watermark, and the backoff of a failing unit.
CREATE TABLE job_checkpoints (
    tenant_id    text NOT NULL,
    user_id      text NOT NULL,
    job          text NOT NULL,
    pass_id      uuid,
    done_at      timestamptz,
    state        jsonb NOT NULL DEFAULT '{}',
    failures     integer NOT NULL DEFAULT 0,
    retry_after  timestamptz,
    last_error   text,
    PRIMARY KEY (tenant_id, job, user_id)
);

ALTER TABLE job_checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE job_checkpoints FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON job_checkpoints TO engram_tenant
    USING (tenant_id = current_setting('engram.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('engram.tenant_id', true));
DO $$ BEGIN
    EXECUTE format('CREATE POLICY service ON job_checkpoints TO %I USING (true) WITH CHECK (true)', current_user);
END $$;
GRANT SELECT, INSERT, UPDATE, DELETE ON job_checkpoints TO engram_tenant;

-- Old evicted, merged and superseded memories are found by status and age.
CREATE INDEX memories_inactive ON memories (tenant_id, user_id, updated_at) WHERE status <> 'active';

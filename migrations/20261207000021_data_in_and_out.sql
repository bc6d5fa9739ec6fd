-- What came with a memory from elsewhere (an import from Mem0 keeps Mem0's id here).
ALTER TABLE memories ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}';

-- A tenant's webhook subscriptions. The secret signs each delivery, so it is kept as given.
CREATE TABLE webhooks (
    tenant_id    text NOT NULL,
    id           uuid NOT NULL,
    url          text NOT NULL,
    events       text[] NOT NULL,
    secret       text NOT NULL,
    description  text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

-- Deliveries not yet made: one row per subscription and change, written in the change's
-- own transaction (by the triggers below, or by the deletion of a user). A row is deleted
-- once delivered or given up. It holds ids only: a memory's content is read when the
-- delivery is made, so a memory forgotten meanwhile is not sent.
CREATE TABLE webhook_outbox (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id        text NOT NULL,
    webhook_id       uuid NOT NULL,
    event            text NOT NULL,
    user_id          text,
    memory_id        uuid,
    details          jsonb NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_error       text
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at);
CREATE INDEX webhook_outbox_order ON webhook_outbox (webhook_id, user_id, id);
CREATE INDEX webhook_outbox_user ON webhook_outbox (tenant_id, user_id);

-- Each attempt, for `GET /admin/v1/webhooks/{id}/deliveries`; ids only, never content.
CREATE TABLE webhook_deliveries (
    tenant_id     text NOT NULL,
    id            bigint GENERATED ALWAYS AS IDENTITY,
    webhook_id    uuid NOT NULL,
    delivery_id   bigint NOT NULL,
    event         text NOT NULL,
    attempt       integer NOT NULL,
    outcome       text NOT NULL CHECK (outcome IN ('delivered', 'failed', 'expired', 'refused')),
    status_code   integer,
    error         text,
    duration_ms   integer NOT NULL,
    attempted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX webhook_deliveries_recent ON webhook_deliveries (tenant_id, webhook_id, id DESC);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['webhooks', 'webhook_outbox', 'webhook_deliveries']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format($p$CREATE POLICY tenant_isolation ON %I TO engram_tenant
                          USING (tenant_id = current_setting('engram.tenant_id', true))
                          WITH CHECK (tenant_id = current_setting('engram.tenant_id', true))$p$, t);
        EXECUTE format('CREATE POLICY service ON %I TO %I USING (true) WITH CHECK (true)', t, current_user);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO engram_tenant', t);
    END LOOP;
END
$$;

-- A change to a memory, as a subscriber sees it: created; updated (its words, category,
-- key, value or pin changed, or it was restored); superseded (or merged into another);
-- deleted (deleted, evicted, or removed for good: a person's deletion, a request to
-- forget, `purge`), with the status `deleted` or `evicted`. Changes of rank or time alone
-- are not events. Statement-level triggers over the statement's transition tables: one
-- query per statement, and none at all while the tenant has no subscription.
CREATE FUNCTION engram_memory_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM webhooks) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO webhook_outbox (tenant_id, webhook_id, event, user_id, memory_id, details)
        SELECT n.tenant_id, w.id, 'memory.created', n.user_id, n.id, jsonb_build_object('status', n.status)
          FROM new_rows n JOIN webhooks w ON w.tenant_id = n.tenant_id AND 'memory.created' = ANY (w.events)
         WHERE n.status = 'active'
         ORDER BY n.created_at, n.id;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO webhook_outbox (tenant_id, webhook_id, event, user_id, memory_id, details)
        SELECT o.tenant_id, w.id, 'memory.deleted', o.user_id, o.id, jsonb_build_object('status', 'deleted')
          FROM old_rows o JOIN webhooks w ON w.tenant_id = o.tenant_id AND 'memory.deleted' = ANY (w.events)
         WHERE o.status NOT IN ('deleted', 'evicted')
         ORDER BY o.id;
    ELSE
        INSERT INTO webhook_outbox (tenant_id, webhook_id, event, user_id, memory_id, details)
        SELECT c.tenant_id, w.id, c.ev, c.user_id, c.id,
               jsonb_strip_nulls(jsonb_build_object('status', c.status, 'superseded_by', c.superseded_by))
          FROM (SELECT n.tenant_id, n.user_id, n.id, n.status, n.superseded_by, n.updated_at,
                       CASE
                           WHEN n.status IS DISTINCT FROM o.status THEN
                               CASE
                                   WHEN n.status IN ('superseded', 'merged') THEN 'memory.superseded'
                                   WHEN n.status IN ('deleted', 'evicted') THEN 'memory.deleted'
                                   WHEN n.status = 'active' THEN 'memory.updated'
                               END
                           WHEN n.status = 'active'
                                AND (n.content, n.category, n.key, n.value, n.pinned)
                                    IS DISTINCT FROM (o.content, o.category, o.key, o.value, o.pinned)
                               THEN 'memory.updated'
                       END AS ev
                  FROM new_rows n JOIN old_rows o ON o.tenant_id = n.tenant_id AND o.id = n.id) c
          JOIN webhooks w ON w.tenant_id = c.tenant_id AND c.ev = ANY (w.events)
         ORDER BY c.updated_at, c.id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER memories_created AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_memory_events();
CREATE TRIGGER memories_changed AFTER UPDATE ON memories REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_memory_events();
CREATE TRIGGER memories_deleted AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION engram_memory_events();

-- A run that failed: its tenant's subscribers, or every tenant's for a run of them all.
CREATE FUNCTION engram_job_failed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_outbox (tenant_id, webhook_id, event, user_id, details)
    SELECT w.tenant_id, w.id, 'job.failed', NEW.user_id, jsonb_build_object('job', NEW.job, 'run_id', NEW.id)
      FROM webhooks w
     WHERE 'job.failed' = ANY (w.events) AND (NEW.tenant_id IS NULL OR w.tenant_id = NEW.tenant_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER job_runs_failed AFTER UPDATE OF status ON job_runs
    FOR EACH ROW WHEN (NEW.status = 'failed' AND OLD.status IS DISTINCT FROM 'failed')
    EXECUTE FUNCTION engram_job_failed();

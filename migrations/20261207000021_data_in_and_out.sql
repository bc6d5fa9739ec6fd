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
-- are not events.
CREATE FUNCTION engram_memory_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ev text;
    m memories;
BEGIN
    IF TG_OP = 'INSERT' THEN
        m := NEW;
        IF NEW.status = 'active' THEN ev := 'memory.created'; END IF;
    ELSIF TG_OP = 'DELETE' THEN
        m := OLD;
        IF OLD.status NOT IN ('deleted', 'evicted') THEN ev := 'memory.deleted'; END IF;
    ELSE
        m := NEW;
        IF NEW.status IS DISTINCT FROM OLD.status THEN
            ev := CASE
                WHEN NEW.status IN ('superseded', 'merged') THEN 'memory.superseded'
                WHEN NEW.status IN ('deleted', 'evicted') THEN 'memory.deleted'
                WHEN NEW.status = 'active' THEN 'memory.updated'
            END;
        ELSIF NEW.status = 'active'
              AND (NEW.content, NEW.category, NEW.key, NEW.value, NEW.pinned)
                  IS DISTINCT FROM (OLD.content, OLD.category, OLD.key, OLD.value, OLD.pinned) THEN
            ev := 'memory.updated';
        END IF;
    END IF;
    IF ev IS NOT NULL THEN
        INSERT INTO webhook_outbox (tenant_id, webhook_id, event, user_id, memory_id, details)
        SELECT m.tenant_id, w.id, ev, m.user_id, m.id,
               jsonb_strip_nulls(jsonb_build_object(
                   'status', CASE WHEN TG_OP = 'DELETE' THEN 'deleted' ELSE m.status END,
                   'superseded_by', m.superseded_by))
          FROM webhooks w
         WHERE w.tenant_id = m.tenant_id AND ev = ANY (w.events);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER memories_events AFTER INSERT OR UPDATE OR DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION engram_memory_event();

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

-- engram's schema. Every table carries tenant_id (the Citus distribution column) and
-- is protected by row-level security: tenant-scoped work runs as role engram_tenant
-- with engram.tenant_id set per transaction (see src/db/mod.rs), so a query that
-- forgot its tenant filter still sees one tenant only. The connecting role keeps an
-- explicit policy for control-plane work (key lookup, scheduling across tenants).

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Roles are cluster-wide: several databases (and concurrent migrations) share it.
DO $$
BEGIN
    BEGIN
        CREATE ROLE engram_tenant NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END;
    IF NOT pg_has_role(current_user, 'engram_tenant', 'MEMBER') THEN
        BEGIN
            EXECUTE format('GRANT engram_tenant TO %I', current_user);
        EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
        END;
    END IF;
END
$$;

CREATE TABLE tenants (
    tenant_id   text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    tenant_id    text NOT NULL REFERENCES tenants (tenant_id),
    id           uuid NOT NULL,
    name         text,
    scopes       text[] NOT NULL,
    secret_hash  bytea NOT NULL UNIQUE,
    prefix       text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE events (
    tenant_id        text NOT NULL,
    id               uuid NOT NULL,
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    user_id          text NOT NULL,
    session_id       text NOT NULL,
    role             text NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system')),
    content          text NOT NULL,
    created_at       timestamptz NOT NULL,
    received_at      timestamptz NOT NULL DEFAULT now(),
    metadata         jsonb NOT NULL DEFAULT '{}',
    client_event_id  text,
    content_tsv      tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, client_event_id)
);
CREATE INDEX events_user_time ON events (tenant_id, user_id, created_at);
CREATE INDEX events_session ON events (tenant_id, user_id, session_id, created_at);
CREATE INDEX events_seq ON events (tenant_id, user_id, seq);
CREATE INDEX events_tsv ON events USING gin (content_tsv);
-- Word-splitting leaves CJK text as one token ('我叫李明'); trigrams still find '李明'.
CREATE INDEX events_trgm ON events USING gin (content gin_trgm_ops);

CREATE TABLE sessions (
    tenant_id          text NOT NULL,
    user_id            text NOT NULL,
    session_id         text NOT NULL,
    started_at         timestamptz NOT NULL,
    last_event_at      timestamptz NOT NULL,
    event_count        integer NOT NULL DEFAULT 0,
    ended_at           timestamptz,
    summary            text,
    summary_event_ids  uuid[] NOT NULL DEFAULT '{}',
    embedding          vector,
    embedding_model    text,
    embedding_dims     integer,
    summarized_at      timestamptz,
    archived_at        timestamptz,
    PRIMARY KEY (tenant_id, user_id, session_id)
);
CREATE INDEX sessions_recent ON sessions (tenant_id, user_id, last_event_at DESC);
CREATE INDEX sessions_unsummarized ON sessions (tenant_id, last_event_at) WHERE summarized_at IS NULL;

CREATE TABLE period_summaries (
    tenant_id        text NOT NULL,
    id               uuid NOT NULL,
    user_id          text NOT NULL,
    period           text NOT NULL CHECK (period IN ('week', 'month')),
    period_start     date NOT NULL,
    period_end       date NOT NULL,
    summary          text NOT NULL,
    session_ids      text[] NOT NULL DEFAULT '{}',
    embedding        vector,
    embedding_model  text,
    embedding_dims   integer,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, user_id, period, period_start)
);

CREATE TABLE memories (
    tenant_id         text NOT NULL,
    id                uuid NOT NULL,
    user_id           text NOT NULL,
    kind              text NOT NULL CHECK (kind IN ('fact', 'insight')),
    category          text NOT NULL,
    key               text,
    content           text NOT NULL,
    embedding         vector,
    embedding_model   text,
    embedding_dims    integer,
    importance        real NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
    confidence        real NOT NULL DEFAULT 1 CHECK (confidence BETWEEN 0 AND 1),
    source_event_ids  uuid[] NOT NULL DEFAULT '{}',
    source_quote      text,
    derived_from      uuid[] NOT NULL DEFAULT '{}',
    access_count      integer NOT NULL DEFAULT 0,
    last_accessed_at  timestamptz,
    valid_from        timestamptz NOT NULL DEFAULT now(),
    valid_to          timestamptz,
    status            text NOT NULL DEFAULT 'active'
                      CHECK (status IN ('active', 'superseded', 'merged', 'evicted', 'deleted')),
    superseded_by     uuid,
    pinned            boolean NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    content_tsv       tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX memories_user ON memories (tenant_id, user_id, status, updated_at DESC, id);
CREATE INDEX memories_user_key ON memories (tenant_id, user_id, category, key) WHERE status = 'active';
CREATE INDEX memories_tsv ON memories USING gin (content_tsv);
CREATE INDEX memories_trgm ON memories USING gin (content gin_trgm_ops);
-- The column takes any dimension so the model can change; each model's dimension
-- gets its own partial HNSW index (the built-in local model has 384).
CREATE INDEX memories_embedding_384 ON memories
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE embedding_dims = 384;

CREATE TABLE memory_history (
    tenant_id   text NOT NULL,
    id          uuid NOT NULL,
    memory_id   uuid NOT NULL,
    user_id     text NOT NULL,
    action      text NOT NULL CHECK (action IN ('created', 'updated', 'merged', 'superseded',
                                                'evicted', 'restored', 'deleted', 'insight')),
    before      jsonb,
    after       jsonb,
    reason      text,
    job_run_id  uuid,
    actor       text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX memory_history_memory ON memory_history (tenant_id, memory_id, created_at);
CREATE INDEX memory_history_user ON memory_history (tenant_id, user_id);

CREATE TABLE feedback (
    tenant_id    text NOT NULL,
    id           uuid NOT NULL,
    user_id      text NOT NULL,
    memory_id    uuid NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('wrong', 'outdated', 'helpful')),
    source       text NOT NULL DEFAULT 'feedback' CHECK (source IN ('feedback', 'detected')),
    note         text,
    event_id     uuid,
    created_at   timestamptz NOT NULL DEFAULT now(),
    resolved_at  timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX feedback_user ON feedback (tenant_id, user_id, created_at);

CREATE TABLE job_runs (
    id            uuid PRIMARY KEY,
    tenant_id     text,            -- the run's scope: NULL for all tenants
    user_id       text,
    job           text NOT NULL,
    trigger       text NOT NULL CHECK (trigger IN ('schedule', 'admin', 'cli')),
    status        text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed',
                                                  'cancelled', 'abandoned')),
    dry_run       boolean NOT NULL DEFAULT false,
    counts        jsonb NOT NULL DEFAULT '{}',
    error         text,
    worker_id     text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz,
    heartbeat_at  timestamptz
);
CREATE INDEX job_runs_job ON job_runs (job, created_at DESC);

CREATE TABLE audit_log (
    tenant_id   text NOT NULL,
    id          uuid NOT NULL,
    actor       text NOT NULL,
    action      text NOT NULL,
    target      text,
    details     jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

-- Row-level security: one policy for tenant-scoped work, one for the service role.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['tenants', 'api_keys', 'events', 'sessions', 'period_summaries',
                             'memories', 'memory_history', 'feedback', 'job_runs', 'audit_log']
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

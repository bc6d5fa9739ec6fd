-- Graph memory: each user's world as typed entities and the relations between them.
-- `src/graph` owns all three tables. Relations are bi-temporal like memories:
-- `valid_from`/`valid_to` say when a relation held in the world, `created_at`/
-- `expired_at` when engram believed it. A relation is never overwritten: a new object
-- for a predicate that holds one at a time ends the old edge (`superseded`, with its
-- successor). Vectors are half precision, as raw turns' are: names and sentences.

CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE TABLE entities (
    tenant_id        text NOT NULL,
    id               uuid NOT NULL,
    user_id          text NOT NULL,
    name             text NOT NULL,
    -- Lower case, single spaces: what names are matched by. Aliases are stored normalised.
    norm_name        text NOT NULL,
    type             text NOT NULL CHECK (type IN ('person', 'project', 'technology', 'organization',
                                                   'place', 'product', 'concept', 'other')),
    aliases          text[] NOT NULL DEFAULT '{}',
    -- The user's own entity: "I", "我", "my".
    is_user          boolean NOT NULL DEFAULT false,
    embedding        halfvec,
    embedding_model  text,
    embedding_dims   integer,
    first_seen       timestamptz NOT NULL,
    last_seen        timestamptz NOT NULL,
    status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'merged', 'deleted')),
    -- Lineage: the entity this one was merged into, and those merged into it.
    merged_into      uuid,
    merged_from      uuid[] NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX entities_name ON entities (tenant_id, user_id, norm_name) WHERE status = 'active';
CREATE UNIQUE INDEX entities_user_self ON entities (tenant_id, user_id) WHERE is_user AND status = 'active';
-- Per user, so a user with many entities finds an alias or a misspelt name without
-- reading them all (btree_gin puts tenant and user in the same GIN index).
CREATE INDEX entities_aliases ON entities USING gin (tenant_id, user_id, aliases) WHERE status = 'active';
CREATE INDEX entities_trgm ON entities USING gin (tenant_id, user_id, norm_name gin_trgm_ops) WHERE status = 'active';
-- "Sam" names Sam Carter: a person is also found by their first name.
CREATE INDEX entities_first_name ON entities (tenant_id, user_id, split_part(norm_name, ' ', 1))
    WHERE status = 'active' AND type = 'person';
-- Listings by name, and a lookup's names of an ordinary user's entities, index-only.
CREATE INDEX entities_listing ON entities (tenant_id, user_id, status, norm_name, id) INCLUDE (name);

CREATE TABLE relations (
    tenant_id         text NOT NULL,
    id                uuid NOT NULL,
    user_id           text NOT NULL,
    subject_id        uuid NOT NULL,
    predicate         text NOT NULL,
    object_id         uuid NOT NULL,
    -- The sentence that states it.
    fact              text NOT NULL,
    valid_from        timestamptz NOT NULL,
    valid_to          timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    expired_at        timestamptz,
    source_event_ids  uuid[] NOT NULL DEFAULT '{}',
    -- The fact stored from the same sentence, if any.
    memory_id         uuid,
    confidence        real NOT NULL DEFAULT 1 CHECK (confidence BETWEEN 0 AND 1),
    status            text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded', 'deleted')),
    superseded_by     uuid,
    embedding         halfvec,
    embedding_model   text,
    embedding_dims    integer,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
-- A walk reads an entity's edges, most recent first, from these alone (index-only).
CREATE INDEX relations_subject ON relations (tenant_id, subject_id, status, valid_from DESC)
    INCLUDE (id, object_id, user_id, valid_to);
CREATE INDEX relations_object ON relations (tenant_id, object_id, status, valid_from DESC)
    INCLUDE (id, subject_id, user_id, valid_to);
-- A user's edges in one index-only scan: what a lookup's walk reads of an ordinary user.
CREATE INDEX relations_edges ON relations (tenant_id, user_id, status)
    INCLUDE (id, subject_id, object_id, valid_from, valid_to, source_event_ids);
CREATE INDEX relations_sources ON relations USING gin (tenant_id, user_id, source_event_ids) WHERE status = 'active';

-- One row for every change to an entity or a relation, as memory_history is for memories.
CREATE TABLE graph_history (
    tenant_id    text NOT NULL,
    id           uuid NOT NULL,
    user_id      text NOT NULL,
    entity_id    uuid,
    relation_id  uuid,
    action       text NOT NULL CHECK (action IN ('created', 'updated', 'merged', 'superseded',
                                                 'restored', 'deleted')),
    before       jsonb,
    after        jsonb,
    reason       text,
    job_run_id   uuid,
    actor        text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CHECK ((entity_id IS NULL) <> (relation_id IS NULL))
);
CREATE INDEX graph_history_entity ON graph_history (tenant_id, entity_id, created_at) WHERE entity_id IS NOT NULL;
CREATE INDEX graph_history_relation ON graph_history (tenant_id, relation_id, created_at) WHERE relation_id IS NOT NULL;
CREATE INDEX graph_history_user ON graph_history (tenant_id, user_id);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['entities', 'relations', 'graph_history']
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

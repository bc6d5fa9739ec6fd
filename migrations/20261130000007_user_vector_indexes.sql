-- Users with many memories get an HNSW index of their own, built by the
-- `index_large_users` job: a partial index over just their active memories. In the
-- shared graph a user who owns a small share of it costs a long walk per lookup (most
-- nodes visited belong to others, and the iterative scan has to go on until enough of
-- theirs turn up); in their own graph every node visited is theirs, so a lookup is
-- several times cheaper at higher recall. The planner can use the index only when the
-- statement names the user, so lookups for such a user write the ids into its text.
--
-- One row per such index. The job builds the index after writing the row, so an index
-- a crash left half-built (invalid) is found and rebuilt by the next run.
CREATE TABLE user_vector_indexes (
    tenant_id  text NOT NULL,
    user_id    text NOT NULL,
    dims       int NOT NULL,
    index_name text NOT NULL UNIQUE,
    -- Active memories of the user when the index was built.
    memories   bigint NOT NULL,
    built_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, user_id, dims)
);

-- Raw turns are a tier of memory: searchable by words (content_tsv, events_trgm) and
-- by meaning. An event's embedding is written shortly after it is stored (the API's
-- background embedder, and the embed_events job for what that left); half precision
-- (halfvec) halves its cost, which a nearest-neighbour ranking does not notice.
ALTER TABLE events
    ADD COLUMN embedding halfvec,
    ADD COLUMN embedding_model text,
    ADD COLUMN embedding_dims smallint;

CREATE INDEX events_embedding_384 ON events
    USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops) WHERE embedding_dims = 384;

-- The backlog: events still without a vector.
CREATE INDEX events_unembedded ON events (tenant_id, user_id, seq) WHERE embedding IS NULL;

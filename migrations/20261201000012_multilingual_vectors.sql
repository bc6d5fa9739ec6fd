-- The multilingual built-in model (embeddings.local_model = "use-multilingual") has
-- 512 dimensions: its vectors get partial HNSW indexes of their own beside the
-- 384-dimension ones, so both models' vectors can live side by side while `reembed`
-- moves an installation from one to the other.
CREATE INDEX memories_embedding_512 ON memories
    USING hnsw ((embedding::vector(512)) vector_cosine_ops) WHERE embedding_dims = 512 AND status = 'active';

CREATE INDEX events_embedding_512 ON events
    USING hnsw ((embedding::halfvec(512)) halfvec_cosine_ops) WHERE embedding_dims = 512;

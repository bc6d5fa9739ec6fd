-- The HNSW index covers active memories only. Evicting, merging or superseding a memory
-- then costs no graph insertion (a status change writes a new row version, and every
-- index whose predicate still holds must take it); lookups of current memories use the
-- index as before, and `as_of` lookups, which also see superseded memories, read the
-- user's own rows.
DROP INDEX IF EXISTS memories_embedding_384;
CREATE INDEX memories_embedding_384 ON memories
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE embedding_dims = 384 AND status = 'active';

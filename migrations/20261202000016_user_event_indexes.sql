-- Users with many raw turns get an HNSW index of their own over them too, as users with
-- many memories do (migration 0007): in the shared graph of every user's turns, a lookup
-- for one who holds a small share of it walks mostly through other users' nodes.
-- `table_name` says which table an index is on; `row_count` is how many of the user's
-- rows it covered when it was built (active memories, or turns with a vector).
ALTER TABLE user_vector_indexes ADD COLUMN table_name text NOT NULL DEFAULT 'memories'
    CHECK (table_name IN ('memories', 'events'));
ALTER TABLE user_vector_indexes RENAME COLUMN memories TO row_count;
ALTER TABLE user_vector_indexes DROP CONSTRAINT user_vector_indexes_pkey;
ALTER TABLE user_vector_indexes ADD PRIMARY KEY (tenant_id, user_id, table_name, dims);

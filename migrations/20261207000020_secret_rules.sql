-- The fingerprint of the secret rules the workers last started with. A worker that
-- starts with other rules swaps it (one replica wins) and queues a `redact` run. One row.
CREATE TABLE secret_rules (
    id          boolean PRIMARY KEY DEFAULT true CHECK (id),
    fingerprint text NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT now()
);

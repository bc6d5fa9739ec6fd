-- Rows in every table of the schema as migration 20261207000020 left it (the schema
-- before data in and out), for tests/api/upgrade.rs. Values are what a user and the jobs
-- would write; vectors are real vectors of the column's type.
INSERT INTO tenants (tenant_id, created_at) VALUES ('acme', '2026-12-01T08:00:00Z');
INSERT INTO api_keys (tenant_id, id, name, scopes, secret_hash, prefix, created_at, rate_limit, user_id)
VALUES ('acme', '0193a0d2-0000-7000-8000-000000000001', 'ops', '{read,ingest,admin}', '\x0102', 'egk_0102', '2026-12-01T08:00:00Z', '50/s', NULL);
INSERT INTO events (tenant_id, id, user_id, session_id, role, content, created_at, received_at, metadata, client_event_id,
                    embedding, embedding_model, embedding_dims)
VALUES ('acme', '0193a0d2-0000-7000-8000-000000000010', 'ann', 's1', 'user', 'I moved to Porto in May.', '2026-12-01T09:00:00Z',
        '2026-12-01T09:00:01Z', '{"channel": "web"}', 'c-1', '[0.5,0.25,0.125]', 'test-model', 3),
       ('acme', '0193a0d2-0000-7000-8000-000000000011', 'ann', 's1', 'assistant', 'Porto is lovely.', '2026-12-01T09:00:05Z',
        '2026-12-01T09:00:06Z', '{}', NULL, NULL, NULL, NULL);
INSERT INTO sessions (tenant_id, user_id, session_id, started_at, last_event_at, event_count, ended_at, summary,
                      summary_event_ids, embedding, embedding_model, embedding_dims, summarized_at, archived_at, summary_history)
VALUES ('acme', 'ann', 's1', '2026-12-01T09:00:00Z', '2026-12-01T09:00:05Z', 2, '2026-12-01T10:00:00Z', 'Ann moved to Porto.',
        '{0193a0d2-0000-7000-8000-000000000010}', '[1,0,0]', 'test-model', 3, '2026-12-01T11:00:00Z', NULL,
        '[{"summary": "Ann moved.", "at": "2026-12-01T10:30:00Z"}]');
INSERT INTO period_summaries (tenant_id, id, user_id, period, period_start, period_end, summary, session_ids, embedding,
                              embedding_model, embedding_dims, created_at, updated_at)
VALUES ('acme', '0193a0d2-0000-7000-8000-000000000020', 'ann', 'week', '2026-11-30', '2026-12-06', 'A week of moving.', '{s1}',
        '[0,1,0]', 'test-model', 3, '2026-12-07T00:00:00Z', '2026-12-07T00:00:00Z');
INSERT INTO memories (tenant_id, id, user_id, kind, category, key, content, embedding, embedding_model, embedding_dims,
                      importance, confidence, source_event_ids, source_quote, derived_from, valid_from, valid_to, status,
                      superseded_by, pinned, created_at, updated_at, value)
VALUES ('acme', '0193a0d2-0000-7000-8000-000000000030', 'ann', 'fact', 'identity', 'location', 'Lives in Porto',
        '[0,0,1]', 'test-model', 3, 0.8, 0.9, '{0193a0d2-0000-7000-8000-000000000010}', 'I moved to Porto in May.', '{}',
        '2026-05-01T00:00:00Z', NULL, 'active', NULL, true, '2026-12-01T12:00:00Z', '2026-12-02T12:00:00Z', 'porto'),
       ('acme', '0193a0d2-0000-7000-8000-000000000031', 'ann', 'fact', 'identity', 'location', 'Lives in Lisbon',
        NULL, NULL, NULL, 0.5, 1, '{}', NULL, '{}', '2025-01-01T00:00:00Z', '2026-05-01T00:00:00Z', 'superseded',
        '0193a0d2-0000-7000-8000-000000000030', false, '2025-01-01T00:00:00Z', '2026-12-01T12:00:00Z', 'lisbon');
INSERT INTO memory_history (tenant_id, id, memory_id, user_id, action, before, after, reason, job_run_id, actor, created_at)
VALUES ('acme', '0193a0d2-0000-7000-8000-000000000040', '0193a0d2-0000-7000-8000-000000000031', 'ann', 'superseded',
        '{"status": "active"}', '{"status": "superseded"}', 'moved', '0193a0d2-0000-7000-8000-000000000050',
        'job:extract_facts', '2026-12-01T12:00:00Z');
INSERT INTO memory_access (tenant_id, memory_id, user_id, access_count, last_accessed_at)
VALUES ('acme', '0193a0d2-0000-7000-8000-000000000030', 'ann', 4, '2026-12-03T08:00:00Z');
INSERT INTO feedback (tenant_id, id, user_id, memory_id, kind, source, note, event_id, created_at, resolved_at)
VALUES ('acme', '0193a0d2-0000-7000-8000-000000000060', 'ann', '0193a0d2-0000-7000-8000-000000000030', 'helpful',
        'feedback', 'right', NULL, '2026-12-03T08:00:00Z', NULL);
INSERT INTO job_runs (id, tenant_id, user_id, job, trigger, status, dry_run, counts, error, worker_id, created_at,
                      started_at, finished_at, heartbeat_at, tick_at, as_of, pass_id, stop_reason)
VALUES ('0193a0d2-0000-7000-8000-000000000050', NULL, NULL, 'extract_facts', 'schedule', 'succeeded', false,
        '{"users": 1}', NULL, 'w1:1', '2026-12-01T11:59:00Z', '2026-12-01T11:59:01Z', '2026-12-01T12:00:01Z',
        '2026-12-01T12:00:00Z', '2026-12-01T11:59:00Z', NULL, '0193a0d2-0000-7000-8000-000000000051', NULL);
INSERT INTO audit_log (tenant_id, id, actor, action, target, details, created_at)
VALUES ('acme', '0193a0d2-0000-7000-8000-000000000070', 'key:0193a0d2-0000-7000-8000-000000000001', 'forget', 'ann',
        '{"memories": 1}', '2026-12-04T08:00:00Z');
INSERT INTO job_state (job, paused, updated_at, updated_by, known_since)
VALUES ('evict', true, '2026-12-02T08:00:00Z', 'cli', '2026-11-29T08:00:00Z');
INSERT INTO job_checkpoints (tenant_id, user_id, job, pass_id, done_at, state, failures, retry_after, last_error)
VALUES ('acme', 'ann', 'extract_facts', '0193a0d2-0000-7000-8000-000000000051', '2026-12-01T12:00:01Z', '{"seq": 2}', 0,
        NULL, NULL);
INSERT INTO user_vector_indexes (tenant_id, user_id, dims, index_name, row_count, built_at, table_name)
VALUES ('acme', 'ann', 3, 'memories_user_ann_3', 1, '2026-12-02T08:00:00Z', 'memories');
INSERT INTO llm_usage (tenant_id, day, tokens) VALUES ('acme', '2026-12-01', 1234);
INSERT INTO entities (tenant_id, id, user_id, name, norm_name, type, aliases, is_user, embedding, embedding_model,
                      embedding_dims, first_seen, last_seen, status, merged_into, merged_from, created_at, updated_at)
VALUES ('acme', '0193a0d2-0000-7000-8000-000000000080', 'ann', 'Ann', 'ann', 'person', '{}', true, '[1,1,0]', 'test-model', 3,
        '2026-12-01T09:00:00Z', '2026-12-01T09:00:00Z', 'active', NULL, '{}', '2026-12-01T12:00:00Z', '2026-12-01T12:00:00Z'),
       ('acme', '0193a0d2-0000-7000-8000-000000000081', 'ann', 'Porto', 'porto', 'place', '{oporto}', false, NULL, NULL, NULL,
        '2026-12-01T09:00:00Z', '2026-12-01T09:00:00Z', 'active', NULL, '{}', '2026-12-01T12:00:00Z', '2026-12-01T12:00:00Z');
INSERT INTO relations (tenant_id, id, user_id, subject_id, predicate, object_id, fact, valid_from, valid_to, created_at,
                       expired_at, source_event_ids, memory_id, confidence, status, superseded_by, embedding,
                       embedding_model, embedding_dims, updated_at)
VALUES ('acme', '0193a0d2-0000-7000-8000-000000000090', 'ann', '0193a0d2-0000-7000-8000-000000000080', 'lives_in',
        '0193a0d2-0000-7000-8000-000000000081', 'Ann lives in Porto', '2026-05-01T00:00:00Z', NULL, '2026-12-01T12:00:00Z',
        NULL, '{0193a0d2-0000-7000-8000-000000000010}', '0193a0d2-0000-7000-8000-000000000030', 0.9, 'active', NULL,
        '[0,1,1]', 'test-model', 3, '2026-12-01T12:00:00Z');
INSERT INTO graph_history (tenant_id, id, user_id, entity_id, relation_id, action, before, after, reason, job_run_id, actor,
                           created_at)
VALUES ('acme', '0193a0d2-0000-7000-8000-0000000000a0', 'ann', NULL, '0193a0d2-0000-7000-8000-000000000090', 'created',
        NULL, '{"fact": "Ann lives in Porto"}', NULL, '0193a0d2-0000-7000-8000-000000000050', 'job:extract_facts',
        '2026-12-01T12:00:00Z');
INSERT INTO user_graphs (tenant_id, user_id, body, built_at) VALUES ('acme', 'ann', '\x00010203', '2026-12-01T12:00:01Z');
INSERT INTO secret_rules (id, fingerprint, changed_at) VALUES (true, 'abc123', '2026-12-07T00:00:00Z');

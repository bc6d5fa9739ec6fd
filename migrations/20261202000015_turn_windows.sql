-- A raw turn's vector is now made from the turn before it in its session and the turn
-- itself (see event_vectors::window_text_sql). Vectors made from the turn alone are
-- marked as another model's, so the hourly reembed job makes them anew while they go on
-- serving lookups until then.
UPDATE events SET embedding_model = embedding_model || ' (turn alone)' WHERE embedding_model IS NOT NULL;

-- A raw turn's vector is now made from the turn before it in its session and the turn
-- itself (see event_vectors::window_text_sql). Vectors made from the turn alone are
-- dropped, so the embed_events job makes them anew from its backlog; meanwhile those
-- turns are found by their words.
UPDATE events SET embedding = NULL, embedding_model = NULL, embedding_dims = NULL WHERE embedding IS NOT NULL;

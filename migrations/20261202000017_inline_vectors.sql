-- A 512-dimension `vector` takes 2,052 bytes: with the rest of its row that is past the
-- 2 kB at which PostgreSQL moves a row's largest values out of line (TOAST), so every
-- similarity a lookup computes over a user's rows fetched its vector from the TOAST table
-- first, three times the cost of the distance itself (2.9 µs a row instead of 1.0 µs,
-- measured over 10,000 memories). Rows of these tables are kept whole up to a page.
-- Rows written before keep their vectors out of line until rewritten (a new vector, or
-- `VACUUM FULL`). Raw turns, entities and relations store `halfvec` (half the size) and
-- stay inline anyway.
ALTER TABLE memories SET (toast_tuple_target = 8160);
ALTER TABLE sessions SET (toast_tuple_target = 8160);
ALTER TABLE period_summaries SET (toast_tuple_target = 8160);

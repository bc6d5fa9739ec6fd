//! The SQL of the keyword half of search, for the terms `engram_language::terms` finds
//! in a query. A term's weight is its rarity among the user's recent turns (BM25's inverse
//! document frequency over the last [`RECENT_TURNS`]). The weights are counted once per
//! lookup: by the service from the turns a scan of the user's turns read
//! (`engram_language::terms::weigh_turns`), else in SQL ([`weights_sql`]) by the search of
//! their memories (a scan, or the index way, planned for the lookup), else by a statement
//! of their own. What the SQL matches is what `engram_language::terms::holds` does.

use engram_language::terms::{SHORT_TERM_POSIX, WORD_END_POSIX, WORD_START_POSIX};

/// How many of the user's latest turns term weights are counted in.
pub const RECENT_TURNS: i64 = 200;

/// SQL: each term of `terms` (a `text[]` parameter of the terms `ILIKE`-escaped, in order)
/// as a row `(n, w)`: its position and its weight, its rarity among the turns of `recent`
/// (a `content` column, lowercased: the user's latest [`RECENT_TURNS`]), BM25's inverse
/// document frequency. A term none of them holds weighs as one said once: turns are not all
/// a user has (a keyed fact's canonical statement names its key), and a word of the question
/// found nowhere must not outweigh the ones found. Each turn is lowercased once and matched
/// case-sensitively, rather than lowercased again for every term.
pub fn weights_sql(terms: &str) -> String {
    format!(
        "SELECT n, ln(1 + (greatest(turns, 1) - greatest(df, 1) + 0.5) / (greatest(df, 1) + 0.5)) AS w
           FROM unnest({terms}::text[]) WITH ORDINALITY u(term, n), lower(term) t, {forms},
                LATERAL (SELECT count(*)::float8 AS df FROM recent WHERE {contains}) d,
                (SELECT count(*)::float8 AS turns FROM recent) r",
        forms = forms_sql("t"),
        contains = contains("content", "LIKE", "~")
    )
}

/// SQL: `WITH` entries `recent`, the user's (`$1`, `$2`) latest [`RECENT_TURNS`] turns, and
/// `weights`, the weights of the terms of `terms` among them ([`weights_sql`]).
pub fn recent_weights_sql(terms: &str) -> String {
    format!(
        "recent AS MATERIALIZED (
             SELECT lower(content) AS content FROM events WHERE tenant_id = $1 AND user_id = $2
              ORDER BY created_at DESC LIMIT {RECENT_TURNS}
         ), weights AS MATERIALIZED ({weights})",
        weights = weights_sql(terms)
    )
}

/// SQL: a `LATERAL` item `forms` of what the term `t` (`ILIKE`-escaped) is matched by,
/// made once per term rather than once per text it is matched against: `pattern`, the
/// term as a substring; `short`, whether it is a Latin term of one or two characters,
/// which must be a whole word (`b` in "Project B", not in "by"); `word`, that whole word
/// as a regular expression.
pub fn forms_sql(t: &str) -> String {
    format!(
        "LATERAL (SELECT {t} ~ '{SHORT_TERM_POSIX}' AS short, '%' || {t} || '%' AS pattern, \
         '{WORD_START_POSIX}' || {t} || '{WORD_END_POSIX}' AS word) forms"
    )
}

/// SQL: whether `text` holds the term whose [`forms_sql`] are in scope. The regular
/// expression runs only on a text that holds the short term as a substring.
pub fn contains_sql(text: &str) -> String {
    contains(text, "ILIKE", "~*")
}

/// [`contains_sql`] with the operators given: case-sensitive ones for a lowercased `text`.
fn contains(text: &str, like: &str, regex: &str) -> String {
    format!("({text}) {like} pattern AND (NOT short OR ({text}) {regex} word)")
}

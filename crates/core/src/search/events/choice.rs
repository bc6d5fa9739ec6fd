//! A raw turn's keyword share, and which of a scanned user's turns become candidates,
//! worked out in the service from the rows as read: a scan reads every turn of the user
//! anyway, and ranking, windows and neighbours in SQL cost the database three times the
//! read itself (sorts, a window function, a subplan per row and per term).
//!
//! A Latin term counts where the turn has a text-search lexeme that is the term or, from
//! four letters, begins with it (`paint` finds "painting", `go` not "ago"): `content_tsv @@
//! to_tsquery('simple', …)`, decided on the lexemes the database returns. An unspaced term
//! (Chinese, Japanese) counts as a substring, case aside (`ILIKE`). A term found only in
//! the turn before or after in the session counts [`NEIGHBOUR_SHARE`] of its weight.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::super::{Parts, SearchResult};
use engram_base::domain::{ResultKind, Role};
use engram_language::when::Window;

/// What a query term found only in a neighbouring turn of the same session counts, as a
/// share of its weight.
const NEIGHBOUR_SHARE: f64 = 0.5;

/// A turn as a lookup reads it.
pub struct Turn {
    pub id: Uuid,
    pub content: String,
    pub created_at: DateTime<Utc>,
    pub seq: i64,
    pub role: Role,
    pub session_id: String,
    pub similarity: f64,
    /// Its lexemes (`content_tsv`) when it holds one of the query's Latin terms; none else.
    pub lexemes: Option<Vec<String>>,
}

/// id, content, time, order, role, session, similarity, lexemes.
pub type TurnRow = (Uuid, String, DateTime<Utc>, i64, Role, String, f64, Option<Vec<String>>);

impl From<TurnRow> for Turn {
    fn from((id, content, created_at, seq, role, session_id, similarity, lexemes): TurnRow) -> Self {
        Self { id, content, created_at, seq, role, session_id, similarity, lexemes }
    }
}

impl Turn {
    /// The turn as a result: `keyword` its share counting its neighbours', `own` its own.
    pub fn result(self, (keyword, own): (f64, f64)) -> SearchResult {
        let Turn { id, content, created_at, role, session_id, similarity, .. } = self;
        let parts = Parts::event(similarity, (keyword, own), created_at, role);
        SearchResult {
            created_at: Some(created_at),
            role: Some(role),
            session_id: Some(session_id),
            ..SearchResult::new(id.to_string(), ResultKind::Event, content, created_at, vec![id], parts)
        }
    }
}

/// The query's terms as a turn's keyword share counts them, each with its share of the
/// weight (the shares sum to 1). At most 32 terms (a query has at most 16).
pub struct TurnTerms(Vec<TurnTerm>);

struct TurnTerm {
    text: String,
    /// Matched on lexemes (Latin); else as a substring.
    latin: bool,
    /// From four letters a Latin term matches the lexemes it begins.
    prefix: bool,
    /// Finds candidates: Latin terms of two letters or more, and unspaced ones. A lone
    /// letter or digit ranks but is too common to find by.
    finds: bool,
    weight: f64,
}

/// Which of the terms a text holds, a bit per term.
type Held = u32;

impl TurnTerms {
    /// `terms` (lowercased) with their `weights`, not yet normalised.
    pub fn new(terms: &[String], weights: &[f64]) -> Self {
        let weights = engram_language::terms::normalised(weights.iter().copied());
        let terms = terms.iter().zip(weights).take(Held::BITS as usize).map(|(text, weight)| {
            let latin = text.is_ascii();
            TurnTerm {
                text: text.clone(),
                latin,
                prefix: latin && text.len() >= 4,
                finds: !latin || text.len() >= 2,
                weight,
            }
        });
        Self(terms.collect())
    }

    /// The terms `lexemes` and `content` hold.
    pub fn held(&self, lexemes: Option<&[String]>, content: &str) -> Held {
        let lower = self.0.iter().any(|t| !t.latin).then(|| content.to_lowercase());
        let mut held = 0;
        for (bit, term) in self.0.iter().enumerate() {
            let holds = match (term.latin, lexemes, &lower) {
                (true, Some(lexemes), _) if term.prefix => lexemes.iter().any(|l| l.starts_with(&term.text)),
                (true, Some(lexemes), _) => lexemes.contains(&term.text),
                (false, _, Some(lower)) => lower.contains(&term.text),
                _ => false,
            };
            held |= Held::from(holds) << bit;
        }
        held
    }

    /// Whether a text holding `held` is found by the query's words at all.
    fn finds(&self, held: Held) -> bool {
        self.0.iter().enumerate().any(|(bit, t)| t.finds && held & (1 << bit) != 0)
    }

    /// The keyword share of a turn holding `own`, its neighbours holding `beside`.
    pub fn share(&self, own: Held, beside: Held) -> f64 {
        let part = |bit: usize| match (own & (1 << bit) != 0, beside & (1 << bit) != 0) {
            (true, _) => 1.0,
            (false, true) => NEIGHBOUR_SHARE,
            _ => 0.0,
        };
        self.0.iter().enumerate().map(|(bit, t)| t.weight * part(bit)).sum()
    }
}

/// What a scan keeps of a user's turns: within `since`..`until`, the `k` nearest by
/// meaning; the `k` with the best share of the query's terms (their own, the latest
/// first on a tie) and the turns on either side of them in their session; and with a
/// time phrase, the `k` nearest said in its window. Each with its keyword share.
pub fn choose(
    turns: Vec<Turn>,
    terms: &TurnTerms,
    (since, until): (Option<DateTime<Utc>>, Option<DateTime<Utc>>),
    phrase: Option<Window>,
    k: usize,
) -> Vec<SearchResult> {
    let n = turns.len();
    let (prev, next) = neighbours(&turns);
    let held: Vec<Held> = turns.iter().map(|t| terms.held(t.lexemes.as_deref(), &t.content)).collect();
    let inside: Vec<bool> = turns
        .iter()
        .map(|t| since.is_none_or(|s| t.created_at >= s) && until.is_none_or(|u| t.created_at < u))
        .collect();
    let own: Vec<f64> = held.iter().map(|&h| if terms.finds(h) { terms.share(h, 0) } else { 0.0 }).collect();
    let best = |keep: &dyn Fn(usize) -> bool, before: &dyn Fn(usize, usize) -> std::cmp::Ordering| {
        let mut found: Vec<usize> = (0..n).filter(|&i| inside[i] && keep(i)).collect();
        found.sort_by(|&a, &b| before(a, b));
        found.truncate(k);
        found
    };
    let nearest = |a: usize, b: usize| turns[b].similarity.total_cmp(&turns[a].similarity);
    let mut chosen = vec![false; n];
    for i in best(&|_| true, &nearest) {
        chosen[i] = true;
    }
    let by_share = |a: usize, b: usize| own[b].total_cmp(&own[a]).then(turns[b].created_at.cmp(&turns[a].created_at));
    for i in best(&|i| own[i] > 0.0, &by_share) {
        for j in [Some(i), prev[i], next[i]].into_iter().flatten() {
            chosen[j] = true;
        }
    }
    if let Some(window) = phrase {
        for i in best(&|i| window.contains(turns[i].created_at), &nearest) {
            chosen[i] = true;
        }
    }
    let beside = |i: usize| [prev[i], next[i]].into_iter().flatten().fold(0, |acc, j| acc | held[j]);
    let shares: Vec<Option<(f64, f64)>> = (0..n)
        .map(|i| (chosen[i] && inside[i]).then(|| (terms.share(held[i], beside(i)), terms.share(held[i], 0))))
        .collect();
    turns.into_iter().zip(shares).filter_map(|(turn, share)| share.map(|s| turn.result(s))).collect()
}

/// Each turn's predecessor and successor in its session (by time, then order of arrival).
fn neighbours(turns: &[Turn]) -> (Vec<Option<usize>>, Vec<Option<usize>>) {
    let mut order: Vec<usize> = (0..turns.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |i: usize| (&turns[i].session_id, turns[i].created_at, turns[i].seq);
        key(a).cmp(&key(b))
    });
    let (mut prev, mut next) = (vec![None; turns.len()], vec![None; turns.len()]);
    for pair in order.windows(2) {
        if turns[pair[0]].session_id == turns[pair[1]].session_id {
            next[pair[0]] = Some(pair[1]);
            prev[pair[1]] = Some(pair[0]);
        }
    }
    (prev, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(minute: i64, session: &str, content: &str, similarity: f64) -> Turn {
        let words = content.to_lowercase();
        let lexemes = words.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(String::from);
        Turn {
            id: Uuid::new_v4(),
            content: content.to_owned(),
            created_at: DateTime::from_timestamp(1_700_000_000 + minute * 60, 0).unwrap(),
            seq: minute,
            role: Role::User,
            session_id: session.to_owned(),
            similarity,
            lexemes: Some(lexemes.collect()),
        }
    }

    fn terms(all: &[&str], weights: &[f64]) -> TurnTerms {
        TurnTerms::new(&all.iter().map(|t| t.to_string()).collect::<Vec<_>>(), weights)
    }

    #[test]
    fn latin_terms_match_lexemes_from_four_letters_as_prefixes_and_unspaced_ones_as_substrings() {
        let t = terms(&["paint", "go", "李明"], &[1.0, 1.0, 2.0]);
        let lexemes = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(t.held(Some(&lexemes(&["painting", "ago"])), "painting, ago"), 0b001);
        assert_eq!(t.held(Some(&lexemes(&["go"])), "go"), 0b010);
        assert_eq!(t.held(None, "我叫李明"), 0b100, "no lexemes: no Latin term, unspaced ones still");
        assert_eq!(t.share(0b100, 0), 0.5);
        assert_eq!(t.share(0b001, 0b110), 0.25 + 0.5 * 0.25 + 0.5 * 0.5);
    }

    #[test]
    fn a_reply_is_kept_beside_the_question_holding_the_words_with_half_their_share() {
        let turns = vec![
            turn(0, "s1", "What did you paint?", 0.1),
            turn(1, "s1", "A sunrise by the lake.", 0.2),
            turn(2, "s2", "Lunch was fine.", 0.9),
            turn(3, "s1", "Then tea.", 0.3),
        ];
        let found = choose(turns, &terms(&["paint"], &[1.0]), (None, None), None, 1);
        let by_content = |c: &str| found.iter().find(|r| r.content == c).map(|r| r.parts.keyword);
        assert_eq!(by_content("What did you paint?"), Some(1.0));
        assert_eq!(by_content("A sunrise by the lake."), Some(NEIGHBOUR_SHARE), "the reply, beside the question");
        assert_eq!(by_content("Lunch was fine."), Some(0.0), "the nearest by meaning");
        assert_eq!(found.len(), 3, "{:?}", found.iter().map(|r| &r.content).collect::<Vec<_>>());
    }

    #[test]
    fn the_window_keeps_turns_out_and_a_lone_letter_finds_nothing() {
        let turns = vec![turn(0, "s", "project b", 0.5), turn(10, "s", "plan b later", 0.4)];
        let until = turns[1].created_at;
        let found = choose(turns, &terms(&["b"], &[1.0]), (None, Some(until)), None, 5);
        assert_eq!(found.len(), 1, "the later turn is outside the window");
        assert_eq!(found[0].parts.keyword, 1.0, "a lone letter ranks what other ways found");
        let turns = vec![turn(0, "s", "project b", 0.5), turn(10, "s", "plan b later", 0.4)];
        assert_eq!(choose(turns, &terms(&["b"], &[1.0]), (None, None), None, 1).len(), 1, "but finds none itself");
    }
}

//! Names that tell nothing about which memory answers a question about the user. Every
//! memory of a user is about the user, and in a conversation every session is between
//! the same people: matched as a word or inside the query's vector, their names find the
//! introduction ("Hi, I'm Lena.") and the greetings ("Thanks, John!") for every question
//! that names them, and for questions nothing answers ("Which database does Omar use?").
//! A lookup therefore asks what the question asks of them: the question without those
//! names, for its terms and its vector. A question that asks nothing else ("Who is
//! Lena?") is looked up as it was asked. Both kinds come from the user's own data:
//!
//! - **their own name**: the value of their active `identity`/`name` fact;
//! - **names that recur**: words the user's latest [`RECENT_TURNS`] turns write as a name
//!   inside a sentence ("Thanks, Caroline!", "Hey Mel") in at least half of their
//!   sessions there, and at least [`MIN_SESSIONS`]: the people of the conversation, not
//!   what it is about. A day or a month is no such name. Of a question's words, those it
//!   capitalises (but the first) are taken for names, or all of them when it has no
//!   capital.
//!
//! Both are read once per user for [`NAMES_TTL`] of the lookups' clock ([`KnownNames`]):
//! a name told a moment ago counts from the next minute.

use chrono::{DateTime, TimeDelta, Utc};
use engram_base::db::lend::Held;
use sqlx::PgConnection;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use engram_base::domain::TenantId;

/// How many of the user's latest turns a recurring name is counted in.
const RECENT_TURNS: i64 = 100;
/// The fewest sessions a name recurs in: in one or two, it is what they were about.
const MIN_SESSIONS: i64 = 3;
/// How long a user's names are used before they are read again.
pub const NAMES_TTL: TimeDelta = TimeDelta::seconds(60);
/// Users whose names are remembered at most; past it the memory starts afresh.
const USERS_KEPT: usize = 100_000;

/// A user's names that tell nothing (lowercased).
#[derive(Debug, Default, PartialEq)]
pub struct UserNames {
    own: Option<String>,
    recurring: Vec<String>,
}

impl UserNames {
    /// The names of `text` to leave out: the user's own, and the recurring ones among
    /// the words it writes as names.
    pub fn in_question(&self, text: &str) -> Vec<String> {
        let named = candidates(text);
        let recurring = self.recurring.iter().filter(|name| named.contains(name));
        self.own.iter().chain(recurring).cloned().collect()
    }
}

/// The users' names, each read once per [`NAMES_TTL`].
#[derive(Default)]
pub struct KnownNames(Mutex<ByUser>);

/// Each user's names, with when they were read.
type ByUser = HashMap<(TenantId, String), (DateTime<Utc>, Arc<UserNames>)>;

impl KnownNames {
    /// The user's names, read on a connection of `scans` unless read in the [`NAMES_TTL`]
    /// before `now` (then no connection is taken).
    pub async fn of(
        &self,
        scans: &mut Held<'_>,
        tenant: &TenantId,
        user: &str,
        now: DateTime<Utc>,
    ) -> sqlx::Result<Arc<UserNames>> {
        let key = (tenant.clone(), user.to_owned());
        if let Some((read, names)) = self.lock().get(&key)
            && (*read..*read + NAMES_TTL).contains(&now)
        {
            return Ok(names.clone());
        }
        let names = Arc::new(read(scans.get().await?, tenant, user, now).await?);
        let mut known = self.lock();
        if known.len() >= USERS_KEPT {
            known.clear();
        }
        known.insert(key, (now, names.clone()));
        Ok(names)
    }

    /// Forgets a user who was just forgotten.
    pub fn forget(&self, tenant: &TenantId, user: &str) {
        self.lock().remove(&(tenant.clone(), user.to_owned()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ByUser> {
        self.0.lock().expect("never poisoned: no panics under the lock")
    }
}

/// The user's own name and the names that recur through their sessions, in one statement.
async fn read(conn: &mut PgConnection, tenant: &TenantId, user: &str, now: DateTime<Utc>) -> sqlx::Result<UserNames> {
    let sql = format!(
        r"WITH recent AS MATERIALIZED (
              SELECT session_id, content FROM events WHERE tenant_id = $1 AND user_id = $2
               ORDER BY created_at DESC LIMIT {RECENT_TURNS}
          ), named AS (
              SELECT DISTINCT session_id, lower(m[1]) AS name
                FROM recent, regexp_matches(content, '[[:lower:],] ([[:upper:]][[:lower:]]+)', 'g') m
          )
          SELECT true, value FROM (
              SELECT value FROM memories
               WHERE tenant_id = $1 AND user_id = $2 AND category = 'identity' AND key = 'name'
                 AND status = 'active' AND value IS NOT NULL
               ORDER BY updated_at DESC LIMIT 1) own
          UNION ALL
          SELECT false, name FROM named GROUP BY name
          HAVING count(*) >= greatest({MIN_SESSIONS}, (SELECT count(DISTINCT session_id) FROM recent) / 2.0)"
    );
    let rows: Vec<(bool, String)> =
        sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(tenant.as_str()).bind(user).fetch_all(conn).await?;
    let mut names = UserNames::default();
    for (own, name) in rows {
        if own {
            names.own = Some(name);
        } else if !is_time(&name, now) {
            names.recurring.push(name);
        }
    }
    Ok(names)
}

/// Whether `word` names a time: said after "on" or "in", it is a time phrase ("on
/// Friday", "in June").
fn is_time(word: &str, now: DateTime<Utc>) -> bool {
    ["on", "in"].iter().any(|before| super::when::resolve(&format!("{before} {word}"), now).is_some())
}

/// The words of `text` that may name someone, lowercased: those it capitalises (but the
/// first), or, when it has no capital at all, every word.
fn candidates(text: &str) -> Vec<String> {
    let lowercase = !text.chars().any(char::is_uppercase);
    text.split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() >= 2)
        .skip(usize::from(!lowercase))
        .filter(|w| lowercase || w.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(str::to_ascii_lowercase)
        .collect()
}

/// `text` without the words of `names` (a possessive "'s" with them), or `None` when it
/// holds none of them or nothing would be left to search by. Latin words match whole and
/// case aside; a name in a script without spaces matches as written.
pub fn without(text: &str, names: &[String]) -> Option<String> {
    let mut left = text.to_owned();
    for word in names.iter().flat_map(|name| name.split_whitespace()) {
        left = if word.is_ascii() { without_word(&left, word) } else { left.replace(word, " ") };
    }
    if left == text || !super::terms::asks_anything(&left) {
        return None;
    }
    Some(left.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `text` without the Latin `word` wherever it stands whole, case aside, with the
/// possessive that follows it.
fn without_word(text: &str, word: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, _) in lower.match_indices(word) {
        let end = start + word.len();
        if start < at
            || text[..start].chars().next_back().is_some_and(is_word)
            || text[end..].chars().next().is_some_and(is_word)
        {
            continue;
        }
        out.push_str(&text[at..start]);
        let rest = &lower[end..];
        at = end + ["'s", "’s", "'"].iter().find(|p| rest.starts_with(*p)).map_or(0, |p| p.len());
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::{UserNames, candidates};

    #[test]
    fn the_question_asks_what_it_asks_of_the_user() {
        let without = |text: &str, name: &str| super::without(text, &[name.to_owned()]);
        let cases = [
            ("What subject does Lena teach?", "lena", Some("What subject does teach?")),
            ("Where does LENA work these days?", "lena", Some("Where does work these days?")),
            ("What is Priya's favourite team?", "priya natarajan", Some("What is favourite team?")),
            ("王芳用什么数据库？", "王芳", Some("用什么数据库？")),
            ("张敏的女儿上几年级？", "张敏", Some("的女儿上几年级？")),
            ("小周开什么车？", "小周", Some("开什么车？")),
            ("小周是谁？", "小周", None),
            ("Who is Lena?", "lena", None),
            ("What does Magdalena teach?", "lena", None),
            ("What does she teach?", "lena", None),
        ];
        for (text, name, expected) in cases {
            assert_eq!(without(text, name).as_deref(), expected, "{text}");
        }
        let both = ["james".to_owned(), "john".to_owned()];
        assert_eq!(
            super::without("Do both James and John have pets?", &both).as_deref(),
            Some("Do both and have pets?")
        );
    }

    #[test]
    fn a_day_or_a_month_is_no_name() {
        let now = chrono::Utc::now();
        for word in ["friday", "monday", "june", "december"] {
            assert!(super::is_time(word, now), "{word}");
        }
        assert!(!super::is_time("caroline", now) && !super::is_time("maya", now));
    }

    #[test]
    fn a_name_is_looked_for_among_the_capitalised_words_or_every_word_of_a_lowercase_question() {
        assert_eq!(candidates("What martial arts has John done?"), ["john"]);
        assert_eq!(candidates("When did Caroline go to the LGBTQ support group?"), ["caroline", "lgbtq"]);
        assert_eq!(candidates("what did caroline paint"), ["what", "did", "caroline", "paint"]);
        assert_eq!(candidates("王芳用什么数据库？"), Vec::<String>::new());
        let names = UserNames { own: Some("lena".into()), recurring: vec!["caroline".into(), "paint".into()] };
        assert_eq!(names.in_question("What did Caroline paint?"), ["lena", "caroline"]);
        assert_eq!(names.in_question("what did caroline paint"), ["lena", "caroline", "paint"]);
    }
}

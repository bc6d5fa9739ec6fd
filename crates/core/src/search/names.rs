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
use engram_language::question_names;

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
        let named = question_names::candidates(text);
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
    let rows = sqlx::query!(
        r#"WITH recent AS MATERIALIZED (
              SELECT session_id, content FROM events WHERE tenant_id = $1 AND user_id = $2
               ORDER BY created_at DESC LIMIT $4
          ), named AS (
              SELECT DISTINCT session_id, lower(m[1]) AS name
                FROM recent, regexp_matches(content, $3, 'g') m
          )
          SELECT true AS "own!", value AS "name!" FROM (
              SELECT value FROM memories
               WHERE tenant_id = $1 AND user_id = $2 AND category = 'identity' AND key = 'name'
                 AND status = 'active' AND value IS NOT NULL
               ORDER BY updated_at DESC LIMIT 1) own
          UNION ALL
          SELECT false, name FROM named GROUP BY name
          HAVING count(*) >= greatest($5::float8, (SELECT count(DISTINCT session_id) FROM recent) / 2.0)"#,
        tenant.as_str(),
        user,
        question_names::WRITTEN_AS_NAME,
        RECENT_TURNS,
        MIN_SESSIONS as f64,
    )
    .map(|row| (row.own, row.name))
    .fetch_all(conn)
    .await?;
    let mut names = UserNames::default();
    for (own, name) in rows {
        if own {
            names.own = Some(name);
        } else if !question_names::is_time(&name, now) {
            names.recurring.push(name);
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::UserNames;

    #[test]
    fn the_names_left_out_are_the_users_own_and_the_recurring_ones_the_question_writes() {
        let names = UserNames { own: Some("lena".into()), recurring: vec!["caroline".into(), "paint".into()] };
        assert_eq!(names.in_question("What did Caroline paint?"), ["lena", "caroline"]);
        assert_eq!(names.in_question("what did caroline paint"), ["lena", "caroline", "paint"]);
    }
}

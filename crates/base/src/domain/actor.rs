//! Who made a change, as a memory's history, the graph's history and the audit log
//! record it.

use std::fmt;

use uuid::Uuid;

/// A job's run, an API key, or the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// `job:<name>`.
    Job(String),
    /// `key:<id>`.
    Key(Uuid),
    /// `cli`.
    Cli,
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Job(name) => write!(f, "job:{name}"),
            Self::Key(id) => write!(f, "key:{id}"),
            Self::Cli => f.write_str("cli"),
        }
    }
}

impl From<Actor> for String {
    fn from(actor: Actor) -> Self {
        actor.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_actor_reads_as_the_history_writes_it() {
        assert_eq!(Actor::Job("evict".into()).to_string(), "job:evict");
        let id = Uuid::nil();
        assert_eq!(Actor::Key(id).to_string(), format!("key:{id}"));
        assert_eq!(String::from(Actor::Cli), "cli");
    }
}

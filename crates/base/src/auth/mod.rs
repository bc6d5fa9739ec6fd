//! API keys: created by the CLI, stored only as SHA-256 hashes, presented as bearer
//! tokens. A key belongs to one tenant and carries scopes.

mod cache;
mod keys;
mod limits;

pub use cache::KeyCache;
pub use keys::{ApiKey, CreatedKey, NewKey, Principal, add_tenant, authenticate, create_key, list_keys, revoke_key};
pub use limits::RateLimits;

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Read,
    Ingest,
    Admin,
    /// The installation's control plane (schedules, runs over every tenant, system
    /// records); only `engram keys create` grants it.
    Operator,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Ingest => "ingest",
            Self::Admin => "admin",
            Self::Operator => "operator",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "read" => Ok(Self::Read),
            "ingest" => Ok(Self::Ingest),
            "admin" => Ok(Self::Admin),
            "operator" => Ok(Self::Operator),
            other => Err(format!("unknown scope `{other}` (expected read, ingest, admin or operator)")),
        }
    }
}

/// Parses `read,ingest` into scopes, rejecting unknown names and an empty list.
pub fn parse_scopes(text: &str) -> Result<Vec<Scope>, String> {
    let mut scopes: Vec<Scope> =
        text.split(',').filter(|s| !s.trim().is_empty()).map(str::parse).collect::<Result<_, _>>()?;
    scopes.sort_by_key(|s| s.as_str());
    scopes.dedup();
    if scopes.is_empty() {
        return Err("at least one scope is required (read, ingest, admin, operator)".into());
    }
    Ok(scopes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_and_reject_unknown_names() {
        assert_eq!(parse_scopes("read, ingest,read").unwrap(), vec![Scope::Ingest, Scope::Read]);
        assert!(parse_scopes("read,write").unwrap_err().contains("write"));
        assert!(parse_scopes("").is_err());
    }
}

//! What an operation needs of the caller's key: a scope, named in the refusal, and,
//! for a key bound to one user, that user.

use super::Error;
use engram_base::auth::{Principal, Scope};
use engram_base::domain::UserId;

/// What a route needs of a key.
pub trait Need {
    /// The scope named in a 403.
    const SCOPE: Scope;

    fn allows(principal: &Principal) -> bool {
        principal.has(Self::SCOPE)
    }
}

/// The requirements handlers name.
pub mod need {
    use super::{Need, Principal, Scope};

    /// Lookups and feedback.
    pub struct Read;
    /// Appending events.
    pub struct Ingest;
    /// The tenant's own administration: its users, its runs.
    pub struct Admin;
    /// The installation's administration: schedules, runs over every tenant. Only the
    /// CLI grants it (`engram keys create --scope operator`).
    pub struct Operator;
    /// Job runs and their records: a tenant's admin for its own, an operator for all.
    pub struct Jobs;

    /// Any valid key, whatever its scopes: what a key may learn of itself.
    pub struct AnyKey;

    impl Need for AnyKey {
        const SCOPE: Scope = Scope::Read;

        fn allows(_: &Principal) -> bool {
            true
        }
    }
    impl Need for Read {
        const SCOPE: Scope = Scope::Read;
    }
    impl Need for Ingest {
        const SCOPE: Scope = Scope::Ingest;
    }
    impl Need for Admin {
        const SCOPE: Scope = Scope::Admin;
    }
    impl Need for Operator {
        const SCOPE: Scope = Scope::Operator;
    }
    impl Need for Jobs {
        const SCOPE: Scope = Scope::Admin;

        fn allows(principal: &Principal) -> bool {
            principal.has(Scope::Admin) || principal.has(Scope::Operator)
        }
    }
}

/// Whether `principal` may do what `N` guards: [`Error::Forbidden`] naming the scope if not.
pub fn check<N: Need>(principal: &Principal) -> Result<(), Error> {
    if N::allows(principal) { Ok(()) } else { Err(Error::Forbidden(N::SCOPE)) }
}

/// The user an operation names, if `principal` may reach them: a key bound to a user
/// reaches that user only ([`Error::OtherUser`]).
pub fn user(principal: &Principal, user: impl Into<String>) -> Result<UserId, Error> {
    let user = UserId::parse(user)?;
    match &principal.user {
        Some(bound) if *bound != user => Err(Error::OtherUser(bound.clone())),
        _ => Ok(user),
    }
}

/// The calling key as `GET /v1/whoami` shows it.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Caller {
    pub key_id: uuid::Uuid,
    pub tenant: String,
    /// Of `read`, `ingest`, `admin`, `operator`.
    pub scopes: Vec<&'static str>,
    /// The one user the key reaches, if it is bound to one.
    pub user_id: Option<String>,
}

/// Who `principal` is and what it may do; every valid key may ask.
pub fn caller(principal: &Principal) -> Caller {
    Caller {
        key_id: principal.key_id,
        tenant: principal.tenant.as_str().to_owned(),
        scopes: principal.scopes.iter().map(|s| s.as_str()).collect(),
        user_id: principal.user.as_ref().map(|u| u.as_str().to_owned()),
    }
}

/// `principal` bound to `user` for the rest of a connection: refused if its key is
/// bound to another user.
pub fn bind(mut principal: Principal, user: impl Into<String>) -> Result<Principal, Error> {
    principal.user = Some(self::user(&principal, user)?);
    Ok(principal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_base::domain::TenantId;

    fn key(user: Option<&str>) -> Principal {
        Principal {
            key_id: uuid::Uuid::now_v7(),
            tenant: TenantId::parse("acme").unwrap(),
            scopes: vec![Scope::Read],
            rate_limit: None,
            user: user.map(|u| UserId::parse(u).unwrap()),
        }
    }

    #[test]
    fn a_bound_key_reaches_its_user_only() {
        assert_eq!(user(&key(Some("alice")), "alice").unwrap().as_str(), "alice");
        assert!(matches!(user(&key(Some("alice")), "bob"), Err(Error::OtherUser(u)) if u.as_str() == "alice"));
        assert_eq!(user(&key(None), "bob").unwrap().as_str(), "bob");
        assert!(matches!(user(&key(Some("alice")), "not a user id"), Err(Error::Invalid(_))));
    }

    #[test]
    fn binding_narrows_an_unbound_key_and_never_widens_a_bound_one() {
        assert_eq!(bind(key(None), "carol").unwrap().user.unwrap().as_str(), "carol");
        assert!(bind(key(Some("alice")), "carol").is_err());
        assert_eq!(bind(key(Some("alice")), "alice").unwrap().user.unwrap().as_str(), "alice");
    }
}

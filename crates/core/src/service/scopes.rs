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

/// Whether `principal` may reach the user an operation names: a key bound to a user
/// reaches that user only ([`Error::OtherUser`]).
pub fn reach(principal: &Principal, user: &UserId) -> Result<(), Error> {
    match &principal.user {
        Some(bound) if bound != user => Err(Error::OtherUser(bound.clone())),
        _ => Ok(()),
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
pub fn bind(mut principal: Principal, user: UserId) -> Result<Principal, Error> {
    reach(&principal, &user)?;
    principal.user = Some(user);
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

    fn user(name: &str) -> UserId {
        UserId::parse(name).unwrap()
    }

    #[test]
    fn a_bound_key_reaches_its_user_only() {
        assert!(reach(&key(Some("alice")), &user("alice")).is_ok());
        assert!(matches!(reach(&key(Some("alice")), &user("bob")), Err(Error::OtherUser(u)) if u.as_str() == "alice"));
        assert!(reach(&key(None), &user("bob")).is_ok());
    }

    #[test]
    fn binding_narrows_an_unbound_key_and_never_widens_a_bound_one() {
        assert_eq!(bind(key(None), user("carol")).unwrap().user.unwrap().as_str(), "carol");
        assert!(bind(key(Some("alice")), user("carol")).is_err());
        assert_eq!(bind(key(Some("alice")), user("alice")).unwrap().user.unwrap().as_str(), "alice");
    }
}

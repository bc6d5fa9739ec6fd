//! What an operation needs of the caller's key: a scope, named in the refusal.

use super::Error;
use crate::auth::{Principal, Scope};

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

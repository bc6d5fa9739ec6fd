//! Whose data a statement reads or writes: one user of one tenant, passed as one value.

use super::{TenantId, UserId};

/// A user of a tenant, the owner of the rows a function touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner<'a> {
    pub tenant: &'a TenantId,
    pub user: &'a UserId,
}

impl<'a> Owner<'a> {
    pub fn new(tenant: &'a TenantId, user: &'a UserId) -> Self {
        Self { tenant, user }
    }
}

//! Identifier newtypes: tenants, users, sessions and client event ids.

use std::fmt;

use super::ValidationError;

/// Characters allowed in user, session and client event ids.
const ID_CHARSET: &str = "letters, digits and . _ - : @";
const MAX_ID_LEN: usize = 128;
const MAX_TENANT_LEN: usize = 64;

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '@')
}

fn check_id(
    field: &str,
    value: &str,
    max: usize,
    allowed: fn(char) -> bool,
    charset: &str,
) -> Result<(), ValidationError> {
    if value.is_empty() {
        return Err(ValidationError::new(field, "must not be empty"));
    }
    if value.len() > max {
        return Err(ValidationError::new(field, format!("must be at most {max} characters")));
    }
    if !value.chars().all(allowed) {
        return Err(ValidationError::new(field, format!("may contain only {charset}")));
    }
    Ok(())
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $field:literal, $max:expr, $allowed:expr, $charset:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn parse(value: impl Into<String>) -> Result<Self, ValidationError> {
                let value = value.into();
                check_id($field, &value, $max, $allowed, $charset)?;
                Ok(Self(value))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

id_type!(
    /// A tenant: lowercase letters, digits, `_` and `-`, at most 64 characters.
    TenantId, "tenant", MAX_TENANT_LEN,
    |c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-',
    "lowercase letters, digits, _ and -"
);
id_type!(
    /// A user of a tenant's agent platform.
    UserId, "user_id", MAX_ID_LEN, is_id_char, ID_CHARSET
);
id_type!(
    /// A conversation session of one user.
    SessionId, "session_id", MAX_ID_LEN, is_id_char, ID_CHARSET
);
id_type!(
    /// The client's own id for an event; makes retried ingests idempotent.
    ClientEventId, "id", MAX_ID_LEN, is_id_char, ID_CHARSET
);

impl SessionId {
    /// A fresh id for a session engram opens itself.
    pub fn generate() -> Self {
        Self(format!("s-{}", uuid::Uuid::now_v7()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_accept_the_documented_charset() {
        assert!(UserId::parse("alice.smith@example.com").is_ok());
        assert!(SessionId::parse("D1:3_x-y").is_ok());
        assert!(TenantId::parse("acme-prod_2").is_ok());
    }

    #[test]
    fn ids_reject_empty_long_and_foreign_characters() {
        assert_eq!(UserId::parse("").unwrap_err().field, "user_id");
        assert!(UserId::parse("a".repeat(129)).is_err());
        assert!(UserId::parse("a".repeat(128)).is_ok());
        assert!(UserId::parse("a b").is_err());
        assert!(UserId::parse("李明").is_err());
        assert!(TenantId::parse("Acme").is_err());
        assert!(ClientEventId::parse("x\0").is_err());
    }
}

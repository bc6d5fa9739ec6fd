//! Identifier newtypes: tenants, users, sessions and client event ids, and the ids
//! engram makes (memories, entities, runs, a listing's cursor).

use std::fmt;

use serde::Deserialize;

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

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                Self::parse(String::deserialize(deserializer)?).map_err(|e| serde::de::Error::custom(e.message))
            }
        }

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

        /// Read from a text column, checked as when it was written.
        impl sqlx::Type<sqlx::Postgres> for $name {
            fn type_info() -> sqlx::postgres::PgTypeInfo {
                <String as sqlx::Type<sqlx::Postgres>>::type_info()
            }

            fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
                <String as sqlx::Type<sqlx::Postgres>>::compatible(ty)
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::Postgres> for $name {
            fn decode(value: sqlx::postgres::PgValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
                Ok(Self::parse(<String as sqlx::Decode<'r, sqlx::Postgres>>::decode(value)?)?)
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

/// Ids engram makes (UUIDs): read from a path, a query or a tool's arguments, a
/// malformed one is refused naming its field.
macro_rules! made_id {
    ($(#[$doc:meta])* $name:ident, $field:literal, $message:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(pub uuid::Uuid);

        impl $name {
            pub fn parse(text: &str) -> Result<Self, ValidationError> {
                text.trim().parse().map(Self).map_err(|_| ValidationError::new($field, $message))
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.trim().parse().map(Self).map_err(|_| serde::de::Error::custom($message))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

made_id!(
    /// A memory's id.
    MemoryId, "memory_id", "must be a UUID"
);
made_id!(
    /// An entity's id.
    EntityId, "entity_id", "must be a UUID"
);
made_id!(
    /// A job run's id.
    RunId, "run_id", "must be a UUID"
);
made_id!(
    /// Where a listing's next page starts: the `next_cursor` of the page before.
    Cursor, "cursor", "is not a cursor this API returned"
);

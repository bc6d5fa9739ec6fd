//! engram's text rules, English and Chinese, as pure functions: sentence in, structure
//! out. No database, no model, nothing async: a rule's test runs with
//! `cargo test -p engram-language` in seconds. Each rule family is one module with its
//! words and patterns beside it:
//!
//! - [`text`]: sentences, word counts, small talk, token estimates;
//! - [`technologies`]: the lexicon of technologies a fact or a relation is keyed by;
//! - [`relations`]: entities and relations, the user's own name, names' other spellings;
//! - [`facts`]: what users say about themselves, and the changes they announce;
//! - [`when`]: time phrases and the windows they mean, words of the present, dates as written;
//! - [`forget`]: requests to forget said in conversation, and what they refer to;
//! - [`secrets`]: the secrets never stored, found and redacted;
//! - [`terms`]: a query's terms for keyword search, and their weights;
//! - [`question_names`]: the names a question writes, and the question without them;
//! - [`configured`]: patterns an operator configures, and their defaults.

pub mod configured;
pub mod facts;
pub mod forget;
pub mod question_names;
pub mod relations;
pub mod secrets;
pub mod technologies;
pub mod terms;
pub mod text;
pub mod when;

//! The instruments: `engram bench` (load scenarios against a running application) and
//! `engram eval` (memory quality, and LoCoMo through the public API).

pub mod bench;
pub mod eval;

//! The skill registry on fixtures: valid and invalid skills, precedence and shadowing, the
//! index within its budget, ranking, loading, files read from a skill, and the directory hash.
#![allow(clippy::unwrap_used)]

mod registry;

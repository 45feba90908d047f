//! warden's skill registry (SPEC K1–K6): packages of task know-how, `SKILL.md` with optional
//! `references/`, `scripts/` and `assets/`, found across roots in precedence order
//! ([`discover`] into a [`Registry`]), listed to the model within a budget ([`Registry::index`]),
//! ranked for a task ([`Registry::rank`]) and read on demand ([`Registry::load`]). What a skill
//! may do while it is active is declared here and enforced by the policy engine; this crate
//! runs nothing.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod frontmatter;
mod index;
mod matching;
mod name;
mod registry;
mod search;
mod validate;

use std::path::PathBuf;

pub use frontmatter::{Frontmatter, MAX_COMPATIBILITY, MAX_DESCRIPTION, Permissions};
pub use index::Index;
pub use matching::Ranked;
pub use name::{MAX_NAME, NameError, SkillName};
pub use registry::{
    Loaded, Problem, Registry, Root, Severity, Skill, discover, standard_roots, tree_hash,
};
pub use validate::validate;

/// What can go wrong using a skill.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    #[error("no skill {name:?}; the skills here are: {}", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    Unknown { name: String, known: Vec<String> },
    #[error("the skill {name:?} is no longer valid: {}", reasons.join("; "))]
    Invalid { name: String, reasons: Vec<String> },
    #[error(
        "{path:?} is not a file of the skill {name:?}: give a path inside its directory, like references/api.md"
    )]
    Outside { name: String, path: String },
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: String },
}

//! warden's context manager (SPEC C1–C8): what the model sees. Selection, trimming and
//! compression are separate pieces: [`build`] selects and trims the conversation within budget
//! and reports what each layer got; the identifier extractor is what compaction checks a summary
//! with (a summary must keep every opaque identifier of what it replaces).
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod builder;
pub mod compaction;
mod identifiers;
mod score;
mod symbols;
mod tokens;
mod untrusted;

pub use builder::{Built, Fate, Input, Layer, Report, build, item_tokens};
pub use identifiers::{Identifier, Kind, extract, holds, known_in, missing};
pub use score::{Score, Signals, failed};
pub use symbols::{defined, symbols_of};
pub use tokens::{Tokens, calibrate, estimate};
pub use untrusted::Shield;

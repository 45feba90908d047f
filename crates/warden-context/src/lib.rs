//! warden's context manager (SPEC C1–C8): what the model sees. Selection, trimming and
//! compression are separate pieces. This first part is the identifier extractor compaction
//! relies on: a summary must keep every opaque identifier of what it replaces.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod identifiers;

pub use identifiers::{Identifier, Kind, extract, missing};

//! Integration tests of warden-trace, one binary.
// Helpers outside `#[test]` functions panic on purpose too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;

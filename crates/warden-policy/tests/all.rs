//! Integration tests of the policy engine: the data-driven corpus, properties, explanations.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approvals;
mod corpus;
mod fixture;
mod narrowing;
mod properties;
mod tokenizer;
mod trust;

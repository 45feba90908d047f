//! Manifests: the seed's example as it is, the templates, and malformed or policy-violating
//! manifests each giving the right error at the right place.
#![allow(clippy::unwrap_used)]

mod docs;
mod validate;

mod durability;
mod redaction;
mod store;
mod support;

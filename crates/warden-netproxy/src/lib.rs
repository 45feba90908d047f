//! warden's egress proxy (SPEC X2, R3): with the network in `allowlist` mode, the only way out
//! of a sandbox. A [`Proxy`] serves the listening socket of each sandbox's network namespace:
//! HTTP (absolute-form requests and `CONNECT`) and SOCKS5 on one port. Each connection is
//! decided by the [`NetPolicy`] — deny entries, allow entries by host and port, no address
//! literal unless named — then resolved here (there is no resolver inside) and checked again by
//! address (no private ranges unless named), and connected to at exactly the address checked.
//! A tunnel to TLS must ask for the server it asked the proxy for; a plain request's `Host`
//! must be its URL's. Every connection ends in a [`Record`].
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod ca;
mod host;
mod http;
mod intercept;
mod io;
mod path;
mod policy;
mod server;
mod socks;
mod state;
pub mod tls;
mod tunnel;
mod wire;

pub use ca::Injection;
pub use host::{DEFAULT_PORTS, Entry, Host, HostError, Pattern, private_range, split_port};
pub use policy::{NetPolicy, Verdict};
pub use server::Proxy;
pub use state::{
    Answer, Ask, Config, Counts, Gate, GateAnswer, GateRequest, Record, Resolver, Sink,
};

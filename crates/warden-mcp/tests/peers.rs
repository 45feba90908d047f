//! Where the real servers the tests speak to are installed.
#![allow(dead_code)]

use std::path::PathBuf;

/// `server-everything`'s script, if installed under `target/mcp-peers` (`.ci/run` installs it;
/// `WARDEN_MCP_PEERS` names another place). Missing, it fails the test where
/// `WARDEN_REQUIRE_PEERS` is set and skips it, saying so, elsewhere.
pub(crate) fn everything() -> Option<PathBuf> {
    let script =
        folder().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    found(script)
}

/// The folder the peers are installed in.
pub(crate) fn folder() -> PathBuf {
    std::env::var_os("WARDEN_MCP_PEERS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-peers"),
        PathBuf::from,
    )
}

/// `path` if it exists; otherwise a failure where peers are required, a skip elsewhere.
pub(crate) fn found(path: PathBuf) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("WARDEN_REQUIRE_PEERS").is_none(),
        "{} is not installed (see .ci/run)",
        path.display()
    );
    eprintln!("skipped: {} is not installed", path.display());
    None
}

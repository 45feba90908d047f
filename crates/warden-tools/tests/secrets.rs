//! One secret list: for any tree of files, the file tools refuse exactly the files the sandbox
//! masks for a command (its plan mounts the mask over them), templates and certificates stay
//! readable to both, and another name (a hard link) of a secret is a secret to both.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use warden_protocol::ToolErrorKind;
use warden_sandbox::{Mount, Plan, request_from_settings};

use crate::support::Workspace;

const KEY: &str = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n";
const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBszCC\n-----END CERTIFICATE-----\n";

/// Names and contents a generated tree draws from: secrets by name, by content, near misses.
const NAMES: &[&str] = &[
    ".env",
    ".env.local",
    ".env.example",
    ".env.dist",
    "id_rsa",
    "id_rsa.pub",
    "id_ecdsa_ci",
    "store.p12",
    "vault.kdbx",
    "server.key",
    "server.pem",
    "server.crt",
    "server",
    "client.DER",
    "Server.KEY",
    ".ENV",
    "cacert.pem",
    ".npmrc",
    ".yarnrc.yml",
    "README.md",
    "Makefile",
    "environment.rs",
];

const CONTENTS: &[&str] = &[
    KEY,
    CERT,
    "//registry.example/:_authToken=abc\n",
    "registry=https://registry.example/\n",
    "plain text\n",
];

const DIRS: &[&str] = &["", "app/", "app/config/", "tls/", "deep/er/"];

/// What the sandbox's plan masks: the targets of its mask mounts.
fn masked_by_the_sandbox(ws: &Workspace) -> Vec<PathBuf> {
    let ctx = ws.ctx();
    let mut request = request_from_settings(&ws.settings, &ws.root(), "true", &[], &[]).unwrap();
    request.mask = ctx.mask.clone();
    let plan = Plan::new(&request).unwrap();
    plan.mounts
        .iter()
        .filter_map(|m| match m {
            Mount::MaskFile { target } => Some(target.clone()),
            _ => None,
        })
        .filter(|t| t.starts_with(ws.root()))
        .collect()
}

/// Whether the file tools refuse to read `rel` as a denied path.
fn refused_by_the_tools(ws: &Workspace, rel: &str) -> bool {
    refused_in(&ws.ctx(), rel)
}

fn refused_in(ctx: &warden_tools::ToolContext, rel: &str) -> bool {
    let registry = registry();
    match registry.call(ctx, "readFile", serde_json::json!({"path": rel})) {
        Ok(_) => false,
        Err(e) => {
            assert_eq!(e.kind, ToolErrorKind::DeniedPath, "{rel}: {}", e.message);
            true
        }
    }
}

fn registry() -> &'static warden_tools::Registry {
    static REGISTRY: std::sync::OnceLock<warden_tools::Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| warden_tools::Registry::builtin().unwrap())
}

fn files_of(ws: &Workspace, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if path.is_dir() {
            files_of(ws, &path, out);
        } else {
            let rel = path.strip_prefix(ws.root()).unwrap();
            out.push(rel.display().to_string());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_tools_and_the_sandbox_give_the_same_answer(
        files in proptest::collection::vec(
            (0..DIRS.len(), 0..NAMES.len(), 0..CONTENTS.len()),
            1..14,
        ),
        link in proptest::option::of((0..14usize, 0..14usize)),
    ) {
        let ws = Workspace::new();
        let mut written = Vec::new();
        for (dir, name, content) in &files {
            let rel = format!("{}{}", DIRS[*dir], NAMES[*name]);
            ws.write(&rel, CONTENTS[*content]);
            written.push(rel);
        }
        // Sometimes one file is also another's hard link.
        if let Some((from, to)) = link
            && let (Some(a), Some(b)) = (written.get(from % written.len()), written.get(to % written.len()))
            && a != b
        {
            let _ = std::fs::remove_file(ws.root().join(b));
            std::fs::hard_link(ws.root().join(a), ws.root().join(b)).unwrap();
        }
        let masked = masked_by_the_sandbox(&ws);
        let mut all = Vec::new();
        files_of(&ws, &ws.root(), &mut all);
        let ctx = ws.ctx();
        for rel in all {
            let sandbox = masked.contains(&ws.root().join(&rel));
            let tools = refused_in(&ctx, &rel);
            prop_assert_eq!(tools, sandbox, "{} ({:?})", rel, std::fs::read_to_string(ws.root().join(&rel)));
        }
    }
}

#[test]
fn templates_certificates_and_token_free_npmrc_stay_readable_to_both() {
    let ws = Workspace::new();
    for (rel, content) in [
        (".env.example", "API_KEY=\n"),
        ("venv/lib/certifi/cacert.pem", CERT),
        (".npmrc", "registry=https://registry.example/\n"),
        ("tls/server.crt", CERT),
    ] {
        ws.write(rel, content);
    }
    ws.write(".env", "API_KEY=live\n");
    let masked = masked_by_the_sandbox(&ws);
    assert_eq!(masked, [ws.root().join(".env")]);
    for rel in [
        ".env.example",
        "venv/lib/certifi/cacert.pem",
        ".npmrc",
        "tls/server.crt",
    ] {
        assert!(!refused_by_the_tools(&ws, rel), "{rel}");
    }
    assert!(refused_by_the_tools(&ws, ".env"));
}

#[test]
fn another_name_of_a_secret_is_a_secret() {
    let ws = Workspace::new();
    ws.write(".env", "API_KEY=live\n");
    ws.write("notes.txt", "plain\n");
    // The probe: an ordinary file is readable through its name.
    assert!(!refused_by_the_tools(&ws, "notes.txt"));
    std::fs::remove_file(ws.root().join("notes.txt")).unwrap();
    std::fs::hard_link(ws.root().join(".env"), ws.root().join("notes.txt")).unwrap();
    assert!(refused_by_the_tools(&ws, "notes.txt"));
    assert!(masked_by_the_sandbox(&ws).contains(&ws.root().join("notes.txt")));
}

#[test]
fn a_search_skips_another_name_of_a_secret_and_finds_other_linked_files() {
    let ws = Workspace::new();
    ws.write(".env", "API_KEY=LINKED-31337\n");
    ws.write("plain.txt", "PLAIN-31337\n");
    std::fs::hard_link(ws.root().join("plain.txt"), ws.root().join("plain2.txt")).unwrap();
    let registry = registry();
    let grep = |pattern: &str| {
        let args = serde_json::json!({"pattern": pattern, "path": "."});
        serde_json::to_string(&registry.call(&ws.ctx(), "grep", args).unwrap()).unwrap()
    };
    // The probe: an ordinary name of the same content is found.
    std::fs::write(ws.root().join("notes.txt"), "API_KEY=LINKED-31337\n").unwrap();
    assert!(grep("LINKED-31337").contains("notes.txt"));
    std::fs::remove_file(ws.root().join("notes.txt")).unwrap();
    std::fs::hard_link(ws.root().join(".env"), ws.root().join("notes.txt")).unwrap();
    let found = grep("LINKED-31337");
    assert!(!found.contains("notes.txt"), "{found}");
    let found = grep("PLAIN-31337");
    assert!(
        found.contains("plain.txt") && found.contains("plain2.txt"),
        "{found}"
    );
}

#[test]
fn unmask_makes_a_secret_readable_to_both_and_says_so() {
    let mut ws = Workspace::new();
    ws.write(".env", "API_KEY=dev\n");
    ws.write("tls/dev.key", KEY);
    ws.settings.permissions.unmask = vec![".env".to_owned()];
    let masked = masked_by_the_sandbox(&ws);
    assert_eq!(masked, [ws.root().join("tls/dev.key")]);
    let read = ws
        .call("readFile", serde_json::json!({"path": ".env"}))
        .unwrap();
    assert_eq!(read["unmaskedSecret"], ".env");
    assert!(refused_by_the_tools(&ws, "tls/dev.key"));
    // A search reads it too, and says so.
    let found = ws
        .call("grep", serde_json::json!({"pattern": "API_KEY"}))
        .unwrap();
    assert_eq!(found["files"][0]["path"], ".env", "{found}");
    assert_eq!(
        found["unmaskedSecrets"],
        serde_json::json!([".env"]),
        "{found}"
    );
}

//! The reference servers people plug in first, each inside warden's sandbox: npm's
//! `server-filesystem` and the Python Package Index's `mcp-server-git` and `mcp-server-time` (`.ci/run` installs
//! them under `target/mcp-peers`). Each probe first shows what the server does as the user
//! (`sandbox = false`), then that the sandbox stops it: both servers are told they may write the
//! project, and only the sandbox's read-only project keeps them from it.

use std::path::{Path, PathBuf};

use super::{modules, peer, peers};
use crate::support::{Project, git, sandbox_available};

/// The user's settings holding `servers` (TOML tables) and a rule allowing every tool of them.
fn with_servers(p: &Project, allow: &str, servers: &str) {
    let dir = p.tmp().join("home/.config/warden");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.toml"),
        format!("[permissions]\nallow = [{allow}]\n{servers}"),
    )
    .unwrap();
}

/// The Python of the peers' virtual environment, and the environment (what it must read).
fn python() -> Option<(PathBuf, PathBuf)> {
    let python = peer("venv/bin/python")?;
    Some((python, std::path::absolute(peers().join("venv")).unwrap()))
}

fn call(p: &Project, server: &str, tool: &str, args: &serde_json::Value) -> crate::support::Run {
    p.run(&["mcp", "call", server, tool, "--args", &args.to_string()])
}

fn filesystem(p: &Project, script: &Path, sandbox: bool) {
    with_servers(
        p,
        "\"Mcp(fs)\"",
        &format!(
            "[mcp.servers.fs]\ncommand = \"node\"\nargs = [{:?}, {:?}]\nallow_read = [{:?}]\n\
             sandbox = {sandbox}\n",
            script.display().to_string(),
            p.root().display().to_string(),
            modules(script).display().to_string(),
        ),
    );
}

#[test]
fn the_filesystem_server_reads_the_project_and_cannot_write_it_from_the_sandbox() {
    let Some(script) = peer("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
    else {
        return;
    };
    let script = script.canonicalize().unwrap();
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    p.write("notes.txt", "kept in the project\n");
    let target = p.root().join("planted.txt");
    let write = serde_json::json!({"path": target, "content": "planted"});
    // As the user, the server writes where it was told it may.
    filesystem(&p, &script, false);
    let unsandboxed = call(&p, "fs", "write_file", &write);
    assert_eq!(
        unsandboxed.code, 0,
        "{}{}",
        unsandboxed.stdout, unsandboxed.stderr
    );
    assert!(
        target.exists(),
        "the probe did not write: {}",
        unsandboxed.stdout
    );
    std::fs::remove_file(&target).unwrap();
    // In the sandbox, it reads the project and lists its tools as ever, and cannot write.
    filesystem(&p, &script, true);
    let tools = p.run(&["mcp", "tools", "fs"]);
    assert!(
        tools.stdout.contains("mcp__fs__read_text_file"),
        "{}",
        tools.stdout
    );
    let read = call(
        &p,
        "fs",
        "read_text_file",
        &serde_json::json!({"path": p.root().join("notes.txt")}),
    );
    assert_eq!(read.code, 0, "{}{}", read.stdout, read.stderr);
    assert!(
        read.stdout.contains("kept in the project"),
        "{}",
        read.stdout
    );
    assert_eq!(read.json()["server"], "fs");
    let sandboxed = call(&p, "fs", "write_file", &write);
    assert!(
        !target.exists(),
        "the server wrote from the sandbox: {}",
        sandboxed.stdout
    );
    assert!(
        sandboxed.stdout.contains("Read-only") || sandboxed.stdout.contains("EROFS"),
        "{}",
        sandboxed.stdout
    );
}

#[test]
fn the_git_server_reads_the_repository_and_cannot_change_it_from_the_sandbox() {
    let Some((python, venv)) = python() else {
        return;
    };
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    git(&p.root(), &["init", "-q"]);
    p.write("a.txt", "one\n");
    git(&p.root(), &["add", "a.txt"]);
    git(&p.root(), &["commit", "-qm", "first"]);
    p.write("b.txt", "two\n");
    let settings = |sandbox: bool| {
        format!(
            "[mcp.servers.git]\ncommand = {:?}\nargs = [\"-m\", \"mcp_server_git\", \
             \"--repository\", {:?}]\nallow_read = [{:?}]\nsandbox = {sandbox}\n",
            python.display().to_string(),
            p.root().display().to_string(),
            venv.display().to_string(),
        )
    };
    let repo = p.root().display().to_string();
    let add = serde_json::json!({"repo_path": repo, "files": ["b.txt"]});
    let staged = || git(&p.root(), &["diff", "--cached", "--name-only"]);
    // As the user, the server stages the file.
    with_servers(&p, "\"Mcp(git)\"", &settings(false));
    let unsandboxed = call(&p, "git", "git_add", &add);
    assert_eq!(
        unsandboxed.code, 0,
        "{}{}",
        unsandboxed.stdout, unsandboxed.stderr
    );
    assert_eq!(
        staged(),
        "b.txt",
        "the probe did not stage: {}",
        unsandboxed.stdout
    );
    git(&p.root(), &["reset", "-q"]);
    // In the sandbox it reads the history and cannot stage.
    with_servers(&p, "\"Mcp(git)\"", &settings(true));
    let log = call(
        &p,
        "git",
        "git_log",
        &serde_json::json!({"repo_path": repo}),
    );
    assert_eq!(log.code, 0, "{}{}", log.stdout, log.stderr);
    assert!(log.stdout.contains("first"), "{}", log.stdout);
    let sandboxed = call(&p, "git", "git_add", &add);
    assert_eq!(
        staged(),
        "",
        "the server staged from the sandbox: {}",
        sandboxed.stdout
    );
    assert_eq!(
        sandboxed.json()["error"]["kind"],
        "failed",
        "{}",
        sandboxed.stdout
    );
    assert!(
        sandboxed.stdout.contains("Read-only"),
        "{}",
        sandboxed.stdout
    );
}

#[test]
fn the_time_server_answers_from_the_sandbox_and_is_asked_about_without_a_rule() {
    let Some((python, venv)) = python() else {
        return;
    };
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let server = format!(
        "[mcp.servers.time]\ncommand = {:?}\nargs = [\"-m\", \"mcp_server_time\", \
         \"--local-timezone\", \"UTC\"]\nallow_read = [{:?}]\n",
        python.display().to_string(),
        venv.display().to_string(),
    );
    let now = serde_json::json!({"timezone": "Europe/Paris"});
    with_servers(&p, "", &server);
    let asked = call(&p, "time", "get_current_time", &now);
    assert_eq!(
        asked.json()["error"]["kind"],
        "needs_approval",
        "{}",
        asked.stdout
    );
    with_servers(&p, "\"Mcp(time:get_current_time)\"", &server);
    let answered = call(&p, "time", "get_current_time", &now);
    assert_eq!(answered.code, 0, "{}{}", answered.stdout, answered.stderr);
    assert!(
        answered.stdout.contains("Europe/Paris"),
        "{}",
        answered.stdout
    );
    // The rule names one tool: the other is still asked about.
    let other = call(
        &p,
        "time",
        "convert_time",
        &serde_json::json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    );
    assert_eq!(
        other.json()["error"]["kind"],
        "needs_approval",
        "{}",
        other.stdout
    );
}

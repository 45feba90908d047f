//! MCP servers through the CLI: listed, their tools offered as `mcp__SERVER__TOOL`, asked about
//! by default and run when a rule allows them, recorded in the trace; a project's servers only
//! once it is trusted. The server is npm's `@modelcontextprotocol/server-everything`, which
//! `.ci/run` installs under `target/mcp-peers`.

use std::path::PathBuf;

mod hostile;
mod login;
mod serve;
mod serve_http;
mod servers;

use crate::support::Project;

/// Where `.ci/run` installs the real servers (`WARDEN_MCP_PEERS` names another place).
fn peers() -> PathBuf {
    std::env::var_os("WARDEN_MCP_PEERS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-peers"),
        PathBuf::from,
    )
}

/// `relative` under the peers' folder, if installed (required where `WARDEN_REQUIRE_PEERS` is
/// set).
fn peer(relative: &str) -> Option<PathBuf> {
    let path = peers().join(relative);
    if path.exists() {
        return Some(std::path::absolute(&path).unwrap());
    }
    assert!(
        std::env::var_os("WARDEN_REQUIRE_PEERS").is_none(),
        "{} is not installed (see .ci/run)",
        path.display()
    );
    eprintln!("skipped: {} is not installed", path.display());
    None
}

/// `server-everything`'s script.
fn everything() -> Option<PathBuf> {
    peer("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .map(|p| p.canonicalize().unwrap())
}

/// The outermost `node_modules` above the script: what node reads its libraries from.
fn modules(script: &std::path::Path) -> &std::path::Path {
    script
        .ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last()
        .unwrap()
}

/// The user's settings with the server (inside the sandbox, reading its `node_modules`), and
/// `extra` before it.
fn with_server(p: &Project, script: &std::path::Path, extra: &str) {
    let dir = p.tmp().join("home/.config/warden");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.toml"),
        format!(
            "{extra}\n[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
             allow_read = [{:?}]\n",
            script.display().to_string(),
            modules(script).display().to_string()
        ),
    )
    .unwrap();
}

#[test]
fn a_tool_of_a_server_is_asked_about_until_a_rule_allows_it_and_is_traced() {
    let Some(script) = everything() else { return };
    let p = Project::new();
    with_server(&p, &script, "");
    let listed = p.run(&["mcp", "list"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.contains("everything"), "{}", listed.stdout);
    let tools = p.run(&["mcp", "tools", "everything"]);
    assert!(
        tools.stdout.contains("mcp__everything__echo"),
        "{}",
        tools.stdout
    );
    // The server says echo only reads (readOnlyHint): that is not taken on its word.
    let asked = p.run(&[
        "mcp",
        "call",
        "everything",
        "echo",
        "--args",
        r#"{"message":"hi"}"#,
    ]);
    assert_eq!(asked.code, 1, "{}", asked.stdout);
    assert_eq!(asked.json()["error"]["kind"], "needs_approval");
    assert!(asked.stdout.contains("Mcp(everything)"), "{}", asked.stdout);
    // A rule naming the tool lets it run; the result names the server.
    with_server(
        &p,
        &script,
        "[permissions]\nallow = [\"Mcp(everything:echo)\"]\n",
    );
    let allowed = p.run(&[
        "mcp",
        "call",
        "everything",
        "echo",
        "--args",
        r#"{"message":"hi"}"#,
    ]);
    assert_eq!(allowed.code, 0, "{}{}", allowed.stdout, allowed.stderr);
    let out = allowed.json();
    assert_eq!(out["content"], "Echo: hi");
    assert_eq!(out["server"], "everything");
    // Arguments are checked against the server's schema before anything is sent.
    let bad = p.run(&[
        "mcp",
        "call",
        "everything",
        "echo",
        "--args",
        r#"{"msg":1}"#,
    ]);
    assert_eq!(bad.json()["error"]["kind"], "invalid_arguments");
    // Both calls are in the trace, with the tool's full name and the decision.
    let sessions = p.run(&["trace", "list", "--json"]);
    let sessions: Vec<serde_json::Value> = serde_json::from_str(&sessions.stdout).unwrap();
    let mut tools_seen = Vec::new();
    for session in sessions {
        let id = session["sessionId"]
            .as_str()
            .or(session["id"].as_str())
            .unwrap();
        let shown = p.run(&["trace", "show", id, "--json"]);
        let events: Vec<serde_json::Value> = serde_json::from_str(&shown.stdout).unwrap();
        for event in events {
            if let Some(tool) = event["tool"].as_str() {
                tools_seen.push((tool.to_owned(), event["decision"]["decision"].clone()));
            }
        }
    }
    assert!(
        tools_seen
            .iter()
            .any(|(t, d)| t == "mcp__everything__echo" && d == "allow"),
        "{tools_seen:?}"
    );
    assert!(
        tools_seen
            .iter()
            .any(|(t, d)| t == "mcp__everything__echo" && d == "require_approval"),
        "{tools_seen:?}"
    );
}

#[test]
fn the_policy_knows_the_tools_of_configured_servers_only() {
    let p = Project::new();
    let dir = p.tmp().join("home/.config/warden");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.toml"),
        "[mcp.servers.gh]\ncommand = \"gh-mcp\"\n",
    )
    .unwrap();
    let known = p.run(&["policy", "check", "mcp__gh__search", "{}"]);
    assert_eq!(known.code, 0, "{}", known.stderr);
    assert!(
        known.stdout.starts_with("require_approval"),
        "{}",
        known.stdout
    );
    let unknown = p.run(&["policy", "check", "mcp__other__search", "{}"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("mcp__gh__TOOL"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn a_project_s_server_does_not_start_until_the_project_is_trusted() {
    let p = Project::new();
    // The probe: a "server" that says it started on its standard error (which warden reports
    // when it then fails to speak MCP), in words the settings do not hold.
    p.write(
        ".warden/settings.toml",
        "[mcp.servers.helper]\ncommand = \"sh\"\nargs = [\"-c\", \"echo started-$((40+2)) >&2\"]\n",
    );
    let untrusted = p.run(&["tools"]);
    assert_eq!(untrusted.code, 0, "{}", untrusted.stderr);
    assert!(
        !untrusted.stderr.contains("started-42"),
        "an untrusted project's server was started: {}",
        untrusted.stderr
    );
    assert!(
        untrusted.stderr.contains("mcp.servers"),
        "{}",
        untrusted.stderr
    );
    let listed = p.run(&["mcp", "list"]);
    assert!(!listed.stdout.contains("helper"), "{}", listed.stdout);
    // Once trusted, it is the user's choice: it starts (and fails: it speaks no MCP).
    p.trust();
    let trusted = p.run(&["tools"]);
    assert!(trusted.stderr.contains("started-42"), "{}", trusted.stderr);
}

#[test]
fn servers_are_added_removed_and_imported_into_the_user_s_settings() {
    let p = Project::new();
    let added = p.run(&[
        "mcp",
        "add",
        "gh",
        "--env-var",
        "GITHUB_TOKEN",
        "--",
        "gh-mcp",
        "stdio",
    ]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    let listed = p.run(&["mcp", "list", "--json"]);
    let servers = &listed.json()["servers"];
    assert_eq!(servers["gh"]["command"], "gh-mcp");
    assert_eq!(servers["gh"]["env_vars"][0], "GITHUB_TOKEN");
    assert_eq!(servers["gh"]["sandbox"], true);
    let twice = p.run(&["mcp", "add", "gh", "--", "other"]);
    assert_eq!(twice.code, 2, "{}", twice.stderr);
    // A name whose tools would read back as another server's (`mcp__gh___x` is `gh`'s `_x`).
    for name in ["gh_", "_gh", "g__h"] {
        let refused = p.run(&["mcp", "add", name, "--", "x"]);
        assert_eq!(refused.code, 2, "{name}: {}", refused.stderr);
    }
    assert_eq!(p.run(&["mcp", "remove", "gh"]).code, 0);
    assert_eq!(p.run(&["mcp", "remove", "gh"]).code, 1);
    // Claude Code's .mcp.json in the project: shown, and added only once confirmed.
    p.write(
        ".mcp.json",
        r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "@m/fs", "."], "env": {"TOKEN": "${TOKEN}"}},
            "web": {"type": "http", "url": "https://x.example/mcp"}
        }}"#,
    );
    let unconfirmed = p.run(&["mcp", "import"]);
    assert_eq!(unconfirmed.code, 1, "{}", unconfirmed.stdout);
    assert!(
        unconfirmed
            .stdout
            .contains("add  fs: npx -y @m/fs .  (passes TOKEN)"),
        "{}",
        unconfirmed.stdout
    );
    // An HTTP server is shown with its address (and only the names of its headers).
    assert!(
        unconfirmed
            .stdout
            .contains("add  web: https://x.example/mcp"),
        "{}",
        unconfirmed.stdout
    );
    assert!(!p.run(&["mcp", "list"]).stdout.contains("fs"));
    let imported = p.run(&["mcp", "import", "--yes"]);
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    let listed = p.run(&["mcp", "list", "--json"]);
    assert_eq!(listed.json()["servers"]["fs"]["args"][1], "@m/fs");
    assert_eq!(
        listed.json()["servers"]["web"]["url"],
        "https://x.example/mcp"
    );
    // Once there, it is not imported again.
    let again = p.run(&["mcp", "import", "--yes"]);
    assert!(again.stdout.contains("skip fs"), "{}", again.stdout);
}

#[test]
fn a_server_s_resources_are_listed_and_read_through_the_policy() {
    let Some(script) = everything() else { return };
    let p = Project::new();
    with_server(&p, &script, "");
    let listed = p.run(&["mcp", "resources", "everything", "--json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let out = listed.json();
    let uri = out["resources"][0]["uri"].as_str().unwrap().to_owned();
    assert!(!out["prompts"].as_array().unwrap().is_empty(), "{out}");
    let args = serde_json::json!({"server": "everything", "uri": uri}).to_string();
    // Asked about by default, like the server's tools.
    let asked = p.run(&["tool", "readMcpResource", "--args", &args]);
    assert_eq!(
        asked.json()["error"]["kind"],
        "needs_approval",
        "{}",
        asked.stdout
    );
    // A rule for the server covers its resources.
    with_server(
        &p,
        &script,
        "[permissions]\nallow = [\"Mcp(everything)\"]\n",
    );
    let read = p.run(&["tool", "readMcpResource", "--args", &args]);
    assert_eq!(read.code, 0, "{}{}", read.stdout, read.stderr);
    assert_eq!(read.json()["uri"], uri.as_str());
    assert!(
        !read.json()["content"].as_str().unwrap().is_empty(),
        "{}",
        read.stdout
    );
    // A server that is not configured has no resources to offer.
    let other = serde_json::json!({"server": "nope", "uri": uri}).to_string();
    let refused = p.run(&["tool", "readMcpResource", "--args", &other]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
}

#[test]
fn a_server_s_form_is_asked_on_the_terminal_and_refused_without_one() {
    let Some(script) = everything() else { return };
    let p = Project::new();
    with_server(
        &p,
        &script,
        "[permissions]\nallow = [\"Mcp(everything)\"]\n",
    );
    // Headless, warden does not say it answers forms: the server offers no tool that asks.
    let headless = p.run(&["mcp", "tools", "everything"]);
    assert!(
        !headless.stdout.contains("trigger-elicitation-request"),
        "{}",
        headless.stdout
    );
    // On a terminal, the person is asked each field; what they leave is the form's default.
    let form = r#"{"legal name": "Ada Lovelace", "Agree to the terms": "y"}"#;
    let asked = crate::support::in_a_session_with(
        &p,
        &[("TEST_FORM", form)],
        &[
            env!("CARGO_BIN_EXE_warden"),
            "mcp",
            "call",
            "everything",
            "trigger-elicitation-request",
        ],
        &[],
        &[],
    );
    assert_eq!(asked.code, 0, "{}", asked.stdout);
    assert!(
        asked.stdout.contains("an MCP server asks"),
        "{}",
        asked.stdout
    );
    assert!(
        asked.stdout.contains("server:    everything"),
        "{}",
        asked.stdout
    );
    assert!(asked.stdout.contains("Ada Lovelace"), "{}", asked.stdout);
    assert!(
        asked.stdout.contains("It was a dark and stormy night."),
        "{}",
        asked.stdout
    );
}

#[test]
fn a_server_s_read_only_hints_count_only_where_the_settings_trust_them() {
    let Some(script) = everything() else { return };
    let p = Project::new();
    let echo = [
        "mcp",
        "call",
        "everything",
        "echo",
        "--args",
        r#"{"message":"hi"}"#,
    ];
    let toggle = ["mcp", "call", "everything", "toggle-simulated-logging"];
    let trusting = |extra: &str| {
        with_server(&p, &script, extra);
        let path = p.tmp().join("home/.config/warden/settings.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}trust_hints = true\n")).unwrap();
    };
    // The probe: without trust, echo's readOnlyHint is not taken (asked about above too).
    with_server(&p, &script, "");
    assert_eq!(p.run(&echo).json()["error"]["kind"], "needs_approval");
    // Trusted: a tool that says it only reads runs without a rule; one that says it writes
    // is still asked about.
    trusting("");
    let read = p.run(&echo);
    assert_eq!(read.code, 0, "{}{}", read.stdout, read.stderr);
    assert_eq!(read.json()["content"], "Echo: hi");
    assert_eq!(p.run(&toggle).json()["error"]["kind"], "needs_approval");
    // A deny rule still decides first.
    trusting("[permissions]\ndeny = [\"Mcp(everything:echo)\"]\n");
    let denied = p.run(&echo);
    assert_eq!(
        denied.json()["error"]["kind"],
        "policy_denied",
        "{}",
        denied.stdout
    );
}

#[test]
fn a_user_s_server_does_not_start_in_a_repository_it_does_not_trust() {
    let p = Project::new();
    // The repository ships a module named like the server's: run as `python3 -m` in the
    // repository, it would be the one that runs.
    p.write(
        "mcpshadow.py",
        "import sys\nsys.stderr.write('the repository code ran\\n')\n",
    );
    let server = "[mcp.servers.shadow]\ncommand = \"python3\"\nargs = [\"-m\", \"mcpshadow\"]\n\
                  sandbox = false\nstartup_timeout_seconds = 5\n";
    let settings = p.tmp().join("home/.config/warden/settings.toml");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, server).unwrap();
    let untrusted = p.run(&["mcp", "tools", "shadow"]);
    assert_ne!(untrusted.code, 0);
    assert!(
        !untrusted.stderr.contains("the repository code ran"),
        "{}",
        untrusted.stderr
    );
    assert!(
        untrusted.stderr.contains("No module named mcpshadow"),
        "{}",
        untrusted.stderr
    );
    // The probe: trusted, the project is the server's directory, and its module runs.
    p.trust();
    let trust = std::fs::read_to_string(&settings).unwrap();
    std::fs::write(&settings, format!("{trust}{server}")).unwrap();
    let trusted = p.run(&["mcp", "tools", "shadow"]);
    assert!(
        trusted.stderr.contains("the repository code ran"),
        "{}",
        trusted.stderr
    );
}

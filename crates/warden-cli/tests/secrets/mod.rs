//! Secrets stay unreadable to commands too: each kind, in the workspace, nested, and in a
//! toolchain directory, is first read without the sandbox (the probe works), then by every
//! spelling and program inside it, through `warden exec` and the bash tool; what is not a
//! secret stays readable; the user's `unmask` opens one and is traced, a project's does not.

mod places;
mod session;

use std::path::Path;

use crate::support::{Project, Run, sandbox_available};

const KEY_BEGIN: &str = "-----BEGIN RSA PRIVATE KEY-----";
const CERT: &str = "-----BEGIN CERTIFICATE-----\nPUBLIC-CERT-31337\n-----END CERTIFICATE-----\n";

fn key(marker: &str) -> String {
    format!("{KEY_BEGIN}\n{marker}\n-----END RSA PRIVATE KEY-----\n")
}

/// Each secret: where it is (a path below the project, or `~/` below the home directory) and
/// the marker it holds.
const SECRETS: &[(&str, &str)] = &[
    (".env", "ENV-ROOT-31337"),
    ("app/config/.env.production", "ENV-NESTED-31337"),
    ("deploy/id_rsa", "SSH-KEY-31337"),
    ("tls/server.key", "TLS-KEY-31337"),
    ("tls/server", "BARE-KEY-31337"),
    ("certs/store.p12", "KEYSTORE-31337"),
    (".npmrc", "NPM-TOKEN-31337"),
    ("~/.cargo/credentials.toml", "CARGO-TOKEN-31337"),
    ("~/.cargo/registry/cache/.env", "TOOLCHAIN-ENV-31337"),
    ("~/.npm/_cacache/leaked.pem", "TOOLCHAIN-KEY-31337"),
];

fn place(p: &Project, at: &str, content: &str) {
    let path = match at.strip_prefix("~/") {
        Some(rest) => p.home.join(rest),
        None => p.root().join(at),
    };
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn content_of(at: &str, marker: &str) -> String {
    let path = Path::new(at);
    let extension = path.extension().and_then(|e| e.to_str());
    let name = path.file_name().and_then(|n| n.to_str());
    if matches!(extension, Some("key" | "pem")) || name == Some("server") {
        key(marker)
    } else if name == Some(".npmrc") {
        format!("//registry.example/:_authToken={marker}\n")
    } else {
        format!("SECRET={marker}\n")
    }
}

fn project_with_secrets() -> Project {
    let p = Project::new();
    for (at, marker) in SECRETS {
        place(&p, at, &content_of(at, marker));
    }
    // Beside them, what is not a secret.
    place(&p, "tls/server.crt", CERT);
    place(&p, ".env.example", "API_KEY=TEMPLATE-31337\n");
    place(&p, "venv/lib/certifi/cacert.pem", CERT);
    place(
        &p,
        "web/.npmrc",
        "registry=https://registry.example/ # PLAIN-NPMRC-31337\n",
    );
    p
}

fn shown(at: &str, p: &Project) -> String {
    match at.strip_prefix("~/") {
        Some(rest) => p.home.join(rest).display().to_string(),
        None => at.to_owned(),
    }
}

fn exec(p: &Project, script: &str) -> Run {
    p.run(&["exec", "--", "sh", "-c", script])
}

/// Every way a command might read `path`: plain, a glob, interpreters, archivers, copies, a
/// hard link, `find -exec`.
fn spellings(path: &str) -> String {
    let glob = format!("{}?", &path[..path.len() - 1]);
    let name = Path::new(path).file_name().unwrap().to_str().unwrap();
    [
        format!("cat '{path}'"),
        format!("cat {glob}"),
        format!("python3 -c \"print(open('{path}').read())\""),
        format!("python3 -c \"import glob; [print(open(f).read()) for f in glob.glob('{glob}')]\""),
        format!("node -e \"console.log(require('fs').readFileSync('{path}', 'utf8'))\""),
        format!("tar cf - '{path}' | tar xOf -"),
        format!("cp '{path}' /tmp/copy && cat /tmp/copy"),
        format!("ln '{path}' /tmp/link && cat /tmp/link"),
        format!("find / -xdev -name '{name}' -exec cat {{}} \\; 2>/dev/null"),
    ]
    .join("; ")
}

#[test]
fn every_secret_is_readable_without_the_sandbox_and_by_no_spelling_inside() {
    let p = project_with_secrets();
    if !sandbox_available(&p) {
        return;
    }
    for (at, marker) in SECRETS {
        let path = shown(at, &p);
        // The probe: without the sandbox the secret is there to read.
        let bare = p.run(&["exec", "--no-sandbox", "--", "cat", &path]);
        assert!(
            bare.stdout.contains(marker),
            "{at}: the probe: {}",
            bare.stderr
        );
        // Inside, by every spelling: nothing, and a permission error for the plain read.
        let run = exec(&p, &spellings(&path));
        assert!(
            !run.stdout.contains(marker),
            "{at}: read inside: {}",
            run.stdout
        );
        assert!(!run.stderr.contains(marker), "{at}: {}", run.stderr);
        let plain = exec(&p, &format!("cat '{path}'"));
        assert!(
            plain.stderr.contains("Permission denied"),
            "{at}: {}",
            plain.stderr
        );
    }
}

#[test]
fn what_is_not_a_secret_stays_readable_and_a_masked_name_stays_listable() {
    let p = project_with_secrets();
    if !sandbox_available(&p) {
        return;
    }
    let run = exec(
        &p,
        "cat .env.example venv/lib/certifi/cacert.pem web/.npmrc tls/server.crt; ls -a; ls tls",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    for marker in ["TEMPLATE-31337", "PUBLIC-CERT-31337", "PLAIN-NPMRC-31337"] {
        assert!(run.stdout.contains(marker), "{marker}: {}", run.stdout);
    }
    assert!(run.stdout.contains(".env\n"), "{}", run.stdout);
    assert!(run.stdout.contains("server.key"), "{}", run.stdout);
}

#[test]
fn a_masked_secret_cannot_be_replaced_renamed_or_reached_through_another_name() {
    let p = project_with_secrets();
    if !sandbox_available(&p) {
        return;
    }
    // A hard link made before the run is another name of the same secret.
    std::fs::hard_link(p.root().join(".env"), p.root().join("notes.txt")).unwrap();
    let run = exec(&p, "cat notes.txt");
    assert!(!run.stdout.contains("ENV-ROOT-31337"), "{}", run.stdout);
    for script in [
        "mv .env moved",
        "rm .env",
        "echo x > .env",
        "ln -sf /tmp/x .env",
    ] {
        let run = exec(&p, script);
        assert_ne!(run.code, 0, "{script}");
    }
    assert_eq!(
        std::fs::read_to_string(p.root().join(".env")).unwrap(),
        "SECRET=ENV-ROOT-31337\n"
    );
    // A secret a command makes is its own to read, and masked from the next command on.
    let made = exec(&p, "echo SECRET=MADE-31337 > .env.made && cat .env.made");
    assert!(made.stdout.contains("MADE-31337"), "{}", made.stderr);
    let next = exec(&p, "cat .env.made");
    assert!(!next.stdout.contains("MADE-31337"), "{}", next.stdout);
}

#[test]
fn the_bash_tool_masks_what_warden_exec_masks() {
    let p = project_with_secrets();
    if !sandbox_available(&p) {
        return;
    }
    let args = serde_json::json!({"command": spellings(".env")}).to_string();
    let run = p.run(&["tool", "bash", "--on-ask", "allow", "--args", &args]);
    assert!(!run.stdout.contains("ENV-ROOT-31337"), "{}", run.stdout);
    let args = serde_json::json!({"command": "cat tls/server tls/server.crt"}).to_string();
    let run = p.run(&["tool", "bash", "--on-ask", "allow", "--args", &args]);
    assert!(!run.stdout.contains("BARE-KEY-31337"), "{}", run.stdout);
    assert!(run.stdout.contains("PUBLIC-CERT-31337"), "{}", run.stdout);
}

#[test]
fn the_users_unmask_opens_a_secret_and_is_traced_a_projects_does_nothing() {
    let p = project_with_secrets();
    if !sandbox_available(&p) {
        return;
    }
    // From the project's settings: set aside, still masked.
    p.write(
        ".warden/settings.toml",
        "[permissions]\nunmask = [\".env\"]\n",
    );
    let run = exec(&p, "cat .env");
    assert!(!run.stdout.contains("ENV-ROOT-31337"), "{}", run.stdout);
    assert!(run.stderr.contains("permissions.unmask"), "{}", run.stderr);
    std::fs::remove_file(p.root().join(".warden/settings.toml")).unwrap();
    // From the user's: readable to commands and to the tools, and recorded.
    let dir = p.home.join(".config/warden");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.toml"),
        "[permissions]\nunmask = [\".env\"]\n",
    )
    .unwrap();
    let run = p.run(&["exec", "--json", "--", "cat", ".env"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let json = run.json();
    assert!(
        json["stdout"].as_str().unwrap().contains("ENV-ROOT-31337"),
        "{json}"
    );
    let unmasked = json["sandbox"]["unmaskedSecrets"].to_string();
    assert!(unmasked.contains("/.env\""), "{unmasked}");
    let store = warden_trace::TraceStore::open(&p.home.join("warden/trace.db")).unwrap();
    let recorded = store
        .agent_events_of_kind("unmasked_secrets_readable")
        .unwrap();
    assert!(
        recorded[0]["unmaskedSecrets"]
            .to_string()
            .contains("/.env\""),
        "{recorded:?}"
    );
    let read = p.run(&["tool", "readFile", "--args", r#"{"path": ".env"}"#]);
    assert_eq!(read.json()["unmaskedSecret"], ".env", "{}", read.stdout);
    // The other secrets stay masked.
    let run = exec(&p, "cat app/config/.env.production");
    assert!(!run.stdout.contains("ENV-NESTED-31337"));
}

#[test]
fn the_doctor_tries_every_layer_and_says_how() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let run = p.run(&["sandbox", "doctor"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    for layer in [
        "user-namespace",
        "mount-namespace",
        "pid-namespace",
        "network-namespace",
        "capabilities-dropped",
        "no-new-privs",
        "seccomp",
        "clean-environment",
        "closed-descriptors",
        "masked-file",
        "denied-path",
        "secret-list",
        "network",
        "process-limit",
        "memory-limit",
        "file-size-limit",
        "timeout",
    ] {
        let line = run
            .stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(layer))
            .unwrap_or_else(|| panic!("{layer}: {}", run.stdout));
        assert!(line.starts_with("works"), "{line}");
    }
    // Each says what was tried and how it was stopped.
    assert!(
        run.stdout
            .contains("reading a masked file: refused (Permission denied")
    );
    assert!(run.stdout.contains("ptrace(PTRACE_TRACEME): refused"));
    // A layer the user's settings turn off is reported missing, and the doctor still passes.
    user_settings(&p, "[permissions]\nunmask = [\".env\"]\n");
    let run = p.run(&["sandbox", "doctor"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("secret-list"))
        .unwrap_or_default();
    assert!(line.starts_with("missing"), "{}", run.stdout);
    assert!(line.contains("unmask"), "{line}");
}

/// The user's own settings file, as a person would write it.
fn user_settings(p: &Project, text: &str) {
    let dir = p.home.join(".config/warden");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.toml"), text).unwrap();
}

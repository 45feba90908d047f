//! Secrets stay unreadable to commands too: each kind, in the workspace, nested, and in a
//! toolchain directory, is first read without the sandbox (the probe works), then by every
//! spelling and program inside it, through `warden exec` and the bash tool; what is not a
//! secret stays readable; the user's `unmask` opens one and is traced, a project's does not.

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

#[test]
fn credentials_stay_masked_through_a_home_that_is_a_link_and_their_directories_hide_whole() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    place(
        &p,
        "~/.cargo/credentials.toml",
        "token = \"CARGO-LINKED-31337\"\n",
    );
    place(
        &p,
        "~/.config/gh/hosts.yml",
        "oauth_token: GH-TOKEN-31337\n",
    );
    place(
        &p,
        "~/.config/gcloud/credentials.db",
        "GCLOUD-TOKEN-31337\n",
    );
    place(
        &p,
        "~/.config/gcloud/configurations/config_default",
        "GCLOUD-CONFIG-31337\n",
    );
    place(&p, "~/.config/other/notes", "NOT-A-SECRET-31337\n");
    user_settings(&p, "[sandbox.filesystem]\nallow_read = [\"~/.config\"]\n");
    // HOME is a link to the real home directory, as on machines with /home elsewhere.
    let link = p.tmp().join("home-link");
    std::os::unix::fs::symlink(&p.home, &link).unwrap();
    let run_as = |args: &[&str]| {
        let mut command = p.command();
        command.env("HOME", &link).args(args);
        crate::support::finish(&command.output().unwrap())
    };
    let files = "cat \"$HOME/.cargo/credentials.toml\" \"$HOME/.config/gh/hosts.yml\" \
                 \"$HOME/.config/gcloud/credentials.db\" \
                 \"$HOME/.config/gcloud/configurations/config_default\" \
                 \"$HOME/.config/other/notes\"";
    let bare = run_as(&["exec", "--no-sandbox", "--", "sh", "-c", files]);
    let markers = [
        "CARGO-LINKED-31337",
        "GH-TOKEN-31337",
        "GCLOUD-TOKEN-31337",
        "GCLOUD-CONFIG-31337",
    ];
    for marker in markers {
        assert!(
            bare.stdout.contains(marker),
            "the probe: {marker}: {}",
            bare.stderr
        );
    }
    let script = format!(
        "{files}; ls -a \"$HOME/.config/gh\"; {}",
        spellings("$HOME/.config/gh/hosts.yml")
    );
    let run = run_as(&["exec", "--", "sh", "-c", &script]);
    for marker in markers {
        assert!(!run.stdout.contains(marker), "{marker}: {}", run.stdout);
    }
    assert!(run.stdout.contains("NOT-A-SECRET-31337"), "{}", run.stderr);
    assert!(!run.stdout.contains("hosts.yml"), "{}", run.stdout);
    // The user unmasks one file of a credential directory: that one opens, the rest stays
    // hidden, and the home's hidden credentials ignore an unmask.
    user_settings(
        &p,
        "[sandbox.filesystem]\nallow_read = [\"~/.config\"]\n\
         [permissions]\nunmask = [\"~/.config/gcloud/configurations/**\", \"~/.config/gh\"]\n",
    );
    let run = run_as(&["exec", "--", "sh", "-c", files]);
    assert!(run.stdout.contains("GCLOUD-CONFIG-31337"), "{}", run.stderr);
    for marker in ["GCLOUD-TOKEN-31337", "GH-TOKEN-31337", "CARGO-LINKED-31337"] {
        assert!(!run.stdout.contains(marker), "{marker}: {}", run.stdout);
    }
}

#[test]
fn a_readable_roots_other_name_for_a_key_and_a_single_file_root_are_masked() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    // A key kept outside every root, and a plain file, each with a second name in a root the
    // user lets commands read.
    let away = p.tmp().join("away");
    std::fs::create_dir_all(&away).unwrap();
    std::fs::write(away.join("deploy"), key("LINKED-KEY-31337")).unwrap();
    std::fs::write(away.join("plain"), "PLAIN-LINK-31337\n").unwrap();
    place(&p, "~/shared/readme.txt", "SHARED-31337\n");
    std::fs::hard_link(away.join("deploy"), p.home.join("shared/notes.txt")).unwrap();
    std::fs::hard_link(away.join("plain"), p.home.join("shared/plain.txt")).unwrap();
    place(&p, "~/keys/.env.prod", "SECRET=SINGLE-FILE-31337\n");
    user_settings(
        &p,
        "[sandbox.filesystem]\nallow_read = [\"~/shared\", \"~/keys/.env.prod\"]\n",
    );
    let files = format!(
        "cat {0}/shared/notes.txt {0}/shared/plain.txt {0}/shared/readme.txt {0}/keys/.env.prod",
        p.home.display()
    );
    let bare = p.run(&["exec", "--no-sandbox", "--", "sh", "-c", &files]);
    for marker in ["LINKED-KEY-31337", "SINGLE-FILE-31337"] {
        assert!(
            bare.stdout.contains(marker),
            "the probe: {marker}: {}",
            bare.stderr
        );
    }
    let run = exec(&p, &files);
    assert!(!run.stdout.contains("LINKED-KEY-31337"), "{}", run.stdout);
    assert!(!run.stdout.contains("SINGLE-FILE-31337"), "{}", run.stdout);
    assert!(run.stdout.contains("PLAIN-LINK-31337"), "{}", run.stderr);
    assert!(run.stdout.contains("SHARED-31337"), "{}", run.stderr);
}

#[test]
fn a_directory_too_deep_to_look_into_stops_the_command_instead_of_showing_its_secrets() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    // Past PATH_MAX: reachable one step at a time, not by its whole name.
    let deep = "import os\nfor _ in range(24):\n    os.makedirs('d' * 200, exist_ok=True)\n    os.chdir('d' * 200)\n";
    let make = format!("{deep}open('.env', 'w').write('SECRET=DEEP-31337')\n");
    let read = format!("{deep}print(open('.env').read())\n");
    let bare = p.run(&["exec", "--no-sandbox", "--", "python3", "-c", &make]);
    assert_eq!(bare.code, 0, "{}", bare.stderr);
    let bare = p.run(&["exec", "--no-sandbox", "--", "python3", "-c", &read]);
    assert!(
        bare.stdout.contains("DEEP-31337"),
        "the probe: {}",
        bare.stderr
    );
    let run = p.run(&["exec", "--", "python3", "-c", &read]);
    assert!(!run.stdout.contains("DEEP-31337"), "{}", run.stdout);
    assert_eq!(run.code, 126, "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot be looked into"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_secret_swapped_between_the_plan_and_the_mounts_stops_the_command() {
    let p = project_with_secrets();
    if !sandbox_available(&p) {
        return;
    }
    let ws = p.root().canonicalize().unwrap();
    let settings = warden_config::Settings::defaults(ws.clone());
    let secrets = warden_policy::Secrets::from_settings(&settings).unwrap();
    let plan_for = |script: &str| {
        let args = ["-c".to_owned(), script.to_owned()];
        let mut request =
            warden_sandbox::request_from_settings(&settings, &ws, "sh", &args, &[]).unwrap();
        request.mask = warden_sandbox::MaskRule::new(std::sync::Arc::new(
            warden_tools::SecretMask(secrets.clone()),
        ));
        warden_sandbox::Plan::new(&request).unwrap()
    };
    let sandbox = warden_sandbox::Sandbox::new(env!("CARGO_BIN_EXE_warden"));
    let run = |plan: &warden_sandbox::Plan| {
        sandbox
            .run(plan, warden_sandbox::Output::Capture)
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let read = "cat app/config/.env.production app/moved/.env.production; echo ran";
    // The probe: unchanged, the plan runs and masks.
    let out = run(&plan_for(read)).unwrap();
    assert!(
        out.contains("ran") && !out.contains("ENV-NESTED-31337"),
        "{out}"
    );
    // Another process moves the secret's directory away and leaves a decoy at its name, after
    // the plan looked and before the mounts are made: nothing runs.
    let plan = plan_for(read);
    std::fs::rename(ws.join("app/config"), ws.join("app/moved")).unwrap();
    std::fs::create_dir(ws.join("app/config")).unwrap();
    std::fs::write(ws.join("app/config/.env.production"), "DECOY\n").unwrap();
    let err = run(&plan).unwrap_err().to_string();
    assert!(
        err.contains("changed while the sandbox was being built"),
        "{err}"
    );
    // Moved without a decoy: nothing runs either.
    std::fs::remove_dir_all(ws.join("app/config")).unwrap();
    std::fs::rename(ws.join("app/moved"), ws.join("app/config")).unwrap();
    let plan = plan_for(read);
    std::fs::rename(ws.join("app/config"), ws.join("app/moved")).unwrap();
    let err = run(&plan).unwrap_err().to_string();
    assert!(
        err.contains("changed while the sandbox was being built"),
        "{err}"
    );
}

#[test]
fn another_name_of_a_hidden_credential_in_a_toolchain_directory_is_hidden_too() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    place(
        &p,
        "~/.aws/credentials",
        "aws_secret_access_key = AWS-LINKED-31337\n",
    );
    place(&p, "~/.cargo/registry/readme", "CARGO-README-31337\n");
    std::fs::hard_link(
        p.home.join(".aws/credentials"),
        p.home.join(".cargo/registry/notes"),
    )
    .unwrap();
    let files = format!(
        "cat {0}/.cargo/registry/notes {0}/.cargo/registry/readme",
        p.home.display()
    );
    let bare = p.run(&["exec", "--no-sandbox", "--", "sh", "-c", &files]);
    assert!(
        bare.stdout.contains("AWS-LINKED-31337"),
        "the probe: {}",
        bare.stderr
    );
    let run = exec(&p, &files);
    assert!(!run.stdout.contains("AWS-LINKED-31337"), "{}", run.stdout);
    assert!(run.stdout.contains("CARGO-README-31337"), "{}", run.stderr);
}

#[test]
fn a_secret_masked_by_its_place_cannot_be_freed_by_renaming_a_directory_above_it() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    place(&p, "private/sub/notes.txt", "PLACED-31337\n");
    place(&p, "other/sub/notes.txt", "OTHER-31337\n");
    user_settings(&p, "[sandbox.filesystem]\ndeny_read = [\"private/**\"]\n");
    // The probe: a directory beside it renames, and its file reads.
    let run = exec(&p, "mv other moved && cat moved/sub/notes.txt");
    assert!(run.stdout.contains("OTHER-31337"), "{}", run.stderr);
    let run = exec(
        &p,
        "mv private public; mv private/sub private/sub2; cat public/sub/notes.txt private/sub2/notes.txt",
    );
    assert!(!run.stdout.contains("PLACED-31337"), "{}", run.stdout);
    assert!(run.stderr.contains("busy"), "{}", run.stderr);
    let run = exec(
        &p,
        "cat public/sub/notes.txt private/sub2/notes.txt private/sub/notes.txt",
    );
    assert!(!run.stdout.contains("PLACED-31337"), "{}", run.stdout);
    let read = p.run(&[
        "tool",
        "readFile",
        "--args",
        r#"{"path": "private/sub/notes.txt"}"#,
    ]);
    assert!(!read.stdout.contains("PLACED-31337"), "{}", read.stdout);
}

#[test]
fn a_key_moved_past_the_longest_path_stops_the_next_command_instead_of_being_read() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    place(&p, "certs/server.key", &key("DEEP-KEY-31337"));
    // Command 1 moves the key's directory so deep that its whole name is too long to open.
    let deep = "import os\nos.makedirs('deep', exist_ok=True)\nos.chdir('deep')\n\
                while len(os.getcwd()) + 201 < 4084:\n    os.makedirs('d' * 200, exist_ok=True)\n    os.chdir('d' * 200)\n\
                last = 'e' * (4083 - len(os.getcwd()))\nos.makedirs(last, exist_ok=True)\nos.chdir(last)\n";
    let moved = format!("{deep}os.rename(os.environ['W'] + '/certs', 'certs')\n");
    let read = format!("{deep}print(open('certs/server.key').read())\n");
    let ws = p.root().canonicalize().unwrap().display().to_string();
    let w = format!("W={ws}");
    let bare = p.run(&[
        "exec",
        "--no-sandbox",
        "--env",
        &w,
        "--",
        "python3",
        "-c",
        &moved,
    ]);
    assert_eq!(bare.code, 0, "{}", bare.stderr);
    let bare = p.run(&["exec", "--no-sandbox", "--", "python3", "-c", &read]);
    assert!(
        bare.stdout.contains("DEEP-KEY-31337"),
        "the probe: {}",
        bare.stderr
    );
    let run = p.run(&["exec", "--", "python3", "-c", &read]);
    assert!(!run.stdout.contains("DEEP-KEY-31337"), "{}", run.stdout);
    assert_eq!(run.code, 126, "{}", run.stderr);
    assert!(
        run.stderr.contains("longer than the system allows"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_homes_hidden_credentials_stay_hidden_through_a_link_and_another_mount() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    place(&p, "~/.kube/config", "token: KUBE-31337\n");
    place(
        &p,
        "~/dotfiles/aws/credentials",
        "aws_secret_access_key = DOTFILES-AWS-31337\n",
    );
    std::os::unix::fs::symlink(p.home.join("dotfiles/aws"), p.home.join(".aws")).unwrap();
    let home = p.home.display().to_string();
    let kube = format!("{home}/.kube/config");
    let aws = format!("{home}/dotfiles/aws/credentials");
    let bare = p.run(&["exec", "--no-sandbox", "--", "cat", &kube, &aws]);
    for marker in ["KUBE-31337", "DOTFILES-AWS-31337"] {
        assert!(
            bare.stdout.contains(marker),
            "the probe: {marker}: {}",
            bare.stderr
        );
    }
    // The home shown again elsewhere, and the link's target inside a readable root.
    let mount = format!("{home}:/mnt/h");
    let readable = format!("{home}/dotfiles");
    user_settings(
        &p,
        &format!("[sandbox.filesystem]\nallow_read = [\"{readable}\"]\n"),
    );
    let run = p.run(&[
        "exec",
        "--mount",
        &mount,
        "--",
        "sh",
        "-c",
        &format!("cat /mnt/h/.kube/config /mnt/h/dotfiles/aws/credentials {aws}"),
    ]);
    for marker in ["KUBE-31337", "DOTFILES-AWS-31337"] {
        assert!(!run.stdout.contains(marker), "{marker}: {}", run.stdout);
    }
    let args = serde_json::json!({"path": aws}).to_string();
    let read = p.run(&["tool", "readFile", "--args", &args]);
    assert!(
        !read.stdout.contains("DOTFILES-AWS-31337"),
        "{}",
        read.stdout
    );
}

#[test]
fn names_that_are_not_utf8_are_secrets_like_any_other() {
    use std::os::unix::ffi::OsStrExt as _;
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let odd = |base: &Path, bytes: &[u8]| base.join(std::ffi::OsStr::from_bytes(bytes));
    let toolchain = odd(&p.home.join(".cargo/registry"), b"caf\xe9");
    std::fs::create_dir_all(&toolchain).unwrap();
    std::fs::write(toolchain.join(".env"), "SECRET=ODD-DIR-31337\n").unwrap();
    std::fs::write(odd(&p.root(), b"cl\xe9.pem"), key("ODD-KEY-31337")).unwrap();
    let script = format!(
        "cat {}/.cargo/registry/caf*/.env; cat ./cl*.pem",
        p.home.display()
    );
    let bare = p.run(&["exec", "--no-sandbox", "--", "sh", "-c", &script]);
    for marker in ["ODD-DIR-31337", "ODD-KEY-31337"] {
        assert!(
            bare.stdout.contains(marker),
            "the probe: {marker}: {}",
            bare.stderr
        );
    }
    // Twice: the second command goes by the toolchain index the first one wrote.
    for _ in 0..2 {
        let run = exec(&p, &script);
        for marker in ["ODD-DIR-31337", "ODD-KEY-31337"] {
            assert!(!run.stdout.contains(marker), "{marker}: {}", run.stdout);
        }
    }
}

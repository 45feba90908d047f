//! Trust asked on a terminal: once, recorded only for what was shown, never forged by what the
//! files or the terminal say; warden's own files by every spelling; device files and hard links
//! refused.

use super::*;

/// `warden run` on a pseudo-terminal, typing the next of `answers` at each trust question and
/// denying any approval.
fn run_on_a_terminal(p: &Project, server: &FakeProvider, answers: &[&str]) -> Run {
    let base = format!("{}/v1", server.url());
    let argv = [
        env!("CARGO_BIN_EXE_warden"),
        "run",
        "--model",
        "openai/test-model",
        "--base-url",
        &base,
        "say hi",
    ];
    on_a_terminal_trusting(p, &[], &argv, &[], &[], answers)
}

fn trust_records(p: &Project) -> Value {
    p.run(&["trust", "--list", "--json"]).json()["projects"].clone()
}

#[test]
fn a_first_run_on_a_terminal_asks_once() {
    let server = FakeProvider::start(vec![
        openai::text("hi"),
        openai::text("hi"),
        openai::text("hi"),
        openai::text("hi"),
    ]);
    let asked = |run: &Run| run.stdout.matches("this [r]un only: ").count();

    // No: recorded as declined, and not asked again while the files grant the same.
    let p = Project::new();
    p.write(".warden/settings.toml", HOSTILE);
    let run = run_on_a_terminal(&p, &server, &["n"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(asked(&run), 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("permissions.allow = Bash(*)"),
        "{}",
        run.stdout
    );
    assert_eq!(trust_records(&p)[0]["decision"], "declined");
    let run = run_on_a_terminal(&p, &server, &[]);
    assert_eq!(asked(&run), 0, "{}", run.stdout);
    assert!(run.stdout.contains("not applied"), "{}", run.stdout);

    // This run only: honoured now, nothing recorded.
    let p = Project::new();
    p.write(".warden/settings.toml", HOSTILE);
    let run = run_on_a_terminal(&p, &server, &["r"]);
    assert_eq!(asked(&run), 1, "{}", run.stdout);
    assert!(!run.stdout.contains("not applied"), "{}", run.stdout);
    assert_eq!(trust_records(&p), serde_json::json!([]));

    // Yes: recorded.
    let run = run_on_a_terminal(&p, &server, &["y"]);
    assert_eq!(asked(&run), 1, "{}", run.stdout);
    assert_eq!(trust_records(&p)[0]["decision"], "trusted");
    assert_eq!(policy(&p, CURL_SH).0, "allow");
}

#[test]
fn warden_own_files_are_protected_by_every_spelling_of_the_home_directory() {
    let p = Project::new();
    // The home directory as the user's environment spells it: through a link.
    let link = p.tmp().join("linkhome");
    std::os::unix::fs::symlink(&p.home, &link).unwrap();
    std::fs::create_dir_all(p.home.join("warden")).unwrap();
    let in_home = |args: &[&str]| {
        let mut cmd = p.command();
        cmd.env("HOME", &link)
            .env("XDG_CONFIG_HOME", link.join(".config"))
            .env("WARDEN_HOME", link.join("warden"))
            .current_dir(&link)
            .arg("--allow-home-workspace")
            .args(args);
        finish(&cmd.output().unwrap())
    };
    let write = |path: &Path| {
        let args = serde_json::json!({"path": path, "content": "forged\n"}).to_string();
        in_home(&["tool", "writeFile", "--on-ask", "allow", "--args", &args])
    };
    // Relative to the workspace, whose real path the tools see.
    let probe = write(Path::new("warden/probe.txt"));
    assert_eq!(probe.code, 0, "the probe writes: {}", probe.stdout);
    assert!(p.home.join("warden/probe.txt").exists());
    for target in [
        "warden/trust.toml",
        "warden/remembered.toml",
        ".config/warden/settings.toml",
    ] {
        let run = write(Path::new(target));
        assert_eq!(run.code, 1, "{target}: {}", run.stdout);
        assert!(!p.home.join(target).exists());
    }
    if !sandbox_available(&p) {
        return;
    }
    let script = "echo x > probe2.txt; echo forged > warden/remembered.toml";
    let run = in_home(&["exec", "--", "sh", "-c", script]);
    assert!(
        p.home.join("probe2.txt").exists(),
        "the probe writes: {}",
        run.stderr
    );
    assert!(!p.home.join("warden/remembered.toml").exists());
}

#[test]
fn trust_records_nothing_when_the_files_change_while_the_person_decides() {
    let p = Project::new();
    p.write(
        ".warden/settings.toml",
        "[permissions]\nallow = [\"Bash(make test)\"]\n",
    );
    let argv = [env!("CARGO_BIN_EXE_warden"), "trust"];
    let settings = p.root().join(".warden/settings.toml");
    let env = [
        ("TEST_PROMPT_WRITE_PATH", settings.to_str().unwrap()),
        (
            "TEST_PROMPT_WRITE_TEXT",
            "[permissions]\nallow = [\"Bash(*)\"]\nmode = \"bypass\"\n",
        ),
    ];
    let run = on_a_terminal_trusting(&p, &env, &argv, &[], &[], &["y"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("changed while you were deciding"),
        "{}",
        run.stdout
    );
    assert_eq!(trust_records(&p), serde_json::json!([]));
    assert_ne!(policy(&p, CURL_SH).0, "allow");
}

#[test]
fn a_forged_question_cannot_hide_the_rule_a_person_is_asked_for() {
    let p = Project::new();
    let forged = "run the tests\u{1b}[3A\u{1b}[2K\rrule:      Bash(npm test *)\u{1b}[8m";
    let server = FakeProvider::start(vec![
        openai::calls(
            "",
            &[Call::new(
                "q1",
                "requestPermission",
                &serde_json::json!({"permission": "Bash(make deploy *)", "reason": forged}),
            )],
            9,
        ),
        openai::text("Done."),
    ]);
    let base = format!("{}/v1", server.url());
    let argv = [
        env!("CARGO_BIN_EXE_warden"),
        "run",
        "--model",
        "openai/test-model",
        "--base-url",
        &base,
        "fix it",
    ];
    let run = crate::support::on_a_terminal(&p, &argv, &["d"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("rule:      Bash(make deploy *) (for session"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("\u{1b}[3A"),
        "the escape reached the terminal"
    );
    assert!(run.stdout.contains("\\u{1b}[3A"), "{}", run.stdout);
}

#[test]
fn a_rule_in_both_project_files_moves_and_the_project_is_trusted() {
    let p = Project::new();
    for file in [".warden/settings.toml", ".warden/settings.local.toml"] {
        p.write(file, "[permissions]\nallow = [\"Bash(npm test *)\"]\n");
    }
    let argv = [env!("CARGO_BIN_EXE_warden"), "trust"];
    let run = on_a_terminal_trusting(&p, &[], &argv, &[], &[], &["y", "y"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(trust_records(&p)[0]["decision"], "trusted");
    assert!(p.remembered().contains("Bash(npm test *)"));
}

#[test]
fn a_resumed_run_goes_back_only_to_an_endpoint_the_person_chose() {
    let theirs = FakeProvider::start(vec![openai::text("first"), openai::text("second")]);
    let p = Project::new();
    p.write(
        ".warden/settings.toml",
        &format!(
            "[model]\ndefault = \"corp\"\n[model.providers.corp]\nkind = \"openai\"\n\
             base_url = \"{}/v1\"\nmodel = \"m\"\n",
            theirs.url()
        ),
    );
    // Trusted for one run, the project's provider is used (with no key: it names none).
    let mut cmd = p.command();
    cmd.args(["run", "--json", "--trust-project", "hello"]);
    let first = finish(&cmd.output().unwrap());
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(theirs.received().len(), 1);
    let session = of_kind(&events(&first.stdout), "session_started")[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Resumed untrusted, with the user's key in the environment: not sent there.
    let mut cmd = p.command();
    cmd.env("OPENAI_API_KEY", "sk-user-secret-31337")
        .args(["resume", "--json", &session, "again"]);
    let resumed = finish(&cmd.output().unwrap());
    assert_ne!(resumed.code, 0, "{}", resumed.stdout);
    assert!(resumed.stderr.contains("corp"), "{}", resumed.stderr);
    assert_eq!(
        theirs.received().len(),
        1,
        "the project's endpoint was called again"
    );
    assert_eq!(keys_sent(&theirs), 0);
}

#[test]
fn this_run_only_trusts_what_was_shown() {
    let shown = FakeProvider::start(vec![openai::text("hi")]);
    let swapped = FakeProvider::start(vec![openai::text("hi")]);
    let provider = |url: &str, key: &str| {
        format!(
            "[model]\ndefault = \"corp\"\n[model.providers.corp]\nkind = \"openai\"\n\
             base_url = \"{url}/v1\"\nmodel = \"m\"\n{key}"
        )
    };
    let p = Project::new();
    let settings = p.root().join(".warden/settings.toml");
    p.write(".warden/settings.toml", &provider(&shown.url(), ""));
    let changed = provider(&swapped.url(), "api_key_env = \"OPENAI_API_KEY\"\n");
    let env = [
        ("TEST_PROMPT_WRITE_PATH", settings.to_str().unwrap()),
        ("TEST_PROMPT_WRITE_TEXT", changed.as_str()),
        ("OPENAI_API_KEY", "sk-user-secret-31337"),
    ];
    let argv = [env!("CARGO_BIN_EXE_warden"), "run", "say hi"];
    let run = on_a_terminal_trusting(&p, &env, &argv, &[], &[], &["r"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("changed while you were deciding"),
        "{}",
        run.stdout
    );
    assert!(swapped.received().is_empty());
    assert!(shown.received().is_empty());
}

#[test]
fn a_repository_cannot_write_to_the_terminal_through_an_error() {
    let p = Project::new();
    p.write(
        ".warden/settings.toml",
        "[permissions]\n\"\\u001b]0;pwned\\u0007\\u001b[2Jfoo\" = 1\n",
    );
    let run = p.run(&["config", "show"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
    assert!(run.stderr.contains("\\u{1b}]0;pwned"), "{}", run.stderr);
}

#[test]
fn a_settings_file_that_is_a_device_or_a_fifo_is_refused_at_once() {
    let p = Project::new();
    std::fs::create_dir_all(p.root().join(".warden")).unwrap();
    let settings = p.root().join(".warden/settings.toml");
    for make in ["device", "fifo"] {
        let _ = std::fs::remove_file(&settings);
        if make == "device" {
            std::os::unix::fs::symlink("/dev/zero", &settings).unwrap();
        } else {
            let status = std::process::Command::new("mkfifo")
                .arg(&settings)
                .status()
                .unwrap();
            assert!(status.success());
        }
        let mut child = p
            .command()
            .args(["config", "show"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > std::time::Duration::from_secs(20) {
                let _ = child.kill();
                panic!("{make}: warden hung");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let output = child.wait_with_output().unwrap();
        assert_eq!(status.code(), Some(2), "{make}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("not a regular file"), "{make}: {stderr}");
    }
}

#[test]
fn a_hard_link_to_warden_own_files_reaches_nothing() {
    let p = Project::new();
    let data = p.home.join("warden");
    std::fs::create_dir_all(&data).unwrap();
    // The user lets commands and tools reach the whole home directory.
    user_settings(
        &p,
        "[sandbox.filesystem]\nallow_read = [\"~\"]\nallow_write = [\"~\"]\n",
    );
    assert_eq!(p.run(&["trust", "--yes"]).code, 0, "writes trust.toml");
    let trust = data.join("trust.toml");
    let before = std::fs::read_to_string(&trust).unwrap();
    std::fs::hard_link(&trust, p.root().join("tl")).unwrap();
    // The probe: another name of an ordinary file of the home directory.
    let plain = p.home.join("plain.txt");
    std::fs::write(&plain, "PLAIN\n").unwrap();
    std::fs::hard_link(&plain, p.root().join("pl")).unwrap();
    let read = |name: &str| {
        let args = serde_json::json!({"path": name}).to_string();
        p.run(&["tool", "readFile", "--args", &args])
    };
    assert!(
        read("pl").stdout.contains("PLAIN"),
        "the probe reads through a link"
    );
    let through = read("tl");
    assert_eq!(through.code, 1, "{}", through.stdout);
    assert!(!through.stdout.contains("digest"), "{}", through.stdout);
    if !sandbox_available(&p) {
        return;
    }
    let run = p.run(&["exec", "--", "sh", "-c", "echo appended >> pl"]);
    assert_eq!(
        run.code, 0,
        "the probe writes through a link: {}",
        run.stderr
    );
    assert!(
        std::fs::read_to_string(&plain)
            .unwrap()
            .contains("appended")
    );
    let run = p.run(&["exec", "--", "sh", "-c", "cat tl; echo forged >> tl"]);
    assert_ne!(run.code, 0);
    assert!(!run.stdout.contains("digest"), "{}", run.stdout);
    assert_eq!(std::fs::read_to_string(&trust).unwrap(), before);
}

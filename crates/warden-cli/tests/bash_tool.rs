//! The Bash tool through policy and sandbox, as in the name-cleaner walkthrough: tests run and
//! read the project; a probe of a private file outside it fails and its content goes nowhere.

use std::process::Command;

use serde_json::json;

use crate::support::{Project, finish, sandbox_available};

fn bash(p: &Project, command: &str, extra: &[&str]) -> crate::support::Run {
    let args = json!({ "command": command }).to_string();
    let mut all = vec!["tool", "bash"];
    all.extend_from_slice(extra);
    all.extend_from_slice(&["--args", &args]);
    p.run(&all)
}

fn name_cleaner(p: &Project) {
    p.write(
        "package.json",
        r#"{"name": "name-cleaner", "version": "1.0.0", "scripts": {"test": "node --test"}}"#,
    );
    p.write("names.txt", "  Ada Lovelace \nGRACE hopper\n");
    p.write(
        "clean.js",
        "exports.clean = (s) => s.trim().toLowerCase().replace(/\\b\\w/g, (c) => c.toUpperCase());\n",
    );
    p.write(
        "clean.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst fs = require('node:fs');\n\
         const { clean } = require('./clean.js');\n\
         test('cleans every name in the project file', () => {\n  const names = fs.readFileSync('names.txt', 'utf8').trim().split('\\n').map(clean);\n  \
         assert.deepStrictEqual(names, ['Ada Lovelace', 'Grace Hopper']);\n});\n",
    );
}

#[test]
fn reading_commands_run_and_secrets_are_refused_before_running() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    p.write("src/main.rs", "fn main() {}\n");
    p.write(".env", "API_KEY=sk-live-0000\n");
    let run = bash(&p, "ls src && wc -l src/main.rs", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.json();
    assert_eq!(out["exitCode"], 0);
    assert_eq!(out["stdoutSummary"], "main.rs\n1 src/main.rs\n");
    let run = bash(&p, "cat .env", &["--on-ask", "allow"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["error"]["kind"], "policy_denied");
}

#[test]
fn npm_test_waits_for_approval_then_reads_the_workspace_inside_the_sandbox() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    name_cleaner(&p);
    // Not before approval.
    let run = bash(&p, "npm test", &[]);
    assert_eq!(run.code, 1);
    assert_eq!(run.json()["error"]["kind"], "needs_approval");
    // Approved, it runs inside the sandbox and passes.
    let run = bash(&p, "npm test", &["--on-ask", "allow"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.json();
    assert_eq!(out["exitCode"], 0, "{out}");
    assert!(
        out["stdoutSummary"].as_str().unwrap().contains("pass 1"),
        "{out}"
    );
}

#[test]
fn a_private_file_probe_fails_and_its_content_reaches_no_output_and_no_trace() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    name_cleaner(&p);
    let probe = p.home.join("Private/sandbox-probe.txt");
    std::fs::create_dir_all(probe.parent().unwrap()).unwrap();
    std::fs::write(&probe, "PRIVATE-PROBE-9931\n").unwrap();
    // The probe works without the sandbox: the file exists and is readable.
    let plain = finish(&Command::new("cat").arg(&probe).output().unwrap());
    assert!(plain.stdout.contains("PRIVATE-PROBE-9931"));
    let probes = [
        format!("cat {}", probe.display()),
        format!(
            "sh -c 'python3 -c \"print(open(\\\"{}\\\").read())\"'",
            probe.display()
        ),
        format!(
            "node -e 'console.log(require(\"fs\").readFileSync(\"{}\", \"utf8\"))'",
            probe.display()
        ),
    ];
    for command in &probes {
        let run = bash(&p, command, &["--on-ask", "allow"]);
        let out = run.json();
        assert_ne!(out["exitCode"], 0, "{command}: {out}");
        assert!(
            !run.stdout.contains("PRIVATE-PROBE") && !run.stderr.contains("PRIVATE-PROBE"),
            "{command}"
        );
    }
    let db = std::fs::read(p.home.join("warden/trace.db")).unwrap();
    let wal = std::fs::read(p.home.join("warden/trace.db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(!bytes.windows(18).any(|w| w == b"PRIVATE-PROBE-9931"));
    }
}

/// Host processes whose command line contains `marker`.
fn running(marker: &str) -> bool {
    let out = finish(&Command::new("pgrep").args(["-f", marker]).output().unwrap());
    !out.stdout.trim().is_empty()
}

#[test]
fn a_background_command_keeps_running_until_stopped_or_the_session_ends() {
    use warden_tools::{Registry, ToolContext};
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let mut options = warden_config::LoadOptions::new(p.root());
    options.user_config_dir = None;
    let settings = warden_config::load(&options).unwrap();
    let ctx = std::sync::Arc::new(
        ToolContext::from_settings(&settings)
            .unwrap()
            .with_sandbox_helper(env!("CARGO_BIN_EXE_warden")),
    );
    let tools = std::sync::Arc::new(Registry::builtin().unwrap());
    let server = "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2718; done";
    // Started from a thread that ends at once: the command must not die with it.
    let started = {
        let (ctx, tools) = (ctx.clone(), tools.clone());
        std::thread::spawn(move || {
            tools.call(&ctx, "bash", json!({"command": server, "background": true}))
        })
        .join()
        .unwrap()
        .unwrap()
    };
    assert_eq!(started["running"], true, "{started}");
    assert!(
        started["stdoutSummary"]
            .as_str()
            .unwrap()
            .contains("tick 0"),
        "{started}"
    );
    let id = started["jobId"].as_str().unwrap().to_owned();
    std::thread::sleep(std::time::Duration::from_millis(800));
    assert!(running("sleep 0.2718"), "the background command is running");
    let later = tools.call(&ctx, "bash", json!({"jobId": id})).unwrap();
    let text = later["stdoutSummary"].as_str().unwrap();
    assert_eq!(later["running"], true, "{later}");
    assert!(
        text.contains("tick") && !text.contains("tick 0\n"),
        "only new output: {later}"
    );
    let stopped = tools
        .call(&ctx, "bash", json!({"jobId": id, "stop": true}))
        .unwrap();
    assert_eq!(
        (stopped["running"].clone(), stopped["stopped"].clone()),
        (json!(false), json!(true))
    );
    assert!(
        !running("sleep 0.2718"),
        "stopped with everything it started"
    );
    let gone = tools.call(&ctx, "bash", json!({"jobId": id})).unwrap_err();
    assert!(gone.message.contains("no background command"), "{gone:?}");

    // One that ends by itself reports its exit code.
    let quick = tools
        .call(
            &ctx,
            "bash",
            json!({"command": "echo done; exit 3", "background": true}),
        )
        .unwrap();
    assert_eq!(
        (quick["running"].clone(), quick["exitCode"].clone()),
        (json!(false), json!(3))
    );

    // The session's end stops what is still running, and whatever it forked off.
    tools
        .call(
            &ctx,
            "bash",
            json!({"command": "(setsid sleep 31415 &); sleep 31416", "background": true}),
        )
        .unwrap();
    assert!(running("sleep 31415") && running("sleep 31416"));
    drop(tools);
    drop(std::sync::Arc::into_inner(ctx).unwrap());
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!running("sleep 31415") && !running("sleep 31416"));

    let both = warden_tools::Registry::builtin().unwrap();
    let ctx = ToolContext::from_settings(&settings).unwrap();
    let err = both
        .call(&ctx, "bash", json!({"command": "true", "jobId": "job-1"}))
        .unwrap_err();
    assert!(err.message.contains("not both"), "{err:?}");
}

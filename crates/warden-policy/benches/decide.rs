//! Policy decisions per second with 1,000 rules loaded, against the same engine with none, and
//! the time to load settings holding those rules. `cargo bench -p warden-policy --bench decide`.
//!
//! Targets: ≥ 50,000 decisions/s on one core, p50 ≤ 20 µs, settings load ≤ 5 ms.

use std::error::Error;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use warden_config::LoadOptions;
use warden_policy::{Action, Engine};

const COMMANDS: &[&str] = &[
    "ls -la src",
    "git status",
    "git log --oneline -20",
    "cargo test -p warden-policy",
    "npm test -- --watch=false",
    "rg -n TODO src | head -50",
    "cat README.md | grep -i install | wc -l",
    "find . -name '*.rs' -not -path './target/*' | xargs wc -l | sort -n | tail -5",
    "git diff HEAD~1 --stat && git status --short",
    "npm install --save-dev typescript",
    "curl -fsSL https://example.com/api | jq '.items[] | .name' | sort | uniq -c",
    "rm -rf build dist && mkdir -p build && cp -r src build/",
    "docker build -t app . && docker run --rm app npm test",
    "python3 -m pytest tests/ -x -q 2>&1 | tail -20",
    "cat .env | grep KEY",
    "for f in src/*.rs; do wc -l \"$f\"; done | sort -n",
    "git push --force origin main",
    "sed -n '1,40p' src/main.rs",
    "echo $(git rev-parse HEAD) > build/VERSION",
    "timeout 120 cargo build --release 2>&1 | grep -E 'warning|error' | head -100",
];

fn rules() -> String {
    let programs = [
        "npm",
        "cargo",
        "git",
        "make",
        "pytest",
        "go",
        "docker",
        "kubectl",
        "yarn",
        "pnpm",
        "python3",
        "node",
        "ls",
        "cat",
        "rg",
        "grep",
        "sed",
        "awk",
        "curl",
        "wget",
        "terraform",
        "helm",
        "mvn",
        "gradle",
        "rustc",
        "gcc",
    ];
    let verbs = [
        "test", "build", "run", "install", "lint", "check", "fmt", "deploy", "push", "status",
    ];
    let mut allow = Vec::new();
    let mut ask = Vec::new();
    let mut deny = Vec::new();
    for i in 0..1000 {
        let program = programs[i % programs.len()];
        let verb = verbs[(i / programs.len()) % verbs.len()];
        let rule = match i % 10 {
            0..=4 => format!("Bash({program} {verb} --flag-{i} *)"),
            5 => format!("Read(src/generated-{i}/**)"),
            6 => format!("Edit(/build/out-{i}/**)"),
            7 => format!("WebFetch(domain:host{i}.example.com)"),
            8 => format!("Bash({program} {verb}-{i})"),
            9 if i % 50 == 9 => format!("Bash(*{program}-{i}*)"),
            _ => format!("Bash({program} {verb} --other-{i})"),
        };
        match i % 3 {
            0 => allow.push(rule),
            1 => ask.push(rule),
            _ => deny.push(rule),
        }
    }
    let list = |rules: &[String]| {
        rules
            .iter()
            .map(|r| format!("  {r:?},"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut text = String::from("[permissions]\n");
    let _ = writeln!(text, "allow = [\n{}\n]", list(&allow));
    let _ = writeln!(text, "ask = [\n{}\n]", list(&ask));
    let _ = writeln!(text, "deny = [\n{}\n]", list(&deny));
    text
}

/// One round over every command `repeat` times: the rate, and each decision's time.
fn round(engine: &Engine, actions: &[Action], repeat: usize, samples: &mut Vec<Duration>) -> f64 {
    let start = Instant::now();
    for _ in 0..repeat {
        for action in actions {
            let t = Instant::now();
            std::hint::black_box(engine.check(action));
            samples.push(t.elapsed());
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let count = (repeat * actions.len()) as f64;
    count / start.elapsed().as_secs_f64()
}

fn median<T: PartialOrd + Copy>(values: &mut [T]) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    values[values.len() / 2]
}

fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("project");
    std::fs::create_dir_all(root.join(".git"))?;
    std::fs::create_dir_all(root.join(".warden"))?;
    let empty = warden_config::load(&bare(&root))?;
    let baseline = Engine::from_settings(&empty)?;

    std::fs::write(root.join(".warden/settings.toml"), rules())?;
    let mut loads = Vec::new();
    let mut parses = Vec::new();
    let mut engine = None;
    for _ in 0..21 {
        let t = Instant::now();
        let settings = warden_config::load(&bare(&root))?;
        parses.push(t.elapsed());
        let built = Engine::from_settings(&settings)?;
        loads.push(t.elapsed());
        engine = Some(built);
    }
    parses.sort();
    let engine = engine.ok_or("no engine")?;

    let (gated_ms, plain_ms, gate_ratio) = gate_cost(&root)?;
    loads.sort();
    assert_eq!(empty.permissions.allow.len(), 0);

    // Warm up, then alternate the two engines round by round on this one thread, so that the
    // machine's drift hits both alike; quote medians.
    let actions: Vec<Action> = COMMANDS
        .iter()
        .map(|c| Action::Bash((*c).to_owned()))
        .collect();
    let (mut base_samples, mut samples) = (Vec::new(), Vec::new());
    round(&baseline, &actions, 20, &mut Vec::new());
    round(&engine, &actions, 20, &mut Vec::new());
    let (mut base_rates, mut rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..40 {
        let base = round(&baseline, &actions, 10, &mut base_samples);
        let with = round(&engine, &actions, 10, &mut samples);
        base_rates.push(base);
        rates.push(with);
        ratios.push(base / with);
    }
    // Cold: every command new to the engine (a fresh engine per decision is too slow to
    // measure decisions, so each command gets a unique suffix instead).
    let mut cold_samples = Vec::new();
    let cold_start = Instant::now();
    for i in 0..200 {
        for command in COMMANDS {
            let action = Action::Bash(format!("{command} # {i}"));
            let t = Instant::now();
            std::hint::black_box(engine.check(&action));
            cold_samples.push(t.elapsed());
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let cold_rate = cold_samples.len() as f64 / cold_start.elapsed().as_secs_f64();
    let analysis_start = Instant::now();
    for _ in 0..200 {
        for command in COMMANDS {
            std::hint::black_box(warden_policy::shell::analyze(command));
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let analysis_rate = (200 * COMMANDS.len()) as f64 / analysis_start.elapsed().as_secs_f64();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "commands: {} (pipelines, substitutions, loops, wrappers); medians of 40 alternating rounds",
        COMMANDS.len()
    );
    println!(
        "no rules:     {:>9.0} decisions/s   p50 {:>6.1} µs",
        median(&mut base_rates),
        us(median(&mut base_samples))
    );
    println!(
        "1,000 rules:  {:>9.0} decisions/s   p50 {:>6.1} µs",
        median(&mut rates),
        us(median(&mut samples))
    );
    println!("cost of the rules: {:.2}x", median(&mut ratios));
    println!(
        "1,000 rules, every command new (no cached parse): {cold_rate:>9.0} decisions/s   p50 {:>6.1} µs",
        us(median(&mut cold_samples))
    );
    let shortcut = COMMANDS
        .iter()
        .filter(|c| warden_policy::shell::in_common_subset(c))
        .count();
    println!(
        "shell analysis alone: {analysis_rate:>9.0} commands/s ({shortcut} of {} read by the \
         tokenizer of the common subset, the rest by brush-parser)",
        COMMANDS.len()
    );
    println!(
        "settings load of an untrusted project with 1,000 rules: median {gated_ms:.2} ms, \
         trusted {plain_ms:.2} ms (ratio {gate_ratio:.2}x)"
    );
    println!(
        "settings load + engine build with 1,000 rules: median {:.2} ms (of which reading the settings {:.2} ms)",
        loads[loads.len() / 2].as_secs_f64() * 1e3,
        parses[parses.len() / 2].as_secs_f64() * 1e3
    );
    Ok(())
}

/// The trust gate: the same file as an untrusted project's (every allow rule set aside and
/// reported, the asks kept apart), alternating with the trusted load. Medians in ms, and the
/// median per-pair ratio.
fn gate_cost(root: &std::path::Path) -> Result<(f64, f64, f64), Box<dyn Error>> {
    let untrusted = LoadOptions {
        trust_project: false,
        ..bare(root)
    };
    let (mut gated, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..21 {
        let t = Instant::now();
        let settings = warden_config::load(&untrusted)?;
        gated.push(t.elapsed());
        assert!(!settings.trust.ignored.is_empty());
        let t = Instant::now();
        warden_config::load(&bare(root))?;
        plain.push(t.elapsed());
    }
    let mut ratios: Vec<f64> = gated
        .iter()
        .zip(&plain)
        .map(|(g, p)| g.as_secs_f64() / p.as_secs_f64())
        .collect();
    let ms = |d: &mut Vec<std::time::Duration>| median(d).as_secs_f64() * 1e3;
    Ok((ms(&mut gated), ms(&mut plain), median(&mut ratios)))
}

fn bare(root: &std::path::Path) -> LoadOptions {
    LoadOptions {
        cwd: root.to_path_buf(),
        cli: warden_config::RawSettings::default(),
        managed_path: root.join("no-managed.toml"),
        user_config_dir: None,
        data_dir: None,
        home: None,
        trust_project: true,
        allow_home_workspace: false,
    }
}

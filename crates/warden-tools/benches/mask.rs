//! The cost of masking secrets in a command's sandbox: the plan's one walk of the roots with
//! the secret list, against the same walk for hard links alone (no list), on a workspace of
//! 50,000 files; and a toolchain directory's walk, once and then kept for the session.
//!
//! `cargo bench -p warden-tools --bench mask`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use warden_config::Settings;
use warden_sandbox::{MaskRule, Mount, Plan, Request, request_from_settings};
use warden_tools::SecretMask;

const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const SOURCE: &str = "pub fn f() {}\n";

/// `count` files in directories of 50, with a `.env`, a certificate and a key in every `every`
/// files (0: none).
fn tree(root: &Path, count: usize, every: usize) {
    for i in 0..count {
        let dir = root.join(format!("d{:03}/e{:02}", i / 1000, (i / 50) % 20));
        std::fs::create_dir_all(&dir).unwrap();
        let (name, content) = match i.checked_rem(every) {
            Some(0) => (".env".to_owned(), "KEY=1\n"),
            Some(1) => (format!("cert{i}.pem"), CERT),
            Some(2) => (format!("tls{i}.key"), KEY),
            _ => (format!("f{i}.rs"), SOURCE),
        };
        std::fs::write(dir.join(name), content).unwrap();
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn rule(settings: &Settings) -> MaskRule {
    let secrets = warden_policy::Secrets::from_settings(settings).unwrap();
    MaskRule::new(Arc::new(SecretMask(secrets)))
}

/// The masks a plan mounts below `root`.
fn masks_below(plan: &Plan, root: &Path) -> usize {
    plan.mounts
        .iter()
        .filter(|m| matches!(m, Mount::MaskFile { target } if target.starts_with(root)))
        .count()
}

/// Medians of the plan without and with the secret list, alternating, and the per-pair ratio;
/// `secrets` the masks expected in the workspace.
fn compare(ws: &Path, secrets: usize) -> (Duration, Duration, f64) {
    let settings = Settings::defaults(ws.to_path_buf());
    let mut base: Request = request_from_settings(&settings, ws, "true", &[], &[]).unwrap();
    base.home_allow.clear();
    let masked = Request {
        mask: rule(&settings),
        ..base.clone()
    };
    // Warm the page cache first.
    for _ in 0..2 {
        Plan::new(&base).unwrap();
        Plan::new(&masked).unwrap();
    }
    let (mut alone, mut with, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..15 {
        let t = Instant::now();
        Plan::new(&base).unwrap();
        let a = t.elapsed();
        let t = Instant::now();
        let plan = Plan::new(&masked).unwrap();
        let w = t.elapsed();
        assert_eq!(
            masks_below(&plan, ws),
            secrets,
            "every .env and key, nothing else"
        );
        alone.push(a);
        with.push(w);
        ratios.push(w.as_secs_f64() / a.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    (median(alone), median(with), ratios[ratios.len() / 2])
}

/// A session's commands on the 50,000-file workspace `ws` with its walk kept: the first, the
/// later ones with nothing changed and with one file made and one removed since the last,
/// against a fresh walk each time and the plan of an empty workspace `empty`.
fn session_walks(ws: &Path, empty: &Path, secrets: usize) {
    std::fs::create_dir_all(empty).unwrap();
    let request = |ws: &Path, mask: MaskRule| {
        let settings = Settings::defaults(ws.to_path_buf());
        let mut request: Request = request_from_settings(&settings, ws, "true", &[], &[]).unwrap();
        request.home_allow.clear();
        Request { mask, ..request }
    };
    let settings = Settings::defaults(ws.to_path_buf());
    let fresh = request(ws, rule(&settings));
    let nothing = request(empty, rule(&settings));
    let (mut firsts, mut walks, mut unchanged, mut changed, mut bare) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut kept_kb = 0;
    for round in 0..5 {
        let session = request(ws, rule(&settings).keep_walks());
        let before = rss_kb();
        let t = Instant::now();
        let plan = Plan::new(&session).unwrap();
        firsts.push(t.elapsed());
        if round == 0 {
            kept_kb = rss_kb().saturating_sub(before);
        }
        assert_eq!(masks_below(&plan, ws), secrets);
        for i in 0..15 {
            let t = Instant::now();
            Plan::new(&nothing).unwrap();
            bare.push(t.elapsed());
            let t = Instant::now();
            Plan::new(&session).unwrap();
            unchanged.push(t.elapsed());
            let made = ws.join(format!("d{:03}/e{:02}/.env.new", i % 50, i % 20));
            std::fs::write(&made, "K=1\n").unwrap();
            let t = Instant::now();
            let plan = Plan::new(&session).unwrap();
            changed.push(t.elapsed());
            assert_eq!(
                masks_below(&plan, ws),
                secrets + 1,
                "the new secret masked at once"
            );
            std::fs::remove_file(&made).unwrap();
            if round == 0 && i < 5 {
                let t = Instant::now();
                Plan::new(&fresh).unwrap();
                walks.push(t.elapsed());
            }
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (bare, unchanged, changed) = (median(bare), median(unchanged), median(changed));
    println!(
        "50,000-file workspace, {secrets} secrets, a session's walk kept: first command {:.1} ms (a fresh walk: \
         {:.1} ms); later commands {:.2} ms unchanged, {:.2} ms after a file made in one \
         directory and removed; an empty workspace's plan {:.2} ms, so {:.2} and {:.2} ms added; \
         the kept walk holds about {kept_kb} KiB",
        ms(median(firsts)),
        ms(median(walks)),
        ms(unchanged),
        ms(changed),
        ms(bare),
        ms(unchanged.saturating_sub(bare)),
        ms(changed.saturating_sub(bare)),
    );
}

/// This process's resident memory, in KiB.
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn main() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for (label, every, secrets) in [
        ("no secrets", 0, 0),
        (
            "a .env, a certificate and a key in every 500 files",
            500,
            200,
        ),
    ] {
        let ws = dir.path().join(format!("ws{every}"));
        tree(&ws, 50_000, every);
        let (alone, with, ratio) = compare(&ws, secrets);
        println!(
            "50,000-file workspace, {label}: hard-link scan alone {:.1} ms, with the secret \
             list {:.1} ms (ratio {ratio:.3}x, median of 15 pairs)",
            alone.as_secs_f64() * 1e3,
            with.as_secs_f64() * 1e3,
        );
    }

    session_walks(&dir.path().join("ws0"), &dir.path().join("none"), 0);
    session_walks(&dir.path().join("ws500"), &dir.path().join("none"), 200);

    // A toolchain directory of 100,000 files: walked at a session's first command, kept after.
    let home = dir.path().join("home");
    tree(&home.join(".cargo"), 100_000, 500);
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let settings = Settings::defaults(empty.clone());
    let mut toolchain: Request =
        request_from_settings(&settings, &empty, "true", &[], &[]).unwrap();
    toolchain.home.clone_from(&home);
    toolchain.home_allow = vec![home.join(".cargo")];
    let (mut first, mut kept) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let session = Request {
            mask: rule(&settings),
            ..toolchain.clone()
        };
        let t = Instant::now();
        let plan = Plan::new(&session).unwrap();
        first.push(t.elapsed());
        assert_eq!(masks_below(&plan, &home), 400);
        let t = Instant::now();
        Plan::new(&session).unwrap();
        kept.push(t.elapsed());
    }
    // Each process's first command, with the index of an earlier one (a `warden exec` each).
    let index = dir.path().join("toolchains.idx");
    let mut indexed = Vec::new();
    for _ in 0..7 {
        let process = Request {
            mask: rule(&settings).with_index(index.clone()),
            ..toolchain.clone()
        };
        let t = Instant::now();
        let plan = Plan::new(&process).unwrap();
        indexed.push(t.elapsed());
        assert_eq!(masks_below(&plan, &home), 400);
    }
    println!(
        "100,000-file toolchain directory: a session's first command {:.1} ms, its later \
         commands {:.2} ms; a new process's first command with the index {:.1} ms",
        median(first).as_secs_f64() * 1e3,
        median(kept).as_secs_f64() * 1e3,
        median(indexed).as_secs_f64() * 1e3,
    );
}

//! Normalising 10 MB of command output (target ≤ 50 ms), against a baseline from the same run:
//! one pass that decodes the bytes and walks every line, which any normaliser must do.
//!
//! The output is the captured fixtures (npm, cargo, pytest, pip, apt) repeated with their
//! numbers changed, plus plain log lines, so that every rule has work to do.
//!
//! `cargo bench -p warden-tools --bench normalise`
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::cast_precision_loss)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

use warden_tools::normalise::normalise;

const FIXTURES: &[&str] = &[
    "npm-install",
    "npm-test-failure",
    "cargo-build-error",
    "cargo-test-failure",
    "pytest-failure",
    "pip-install-progress",
    "apt-get-install",
];

fn output(size: usize) -> Vec<u8> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/output");
    let fixtures: Vec<String> = FIXTURES
        .iter()
        .map(|name| {
            String::from_utf8_lossy(&std::fs::read(format!("{dir}/{name}.txt")).unwrap())
                .into_owned()
        })
        .collect();
    let mut out = String::with_capacity(size + 64 * 1024);
    let mut round = 0usize;
    while out.len() < size {
        for fixture in &fixtures {
            out.push_str(fixture);
            out.push('\n');
        }
        for line in 0..200 {
            let _ = writeln!(
                out,
                "[worker {round}] request {line} served in {} ms from /api/items/{line}",
                line % 17
            );
        }
        round += 1;
    }
    out.into_bytes()
}

fn median(mut runs: Vec<f64>) -> f64 {
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}

fn main() {
    let bytes = output(10 * 1024 * 1024);
    let rounds = 15;
    let (mut base, mut normal) = (Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..rounds {
        let started = Instant::now();
        let text = String::from_utf8_lossy(&bytes);
        let longest = text.lines().map(str::len).max();
        black_box(longest);
        base.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        let n = normalise(black_box(&bytes));
        normal.push(started.elapsed().as_secs_f64() * 1000.0);
        last = Some(n);
    }
    let n = last.unwrap();
    let (base, normal) = (median(base), median(normal));
    println!(
        "normalising {:.1} MB of command output ({} lines), median of {rounds}:",
        bytes.len() as f64 / 1e6,
        n.lines
    );
    println!("  decode and walk the lines (baseline)  {base:7.2} ms");
    println!(
        "  normalise                             {normal:7.2} ms   ratio {:.1}   (target 50 ms)",
        normal / base
    );
    println!(
        "  result: {} bytes; {} progress lines dropped, {} folded as alike",
        n.text.len(),
        n.noise,
        n.similar
    );
}

//! Reading the identifiers of real tool output: every case of the development corpus (compiler
//! errors, tracebacks, SQL, `git log`, grep hits, files), against a baseline from the same run:
//! one pass of a single pattern (`[A-Za-z_]\w*`, every word) over the same texts, which no
//! extractor that reads names can do with less.
//!
//! `cargo bench -p warden-context --bench identifiers`
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::cast_precision_loss)]

use std::time::Instant;

use regex::Regex;
use warden_context::extract;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let cases: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("../tests/fixtures/corpus/dev.json")).unwrap();
    let texts: Vec<&str> = cases.iter().map(|c| c["text"].as_str().unwrap()).collect();
    let bytes: usize = texts.iter().map(|t| t.len()).sum();
    let words = Regex::new(r"[A-Za-z_]\w*").unwrap();
    // Patterns are compiled on first use: once, before timing.
    let found: usize = texts.iter().map(|t| extract(t).len()).sum();
    let rounds = 21;
    let (mut base, mut read) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let started = Instant::now();
        let n: usize = texts.iter().map(|t| words.find_iter(t).count()).sum();
        base.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(n > 0);
        let started = Instant::now();
        let n: usize = texts.iter().map(|t| extract(t).len()).sum();
        read.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(n, found);
    }
    let (base, read) = (median(base), median(read));
    println!(
        "{} texts, {} KB, {found} identifiers, median of {rounds}:",
        texts.len(),
        bytes / 1024
    );
    println!("  every word, one pattern (baseline)  {base:>7.2} ms");
    println!(
        "  extract                             {read:>7.2} ms   ratio {:.1}   {:.1} MB/s",
        read / base,
        bytes as f64 / 1e6 / (read / 1000.0)
    );
}

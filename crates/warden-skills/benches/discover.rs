//! Discovering and indexing 1,000 skills (target ≤ 100 ms) and matching a task against them
//! (target ≤ 5 ms), against baselines from the same run: reading the same 1,000 `SKILL.md`
//! files (what any discovery must do), and scanning every description once for the goal's
//! words.
//!
//! `cargo bench -p warden-skills --bench discover`
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::cast_precision_loss)]

use std::hint::black_box;
use std::time::Instant;

use warden_skills::{Root, discover};

const TOPICS: &[&str] = &[
    "release",
    "docker",
    "postgres",
    "migration",
    "pdf",
    "spreadsheet",
    "kubernetes",
    "terraform",
    "react",
    "testing",
    "security",
    "logging",
    "benchmark",
    "i18n",
    "accessibility",
    "graphql",
];

fn seed(dir: &std::path::Path, n: usize) {
    for i in 0..n {
        let topic = TOPICS[i % TOPICS.len()];
        let name = format!("{topic}-helper-{i}");
        let skill = dir.join(&name);
        std::fs::create_dir_all(skill.join("references")).unwrap();
        let text = format!(
            "---\nname: {name}\ndescription: \"Helps with {topic} work number {i}: checks, fixes and \
             explains {topic} problems in a project. Use when the task mentions {topic}.\"\n\
             version: 1.{i}\ntriggers: [{topic} {i}]\nfile_globs: [\"**/*.{topic}\", \"{topic}/**\"]\n\
             allowed-tools: Read Grep Bash({topic}:*)\n---\n# {topic}\n\nSteps for {topic}.\n{}",
            "More detail on the steps to take and the checks to run.\n".repeat(20)
        );
        std::fs::write(skill.join("SKILL.md"), text).unwrap();
        std::fs::write(skill.join("references/notes.md"), "notes\n").unwrap();
    }
}

fn median(mut runs: Vec<f64>) -> f64 {
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let root_dir = tmp.path().join("skills");
    seed(&root_dir, 1000);
    let roots = vec![Root::new(&root_dir, "project", true)];
    let rounds = 15;
    let (mut read, mut found) = (Vec::new(), Vec::new());
    let mut registry = None;
    for _ in 0..rounds {
        let started = Instant::now();
        let mut bytes = 0;
        for entry in std::fs::read_dir(&root_dir).unwrap().flatten() {
            bytes += std::fs::read(entry.path().join("SKILL.md")).unwrap().len();
        }
        black_box(bytes);
        read.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        let r = discover(&roots);
        let order: Vec<usize> = (0..r.skills.len()).collect();
        let index = r.index(&order, 4_000, tmp.path(), &|t: &str| t.len() as u64 / 4);
        black_box(index);
        found.push(started.elapsed().as_secs_f64() * 1000.0);
        registry = Some(r);
    }
    let registry = registry.unwrap();
    assert_eq!(
        registry.skills.len(),
        1000,
        "{:?}",
        registry.problems.first()
    );
    let (read, found) = (median(read), median(found));
    println!(
        "discovering and indexing {} skills, median of {rounds}:",
        registry.skills.len()
    );
    println!("  read every SKILL.md (baseline)        {read:7.2} ms");
    println!(
        "  discover, parse, index in 4k tokens   {found:7.2} ms   ratio {:.1}   (target 100 ms)",
        found / read
    );
    let goal = "the postgres migration fails on the users table; fix it and add a test";
    let files: Vec<String> = vec!["db/001_users.postgres".into(), "src/app.rs".into()];
    // The first match compiles every skill's globs.
    let started = Instant::now();
    let first = registry.rank(goal, &files);
    let first_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (mut scan, mut rank) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let started = Instant::now();
        let words: Vec<&str> = goal.split_whitespace().collect();
        let hits = registry
            .skills
            .iter()
            .filter(|s| words.iter().any(|w| s.meta.description.contains(w)))
            .count();
        black_box(hits);
        scan.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        black_box(registry.rank(goal, &files));
        rank.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let (scan, rank) = (median(scan), median(rank));
    println!("matching a task against them, median of {rounds}:");
    println!("  scan every description (baseline)     {scan:7.2} ms");
    println!(
        "  rank (triggers, globs, BM25)          {rank:7.2} ms   ratio {:.1}   (target 5 ms)",
        rank / scan
    );
    println!("  the first match, compiling the globs  {first_ms:7.2} ms");
    println!(
        "  best: {} ({:.2}: {})",
        first[0].name,
        first[0].score,
        first[0].reasons.join(", ")
    );
}

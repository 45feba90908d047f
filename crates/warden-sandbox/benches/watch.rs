//! What a session pays to know which files each command changed: the watch of a 10,000-file
//! workspace made once (its first command), then, per command, the look at what changed — with
//! one file changed — against a plain walk that stats every file (what a watch-less comparison
//! would pay per command), from the same run.
//!
//! `cargo bench -p warden-sandbox --bench watch -- [--runs N]`

use std::error::Error;
use std::time::{Duration, Instant};

use warden_sandbox::{ChangeWatch, Changed};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut runs = 201;
    while let Some(arg) = args.next() {
        if arg == "--runs" {
            runs = args.next().ok_or("--runs needs a number")?.parse()?;
        }
    }
    let tmp = tempfile::tempdir()?;
    let root = tmp.path();
    for d in 0..100 {
        let dir = root.join(format!("dir{d}"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..100 {
            std::fs::write(dir.join(format!("file{f}.txt")), "content\n")?;
        }
    }
    let started = Instant::now();
    let mut watch = ChangeWatch::new(root)?;
    let made = started.elapsed();
    let mut looks = Vec::new();
    let mut walks = Vec::new();
    for n in 0..runs {
        std::fs::write(
            root.join(format!("dir{}/file{}.txt", n % 100, n % 100)),
            format!("{n}\n"),
        )?;
        let t = Instant::now();
        let changed = watch.take();
        looks.push(t.elapsed());
        if !matches!(changed, Changed::Paths(ref p, 1) if p.len() == 1) {
            return Err(format!("expected one change, got {changed:?}").into());
        }
        let t = Instant::now();
        let mut stats = 0u64;
        for entry in walkdir(root) {
            stats += std::fs::symlink_metadata(&entry).map_or(0, |m| m.len());
        }
        walks.push(t.elapsed());
        std::hint::black_box(stats);
    }
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1000.0
    };
    println!(
        "10,000 files in 100 directories ({} watched):",
        watch.watched()
    );
    println!(
        "  the watch made (once)               {:8.3} ms",
        made.as_secs_f64() * 1000.0
    );
    println!(
        "  per command, one file changed       {:8.3} ms",
        median(looks)
    );
    println!(
        "  per command, a walk stating all     {:8.3} ms",
        median(walks)
    );
    Ok(())
}

fn walkdir(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            } else {
                out.push(entry.path());
            }
        }
    }
    out
}

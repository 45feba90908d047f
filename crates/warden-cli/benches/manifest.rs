//! Manifest benchmarks: validating a manifest (schema and preflight) against parsing the same
//! YAML into a generic value, and a run's workspace set-up and teardown for a 10,000-file
//! repository (the commit's shared checkout made by the first run and taken by later ones, the
//! workspace an overlay on it; the patch of one changed file, the removal and its verification,
//! as the receipt times them) against copying and removing the same tree with `cp -a` and
//! `rm -rf`. Each figure is printed beside its baseline from the same run.
//!
//! `cargo bench -p warden-cli --bench manifest -- [--runs N]`

use std::error::Error;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const MANIFEST: &str = include_str!("../../warden-manifest/tests/fixtures/seed-003-extended.yaml");

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut runs = 7;
    while let Some(arg) = args.next() {
        if arg == "--runs" {
            runs = args.next().ok_or("--runs needs a number")?.parse()?;
        }
    }
    // One run makes the commit's checkout; the later ones are what is timed against it.
    let runs = runs.max(2);
    validate(runs * 100)?;
    let tmp = tempfile::tempdir()?;
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo)?;
    repository(&repo)?;
    workspace(&repo, tmp.path(), None, runs)?;
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        let on_tmpfs = tempfile::tempdir_in(shm)?;
        workspace(&repo, tmp.path(), Some(on_tmpfs.path()), runs)?;
    }
    Ok(())
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn validate(runs: usize) -> Result<()> {
    let now = std::time::SystemTime::now();
    let org = warden_config::OrgManifest::default();
    let approvals =
        |_: &str, _: &str| -> std::result::Result<(), warden_trace::ApprovalRefused> { Ok(()) };
    let mut ours = Vec::new();
    let mut plain = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let parsed = warden_manifest::parse(MANIFEST).map_err(|p| p.reason)?;
        let problems = warden_manifest::preflight(&parsed, Some(&org), &approvals, now);
        std::hint::black_box(problems);
        ours.push(t.elapsed());
        let t = Instant::now();
        let value: serde_json::Value = yaml_serde::from_str(MANIFEST)?;
        std::hint::black_box(value);
        plain.push(t.elapsed());
    }
    let (ours, plain) = (median(ours), median(plain));
    println!("validate the seed's extended manifest (median of {runs}, target <= 5 ms):");
    println!(
        "  schema + preflight with an organisation policy  {:>8.3} ms   (parse to a generic value {:.3} ms; x{:.2})",
        ms(ours),
        ms(plain),
        ms(ours) / ms(plain)
    );
    Ok(())
}

fn sh(dir: &Path, script: &str) -> Result<()> {
    let status = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()?;
    if !status.success() {
        return Err(format!("{script}: {status}").into());
    }
    Ok(())
}

/// A repository of 10,000 files in 100 directories, committed.
fn repository(root: &Path) -> Result<()> {
    for d in 0..100 {
        let dir = root.join(format!("src/m{d:02}"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..100 {
            std::fs::write(
                dir.join(format!("f{f:02}.rs")),
                format!("// module {d} file {f}\npub fn f{f}() -> u32 {{ {f} }}\n"),
            )?;
        }
    }
    sh(
        root,
        "git init -q -b main && git -c user.email=b@x -c user.name=b add -A \
         && git -c user.email=b@x -c user.name=b commit -q -m files",
    )
}

/// Runs under the manifest in `repo`, their directories in `runs_dir` (default: beside the
/// trace, in `scratch`), against copying the tree where they are.
fn workspace(repo: &Path, scratch: &Path, runs_dir: Option<&Path>, runs: usize) -> Result<()> {
    let home = tempfile::tempdir_in(scratch)?;
    let home = home.path();
    if let Some(dir) = runs_dir {
        let settings = home.join(".config/warden/settings.toml");
        std::fs::create_dir_all(settings.parent().ok_or("no parent")?)?;
        std::fs::write(
            &settings,
            format!(
                "[manifest]\nruns_dir = \"{}\"\n",
                dir.join("runs").display()
            ),
        )?;
    }
    let copies = runs_dir.unwrap_or(scratch);
    let tmp = tempfile::tempdir_in(scratch)?;
    let template = warden_manifest::template("test-and-patch").ok_or("no template")?;
    let manifest = tmp.path().join("m.yaml");
    std::fs::write(&manifest, template)?;
    let warden = env!("CARGO_BIN_EXE_warden");
    let (mut setup, mut teardown, mut copy, mut remove) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        let out = Command::new(warden)
            .args(["manifest", "run"])
            .arg(&manifest)
            .args([
                "--json",
                "--",
                "sh",
                "-c",
                "echo x >> /workspace/src/m00/f00.rs",
            ])
            .current_dir(repo)
            .env("WARDEN_HOME", home.join("warden"))
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .output()?;
        let receipt: serde_json::Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&out.stderr)))?;
        if receipt["status"] != "succeeded" || receipt["cleanup"]["workspace_destroyed"] != true {
            return Err(format!("the run did not succeed: {receipt}").into());
        }
        let timing = |k: &str| Duration::from_millis(receipt["timings"][k].as_u64().unwrap_or(0));
        setup.push(timing("setup_ms"));
        teardown.push(timing("cleanup_ms"));
        let target = copies.join(format!("copy{i}"));
        let t = Instant::now();
        sh(repo, &format!("cp -a src {}", target.display()))?;
        copy.push(t.elapsed());
        let t = Instant::now();
        sh(tmp.path(), &format!("rm -rf {}", target.display()))?;
        remove.push(t.elapsed());
    }
    // The first run of the commit makes its checkout; the others take it.
    let first = setup.first().copied().unwrap_or_default();
    let later = setup.get(1..).unwrap_or_default().to_vec();
    let (setup, teardown, copy, remove) = (
        median(later),
        median(teardown),
        median(copy),
        median(remove),
    );
    let place = if runs_dir.is_some() {
        "runs on tmpfs"
    } else {
        "runs on disk, beside the trace"
    };
    println!(
        "a run's workspace, 10,000 files, {place} (median of {runs}, target <= 1000 ms each):"
    );
    println!(
        "  set-up, first run: the commit's checkout made    {:>8.1} ms   (cp -a of the tree {:.1} ms; x{:.2})",
        ms(first),
        ms(copy),
        ms(first) / ms(copy)
    );
    println!(
        "  set-up, later runs: the checkout taken           {:>8.1} ms   (cp -a of the tree {:.1} ms; x{:.3})",
        ms(setup),
        ms(copy),
        ms(setup) / ms(copy)
    );
    println!(
        "  teardown: patch, removal, verification           {:>8.1} ms   (rm -rf of the tree {:.1} ms; x{:.2})",
        ms(teardown),
        ms(remove),
        ms(teardown) / ms(remove)
    );
    Ok(())
}

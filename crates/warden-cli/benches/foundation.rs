//! Foundation benchmarks: the grep tool against ripgrep, glob over 100,000 files, and a whole
//! `warden tool grep` process on a project-sized tree. Each figure is printed beside a baseline
//! measured in the same run, as a ratio. Needs `rg` on PATH.
//!
//! `cargo bench -p warden-cli --bench foundation -- [--tree DIR] [--runs N]`
//! The large tree defaults to the local cargo registry sources (`$CARGO_HOME/registry/src`).

use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warden_config::Settings;
use warden_tools::{Registry, ToolContext};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut tree = None;
    let mut runs = 5;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tree" => tree = args.next().map(PathBuf::from),
            "--runs" => runs = args.next().ok_or("--runs needs a number")?.parse()?,
            _ => {} // cargo bench passes --bench
        }
    }
    let tree = match tree {
        Some(tree) => tree,
        None => cargo_home().join("registry/src"),
    };
    let scratch = std::env::temp_dir().join("warden-bench");
    std::fs::create_dir_all(&scratch)?;

    if std::env::args().any(|a| a == "--exec-only") {
        return exec_startup(runs);
    }
    if std::env::args().any(|a| a == "--files-only") {
        return file_tools(runs);
    }
    large_tree_grep(&tree, runs)?;
    glob_100k(&scratch.join("tree-100k"), runs)?;
    project_end_to_end(&scratch.join("project-500"), runs)?;
    exec_startup(runs)?;
    file_tools(runs)
}

/// editFile on a 10 MB file, `apply_patch` with 100 hunks over 20 files (in-process, against
/// writing the same bytes directly), and `warden undo` of 100 files (whole process).
fn file_tools(runs: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    std::fs::create_dir_all(root.join(".git"))?;
    let settings = Settings::defaults(root.clone());
    let registry = Registry::builtin()?;
    println!("file-changing tools (median of {runs}):");

    let mut big = String::with_capacity(10_500_000);
    for i in 0..200_000 {
        let _ = writeln!(big, "line {i:>7}: some ordinary source text here");
    }
    let big_file = root.join("big.txt");
    let mut flip = false;
    let (edit, _) = time(runs, || {
        std::fs::write(&big_file, &big)?;
        flip = !flip;
        let new = if flip { "LINE 100000" } else { "line 100000" };
        let args = json!({"path": "big.txt", "oldString": "line  100000:", "newString": format!("{new}:")});
        // A fresh session each time: the bench rewrites the file between edits.
        let ctx = ToolContext::from_settings(&settings)?;
        Ok(registry.call(&ctx, "editFile", args)?)
    })?;
    let (raw, ()) = time(runs, || {
        std::fs::write(&big_file, &big)?;
        let text = std::fs::read_to_string(&big_file)?;
        std::fs::write(
            root.join("big.tmp"),
            text.replacen("line  100000:", "LINE 100000:", 1),
        )?;
        Ok(std::fs::rename(root.join("big.tmp"), &big_file)?)
    })?;
    report(
        &format!("  editFile, {:.1} MB file", big.len() / 100_000 / 10),
        edit,
        "read+replace+write",
        raw,
    );

    let file = |n: usize| -> String {
        let mut text = String::new();
        for l in 0..100 {
            let _ = writeln!(text, "file {n} line {l}");
        }
        text
    };
    let mut patch = String::from("*** Begin Patch\n");
    for n in 0..20 {
        let _ = writeln!(patch, "*** Update File: p/f{n}.txt");
        for h in 0..5 {
            let l = h * 20 + 10;
            let _ = write!(
                patch,
                "@@\n file {n} line {}\n-file {n} line {l}\n+FILE {n} LINE {l}\n",
                l - 1
            );
        }
    }
    patch.push_str("*** End Patch\n");
    let seed = || -> Result<()> {
        std::fs::create_dir_all(root.join("p"))?;
        for n in 0..20 {
            std::fs::write(root.join(format!("p/f{n}.txt")), file(n))?;
        }
        Ok(())
    };
    let (patching, _) = time(runs, || {
        seed()?;
        let ctx = ToolContext::from_settings(&settings)?;
        let t = Instant::now();
        registry.call(&ctx, "apply_patch", json!({"patch": patch}))?;
        Ok(t.elapsed())
    })?;
    let (seeding, ()) = time(runs, seed)?;
    report(
        "  apply_patch, 100 hunks over 20 files (incl. re-seeding)",
        patching,
        "re-seeding the 20 files",
        seeding,
    );
    Ok(())
}

/// `warden exec -- /bin/true` against bare `/bin/true` and bubblewrap (when installed) with the
/// same isolation: a read-only system, a writable workspace, no network, new PID namespace.
fn exec_startup(runs: usize) -> Result<()> {
    let workspace = tempfile::tempdir()?;
    let ws = workspace.path().to_string_lossy().into_owned();
    let warden = env!("CARGO_BIN_EXE_warden");
    let run = |program: &str, args: &[&str]| -> Result<()> {
        let status = Command::new(program)
            .args(args)
            .current_dir(&ws)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("{program} {args:?} failed: {status}").into())
        }
    };
    let rounds = runs.max(30);
    let (bare, ()) = time(rounds, || run("/bin/true", &[]))?;
    let (ours, ()) = time(rounds, || {
        run(warden, &["exec", "--workspace", &ws, "--", "/bin/true"])
    })?;
    println!("sandboxed /bin/true, whole process (median of {rounds}):");
    report("  warden exec -- /bin/true", ours, "bare /bin/true", bare);
    if Command::new("bwrap").arg("--version").output().is_ok() {
        let bwrap_args = [
            "--unshare-all",
            "--die-with-parent",
            "--cap-drop",
            "ALL",
            "--clearenv",
            "--ro-bind",
            "/usr",
            "/usr",
            "--ro-bind",
            "/etc",
            "/etc",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            // The workspace is under /tmp: the private /tmp comes first.
            "--tmpfs",
            "/tmp",
            "--bind",
            &ws,
            &ws,
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--chdir",
            &ws,
            "/bin/true",
        ];
        let (bwrap, ()) = time(rounds, || run("bwrap", &bwrap_args))?;
        report(
            "  warden exec -- /bin/true",
            ours,
            "bwrap, same isolation",
            bwrap,
        );
    } else {
        println!("  (bwrap not installed: no bubblewrap baseline)");
    }
    in_process(&workspace, rounds)
}

/// One sandboxed `/bin/true` from a plan already made, in this process: in a helper of its own,
/// and in a warm sandbox's cell made ahead (20 ms between commands, as a model's turn would
/// leave). Then the warm helper's and a waiting cell's resident memory.
fn in_process(workspace: &tempfile::TempDir, rounds: usize) -> Result<()> {
    let ws = workspace.path().canonicalize()?;
    let settings = Settings::defaults(ws.clone());
    let request = warden_sandbox::request_from_settings(&settings, &ws, "/bin/true", &[], &[])?;
    let plan = warden_sandbox::Plan::new(&request)?;
    let helper = env!("CARGO_BIN_EXE_warden-sandbox-helper");
    let measure = |sandbox: &warden_sandbox::Sandbox| -> Result<Duration> {
        let mut times = Vec::with_capacity(rounds);
        for _ in 0..=rounds {
            std::thread::sleep(Duration::from_millis(20));
            let start = Instant::now();
            let outcome = sandbox.run(&plan, warden_sandbox::Output::Capture)?;
            times.push(start.elapsed());
            if outcome.exit_code != 0 {
                return Err(format!("/bin/true failed: {outcome:?}").into());
            }
        }
        times.remove(0);
        Ok(median(times))
    };
    let own = measure(&warden_sandbox::Sandbox::new(helper))?;
    let spare = measure(&warden_sandbox::Sandbox::new(helper).keep_spare())?;
    let warm_sandbox = warden_sandbox::Sandbox::new(helper).keep_warm();
    let warm = measure(&warm_sandbox)?;
    println!("sandboxed /bin/true from its plan, in-process (median of {rounds}):");
    report("  a warm sandbox's cell", warm, "a helper of its own", own);
    report("  a warm sandbox's cell", warm, "the spare helper", spare);
    let rss = |pid: u32| -> f64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
            })
            .unwrap_or(0.0)
            / 1024.0
    };
    std::thread::sleep(Duration::from_millis(200));
    if let Some(pid) = warm_sandbox.warm_pid() {
        let cells =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        let cell = cells
            .split_whitespace()
            .next()
            .and_then(|c| c.parse::<u32>().ok());
        println!(
            "  warm helper resident memory {:.1} MB; a cell waiting for its command {:.1} MB",
            rss(pid),
            cell.map_or(0.0, rss)
        );
    }
    warm_sandbox.close();
    Ok(())
}

fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"))
}

/// Settings for a search over `root` with every cap off and no excludes, so the work matches
/// ripgrep's: the same files, every match returned.
fn uncapped(root: &Path) -> Result<ToolContext> {
    let mut settings = Settings::defaults(root.canonicalize()?);
    settings.tools.grep.max_hits = usize::MAX;
    settings.tools.grep.max_line_chars = usize::MAX;
    settings.tools.grep.exclude.clear();
    settings.tools.glob.exclude.clear();
    Ok(ToolContext::from_settings(&settings)?)
}

/// ripgrep with the walk the tools use: hidden files included, gitignore honoured without a git
/// repository, the default denied names skipped.
fn rg(root: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new("rg");
    cmd.args(["--hidden", "--no-require-git", "--no-config"])
        .args([
            "-g",
            "!.env*",
            "-g",
            "!*.pem",
            "-g",
            "!*.key",
            "-g",
            "!id_rsa*",
            "-g",
            "!id_ed25519*",
        ])
        .args(extra)
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> Result<T>) -> Result<(Duration, T)> {
    let mut last = f()?; // warm-up
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        last = f()?;
        times.push(start.elapsed());
    }
    Ok((median(times), last))
}

fn run_output(mut cmd: Command) -> Result<Vec<u8>> {
    Ok(cmd.output()?.stdout)
}

fn dir_size(root: &Path) -> u64 {
    let mut total = 0;
    for entry in ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .build()
        .flatten()
    {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            total += entry.metadata().map_or(0, |m| m.len());
        }
    }
    total
}

fn report(name: &str, ours: Duration, base_name: &str, base: Duration) {
    println!(
        "{name:<44} {:>9.1} ms   {base_name:<22} {:>9.1} ms   ratio {:.2}",
        ours.as_secs_f64() * 1e3,
        base.as_secs_f64() * 1e3,
        ours.as_secs_f64() / base.as_secs_f64()
    );
}

fn large_tree_grep(tree: &Path, runs: usize) -> Result<()> {
    let size = dir_size(tree);
    #[allow(clippy::cast_precision_loss)]
    let mb = size as f64 / 1e6;
    println!(
        "large tree: {} ({mb:.0} MB searched by both)",
        tree.display()
    );
    if mb < 300.0 {
        println!("  note: the target is stated for >= 300 MB; this tree is smaller");
    }
    let ctx = uncapped(tree)?;
    let registry = Registry::builtin()?;
    for pattern in [
        "unsafe impl",
        r"fn [a-z_]+_unchecked\(",
        "ERROR_INVALID_[A-Z_]+",
    ] {
        let args = json!({"pattern": pattern});
        let (ours, out) = time(runs, || Ok(registry.call(&ctx, "grep", args.clone())?))?;
        let (base, rg_out) = time(runs, || {
            run_output({
                let mut c = rg(tree, &["-n", "--no-heading"]);
                c.arg(pattern);
                c
            })
        })?;
        let rg_hits = rg_out
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count();
        let hits = out["totalMatches"].as_u64().unwrap_or(0);
        report(
            &format!("grep {pattern:?} ({hits} hits)"),
            ours,
            &format!("rg ({rg_hits} hits)"),
            base,
        );
        #[allow(clippy::cast_precision_loss)]
        let gbps = size as f64 / ours.as_secs_f64() / 1e9;
        println!("  grep tool throughput {gbps:.2} GB/s");
    }
    Ok(())
}

fn glob_100k(root: &Path, runs: usize) -> Result<()> {
    const FILES: usize = 100_000;
    if !root.join("done").exists() {
        for i in 0..FILES {
            let dir = root.join(format!("d{:02}/s{:03}", i % 50, (i / 50) % 400));
            std::fs::create_dir_all(&dir)?;
            let ext = ["rs", "ts", "md", "json"][i % 4];
            std::fs::write(dir.join(format!("f{i}.{ext}")), "x")?;
        }
        std::fs::write(root.join("done"), "")?;
    }
    let ctx = uncapped(root)?;
    let registry = Registry::builtin()?;
    let args = json!({"pattern": "**/*.rs"});
    let (ours, out) = time(runs, || Ok(registry.call(&ctx, "glob", args.clone())?))?;
    let (base, _) = time(runs, || run_output(rg(root, &["--files", "-g", "*.rs"])))?;
    println!(
        "glob over {FILES} files ({} matches, 200 shown):",
        out["totalMatches"]
    );
    report(
        "  glob **/*.rs (in-process)",
        ours,
        "rg --files -g *.rs",
        base,
    );
    Ok(())
}

fn project_end_to_end(root: &Path, runs: usize) -> Result<()> {
    if !root.join("done").exists() {
        std::fs::create_dir_all(root.join(".git"))?;
        for i in 0..500 {
            let dir = root.join(format!("src/m{:02}", i % 25));
            std::fs::create_dir_all(&dir)?;
            let mut text = String::new();
            for line in 0..200 {
                let _ = writeln!(
                    text,
                    "    let value_{line} = compute(input_{i}, {line}); // item {i}.{line}"
                );
                if line % 50 == 0 {
                    text.push_str("pub fn handle_request(req: Request) -> Response { todo() }\n");
                }
            }
            std::fs::write(dir.join(format!("file{i}.rs")), text)?;
        }
        std::fs::write(root.join("done"), "")?;
    }
    let home = tempfile::tempdir()?;
    let warden = env!("CARGO_BIN_EXE_warden");
    let grep_args: Value = json!({"pattern": "fn handle_request"});
    let spawn = |cmd: &mut Command| -> Result<Vec<u8>> {
        let out = cmd.output()?;
        if !out.status.success() {
            return Err(format!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        Ok(out.stdout)
    };
    let (ours, _) = time(runs.max(20), || {
        spawn(
            Command::new(warden)
                .args(["tool", "grep", "--args", &grep_args.to_string()])
                .current_dir(root)
                .env("WARDEN_HOME", home.path())
                .env("XDG_CONFIG_HOME", home.path()),
        )
    })?;
    let (base, _) = time(runs.max(20), || {
        spawn(rg(root, &["-n", "fn handle_request"]).stdout(Stdio::piped()))
    })?;
    println!(
        "project-sized tree (500 files, 100k lines), whole process including settings and trace:"
    );
    report("  warden tool grep (default caps)", ours, "rg -n", base);
    Ok(())
}

//! warden run as root (CI, containers): commands run as an unprivileged host user, the
//! workspace and writable roots shown to it through idmapped mounts. Each probe first works as
//! root without the sandbox (or with the user's `root_identity = "host"`), then fails inside.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{Project, exec, is_root, sandbox_available};

/// Whether these tests can run: as root, with the sandbox. In CI (`WARDEN_REQUIRE_KERNEL`) they
/// must.
fn as_root(p: &Project) -> bool {
    if !is_root() {
        assert!(
            std::env::var_os("WARDEN_REQUIRE_KERNEL").is_none(),
            "these tests need root, as CI runs them"
        );
        eprintln!("skipping: not root");
        return false;
    }
    sandbox_available(p)
}

/// `text` with every run of blanks made one space (`/proc/self/uid_map` pads its columns).
fn words(text: &str) -> String {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A settings file of the user's, given on the command line.
fn settings(p: &Project, name: &str, text: &str) -> String {
    let path = p.tmp().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A file only root may read, in a system directory every sandbox shows; removed on drop.
struct RootOnly(PathBuf);

impl RootOnly {
    fn new() -> Self {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::create_dir_all("/opt").unwrap();
        let path = PathBuf::from(format!("/opt/warden-root-only-{}.key", std::process::id()));
        std::fs::write(&path, "ROOT-ONLY-PROBE\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        Self(path)
    }
}

impl Drop for RootOnly {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn as_root_a_root_only_file_is_unreadable_and_what_the_command_writes_is_the_users() {
    let p = Project::new();
    if !as_root(&p) {
        return;
    }
    let secret = RootOnly::new();
    let cat = format!("cat {}", secret.0.display());
    // Readable to root without the sandbox, and inside with the user's host identity.
    let outside = p.run(&["exec", "--no-sandbox", "--", "sh", "-c", &cat]);
    assert!(
        outside.stdout.contains("ROOT-ONLY-PROBE"),
        "{}",
        outside.stderr
    );
    let host = settings(&p, "host.toml", "[sandbox]\nroot_identity = \"host\"\n");
    let run = exec(&p, &["--settings", &host], &cat);
    assert!(run.stdout.contains("ROOT-ONLY-PROBE"), "{}", run.stderr);
    assert!(
        run.stderr.contains("commands run as root"),
        "{}",
        run.stderr
    );

    // By default: unreadable, and the command is the unprivileged id on the host.
    let run = exec(
        &p,
        &[],
        &format!(
            "{cat}; id -u; cat /proc/self/uid_map; echo made > made.txt; mkdir d && echo x > d/y"
        ),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.json();
    let stdout = out["stdout"].as_str().unwrap();
    let stderr = out["stderr"].as_str().unwrap();
    assert!(!stdout.contains("ROOT-ONLY-PROBE"), "{stdout}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(stdout.starts_with("1000\n"), "{stdout}");
    assert!(words(stdout).contains("1000 2000000000 1"), "{stdout}");
    assert!(
        out["sandbox"]["layers"]
            .to_string()
            .contains("unprivileged-identity"),
        "{out}"
    );
    // What it made belongs to the user who ran warden (root), not to the unprivileged id.
    for made in ["made.txt", "d", "d/y"] {
        let meta = std::fs::metadata(p.root().join(made)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (0, 0), "{made}");
    }
    // The id is the user's to choose; a project cannot choose it, nor the host identity.
    let chosen = settings(&p, "id.toml", "[sandbox]\nunprivileged_id = 2000000123\n");
    let run = exec(&p, &["--settings", &chosen], "cat /proc/self/uid_map");
    assert!(
        words(run.json()["stdout"].as_str().unwrap()).contains("1000 2000000123 1"),
        "{}",
        run.stdout
    );
    // An id an account or a group has is refused.
    let taken = settings(&p, "taken.toml", "[sandbox]\nunprivileged_id = 1\n");
    let run = exec(&p, &["--settings", &taken], "true");
    assert_eq!(run.code, 126, "{}", run.stderr);
    assert!(run.stderr.contains("unprivileged_id = 1"), "{}", run.stderr);
    // A read-only mount of a system directory is shown as it is: root's files stay root's.
    let opt = format!("/opt:{}/hostopt:ro", p.root().display());
    let name = secret.0.file_name().unwrap().to_string_lossy().into_owned();
    let read = format!("cat hostopt/{name}");
    let run = exec(&p, &["--settings", &host, "--mount", &opt], &read);
    assert!(run.stdout.contains("ROOT-ONLY-PROBE"), "{}", run.stdout);
    let run = exec(&p, &["--mount", &opt], &read);
    assert!(!run.stdout.contains("ROOT-ONLY-PROBE"), "{}", run.stdout);
    assert!(run.stdout.contains("Permission denied"), "{}", run.stdout);
    p.trust();
    p.write(
        ".warden/settings.toml",
        "[sandbox]\nroot_identity = \"host\"\nunprivileged_id = 5\n",
    );
    let run = exec(&p, &[], &format!("{cat}; cat /proc/self/uid_map"));
    let stdout = run.json()["stdout"].as_str().unwrap().to_owned();
    assert!(!stdout.contains("ROOT-ONLY-PROBE"), "{stdout}");
    assert!(words(&stdout).contains("1000 2000000000 1"), "{stdout}");
}

#[test]
fn as_root_git_npm_and_cargo_still_work_in_the_workspace() {
    let p = Project::new();
    if !as_root(&p) {
        return;
    }
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=a", "-c", "user.email=a@example.com"])
            .args(args)
            .current_dir(p.root())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    std::fs::remove_dir_all(p.root().join(".git")).unwrap();
    git(&["init", "-q"]);
    p.write("README.md", "hello\n");
    git(&["add", "."]);
    git(&["commit", "-qm", "first"]);
    let run = exec(
        &p,
        &[],
        "echo more >> README.md && git status --porcelain && git log --oneline | wc -l",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.json();
    assert_eq!(out["stdout"], " M README.md\n1\n", "{out}");

    if crate::support::npm() {
        p.write(
            "package.json",
            r#"{"name":"probe","version":"1.0.0","scripts":{"test":"node -e \"require('fs').writeFileSync('npm-ran.txt','ok')\""}}"#,
        );
        let run = exec(&p, &[], "npm test --cache /tmp/npm-cache --loglevel=error");
        assert_eq!(run.code, 0, "{}", run.stdout);
        let meta = std::fs::metadata(p.root().join("npm-ran.txt")).unwrap();
        assert_eq!(meta.uid(), 0);
    }

    // cargo from this toolchain, read-only, building into the workspace.
    let sysroot = String::from_utf8(
        Command::new("rustc")
            .args(["--print", "sysroot"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let sysroot = Path::new(sysroot.trim()).canonicalize().unwrap();
    let toolchain = settings(
        &p,
        "toolchain.toml",
        &format!(
            "[sandbox.filesystem]\nallow_read = [\"/{}\"]\n",
            sysroot.display()
        ),
    );
    p.write(
        "crate/Cargo.toml",
        "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    p.write("crate/src/main.rs", "fn main() { println!(\"built\"); }\n");
    let path = format!("PATH={}/bin:/usr/bin:/bin", sysroot.display());
    let run = exec(
        &p,
        &[
            "--settings",
            &toolchain,
            "--env",
            &path,
            "--env",
            "CARGO_HOME=/tmp/cargo-home",
        ],
        "cd crate && cargo build --offline -q && ./target/debug/probe",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.json()["stdout"], "built\n", "{}", run.stdout);
    let meta = std::fs::metadata(p.root().join("crate/target/debug/probe")).unwrap();
    assert_eq!(meta.uid(), 0);
}

/// A ramfs mounted for the test, which refuses idmapped mounts; unmounted on drop.
struct Ramfs(PathBuf);

impl Ramfs {
    fn new(at: PathBuf) -> Self {
        std::fs::create_dir_all(&at).unwrap();
        let done = Command::new("mount")
            .args(["-t", "ramfs", "ramfs"])
            .arg(&at)
            .status()
            .unwrap();
        assert!(done.success(), "mounting a ramfs at {}", at.display());
        Self(at)
    }
}

impl Drop for Ramfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn as_root_a_writable_root_that_cannot_be_idmapped_fails_closed_unless_host_is_chosen() {
    let p = Project::new();
    if !as_root(&p) {
        return;
    }
    let ramfs = Ramfs::new(p.tmp().join("ramfs"));
    std::fs::write(ramfs.0.join("outside.txt"), "x").unwrap();
    let root = ramfs.0.display().to_string();
    let allow = format!("[sandbox.filesystem]\nallow_write = [\"/{root}\"]\n");
    let strict = settings(&p, "strict.toml", &allow);
    let write = format!("echo in > {root}/inside.txt");
    let run = exec(&p, &["--settings", &strict], &write);
    assert_eq!(run.code, 126, "{}", run.stderr);
    assert!(run.stderr.contains(&root), "{}", run.stderr);
    assert!(run.stderr.contains("idmapped"), "{}", run.stderr);
    assert!(run.stderr.contains("root_identity"), "{}", run.stderr);
    assert!(!ramfs.0.join("inside.txt").exists());
    let host = settings(
        &p,
        "host.toml",
        &format!("{allow}[sandbox]\nroot_identity = \"host\"\n"),
    );
    let run = exec(&p, &["--settings", &host], &write);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("commands run as root"),
        "{}",
        run.stderr
    );
    assert!(ramfs.0.join("inside.txt").exists());
}

//! Running the real binary in a temporary project with its own trace home.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub(crate) struct Project {
    dir: tempfile::TempDir,
    pub(crate) home: PathBuf,
}

pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
}

impl Project {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("project/.git")).unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        Self { dir, home }
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.dir.path().join("project").canonicalize().unwrap()
    }

    pub(crate) fn tmp(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn write(&self, rel: &str, content: &str) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub(crate) fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_warden"));
        cmd.current_dir(self.root())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("WARDEN_HOME", self.home.join("warden"));
        cmd
    }

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        let mut cmd = self.command();
        cmd.args(args);
        finish(&cmd.output().unwrap())
    }

    /// Replaces the temporary directory in text so snapshots are stable.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let tmp = self.tmp().canonicalize().unwrap();
        text.replace(&tmp.display().to_string(), "[TMP]")
            .replace(&self.tmp().display().to_string(), "[TMP]")
    }
}

pub(crate) fn finish(output: &Output) -> Run {
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

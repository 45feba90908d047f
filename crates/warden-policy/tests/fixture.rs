//! A workspace, a home and an outside directory, and an engine over them.

use std::path::{Path, PathBuf};

use warden_config::raw::{RawPermissions, RawSandbox};
use warden_config::{LoadOptions, PermissionMode, RawSettings};
use warden_policy::Engine;

pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    pub(crate) ws: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) outside: PathBuf,
    /// warden's data directory: the remembered rules.
    pub(crate) data: PathBuf,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        // Outside /tmp: temporary directories are writable roots, and the home directory must not be.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (ws, home, outside) = (base.join("ws"), base.join("home"), base.join("outside"));
        for (root, files) in [
            (
                &ws,
                &[
                    "src/main.rs",
                    "README.md",
                    ".env",
                    "package.json",
                    "Cargo.toml",
                    "build/out.o",
                    "target/x",
                ][..],
            ),
            (
                &home,
                &[
                    ".ssh/id_rsa",
                    ".aws/credentials",
                    "Private/sandbox-probe.txt",
                    ".bashrc",
                ][..],
            ),
            (&outside, &["notes.txt"][..]),
        ] {
            for file in files {
                let path = root.join(file);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, "x\n").unwrap();
            }
        }
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        Self {
            _dir: dir,
            ws,
            home,
            outside,
            data: base.join("data"),
        }
    }

    pub(crate) fn fill(&self, text: &str) -> String {
        text.replace("{ws}", &self.ws.display().to_string())
            .replace("{home}", &self.home.display().to_string())
            .replace("{outside}", &self.outside.display().to_string())
    }

    /// An engine for the project settings `settings` (TOML), in `mode`, sandboxed or not. The
    /// project is trusted: its settings are the test's own.
    pub(crate) fn engine(
        &self,
        settings: &str,
        mode: PermissionMode,
        sandboxed: bool,
    ) -> Result<Engine, String> {
        self.engine_with_trust(settings, mode, sandboxed, true)
    }

    /// An engine for `settings` as the project's file of a project not trusted.
    pub(crate) fn untrusted_engine(
        &self,
        settings: &str,
        mode: PermissionMode,
    ) -> Result<Engine, String> {
        self.engine_with_trust(settings, mode, true, false)
    }

    fn engine_with_trust(
        &self,
        settings: &str,
        mode: PermissionMode,
        sandboxed: bool,
        trusted: bool,
    ) -> Result<Engine, String> {
        let dot = self.ws.join(".warden");
        std::fs::create_dir_all(&dot).unwrap();
        std::fs::write(dot.join("settings.toml"), self.fill(settings)).unwrap();
        let cli = RawSettings {
            permissions: Some(RawPermissions {
                mode: Some(mode),
                ..RawPermissions::default()
            }),
            sandbox: Some(RawSandbox {
                enabled: Some(sandboxed),
                ..RawSandbox::default()
            }),
            ..RawSettings::default()
        };
        let opts = LoadOptions {
            cwd: self.ws.clone(),
            cli,
            managed_path: self.ws.join("no-managed.toml"),
            user_config_dir: None,
            data_dir: Some(self.data.clone()),
            home: Some(self.home.clone()),
            trust_project: trusted,
            allow_home_workspace: false,
        };
        let settings = warden_config::load(&opts).map_err(|e| e.to_string())?;
        Engine::with_home(&settings, &self.home).map_err(|e| e.to_string())
    }

    pub(crate) fn home(&self) -> &Path {
        &self.home
    }
}

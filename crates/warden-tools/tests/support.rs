//! Fixture workspaces and a context to run tools in them.

use std::path::{Path, PathBuf};

use serde_json::Value;
use warden_config::Settings;
use warden_protocol::{ToolError, ToolErrorKind};
use warden_tools::{Registry, ToolContext};

/// A temporary workspace with files in it.
pub(crate) struct Workspace {
    _dir: tempfile::TempDir,
    pub(crate) settings: Settings,
}

impl Workspace {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        let mut settings = Settings::defaults(root.clone());
        settings.cwd = root;
        Self {
            _dir: dir,
            settings,
        }
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.settings.project_root.clone()
    }

    pub(crate) fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub(crate) fn ctx(&self) -> ToolContext {
        ToolContext::from_settings(&self.settings).unwrap()
    }

    pub(crate) fn call(&self, tool: &str, args: Value) -> Result<Value, ToolError> {
        call_in(&self.ctx(), tool, args)
    }

    pub(crate) fn err(&self, tool: &str, args: Value) -> ToolError {
        match self.call(tool, args) {
            Ok(v) => panic!("expected an error, got {v}"),
            Err(e) => e,
        }
    }

    pub(crate) fn err_kind(&self, tool: &str, args: Value) -> ToolErrorKind {
        self.err(tool, args).kind
    }
}

pub(crate) fn call_in(ctx: &ToolContext, tool: &str, args: Value) -> Result<Value, ToolError> {
    Registry::builtin().unwrap().call(ctx, tool, args)
}

pub(crate) fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

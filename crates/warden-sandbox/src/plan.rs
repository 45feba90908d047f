//! What a sandboxed command may see and do, as concrete mounts and limits. The caller builds a
//! [`Request`] from its policy; [`Plan::new`] turns it into the mount plan every backend shares.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The profiles of `warden exec --profile`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Nothing writable but a private `/tmp`.
    ReadOnly,
    /// The workspace and extra writable roots are writable.
    #[default]
    WorkspaceWrite,
    /// Workspace-write with the network forced off, an empty `$HOME` and no toolchains from it.
    FullIsolated,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::FullIsolated => "full-isolated",
        }
    }
}

/// Resource limits. `None` means no limit of that kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub timeout_ms: Option<u64>,
    pub memory_mb: Option<u64>,
    pub pids: Option<u64>,
    pub cpu_seconds: Option<u64>,
    /// Size of the private `/tmp`, and the largest file the command may write.
    pub disk_mb: Option<u64>,
    /// CPU quota, in CPUs (a cgroup's CPU controller).
    pub cpus: Option<f64>,
    /// The most bytes of stdout and of stderr kept; the rest is read and dropped.
    pub output_bytes: Option<u64>,
}

/// What the caller asks for. Paths are absolute.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub program: String,
    pub args: Vec<String>,
    /// The writable root, and the working directory of the command.
    pub workspace: PathBuf,
    pub profile: Profile,
    pub allow_read: Vec<PathBuf>,
    pub allow_write: Vec<PathBuf>,
    /// Paths made invisible (masked), whether they exist or not.
    pub deny_read: Vec<PathBuf>,
    /// Paths kept read-only inside writable roots.
    pub deny_write: Vec<PathBuf>,
    /// Extra mounts: source, target, writable.
    pub mounts: Vec<(PathBuf, PathBuf, bool)>,
    pub network: bool,
    /// The environment the command starts with, exactly.
    pub env: Vec<(String, String)>,
    /// The home directory the command sees (its toolchain directories are mounted read-only).
    pub home: PathBuf,
    /// Directories under `home` made visible read-only (toolchains).
    pub home_allow: Vec<PathBuf>,
    pub limits: Limits,
}

/// How one mount is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Mount {
    /// Bind `source` (host path) at `target`, read-only unless `writable`.
    Bind {
        source: PathBuf,
        target: PathBuf,
        writable: bool,
    },
    /// An empty tmpfs at `target` (read-only unless `writable`), of at most `size_mb`.
    Tmpfs {
        target: PathBuf,
        writable: bool,
        size_mb: u64,
    },
    /// Hide a file: `/dev/null` bound read-only over it.
    MaskFile { target: PathBuf },
}

/// Everything the helper needs to build the sandbox and run the command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// In order: parents before what is mounted inside them.
    pub mounts: Vec<Mount>,
    pub network: bool,
    pub limits: Limits,
}

/// System directories every command may read.
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Files under system directories that are never shown.
const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/security/opasswd",
];

impl Plan {
    /// The mount plan for `request`: system directories, toolchains and extra reads read-only;
    /// the workspace and extra writes read-write (unless the profile says otherwise); a private
    /// `/tmp`; denied paths masked; protected paths inside writable roots read-only.
    #[allow(clippy::too_many_lines)]
    pub fn new(request: &Request) -> Self {
        let mut mounts = Vec::new();
        let disk = request.limits.disk_mb.unwrap_or(1024);
        let existing = |p: &Path| p.exists();
        for dir in SYSTEM.iter().map(Path::new).filter(|p| existing(p)) {
            mounts.push(Mount::Bind {
                source: dir.to_path_buf(),
                target: dir.to_path_buf(),
                writable: false,
            });
        }
        mounts.push(Mount::Tmpfs {
            target: request.home.clone(),
            writable: false,
            size_mb: 1,
        });
        if request.profile != Profile::FullIsolated {
            for dir in request.home_allow.iter().filter(|p| existing(p)) {
                mounts.push(Mount::Bind {
                    source: dir.clone(),
                    target: dir.clone(),
                    writable: false,
                });
            }
        }
        for dir in request.allow_read.iter().filter(|p| existing(p)) {
            mounts.push(Mount::Bind {
                source: dir.clone(),
                target: dir.clone(),
                writable: false,
            });
        }
        let writable = request.profile != Profile::ReadOnly;
        mounts.push(Mount::Bind {
            source: request.workspace.clone(),
            target: request.workspace.clone(),
            writable,
        });
        for dir in request.allow_write.iter().filter(|p| existing(p)) {
            mounts.push(Mount::Bind {
                source: dir.clone(),
                target: dir.clone(),
                writable,
            });
        }
        for (source, target, rw) in &request.mounts {
            mounts.push(Mount::Bind {
                source: source.clone(),
                target: target.clone(),
                writable: *rw && writable,
            });
        }
        mounts.push(Mount::Tmpfs {
            target: PathBuf::from("/tmp"),
            writable: true,
            size_mb: disk,
        });
        let mut ancestors: Vec<PathBuf> = Vec::new();
        for path in request.deny_write.iter().filter(|p| existing(p)) {
            // Each directory between the writable root and the protected path becomes a mount
            // point of its own, which cannot be renamed or removed (`mv .git x` fails).
            if let Some(root) = writable_root(path, &mounts) {
                let mut dir = path.parent();
                while let Some(d) = dir.filter(|d| d.starts_with(&root) && *d != root) {
                    if !ancestors.iter().any(|a| a == d) {
                        ancestors.push(d.to_path_buf());
                    }
                    dir = d.parent();
                }
            }
            mounts.push(Mount::Bind {
                source: path.clone(),
                target: path.clone(),
                writable: false,
            });
        }
        for dir in ancestors {
            mounts.push(Mount::Bind {
                source: dir.clone(),
                target: dir,
                writable,
            });
        }
        let secrets = SYSTEM_SECRETS.iter().map(PathBuf::from);
        for path in request.deny_read.iter().cloned().chain(secrets) {
            if !visible(&path, &mounts) {
                continue;
            }
            if path.is_dir() {
                mounts.push(Mount::Tmpfs {
                    target: path,
                    writable: false,
                    size_mb: 1,
                });
            } else if path.exists() {
                mounts.push(Mount::MaskFile { target: path });
            }
        }
        mounts.sort_by_key(|m| depth(target(m)));
        Self {
            program: request.program.clone(),
            args: request.args.clone(),
            cwd: request.workspace.clone(),
            env: request.env.clone(),
            mounts,
            network: request.network && request.profile != Profile::FullIsolated,
            limits: request.limits.clone(),
        }
    }
}

/// The writable bind that holds `path`, if one does.
fn writable_root(path: &Path, mounts: &[Mount]) -> Option<PathBuf> {
    mounts.iter().find_map(|m| match m {
        Mount::Bind {
            target,
            writable: true,
            ..
        } if path.starts_with(target) => Some(target.clone()),
        _ => None,
    })
}

/// Whether `path` would be visible through one of the mounts made so far.
fn visible(path: &Path, mounts: &[Mount]) -> bool {
    mounts.iter().any(|m| match m {
        Mount::Bind { target, .. } => path.starts_with(target),
        Mount::Tmpfs { .. } | Mount::MaskFile { .. } => false,
    })
}

pub(crate) fn target(mount: &Mount) -> &Path {
    match mount {
        Mount::Bind { target, .. } | Mount::Tmpfs { target, .. } | Mount::MaskFile { target } => {
            target
        }
    }
}

fn depth(path: &Path) -> usize {
    path.components().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(ws: &Path) -> Request {
        Request {
            program: "true".into(),
            workspace: ws.to_path_buf(),
            home: PathBuf::from("/nonexistent-home"),
            ..Request::default()
        }
    }

    #[test]
    fn system_dirs_are_read_only_and_the_workspace_writable() {
        let ws = tempfile::tempdir().unwrap();
        let plan = Plan::new(&request(ws.path()));
        assert!(plan.mounts.contains(&Mount::Bind {
            source: "/usr".into(),
            target: "/usr".into(),
            writable: false
        }));
        assert!(plan.mounts.contains(&Mount::Bind {
            source: ws.path().into(),
            target: ws.path().into(),
            writable: true
        }));
        assert!(plan.mounts.iter().any(|m| matches!(m, Mount::Tmpfs { target, writable: true, .. } if target == Path::new("/tmp"))));
        // Parents come before what is mounted inside them.
        let depths: Vec<usize> = plan.mounts.iter().map(|m| depth(target(m))).collect();
        assert!(depths.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn read_only_profile_makes_the_workspace_read_only_and_secrets_are_masked() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("secret.txt"), "s").unwrap();
        let mut req = request(ws.path());
        req.profile = Profile::ReadOnly;
        req.deny_read.push(ws.path().join("secret.txt"));
        let plan = Plan::new(&req);
        assert!(plan.mounts.contains(&Mount::Bind {
            source: ws.path().into(),
            target: ws.path().into(),
            writable: false
        }));
        assert!(plan.mounts.contains(&Mount::MaskFile {
            target: ws.path().join("secret.txt")
        }));
        if Path::new("/etc/shadow").exists() {
            assert!(plan.mounts.contains(&Mount::MaskFile {
                target: "/etc/shadow".into()
            }));
        }
    }
}

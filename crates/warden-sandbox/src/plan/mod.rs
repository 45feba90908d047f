//! What a sandboxed command may see and do, as concrete mounts and limits. The caller builds a
//! [`Request`] from its policy; [`Plan::new`] turns it into the mount plan every backend shares.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod masks;
mod overlay;
mod paths;
mod protect;

pub use overlay::{Overlay, overlay_can_hold, overlay_opaque};
pub(crate) use paths::target;
use paths::{depth, named_id, on_host, real, visible, writable_bind, writable_binds};
use protect::{link_below, with_protections};

/// The uid and gid the command runs as inside the sandbox: an ordinary user, whoever runs warden.
pub const INSIDE_ID: u32 = 1000;

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

/// Who a command is on the host when warden runs as root (as an ordinary user, it is that
/// user either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RootIdentity {
    /// An unprivileged host uid and gid (both this id), owning none of the host's files: the
    /// writable roots are shown to it through idmapped mounts, so that what it writes belongs
    /// to the user who ran warden.
    Unprivileged(u32),
    /// Root: every file only root may read is readable to the command.
    Host,
}

impl Default for RootIdentity {
    fn default() -> Self {
        Self::Unprivileged(warden_config::DEFAULT_UNPRIVILEGED_ID)
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
    /// A memory, process or CPU limit no cgroup can hold is left to per-process rlimits (and
    /// said so), instead of nothing running (`[sandbox.limits] fallback = "rlimits"`).
    #[serde(default)]
    pub fallback: Fallback,
}

/// What a memory, process or CPU limit becomes where no cgroup can hold it for the whole
/// sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fallback {
    /// Nothing runs.
    #[default]
    None,
    /// Rlimits of each process (a CPU quota goes unenforced), said on every command.
    Rlimits,
}

impl Fallback {
    /// As `[sandbox.limits] fallback` names it.
    pub fn from_setting(setting: warden_config::LimitsFallback) -> Self {
        match setting {
            warden_config::LimitsFallback::Rlimits => Self::Rlimits,
            warden_config::LimitsFallback::None => Self::None,
        }
    }
}

/// Why a request cannot be run as it asks: nothing runs. The reason names what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl From<Refused> for String {
    fn from(refused: Refused) -> Self {
        refused.0
    }
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
    /// With the network off: a port on the sandbox's own loopback whose listening socket is
    /// handed to the caller (an egress proxy) before the command starts. The only way out.
    pub proxy_port: Option<u16>,
    /// The environment the command starts with, exactly.
    pub env: Vec<(String, String)>,
    /// The home directory the command sees (its toolchain directories are mounted read-only).
    pub home: PathBuf,
    /// Directories under `home` made visible read-only (toolchains).
    pub home_allow: Vec<PathBuf>,
    pub limits: Limits,
    /// Refuse to run where the kernel does not enforce Landlock.
    pub require_landlock: bool,
    /// The working directory inside, when it is not the workspace (a mount's target). With an
    /// empty `workspace`, nothing is bound at a host path of its own: only `mounts` are seen.
    pub cwd: Option<PathBuf>,
    /// Host directories covered, for the sandbox's life only, by a tmpfs of their own of that
    /// many MiB: scratch space whose size is a limit. The host never sees what is written there.
    pub sized: Vec<(PathBuf, u64)>,
    /// Files to copy out of a `sized` directory once the command has ended (nothing inside runs
    /// any more): source, under a sized directory, and destination on the host.
    pub collect: Vec<(PathBuf, PathBuf)>,
    /// Which files of the roots the command may not read (warden's secret list).
    #[serde(skip)]
    pub mask: crate::masking::MaskRule,
    /// Writable mounts (targets) whose writes Landlock refuses all the same: the doctor's way
    /// of trying Landlock alone.
    #[serde(default)]
    pub landlock_denied: Vec<PathBuf>,
    /// Who the command is on the host when warden runs as root.
    #[serde(default)]
    pub root_identity: RootIdentity,
    /// Targets of `mounts` that hold the user's own files handed to the command (a checkout and
    /// its git directory): shown as the command's own when warden runs as root, read-only ones
    /// too. Other read-only mounts are shown as they are, like `allow_read`.
    #[serde(default)]
    pub owned_mounts: Vec<PathBuf>,
    /// Writable mounts shown through an overlay, their source never written.
    #[serde(default)]
    pub overlays: Vec<Overlay>,
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// In order: parents before what is mounted inside them.
    pub mounts: Vec<Mount>,
    pub network: bool,
    /// The port of the proxy bridge inside the network namespace (see [`Request::proxy_port`]).
    #[serde(default)]
    pub proxy_port: Option<u16>,
    pub limits: Limits,
    /// Refuse to run where the kernel does not enforce Landlock.
    #[serde(default)]
    pub require_landlock: bool,
    /// Host directories made before the command runs, so that a denied path that does not exist
    /// has a mount point (and stays uncreatable); removed afterwards when no other sandbox uses
    /// them.
    #[serde(default)]
    pub placeholders: Vec<PathBuf>,
    /// See [`Request::sized`].
    #[serde(default)]
    pub sized: Vec<(PathBuf, u64)>,
    /// See [`Request::collect`].
    #[serde(default)]
    pub collect: Vec<(PathBuf, PathBuf)>,
    /// Secrets of the roots the user unmasked, readable to the command: recorded with it.
    #[serde(default)]
    pub unmasked: Vec<PathBuf>,
    /// The empty file of mode `000` mounted over what is masked (opening it fails).
    #[serde(default)]
    pub mask_source: PathBuf,
    /// See [`Request::landlock_denied`].
    #[serde(default)]
    pub landlock_denied: Vec<PathBuf>,
    /// The (device, inode) each masked file had when the plan was made, by mount target: the
    /// native backend masks a target only while it is still that file (a file swapped in the
    /// meantime stops the command).
    #[serde(default)]
    pub mask_ids: Vec<(PathBuf, (u64, u64))>,
    /// Warden runs as root and the command runs as this unprivileged host uid and gid instead,
    /// the writable binds shown to it through idmapped mounts (see [`RootIdentity`]).
    #[serde(default)]
    pub run_as: Option<u32>,
    /// Read-only binds (targets) shown through the idmapped mount as the writable ones are when
    /// warden runs as root: the workspace and [`Request::owned_mounts`], whose files the user
    /// handed to the command, so that tools that check who owns a repository (git) see the
    /// command.
    #[serde(default)]
    pub shown_as_owner: Vec<PathBuf>,
    /// The `.git` directories of writable roots (host path and target alike) shown through an
    /// overlay whose lower layer is never written: what the command changes there is brought
    /// back afterwards only as history may grow ([`crate::history`]).
    #[serde(default)]
    pub git_overlays: Vec<PathBuf>,
    /// The host `.git` each overlay shows, in the same order: where its history comes back.
    #[serde(default)]
    pub git_repositories: Vec<PathBuf>,
    /// Per overlay, made when the command starts: the upper and work directories of its layer.
    #[serde(default)]
    pub git_layers: Vec<(PathBuf, PathBuf)>,
    /// The helper starts the command in the cgroup whose directory is open at descriptor 6
    /// (set by the parent when it made one in the unified hierarchy).
    #[serde(default)]
    pub into_cgroup: bool,
    /// See [`Request::overlays`].
    #[serde(default)]
    pub overlays: Vec<Overlay>,
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
    ///
    /// Fails, and nothing may run, when a protected path cannot be kept as the request says.
    pub fn new(request: &Request) -> Result<Self, Refused> {
        Self::build(request).map_err(Refused)
    }

    // Long because the mounts are listed in the one order the helper makes them (a later
    // mount covers an earlier one); split, the order that keeps protections on top is hidden.
    #[allow(clippy::too_many_lines)]
    fn build(request: &Request) -> Result<Self, String> {
        let request = &with_protections(request);
        let overlays = overlay::checked(request)?;
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
                    source: real(dir),
                    target: dir.clone(),
                    writable: false,
                });
            }
        }
        for dir in request.allow_read.iter().filter(|p| existing(p)) {
            mounts.push(Mount::Bind {
                source: real(dir),
                target: dir.clone(),
                writable: false,
            });
        }
        let writable = request.profile != Profile::ReadOnly;
        let has_workspace = !request.workspace.as_os_str().is_empty();
        if has_workspace {
            mounts.push(Mount::Bind {
                source: real(&request.workspace),
                target: request.workspace.clone(),
                writable,
            });
        }
        for dir in request.allow_write.iter().filter(|p| existing(p)) {
            mounts.push(Mount::Bind {
                source: real(dir),
                target: dir.clone(),
                writable,
            });
        }
        for (source, target, rw) in &request.mounts {
            mounts.push(Mount::Bind {
                source: real(source),
                target: target.clone(),
                writable: *rw && writable,
            });
        }
        mounts.push(Mount::Tmpfs {
            target: PathBuf::from("/tmp"),
            writable: true,
            size_mb: disk,
        });
        // Each writable root's own `.git` directory: its history is kept by an overlay, and what
        // is inside needs no mount points of its own to stay where it is.
        let (git_overlays, git_repositories): (Vec<PathBuf>, Vec<PathBuf>) =
            writable_binds(&mounts)
                .filter(|(target, _)| !overlays.iter().any(|o| o.target == *target))
                .map(|(target, source)| (target.join(".git"), source.join(".git")))
                .filter(|(_, git)| fs::symlink_metadata(git).is_ok_and(|m| m.is_dir()))
                .unzip();
        let mut ancestors: Vec<(PathBuf, PathBuf)> = Vec::new();
        let mut placeholders = Vec::new();
        let denied = request.deny_write.iter().chain(&request.deny_read);
        for path in denied {
            let Some((root, source)) = writable_bind(path, &mounts) else {
                continue;
            };
            // The same place on the host, where the checks look and placeholders are made.
            let on_host = |p: &Path| source.join(p.strip_prefix(&root).unwrap_or(p));
            let inside = |h: &Path| root.join(h.strip_prefix(&source).unwrap_or(h));
            let host = on_host(path);
            // A link on the way from the root would lead the mounts (and the placeholders made
            // on the host) wherever it points.
            if let Some(link) = link_below(&source, &host) {
                return Err(format!(
                    "{} is protected but {} on the way to it is a symbolic link, which would \
                     take the protection elsewhere; replace it with what it points to, or remove \
                     it",
                    host.display(),
                    link.display()
                ));
            }
            // A placeholder of this process's is not there (see `placeholder::made_here`).
            let absent =
                |p: &Path| crate::placeholder::made_here(p) || fs::symlink_metadata(p).is_err();
            let present = if absent(&host) {
                Err(std::io::Error::from(std::io::ErrorKind::NotFound))
            } else {
                fs::symlink_metadata(&host)
            };
            if present.as_ref().is_ok_and(|m| m.file_type().is_symlink()) {
                // A mount would land on the link's target, and the link itself could be
                // replaced: there is no way to keep it as it is.
                return Err(format!(
                    "{} is protected but is a symbolic link, which the sandbox cannot keep \
                     read-only; replace it with what it points to, or remove it",
                    host.display()
                ));
            }
            let protect = if present.is_ok() {
                if !request.deny_write.contains(path) {
                    continue;
                }
                path.clone()
            } else {
                // Not there yet: it must stay uncreatable. Below the nearest existing ancestor
                // that is a directory, a placeholder directory becomes the mount point of an
                // empty read-only file system; an ancestor that is a file (a worktree's `.git`)
                // is itself kept read-only.
                let mut nearest = host.as_path();
                while absent(nearest) {
                    nearest = nearest.parent().unwrap_or(Path::new("/"));
                }
                if fs::metadata(nearest).is_ok_and(|m| m.is_dir()) {
                    // Through an overlay the mount point is made inside, in its upper layer.
                    if !overlays.iter().any(|o| path.starts_with(&o.target)) {
                        placeholders.push(host.clone());
                    }
                    mounts.push(Mount::Tmpfs {
                        target: path.clone(),
                        writable: false,
                        size_mb: 1,
                    });
                    path.clone()
                } else {
                    inside(nearest)
                }
            };
            // Each directory between the writable root and the protected path becomes a mount
            // point of its own, which cannot be renamed or removed (`mv .git x` fails).
            let mut dir = protect.parent();
            while let Some(d) = dir.filter(|d| d.starts_with(&root) && *d != root) {
                let kept = git_overlays.iter().any(|git| d.starts_with(git));
                if !kept && !ancestors.iter().any(|(a, _)| a == d) {
                    ancestors.push((d.to_path_buf(), on_host(d)));
                }
                dir = d.parent();
            }
            if present.is_ok() || protect != *path {
                mounts.push(Mount::Bind {
                    source: on_host(&protect),
                    target: protect,
                    writable: false,
                });
            }
        }
        for (dir, host) in ancestors {
            mounts.push(Mount::Bind {
                source: host,
                target: dir,
                writable,
            });
        }
        let secrets = SYSTEM_SECRETS.iter().map(PathBuf::from);
        for path in request.deny_read.iter().cloned().chain(secrets) {
            if !visible(&path, &mounts) {
                continue;
            }
            // What is there is looked at on the host, through the mount that shows it (a
            // mount's target is not where its source is).
            let host = on_host(&path, &mounts);
            if host.is_dir() {
                mounts.push(Mount::Tmpfs {
                    target: path,
                    writable: false,
                    size_mb: 1,
                });
            } else if host.exists() {
                mounts.push(Mount::MaskFile { target: path });
            }
        }
        let masked = masks::mask(request, &mut mounts, has_workspace, writable)?;
        // A `.git` that is itself a mount's target (hidden, say) is that mount, not an overlay,
        // and a mount point of its own all the same.
        let (git_overlays, git_repositories): (Vec<PathBuf>, Vec<PathBuf>) = git_overlays
            .into_iter()
            .zip(git_repositories)
            .filter(|(git, _)| !mounts.iter().any(|m| target(m) == git.as_path()))
            .unzip();
        mounts.sort_by_key(|m| depth(target(m)));
        let run_as = match request.root_identity {
            RootIdentity::Unprivileged(id) if crate::sys::effective_uid() == 0 => Some(id),
            RootIdentity::Unprivileged(_) | RootIdentity::Host => None,
        };
        if let Some((id, name)) = run_as.and_then(|id| named_id(id).map(|name| (id, name))) {
            return Err(format!(
                "[sandbox] unprivileged_id = {id} is {name} on this host: commands would act \
                 as it; choose an id no account or group has"
            ));
        }
        let mask_source = if mounts.iter().any(|m| matches!(m, Mount::MaskFile { .. })) {
            crate::masking::mask_source(request.mask.index().and_then(Path::parent))?
        } else {
            PathBuf::new()
        };
        Ok(Self {
            program: request.program.clone(),
            args: request.args.clone(),
            cwd: request
                .cwd
                .clone()
                .unwrap_or_else(|| request.workspace.clone()),
            env: request.env.clone(),
            mounts,
            network: request.network && request.profile != Profile::FullIsolated,
            proxy_port: request.proxy_port.filter(|_| !request.network),
            limits: request.limits.clone(),
            require_landlock: request.require_landlock,
            placeholders,
            sized: request.sized.clone(),
            collect: request.collect.clone(),
            unmasked: masked.unmasked,
            mask_source,
            landlock_denied: request.landlock_denied.clone(),
            mask_ids: masked.ids,
            git_overlays,
            git_repositories,
            git_layers: Vec::new(),
            into_cgroup: false,
            overlays,
            shown_as_owner: has_workspace
                .then(|| request.workspace.clone())
                .into_iter()
                .chain(request.owned_mounts.iter().cloned())
                .collect(),
            run_as,
        })
    }
}

impl Plan {
    /// The outermost writable bind whose target holds `path` below it (not `path` itself): its
    /// target and source. What is below it is the command's to change.
    pub(crate) fn writable_root_above(&self, path: &Path) -> Option<(&Path, &Path)> {
        writable_binds(&self.mounts)
            .filter(|(target, _)| path.starts_with(target) && path != *target)
            .min_by_key(|(target, _)| depth(target))
    }

    /// Where each of the plan's overlays goes among its mounts (made in depth order): before the
    /// mount of this index, the first one deeper than it (the number of mounts: after them all).
    pub(crate) fn overlay_positions(&self) -> Vec<usize> {
        self.git_overlays
            .iter()
            .map(|git| {
                let own = depth(git);
                self.mounts
                    .iter()
                    .position(|m| depth(target(m)) > own)
                    .unwrap_or(self.mounts.len())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;

//! What a sandboxed command may see and do, as concrete mounts and limits. The caller builds a
//! [`Request`] from its policy; [`Plan::new`] turns it into the mount plan every backend shares.

use std::fs;
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
}

/// System directories every command may read.
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Files under system directories that are never shown.
/// How many entries of each protected directory are looked at for files with other names.
const IDENTITY_LIMIT: usize = 4_096;

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
    #[allow(clippy::too_many_lines)]
    pub fn new(request: &Request) -> Result<Self, String> {
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
        let mut ancestors: Vec<PathBuf> = Vec::new();
        let mut placeholders = Vec::new();
        let denied = request.deny_write.iter().chain(&request.deny_read);
        for path in denied {
            let Some((root, source)) = writable_bind(path, &mounts) else {
                continue;
            };
            let present = fs::symlink_metadata(path);
            if present.as_ref().is_ok_and(|m| m.file_type().is_symlink()) {
                // A mount would land on the link's target, and the link itself could be
                // replaced: there is no way to keep it as it is.
                return Err(format!(
                    "{} is protected but is a symbolic link, which the sandbox cannot keep \
                     read-only; replace it with what it points to, or remove it",
                    path.display()
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
                let mut nearest = path.as_path();
                while fs::symlink_metadata(nearest).is_err() {
                    nearest = nearest.parent().unwrap_or(Path::new("/"));
                }
                if fs::metadata(nearest).is_ok_and(|m| m.is_dir()) {
                    placeholders.push(source.join(path.strip_prefix(&root).unwrap_or(path)));
                    mounts.push(Mount::Tmpfs {
                        target: path.clone(),
                        writable: false,
                        size_mb: 1,
                    });
                    path.clone()
                } else {
                    nearest.to_path_buf()
                }
            };
            // Each directory between the writable root and the protected path becomes a mount
            // point of its own, which cannot be renamed or removed (`mv .git x` fails).
            let mut dir = protect.parent();
            while let Some(d) = dir.filter(|d| d.starts_with(&root) && *d != root) {
                if !ancestors.iter().any(|a| a == d) {
                    ancestors.push(d.to_path_buf());
                }
                dir = d.parent();
            }
            if present.is_ok() || protect != *path {
                mounts.push(Mount::Bind {
                    source: protect.clone(),
                    target: protect,
                    writable: false,
                });
            }
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
        // Files in the workspace and the writable roots with links elsewhere: reading or
        // writing them would reach a file outside.
        let workspace = real(&request.workspace);
        let home_allow: Vec<PathBuf> = request.home_allow.iter().map(|p| real(p)).collect();
        let roots: Vec<(PathBuf, PathBuf)> = mounts
            .iter()
            .filter_map(|m| match m {
                Mount::Bind {
                    source,
                    target,
                    writable,
                } if *writable || (has_workspace && source.starts_with(&workspace)) => {
                    Some((source.clone(), target.clone()))
                }
                _ => None,
            })
            .collect();
        let sources: Vec<PathBuf> = roots.iter().map(|(s, _)| s.clone()).collect();
        // Other names of protected files: a hard link in the workspace to a hidden file (warden's
        // trust records, a key) is hidden too, and one to a read-only file (the user's settings)
        // stays read-only.
        let hidden = crate::links::identities(&request.deny_read, IDENTITY_LIMIT);
        let read_only = crate::links::identities(&request.deny_write, IDENTITY_LIMIT);
        let readable: Vec<PathBuf> = mounts
            .iter()
            .filter_map(|m| match m {
                Mount::Bind { source, .. }
                    if !sources.contains(source) && !home_allow.contains(source) =>
                {
                    Some(source.clone())
                }
                _ => None,
            })
            .filter(|s| !SYSTEM.iter().any(|d| s == Path::new(d)))
            .collect();
        let kept: Vec<PathBuf> = if request.profile == Profile::FullIsolated {
            Vec::new()
        } else {
            home_allow.iter().filter(|p| p.is_dir()).cloned().collect()
        };
        let linked = crate::links::linked(
            &crate::links::Roots {
                writable: &sources,
                readable: &readable,
                kept: &kept,
            },
            &hidden,
            &read_only,
            &request.mask,
        );
        if linked.changed {
            return Err(
                "the files of the workspace kept moving while the sandbox looked for secrets \
                 (another command renaming directories?); nothing ran"
                    .to_owned(),
            );
        }
        let binds: Vec<(PathBuf, PathBuf)> = mounts
            .iter()
            .filter_map(|m| match m {
                Mount::Bind { source, target, .. } => Some((source.clone(), target.clone())),
                _ => None,
            })
            .collect();
        let mut unmasked = linked.unmasked;
        // Directories hidden whole so far (denied ones), and those to hide now: what cannot be
        // looked into (its secrets would be unknown) and the credential directories.
        let mut hidden_dirs: Vec<PathBuf> = mounts
            .iter()
            .filter_map(|m| match m {
                Mount::Tmpfs {
                    target,
                    writable: false,
                    ..
                } if *target != request.home => Some(target.clone()),
                _ => None,
            })
            .collect();
        let mut hide: Vec<PathBuf> = Vec::new();
        for dir in &linked.unreadable {
            let targets = seen_at(dir, &binds);
            if let Some(long) = targets.iter().find(|t| too_long(t)) {
                return Err(too_deep(long, "cannot be looked into for secrets"));
            }
            hide.extend(targets);
        }
        let mut masks: Vec<PathBuf> = Vec::new();
        // What is masked by its place, where directories above it must stay put.
        let mut placed: Vec<PathBuf> = Vec::new();
        if let Some(rule) = request.mask.rule() {
            let mut found = Credentials {
                hide: &mut hide,
                masks: &mut masks,
                unmasked: &mut unmasked,
                placed: &mut placed,
            };
            credentials(&**rule, &binds, &mut found);
        }
        let mut mask_ids: Vec<(PathBuf, (u64, u64))> = Vec::new();
        for file in linked
            .outside
            .iter()
            .chain(&linked.hidden)
            .chain(&linked.masked)
        {
            let targets = seen_at(file, &binds);
            if request.mask.rule().is_some_and(|r| r.by_place(file)) {
                placed.extend(targets.iter().cloned());
            }
            if let Ok(meta) = fs::symlink_metadata(file) {
                use std::os::unix::fs::MetadataExt as _;
                let id = (meta.dev(), meta.ino());
                mask_ids.extend(targets.iter().map(|t| (t.clone(), id)));
            }
            masks.extend(targets);
        }
        hide.sort();
        hide.dedup();
        hide.retain(|h| !hidden_dirs.contains(h));
        hidden_dirs.extend(hide.iter().cloned());
        let under_hidden =
            |path: &Path| hidden_dirs.iter().any(|d| path.starts_with(d) && path != d);
        for target in hide.into_iter().filter(|t| !under_hidden(t)) {
            mounts.push(Mount::Tmpfs {
                target,
                writable: false,
                size_mb: 1,
            });
        }
        masks.sort();
        masks.dedup();
        // What a hidden directory holds needs no mask of its own (and has no file to mask).
        mounts.retain(|m| !matches!(m, Mount::MaskFile { target } if under_hidden(target)));
        // One mask per place: a second would land on the first (and fail its identity check).
        let masked_already: Vec<PathBuf> = mounts
            .iter()
            .filter_map(|m| match m {
                Mount::MaskFile { target } => Some(target.clone()),
                _ => None,
            })
            .collect();
        for target in masks
            .into_iter()
            .filter(|t| !under_hidden(t) && !masked_already.contains(t))
        {
            if too_long(&target) {
                return Err(too_deep(&target, "is a secret that cannot be masked"));
            }
            mounts.push(Mount::MaskFile { target });
        }
        for file in &linked.read_only {
            for target in seen_at(file, &binds) {
                if !under_hidden(&target) {
                    mounts.push(Mount::Bind {
                        source: file.clone(),
                        target,
                        writable: false,
                    });
                }
            }
        }
        // Never inside a hidden directory: a bind there would show what it hides.
        placed.retain(|t| !hidden_dirs.iter().any(|d| t.starts_with(d) && t != d));
        pin_ancestors(&placed, &mut mounts, writable);
        mounts.sort_by_key(|m| depth(target(m)));
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
            unmasked,
            mask_source,
            landlock_denied: request.landlock_denied.clone(),
            mask_ids,
        })
    }
}

/// The deepest writable bind that holds `path`, if one does: its target and its source.
fn writable_bind(path: &Path, mounts: &[Mount]) -> Option<(PathBuf, PathBuf)> {
    mounts
        .iter()
        .filter_map(|m| match m {
            Mount::Bind {
                source,
                target,
                writable: true,
            } if path.starts_with(target) => Some((target.clone(), source.clone())),
            _ => None,
        })
        .max_by_key(|(target, _)| depth(target))
}

/// The longest path the kernel takes.
const PATH_MAX: usize = 4096;

/// Whether nothing can be mounted at `path`: its name is longer than the kernel takes.
fn too_long(path: &Path) -> bool {
    path.as_os_str().len() >= PATH_MAX
}

/// Why nothing runs: `path`, too long to mount anything over, `is` what it is.
fn too_deep(path: &Path, is: &str) -> String {
    let shown: String = path.display().to_string().chars().take(120).collect();
    format!(
        "{shown}… {is}: its name is longer than the system allows ({} bytes); move it higher \
         up, and nothing runs until then",
        path.as_os_str().len()
    )
}

/// `path` with every link on the way resolved: the sandbox reaches a bind's source through the
/// host's root, where a link to an absolute path would lead elsewhere.
fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Where the host's `path` shows inside: through every bind that holds it and is not itself
/// covered there by another bind.
fn seen_at(path: &Path, binds: &[(PathBuf, PathBuf)]) -> Vec<PathBuf> {
    let mut targets = Vec::new();
    for (source, target) in binds {
        let Ok(rest) = path.strip_prefix(source) else {
            continue;
        };
        // (`join` of nothing would add a slash: a bind of the file itself.)
        let at = if rest.as_os_str().is_empty() {
            target.clone()
        } else {
            target.join(rest)
        };
        // The bind that wins at `at` is the deepest whose target holds it.
        let winner = binds
            .iter()
            .filter(|(_, t)| at.starts_with(t))
            .max_by_key(|(_, t)| depth(t));
        if winner.is_some_and(|(s, t)| s == source && t == target) && !targets.contains(&at) {
            targets.push(at);
        }
    }
    targets
}

/// The credential files and directories of `rule` that the command could see: a directory
/// hidden whole (an empty read-only file system over it), a file masked, one the user unmasked
/// recorded. A link is left alone: where it leads is on the list too.
fn credentials(
    rule: &dyn crate::masking::Masking,
    binds: &[(PathBuf, PathBuf)],
    found: &mut Credentials<'_>,
) {
    use crate::masking::MaskDecision;
    for (path, decision) in rule.credential_paths() {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        let targets = seen_at(&path, binds);
        if targets.is_empty() {
            continue;
        }
        match decision {
            MaskDecision::Masked if meta.is_dir() => {
                found.placed.extend(targets.iter().cloned());
                found.hide.extend(targets);
            }
            MaskDecision::Masked if meta.is_file() => {
                found.placed.extend(targets.iter().cloned());
                found.masks.extend(targets);
            }
            MaskDecision::Unmasked => found.unmasked.push(path),
            _ => {}
        }
    }
}

/// What [`credentials`] finds: directories to hide, files to mask, what the user unmasked,
/// and the places of all of them.
struct Credentials<'a> {
    hide: &'a mut Vec<PathBuf>,
    masks: &'a mut Vec<PathBuf>,
    unmasked: &'a mut Vec<PathBuf>,
    placed: &'a mut Vec<PathBuf>,
}

/// Each directory between a writable root and what is masked by its place becomes a mount
/// point of its own, which cannot be renamed or removed (`mv config elsewhere` fails): the
/// secret stays where its place says it is.
fn pin_ancestors(placed: &[PathBuf], mounts: &mut Vec<Mount>, writable: bool) {
    let mut pinned: Vec<Mount> = Vec::new();
    for target in placed {
        let Some((root, source)) = writable_bind(target, mounts) else {
            continue;
        };
        let mut dir = target.parent();
        while let Some(d) = dir.filter(|d| d.starts_with(&root) && *d != root) {
            let bind = Mount::Bind {
                source: source.join(d.strip_prefix(&root).unwrap_or(d)),
                target: d.to_path_buf(),
                writable,
            };
            if !pinned.contains(&bind) && !mounts.contains(&bind) {
                pinned.push(bind);
            }
            dir = d.parent();
        }
    }
    mounts.extend(pinned);
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
        let plan = Plan::new(&request(ws.path())).unwrap();
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
        let plan = Plan::new(&req).unwrap();
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

    /// Masks `.env` by name; its credential paths are given.
    #[derive(Debug)]
    struct Fake(Vec<(PathBuf, crate::masking::MaskDecision)>);

    impl crate::masking::Masking for Fake {
        fn decide(
            &self,
            path: &Path,
            _: bool,
            _: &mut dyn FnMut() -> Option<Vec<u8>>,
        ) -> crate::masking::MaskDecision {
            if path.file_name().is_some_and(|n| n == ".env") {
                crate::masking::MaskDecision::Masked
            } else {
                crate::masking::MaskDecision::Readable
            }
        }

        fn credential_paths(&self) -> Vec<(PathBuf, crate::masking::MaskDecision)> {
            self.0.clone()
        }
    }

    #[test]
    fn a_secret_is_masked_wherever_a_bind_shows_it_and_credential_directories_hide_whole() {
        use crate::masking::MaskDecision::{Masked, Unmasked};
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path();
        let away = tempfile::tempdir().unwrap();
        std::fs::write(ws.join(".env"), "s").unwrap();
        std::fs::create_dir(ws.join("creds")).unwrap();
        std::fs::write(ws.join("creds/.env"), "s").unwrap();
        std::fs::write(ws.join("token"), "t").unwrap();
        std::fs::write(away.path().join("token"), "t").unwrap();
        let mut req = request(ws);
        // The workspace shown a second time, elsewhere.
        req.mounts
            .push((ws.to_path_buf(), PathBuf::from("/mnt/ws"), false));
        req.mask = crate::masking::MaskRule::new(std::sync::Arc::new(Fake(vec![
            (ws.join("creds"), Masked),
            (ws.join("token"), Unmasked),
            // Not visible: nothing to do.
            (away.path().join("token"), Masked),
        ])));
        let plan = Plan::new(&req).unwrap();
        for at in [ws.to_path_buf(), PathBuf::from("/mnt/ws")] {
            assert!(
                plan.mounts.contains(&Mount::MaskFile {
                    target: at.join(".env")
                }),
                "{at:?}: {:#?}",
                plan.mounts
            );
            assert!(plan.mounts.contains(&Mount::Tmpfs {
                target: at.join("creds"),
                writable: false,
                size_mb: 1
            }));
            // What the hidden directory holds needs no mask of its own.
            assert!(!plan.mounts.contains(&Mount::MaskFile {
                target: at.join("creds/.env")
            }));
        }
        assert!(
            !plan
                .mounts
                .iter()
                .any(|m| target(m).starts_with(away.path()))
        );
        assert_eq!(plan.unmasked, vec![ws.join("token")]);
    }

    /// Masks `.env`; deciding `trigger` moves `from` to `to` and back, `moves` times at most.
    #[derive(Debug)]
    struct Mover {
        from: PathBuf,
        to: PathBuf,
        moves: std::sync::atomic::AtomicUsize,
    }

    impl crate::masking::Masking for Mover {
        fn decide(
            &self,
            path: &Path,
            _: bool,
            _: &mut dyn FnMut() -> Option<Vec<u8>>,
        ) -> crate::masking::MaskDecision {
            use std::sync::atomic::Ordering;
            let name = path.file_name().unwrap_or_default();
            if name == "trigger" && self.moves.load(Ordering::SeqCst) > 0 {
                self.moves.fetch_sub(1, Ordering::SeqCst);
                // Another command's `mv`, while the walk goes on.
                if self.from.exists() {
                    std::fs::rename(&self.from, &self.to).unwrap();
                } else {
                    std::fs::rename(&self.to, &self.from).unwrap();
                }
            }
            if name == ".env" {
                crate::masking::MaskDecision::Masked
            } else {
                crate::masking::MaskDecision::Readable
            }
        }

        fn credential_paths(&self) -> Vec<(PathBuf, crate::masking::MaskDecision)> {
            Vec::new()
        }
    }

    #[test]
    fn a_directory_moved_during_the_walk_is_walked_again_where_it_went() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path();
        std::fs::write(ws.join("trigger"), "").unwrap();
        std::fs::create_dir(ws.join("a")).unwrap();
        std::fs::write(ws.join("a/.env"), "s").unwrap();
        let plan_with = |moves: usize| {
            let mut req = request(ws);
            req.mask = crate::masking::MaskRule::new(std::sync::Arc::new(Mover {
                from: ws.join("a"),
                to: ws.join("z"),
                moves: std::sync::atomic::AtomicUsize::new(moves),
            }));
            Plan::new(&req)
        };
        // Moved once, after the walk listed it and before it looked inside: the walk starts
        // over and finds the secret where it went.
        let plan = plan_with(1).unwrap();
        assert!(ws.join("z/.env").exists());
        assert!(plan.mounts.contains(&Mount::MaskFile {
            target: ws.join("z/.env")
        }));
        // Moving on every walk: nothing runs.
        let err = plan_with(usize::MAX).unwrap_err();
        assert!(err.contains("kept moving"), "{err}");
    }
}

//! The plan's masking pass: one walk of the roots a command can read (shared with the search
//! for hard links that lead out), then what it found made into mounts — each secret masked at
//! every place a bind shows it, credential and unreadable directories hidden whole, and the
//! directories above what is masked by its place kept where they are.

use std::fs;
use std::path::{Path, PathBuf};

use super::{Mount, Profile, Request, SYSTEM, depth, real, writable_bind};

/// How many entries of each protected directory are looked at for files with other names.
const IDENTITY_LIMIT: usize = 4_096;

/// What the pass gives the plan besides its mounts.
pub(super) struct Masked {
    /// Secrets the user unmasked, readable to the command.
    pub(super) unmasked: Vec<PathBuf>,
    /// The (device, inode) of each masked file, by mount target.
    pub(super) ids: Vec<(PathBuf, (u64, u64))>,
}

/// Adds to `mounts` what hides the secrets of the roots they show, and the other names of
/// protected files; `writable` is whether the profile lets the command write its roots.
pub(super) fn mask(
    request: &Request,
    mounts: &mut Vec<Mount>,
    has_workspace: bool,
    writable: bool,
) -> Result<Masked, String> {
    let linked = walk(request, mounts, has_workspace)?;
    let binds: Vec<(PathBuf, PathBuf)> = mounts
        .iter()
        .filter_map(|m| match m {
            Mount::Bind { source, target, .. } => Some((source.clone(), target.clone())),
            _ => None,
        })
        .collect();
    let mut found = Found::of(request, linked, &binds)?;
    // Directories hidden whole: the denied ones so far, and what is to hide now.
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
    found.hide.retain(|h| !hidden_dirs.contains(h));
    hidden_dirs.extend(found.hide.iter().cloned());
    let under_hidden = |path: &Path| {
        hidden_dirs
            .iter()
            .any(|d| warden_config::within(path, d) && path != d)
    };
    for target in found.hide.into_iter().filter(|t| !under_hidden(t)) {
        mounts.push(Mount::Tmpfs {
            target,
            writable: false,
            size_mb: 1,
        });
    }
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
    for target in found
        .masks
        .into_iter()
        .filter(|t| !under_hidden(t) && !masked_already.contains(t))
    {
        if too_long(&target) {
            return Err(too_deep(&target, "is a secret that cannot be masked"));
        }
        mounts.push(Mount::MaskFile { target });
    }
    for (source, target) in found.read_only {
        if !under_hidden(&target) {
            mounts.push(Mount::Bind {
                source,
                target,
                writable: false,
            });
        }
    }
    // Never inside a hidden directory: a bind there would show what it hides.
    found.placed.retain(|t| !under_hidden(t));
    pin_ancestors(&found.placed, mounts, writable);
    Ok(Masked {
        unmasked: found.unmasked,
        ids: found.ids,
    })
}

/// What the walk and the credential list found, at the places the command sees it.
#[derive(Default)]
struct Found {
    /// Directories to hide whole: unreadable ones, credential directories.
    hide: Vec<PathBuf>,
    /// Files to mask.
    masks: Vec<PathBuf>,
    /// What of those is masked by its place: the directories above it must stay put.
    placed: Vec<PathBuf>,
    /// Other names of read-only files: (host file, place) bound read-only.
    read_only: Vec<(PathBuf, PathBuf)>,
    unmasked: Vec<PathBuf>,
    ids: Vec<(PathBuf, (u64, u64))>,
}

impl Found {
    fn of(
        request: &Request,
        linked: crate::links::Linked,
        binds: &[(PathBuf, PathBuf)],
    ) -> Result<Self, String> {
        let mut found = Found {
            unmasked: linked.unmasked,
            ..Found::default()
        };
        for dir in &linked.unreadable {
            let targets = seen_at(dir, binds);
            if let Some(long) = targets.iter().find(|t| too_long(t)) {
                return Err(too_deep(long, "cannot be looked into for secrets"));
            }
            found.hide.extend(targets);
        }
        if let Some(rule) = request.mask.rule() {
            found.credentials(&**rule, binds);
        }
        for file in linked
            .outside
            .iter()
            .chain(&linked.hidden)
            .chain(&linked.masked)
        {
            let targets = seen_at(file, binds);
            if request.mask.rule().is_some_and(|r| r.by_place(file)) {
                found.placed.extend(targets.iter().cloned());
            }
            if let Ok(meta) = fs::symlink_metadata(file) {
                use std::os::unix::fs::MetadataExt as _;
                let id = (meta.dev(), meta.ino());
                found.ids.extend(targets.iter().map(|t| (t.clone(), id)));
            }
            found.masks.extend(targets);
        }
        for file in &linked.read_only {
            let targets = seen_at(file, binds);
            found
                .read_only
                .extend(targets.into_iter().map(|t| (file.clone(), t)));
        }
        for list in [&mut found.hide, &mut found.masks] {
            list.sort();
            list.dedup();
        }
        Ok(found)
    }

    /// The credential files and directories of `rule` that the command could see: a directory
    /// hidden whole (an empty read-only file system over it), a file masked, one the user
    /// unmasked recorded. A link is left alone: where it leads is on the list too.
    fn credentials(&mut self, rule: &dyn crate::masking::Masking, binds: &[(PathBuf, PathBuf)]) {
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
                    self.placed.extend(targets.iter().cloned());
                    self.hide.extend(targets);
                }
                MaskDecision::Masked if meta.is_file() => {
                    self.placed.extend(targets.iter().cloned());
                    self.masks.extend(targets);
                }
                MaskDecision::Unmasked => self.unmasked.push(path),
                _ => {}
            }
        }
    }
}

/// One walk of the roots `mounts` show: the workspace and writable ones whole, other readable
/// ones, and the toolchain directories (kept from an earlier walk).
fn walk(
    request: &Request,
    mounts: &[Mount],
    has_workspace: bool,
) -> Result<crate::links::Linked, String> {
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
    Ok(linked)
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

/// Where the host's `path` shows inside: through every bind that holds it and is not itself
/// covered there by another bind.
fn seen_at(path: &Path, binds: &[(PathBuf, PathBuf)]) -> Vec<PathBuf> {
    let mut targets = Vec::new();
    for (source, target) in binds {
        if !warden_config::within(path, source) {
            continue;
        }
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
            .filter(|(_, t)| warden_config::within(&at, t))
            .max_by_key(|(_, t)| depth(t));
        if winner.is_some_and(|(s, t)| s == source && t == target) && !targets.contains(&at) {
            targets.push(at);
        }
    }
    targets
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

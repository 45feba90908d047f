//! A workspace that is an overlay on the commit's shared checkout: where overlayfs can hold the
//! run's upper layer, what the command changed (the upper layer's names), and the patch, made by
//! git inside the run's own sandbox over what the overlay shows.

use std::path::{Path, PathBuf};

use warden_sandbox::{Output, Plan, Request, Sandbox};

/// Where git's directory of a shared checkout appears inside (the run's own, with its index).
pub(crate) const WORKTREE_INSIDE: &str = "/.warden/worktree";

/// More changed names than this, or one that is not UTF-8, and the patch looks at the whole
/// tree instead of at each name.
const MAX_NAMES: usize = 20_000;

/// Whether an overlay inside the sandbox can have its upper layer under `dir`.
pub(crate) fn supported(dir: &Path) -> bool {
    warden_sandbox::overlay_can_hold(dir)
}

/// The run's layer directory for an alias: `upper` (what the command wrote) and `work`
/// (overlayfs's own).
pub(crate) fn make_layer(path: &Path) -> Result<(), String> {
    for part in ["upper", "work"] {
        let dir = path.join(part);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    Ok(())
}

/// What a command changed, by the names in the upper layer, relative to the overlay's root:
/// each file, link and removed name, and each directory made anew (opaque); `None` when there
/// are too many, or a name is not UTF-8. The checkout's own `.git` file is left out.
pub(crate) fn changed(upper: &Path) -> Option<Vec<String>> {
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
            // something git does not keep (it says so).
            out.push(name.into_os_string().into_string().ok()?);
            if out.len() > MAX_NAMES {
                return None;
            }
        }
    }
    out.sort();
    Some(out)
}

/// The script git runs inside: the new files not ignored marked as to be added, then the diff
/// from the commit, both over the names given (every name when none is).
const SCRIPT: &str = r#"set -e
c=$1; shift
# git's directory is the run's, whatever the workspace's `.git` now says.
export GIT_DIR=/.warden/worktree GIT_WORK_TREE="$PWD"
# What git writes (the empty blob of a new file) goes to the sandbox's /tmp.
mkdir -p /tmp/warden-objects
export GIT_OBJECT_DIRECTORY=/tmp/warden-objects
export GIT_ALTERNATE_OBJECT_DIRECTORIES=/.warden/git/objects
g() { git --literal-pathspecs -c core.fsmonitor=false -c core.quotePath=false \
  -c advice.addEmptyPathspec=false "$@"; }
g ls-files -z --others --exclude-standard -- "$@" > /.warden/worktree/untracked
g add --intent-to-add --pathspec-from-file=/.warden/worktree/untracked --pathspec-file-nul
exec git --literal-pathspecs -c core.quotePath=false diff --binary --no-ext-diff \
  --no-textconv --no-color "$c" -- "$@"
"#;

/// The patch from `commit` of the workspace at `target`, whose upper layer is `upper`: made by
/// git in the run's sandbox (`base`, its git directory made writable for git's index, no
/// network), over what the overlay shows, with the run's git directory whatever the command
/// left in the workspace's `.git`. No change, no git: an empty patch.
pub(crate) fn patch(
    base: &Request,
    helper: &Path,
    target: &Path,
    upper: &Path,
    commit: &str,
) -> Result<Vec<u8>, String> {
    let names = changed(upper);
    if names.as_ref().is_some_and(Vec::is_empty) {
        return Ok(Vec::new());
    }
    let mut request = base.clone();
    "/bin/sh".clone_into(&mut request.program);
    request.args = ["-c", SCRIPT, "sh", commit]
        .into_iter()
        .map(str::to_owned)
        .chain(names.unwrap_or_else(|| vec![".".to_owned()]))
        .collect();
    request.cwd = Some(target.to_path_buf());
    request.env = [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", "/tmp"),
        ("LANG", "C.UTF-8"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_NO_REPLACE_OBJECTS", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    request.network = false;
    request.proxy_port = None;
    request.collect = Vec::new();
    request.limits.timeout_ms = Some(600_000);
    request.limits.output_bytes = Some(256 << 20);
    request.limits.memory_mb = None;
    request.limits.cpus = None;
    // What the command's network needed (the proxy's CA) is gone with the proxy.
    request.mounts.retain(|(source, _, _)| source.exists());
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
    Ok(outcome.stdout)
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

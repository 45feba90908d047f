//! What a command's layer brings back to its repository, once nothing of the command runs: its
//! objects ([`super::objects`]), refs and `HEAD` ([`super::refs`]), then here the index, git's
//! state of a merge, reflog lines and submodules' repositories.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::git::{HardenedGit, output};
use super::guard::{self, Guard, Protected};
use super::layer::{Kind, entries, is_hex_id, kind, read, with_input};
use super::objects::objects;
use super::refs::{head, is_ancestor, refs};

/// Files of git's state of a merge or pick in progress (ids and messages only, nothing git
/// runs), brought back as they are (a removed one removed). Not `ORIG_HEAD`, `FETCH_HEAD` or
/// `MERGE_AUTOSTASH`: commits the user resets to, merges or applies as their own, unchecked.
const STATE_FILES: &[&str] = &[
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "COMMIT_EDITMSG",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "SQUASH_MSG",
    "AUTO_MERGE",
];

/// How deep submodules' repositories (in `modules/`) are followed.
const MAX_DEPTH: usize = 8;

/// Brings back what the layer `upper` may add to the repository whose git directory is
/// `git_dir`; says what was kept or left out.
pub(crate) fn publish(upper: &Path, git_dir: &Path) -> Vec<String> {
    let mut notes = Vec::new();
    repository(upper, git_dir, 0, &mut notes);
    notes
}

fn repository(upper: &Path, git_dir: &Path, depth: usize, notes: &mut Vec<String>) {
    if std::fs::read_dir(upper).map_or(true, |mut d| d.next().is_none()) {
        return;
    }
    let git = HardenedGit::for_git_dir(git_dir);
    let guard = Guard {
        protected: Protected::of(git_dir),
        base: guard::base(&git, git_dir),
    };
    objects(&git, git_dir, &upper.join("objects"), notes);
    // The reflogs as they were, before the refs' updates below add lines of their own: the
    // command's lines take their place.
    let mut logs = Vec::new();
    reflogs(
        &upper.join("logs"),
        &git_dir.join("logs"),
        Path::new(""),
        &mut logs,
    );
    let moved = refs(&git, git_dir, upper, &guard, notes);
    // Never a rebase's or a sequence's state (`rebase-merge/`, `rebase-apply/`, `sequencer/`):
    // their to-do lists hold `exec` lines, which git would run on the host at `--continue`. Nor,
    // then, the detached `HEAD` and the index it left: the branch stays where it was.
    let unfinished: Vec<&str> = ["rebase-merge", "rebase-apply", "sequencer"]
        .into_iter()
        .filter(|name| kind(&upper.join(name)) == Kind::Dir)
        .collect();
    if unfinished.is_empty() {
        head(&git, git_dir, upper, &guard, notes);
        index(&git, git_dir, upper, &guard, notes);
        for name in STATE_FILES {
            apply(&upper.join(name), &git_dir.join(name), notes);
        }
    } else {
        notes.push(format!(
            "{}/ was not brought back, nor HEAD and the index: a rebase or a sequence of picks \
             does not outlive its command (its to-do list could run programs on the host)",
            unfinished.join("/, ")
        ));
    }
    // Reflog lines only of refs that came back, and only lines the ref's history holds: a line
    // is what `main@{1}` and `git checkout -` go to. Never `HEAD`'s reflog.
    let base = git_dir.join("logs");
    for (target, before, theirs) in logs {
        let name = target.strip_prefix(&base).ok().and_then(Path::to_str);
        let Some(value) = name.and_then(|n| moved.get(n)) else {
            continue;
        };
        let lines = reflog_lines(&git, git_dir, &before, &theirs, value);
        if !lines.is_empty() {
            extend_log(
                &target,
                &before,
                &[before.as_slice(), &lines].concat(),
                notes,
            );
        }
    }
    if depth < MAX_DEPTH {
        modules(
            &upper.join("modules"),
            &git_dir.join("modules"),
            depth,
            notes,
        );
    }
}

/// The layer's index, made anew from its entries alone (no flags that hide a change, no cached
/// trees that put another into the next commit), the repository's own skip-worktree and
/// assume-unchanged marks kept; only if every path is a plain one and its entries at protected
/// paths are the repository's.
fn index(git: &HardenedGit, git_dir: &Path, upper: &Path, guard: &Guard, notes: &mut Vec<String>) {
    let theirs = upper.join("index");
    if kind(&theirs) != Kind::File || read(&theirs) == read(&git_dir.join("index")) {
        return;
    }
    let made = index_paths_are_plain(git, git_dir, &theirs).and_then(|entries| {
        let ours = guard.protected.entries(git, git_dir, None)?;
        if guard.protected.entries(git, git_dir, Some(&theirs))? != ours {
            return Err("it stages a change to a file that runs code on the host".to_owned());
        }
        rebuild_index(git, git_dir, &entries)
    });
    if let Err(why) = made {
        notes.push(format!("the index was not brought back: {why}"));
    }
}

/// Makes the index from `entries` (`ls-files --stage -z`), then puts it in place.
fn rebuild_index(git: &HardenedGit, git_dir: &Path, entries: &str) -> Result<(), String> {
    let fresh = git_dir.join(format!("index.warden-{}", std::process::id()));
    let _ = std::fs::remove_file(&fresh);
    let work_tree = git_dir.parent().unwrap_or(git_dir);
    let with_fresh = |args: &[&str]| {
        let mut cmd = git.command(git_dir);
        cmd.env("GIT_INDEX_FILE", &fresh)
            .arg(format!("--work-tree={}", work_tree.display()))
            .args(args);
        cmd
    };
    let made = with_input(
        with_fresh(&["update-index", "-z", "--index-info"]),
        entries.as_bytes().to_vec(),
        "update-index",
    )
    .and_then(|_| {
        // The repository's own marks, where its index has them.
        let mut marks = git.command(git_dir);
        marks.args(["ls-files", "-v", "-z"]);
        let listed = output(marks, "ls-files")?;
        let (mut skip, mut assume) = (Vec::new(), Vec::new());
        for entry in listed.split('\0').filter(|e| e.len() > 2) {
            let (tag, path) = entry.split_at(2);
            match tag.chars().next() {
                Some('S') => skip.extend_from_slice(format!("{path}\0").as_bytes()),
                Some(c) if c.is_ascii_lowercase() => {
                    assume.extend_from_slice(format!("{path}\0").as_bytes());
                }
                _ => {}
            }
        }
        for (flag, paths) in [("--skip-worktree", skip), ("--assume-unchanged", assume)] {
            if !paths.is_empty() {
                let _ = with_input(
                    with_fresh(&["update-index", flag, "-z", "--stdin"]),
                    paths,
                    "update-index",
                );
            }
        }
        let mut refresh = with_fresh(&["update-index", "-q", "--refresh"]);
        refresh.stdout(Stdio::null()).stderr(Stdio::null());
        let _ = refresh.status();
        std::fs::rename(&fresh, git_dir.join("index")).map_err(|e| e.to_string())
    });
    if made.is_err() {
        let _ = std::fs::remove_file(&fresh);
    }
    made
}

/// Whether every path the index at `index` holds is a plain one of the working tree: no `..`,
/// no `.git` (in any case), nothing absolute — what a checkout on the host would write where
/// it names.
fn index_paths_are_plain(
    git: &HardenedGit,
    git_dir: &Path,
    index: &Path,
) -> Result<String, String> {
    let mut list = git.command(git_dir);
    list.env("GIT_INDEX_FILE", index)
        .args(["ls-files", "--stage", "-z"]);
    let listed = output(list, "ls-files")?;
    for entry in listed.split('\0').filter(|e| !e.is_empty()) {
        let path = entry.split_once('\t').map_or(entry, |(_, p)| p);
        let plain = !path.starts_with('/')
            && path
                .split('/')
                .all(|c| !c.is_empty() && c != "." && c != ".." && !c.eq_ignore_ascii_case(".git"));
        if !plain {
            return Err(format!("it names {path:?}"));
        }
    }
    Ok(listed)
}

/// Writes `from`'s bytes to `to` whole (a new file renamed over it).
fn copy_into(from: &Path, to: &Path, notes: &mut Vec<String>) {
    let Some(bytes) = read(from) else { return };
    let temporary = to.with_file_name(format!(
        ".{}.warden-{}",
        to.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    let written = std::fs::write(&temporary, bytes).and_then(|()| std::fs::rename(&temporary, to));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        notes.push(format!("{} was not brought back: {e}", to.display()));
    }
}

/// Applies the layer's `from` (a file, a removal, or a directory of them) to `to`.
fn apply(from: &Path, to: &Path, notes: &mut Vec<String>) {
    match kind(from) {
        Kind::File => copy_into(from, to, notes),
        Kind::Whiteout => match kind(to) {
            Kind::Dir => {
                let _ = std::fs::remove_dir_all(to);
            }
            Kind::Missing => {}
            _ => {
                let _ = std::fs::remove_file(to);
            }
        },
        Kind::Dir => {
            if crate::sys::overlay_opaque(from) {
                // Made anew in the layer: nothing of the old one shows through.
                let _ = std::fs::remove_dir_all(to);
            }
            if !matches!(kind(to), Kind::Dir) {
                let _ = std::fs::remove_file(to);
                if std::fs::create_dir_all(to).is_err() {
                    return;
                }
            }
            for name in entries(from) {
                apply(&from.join(&name), &to.join(&name), notes);
            }
        }
        Kind::Missing | Kind::Other => {}
    }
}

/// A reflog of the layer, where it goes, what it held before, and what the layer's holds.
type Log = (PathBuf, Vec<u8>, Vec<u8>);

/// Reflogs: the layer's ones that start with all the real one held (lines added) or that are
/// new, with the real one as it is now. None is ever shortened or removed.
fn reflogs(dir: &Path, to: &Path, rel: &Path, logs: &mut Vec<Log>) {
    if rel.components().count() > 32 {
        return;
    }
    for name in entries(dir) {
        let path = dir.join(&name);
        let rel = rel.join(&name);
        let first = rel.components().next().and_then(|c| c.as_os_str().to_str());
        if !matches!(first, Some("HEAD" | "refs")) {
            continue;
        }
        match kind(&path) {
            Kind::Dir => reflogs(&path, to, &rel, logs),
            Kind::File => {
                let Some(theirs) = read(&path) else { continue };
                let target = to.join(&rel);
                let before = read(&target).unwrap_or_default();
                if theirs.len() > before.len() && theirs.starts_with(&before) {
                    logs.push((target, before, theirs));
                }
            }
            _ => {}
        }
    }
}

/// The lines the layer's reflog (`theirs`) adds to the real one (`before`) that lead only where
/// the ref that came back (`value`) has been: each line's new value (what `main@{n}` goes to)
/// in its history.
fn reflog_lines(
    git: &HardenedGit,
    git_dir: &Path,
    before: &[u8],
    theirs: &[u8],
    value: &str,
) -> Vec<u8> {
    let field = |line: &str, n: usize| line.split(' ').nth(n).unwrap_or_default().to_owned();
    let start = before.len().min(theirs.len());
    let last = String::from_utf8_lossy(before)
        .lines()
        .last()
        .map(|l| field(l, 1))
        .unwrap_or_default();
    let held = |id: &str| id == value || is_ancestor(git, git_dir, id, value);
    let mut kept = Vec::new();
    for line in String::from_utf8_lossy(&theirs[start..]).lines() {
        let (old, new) = (field(line, 0), field(line, 1));
        let known = old == last || old.bytes().all(|b| b == b'0') || is_hex_id(&old);
        if is_hex_id(&new) && known && held(&new) {
            kept.extend_from_slice(line.as_bytes());
            kept.push(b'\n');
        }
    }
    kept
}

/// Makes the reflog at `target` the layer's (`theirs`), if it still starts with what it held
/// before (`before`) — lines git added since, for the refs brought back, are the command's own
/// again.
fn extend_log(target: &Path, before: &[u8], theirs: &[u8], notes: &mut Vec<String>) {
    let now = read(target).unwrap_or_default();
    if !now.starts_with(before) {
        return;
    }
    let written = target
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            let mut name = target.file_name().unwrap_or_default().to_os_string();
            name.push(".warden-log");
            let temporary = target.with_file_name(name);
            std::fs::write(&temporary, theirs).and_then(|()| std::fs::rename(&temporary, target))
        });
    if let Err(e) = written {
        notes.push(format!("{}: {e}", target.display()));
    }
}

/// Submodules' repositories under `modules/`, each brought back the same way.
fn modules(dir: &Path, to: &Path, depth: usize, notes: &mut Vec<String>) {
    let mut stack: Vec<PathBuf> = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        if rel.components().count() > 16 {
            continue;
        }
        for name in entries(&dir.join(&rel)) {
            let rel = rel.join(&name);
            if kind(&dir.join(&rel)) != Kind::Dir {
                continue;
            }
            if kind(&to.join(&rel).join("HEAD")) == Kind::File {
                repository(&dir.join(&rel), &to.join(&rel), depth + 1, notes);
            } else {
                stack.push(rel);
            }
        }
    }
}

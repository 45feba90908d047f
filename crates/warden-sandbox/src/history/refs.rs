//! A layer's refs and `HEAD`: new ones and forward moves made, other moves made with the old
//! value kept, what touches a protected file held, nothing removed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Stdio;

use super::git::{HardenedGit, output};
use super::guard::Guard;
use super::layer::{Kind, entries, is_hex_id, is_ref_name, kind, lines, read, with_input};

/// The refs the layer holds (its `packed-refs`, then its loose refs over them): new ones made,
/// forward moves made, other moves made with the old value kept under `refs/warden/kept/`.
/// Removed refs stay.
pub(super) fn refs(
    git: &HardenedGit,
    git_dir: &Path,
    upper: &Path,
    guard: &Guard,
    notes: &mut Vec<String>,
) -> BTreeMap<String, String> {
    let mut moved = BTreeMap::new();
    let mut wanted: BTreeMap<String, String> = BTreeMap::new();
    if let Some(bytes) = read(&upper.join("packed-refs")) {
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Some((id, name)) = line.split_once(' ')
                && !line.starts_with(['#', '^'])
            {
                wanted.insert(name.to_owned(), id.to_owned());
            }
        }
    }
    loose_refs(&upper.join("refs"), "refs", &mut wanted, 0);
    // Branches, tags, remote-tracking branches, notes and the stash: never a replace ref (which
    // would show an existing commit as another), nor one of warden's own.
    wanted.retain(|name, id| {
        is_ref_name(name)
            && (["refs/heads/", "refs/tags/", "refs/remotes/", "refs/notes/"]
                .iter()
                .any(|p| name.starts_with(p))
                || name == "refs/stash")
            && is_hex_id(id)
    });
    if wanted.is_empty() {
        return moved;
    }
    let mut list = git.command(git_dir);
    list.args(["for-each-ref", "--format=%(objectname) %(refname)"]);
    let current: BTreeMap<String, String> = output(list, "for-each-ref")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(id, name)| (name.to_owned(), id.to_owned()))
        .collect();
    let present = present(git, git_dir, wanted.values());
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // One transaction a ref, so that one git refuses (a branch at a blob) leaves the others.
    for (name, new) in &wanted {
        let old = current.get(name).map(String::as_str);
        if old == Some(new.as_str()) {
            continue;
        }
        if !present.contains(new) {
            notes.push(format!(
                "{name} was left as it was: {new} is not in the repository"
            ));
            continue;
        }
        let at = Ref { name, old, new };
        if let Some(why) = held(git, git_dir, guard, &at) {
            hold(git, git_dir, &at, &why, stamp, notes);
        } else if move_ref(git, git_dir, &at, stamp, notes) {
            moved.insert(name.clone(), new.clone());
        }
    }
    moved
}

/// A ref the layer moved: its name, the repository's value, the layer's.
struct Ref<'a> {
    name: &'a str,
    old: Option<&'a str>,
    new: &'a str,
}

/// Why `at` is held rather than moved, if it is: a stash (which the user pops as their own), or
/// a change to a file that runs code on the host, against the ref's old value or (a new ref)
/// where `HEAD` was.
fn held(git: &HardenedGit, git_dir: &Path, guard: &Guard, at: &Ref<'_>) -> Option<String> {
    if at.name == "refs/stash" {
        return Some("a stash the command made would be popped as yours".to_owned());
    }
    let from = at.old.unwrap_or(&guard.base);
    match guard.protected.changed(git, git_dir, from, at.new) {
        Ok(paths) if paths.is_empty() => None,
        Ok(paths) => Some(format!(
            "it changes {}, which run code on the host",
            paths.join(", ")
        )),
        Err(e) => Some(format!("what it changes could not be told ({e})")),
    }
}

/// Keeps the layer's value of `at` under `refs/warden/held/`, the ref itself left as it was.
fn hold(
    git: &HardenedGit,
    git_dir: &Path,
    at: &Ref<'_>,
    why: &str,
    stamp: u64,
    notes: &mut Vec<String>,
) {
    let kept = format!("refs/warden/held/{stamp}/{}", at.name);
    let mut update = git.command(git_dir);
    update.args(["update-ref", &kept, at.new]);
    match output(update, "update-ref") {
        Ok(_) => notes.push(format!(
            "{} was left as it was: {why}; the command's value is held as {kept}, to look at \
             before you use it",
            at.name
        )),
        Err(e) => notes.push(format!("{} was left as it was: {why} ({e})", at.name)),
    }
}

/// Moves `at`: made when new, moved when forward, and otherwise moved with its old value kept
/// under `refs/warden/kept/`.
fn move_ref(
    git: &HardenedGit,
    git_dir: &Path,
    at: &Ref<'_>,
    stamp: u64,
    notes: &mut Vec<String>,
) -> bool {
    let (name, new) = (at.name, at.new);
    let mut transaction: Vec<String> = Vec::new();
    let mut kept = None;
    match at.old {
        None => transaction.push(format!("create {name} {new}")),
        Some(old) => {
            if !is_ancestor(git, git_dir, old, new) {
                let keep = format!("refs/warden/kept/{stamp}/{name}");
                transaction.push(format!("create {keep} {old}"));
                kept = Some((old, keep));
            }
            transaction.push(format!("update {name} {new} {old}"));
        }
    }
    let mut update = git.command(git_dir);
    update.args(["update-ref", "--stdin"]);
    if let Err(e) = with_input(update, lines(&transaction), "update-ref") {
        notes.push(format!("{name} was left as it was: {e}"));
        return false;
    }
    if let Some((old, keep)) = kept {
        notes.push(format!(
            "{name} moved from {old} to {new}, not forward: its old value is kept as {keep}"
        ));
    }
    true
}

fn loose_refs(dir: &Path, prefix: &str, wanted: &mut BTreeMap<String, String>, depth: usize) {
    if depth > 32 {
        return;
    }
    for name in entries(dir) {
        let path = dir.join(&name);
        let full = format!("{prefix}/{name}");
        match kind(&path) {
            Kind::Dir => loose_refs(&path, &full, wanted, depth + 1),
            Kind::File => {
                if let Some(bytes) = read(&path) {
                    let text = String::from_utf8_lossy(&bytes).trim().to_owned();
                    wanted.insert(full, text);
                }
            }
            _ => {}
        }
    }
}

/// Which of `ids` the repository has.
pub(super) fn present<'a>(
    git: &HardenedGit,
    git_dir: &Path,
    ids: impl Iterator<Item = &'a String>,
) -> BTreeSet<String> {
    let ids: Vec<&String> = ids.collect();
    let mut input = String::new();
    for id in &ids {
        input.push_str(id);
        input.push('\n');
    }
    let mut check = git.command(git_dir);
    check.args(["cat-file", "--batch-check=%(objectname)"]);
    with_input(check, input.into_bytes(), "cat-file")
        .unwrap_or_default()
        .lines()
        .filter(|l| is_hex_id(l))
        .map(str::to_owned)
        .collect()
}

pub(super) fn is_ancestor(git: &HardenedGit, git_dir: &Path, old: &str, new: &str) -> bool {
    let mut cmd = git.command(git_dir);
    cmd.args(["merge-base", "--is-ancestor", old, new])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.status().is_ok_and(|s| s.success())
}

/// `HEAD`: to a branch, or detached at an object the repository has (a detached value left
/// behind, unless the new one is ahead of it, kept as the refs are).
pub(super) fn head(
    git: &HardenedGit,
    git_dir: &Path,
    upper: &Path,
    guard: &Guard,
    notes: &mut Vec<String>,
) {
    let Some(bytes) = read(&upper.join("HEAD")) else {
        return;
    };
    let text = String::from_utf8_lossy(&bytes).trim().to_owned();
    let mut symbolic = git.command(git_dir);
    symbolic.args(["symbolic-ref", "-q", "HEAD"]);
    let branch = output(symbolic, "symbolic-ref")
        .ok()
        .map(|b| b.trim().to_owned());
    if let Some(target) = text.strip_prefix("ref: ") {
        if !is_ref_name(target) || !target.starts_with("refs/heads/") {
            notes.push(format!(
                "HEAD was left as it was: {target:?} is not a branch"
            ));
            return;
        }
        let mut exists = git.command(git_dir);
        exists.args(["rev-parse", "-q", "--verify", target]);
        if branch.as_deref() != Some(target) && output(exists, "rev-parse").is_err() {
            notes.push(format!(
                "HEAD was left as it was: the branch {target} is not in the repository"
            ));
        } else if branch.as_deref() != Some(target) {
            let mut cmd = git.command(git_dir);
            cmd.args(["symbolic-ref", "HEAD", target]);
            if let Err(e) = output(cmd, "symbolic-ref") {
                notes.push(format!("HEAD was left as it was: {e}"));
            }
        }
        return;
    }
    if !is_hex_id(&text) {
        return;
    }
    let mut current = git.command(git_dir);
    current.args(["rev-parse", "-q", "--verify", "HEAD"]);
    let old = output(current, "rev-parse")
        .ok()
        .map(|o| o.trim().to_owned());
    if branch.is_none() && old.as_deref() == Some(text.as_str()) {
        return;
    }
    if !present(git, git_dir, std::iter::once(&text)).contains(&text) {
        notes.push(format!(
            "HEAD was left as it was: {text} is not in the repository"
        ));
        return;
    }
    let at = Ref {
        name: "HEAD",
        old: old.as_deref(),
        new: &text,
    };
    if let Some(why) = held(git, git_dir, guard, &at) {
        notes.push(format!("HEAD was left as it was: {why}"));
        return;
    }
    let mut transaction: Vec<String> = Vec::new();
    if branch.is_none()
        && let Some(old) = old.filter(|old| !is_ancestor(git, git_dir, old, &text))
    {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let kept = format!("refs/warden/kept/{stamp}/HEAD");
        transaction.push(format!("create {kept} {old}"));
        notes.push(format!(
            "the detached HEAD left {old}: it is kept as {kept}"
        ));
    }
    transaction.push("option no-deref".to_owned());
    transaction.push(format!("update HEAD {text}"));
    let mut update = git.command(git_dir);
    update.args(["update-ref", "--stdin"]);
    if let Err(e) = with_input(update, lines(&transaction), "update-ref") {
        notes.push(format!("HEAD was left as it was: {e}"));
    }
}

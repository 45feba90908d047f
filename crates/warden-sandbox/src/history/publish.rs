//! What a command's layer brings back to its repository, once nothing of the command runs.
//! The layer is the command's work and read as such: links are never followed, a file past
//! [`MAX_FILE`] is left out, a name that is not what git itself would write is left out, and
//! every object is hashed again by git before the repository has it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::git::{HardenedGit, answer, output};
use super::guard::{self, Protected};

/// What every ref, `HEAD` and the index are measured against.
struct Guard {
    protected: Protected,
    /// The commit `HEAD` was at when the command started (or the empty tree).
    base: String,
}

/// The largest loose object, index or state file brought back.
const MAX_FILE: u64 = 1 << 30;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Missing,
    File,
    Dir,
    /// The overlay's mark of a removed name.
    Whiteout,
    Other,
}

fn kind(path: &Path) -> Kind {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    match std::fs::symlink_metadata(path) {
        Err(_) => Kind::Missing,
        Ok(m) if m.is_dir() => Kind::Dir,
        Ok(m) if m.is_file() && m.len() <= MAX_FILE => Kind::File,
        Ok(m) if m.file_type().is_char_device() && m.rdev() == 0 => Kind::Whiteout,
        Ok(_) => Kind::Other,
    }
}

/// The entries of `dir` (names that are UTF-8 only), sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Reads a regular file, never through a link.
fn read(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    if kind(path) != Kind::File {
        return None;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

fn is_hex_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64)
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// A ref name as git writes them, conservatively: under `refs/`, plain components.
fn is_ref_name(name: &str) -> bool {
    name.len() <= 1024
        && name.starts_with("refs/")
        && !name.contains("@{")
        && name.split('/').all(|c| {
            !c.is_empty()
                && !c.starts_with('.')
                && !c.ends_with('.')
                && !std::path::Path::new(c)
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("lock"))
                && !c.contains("..")
                && c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.+@".contains(&b))
        })
}

/// `lines` as `git update-ref --stdin` reads them.
fn lines(lines: &[String]) -> Vec<u8> {
    let mut text = lines.join("\n");
    text.push('\n');
    text.into_bytes()
}

/// Runs `cmd` with `input` on its standard input (written by a thread of its own, so that a
/// long answer cannot block a long question).
pub(super) fn with_input(cmd: Command, input: Vec<u8>, what: &str) -> Result<String, String> {
    with_input_to(cmd, input, what, Stdio::piped())
}

/// As [`with_input`], its standard output going to `stdout`.
fn with_input_to(
    mut cmd: Command,
    input: Vec<u8>,
    what: &str,
    stdout: Stdio,
) -> Result<String, String> {
    cmd.stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("git {what}: cannot run git: {e}"))?;
    let stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&input);
        }
    });
    let out = child
        .wait_with_output()
        .map_err(|e| format!("git {what}: {e}"))?;
    let _ = writer.join();
    answer(&out, what)
}

/// New packs and loose objects, through a directory of warden's in the repository's `objects`
/// (git looks only at its own names there), removed afterwards whatever happened. A pack is
/// indexed by git anew, which hashes every object in it as if it came from elsewhere; loose
/// objects are copied there and packed by git, which packs what a file holds whatever its name
/// claims, then indexed the same way. Only a pack git indexed goes in, under the name git gave.
fn objects(git: &HardenedGit, git_dir: &Path, dir: &Path, notes: &mut Vec<String>) {
    if kind(dir) != Kind::Dir {
        return;
    }
    let incoming = git_dir.join("objects").join(format!(
        "incoming-warden-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    if let Err(e) = std::fs::create_dir(&incoming) {
        notes.push(format!(
            "the command's objects were not taken: {}: {e}",
            incoming.display()
        ));
        return;
    }
    let packs = dir.join("pack");
    // A pack's name is its checksum: one the repository holds by that name is its own (the
    // layer's is a copy of it, changed or not).
    let own = git_dir.join("objects/pack");
    for (n, name) in entries(&packs)
        .iter()
        .filter(|n| {
            Path::new(n).extension().is_some_and(|e| e == "pack")
                && kind(&own.join(n)) == Kind::Missing
        })
        .enumerate()
    {
        let copy = incoming.join(format!("in-{n}.pack"));
        let taken = read(&packs.join(name))
            .ok_or_else(|| "unreadable".to_owned())
            .and_then(|bytes| std::fs::write(&copy, bytes).map_err(|e| e.to_string()))
            .and_then(|()| take_pack(git, git_dir, &copy));
        if let Err(e) = taken {
            notes.push(format!("a pack the command wrote was not taken: {e}"));
        }
    }
    let loose = incoming.join("loose");
    let mut ids = String::new();
    // What all loose objects may take on disk, copied; past it, the rest are left out.
    let mut budget: u64 = 2 << 30;
    'fans: for fan in entries(dir) {
        if fan.len() != 2
            || !fan
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        {
            continue;
        }
        for rest in entries(&dir.join(&fan)) {
            let id = format!("{fan}{rest}");
            let Some(bytes) = is_hex_id(&id)
                .then(|| read(&dir.join(&fan).join(&rest)))
                .flatten()
            else {
                continue;
            };
            let Some(left) = budget.checked_sub(bytes.len() as u64) else {
                notes.push("loose objects past 2 GiB the command wrote were not taken".to_owned());
                break 'fans;
            };
            budget = left;
            let into = loose.join(&fan);
            if std::fs::create_dir_all(&into)
                .and_then(|()| std::fs::write(into.join(&rest), bytes))
                .is_ok()
            {
                ids.push_str(&id);
                ids.push('\n');
            }
        }
    }
    let ids = within_budget(git, git_dir, &loose, &ids, notes);
    if !ids.is_empty() {
        let packed = incoming.join("loose.pack");
        let taken = pack_loose(git, git_dir, &loose, ids, &packed)
            .and_then(|()| take_pack(git, git_dir, &packed));
        if let Err(e) = taken {
            notes.push(format!("objects the command wrote were not taken: {e}"));
        }
    }
    let _ = std::fs::remove_dir_all(&incoming);
}

/// The largest object (its size unpacked) a command's loose objects bring back.
const MAX_OBJECT: u64 = 256 << 20;

/// Of the loose objects `ids` in `loose`, those whose size unpacked, as each one's header says
/// (read without unpacking the rest), is at most [`MAX_OBJECT`]: a small file that unpacks to
/// gigabytes is left out before git spends the time.
fn within_budget(
    git: &HardenedGit,
    git_dir: &Path,
    loose: &Path,
    ids: &str,
    notes: &mut Vec<String>,
) -> String {
    if ids.is_empty() {
        return String::new();
    }
    let mut sizes = git.command(git_dir);
    sizes
        .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", loose)
        .args(["cat-file", "--batch-check=%(objectname) %(objectsize)"]);
    let listed = with_input(sizes, ids.as_bytes().to_vec(), "cat-file").unwrap_or_default();
    let mut kept = String::new();
    let mut left = 0;
    for line in listed.lines() {
        let Some((id, size)) = line.split_once(' ') else {
            continue;
        };
        if size.parse::<u64>().is_ok_and(|n| n <= MAX_OBJECT) {
            kept.push_str(id);
            kept.push('\n');
        } else {
            left += 1;
        }
    }
    if left > 0 {
        notes.push(format!(
            "{left} object(s) the command wrote were not taken: larger than {} MiB unpacked",
            MAX_OBJECT >> 20
        ));
    }
    kept
}

/// Indexes the pack at `pack` (in the incoming directory) and moves it into the repository
/// under the name git gives it: the pack first, then its index (git finds packs by their index).
fn take_pack(git: &HardenedGit, git_dir: &Path, pack: &Path) -> Result<(), String> {
    let idx = pack.with_extension("idx");
    let mut index = git.command(git_dir);
    index.arg("index-pack").arg("-o").arg(&idx).arg(pack);
    let printed = output(index, "index-pack")?;
    let hash = printed
        .split_whitespace()
        .rev()
        .find(|w| is_hex_id(w))
        .ok_or_else(|| format!("git index-pack named no pack: {printed}"))?;
    let into = git_dir.join("objects/pack");
    let named = |ext: &str| into.join(format!("pack-{hash}.{ext}"));
    if kind(&named("idx")) != Kind::Missing {
        return Ok(());
    }
    std::fs::rename(pack, named("pack"))
        .and_then(|()| std::fs::rename(&idx, named("idx")))
        .map_err(|e| format!("moving pack-{hash} in: {e}"))
}

/// Packs the objects `ids` names from the loose objects in `loose` (and the repository's own),
/// into the file `into`.
fn pack_loose(
    git: &HardenedGit,
    git_dir: &Path,
    loose: &Path,
    ids: String,
    into: &Path,
) -> Result<(), String> {
    let file = std::fs::File::create(into).map_err(|e| format!("{}: {e}", into.display()))?;
    let mut pack = git.command(git_dir);
    pack.env("GIT_ALTERNATE_OBJECT_DIRECTORIES", loose)
        .args(["pack-objects", "--stdout", "-q"]);
    with_input_to(pack, ids.into_bytes(), "pack-objects", Stdio::from(file)).map(|_| ())
}

/// The refs the layer holds (its `packed-refs`, then its loose refs over them): new ones made,
/// forward moves made, other moves made with the old value kept under `refs/warden/kept/`.
/// Removed refs stay.
fn refs(
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
fn present<'a>(
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

fn is_ancestor(git: &HardenedGit, git_dir: &Path, old: &str, new: &str) -> bool {
    let mut cmd = git.command(git_dir);
    cmd.args(["merge-base", "--is-ancestor", old, new])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.status().is_ok_and(|s| s.success())
}

/// `HEAD`: to a branch, or detached at an object the repository has (a detached value left
/// behind, unless the new one is ahead of it, kept as the refs are).
fn head(git: &HardenedGit, git_dir: &Path, upper: &Path, guard: &Guard, notes: &mut Vec<String>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_names_are_plain_ones_under_refs() {
        for good in [
            "refs/heads/main",
            "refs/tags/v1.0",
            "refs/heads/feature/x-y_z",
            "refs/stash",
        ] {
            assert!(is_ref_name(good), "{good}");
        }
        for bad in [
            "HEAD",
            "refs/heads/../config",
            "refs/heads/.hidden",
            "refs/heads/x.lock",
            "refs/heads/a b",
            "refs/heads/x@{1}",
            "refs//x",
            "refs/heads/",
            "config",
        ] {
            assert!(!is_ref_name(bad), "{bad}");
        }
    }

    #[test]
    fn ids_are_lowercase_hex_of_either_hash() {
        assert!(is_hex_id(&"a".repeat(40)));
        assert!(is_hex_id(&"0".repeat(64)));
        assert!(!is_hex_id(&"A".repeat(40)));
        assert!(!is_hex_id(&"a".repeat(39)));
        assert!(!is_hex_id("ref: refs/heads/main"));
    }
}

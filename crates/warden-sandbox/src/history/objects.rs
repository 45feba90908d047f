//! A layer's new objects, each one hashed again by git before the repository has it.

use std::path::Path;
use std::process::Stdio;

use super::git::{HardenedGit, output};
use super::layer::{Kind, entries, is_hex_id, kind, read, with_input, with_input_to};

/// New packs and loose objects, through a directory of warden's in the repository's `objects`
/// (git looks only at its own names there), removed afterwards whatever happened. A pack is
/// indexed by git anew, which hashes every object in it as if it came from elsewhere; loose
/// objects are copied there and packed by git, which packs what a file holds whatever its name
/// claims, then indexed the same way. Only a pack git indexed goes in, under the name git gave.
pub(super) fn objects(git: &HardenedGit, git_dir: &Path, dir: &Path, notes: &mut Vec<String>) {
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

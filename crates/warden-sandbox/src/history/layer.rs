//! Reading a command's layer, which is the command's work: links are never followed, a file past
//! [`MAX_FILE`] is left out, a name that is not what git itself would write is left out; and
//! running git with a question on its standard input.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use super::git::answer;

/// The largest loose object, index or state file brought back.
pub(super) const MAX_FILE: u64 = 1 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Missing,
    File,
    Dir,
    /// The overlay's mark of a removed name.
    Whiteout,
    Other,
}

pub(super) fn kind(path: &Path) -> Kind {
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
pub(super) fn entries(dir: &Path) -> Vec<String> {
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
pub(super) fn read(path: &Path) -> Option<Vec<u8>> {
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

pub(super) fn is_hex_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64)
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// A ref name as git writes them, conservatively: under `refs/`, plain components.
pub(super) fn is_ref_name(name: &str) -> bool {
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
pub(super) fn lines(lines: &[String]) -> Vec<u8> {
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
pub(super) fn with_input_to(
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

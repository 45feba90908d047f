//! warden's own state files in the user's data directory (the trust records, the remembered
//! rules): read whole, changed under a lock, written to a temporary name and renamed into
//! place, so two wardens never lose each other's change and a crash never leaves half a file.

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ConfigError;

/// The trust records, in the data directory.
pub(crate) const TRUST_FILE: &str = "trust.toml";
/// The remembered rules, in the data directory.
pub(crate) const REMEMBERED_FILE: &str = "remembered.toml";
/// The sandbox's index of toolchain directories, in the data directory.
pub(crate) const TOOLCHAIN_INDEX: &str = "toolchains.idx";
/// Held while a state file changes.
const LOCK_FILE: &str = ".state.lock";

/// The user's data directory: `$WARDEN_HOME`, else `$XDG_DATA_HOME/warden`, else
/// `$HOME/.local/share/warden`. Empty variables count as unset, and a relative
/// `XDG_DATA_HOME` is ignored, as the XDG base directory specification asks. The trace
/// database lives here too.
pub fn data_dir() -> Option<PathBuf> {
    data_dir_from(|name| std::env::var_os(name))
}

pub(crate) fn data_dir_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let var = |name| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(home) = var("WARDEN_HOME") {
        return Some(home);
    }
    if let Some(data) = var("XDG_DATA_HOME").filter(|p| p.is_absolute()) {
        return Some(data.join("warden"));
    }
    var("HOME").map(|home| home.join(".local/share/warden"))
}

/// The most a settings or state file may hold: more is refused, not read.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The text of the settings or state file at `path`, `None` when there is none. Only a regular
/// file (a link to one included) is read, and only up to [`MAX_FILE_BYTES`]: a repository's
/// settings file that is a FIFO or a device would otherwise hang warden or fill its memory.
pub(crate) fn read_settings_file(path: &Path) -> Result<Option<String>, ConfigError> {
    use std::io::Read as _;
    let failed = |source: io::Error| ConfigError::Read {
        path: path.to_owned(),
        source,
    };
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(source) => return Err(failed(source)),
    };
    if !meta.is_file() {
        return Err(failed(io::Error::other("not a regular file")));
    }
    let file = std::fs::File::open(path).map_err(failed)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(failed(io::Error::other("larger than 4 MiB")));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| failed(io::Error::other("not UTF-8 text")))
}

/// `path` with its nearest existing ancestor resolved to its real path and the rest re-appended:
/// how a path is spelled once symbolic links are followed.
pub(crate) fn real_path(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |out, part| out.join(part));
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The state file `name` of `dir`, or its default when there is none yet.
pub(crate) fn read<T: DeserializeOwned + Default>(
    dir: &Path,
    name: &str,
) -> Result<T, ConfigError> {
    let path = dir.join(name);
    // A state file that is a symbolic link could lead to a file someone else wrote.
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(ConfigError::Read {
            path,
            source: io::Error::other("warden's own file is a symbolic link; remove it"),
        });
    }
    // No directory (or a file where it should be) holds no state: nothing trusted, nothing
    // remembered.
    let Some(text) = read_settings_file(&path)? else {
        return Ok(T::default());
    };
    toml::from_str(&text).map_err(|err| {
        let (line, column) = err
            .span()
            .map(|span| crate::error::line_column(&text, span.start))
            .map_or((None, None), |(l, c)| (Some(l), Some(c)));
        ConfigError::Syntax {
            path,
            line,
            column,
            message: format!(
                "{} (warden's own file: fix or remove it)",
                err.message().trim_end()
            ),
        }
    })
}

/// Changes the state file `name` of `dir` with `change`, under the lock; `header` is the
/// comment the file starts with. Returns the file's path and what `change` returned.
pub(crate) fn update<T, R>(
    dir: &Path,
    name: &str,
    header: &str,
    change: impl FnOnce(&mut T) -> R,
) -> Result<(PathBuf, R), ConfigError>
where
    T: DeserializeOwned + Serialize + Default,
{
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ConfigError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(write_error(dir))?;
    let lock_path = dir.join(LOCK_FILE);
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(write_error(&lock_path))?;
    lock.lock().map_err(write_error(&lock_path))?;
    let mut state: T = read(dir, name)?;
    let out = change(&mut state);
    let path = dir.join(name);
    let body = toml::to_string(&state).map_err(|err| ConfigError::Write {
        path: path.clone(),
        source: io::Error::other(err.to_string()),
    })?;
    replace_file(&path, format!("{header}\n{body}").as_bytes()).map_err(write_error(&path))?;
    drop(lock);
    Ok((path, out))
}

/// Replaces `path` with `bytes`: a new temporary file beside it (made with `O_EXCL`, so a link
/// planted at its name is never followed), synced, then renamed over `path` (which replaces a
/// link there, never what it points to).
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    replace_file_from(path, bytes, stamp)
}

fn temp_name(name: &str, stamp: u32, attempt: u32) -> String {
    let salt = stamp.wrapping_mul(2_654_435_761).wrapping_add(attempt);
    format!(".{name}.{salt:08x}.tmp")
}

fn replace_file_from(path: &Path, bytes: &[u8], stamp: u32) -> io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "state".into(), |n| n.to_string_lossy().into_owned());
    for attempt in 0..32u32 {
        let temp = dir.join(temp_name(&name, stamp, attempt));
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp);
        let mut file = match opened {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        };
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&temp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        return written;
    }
    Err(io::Error::other("no free temporary name"))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    #[test]
    fn links_at_the_temporary_names_or_the_file_itself_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("settings.toml");
        std::fs::write(&outside, "mine\n").unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        for attempt in 0..4 {
            std::os::unix::fs::symlink(&outside, data.join(temp_name(TRUST_FILE, 9, attempt)))
                .unwrap();
        }
        replace_file_from(&data.join(TRUST_FILE), b"x = 1\n", 9).unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine\n");
        // A state file that is a link is refused, not read.
        std::fs::remove_file(data.join(TRUST_FILE)).unwrap();
        std::os::unix::fs::symlink(&outside, data.join(TRUST_FILE)).unwrap();
        let err = crate::trust::trust_records(&data).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
    }

    #[test]
    fn data_dir_follows_warden_home_then_xdg_then_home() {
        fn lookup<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        }
        let all = [
            ("WARDEN_HOME", "/w"),
            ("XDG_DATA_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(data_dir_from(lookup(&all)), Some(PathBuf::from("/w")));
        let xdg = [("WARDEN_HOME", ""), ("XDG_DATA_HOME", "/x"), ("HOME", "/h")];
        assert_eq!(
            data_dir_from(lookup(&xdg)),
            Some(PathBuf::from("/x/warden"))
        );
        let relative = [("XDG_DATA_HOME", "rel"), ("HOME", "/h")];
        assert_eq!(
            data_dir_from(lookup(&relative)),
            Some(PathBuf::from("/h/.local/share/warden"))
        );
        assert_eq!(data_dir_from(lookup(&[])), None);
    }
}

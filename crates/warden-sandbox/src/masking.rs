//! Masking: which files of a command's roots it may not read. The sandbox decides nothing: the
//! caller hands in a [`Masking`] (warden's secret list), and the plan's one walk of the roots,
//! the same walk that finds hard links leading out, asks it about every file.
//!
//! A masked file keeps its name (a tool that lists or `stat`s it works), but an empty file of
//! mode `000` is mounted over it: opening it fails with a permission error, whatever spelling
//! or program asks, and being a mount point it cannot be renamed, removed or replaced.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What the secret list says of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaskDecision {
    /// Masked: its content is not the command's to read.
    Masked,
    /// A secret the user unmasked: readable, and to be recorded.
    Unmasked,
    /// Not a secret.
    Readable,
}

/// The secret list as the sandbox asks it.
pub trait Masking: Send + Sync + std::fmt::Debug {
    /// What becomes of the regular file at `path`. `beside_key`: it has no extension and its
    /// directory holds a `*.pem`, `*.key` or `*.crt` file; `head` reads the file's first bytes
    /// when the name alone does not tell.
    fn decide(
        &self,
        path: &Path,
        beside_key: bool,
        head: &mut dyn FnMut() -> Option<Vec<u8>>,
    ) -> MaskDecision;

    /// Credential files and directories at fixed places (the home's, the machine's private
    /// keys), checked on every command wherever the command could see them, walked or not (a
    /// person may make one at any time): each with what becomes of it. A directory is hidden
    /// whole.
    fn credential_paths(&self) -> Vec<(PathBuf, MaskDecision)>;

    /// Whether `path` is masked because of where it is (a settings pattern, a credential
    /// location) rather than by its name or content: renaming a directory above it would free
    /// it, so in a writable root those directories are kept in place.
    fn by_place(&self, path: &Path) -> bool {
        let _ = path;
        false
    }

    /// Whether a file named `name` could be masked at all (`beside_key`: it has no extension
    /// and sits beside a `*.pem`, `*.key` or `*.crt` file). A walk skips, without a `stat`, the
    /// files for which this says no; saying yes is always safe.
    fn may_mask(&self, name: &str, beside_key: bool) -> bool {
        let _ = (name, beside_key);
        true
    }

    /// What [`Masking::may_mask`] depends on, as text: an index of directories made under one
    /// fingerprint is not used under another.
    fn fingerprint(&self) -> String {
        String::new()
    }
}

/// A request's masking: none, or the caller's rule, with what walks of read-only roots found
/// under it (shared by the clones of a session's requests).
#[derive(Clone, Default)]
pub struct MaskRule {
    rule: Option<Arc<dyn Masking>>,
    kept: Arc<Mutex<HashMap<PathBuf, Kept>>>,
    /// Where the index of read-only roots' directories is kept between processes.
    index: Option<PathBuf>,
    /// The walks of the other roots, kept current for the rest of the session.
    live: Option<Arc<Mutex<crate::live::Live>>>,
}

impl MaskRule {
    /// Masking by `rule`.
    pub fn new(rule: Arc<dyn Masking>) -> Self {
        MaskRule {
            rule: Some(rule),
            kept: Arc::default(),
            index: None,
            live: None,
        }
    }

    /// Keeps the walk of every root a command can read for the requests that share this rule
    /// (a session's), and brings it up to date from the changes inotify reports: a command
    /// after the first reads only the directories that changed. Each watched directory costs
    /// the kernel about 1 KiB while the rule lives; a one-shot process has nothing to gain.
    #[must_use]
    pub fn keep_walks(mut self) -> Self {
        self.live = Some(Arc::default());
        self
    }

    /// Adds the kept walk of `root` to a walk's findings; `false` when walks are not kept or
    /// this one cannot be.
    pub(crate) fn kept_walk(
        &self,
        root: &Path,
        rule: Option<&dyn Masking>,
        seen: &mut crate::links::Seen,
        found: &mut Kept,
    ) -> bool {
        let Some(live) = &self.live else {
            return false;
        };
        let Ok(mut live) = live.lock() else {
            return false;
        };
        live.walk(root, rule, seen, found)
    }

    /// Keeps the index of read-only roots' directories at `path` (in warden's own data
    /// directory, out of every command's and tool's reach), so that another process reads only
    /// the directories that changed.
    #[must_use]
    pub fn with_index(mut self, path: PathBuf) -> Self {
        self.index = Some(path);
        self
    }

    pub(crate) fn index(&self) -> Option<&Path> {
        self.index.as_deref()
    }

    pub(crate) fn rule(&self) -> Option<&Arc<dyn Masking>> {
        self.rule.as_ref()
    }

    /// The walk of the read-only `root`, from an earlier command under this rule when there
    /// was one: a command cannot change such a root (a toolchain directory).
    pub(crate) fn read_only_root(&self, root: &Path, walk: impl FnOnce() -> Kept) -> Kept {
        if let Ok(kept) = self.kept.lock()
            && let Some(found) = kept.get(root)
        {
            return found.clone();
        }
        let found = walk();
        if let Ok(mut kept) = self.kept.lock() {
            kept.insert(root.to_path_buf(), found.clone());
        }
        found
    }
}

impl std::fmt::Debug for MaskRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.rule {
            Some(rule) => write!(f, "MaskRule({rule:?})"),
            None => f.write_str("MaskRule(none)"),
        }
    }
}

impl PartialEq for MaskRule {
    fn eq(&self, other: &Self) -> bool {
        match (&self.rule, &other.rule) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

/// How much of a file the walk reads to ask about its content: the secret list's 1 MiB, and
/// one byte more, so that it can tell a larger file.
const HEAD_BYTES: u64 = 1024 * 1024 + 1;

/// The first bytes of `path`, without following a link and without blocking on a FIFO.
pub(crate) fn head(path: &Path) -> Option<Vec<u8>> {
    head_of(path, HEAD_BYTES)
}

/// The first `limit` bytes of `path`, without following a link and without blocking on a FIFO;
/// `None` when it cannot be read (then it counts as a secret). Sized by the file's length, so
/// that a small file costs one read.
pub(crate) fn head_of(path: &Path, limit: u64) -> Option<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        // Not a file any more (swapped for a FIFO): nothing in it to hold a key.
        return Some(Vec::new());
    }
    // One byte past the length, to see a file that grew.
    let want = usize::try_from(meta.len().saturating_add(1).min(limit)).ok()?;
    let mut bytes = vec![0; want];
    let mut filled = 0;
    while filled < want {
        match file.read(&mut bytes[filled..]) {
            Ok(0) => break,
            // A regular file reads short only at its end.
            Ok(n) if filled + n < want => {
                filled += n;
                break;
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    bytes.truncate(filled);
    Some(bytes)
}

/// What a walk of a read-only root found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Kept {
    pub(crate) masked: Vec<PathBuf>,
    pub(crate) unmasked: Vec<PathBuf>,
    /// Directories that could not be read.
    pub(crate) unreadable: Vec<PathBuf>,
    /// Something listed was gone when looked at.
    pub(crate) changed: bool,
}

impl Kept {
    /// Keeps `path` by what the rule said of it.
    pub(crate) fn record(&mut self, path: PathBuf, decision: MaskDecision) {
        match decision {
            MaskDecision::Masked => self.masked.push(path),
            MaskDecision::Unmasked => self.unmasked.push(path),
            MaskDecision::Readable => {}
        }
    }
}

/// The empty file of mode `000` mounted over what is masked: made once per user, in a
/// directory of its own in `data` (warden's data directory, beside the index) or else under the
/// temporary directory, checked each time (a directory, not a link, owned by us, mode `0700`;
/// a regular empty file of mode `000`, owned by us).
pub(crate) fn mask_source(data: Option<&Path>) -> Result<PathBuf, String> {
    // Checked once per process and place: the directory is only ours.
    static MADE: Mutex<Vec<(Option<PathBuf>, PathBuf)>> = Mutex::new(Vec::new());
    let key = data.map(Path::to_path_buf);
    if let Ok(made) = MADE.lock()
        && let Some((_, file)) = made.iter().find(|(k, _)| *k == key)
    {
        return Ok(file.clone());
    }
    let file = make_mask_source(data)?;
    if let Ok(mut made) = MADE.lock() {
        made.push((key, file.clone()));
    }
    Ok(file)
}

fn make_mask_source(data: Option<&Path>) -> Result<PathBuf, String> {
    use std::os::unix::fs::{
        DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
    };
    let (uid, _) = crate::sys::ids();
    let dir = match data {
        Some(data) => {
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(data);
            data.join("masked")
        }
        None => std::env::temp_dir().join(format!("warden-masked-{uid}")),
    };
    let err = |what: &str| format!("the mask file in {}: {what}", dir.display());
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(err(&e.to_string())),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| err(&e.to_string()))?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        return Err(err("not a private directory of ours; remove it"));
    }
    let file = dir.join("masked");
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o000)
        .open(&file)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(err(&e.to_string())),
    }
    let meta = std::fs::symlink_metadata(&file).map_err(|e| err(&e.to_string()))?;
    if !meta.is_file()
        || meta.uid() != uid
        || meta.len() != 0
        || meta.permissions().mode() & 0o777 != 0
    {
        return Err(err(
            "the mask file is not an empty file of mode 000; remove it",
        ));
    }
    // Its real path: the sandbox reaches it through the host's root, where a link on the way
    // (a home directory that is one) would lead elsewhere.
    file.canonicalize().map_err(|e| err(&e.to_string()))
}

/// Whether a file name has the extension of a key or certificate.
pub(crate) fn is_key_name(name: &std::ffi::OsStr) -> bool {
    Path::new(name).extension().is_some_and(is_key_extension)
}

/// `pem`, `key`, `crt` or `der`, in any case: the extensions the secret list looks into.
pub(crate) fn is_key_extension(extension: &std::ffi::OsStr) -> bool {
    extension.to_str().is_some_and(|x| {
        ["pem", "key", "crt", "der"]
            .iter()
            .any(|k| x.eq_ignore_ascii_case(k))
    })
}

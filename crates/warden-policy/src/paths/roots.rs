//! Allowed roots and denied patterns: where the in-process tools may look.
//!
//! Every path a tool touches goes through [`PathPolicy::resolve`]: made absolute against the working
//! directory, normalised lexically (`.`, `..`, `//`), checked against the roots, then resolved to its
//! real path (symlinks followed) and checked again. A path is refused when either its spelling or its
//! real location is outside the roots or matches a denied pattern, so a symlink can neither lead
//! out of the workspace nor disguise a protected file.

use std::io;
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use warden_protocol::{ToolError, ToolErrorKind};

/// A pattern list could not be compiled.
#[derive(Debug, thiserror::Error)]
#[error("invalid denied-path pattern {pattern:?}: {source}")]
pub struct PatternError {
    pattern: String,
    #[source]
    source: globset::Error,
}

/// The resolved path rules the read-only tools obey.
#[derive(Debug, Clone)]
pub struct PathPolicy {
    /// Canonical roots; the first is the primary (the project root).
    roots: Vec<PathBuf>,
    /// Patterns matched against a path relative to its root (gitignore style).
    relative: GlobSet,
    /// Patterns matched against the absolute path (`~/…`, `//…`).
    absolute: GlobSet,
    patterns: Vec<String>,
    relative_owner: Vec<usize>,
    absolute_owner: Vec<usize>,
    /// (device, inode) of protected files that have other names: a hard link to one elsewhere
    /// in the roots is refused like the file itself.
    hidden: std::sync::Arc<std::collections::HashSet<(u64, u64)>>,
    /// The one secret list, shared with the sandbox.
    secrets: Option<std::sync::Arc<crate::secrets::Secrets>>,
}

/// A path that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The real path, symlinks resolved.
    pub real: PathBuf,
    /// The path as shown to the model: relative to the primary root when inside it.
    pub display: String,
}

impl PatternError {
    pub(crate) fn new(pattern: &str, source: globset::Error) -> Self {
        Self {
            pattern: pattern.to_owned(),
            source,
        }
    }
}

impl PathPolicy {
    /// Builds a policy. Roots are canonicalised; a root that does not exist is skipped. Denied
    /// patterns follow gitignore conventions: a pattern without `/` matches a name at any depth,
    /// one with `/` is anchored at the root, `~/` and `//` anchor at the home directory and `/`.
    pub fn new(roots: &[PathBuf], denied: &[String]) -> Result<Self, PatternError> {
        let mut canonical: Vec<PathBuf> = Vec::new();
        for root in roots {
            if let Ok(real) = root.canonicalize()
                && !canonical.contains(&real)
            {
                canonical.push(real);
            }
        }
        let mut relative = GlobSetBuilder::new();
        let mut absolute = GlobSetBuilder::new();
        let mut relative_owner = Vec::new();
        let mut absolute_owner = Vec::new();
        for (index, pattern) in denied.iter().enumerate() {
            let (globs, is_absolute) = expand_pattern(pattern);
            for glob in globs {
                let compiled = GlobBuilder::new(&glob)
                    .literal_separator(true)
                    .build()
                    .map_err(|source| PatternError {
                        pattern: pattern.clone(),
                        source,
                    })?;
                if is_absolute {
                    absolute.add(compiled);
                    absolute_owner.push(index);
                } else {
                    relative.add(compiled);
                    relative_owner.push(index);
                }
            }
        }
        let build = |b: GlobSetBuilder| {
            b.build().map_err(|source| PatternError {
                pattern: denied.join(", "),
                source,
            })
        };
        Ok(Self {
            roots: canonical,
            relative: build(relative)?,
            absolute: build(absolute)?,
            patterns: denied.to_vec(),
            relative_owner,
            absolute_owner,
            hidden: std::sync::Arc::default(),
            secrets: None,
        })
    }

    /// Refuses, besides the patterns, what `secrets` lists: the same answer the sandbox gives
    /// a command for the same path.
    #[must_use]
    pub fn with_secrets(mut self, secrets: std::sync::Arc<crate::secrets::Secrets>) -> Self {
        self.secrets = Some(secrets);
        self
    }

    /// What makes the regular file at `path` (real) a secret, if anything does: its name, or
    /// its first bytes where the name asks for them.
    pub fn secret_of(&self, path: &Path) -> Option<crate::secrets::Secret> {
        let secrets = self.secrets.as_ref()?;
        let beside_key = beside_key(path);
        secrets.check(path, beside_key, &mut || head(path))
    }

    /// Whether a file with other names (hard links) is a secret by one of them, or has one
    /// outside the roots (where the sandbox masks it, the tools refuse it too). Only files
    /// with more than one name walk the roots, at most [`LINK_WALK_LIMIT`] entries.
    pub fn secret_by_link(&self, path: &Path) -> Option<crate::secrets::Secret> {
        self.secrets.as_ref()?;
        let (id, nlink) = identity(path)?;
        let Some(names) = self.linked_names(Some(id)) else {
            return Some(crate::secrets::Secret::Link(
                "a hard link whose other names are too many to look for",
            ));
        };
        self.judge_links(path, nlink, names.get(&id).map_or(&[][..], Vec::as_slice))
    }

    /// The names under the roots of every multiply-linked file (only of `only`, when given),
    /// or `None` when the roots hold more than [`LINK_WALK_LIMIT`] entries.
    fn linked_names(&self, only: Option<(u64, u64)>) -> Option<LinkNames> {
        use std::os::unix::fs::MetadataExt as _;
        let mut names = LinkNames::new();
        let mut budget = LINK_WALK_LIMIT;
        let mut dirs: Vec<PathBuf> = self.roots.clone();
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if budget == 0 {
                    return None;
                }
                budget -= 1;
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if kind.is_file()
                    && let Ok(m) = entry.metadata()
                    && m.nlink() > 1
                    && only.is_none_or(|id| id == (m.dev(), m.ino()))
                {
                    names
                        .entry((m.dev(), m.ino()))
                        .or_default()
                        .push(entry.path());
                }
            }
        }
        Some(names)
    }

    /// What the other names of `path` (`nlink` of them in all, `names` found under the roots)
    /// make it.
    fn judge_links(
        &self,
        path: &Path,
        nlink: u64,
        names: &[PathBuf],
    ) -> Option<crate::secrets::Secret> {
        if u64::try_from(names.len()).unwrap_or(u64::MAX) < nlink {
            return Some(crate::secrets::Secret::Link(
                "a hard link to a file outside the roots",
            ));
        }
        names
            .iter()
            .filter(|n| n.as_path() != path)
            .find_map(|n| self.secret_of(n))
            .map(|_| crate::secrets::Secret::Link("another name of a secret"))
    }

    /// As [`PathPolicy::secret_of`] and [`PathPolicy::secret_by_link`], for a walk over many
    /// files: whether a directory holds a `*.pem`, `*.key` or `*.crt` file is looked up once
    /// per directory, and the roots are walked for other names once per walk, in `walk`.
    pub fn is_secret_in_walk(&self, path: &Path, walk: &WalkCache) -> bool {
        let Some(secrets) = self.secrets.as_ref() else {
            return false;
        };
        let no_extension = path.extension().is_none();
        let beside_key = no_extension
            && path.parent().is_some_and(|dir| {
                if let Ok(known) = walk.key_dirs.lock()
                    && let Some(has) = known.get(dir)
                {
                    return *has;
                }
                let has = dir_holds_keys(dir);
                if let Ok(mut known) = walk.key_dirs.lock() {
                    known.insert(dir.to_path_buf(), has);
                }
                has
            });
        if secrets
            .check(path, beside_key, &mut || head(path))
            .is_some()
        {
            return true;
        }
        let Some((id, nlink)) = identity(path) else {
            return false;
        };
        match walk.links.get_or_init(|| self.linked_names(None)) {
            // Too many entries to look for the other names: refused, as the sandbox would.
            None => true,
            Some(names) => self
                .judge_links(path, nlink, names.get(&id).map_or(&[][..], Vec::as_slice))
                .is_some(),
        }
    }

    /// The `unmask` pattern that made the file at `path` readable, when it is a built-in
    /// secret: its reads are recorded.
    pub fn unmasked(&self, path: &Path) -> Option<String> {
        let secrets = self.secrets.as_ref()?;
        let pattern = secrets.unmasked(path)?.to_owned();
        secrets
            .unmasked_secret(path, beside_key(path), &mut || head(path))
            .then_some(pattern)
    }

    /// Refuses, besides the patterns, every other name of `files` (hard links to them): files
    /// whose path is protected but whose content a link elsewhere would still reach. Only
    /// files with more than one name need it.
    #[must_use]
    pub fn with_hidden_files(mut self, files: &[PathBuf]) -> Self {
        use std::os::unix::fs::MetadataExt as _;
        let ids = files
            .iter()
            .filter_map(|f| std::fs::symlink_metadata(f).ok())
            .filter(|m| m.is_file() && m.nlink() > 1)
            .map(|m| (m.dev(), m.ino()))
            .collect();
        self.hidden = std::sync::Arc::new(ids);
        self
    }

    /// Whether `path` is another name of a file [`PathPolicy::with_hidden_files`] hides.
    pub fn hides(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        !self.hidden.is_empty()
            && std::fs::symlink_metadata(path).is_ok_and(|m| {
                m.is_file() && m.nlink() > 1 && self.hidden.contains(&(m.dev(), m.ino()))
            })
    }

    /// The canonical roots, primary first.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The root that holds `path` (already absolute and normalised), if any.
    pub fn root_of(&self, path: &Path) -> Option<&Path> {
        self.roots
            .iter()
            .map(PathBuf::as_path)
            .find(|root| path.starts_with(root))
    }

    /// The denied pattern that matches `path` (absolute, normalised), if one does. The path and
    /// every ancestor inside its root are tested, so a denied directory covers what it holds.
    pub fn denied_by(&self, path: &Path) -> Option<&str> {
        if let Some(index) = self.absolute.matches(path).first() {
            return Some(&self.patterns[self.absolute_owner[*index]]);
        }
        let root = self.root_of(path)?;
        let relative = path.strip_prefix(root).ok()?;
        let hits = self.relative.matches(relative);
        hits.first()
            .map(|index| self.patterns[self.relative_owner[*index]].as_str())
    }

    /// Resolves a path a tool was given, refusing anything outside the roots or denied.
    pub fn resolve(&self, cwd: &Path, input: &str) -> Result<ResolvedPath, ToolError> {
        if input.is_empty() || input.contains('\0') {
            return Err(ToolError::new(
                ToolErrorKind::InvalidArguments,
                "path is empty or holds a NUL byte",
            )
            .with_field("/path"));
        }
        let lexical = normalize(&absolutize(cwd, input));
        if self.root_of(&lexical).is_none() {
            return Err(ToolError::new(
                ToolErrorKind::OutsideRoots,
                format!(
                    "{input}: {} is outside the allowed roots ({})",
                    lexical.display(),
                    self.roots_list()
                ),
            ));
        }
        if let Some(pattern) = self.denied_by(&lexical) {
            return Err(denied(input, pattern));
        }
        let real = match lexical.canonicalize() {
            Ok(real) => real,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Err(ToolError::new(
                    ToolErrorKind::NotFound,
                    format!("{input}: no such file or directory"),
                ));
            }
            Err(err) => return Err(ToolError::new(ToolErrorKind::Io, format!("{input}: {err}"))),
        };
        if self.root_of(&real).is_none() {
            return Err(ToolError::new(
                ToolErrorKind::SymlinkEscape,
                format!(
                    "{input}: a symlink leads to {}, outside the allowed roots",
                    real.display()
                ),
            ));
        }
        if let Some(pattern) = self.denied_by(&real) {
            return Err(denied(input, pattern));
        }
        if self.hides(&real) {
            return Err(denied(
                input,
                "another name (a hard link) of a protected file",
            ));
        }
        if real.is_file()
            && let Some(secret) = self.secret_of(&real).or_else(|| self.secret_by_link(&real))
        {
            return Err(ToolError::new(
                ToolErrorKind::DeniedPath,
                format!(
                    "{input}: reading it is denied: a secret ({secret}); no tool or command may \
                     read it (the user may unmask it with [permissions] unmask in their own \
                     settings)"
                ),
            ));
        }
        let display = self.display(&real);
        Ok(ResolvedPath { real, display })
    }

    /// How a real path is shown: relative to the primary root when inside it, else absolute.
    pub fn display(&self, real: &Path) -> String {
        match self
            .roots
            .first()
            .and_then(|root| real.strip_prefix(root).ok())
        {
            Some(inner) if inner.as_os_str().is_empty() => ".".to_owned(),
            Some(inner) => inner.to_string_lossy().into_owned(),
            None => real.to_string_lossy().into_owned(),
        }
    }

    fn roots_list(&self) -> String {
        self.roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How many entries a search for a file's other names looks at.
const LINK_WALK_LIMIT: usize = 200_000;

/// The names under the roots of multiply-linked files, by identity.
type LinkNames = std::collections::HashMap<(u64, u64), Vec<PathBuf>>;

/// What one walk over many files (a search) learns once: which directories hold keys, and
/// the other names of multiply-linked files.
#[derive(Debug, Default)]
pub struct WalkCache {
    key_dirs: std::sync::Mutex<std::collections::HashMap<PathBuf, bool>>,
    links: std::sync::OnceLock<Option<LinkNames>>,
}

/// The identity and link count of the regular file at `path`, when it has more than one name.
fn identity(path: &Path) -> Option<((u64, u64), u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::symlink_metadata(path).ok()?;
    (meta.is_file() && meta.nlink() > 1).then(|| ((meta.dev(), meta.ino()), meta.nlink()))
}

/// Whether `path` has no extension and sits beside a `*.pem`, `*.key` or `*.crt` file.
fn beside_key(path: &Path) -> bool {
    let Some(name) = path.file_name() else {
        return false;
    };
    if Path::new(name).extension().is_some() {
        return false;
    }
    path.parent().is_some_and(dir_holds_keys)
}

/// Whether `dir` holds a `*.pem`, `*.key` or `*.crt` file.
fn dir_holds_keys(dir: &Path) -> bool {
    let names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    crate::secrets::Secrets::sniffs_beside("_", names.iter().map(String::as_str))
}

/// The first bytes of the regular file at `path`, as the secret list reads them.
/// The first bytes of the file at `path` for the secret list: nothing for what is not a regular
/// file (not there, a directory), `None` when it could not be read.
fn head(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read as _;
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return Some(Vec::new());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(crate::secrets::SNIFF_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

fn denied(input: &str, pattern: &str) -> ToolError {
    ToolError::new(
        ToolErrorKind::DeniedPath,
        format!("{input}: reading this path is denied by the pattern {pattern:?}"),
    )
}

/// The globs one gitignore-style pattern stands for, and whether they match absolute paths.
fn expand_pattern(pattern: &str) -> (Vec<String>, bool) {
    let trimmed = pattern.trim_end_matches('/');
    if let Some(rest) = trimmed.strip_prefix("~/") {
        let home = std::env::var("HOME").unwrap_or_default();
        let base = format!("{}/{rest}", home.trim_end_matches('/'));
        return (vec![base.clone(), format!("{base}/**")], true);
    }
    if let Some(rest) = trimmed.strip_prefix("//") {
        return (vec![format!("/{rest}"), format!("/{rest}/**")], true);
    }
    let anchored = trimmed.strip_prefix('/').unwrap_or(trimmed);
    let base = if trimmed.starts_with('/') || anchored.contains('/') {
        anchored.to_owned()
    } else {
        format!("**/{anchored}")
    };
    (vec![base.clone(), format!("{base}/**")], false)
}

fn absolutize(cwd: &Path, input: &str) -> PathBuf {
    if let Some(rest) = input.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    cwd.join(input)
}

/// Removes `.` and `..` and repeated separators without touching the filesystem.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => out.push(part),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(root: &Path) -> PathPolicy {
        let deny: Vec<String> = [".env*", "*.pem", "id_rsa*", "**/.ssh/**", ".git/config"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        PathPolicy::new(&[root.to_path_buf()], &deny).unwrap()
    }

    #[test]
    fn normalize_removes_dots_and_double_slashes() {
        assert_eq!(
            normalize(Path::new("/a//b/./c/../d")),
            PathBuf::from("/a/b/d")
        );
        assert_eq!(normalize(Path::new("/../..")), PathBuf::from("/"));
    }

    #[test]
    fn parent_escape_is_outside_roots() {
        let dir = tempfile::tempdir().unwrap();
        let p = policy(dir.path());
        let err = p.resolve(dir.path(), "../../etc/passwd").unwrap_err();
        assert_eq!(err.kind, ToolErrorKind::OutsideRoots);
    }

    #[test]
    fn denied_names_match_at_any_depth_and_anchored_ones_at_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let p = policy(&root);
        assert!(p.denied_by(&root.join("sub/.env.local")).is_some());
        assert!(p.denied_by(&root.join("a/b/server.pem")).is_some());
        assert!(p.denied_by(&root.join("home/.ssh/known_hosts")).is_some());
        assert!(p.denied_by(&root.join(".git/config")).is_some());
        assert!(p.denied_by(&root.join("vendor/.git/config")).is_none());
        assert!(p.denied_by(&root.join("src/environment.rs")).is_none());
    }

    #[test]
    fn symlink_to_denied_file_is_denied_and_link_named_like_secret_too() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".env"), "KEY=1").unwrap();
        std::fs::write(root.join("plain.txt"), "x").unwrap();
        std::os::unix::fs::symlink(root.join(".env"), root.join("notes.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("plain.txt"), root.join(".env.link")).unwrap();
        let p = policy(root);
        assert_eq!(
            p.resolve(root, "notes.txt").unwrap_err().kind,
            ToolErrorKind::DeniedPath
        );
        assert_eq!(
            p.resolve(root, ".env.link").unwrap_err().kind,
            ToolErrorKind::DeniedPath
        );
        assert_eq!(p.resolve(root, "plain.txt").unwrap().display, "plain.txt");
    }

    #[test]
    fn symlink_leaving_roots_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), dir.path().join("link"))
            .unwrap();
        let p = policy(dir.path());
        assert_eq!(
            p.resolve(dir.path(), "link").unwrap_err().kind,
            ToolErrorKind::SymlinkEscape
        );
    }

    #[test]
    fn absolute_patterns_match_home_and_root_paths() {
        let p = PathPolicy::new(&[PathBuf::from("/")], &["//etc/shadow".to_owned()]).unwrap();
        assert_eq!(p.denied_by(Path::new("/etc/shadow")), Some("//etc/shadow"));
        assert!(p.denied_by(Path::new("/etc/passwd")).is_none());
    }
}

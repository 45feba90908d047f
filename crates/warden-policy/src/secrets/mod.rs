//! The one secret list (SPEC T4, X10): which files no tool and no command may read, decided
//! here once and enforced by the file tools and the sandbox alike.
//!
//! A file is a secret by its name (`.env`, `id_rsa`, keystores), by its content (a `*.pem`,
//! `*.key` or `*.crt` file, or an extension-less file beside one, that holds a private key), by
//! where it is (credential files at their home locations), or because a repository's
//! `.npmrc` / `.yarnrc.yml` holds an auth token; settings add their own patterns
//! (`[sandbox.filesystem] deny_read`, `[permissions] protected_paths`). `[permissions] unmask`,
//! from the user's or the organisation's settings only, makes a built-in one readable again.
//!
//! Matching is pure: the caller hands in the first bytes of a file when the name asks for them.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use warden_config::Settings;

use crate::paths::PatternError;
use crate::paths::protect::Set as Anchored;

/// How much of a file is read to tell whether it holds a private key or a token. A file of a
/// sniffed kind larger than this is a secret unread (a key hidden past the part read).
pub const SNIFF_BYTES: usize = 1024 * 1024;

/// Names that are secrets wherever they are.
const BY_NAME: &[&str] = &[
    ".env",
    ".env.*",
    "id_rsa*",
    "id_ed25519*",
    "id_ecdsa*",
    "id_dsa*",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "ssh_host_*_key",
];

/// `.env` files people commit: templates, not secrets.
const TEMPLATES: &[&str] = &[".env.example", ".env.sample", ".env.template", ".env.dist"];

/// Extensions whose files are secrets only when they hold a private key.
const SNIFFED: &[&str] = &["pem", "key", "crt", "der"];

/// Whether `name` has one of the [`SNIFFED`] extensions, in any case.
fn sniffed(name: &str) -> bool {
    Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SNIFFED.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// Files a repository may carry that are secrets only when they hold an auth token.
const TOKEN_FILES: &[&str] = &[".npmrc", ".yarnrc.yml"];

/// Credential files (and directories) at their home locations, relative to `$HOME`.
const HOME_CREDENTIALS: &[&str] = &[
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".docker/config.json",
    ".config/gcloud",
    ".azure",
    ".terraform.d/credentials.tfrc.json",
    ".git-credentials",
    ".netrc",
    ".config/gh",
];

/// The file names among [`TOKEN_FILES`], [`HOME_CREDENTIALS`] and [`CARGO_CREDENTIALS`], for a
/// walk's quick look.
const CREDENTIAL_NAMES: &[&str] = &[
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    "config.json",
    "gcloud",
    ".azure",
    "credentials.tfrc.json",
    ".git-credentials",
    ".netrc",
    "gh",
    "credentials",
    "credentials.toml",
];

/// The machine's private keys, where distributions keep them: the system directories a
/// command sees hold them, and a command running as root could read them.
const SYSTEM_KEYS: &[&str] = &[
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/letsencrypt/archive",
    "/etc/letsencrypt/live",
    "/etc/letsencrypt/keys",
];

/// Where sshd keeps its host keys (`ssh_host_*_key`, a secret by name).
const SSH_DIR: &str = "/etc/ssh";

/// Cargo's credentials, relative to `$CARGO_HOME` (default `~/.cargo`).
const CARGO_CREDENTIALS: &[&str] = &["credentials", "credentials.toml"];

/// Why a file is a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Secret {
    /// Its name (the pattern that matched).
    Name(&'static str),
    /// It holds a private key.
    PrivateKey,
    /// A credential file at its home location.
    Credentials(PathBuf),
    /// A package manager's settings holding an auth token.
    Token,
    /// A pattern of the settings.
    Setting(String),
    /// Another name (a hard link) of a file that is masked, or that lies outside the roots.
    Link(&'static str),
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Name(pattern) => write!(f, "named {pattern}"),
            Secret::PrivateKey => f.write_str("holds a private key"),
            Secret::Credentials(at) => write!(f, "credentials at {}", at.display()),
            Secret::Token => f.write_str("holds an auth token"),
            Secret::Setting(pattern) => write!(f, "denied by the settings: {pattern}"),
            Secret::Link(why) => f.write_str(why),
        }
    }
}

/// What the name alone says of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ByName {
    /// A secret, whatever it holds.
    Secret(Secret),
    /// A secret if its first bytes hold a private key.
    IfPrivateKey,
    /// A secret if its first bytes hold an auth token.
    IfToken,
    /// Not a secret.
    No,
}

/// The secret list of one session's settings.
#[derive(Debug, Clone)]
pub struct Secrets {
    names: GlobSet,
    templates: GlobSet,
    credentials: Vec<PathBuf>,
    /// [`warden_config::HOME_SECRETS`]: hidden whatever `unmask` says.
    hidden: Vec<PathBuf>,
    settings: Anchored,
    unmask: Anchored,
}

fn name_set(patterns: &[&str]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        if let Ok(glob) = GlobBuilder::new(pattern)
            .literal_separator(true)
            .case_insensitive(true)
            .build()
        {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

impl Secrets {
    /// The list for `settings`, `home` being the home directory (real path) and `cargo_home`
    /// cargo's (`$CARGO_HOME`, else `~/.cargo`).
    pub fn new(settings: &Settings, home: &Path, cargo_home: &Path) -> Result<Self, PatternError> {
        let mut extra = settings.sandbox.filesystem.deny_read.clone();
        extra.extend(settings.permissions.protected_paths.iter().cloned());
        // The home's credentials nothing shows are hidden wherever they are seen, as well.
        let hidden = with_real_paths(
            warden_config::HOME_SECRETS
                .iter()
                .map(|h| home.join(h))
                .collect(),
        );
        let mut credentials: Vec<PathBuf> = HOME_CREDENTIALS.iter().map(|c| home.join(c)).collect();
        credentials.extend(CARGO_CREDENTIALS.iter().map(|c| cargo_home.join(c)));
        credentials.extend(hidden.iter().cloned());
        let mut credentials = with_real_paths(credentials);
        credentials.extend(SYSTEM_KEYS.iter().map(PathBuf::from));
        credentials.extend(host_keys(Path::new(SSH_DIR)));
        Ok(Self {
            names: name_set(BY_NAME),
            templates: name_set(TEMPLATES),
            credentials,
            hidden,
            settings: Anchored::new(&extra, &settings.project_root, home)?,
            unmask: Anchored::new(&settings.permissions.unmask, &settings.project_root, home)?,
        })
    }

    /// The list for `settings`, with the home directory from `HOME` and cargo's from
    /// `CARGO_HOME` (else `~/.cargo`), both as real paths.
    pub fn from_settings(settings: &Settings) -> Result<Self, PatternError> {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
        let home = crate::paths::real_path(&home);
        let cargo = std::env::var_os("CARGO_HOME")
            .filter(|c| !c.is_empty())
            .map_or_else(|| home.join(".cargo"), PathBuf::from);
        Self::new(settings, &home, &crate::paths::real_path(&cargo))
    }

    /// What the name and place of `path` (absolute, real) say, before any content is read.
    pub fn by_name(&self, path: &Path) -> ByName {
        if let Some(pattern) = self.settings.find(path) {
            return ByName::Secret(Secret::Setting(pattern.to_owned()));
        }
        if let Some(at) = self.hidden.iter().find(|h| path.starts_with(h)) {
            return ByName::Secret(Secret::Credentials(at.clone()));
        }
        if self.unmask.find(path).is_some() {
            return ByName::No;
        }
        self.built_in(path)
    }

    /// What the built-in list alone says of `path`'s name and place.
    fn built_in(&self, path: &Path) -> ByName {
        if let Some(at) = self
            .credentials
            .iter()
            .find(|c| path == c.as_path() || path.starts_with(c))
        {
            return ByName::Secret(Secret::Credentials(at.clone()));
        }
        // A name that is not UTF-8 is matched as its lossy text.
        let Some(name) = path.file_name().map(|n| n.to_string_lossy()) else {
            return ByName::No;
        };
        let name = &*name;
        if let Some(index) = self.names.matches(name).first() {
            let public = Path::new(name)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("pub"));
            if !public && !self.templates.is_match(name) {
                return ByName::Secret(Secret::Name(BY_NAME[*index]));
            }
        }
        if sniffed(name) {
            return ByName::IfPrivateKey;
        }
        // A repository's (or a dotfile repository's) own: a secret when it holds a token. At
        // the home location it is one whatever it holds (above).
        if TOKEN_FILES.iter().any(|t| name.eq_ignore_ascii_case(t)) {
            return ByName::IfToken;
        }
        ByName::No
    }

    /// Whether an extension-less file in a directory is sniffed: only beside a `*.pem`, `*.key`
    /// or `*.crt` file (`siblings` are the names in its directory).
    pub fn sniffs_beside<'a>(name: &str, siblings: impl IntoIterator<Item = &'a str>) -> bool {
        Path::new(name).extension().is_none() && siblings.into_iter().any(sniffed)
    }

    /// Whether `path` is a secret: its name first, then, when the name asks, its first bytes
    /// (read by `head`: [`SNIFF_BYTES`] and one more, to tell a larger file; empty for a file
    /// that is not there, `None` for one that could not be read, which counts as a secret). `beside_key` says that it has no extension
    /// and sits beside a `*.pem`, `*.key` or `*.crt` file.
    pub fn check(
        &self,
        path: &Path,
        beside_key: bool,
        head: &mut dyn FnMut() -> Option<Vec<u8>>,
    ) -> Option<Secret> {
        self.decide(path, beside_key, head, true)
    }

    /// Whether `path` is a built-in secret that `[permissions] unmask` made readable (its reads
    /// are recorded).
    pub fn unmasked_secret(
        &self,
        path: &Path,
        beside_key: bool,
        head: &mut dyn FnMut() -> Option<Vec<u8>>,
    ) -> bool {
        self.unmask.find(path).is_some() && self.decide(path, beside_key, head, false).is_some()
    }

    fn decide(
        &self,
        path: &Path,
        beside_key: bool,
        head: &mut dyn FnMut() -> Option<Vec<u8>>,
        unmasking: bool,
    ) -> Option<Secret> {
        let by_name = if unmasking {
            self.by_name(path)
        } else {
            self.built_in(path)
        };
        match by_name {
            ByName::Secret(secret) => Some(secret),
            // Larger than what is read: a key could sit past it, so it is one unread. What
            // cannot be read at all (`head` says `None`) could hold anything: one too.
            ByName::IfPrivateKey => head()
                .is_none_or(|b| b.len() > SNIFF_BYTES || holds_private_key(&b))
                .then_some(Secret::PrivateKey),
            ByName::IfToken => head()
                .is_none_or(|b| b.len() > SNIFF_BYTES || holds_auth_token(&b))
                .then_some(Secret::Token),
            ByName::No if beside_key && !(unmasking && self.unmask.find(path).is_some()) => head()
                .is_none_or(|bytes| holds_private_key(&bytes))
                .then_some(Secret::PrivateKey),
            ByName::No => None,
        }
    }

    /// Whether a file named `name` could be a secret wherever it is, so that a walk may skip
    /// the rest without reading them: never when the settings add patterns (they match paths)
    /// or the user unmasks some (their reads are recorded).
    pub fn may_be_secret(&self, name: &str, beside_key: bool) -> bool {
        if !self.settings.patterns.is_empty() || !self.unmask.patterns.is_empty() || beside_key {
            return true;
        }
        // Plain string checks, the same names as BY_NAME and the rest, in any case and without
        // an allocation: a walk asks this of every file.
        let starts = |prefix: &str| {
            name.len() >= prefix.len()
                && name.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
        };
        let extension = name.rsplit_once('.').map(|(_, e)| e);
        starts(".env")
            || starts("id_")
            || starts("ssh_host_")
            || extension.is_some_and(|e| {
                [
                    "p12", "pfx", "jks", "keystore", "kdbx", "pem", "key", "crt", "der",
                ]
                .iter()
                .any(|x| e.eq_ignore_ascii_case(x))
            })
            || CREDENTIAL_NAMES
                .iter()
                .any(|c| name.eq_ignore_ascii_case(c))
    }

    /// What [`Secrets::may_be_secret`] depends on beyond the built-in names: the settings'
    /// patterns and the unmasked ones.
    pub fn fingerprint(&self) -> String {
        format!("{:?} {:?}", self.settings.patterns, self.unmask.patterns)
    }

    /// The credential files and directories at their home locations, and the machine's
    /// private keys: a person may make one at any time, so they are looked at on every command.
    pub fn credential_files(&self) -> &[PathBuf] {
        &self.credentials
    }

    /// Whether `path` is a secret because of where it is: a settings pattern or a credential
    /// location, not its name or content (a renamed directory above it would free it).
    pub fn by_place(&self, path: &Path) -> bool {
        self.settings.find(path).is_some()
            || self.always_hidden(path)
            || self
                .credentials
                .iter()
                .any(|c| warden_config::within(path, c))
    }

    /// Whether `path` is among the home's credentials nothing shows (`unmask` included).
    pub fn always_hidden(&self, path: &Path) -> bool {
        self.hidden.iter().any(|h| warden_config::within(path, h))
    }

    /// Whether the user unmasks anything at all.
    pub fn unmasks_any(&self) -> bool {
        !self.unmask.patterns.is_empty()
    }

    /// The `[permissions] unmask` pattern that matches `path`, if one does.
    pub fn unmasked(&self, path: &Path) -> Option<&str> {
        self.unmask.find(path)
    }
}

/// `paths` and, where one is a link (a dotfile repository's), where it leads: that is one too.
fn with_real_paths(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let real: Vec<PathBuf> = paths
        .iter()
        .filter_map(|c| c.canonicalize().ok())
        .filter(|r| !paths.contains(r))
        .collect();
    paths.extend(real);
    paths
}

/// The host keys in `dir` (`ssh_host_*_key`, not their `.pub`).
fn host_keys(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut keys: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("ssh_host_") && n.ends_with("_key"))
        })
        .map(|e| e.path())
        .collect();
    keys.sort();
    keys
}

/// Whether `head` holds a private key: PEM of any kind (`-----BEGIN … PRIVATE KEY…-----`:
/// PKCS#1, PKCS#8, SEC1, OpenSSH, encrypted, PGP), a `PuTTY` key, or DER (a SEQUENCE opening with
/// the version INTEGER 0 or 1 of PKCS#1, PKCS#8 and SEC1, where a certificate opens with a
/// SEQUENCE).
pub fn holds_private_key(head: &[u8]) -> bool {
    const BEGIN: &[u8] = b"-----BEGIN ";
    let mut rest = head;
    while let Some(at) = find(rest, BEGIN) {
        let after = &rest[at + BEGIN.len()..];
        let line = after.split(|&b| b == b'\n').next().unwrap_or(after);
        if find(line, b"PRIVATE KEY").is_some() {
            return true;
        }
        rest = after;
    }
    head.starts_with(b"PuTTY-User-Key-File-") || der_private_key(head)
}

/// A DER structure opening like a private key: `SEQUENCE { INTEGER 0|1, … }`.
fn der_private_key(head: &[u8]) -> bool {
    let Some((&0x30, rest)) = head.split_first() else {
        return false;
    };
    // The SEQUENCE's length: short form, or long form of 1 to 4 bytes.
    let Some((&len, rest)) = rest.split_first() else {
        return false;
    };
    let rest = if len & 0x80 == 0 {
        rest
    } else {
        let n = usize::from(len & 0x7f);
        if !(1..=4).contains(&n) || rest.len() < n {
            return false;
        }
        &rest[n..]
    };
    matches!(rest, [0x02, 0x01, 0x00 | 0x01, ..])
}

/// Whether `text` (an `.npmrc` or `.yarnrc.yml`) holds an auth token or password line.
pub fn holds_auth_token(text: &[u8]) -> bool {
    String::from_utf8_lossy(text).lines().any(|line| {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') {
            return false;
        }
        // `.npmrc` is `key=value` (`//registry/:_authToken=…`), `.yarnrc.yml` is `key: value`.
        let (key, value) = match line.split_once('=') {
            Some((key, value)) => (key, value),
            None => line.split_once(':').unwrap_or((line, "")),
        };
        let key = key.trim().trim_matches('"');
        let key = key.rsplit(':').next().unwrap_or(key);
        let has_value = !value.trim().trim_matches('"').is_empty();
        has_value
            && matches!(
                key,
                "_authToken"
                    | "_auth"
                    | "_password"
                    | "npmAuthToken"
                    | "npmAuthIdent"
                    | "npmPassword"
            )
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests;

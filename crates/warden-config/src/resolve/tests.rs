use std::path::Path;

use super::*;
use crate::parse::parse_str;
use crate::settings::{PermissionMode, ReadTool};

/// Resolve layers given as `(file name, TOML text)`, highest first; `None` is the command line.
fn resolve_texts(layers: &[(Option<&str>, &str)]) -> Result<Settings, ConfigError> {
    let layers: Vec<_> = layers
        .iter()
        .map(|(file, text)| {
            let origin = file.map_or(Origin::CommandLine, |f| Origin::File(PathBuf::from(f)));
            (
                origin,
                parse_str(text, Path::new(file.unwrap_or("<cli>"))).unwrap(),
            )
        })
        .collect();
    let place = Place {
        project_root: PathBuf::from("/p"),
        cwd: PathBuf::from("/p"),
        sources: Vec::new(),
    };
    resolve(&layers, place, Extras::default())
}

fn error(layers: &[(Option<&str>, &str)]) -> String {
    resolve_texts(layers).unwrap_err().to_string()
}

#[test]
fn no_layers_resolve_to_the_defaults() {
    assert_eq!(
        resolve_texts(&[]).unwrap(),
        Settings::defaults(PathBuf::from("/p"))
    );
}

#[test]
fn read_deny_defaults_cannot_be_removed_by_a_user_layer() {
    let settings = resolve_texts(&[
        (Some("project.toml"), "[tools.glob]\nexclude = [\"out\"]\n"),
        (
            Some("user.toml"),
            "[tools.read]\ndeny = [\"secrets/**\", \"*.pem\"]\n",
        ),
    ])
    .unwrap();
    let mut expected: Vec<_> = ReadTool::DEFAULT_DENY
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    expected.extend(["secrets/**".to_owned(), "*.pem".to_owned()]);
    assert_eq!(settings.tools.read.deny, expected);
    // Other default lists are replaced when a layer sets them.
    assert_eq!(settings.tools.glob.exclude, ["out"]);
}

#[test]
fn shares_must_sum_to_one_hundred_give_or_take_one() {
    let user = (Some("user.toml"), "[context.shares]\nrules = 11\n");
    assert_eq!(resolve_texts(&[user]).unwrap().context.shares.total(), 101);

    let project = (Some("project.toml"), "[context.shares]\nsummary = 30\n");
    assert_eq!(
        error(&[project, user]),
        "project.toml: context.shares: shares sum to 121, they must sum to 100 (± 1)"
    );
}

#[test]
fn the_tool_results_that_call_for_compaction_are_a_share_of_the_window_and_a_count() {
    let defaults = resolve_texts(&[]).unwrap().context;
    assert_eq!(
        (defaults.tool_results_share, defaults.tool_results_count),
        (50, 150)
    );
    let user = (
        Some("user.toml"),
        "[context]\ntool_results_share = 30\ntool_results_count = 40\n",
    );
    let set = resolve_texts(&[user]).unwrap().context;
    assert_eq!((set.tool_results_share, set.tool_results_count), (30, 40));
    assert_eq!(
        error(&[(Some("user.toml"), "[context]\ntool_results_share = 101\n")]),
        "user.toml: context.tool_results_share: 101 is a percentage of the window: at most 100"
    );
    assert_eq!(
        error(&[(Some("user.toml"), "[context]\ntool_results_count = 0\n")]),
        "user.toml: context.tool_results_count: must be greater than 0"
    );
}

#[test]
fn zero_limits_are_refused_naming_key_and_the_file_that_set_it() {
    let layers = [
        (Some("local.toml"), "[sandbox.limits]\npids = 0\n"),
        (Some("user.toml"), "[sandbox.limits]\npids = 5\n"),
    ];
    assert_eq!(
        error(&layers),
        "local.toml: sandbox.limits.pids: must be greater than 0"
    );
    let layers = [(Some("user.toml"), "[tools.read]\npage_lines = 0\n")];
    assert_eq!(
        error(&layers),
        "user.toml: tools.read.page_lines: must be greater than 0"
    );
    let layers = [(None, "[budgets]\nmax_cost_usd = -1.0\n")];
    assert_eq!(
        error(&layers),
        "command line: budgets.max_cost_usd: must be a number greater than 0, not -1"
    );
}

#[test]
fn a_provider_without_kind_is_refused_naming_the_file_that_declared_it() {
    let layers = [(
        Some("project.toml"),
        "[model.providers.local]\nmodel = \"m\"\n",
    )];
    assert_eq!(
        error(&layers),
        "project.toml: model.providers.local.kind: required for every provider"
    );
}

#[test]
fn providers_get_the_base_url_of_their_kind() {
    let text = "[model.providers.a]\nkind = \"anthropic\"\nmodel = \"claude\"\n";
    let settings = resolve_texts(&[(Some("user.toml"), text)]).unwrap();
    assert_eq!(
        settings.model.providers["a"].base_url,
        "https://api.anthropic.com"
    );
}

#[test]
fn organisation_limits_bind_lower_layers() {
    let managed = (Some("managed.toml"), "[org]\ndisable_bypass_mode = true\n");
    let bypass = (None, "permissions.mode = \"bypass\"\n");
    assert_eq!(
        error(&[managed, bypass]),
        "command line: permissions.mode: mode `bypass` is not allowed by the organisation \
         (org.disable_bypass_mode)"
    );

    let managed = (Some("managed.toml"), "[org]\nallowed_modes = [\"plan\"]\n");
    let auto = (Some("user.toml"), "permissions.mode = \"auto\"\n");
    assert!(error(&[managed, auto]).contains("(org.allowed_modes = [\"plan\"])"));
    let plan = (Some("user.toml"), "permissions.mode = \"plan\"\n");
    let settings = resolve_texts(&[managed, plan]).unwrap();
    assert_eq!(settings.permissions.mode, PermissionMode::Plan);

    let managed = (Some("managed.toml"), "[org]\nrequire_sandbox = true\n");
    let off = (
        Some("project.toml"),
        "[sandbox]\nfail_if_unavailable = false\n",
    );
    assert_eq!(
        error(&[managed, off]),
        "project.toml: sandbox.fail_if_unavailable: must stay true: the organisation sets \
         org.require_sandbox"
    );
}

#[test]
fn an_mcp_server_is_a_program_or_an_address_and_its_keys_fit_which() {
    let settings = resolve_texts(&[(
        Some("u.toml"),
        "[mcp.servers.web]\nurl = \"https://mcp.example/mcp\"\n\
         headers = { Authorization = \"Bearer ${TOKEN}\" }\n",
    )])
    .unwrap();
    let web = &settings.mcp.servers["web"];
    assert_eq!(web.url.as_deref(), Some("https://mcp.example/mcp"));
    assert_eq!(web.headers["Authorization"], "Bearer ${TOKEN}");
    let refused = [
        ("url = \"https://a.example\"\ncommand = \"x\"", "not both"),
        ("args = [\"x\"]", "required"),
        ("url = \"ftp://a.example\"", "http://"),
        ("url = \"https://a.example\"\nargs = [\"x\"]", "args"),
        ("url = \"https://a.example\"\ncwd = \"/\"", "cwd"),
        ("command = \"x\"\nheaders = { A = \"b\" }", "headers"),
        (
            "url = \"https://a.example\"\nheaders = { \"A B\" = \"c\" }",
            "header's name",
        ),
        ("command = \"x\"\nclient_id = \"c\"", "at a url"),
        (
            "url = \"https://a.example\"\nclient_secret_env = \"S\"",
            "no client_id",
        ),
    ];
    for (body, says) in refused {
        let text = format!("[mcp.servers.s]\n{body}\n");
        let message = error(&[(Some("u.toml"), &text)]);
        assert!(message.contains(says), "{body}: {message}");
    }
    // A listing shows a header that names its variables, not one written out.
    let written = resolve_texts(&[(
        Some("u.toml"),
        "[mcp.servers.w]\nurl = \"https://a.example\"\nheaders = { X-Key = \"literal-secret\" }\n",
    )])
    .unwrap();
    let shown = serde_json::to_string(&written.mcp.servers["w"]).unwrap();
    assert!(!shown.contains("literal-secret"), "{shown}");
    assert!(serde_json::to_string(web).unwrap().contains("${TOKEN}"));
}

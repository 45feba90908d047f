//! What an untrusted project may do with each key of the settings: the one annotation the
//! gate, the reports and the reference docs all read.

use crate::raw::{
    RawBudgets, RawContext, RawContextShares, RawGlobTool, RawGrepTool, RawManifest, RawMcp,
    RawModel, RawPermissions, RawReadTool, RawSandbox, RawSandboxEnv, RawSandboxFilesystem,
    RawSandboxLimits, RawSandboxNetwork, RawSettings, RawSkills, RawTools, RawWriteTool,
};
use crate::settings::{
    Budgets, Context, ContextShares, GlobTool, GrepTool, ManifestRuns, Mcp, Model, Permissions,
    ReadTool, Sandbox, SandboxEnv, SandboxFilesystem, SandboxLimits, SandboxNetwork, Settings,
    Skills, Tools, WriteTool,
};

use super::gate::gate_table;

gate_table!(RawSettings => Settings {
    trusted_projects: UserOnly = "projects trusted without asking",
    permissions: Table = "permissions",
    sandbox: Table = "the sandbox",
    tools: Table = "the built-in tools",
    model: Table = "the model and where requests go",
    budgets: Table = "budgets",
    context: Table = "the context window",
    skills: Table = "skills",
    manifest: Table = "manifest runs",
    mcp: Table = "MCP servers",
    hooks: Ignored = "a hook: a command warden runs as you at points of a session",
    org: ManagedOnly = "the organisation's limits",
});

gate_table!(RawPermissions => Permissions {
    mode: StricterMode = "the permission mode: how much runs without asking",
    allow: Ignored = "a rule that runs what it matches without asking",
    ask: AsksOnly = "a rule that makes what it matches ask",
    deny: Adds = "a rule that refuses what it matches",
    protected_paths: Adds = "a path no tool or command may touch",
    risk: RaisesOnly = "a program's risk level",
    unmask: UserOnly = "a secret made readable",
});

gate_table!(RawSandbox => Sandbox {
    enabled: OnlyTrue = "whether commands run in the sandbox",
    fail_if_unavailable: OnlyTrue = "refusing to run commands unconfined when no sandbox works",
    require_landlock: OnlyTrue = "refusing to run commands without Landlock",
    backend: Ignored = "the sandbox backend",
    root_identity: UserOnly = "who commands are on the host when warden runs as root",
    unprivileged_id: UserOnly = "the host uid and gid commands run as when warden runs as root",
    profile: Ignored = "the sandbox profile (what commands may read and write)",
    filesystem: Table = "the sandbox's files",
    network: Table = "the sandbox's network",
    limits: Table = "commands' resource limits",
    env: Table = "commands' environment",
});

gate_table!(RawSandboxFilesystem => SandboxFilesystem {
    allow_read: Ignored = "a path commands and tools may read",
    deny_read: Adds = "a path commands may never read",
    allow_write: Ignored = "a path commands may write",
    deny_write: Adds = "a path commands may never write",
    home_toolchains: Ignored = "a directory of the home directory commands may read",
});

gate_table!(RawSandboxNetwork => SandboxNetwork {
    mode: StricterNetwork = "the network mode of commands",
    allowed_domains: Ignored = "a host commands may reach",
    denied_domains: Adds = "a host commands may never reach",
    block_private_ranges: OnlyTrue = "refusing private and cloud-metadata addresses",
});

gate_table!(RawSandboxLimits => SandboxLimits {
    timeout_seconds: Lower = "the time limit per command",
    memory_mb: Lower = "the memory limit per command",
    pids: Lower = "the process limit per command",
    cpu: Lower = "the CPU limit per command",
    disk_mb: Lower = "the disk limit per command",
    output_bytes: Lower = "the output kept per command",
    fallback: UserOnly = "per-process limits where no cgroup can hold the sandbox's",
});

gate_table!(RawSandboxEnv => SandboxEnv {
    allow: Subset = "variables passed from your environment into commands",
    set: Ignored = "a variable set in every command's environment",
});

gate_table!(RawTools => Tools {
    read: Table = "the read tool",
    glob: Table = "the glob tool",
    grep: Table = "the grep tool",
    write: Table = "the file-changing tools",
});

gate_table!(RawReadTool => ReadTool {
    deny: Adds = "a file pattern never read",
    page_lines: Lower = "lines per page",
    max_bytes: Lower = "bytes per page",
    max_line_chars: Lower = "characters per line",
});

gate_table!(RawGlobTool => GlobTool {
    max_results: Lower = "results returned",
    exclude: MaySet = "directories skipped",
});

gate_table!(RawGrepTool => GrepTool {
    max_hits: Lower = "results returned",
    max_line_chars: Lower = "characters per line",
    exclude: MaySet = "directories skipped",
});

gate_table!(RawWriteTool => WriteTool {
    max_bytes: Lower = "the largest file written",
});

gate_table!(RawModel => Model {
    default: Ignored = "the model used (and so where your key is sent)",
    providers: Ignored = "a model provider: its address and the variable its key comes from",
    prices: Ignored = "a model's price, which the cost budget counts",
    context_window: Ignored = "the model's context window",
});

gate_table!(RawMcp => Mcp {
    servers: Ignored = "an MCP server: a program warden starts and whose tools it offers",
});

gate_table!(RawBudgets => Budgets {
    max_tokens: Lower = "the token budget",
    max_cost_usd: Lower = "the cost budget",
    max_wall_seconds: Lower = "the time budget",
    max_tool_calls: Lower = "the tool-call budget",
    max_turns: Lower = "the turn budget",
});

gate_table!(RawContext => Context {
    shares: Table = "shares of the window",
    tool_output_tokens: MaySet = "tokens one tool result may take",
    window_tokens: MaySet = "the window warden plans for",
    tool_results_share: MaySet = "when tool results call for compaction",
    tool_results_count: MaySet = "when tool results call for compaction",
});

gate_table!(RawContextShares => ContextShares {
    rules: MaySet = "the rules' share",
    goal_state: MaySet = "the goal's share",
    tools_permissions: MaySet = "the tools' share",
    files_references: MaySet = "the files' share",
    recent_trace: MaySet = "the recent turns' share",
    summary: MaySet = "the summary's share",
});

gate_table!(RawSkills => Skills {
    enabled: OnlyFalse = "whether skills load at all",
    roots: Ignored = "a directory searched for skills",
    trusted_roots: UserOnly = "a skill directory loaded without approval",
    index_percent: MaySet = "the skill index's share of the window",
    auto_load_score: MaySet = "the score that loads a skill by itself",
});

gate_table!(RawManifest => ManifestRuns {
    credentials_file: UserOnly = "the file source-control credentials are read from",
    lease_seconds: Lower = "how long a killed run waits to be cleaned up",
    runs_dir: UserOnly = "where runs' directories are made and removed",
});

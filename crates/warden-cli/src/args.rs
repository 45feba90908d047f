//! The command-line grammar.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::Exit;

pub(crate) use hooks::HooksCommand;
pub(crate) use mcp::{CallOptions, McpCallArgs, McpCommand};

#[path = "args_hooks.rs"]
mod hooks;
#[path = "args_mcp.rs"]
mod mcp;

/// warden: a runtime that lets a model read, edit and run code, with every boundary enforced.
#[derive(Debug, Parser)]
#[command(
    name = "warden",
    version,
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// Run as if started in DIR (the project root is found from there).
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Honour the project's own settings files in full for this command, as if trusted.
    #[arg(long, global = true)]
    pub trust_project: bool,

    /// Accept a project root that is the home directory, `/` or an ancestor of the home
    /// directory (all of it would be the writable workspace).
    #[arg(long, global = true)]
    pub allow_home_workspace: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one tool through the registry and print its JSON result.
    Tool(ToolArgs),
    /// List the tools the model is offered, with their argument schemas.
    Tools(ToolsArgs),
    /// Inspect the trace of recorded tool events.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Show the resolved settings, the files they came from, or their JSON Schema.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Ask the policy engine what it would decide about an action, and why.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Put back the files a session's tools changed (all of it, or after turn N).
    Undo(UndoArgs),
    /// Run a command inside the sandbox: `warden exec [OPTIONS] -- PROGRAM [ARGS...]`.
    Exec(Box<ExecArgs>),
    /// Inspect the sandbox runtime.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Run the agent on a task: the model proposes, warden decides and runs.
    Run(Box<RunArgs>),
    /// List the agent runs saved in the trace.
    Sessions(SessionsArgs),
    /// Compact a saved run now: the model summarises its older part, identifiers kept.
    Compact(Box<CompactArgs>),
    /// What the next model call of a saved run would contain.
    #[command(subcommand)]
    Context(ContextCommand),
    /// Continue a saved run after a crash or a stop, optionally with a new prompt.
    Resume(Box<ResumeArgs>),
    /// Hand a saved run to another agent: all of it becomes the nine-section handoff summary,
    /// printed, and the run goes on from it.
    Handoff(Box<CompactArgs>),
    /// The skills found for this project: list, show, match a task, validate, approve.
    #[command(subcommand)]
    Skills(SkillsCommand),
    /// Sandbox manifests, a run's permission contract: validate, init, approve, run, reap.
    #[command(subcommand)]
    Manifest(ManifestCommand),
    /// Trust a project: show what its settings files would grant beyond yours, then ask. The
    /// answer is kept outside the project, bound to what the files grant. Exit 0 trusted, 1
    /// declined.
    Trust(TrustArgs),
    /// Stop trusting a project. Exit 0 when it was trusted, 1 when it was not.
    Untrust(UntrustArgs),
    /// The MCP servers of the settings: list them, their tools, or call one through the policy.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Lifecycle hooks (`[[hooks.EVENT]]`, Claude Code's shapes): list them, try them on a
    /// sample, import Claude Code's.
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// What a session did, from its trace: files read and changed, commands, connections,
    /// denials, approvals, skills, compactions — as text, JSON or Markdown.
    Audit(AuditArgs),
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The session (its id, or the start of it). Default: the latest.
    pub session: Option<String>,
    /// Every session active since this time (RFC 3339) or this long ago (`2h`, `3days`).
    #[arg(long, conflicts_with_all = ["session", "all"])]
    pub since: Option<String>,
    /// Every session in the trace.
    #[arg(long, conflicts_with = "session")]
    pub all: bool,
    /// `text` (default), `json` (the contract, see docs/audit.md), `md`, or `html` (one
    /// self-contained file).
    #[arg(long, default_value = "text", value_parser = ["text", "json", "md", "html"])]
    pub format: String,
    /// Write the report to FILE (whole, or not at all) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The project (default: -C, else the current directory).
    pub dir: Option<PathBuf>,
    /// Trust without asking.
    #[arg(long)]
    pub yes: bool,
    /// Print JSON: the project, what it would grant, and whether it is trusted.
    #[arg(long)]
    pub json: bool,
    /// List the projects trusted (and declined) instead.
    #[arg(long, conflicts_with_all = ["dir", "yes"])]
    pub list: bool,
}

#[derive(Debug, Args)]
pub struct UntrustArgs {
    /// The project (default: -C, else the current directory).
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ManifestCommand {
    /// Check a manifest: its schema, then preflight (built-in rules, and the organisation's
    /// policy when there is one). Exit 0 when valid, 1 when not, 2 on usage errors.
    Validate {
        file: PathBuf,
        /// A TOML file whose `[org]` table is the organisation's policy (default: the `[org]`
        /// table of /etc/warden/managed.toml, when it has one).
        #[arg(long, value_name = "FILE")]
        org_policy: Option<PathBuf>,
        /// Print JSON: whether it is valid, its digests, and every problem.
        #[arg(long)]
        json: bool,
    },
    /// Write a commented starting manifest for a kind of task.
    Init {
        /// explain, test-and-patch or create-pr.
        #[arg(long)]
        template: String,
        /// Where to write it (`-` for stdout).
        #[arg(long, short, default_value = "manifest.yaml")]
        output: PathBuf,
        /// Replace the file if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Record a person's approval of a manifest, bound to its content; prints the id its
    /// capabilities' `approval_ref` names.
    Approve {
        file: PathBuf,
        /// How long the approval holds, like 8h or 7days.
        #[arg(long, default_value = "24h")]
        ttl: String,
        /// Who approves (default: $USER).
        #[arg(long)]
        by: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a command under a manifest: `warden manifest run FILE [OPTIONS] -- PROGRAM [ARGS...]`.
    /// Writes the execution receipt; exits with the command's status, 124 when the duration
    /// ran out, 125 when the manifest is refused, 126 when the sandbox or the workspace could
    /// not be set up, 121 when cleanup failed and the run is quarantined.
    Run(Box<ManifestRunArgs>),
    /// Cancel and clean up runs whose lease ran out (their warden was killed or hangs), retry
    /// quarantined ones, and remove artifacts kept past their time.
    Reap {
        /// Print JSON: what was done with each run.
        #[arg(long)]
        json: bool,
    },
    /// Answer a capability action waiting for a person's approval in a run.
    Answer {
        run_id: String,
        /// The request's number, as the run printed it.
        request: u32,
        /// Let it go.
        #[arg(long, conflicts_with = "deny", required_unless_present = "deny")]
        allow: bool,
        /// Refuse it.
        #[arg(long)]
        deny: bool,
    },
    /// Print the JSON Schema of the manifest.
    Schema,
}

#[derive(Debug, Args)]
pub struct ManifestRunArgs {
    pub file: PathBuf,
    /// A TOML file whose `[org]` table is the organisation's policy.
    #[arg(long, value_name = "FILE")]
    pub org_policy: Option<PathBuf>,
    /// Observe the limits instead of enforcing them, and report what was used against what
    /// was declared (forbidden paths and credentials stay enforced).
    #[arg(long)]
    pub report_only: bool,
    /// Also write the receipt here.
    #[arg(long, value_name = "PATH")]
    pub receipt: Option<PathBuf>,
    /// Print the receipt as JSON on stdout (the command's output is then captured, not
    /// shown).
    #[arg(long)]
    pub json: bool,
    /// The lease, in seconds (default `[manifest] lease_seconds`).
    #[arg(long, value_name = "SECONDS")]
    pub lease_seconds: Option<u64>,
    /// The program and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Every skill found, in precedence order, and the problems found.
    List {
        /// Print JSON: the skills and the problems.
        #[arg(long)]
        json: bool,
    },
    /// One skill: its metadata and its instructions.
    Show {
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rank the skills for a task, with scores and why.
    Match {
        goal: String,
        /// A file the task touches, relative to the project root (repeatable).
        #[arg(long = "file", value_name = "PATH")]
        files: Vec<String>,
        /// Print JSON: the ranked skills with their scores, and the problems.
        #[arg(long)]
        json: bool,
    },
    /// Lint a skill directory: frontmatter, name and directory, referenced files, scripts.
    Validate {
        dir: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a skill of an untrusted root ahead of a run, pinned to the hash of its files.
    Approve { name: String },
}

/// What `warden run` and `warden resume` share.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The model, as PROVIDER/MODEL (openai/gpt-4.1, anthropic/claude-sonnet-4-5,
    /// ollama/qwen2.5-coder), or a [model.providers] name.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// The provider's base URL (an OpenAI-compatible endpoint for any other provider name).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The permission mode: plan, default, accept-edits, auto or bypass.
    #[arg(long)]
    pub mode: Option<String>,
    /// An allow rule for this run, like 'Bash(npm test *)' (repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    pub allow: Vec<String>,
    /// A deny rule for this run (repeatable).
    #[arg(long = "deny", value_name = "RULE")]
    pub deny: Vec<String>,
    /// What to answer when approval is needed and there is no terminal to ask: deny or allow.
    /// Never overrides a deny or widens the sandbox.
    #[arg(long, value_name = "ANSWER", value_parser = ["deny", "allow"])]
    pub on_ask: Option<String>,
    /// Stop after this many model turns.
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u64>,
    /// Stop when the run has cost this much, in USD (from [model.prices]).
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// The model's window in tokens, overriding what is configured (small local models).
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// A constraint for the whole session, kept in every model call and never cut (repeatable).
    #[arg(long = "pin", value_name = "TEXT")]
    pub pin: Vec<String>,
    /// Stay for more prompts after the task (/compact, /pin, /context, /help; /exit to leave).
    /// The default on a terminal when no task is given.
    #[arg(short = 'i', long)]
    pub interactive: bool,
    /// Print JSON lines of events instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
    /// Run the session under a sandbox manifest: its worktree is the workspace, every shell
    /// command runs in the manifest's sandbox and network, its budgets bound the session, and
    /// its receipt is written at the end.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// The task. Without it: an interactive session on a terminal, else the task is read from
    /// standard input.
    pub prompt: Option<String>,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
    /// The session to continue.
    pub session: String,
    /// What to add before going on.
    pub prompt: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
    /// The saved run.
    pub session: String,
}

#[derive(Debug, Subcommand)]
pub enum ContextCommand {
    /// Per layer: its budget, the tokens it takes, what was kept, trimmed or dropped, and why.
    Show(ContextShowArgs),
}

#[derive(Debug, Args)]
pub struct ContextShowArgs {
    /// The saved run.
    pub session: String,
    /// The model's window in tokens, overriding what is configured.
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// Also list every item of the conversation: what became of it, and its score.
    #[arg(long)]
    pub items: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The session (default: the most recent one).
    pub session: Option<String>,
    /// Undo only the changes made after this turn.
    #[arg(long = "to", value_name = "TURN")]
    pub to: Option<u64>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Show which sandbox layers work on this machine, and why not.
    Doctor,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The writable root and working directory (default: -C, else the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// read-only, workspace-write (default) or full-isolated.
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<String>,
    /// Make PATH readable (repeatable).
    #[arg(long = "allow-read", value_name = "PATH")]
    pub allow_read: Vec<PathBuf>,
    /// Mount SRC at DST, read-only unless `:rw` (repeatable).
    #[arg(long = "mount", value_name = "SRC:DST[:ro|rw]")]
    pub mounts: Vec<String>,
    /// Make PATH writable (repeatable).
    #[arg(long = "allow-write", value_name = "PATH")]
    pub allow_write: Vec<PathBuf>,
    /// Hide PATH (repeatable).
    #[arg(long = "deny-read", value_name = "PATH")]
    pub deny_read: Vec<PathBuf>,
    /// Keep PATH read-only (repeatable).
    #[arg(long = "deny-write", value_name = "PATH")]
    pub deny_write: Vec<PathBuf>,
    /// Network: off (default), on, or allowlist (only through warden's egress proxy, to the
    /// hosts allowed).
    #[arg(long, value_name = "off|on|allowlist", value_parser = ["off", "on", "allowlist"])]
    pub net: Option<String>,
    /// With --net allowlist: a host the command may reach, HOST or HOST:PORT, `*.example.com`
    /// for its subdomains (repeatable; ports 80 and 443 unless given).
    #[arg(long = "allow-host", value_name = "HOST[:PORT]")]
    pub allow_host: Vec<String>,
    /// With --net allowlist: a host never reached, whatever allows it (repeatable).
    #[arg(long = "deny-host", value_name = "HOST[:PORT]")]
    pub deny_host: Vec<String>,
    /// Pass NAME (from this environment) or set NAME=VALUE (repeatable).
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// Kill everything after SECONDS (exit 124).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Memory limit in MB.
    #[arg(long, value_name = "MB")]
    pub memory: Option<u64>,
    /// Process limit.
    #[arg(long, value_name = "N")]
    pub pids: Option<u64>,
    /// CPU quota in CPUs.
    #[arg(long, value_name = "N")]
    pub cpus: Option<f64>,
    /// CPU time limit in seconds.
    #[arg(long = "cpu-seconds", value_name = "N")]
    pub cpu_seconds: Option<u64>,
    /// Size of the private /tmp, and the largest file written, in MB.
    #[arg(long, value_name = "MB")]
    pub disk: Option<u64>,
    /// Bytes of stdout and of stderr kept with --json.
    #[arg(long = "output-limit", value_name = "BYTES")]
    pub output_limit: Option<u64>,
    /// Extra settings files (repeatable).
    #[arg(long = "settings", value_name = "FILE")]
    pub settings: Vec<PathBuf>,
    /// native (default), bwrap or none.
    #[arg(long, value_name = "BACKEND", value_parser = ["native", "bwrap", "none"])]
    pub backend: Option<String>,
    /// Run without any sandbox (prints a warning every time).
    #[arg(long = "no-sandbox")]
    pub no_sandbox: bool,
    /// Run the command in a warm sandbox, as a session's commands run: a helper that builds the
    /// sandbox once and a cell forked from it for the command (native backend; where a warm
    /// sandbox cannot serve the command, its own helper runs it).
    #[arg(long)]
    pub warm: bool,
    /// Capture the streams and print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Decide one action: TOOL is bash, read, write, edit, glob, grep, fetch or a tool name.
    Check(PolicyArgs),
    /// Show every layer consulted, in order, with what each said.
    Explain(PolicyArgs),
}

#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// Extra settings files, applied above the project's (repeatable).
    #[arg(long = "settings", value_name = "FILE")]
    pub settings: Vec<PathBuf>,
    /// The permission mode: plan, default, accept-edits, auto or bypass.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// bash, read, write, edit, glob, grep, fetch, or a custom tool's name.
    pub tool: String,
    /// The command string, path or URL.
    pub target: String,
}

#[derive(Debug, Args)]
pub struct ToolArgs {
    /// The tool's name, e.g. readFile, glob, grep.
    pub name: String,
    #[command(flatten)]
    pub call: CallOptions,
}

#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Print every tool's name, description and schema as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// List recorded sessions, newest first.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show every event of one session.
    Show {
        /// The session id (see `warden trace list`).
        session: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print every event of one session as JSON lines.
    Export {
        /// The session id (see `warden trace list`).
        session: String,
    },
    /// Every connection a session's commands made through the egress proxy, and the decisions.
    Network {
        /// The session id (`warden exec --json` prints it under `network`).
        session: String,
        /// Print JSON lines.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the resolved settings.
    Show {
        /// Print JSON instead of TOML-like text.
        #[arg(long)]
        json: bool,
    },
    /// Print the JSON Schema of the settings files.
    Schema,
    /// Forget a remembered rule of this project (as `warden config show` lists it). Exit 0
    /// when it was remembered, 1 when it was not.
    Forget {
        /// The rule, exactly as listed, like 'Bash(npm test *)'.
        rule: String,
    },
}

/// Prints a parse error as one line (help and version print in full) and picks the exit.
pub(crate) fn report_clap_error(err: &clap::Error) -> Exit {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            Exit::Success
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            Exit::Usage
        }
        _ => {
            let rendered = err.render().to_string();
            let first = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            let first = first.trim_start_matches("error: ");
            eprintln!("warden: error: {first} (see 'warden --help')");
            Exit::Usage
        }
    }
}

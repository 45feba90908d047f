//! The arguments of `warden mcp` and of one tool call.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// The servers in the settings and how each is started.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start a server and list its tools as warden offers them (`mcp__SERVER__TOOL`).
    Tools {
        /// The server's name in the settings.
        server: String,
        /// Print each tool's definition as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool of a server through the policy and the trace, as `warden tool` does.
    Call(McpCallArgs),
    /// Start a server and list its resources and prompts.
    Resources {
        /// The server's name in the settings.
        server: String,
        /// Print JSON: `{resources, prompts}`.
        #[arg(long)]
        json: bool,
    },
    /// Add a server to your settings: `warden mcp add NAME [--env K=V] [--env-var NAME] --
    /// COMMAND [ARGS...]`, or `warden mcp add NAME --url URL [--header 'Name: value']`.
    Add {
        /// Its name: letters, digits, `-` and `_`.
        name: String,
        /// A variable set by value (repeatable).
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// A variable passed from warden's environment by name (repeatable).
        #[arg(long = "env-var", value_name = "NAME")]
        env_vars: Vec<String>,
        /// A streamable HTTP server's address, instead of a program.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// A header sent to the --url server, `${NAME}` read from warden's environment when it
        /// is reached (repeatable): `--header 'Authorization: Bearer ${TOKEN}'`.
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// The program and its arguments.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove a server from your settings. Exit 1 when it was not there.
    Remove { name: String },
    /// Log in to a server at a url (OAuth): the address to authorize warden at is opened in a
    /// browser (or printed), and the answer comes back to warden on loopback. The tokens are
    /// kept in warden's data directory, readable by you only.
    Login {
        /// The server's name in the settings.
        server: String,
        /// Print the address instead of opening a browser.
        #[arg(long)]
        no_browser: bool,
        /// Where the browser cannot come back to this machine (over SSH, in a container):
        /// print the address, and read the address the browser ends on, pasted.
        #[arg(long)]
        paste: bool,
        /// Ask for this scope besides what the server asks (a server that refused a call for a
        /// missing scope names it).
        #[arg(long, value_name = "SCOPE")]
        scope: Option<String>,
    },
    /// Serve warden's own tools to another agent over MCP (standard input and output, or
    /// `--http`): each call through warden's policy, approvals, sandbox and trace, one session
    /// per connection.
    Serve {
        /// What to answer when the policy asks for approval and the client cannot ask its user:
        /// deny (default) or allow. Never overrides a deny or widens the sandbox.
        #[arg(long, value_name = "ANSWER", default_value = "deny", value_parser = ["deny", "allow"])]
        on_ask: String,
        /// The permission mode: plan, default, accept-edits, auto or bypass.
        #[arg(long)]
        mode: Option<String>,
        /// Serve streamable HTTP on this loopback address (127.0.0.1:PORT; port 0 picks one)
        /// instead of standard input and output. Every request needs the token printed at start
        /// (or the one in `WARDEN_MCP_TOKEN`).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
    /// Forget a server's login. Exit 1 when there was none.
    Logout {
        /// The server's name in the settings.
        server: String,
    },
    /// Show the servers of other agents' configurations (Claude Code's `.mcp.json` and
    /// `~/.claude.json`, Codex's `~/.codex/config.toml`, or FILE), then add them to your
    /// settings once confirmed.
    Import {
        /// Read only this file (`.json`: Claude Code's shape; `.toml`: Codex's).
        file: Option<PathBuf>,
        /// Add them without asking (for scripts).
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Args)]
pub struct McpCallArgs {
    /// The server's name in the settings.
    pub server: String,
    /// The tool's name as the server knows it.
    pub tool: String,
    #[command(flatten)]
    pub call: CallOptions,
    /// Print JSON: the result as `warden tool` prints it, which is what is printed either way.
    #[arg(long)]
    pub json: bool,
}

/// How one tool call is made and recorded: `warden tool` and `warden mcp call`.
#[derive(Debug, Args)]
pub struct CallOptions {
    /// The arguments as a JSON object; "-" reads them from standard input.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub args: String,
    /// Record the event in this session instead of a new one.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Do not record the event in the trace.
    #[arg(long)]
    pub no_trace: bool,
    /// What to answer when the policy asks for approval: deny (default) or allow. Never
    /// overrides a deny or widens the sandbox.
    #[arg(long, value_name = "ANSWER", default_value = "deny", value_parser = ["deny", "allow"])]
    pub on_ask: String,
}

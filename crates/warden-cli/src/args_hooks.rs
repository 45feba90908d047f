//! The arguments of `warden hooks`.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// The hooks of the settings, each with the file it came from.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the hooks of EVENT that match, on a sample of its input (no model, no tool runs),
    /// and print what they said together as JSON.
    Test {
        /// The event, as Claude Code names it (`PreToolUse`, `PostToolUse`, `Stop`, …).
        event: String,
        /// The event's own fields as JSON, in Claude Code's shape (`{"tool_name": "Bash",
        /// "tool_input": {"command": "rm -rf build"}}`).
        #[arg(long, default_value = "{}")]
        input: String,
    },
    /// Add the hooks of Claude Code's settings files (FILE, else `~/.claude/settings.json` and
    /// the project's `.claude/settings.json` and `.claude/settings.local.json`) to warden's
    /// settings: a project's to the project's `.warden/` files, the user's to yours. Hooks
    /// that are not commands are listed as not imported.
    Import {
        file: Option<PathBuf>,
        /// Add without asking.
        #[arg(long)]
        yes: bool,
    },
}

//! Shell analysis: a command string parsed with a real bash grammar, walked whole.
//!
//! [`analyze`] returns every simple command the string would run — at top level, in pipelines and
//! lists, in subshells and groups, in `$( )`, backticks and `<( )` wherever they appear, in
//! `bash -c` strings, `find -exec` and behind wrappers such as `sudo`, `timeout` or `xargs` — each
//! with its resolved argv, the paths it reads and writes, and flags. Anything that cannot be
//! resolved statically (a parse failure, `eval` of a non-literal, a variable as a command name) is
//! recorded as unknown, so the engine can refuse to auto-allow it.

mod annotate;
mod commands;
mod fast;
mod feeds;
mod limits;
mod programs;
mod runners;
mod walk;
mod words;

use serde::Serialize;

pub(crate) use commands::STDIN;
pub use walk::{analyze, analyze_by_grammar, in_common_subset};

/// Everything a command string would run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Analysis {
    /// Every simple command, nested ones included, in source order.
    pub commands: Vec<SimpleCommand>,
    /// Why the analysis is incomplete, if it is: each entry makes the whole string unknown.
    pub unknown: Vec<String>,
    /// Whether the string chains or pipes commands, redirects or substitutes.
    pub compound: bool,
}

impl Analysis {
    /// The command as the analysis understood it, for a person deciding on it: one line per
    /// program (with what it was found behind), then what it reads and writes, what it was
    /// flagged for, and what could not be known.
    pub fn summary(&self) -> String {
        let mut out = Vec::new();
        for cmd in self
            .commands
            .iter()
            .filter(|c| !c.wrapper && !c.program.is_empty())
        {
            let via = if cmd.via.is_empty() {
                String::new()
            } else {
                format!("  (inside {})", cmd.via.join(" → "))
            };
            out.push(format!("runs:   {}{via}", cmd.line()));
            let list = |what: &[String]| what.join(", ");
            if !cmd.reads.is_empty() {
                out.push(format!("  reads:  {}", list(&cmd.reads)));
            }
            let writes: Vec<String> = cmd
                .writes
                .iter()
                .map(|w| {
                    if cmd.redirected.contains(w) {
                        format!("{w} (redirected)")
                    } else {
                        w.clone()
                    }
                })
                .collect();
            if !writes.is_empty() {
                out.push(format!("  writes: {}", list(&writes)));
            }
            let f = &cmd.flags;
            let flags: Vec<&str> = [
                (f.network, "network"),
                (f.destructive, "destructive"),
                (f.privilege, "privilege"),
                (f.code_execution, "runs code"),
                (f.dangerous_env, "changes what programs run"),
                (f.stdin_script, "a script from standard input"),
                (
                    f.hidden_exec,
                    "runs a program through its options or configuration",
                ),
            ]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
            if !flags.is_empty() {
                out.push(format!("  flags:  {}", flags.join(", ")));
            }
        }
        for why in &self.unknown {
            out.push(format!("unknown: {why}"));
        }
        out.join("\n")
    }

    /// Whether anything could not be resolved.
    pub fn is_unknown(&self) -> bool {
        !self.unknown.is_empty() || self.commands.iter().any(|c| c.flags.unknown)
    }
}

/// One word of a command, as far as it can be known before running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Arg {
    /// The word with quotes and escapes removed; expansions kept as written (`$HOME`).
    pub text: String,
    /// Whether `text` is exactly what the shell would pass (no expansion left in it).
    pub literal: bool,
}

/// Properties of a simple command that raise its risk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::struct_excessive_bools)]
pub struct Flags {
    pub network: bool,
    pub destructive: bool,
    pub privilege: bool,
    pub code_execution: bool,
    /// An assignment to a variable that changes what programs run (`LD_PRELOAD`, `PATH`, …).
    pub dangerous_env: bool,
    /// A shell that reads its script from standard input (`… | sh`).
    pub stdin_script: bool,
    /// Execution smuggled in by configuration or options (`git -c core.pager=…`, `rg --pre`,
    /// `sed e`, `PAGER=…`): no allow rule on the command covers it.
    pub hidden_exec: bool,
    pub unknown: bool,
}

/// One simple command, with wrappers seen through.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SimpleCommand {
    /// The program as named: quotes, escapes and directories removed (`/bin/rm`, `\rm` → `rm`).
    pub program: String,
    /// The arguments after the program.
    pub args: Vec<Arg>,
    /// `NAME=value` assignments before the program (or alone).
    pub assignments: Vec<(String, String)>,
    /// Paths the command reads (arguments of read commands, `<` redirections).
    pub reads: Vec<String>,
    /// Paths the command writes, creates or deletes (redirections, `tee`, `cp` targets, …).
    pub writes: Vec<String>,
    /// The writes that come from redirections (`> out.txt`) rather than from the program.
    pub redirected: Vec<String>,
    /// What in its arguments, program text or environment makes a reader run code, in words
    /// (`awk program runs a command through system()`): the first is the reason of its risk.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub executes: Vec<String>,
    pub flags: Flags,
    /// Wrappers this command was found behind, outermost first (`sudo`, `timeout`, `bash -c`).
    pub via: Vec<String>,
    /// Whether this is the record of a wrapper whose inner commands are analysed separately.
    pub wrapper: bool,
}

impl SimpleCommand {
    /// The program and its arguments as one list of strings.
    pub fn argv(&self) -> Vec<&str> {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(|a| a.text.as_str()))
            .collect()
    }

    /// The argv joined by spaces, as rules match it.
    pub fn line(&self) -> String {
        self.argv().join(" ")
    }

    /// The arguments' texts.
    pub fn arg_texts(&self) -> impl Iterator<Item = &str> {
        self.args.iter().map(|a| a.text.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_names_each_program_what_it_reads_and_writes_and_its_flags() {
        let summary =
            analyze("timeout 5 cat notes.md | grep x > out.txt && curl -s https://x.test")
                .summary();
        assert!(
            summary.contains("runs:   cat notes.md  (inside timeout)"),
            "{summary}"
        );
        assert!(summary.contains("reads:  notes.md"), "{summary}");
        assert!(
            summary.contains("writes: out.txt (redirected)"),
            "{summary}"
        );
        assert!(
            summary.contains("runs:   curl -s https://x.test"),
            "{summary}"
        );
        assert!(summary.contains("flags:  network"), "{summary}");
        // What could not be known is said, not left out.
        let unknown = analyze("$(cat cmd.txt)").summary();
        assert!(unknown.contains("unknown"), "{unknown}");
    }
}

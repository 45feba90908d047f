//! Remembered approvals: a "for this session" or "always" answer becomes a rule on the analysed
//! argv prefix — never on the raw string, and never one that would allow too much.

use std::path::Path;

use crate::rules::{Anchors, escape_glob};
use crate::shell::{Analysis, SimpleCommand};

/// Programs whose name alone says nothing about what they will do.
const TOO_BROAD: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "fish", "python", "python2", "python3", "node", "nodejs",
    "perl", "ruby", "php", "deno", "bun", "git", "sudo", "su", "doas", "npx", "pnpx", "bunx",
    "env", "eval", "exec", "xargs", "command", "builtin", "timeout", "nice", "nohup", "time",
    "watch", "find", "awk", "sed", "docker", "kubectl", "ssh", "curl", "wget", "rm", "mv", "chmod",
    "chown", "dd",
];

/// Programs whose first argument is the subcommand that says what they do.
const WITH_SUBCOMMAND: &[&str] = &[
    "git",
    "npm",
    "yarn",
    "pnpm",
    "cargo",
    "go",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "docker",
    "kubectl",
    "make",
    "mvn",
    "gradle",
    "dotnet",
    "swift",
    "bundle",
    "rake",
    "gh",
    "terraform",
    "helm",
];

/// What an approval can remember: the narrowest rule that covers the call, and a wider one
/// offered only as an explicit second choice, or the wider one a person might expect and why it
/// is not offered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Remembered {
    /// What "session" and "always" remember; `None` when no rule narrow enough exists.
    pub rule: Option<String>,
    pub wider: Option<Wider>,
}

/// The second choice of an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wider {
    /// A wider rule the person may pick instead.
    Offered(String),
    /// Broader than the call's risk allows: never remembered, and why.
    Refused { rule: String, why: String },
}

/// The `Bash(…)` rules that remember an approval of `analysis`, one per command it runs; `None`
/// when any part would need a rule broader than is safe to offer.
pub fn remembered_rule(analysis: &Analysis) -> Option<Vec<String>> {
    if analysis.is_unknown() || analysis.commands.is_empty() {
        return None;
    }
    let mut rules = Vec::new();
    for cmd in analysis.commands.iter().filter(|c| !c.program.is_empty()) {
        let rule = prefix_rule(cmd)?;
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    Some(rules)
}

/// What an approval of a command can remember: one rule for the whole command (a compound
/// command is approved once), and the program-wide rule as the refused second choice where the
/// command's arguments or the program make it too broad.
pub fn remembered_command(analysis: &Analysis) -> Remembered {
    let rule = remembered_rule(analysis)
        .filter(|rules| rules.len() == 1)
        .and_then(|mut rules| rules.pop());
    let commands: Vec<&SimpleCommand> = analysis
        .commands
        .iter()
        .filter(|c| !c.program.is_empty())
        .collect();
    let wider = match commands.as_slice() {
        [cmd] if !analysis.is_unknown() => wider_command(cmd, rule.as_deref()),
        _ => None,
    };
    Remembered { rule, wider }
}

fn wider_command(cmd: &SimpleCommand, narrow: Option<&str>) -> Option<Wider> {
    let program = cmd.program.as_str();
    if program.contains(['/', '*', '(', ')']) {
        return None;
    }
    let whole = format!("{program} *");
    let subcommand = cmd
        .args
        .iter()
        .find(|a| !a.text.starts_with('-'))
        .filter(|a| a.literal && !a.text.contains(['*', '(', ')']))
        .map(|a| a.text.as_str());
    let candidate = match subcommand {
        Some(sub) if WITH_SUBCOMMAND.contains(&program) && narrow.is_none() => {
            format!("{program} {sub} *")
        }
        _ => whole.clone(),
    };
    if let Some(path) = cmd.reads.iter().chain(&cmd.writes).find(|p| beyond(p)) {
        return Some(Wider::Refused {
            rule: format!("Bash({candidate})"),
            why: format!(
                "{program} reaches past the workspace here ({path}); that rule would let it reach \
                 any path"
            ),
        });
    }
    if narrow == Some(&format!("Bash({whole})")) {
        return None;
    }
    too_broad_command(&candidate).map(|why| Wider::Refused {
        rule: format!("Bash({candidate})"),
        why,
    })
}

/// Why a `Bash(…)` pattern allows more than a remembered approval may, or `None`.
pub(crate) fn too_broad_command(pattern: &str) -> Option<String> {
    let words: Vec<&str> = pattern.split_whitespace().collect();
    let Some(first) = words.first() else {
        return Some("it names no program".to_owned());
    };
    if first.contains('*') {
        return Some("it matches any program".to_owned());
    }
    if !pattern.contains('*') {
        // One exact command.
        return None;
    }
    let program = first.rsplit('/').next().unwrap_or(first);
    if WITH_SUBCOMMAND.contains(&program) {
        let named = words
            .get(1)
            .filter(|sub| !sub.contains('*') && !sub.starts_with('-'));
        return match named {
            None => Some(format!(
                "{program}'s subcommands do different things; a rule names one \
                 ({program} SUBCOMMAND *)"
            )),
            Some(sub) if runs_anything(program, sub) => {
                Some(format!("`{program} {sub}` runs whatever it is given"))
            }
            Some(_) => None,
        };
    }
    TOO_BROAD.contains(&program).then(|| {
        format!(
            "{program} runs, reads or changes whatever its arguments say; only the exact \
             command can be remembered"
        )
    })
}

/// Whether `PROGRAM SUB` runs whatever code its arguments name: `npx`-like subcommands and
/// git's configuration (`cargo run` and `npm run` run the project's own code and scripts).
fn runs_anything(program: &str, sub: &str) -> bool {
    match sub {
        "run" => !matches!(program, "cargo" | "npm" | "yarn" | "pnpm" | "make"),
        "exec" | "x" | "dlx" | "-c" | "eval" => true,
        "config" | "alias" => program == "git",
        _ => false,
    }
}

fn prefix_rule(cmd: &SimpleCommand) -> Option<String> {
    let program = cmd.program.as_str();
    if program.contains('/') {
        return None;
    }
    // A command that reaches past the workspace (an absolute path, the home directory, a
    // variable, `..`) is remembered as itself: `cat ~/Private/x` approved once for the session
    // must not approve every `cat` of anything.
    if cmd.reads.iter().chain(&cmd.writes).any(|p| beyond(p)) {
        return exact_rule(cmd);
    }
    if WITH_SUBCOMMAND.contains(&program) {
        let sub = cmd.args.iter().find(|a| !a.text.starts_with('-'))?;
        if !sub.literal || sub.text.contains(['*', '(', ')']) || runs_anything(program, &sub.text) {
            return None;
        }
        return Some(format!("Bash({program} {} *)", sub.text));
    }
    if TOO_BROAD.contains(&program) {
        return None;
    }
    Some(format!("Bash({program} *)"))
}

/// Whether `path` may name something outside the workspace, as written.
fn beyond(path: &str) -> bool {
    path.starts_with('/')
        || path.starts_with('~')
        || path.contains('$')
        || path.split('/').any(|part| part == "..")
}

/// The rule of exactly this command: its argv, every word literal and without a `*` (which a
/// rule would read as "anything"); `None` when it cannot be written so.
fn exact_rule(cmd: &SimpleCommand) -> Option<String> {
    let literal = cmd
        .args
        .iter()
        .all(|a| !a.text.contains(['*', '(', ')']) && !a.text.is_empty());
    (literal && !cmd.program.contains(['*', '(', ')'])).then(|| format!("Bash({})", cmd.line()))
}

/// A path rule's specifier for exactly `path` (absolute, clean): from the project root (`/…`),
/// the home directory (`~/…`) or the file system's root (`//…`), its glob characters escaped;
/// `None` for a name a rule cannot spell (not UTF-8, control characters).
pub(crate) fn path_spec(path: &Path, anchors: &Anchors) -> Option<String> {
    let text = path.to_str()?;
    if text.chars().any(char::is_control) || !path.is_absolute() {
        return None;
    }
    let below = |root: &Path| {
        path.strip_prefix(root)
            .ok()
            .and_then(Path::to_str)
            .map(escape_glob)
    };
    if let Some(rest) = below(&anchors.project_root) {
        return Some(format!("/{rest}"));
    }
    if let Some(rest) = below(&anchors.home) {
        return Some(if rest.is_empty() {
            "~".to_owned()
        } else {
            format!("~/{rest}")
        });
    }
    Some(format!("/{}", escape_glob(text)))
}

/// Why a rule over `dir` and everything below it allows more than a remembered approval may,
/// or `None`.
pub(crate) fn too_broad_place(dir: &Path, whole: bool, anchors: &Anchors) -> Option<String> {
    let shown = dir.display();
    let depth = dir
        .components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .count();
    if depth == 0 {
        return Some("it covers the whole file system".to_owned());
    }
    if depth == 1 {
        return Some(format!("it covers all of {shown}, a top-level directory"));
    }
    if anchors.home.starts_with(dir) {
        return Some(if dir == anchors.home {
            "it covers the whole home directory".to_owned()
        } else {
            format!("it covers {shown}, which holds the home directory")
        });
    }
    if anchors.project_root.starts_with(dir) {
        if dir != anchors.project_root {
            return Some(format!(
                "it covers {shown}, which holds the workspace and what is beside it"
            ));
        }
        if whole {
            return Some(
                "it covers the whole workspace (the accept-edits mode lets the file tools edit \
                 it)"
                .to_owned(),
            );
        }
    }
    None
}

/// The rule of a file tool's call on `path` and its directory as the wider choice.
pub(crate) fn remembered_path(tool: &str, path: &Path, anchors: &Anchors) -> Remembered {
    let Some(spec) = path_spec(path, anchors) else {
        return Remembered::default();
    };
    let rule = Some(format!("{tool}({spec})"));
    let wider = path.parent().and_then(|dir| {
        let spec = path_spec(dir, anchors)?;
        let candidate = if spec.ends_with('/') {
            format!("{tool}({spec}**)")
        } else {
            format!("{tool}({spec}/**)")
        };
        Some(match too_broad_place(dir, true, anchors) {
            Some(why) => Wider::Refused {
                rule: candidate,
                why,
            },
            None => Wider::Offered(candidate),
        })
    });
    Remembered { rule, wider }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::analyze;

    #[test]
    fn rules_are_argv_prefixes_and_never_too_broad() {
        assert_eq!(
            remembered_rule(&analyze("npm test -- --watch")),
            Some(vec!["Bash(npm test *)".to_owned()])
        );
        assert_eq!(
            remembered_rule(&analyze("\"cargo\" build --release")),
            Some(vec!["Bash(cargo build *)".to_owned()])
        );
        assert_eq!(
            remembered_rule(&analyze("pytest -x tests/")),
            Some(vec!["Bash(pytest *)".to_owned()])
        );
        // Past the workspace, the command itself: never `cat *`, `head *`, `npm run *` for it.
        for (command, rule) in [
            ("cat $HOME/Private/x.txt", "Bash(cat $HOME/Private/x.txt)"),
            ("cat ~/Private/x.txt", "Bash(cat ~/Private/x.txt)"),
            ("head -n 5 /etc/hosts", "Bash(head -n 5 /etc/hosts)"),
            ("cat ../sibling/notes.md", "Bash(cat ../sibling/notes.md)"),
            ("wc -l src/main.rs", "Bash(wc *)"),
        ] {
            assert_eq!(
                remembered_rule(&analyze(command)),
                Some(vec![rule.to_owned()]),
                "{command}"
            );
        }
        for broad in [
            "bash -c 'ls'",
            "python3 x.py",
            "node -e 1",
            "git",
            "sudo ls",
            "npx prettier",
            "env FOO=1 ls",
            "eval $X",
        ] {
            assert_eq!(remembered_rule(&analyze(broad)), None, "{broad}");
        }
    }
}

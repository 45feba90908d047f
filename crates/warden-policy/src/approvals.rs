//! Remembered approvals: a "for this session" or "always" answer becomes a rule on the analysed
//! argv prefix — never on the raw string, and never one that would allow too much.

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
        if !sub.literal
            || matches!(sub.text.as_str(), "exec" | "run" | "x" | "dlx" | "-c")
                && program != "cargo"
                && program != "npm"
        {
            return None;
        }
        if program == "git" && matches!(sub.text.as_str(), "-c" | "config") {
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

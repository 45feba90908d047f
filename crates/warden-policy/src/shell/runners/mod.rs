//! Readers that run code or write files, given the right arguments, program text or
//! environment: `awk` with `system()` or a pipe, `sed` with `e` or a script from a file, `less
//! +!…`, `man -P`, `git --exec-path`, `tar --to-command`, … One entry a program in [`TABLE`],
//! each naming the construct it found in [`SimpleCommand::executes`]: the call is then at least
//! L3 with that reason (`risk::classify`), no allow rule on the command covers it, and what the
//! construct writes goes through the protected paths like any other write.

mod archives;
mod scripts;

use super::{Arg, SimpleCommand};
use archives::{tar, unzip, zip};
use scripts::{awk, sed};

type Check = fn(&mut SimpleCommand, &[Arg]);

/// What each program is looked at for. Adding a program is an entry here and its tests.
const TABLE: &[(&str, Check)] = &[
    ("awk", awk),
    ("gawk", awk),
    ("mawk", awk),
    ("nawk", awk),
    ("sed", sed),
    ("gsed", sed),
    ("less", less),
    ("man", man),
    ("git", git),
    ("tar", tar),
    ("bsdtar", tar),
    ("zip", zip),
    ("unzip", unzip),
    ("rsync", rsync),
    ("vim", vim),
    ("vi", vim),
    ("nvim", vim),
    ("view", vim),
    ("ex", vim),
    ("make", make),
    ("gmake", make),
    ("shopt", shell_options),
    ("bash", shell_options),
];

/// Looks at `cmd` with its program's entry, if it has one.
pub(super) fn check(cmd: &mut SimpleCommand) {
    pager_environment(cmd);
    sets_a_variable(cmd);
    if let Some((_, check)) = TABLE.iter().find(|(name, _)| *name == cmd.program) {
        let args = cmd.args.clone();
        check(cmd, &args);
    }
}

/// `cmd` runs code through `why`.
fn runs(cmd: &mut SimpleCommand, why: &str) {
    cmd.flags.code_execution = true;
    cmd.flags.hidden_exec = true;
    if !cmd.executes.iter().any(|w| w == why) {
        cmd.executes.push(why.to_owned());
    }
}

fn writes(cmd: &mut SimpleCommand, path: &str) {
    if !path.is_empty() && !cmd.writes.iter().any(|w| w == path) {
        cmd.writes.push(path.to_owned());
    }
}

fn reads(cmd: &mut SimpleCommand, path: &str) {
    if !path.is_empty() && !cmd.reads.iter().any(|r| r == path) {
        cmd.reads.push(path.to_owned());
    }
}

/// A long option as given: alone (`--file`, its value the next word when it takes one) or
/// with its value (`--file=x`).
#[derive(Debug, Clone, Copy)]
pub(super) enum Long<'t> {
    Alone,
    With(&'t str),
}

impl<'t> Long<'t> {
    /// The value given with `=`, if any.
    pub(super) fn value(self) -> Option<&'t str> {
        match self {
            Self::Alone => None,
            Self::With(value) => Some(value),
        }
    }
}

/// `text` as GNU's getopt reads a long option: `--NAME` or `--NAME=VALUE`, where NAME may be
/// any prefix of `full` (an unambiguous abbreviation is accepted: `--fil` for `--file`).
fn long<'t>(text: &'t str, full: &str) -> Option<Long<'t>> {
    let rest = text.strip_prefix("--")?;
    let (name, value) = match rest.split_once('=') {
        Some((name, value)) => (name, Long::With(value)),
        None => (rest, Long::Alone),
    };
    (!name.is_empty() && full.trim_start_matches('-').starts_with(name)).then_some(value)
}

/// The value of option `short` or `long_names` at `args[i]`: the next word (`-f FILE`, `--file
/// FILE`, `--fil FILE`), or joined (`-fFILE`, `--file=FILE`); the index after it.
fn option_at(
    args: &[Arg],
    i: usize,
    short: &[&str],
    long_names: &[&str],
) -> Option<(String, usize)> {
    let text = args[i].text.as_str();
    if short.contains(&text) {
        return Some((args.get(i + 1).map(|a| a.text.clone())?, i + 2));
    }
    for name in long_names {
        match long(text, name) {
            Some(Long::With(value)) => return Some((value.to_owned(), i + 1)),
            Some(Long::Alone) => return Some((args.get(i + 1).map(|a| a.text.clone())?, i + 2)),
            None => {}
        }
    }
    for name in short {
        if let Some(value) = text.strip_prefix(name).filter(|v| !v.is_empty()) {
            return Some((value.to_owned(), i + 1));
        }
    }
    None
}

/// What `LESS` (or `MORE`) in a command's environment gives `less`, wherever it runs it (as
/// `man`'s or git's pager too): a first command running a shell, a log file, key bindings.
fn pager_environment(cmd: &mut SimpleCommand) {
    let risky = cmd.assignments.iter().any(|(name, value)| {
        matches!(name.as_str(), "LESS" | "MORE")
            && (value.contains(['!', '|'])
                || value.contains("--log")
                || value.contains("--LOG")
                || value.contains("--lesskey")
                || value
                    .split_whitespace()
                    .filter(|w| !w.starts_with("--"))
                    .any(|w| w.contains(['k', 'o', 'O'])))
    });
    if risky {
        runs(
            cmd,
            "LESS in the environment gives less a shell command, a log file or key bindings",
        );
    }
}

/// Builtins that set a variable by name (`read NAME`, `printf -v NAME`, `: ${NAME:=…}`,
/// `declare NAME`): one that changes what runs, or what a glob matches, is set as an
/// assignment would be.
fn sets_a_variable(cmd: &mut SimpleCommand) {
    let args: Vec<&str> = cmd.args.iter().map(|a| a.text.as_str()).collect();
    let names: Vec<&str> = match cmd.program.as_str() {
        "printf" => args
            .windows(2)
            .filter(|w| w[0] == "-v")
            .map(|w| w[1])
            .chain(args.iter().filter_map(|a| a.strip_prefix("-v")))
            .map(|name| name.trim_matches(['\'', '"']))
            .collect(),
        // `declare -n r=GLOBIGNORE`: a reference names the variable after `=`.
        "declare" | "typeset" | "local"
            if args.iter().any(|a| a.starts_with('-') && a.contains('n')) =>
        {
            args.iter().flat_map(|a| a.split(['=', '+'])).collect()
        }
        "read" | "mapfile" | "readarray" | "getopts" => args
            .iter()
            .copied()
            .filter(|a| !a.starts_with('-'))
            .collect(),
        // `${NAME:=…}` in any command's words sets NAME.
        _ if args.iter().any(|a| a.contains(":=…}")) => args
            .iter()
            .filter_map(|a| a.split("${").nth(1))
            .map(|rest| rest.split([':', '=', '}']).next().unwrap_or_default())
            .collect(),
        ":" => args
            .iter()
            .filter_map(|a| a.split("${").nth(1))
            .map(|rest| {
                rest.split([':', '=', '}', '-', '+', '?'])
                    .next()
                    .unwrap_or_default()
            })
            .collect(),
        "let" | "declare" | "typeset" | "local" | "export" => args
            .iter()
            .map(|a| a.split(['=', '+']).next().unwrap_or_default())
            .collect(),
        _ => return,
    };
    let dangerous = names.iter().any(|name| {
        super::programs::DANGEROUS_ENV.contains(name) || name.starts_with("GIT_CONFIG")
    });
    if dangerous {
        runs(
            cmd,
            "sets a variable that changes which code runs or what a glob matches",
        );
    }
}

fn less(cmd: &mut SimpleCommand, args: &[Arg]) {
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text.as_str();
        if let Some(first) = text.strip_prefix('+') {
            if first.contains(['!', '|']) {
                runs(
                    cmd,
                    "less runs a shell command given as its first command (+!…)",
                );
            }
        } else if let Some((_, next)) = option_at(
            args,
            i,
            &["-k"],
            &["lesskey-file", "lesskey-src", "lesskey-content"],
        ) {
            runs(
                cmd,
                "less reads key bindings that can set LESSOPEN (-k, --lesskey-…)",
            );
            i = next;
            continue;
        } else if let Some((file, next)) =
            option_at(args, i, &["-o", "-O"], &["log-file", "LOG-FILE"])
        {
            writes(cmd, &file);
            i = next;
            continue;
        } else if let Some(cluster) = text.strip_prefix('-').filter(|c| !c.starts_with('-')) {
            // `-Sk FILE`, `-So FILE`: key bindings or a log file after other letters.
            for (at, c) in cluster.char_indices() {
                let rest = &cluster[at + c.len_utf8()..];
                let value = || {
                    if rest.is_empty() {
                        args.get(i + 1).map_or("", |a| a.text.as_str())
                    } else {
                        rest
                    }
                };
                match c {
                    'k' => runs(
                        cmd,
                        "less reads key bindings that can set LESSOPEN (-k, --lesskey-…)",
                    ),
                    'o' | 'O' => writes(cmd, value()),
                    // Letters that take a value: what follows is the value.
                    'b' | 'h' | 'j' | 'p' | 'P' | 't' | 'T' | 'x' | 'y' | 'z' | '#' => break,
                    _ => continue,
                }
                break;
            }
        }
        i += 1;
    }
}

fn man(cmd: &mut SimpleCommand, args: &[Arg]) {
    for (i, arg) in args.iter().enumerate() {
        if option_at(args, i, &["-P"], &["pager"]).is_some() {
            runs(cmd, "man runs the pager it is given (-P)");
        }
        if arg.text == "-H" || arg.text.starts_with("-H") || long(&arg.text, "html").is_some() {
            runs(cmd, "man runs a browser (-H, --html)");
        }
        if option_at(args, i, &["-C"], &["config-file"]).is_some() {
            runs(
                cmd,
                "man reads a configuration that can name its pager (-C)",
            );
        }
    }
}

fn git(cmd: &mut SimpleCommand, args: &[Arg]) {
    git_environment(cmd);
    git_options(cmd, args);
}

/// What git is given in its environment: another repository, configuration, a home, programs
/// to run, trace files to write.
fn git_environment(cmd: &mut SimpleCommand) {
    for (name, _) in &cmd.assignments.clone() {
        match name.as_str() {
            "GIT_DIR" | "GIT_WORK_TREE" | "GIT_COMMON_DIR" => runs(
                cmd,
                "git takes another repository's directory and its configuration (GIT_DIR)",
            ),
            n if n.starts_with("GIT_CONFIG") => runs(
                cmd,
                "git takes configuration from the environment (GIT_CONFIG_*)",
            ),
            "GIT_TEMPLATE_DIR" => runs(cmd, "git copies hooks from a template (GIT_TEMPLATE_DIR)"),
            "GIT_PROXY_COMMAND" | "GIT_SEQUENCE_EDITOR" => {
                runs(cmd, "git runs the program a variable names");
            }
            "HOME" | "XDG_CONFIG_HOME" => runs(
                cmd,
                "git reads its configuration from the home directory it is given",
            ),
            _ => {}
        }
    }
    // GIT_TRACE=/path and its kin write that file.
    for (name, value) in cmd.assignments.clone() {
        if name.starts_with("GIT_TRACE") && value.contains('/') {
            writes(cmd, &value);
        }
    }
}

/// git's global options, then what its subcommand reads or runs.
fn git_options(cmd: &mut SimpleCommand, args: &[Arg]) {
    let mut sub = None;
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text.as_str();
        if let Some(path) = long(text, "exec-path").and_then(Long::value) {
            if !path.is_empty() {
                runs(
                    cmd,
                    "git runs its commands from the directory it is given (--exec-path=…)",
                );
            }
        } else if option_at(args, i, &[], &["git-dir", "work-tree"]).is_some() {
            runs(
                cmd,
                "git takes another repository's directory and its configuration (--git-dir)",
            );
        } else if matches!(text, "-c" | "-C" | "--namespace" | "--config-env") {
            i += 1;
        } else if !text.starts_with('-') {
            sub = Some(i);
            break;
        }
        i += 1;
    }
    let Some(at) = sub else {
        return;
    };
    let rest = &args[at + 1..];
    match args[at].text.as_str() {
        "grep" => {
            if rest.iter().any(|a| {
                (a.text.starts_with("-O") && a.text.len() > 2)
                    || matches!(long(&a.text, "open-files-in-pager"), Some(Long::With(_)))
            }) {
                runs(
                    cmd,
                    "git grep opens the files in the program it is given (-O…)",
                );
            }
            // Outside the index, what it searches is read: the pathspecs after the pattern.
            let outside = rest.iter().any(|a| {
                long(&a.text, "no-index").is_some() || long(&a.text, "untracked").is_some()
            });
            if outside {
                let operands: Vec<&Arg> =
                    rest.iter().filter(|a| !a.text.starts_with('-')).collect();
                for arg in operands.iter().skip(1) {
                    reads(cmd, &arg.text);
                }
            }
        }

        "show" | "cat-file" | "log" | "blame" | "annotate" | "whatchanged" | "diff"
            if !rest.iter().any(|a| a.text == "--no-index") =>
        {
            // Any word may name a file (`git show HEAD .env`, `git blame .env`), an object's
            // path after its last `:` (`:.env`, `:0:.env`, `HEAD:.env`, `-L1,1:.env`), or the
            // value of an option that reads a file.
            let mut k = 0;
            while k < rest.len() {
                let text = rest[k].text.as_str();
                if let Some((file, next)) =
                    option_at(rest, k, &["-S"], &["contents", "ignore-revs-file"])
                {
                    reads(cmd, &file);
                    k = next;
                    continue;
                }
                if text != "--" && (!text.starts_with('-') || text.starts_with("-L")) {
                    match text.rsplit_once(':') {
                        Some((_, path)) if !path.is_empty() => reads(cmd, path),
                        Some(_) => {}
                        None if !text.starts_with('-') => reads(cmd, text),
                        None => {}
                    }
                }
                k += 1;
            }
        }
        "config" => {
            for k in 0..rest.len() {
                if let Some((file, _)) = option_at(rest, k, &["-f"], &["file", "blob"]) {
                    reads(cmd, &file);
                }
            }
        }
        "diff" | "log" | "show" | "blame" | "annotate" | "whatchanged" => {
            let no_index = rest.iter().any(|a| a.text == "--no-index");
            let mut paths = false;
            for arg in rest {
                if arg.text == "--" {
                    paths = true;
                } else if paths || (no_index && !arg.text.starts_with('-')) {
                    // What a diff compares, and a pathspec's files, are read.
                    reads(cmd, &arg.text);
                }
            }
        }
        _ => {}
    }
}

fn rsync(cmd: &mut SimpleCommand, args: &[Arg]) {
    for (i, _) in args.iter().enumerate() {
        if option_at(args, i, &["-e"], &["rsh", "rsync-path"]).is_some() {
            runs(cmd, "rsync runs the program it is given (-e, --rsync-path)");
        }
    }
}

fn vim(cmd: &mut SimpleCommand, args: &[Arg]) {
    for arg in args {
        let text = arg.text.as_str();
        let cluster = text
            .strip_prefix('-')
            .filter(|c| !c.starts_with('-'))
            .is_some_and(|c| c.contains(['c', 'S', 's', 'u', 'U', 'W', 'w', 'V', 'i', 'T']));
        let option = cluster || long(text, "cmd").is_some() || long(text, "startuptime").is_some();
        if text.starts_with('+') || option {
            runs(
                cmd,
                "the editor runs the commands or writes the files it is given (-c, +…, -S, -V)",
            );
        }
    }
}

fn make(cmd: &mut SimpleCommand, args: &[Arg]) {
    for (i, arg) in args.iter().enumerate() {
        let cluster_e =
            arg.text.starts_with('-') && !arg.text.starts_with("--") && arg.text.contains('E');
        let shell = ["SHELL", ".SHELLFLAGS", "MAKESHELL"].iter().any(|v| {
            arg.text.strip_prefix(v).is_some_and(|rest| {
                rest.trim_start_matches([':', '+', '?', '!', ' '])
                    .starts_with('=')
            })
        });
        if option_at(args, i, &["-E"], &["eval"]).is_some() || cluster_e || shell {
            runs(cmd, "make runs what its command line adds (--eval, SHELL=)");
        }
    }
}

/// `shopt -s dotglob`, `bash -O dotglob`, `extglob`: a glob then matches hidden files (`.env`)
/// or takes patterns the policy does not read; an option not known before running likewise.
fn shell_options(cmd: &mut SimpleCommand, args: &[Arg]) {
    let unknown = cmd.program == "shopt" && args.iter().any(|a| !a.literal);
    if unknown
        || args.iter().any(|a| {
            ["dotglob", "extglob", "nocaseglob", "globasciiranges"]
                .iter()
                .any(|o| a.text.contains(o))
        })
    {
        runs(
            cmd,
            "dotglob or extglob changes what a glob matches (hidden files such as .env)",
        );
    }
}

#[cfg(test)]
mod tests;

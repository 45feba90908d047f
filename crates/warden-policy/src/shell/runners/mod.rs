//! Readers that run code or write files, given the right arguments, program text or
//! environment: `awk` with `system()` or a pipe, `sed` with `e` or a script from a file, `less
//! +!…`, `man -P`, `git --exec-path`, `tar --to-command`, … One entry a program in [`TABLE`],
//! each naming the construct it found in [`SimpleCommand::executes`]: the call is then at least
//! L3 with that reason (`risk::classify`), no allow rule on the command covers it, and what the
//! construct writes goes through the protected paths like any other write.

mod scripts;

use super::{Arg, SimpleCommand};
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

/// The value of option `names` at `args[i]`: the next word (`-f FILE`, `--file FILE`), or
/// joined (`-fFILE`, `--file=FILE`); the index after it.
fn option_at(args: &[Arg], i: usize, short: &[&str], long: &[&str]) -> Option<(String, usize)> {
    let text = args[i].text.as_str();
    if short.contains(&text) || long.contains(&text) {
        return Some((args.get(i + 1).map(|a| a.text.clone())?, i + 2));
    }
    for name in long {
        if let Some(value) = text.strip_prefix(&format!("{name}=")) {
            return Some((value.to_owned(), i + 1));
        }
    }
    for name in short {
        if let Some(value) = text.strip_prefix(name).filter(|v| !v.is_empty()) {
            return Some((value.to_owned(), i + 1));
        }
    }
    None
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
            &["--lesskey-file", "--lesskey-src", "--lesskey-content"],
        ) {
            runs(
                cmd,
                "less reads key bindings that can set LESSOPEN (-k, --lesskey-…)",
            );
            i = next;
            continue;
        } else if let Some((file, next)) =
            option_at(args, i, &["-o", "-O"], &["--log-file", "--LOG-FILE"])
        {
            writes(cmd, &file);
            i = next;
            continue;
        }
        i += 1;
    }
}

fn man(cmd: &mut SimpleCommand, args: &[Arg]) {
    for (i, arg) in args.iter().enumerate() {
        if option_at(args, i, &["-P"], &["--pager"]).is_some() {
            runs(cmd, "man runs the pager it is given (-P)");
        }
        if arg.text == "-H" || arg.text.starts_with("-H") || arg.text.starts_with("--html") {
            runs(cmd, "man runs a browser (-H, --html)");
        }
    }
}

fn git(cmd: &mut SimpleCommand, args: &[Arg]) {
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
            _ => {}
        }
    }
    let mut sub = None;
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text.as_str();
        if let Some(path) = text.strip_prefix("--exec-path=") {
            if !path.is_empty() {
                runs(
                    cmd,
                    "git runs its commands from the directory it is given (--exec-path=…)",
                );
            }
        } else if option_at(args, i, &[], &["--git-dir", "--work-tree"]).is_some() {
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
        "grep"
            if rest.iter().any(|a| {
                (a.text.starts_with("-O") && a.text.len() > 2)
                    || a.text.starts_with("--open-files-in-pager=")
            }) =>
        {
            runs(
                cmd,
                "git grep opens the files in the program it is given (-O…)",
            );
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

fn tar(cmd: &mut SimpleCommand, args: &[Arg]) {
    const RUNS: &[&str] = &[
        "--to-command",
        "--use-compress-program",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
        "--rmt-command",
    ];
    let mut extracting = false;
    let mut directory = None;
    for (i, arg) in args.iter().enumerate() {
        let text = arg.text.as_str();
        if RUNS
            .iter()
            .any(|o| text == *o || text.starts_with(&format!("{o}=")))
            || text.starts_with("--checkpoint-action=exec")
            || (text.starts_with("-I") || text.starts_with("-F")) && !text.starts_with("--")
        {
            runs(
                cmd,
                "tar runs the program an option names (--to-command, -I, …)",
            );
        }
        if matches!(text, "--extract" | "--get")
            || (i == 0 && !text.starts_with('-') && text.contains('x'))
            || (text.starts_with('-') && !text.starts_with("--") && text.contains('x'))
        {
            extracting = true;
        }
        if let Some((dir, _)) = option_at(args, i, &["-C"], &["--directory"]) {
            directory = Some(dir);
        }
    }
    if extracting {
        writes(cmd, directory.as_deref().unwrap_or("."));
    }
}

fn zip(cmd: &mut SimpleCommand, args: &[Arg]) {
    for (i, arg) in args.iter().enumerate() {
        if option_at(args, i, &["-TT"], &["--unzip-command"]).is_some() || arg.text == "-TT" {
            runs(
                cmd,
                "zip runs the program it is given to test the archive (-TT)",
            );
        }
    }
}

fn unzip(cmd: &mut SimpleCommand, args: &[Arg]) {
    // Listing, testing and printing to standard output extract nothing.
    let only_reads = args.iter().any(|a| {
        a.text.starts_with('-')
            && !a.text.starts_with("--")
            && a.text.contains(['l', 't', 'p', 'v', 'Z'])
    });
    if only_reads {
        return;
    }
    let directory = args
        .iter()
        .enumerate()
        .find_map(|(i, _)| option_at(args, i, &["-d"], &[]).map(|(d, _)| d));
    writes(cmd, directory.as_deref().unwrap_or("."));
}

fn rsync(cmd: &mut SimpleCommand, args: &[Arg]) {
    for (i, _) in args.iter().enumerate() {
        if option_at(args, i, &["-e"], &["--rsh", "--rsync-path"]).is_some() {
            runs(cmd, "rsync runs the program it is given (-e, --rsync-path)");
        }
    }
}

fn vim(cmd: &mut SimpleCommand, args: &[Arg]) {
    for arg in args {
        let text = arg.text.as_str();
        if text.starts_with('+')
            || matches!(
                text,
                "-c" | "--cmd" | "-S" | "-s" | "-u" | "-U" | "-W" | "-w"
            )
        {
            runs(cmd, "the editor runs the commands it is given (-c, +…, -S)");
        }
    }
}

fn make(cmd: &mut SimpleCommand, args: &[Arg]) {
    for (i, arg) in args.iter().enumerate() {
        if option_at(args, i, &["-E"], &["--eval"]).is_some()
            || arg.text.starts_with("SHELL=")
            || arg.text.starts_with(".SHELLFLAGS=")
            || arg.text.starts_with("MAKESHELL=")
        {
            runs(cmd, "make runs what its command line adds (--eval, SHELL=)");
        }
    }
}

/// `shopt -s dotglob`, `bash -O dotglob`: `*` then matches hidden files (`.env`), which the
/// policy reads a glob as never matching.
fn shell_options(cmd: &mut SimpleCommand, args: &[Arg]) {
    if args.iter().any(|a| a.text == "dotglob") {
        runs(
            cmd,
            "dotglob lets a glob match hidden files such as .env (shopt -s dotglob)",
        );
    }
}

#[cfg(test)]
mod tests;

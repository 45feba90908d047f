//! Paths that reach a command other than as its words: what `find` hands `-exec` as `{}`, and
//! what a lister before `| xargs` prints for xargs to add. A lister's output is the paths it
//! can name, as globs the engine checks like any other (`find . -name .env | xargs cat` reads
//! `./**/.env`); the output of anything else is not known before running, and a path not known
//! is never taken as harmless.

use super::{Arg, SimpleCommand};

/// How `xargs` was called: where its input comes from, and where its command starts.
pub(super) struct Xargs {
    /// `-a FILE`, `--arg-file=FILE`: the input is this file, not standard input.
    pub(super) input_file: Option<String>,
    /// The index in the arguments where the command xargs runs starts.
    pub(super) command: usize,
}

/// Reads xargs' options as GNU's getopt does: clusters (`-0a FILE`, `-n1`), values attached or
/// next, long options and their abbreviations, `--` ending them.
pub(super) fn xargs(args: &[Arg]) -> Xargs {
    // Short options that take a value, and those whose value may only be attached.
    const VALUE: &str = "adEILnPs";
    const ATTACHED: &str = "eil";
    const LONG_VALUE: &[&str] = &[
        "--arg-file",
        "--delimiter",
        "--max-args",
        "--max-procs",
        "--max-chars",
        "--process-slot-var",
    ];
    let mut input_file = None;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let text = arg.text.as_str();
        i += 1;
        if text == "--" {
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_owned())),
                None => (long, None),
            };
            let full = LONG_VALUE
                .iter()
                .find(|full| !name.is_empty() && full[2..].starts_with(name));
            if let Some(full) = full {
                let value = value.or_else(|| {
                    i += 1;
                    args.get(i - 1).map(|a| a.text.clone())
                });
                if *full == "--arg-file" {
                    input_file = value;
                }
            }
            continue;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else {
            i -= 1;
            break;
        };
        for (at, letter) in cluster.char_indices() {
            let attached = &cluster[at + letter.len_utf8()..];
            if VALUE.contains(letter) {
                let value = if attached.is_empty() {
                    i += 1;
                    args.get(i - 1).map(|a| a.text.clone())
                } else {
                    Some(attached.to_owned())
                };
                if letter == 'a' {
                    input_file = value;
                }
                break;
            }
            if ATTACHED.contains(letter) {
                break;
            }
        }
    }
    Xargs {
        input_file,
        command: i.min(args.len()),
    }
}

/// The paths `find`'s output (and its `{}`) can name, when its expression narrows them: for
/// each starting point, the names its `-name`/`-iname` tests allow anywhere below it
/// (`./**/.env`), and its `-path` patterns. `None` when it does not narrow them (no such test,
/// or `-o`, `!`, parentheses, a regular expression): everything below, hidden files and `.git`
/// included, is not taken as harmless.
pub(super) fn find_matches(args: &[Arg]) -> Option<Vec<String>> {
    let (starts, expression) = find_starts(args);
    let mut names = Vec::new();
    let mut paths = Vec::new();
    let mut iter = args[expression..].iter();
    while let Some(arg) = iter.next() {
        match arg.text.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                for word in iter.by_ref() {
                    if word.text == ";" || word.text == "+" {
                        break;
                    }
                }
            }
            "-name" => names.push(iter.next()?.text.clone()),
            "-iname" => names.push(iter.next()?.text.to_lowercase()),
            "-path" | "-wholename" => paths.push(iter.next()?.text.clone()),
            "-ipath" | "-iwholename" => paths.push(iter.next()?.text.to_lowercase()),
            "-o" | "-or" | "," | "!" | "-not" | "(" | ")" | "-regex" | "-iregex" => return None,
            _ => {}
        }
    }
    if names.is_empty() && paths.is_empty() {
        return None;
    }
    let mut out: Vec<String> = starts
        .iter()
        .flat_map(|s| {
            let start = s.trim_end_matches('/');
            names.iter().map(move |n| format!("{start}/**/{n}"))
        })
        .collect();
    out.extend(paths);
    Some(out)
}

/// `find`'s starting points (`.` when none is given) and where its expression starts, past the
/// options before them (`-H`, `-L`, `-P`, `-D LIST`, `-O3`).
pub(super) fn find_starts(args: &[Arg]) -> (Vec<String>, usize) {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.text.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            text if text.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let mut starts = Vec::new();
    while let Some(arg) = args.get(i) {
        if arg.text.starts_with('-') || arg.text == "(" || arg.text == "!" {
            break;
        }
        starts.push(arg.text.clone());
        i += 1;
    }
    if starts.is_empty() {
        starts.push(".".to_owned());
    }
    (starts, i.min(args.len()))
}

/// What the commands one element of a pipeline ran print for the next, when that is paths a
/// known lister names: one command (wrappers aside) that is `ls`, or a `find` that narrows
/// what it prints.
pub(super) fn listed(commands: &[SimpleCommand]) -> Option<Vec<String>> {
    let mut ran = commands.iter().filter(|c| !c.wrapper);
    let cmd = ran.next()?;
    if ran.next().is_some() || cmd.flags.unknown || cmd.args.iter().any(|a| !a.literal) {
        return None;
    }
    let args = &cmd.args;
    match cmd.program.as_str() {
        "find" => find_matches(args),
        "ls" => Some(ls_output(args)),
        _ => None,
    }
}

/// What `ls` prints, as paths: each operand itself (a file lists as its name), the names in it
/// (hidden ones with `-a`/`-A`, every level with `-R`), and the same names as the next command
/// reads them, relative to where it runs.
fn ls_output(args: &[Arg]) -> Vec<String> {
    let short = |letters: &[char]| {
        args.iter().any(|a| {
            a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains(letters)
        })
    };
    let long = |prefix: &str| args.iter().any(|a| a.text.starts_with(prefix));
    let hidden = short(&['a', 'A']) || long("--a");
    let recursive = short(&['R']) || long("--rec");
    let operands: Vec<&str> = args
        .iter()
        .map(|a| a.text.as_str())
        .filter(|t| !t.starts_with('-'))
        .collect();
    let names = |base: &str, out: &mut Vec<String>| {
        out.push(format!("{base}/*"));
        if hidden {
            out.push(format!("{base}/.*"));
        }
    };
    let mut out = Vec::new();
    names(".", &mut out);
    if recursive && operands.is_empty() {
        names("./**", &mut out);
    }
    for operand in operands {
        let operand = operand.trim_end_matches('/');
        let operand = if operand.is_empty() { "/" } else { operand };
        names(operand, &mut out);
        if recursive {
            names(&format!("{operand}/**"), &mut out);
        }
        out.push(operand.to_owned());
    }
    out
}

/// The words `paths`, as the arguments that stand for what a lister fed a command.
pub(super) fn words(paths: &[String]) -> Vec<Arg> {
    paths
        .iter()
        .map(|p| Arg {
            text: p.clone(),
            literal: true,
        })
        .collect()
}

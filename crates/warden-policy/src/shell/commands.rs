//! What particular programs do with their arguments: wrappers that run another command, shells
//! that run a string, and the files commands read and write.

use super::programs::SHELLS;
use super::{Arg, SimpleCommand};

/// The word standing for the arguments xargs reads from its input.
pub(crate) const STDIN: &str = "<stdin>";

/// What a command turns out to run.
pub(super) enum Expansion {
    /// Nothing further: the command is what it is.
    Done,
    /// It runs these commands (a wrapper's inner command, `find -exec`'s commands).
    Inner(Vec<SimpleCommand>),
    /// It runs a script given as a string (`bash -c`, `eval`, `su -c`, `watch`).
    Script { source: String, wrapper: String },
    /// It runs something that cannot be known before running.
    Unknown(String),
}

/// Sees one layer through `cmd`: a table of the wrappers warden knows, one arm each.
// Long because it is that table: a wrapper added is an arm added.
#[allow(clippy::too_many_lines)]
pub(super) fn expand(cmd: &SimpleCommand) -> Expansion {
    let args = &cmd.args;
    match cmd.program.as_str() {
        "sudo" | "doas" | "pkexec" | "run0" => {
            let rest = skip_options(
                args,
                &[
                    "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group",
                ],
            );
            inner(cmd, rest, |c| c.flags.privilege = true)
        }
        "su" => match value_of(args, &["-c", "--command"]) {
            Some(script) => script_or_unknown(script, "su -c"),
            None => Expansion::Done,
        },
        "env" => expand_env(cmd),
        "timeout" => {
            let rest = skip_options(args, &["-s", "-k", "--signal", "--kill-after"]);
            inner(cmd, rest.get(1..).unwrap_or_default(), |_| {})
        }
        "time" => inner(
            cmd,
            skip_options(args, &["-f", "-o", "--format", "--output"]),
            |_| {},
        ),
        "nice" => inner(cmd, skip_options(args, &["-n", "--adjustment"]), |_| {}),
        "ionice" => inner(
            cmd,
            skip_options(args, &["-c", "-n", "--class", "--classdata"]),
            |_| {},
        ),
        "nohup" | "builtin" | "setsid" | "unbuffer" | "caffeinate" => {
            inner(cmd, skip_options(args, &[]), |_| {})
        }
        "stdbuf" => inner(cmd, skip_options(args, &["-i", "-o", "-e"]), |_| {}),
        "command" => {
            if args.iter().any(|a| a.text == "-v" || a.text == "-V") {
                Expansion::Done
            } else {
                inner(cmd, skip_options(args, &[]), |_| {})
            }
        }
        "exec" => inner(cmd, skip_options(args, &["-a"]), |_| {}),
        "chrt" => {
            let rest = skip_options(args, &["-T", "-P", "-D"]);
            inner(cmd, rest.get(1..).unwrap_or_default(), |_| {})
        }
        "taskset" => {
            let rest = skip_options(args, &[]);
            inner(cmd, rest.get(1..).unwrap_or_default(), |_| {})
        }
        "flock" => {
            if let Some(script) = value_of(args, &["-c", "--command"]) {
                return script_or_unknown(script, "flock -c");
            }
            let rest = skip_options(args, &["-w", "-E", "--timeout", "--conflict-exit-code"]);
            inner(cmd, rest.get(1..).unwrap_or_default(), |_| {})
        }
        "watch" => {
            let exec = args.iter().any(|a| a.text == "-x" || a.text == "--exec");
            let rest = skip_options(args, &["-n", "--interval", "-q", "--equexit"]);
            if exec {
                inner(cmd, rest, |_| {})
            } else {
                join_script(rest, "watch")
            }
        }
        "xargs" => {
            let parsed = super::feeds::xargs(args);
            let mut rest = args[parsed.command..].to_vec();
            if rest.is_empty() {
                rest.push(Arg {
                    text: "echo".to_owned(),
                    literal: true,
                });
            }
            // The arguments xargs adds come from its input: not known here (the walker puts
            // in what a lister before it prints, when one does).
            rest.push(Arg {
                text: STDIN.to_owned(),
                literal: false,
            });
            inner(cmd, &rest, |_| {})
        }
        "busybox" | "toybox" => inner(cmd, args, |_| {}),
        "npx" | "pnpx" | "bunx" => {
            if let Some(script) = value_of(args, &["-c", "--call"]) {
                return script_or_unknown(script, "npx -c");
            }
            inner(cmd, skip_options(args, &["-p", "--package"]), |c| {
                c.flags.code_execution = true;
                c.flags.network = true;
            })
        }
        "npm" | "pnpm" | "yarn" if first_is(args, &["exec", "dlx", "x"]) => {
            let rest = skip_options(&args[1..], &["-p", "--package", "-c", "--call"]);
            inner(cmd, rest, |c| {
                c.flags.code_execution = true;
                c.flags.network = true;
            })
        }
        "uv" | "poetry" | "pipenv" | "pdm" | "hatch" | "rye" if first_is(args, &["run"]) => {
            let rest = skip_options(
                &args[1..],
                &[
                    "--with",
                    "--python",
                    "-p",
                    "--package",
                    "--directory",
                    "--project",
                    "--env-file",
                ],
            );
            inner(cmd, rest, |_| {})
        }
        "bundle" if first_is(args, &["exec"]) => inner(cmd, &args[1..], |_| {}),
        "eval" => {
            if args.iter().all(|a| a.literal) {
                Expansion::Script {
                    source: join(args),
                    wrapper: "eval".to_owned(),
                }
            } else {
                Expansion::Unknown(format!("eval of a non-literal: eval {}", join(args)))
            }
        }
        "find" => expand_find(cmd),
        program if SHELLS.contains(&program) => expand_shell(cmd),
        _ => Expansion::Done,
    }
}

fn expand_env(cmd: &SimpleCommand) -> Expansion {
    let mut rest = cmd.args.as_slice();
    let mut assignments = Vec::new();
    while let Some(first) = rest.first() {
        let text = first.text.as_str();
        if text == "-S" || text == "--split-string" {
            let script: Vec<Arg> = rest[1..].to_vec();
            return join_script(&script, "env -S");
        }
        if let Some(split) = text.strip_prefix("--split-string=") {
            let mut script = vec![Arg {
                text: split.to_owned(),
                literal: first.literal,
            }];
            script.extend_from_slice(&rest[1..]);
            return join_script(&script, "env -S");
        }
        if matches!(text, "-u" | "--unset" | "-C" | "--chdir") {
            rest = rest.get(2..).unwrap_or_default();
        } else if text.starts_with('-') {
            rest = &rest[1..];
        } else if let Some((name, value)) = text.split_once('=') {
            assignments.push((name.to_owned(), value.to_owned()));
            rest = &rest[1..];
        } else {
            break;
        }
    }
    if rest.is_empty() {
        return Expansion::Done;
    }
    inner(cmd, rest, |c| {
        c.assignments.extend(assignments.iter().cloned());
    })
}

fn expand_shell(cmd: &SimpleCommand) -> Expansion {
    let mut iter = cmd.args.iter();
    while let Some(arg) = iter.next() {
        let text = arg.text.as_str();
        if text == "-o"
            || text == "+o"
            || text == "-O"
            || text == "+O"
            || text == "--rcfile"
            || text == "--init-file"
        {
            iter.next();
            continue;
        }
        if text.starts_with('-') && !text.starts_with("--") && text.contains('c') {
            return match iter.next() {
                Some(script) if script.literal => Expansion::Script {
                    source: script.text.clone(),
                    wrapper: format!("{} -c", cmd.program),
                },
                Some(script) => Expansion::Unknown(format!(
                    "{} -c of a non-literal: {}",
                    cmd.program, script.text
                )),
                None => Expansion::Unknown(format!("{} -c without a command", cmd.program)),
            };
        }
        if !text.starts_with('-') && !text.starts_with('+') {
            break;
        }
    }
    Expansion::Done
}

fn expand_find(cmd: &SimpleCommand) -> Expansion {
    let mut inner_cmds = Vec::new();
    let mut iter = cmd.args.iter();
    // What `{}` stands for: every path find can hand the command.
    let mut matches = None;
    while let Some(arg) = iter.next() {
        if matches!(arg.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let mut words: Vec<Arg> = Vec::new();
            for word in iter.by_ref() {
                if word.text == ";" || word.text == "+" {
                    break;
                }
                match matches.get_or_insert_with(|| super::feeds::find_matches(&cmd.args)) {
                    Some(paths) if word.text == "{}" && word.literal => {
                        words.extend(super::feeds::words(paths));
                    }
                    _ if word.text == "{}" => words.push(Arg {
                        text: "{}".to_owned(),
                        literal: false,
                    }),
                    _ => words.push(word.clone()),
                }
            }
            if let Some((program, rest)) = words.split_first() {
                let mut inner = SimpleCommand {
                    program: program_name(&program.text),
                    args: rest.to_vec(),
                    via: via_plus(cmd, &format!("find {}", arg.text)),
                    ..SimpleCommand::default()
                };
                inner.flags.privilege = cmd.flags.privilege;
                if !program.literal {
                    inner.flags.unknown = true;
                }
                inner_cmds.push(inner);
            }
        }
    }
    if inner_cmds.is_empty() {
        Expansion::Done
    } else {
        Expansion::Inner(inner_cmds)
    }
}

/// The record kept of a wrapper itself, so rules written against it (`Bash(sudo *)`) still apply.
pub(super) fn wrapper_record(cmd: &SimpleCommand) -> SimpleCommand {
    let mut record = cmd.clone();
    super::annotate::annotate(&mut record);
    // What the wrapper runs is analysed on its own; the record keeps only what the wrapper
    // itself does (privilege, its own files, the variables it sets).
    record.wrapper = true;
    record.flags.code_execution = false;
    record.flags.stdin_script = false;
    record.flags.network = false;
    record.flags.destructive = record.program == "find" && record.flags.destructive;
    record
}

fn inner(cmd: &SimpleCommand, rest: &[Arg], adjust: impl Fn(&mut SimpleCommand)) -> Expansion {
    let Some((program, args)) = rest.split_first() else {
        return Expansion::Done;
    };
    let mut inner = SimpleCommand {
        program: program_name(&program.text),
        args: args.to_vec(),
        assignments: cmd.assignments.clone(),
        via: via_plus(cmd, &cmd.program),
        ..SimpleCommand::default()
    };
    inner.flags.privilege = cmd.flags.privilege;
    inner.flags.network = cmd.flags.network;
    inner.flags.code_execution = cmd.flags.code_execution;
    if !program.literal {
        inner.flags.unknown = true;
    }
    adjust(&mut inner);
    Expansion::Inner(vec![inner])
}

fn via_plus(cmd: &SimpleCommand, wrapper: &str) -> Vec<String> {
    let mut via = cmd.via.clone();
    via.push(wrapper.to_owned());
    via
}

fn script_or_unknown(script: &Arg, wrapper: &str) -> Expansion {
    if script.literal {
        Expansion::Script {
            source: script.text.clone(),
            wrapper: wrapper.to_owned(),
        }
    } else {
        Expansion::Unknown(format!("{wrapper} of a non-literal: {}", script.text))
    }
}

fn join_script(words: &[Arg], wrapper: &str) -> Expansion {
    if words.is_empty() {
        return Expansion::Done;
    }
    if words.iter().all(|a| a.literal) {
        Expansion::Script {
            source: join(words),
            wrapper: wrapper.to_owned(),
        }
    } else {
        Expansion::Unknown(format!("{wrapper} of a non-literal: {}", join(words)))
    }
}

fn join(words: &[Arg]) -> String {
    words
        .iter()
        .map(|a| a.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn first_is(args: &[Arg], names: &[&str]) -> bool {
    args.first()
        .is_some_and(|a| names.contains(&a.text.as_str()))
}

/// The arguments after leading options; `with_value` lists options that take the next word.
fn skip_options<'a>(args: &'a [Arg], with_value: &[&str]) -> &'a [Arg] {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let text = arg.text.as_str();
        if text == "--" {
            return args.get(i + 1..).unwrap_or_default();
        }
        if !text.starts_with('-') || text == "-" {
            break;
        }
        i += if with_value.contains(&text) { 2 } else { 1 };
    }
    args.get(i..).unwrap_or_default()
}

/// The word after the first of `names` (or attached as `--name=value`).
fn value_of<'a>(args: &'a [Arg], names: &[&str]) -> Option<&'a Arg> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if names.contains(&arg.text.as_str()) {
            return iter.next();
        }
    }
    None
}

/// `/usr/bin/rm` names `rm`; quotes and escapes (`\\rm`, `"rm"`, `r''m`) are already gone. A path
/// outside the system directories (`./rm`, `/tmp/x/rm`) stays a path: it is some other program.
pub(super) fn program_name(text: &str) -> String {
    const SYSTEM: &[&str] = &[
        "/bin/",
        "/usr/bin/",
        "/usr/local/bin/",
        "/sbin/",
        "/usr/sbin/",
        "/usr/local/sbin/",
        "/opt/homebrew/bin/",
    ];
    for dir in SYSTEM {
        if let Some(name) = text.strip_prefix(dir)
            && !name.is_empty()
            && !name.contains('/')
        {
            return name.to_owned();
        }
    }
    text.to_owned()
}

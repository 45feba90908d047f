//! The files a command reads and writes and the flags its program and arguments raise.

use super::programs::{
    DANGEROUS_ENV, DESTRUCTIVE, GIT_EXEC_KEYS, NETWORK, PATTERN_READERS, PRIVILEGE, READERS,
    is_interpreter, is_shell,
};
use super::{Arg, SimpleCommand};

/// Fills in `reads`, `writes` and flags from what the program is known to do.
pub(super) fn annotate(cmd: &mut SimpleCommand) {
    environment(cmd);
    annotate_program(cmd);
}

/// Assignments before the program that change which code runs.
fn environment(cmd: &mut SimpleCommand) {
    for (name, value) in &cmd.assignments {
        // `PATH[0]=…` sets PATH; a pager that only shows (`GIT_PAGER=cat`) changes nothing.
        let name = name.split('[').next().unwrap_or_default();
        let showing = matches!(name, "PAGER" | "GIT_PAGER" | "MANPAGER")
            && matches!(
                value.as_str(),
                "cat" | "less" | "less -R" | "less -FRX" | "more" | ""
            );
        if DANGEROUS_ENV.contains(&name) && !showing {
            cmd.flags.dangerous_env = true;
            cmd.flags.hidden_exec = true;
        }
    }
}

/// What the program and its arguments read, write and raise.
fn annotate_program(cmd: &mut SimpleCommand) {
    if matches!(
        cmd.program.as_str(),
        "export" | "declare" | "typeset" | "readonly" | "local" | "set" | "setenv"
    ) {
        for arg in &cmd.args {
            let name = arg.text.split(['=', '+']).next().unwrap_or_default();
            if arg.text.contains('=') && DANGEROUS_ENV.contains(&name) {
                cmd.flags.dangerous_env = true;
                cmd.flags.hidden_exec = true;
            }
        }
    }
    for (i, arg) in cmd.args.iter().enumerate() {
        // Sockets named in options: the Docker socket is a protected path however it is given.
        if let Some(path) = arg.text.strip_prefix("unix://") {
            cmd.reads.push(path.to_owned());
        }
        if matches!(
            arg.text.as_str(),
            "--unix-socket" | "--abstract-unix-socket"
        ) && let Some(path) = cmd.args.get(i + 1)
        {
            cmd.reads.push(path.text.clone());
        }
    }
    let program = cmd.program.clone();
    let args: Vec<Arg> = cmd.args.clone();
    let operands = operands(&args);
    match program.as_str() {
        p if READERS.contains(&p) => {
            // `sort -o FILE`, `base64 -o FILE`: a reader that writes.
            if let Some(out) = value_after(&args, &["-o", "--output"]) {
                cmd.writes.push(out.clone());
                cmd.reads.extend(operands.into_iter().filter(|o| *o != out));
            } else {
                cmd.reads.extend(operands);
            }
        }
        p if PATTERN_READERS.contains(&p) => pattern_reader(cmd, p, &args),
        "find" => find(cmd, &args),
        // Its command is analysed on its own; xargs itself reads only its input file.
        "xargs" => cmd.reads.extend(super::feeds::xargs(&args).input_file),
        "tee" => cmd.writes.extend(operands),
        "touch" | "mkdir" | "mkfifo" | "mknod" => cmd.writes.extend(operands),
        "cp" | "install" | "ln" | "rsync" => copy_like(cmd, &args, &operands),
        "mv" => cmd.writes.extend(operands),
        "rm" | "rmdir" | "shred" | "unlink" | "truncate" | "chmod" | "chown" | "chgrp" | "srm" => {
            let targets = operands.into_iter().skip(usize::from(matches!(
                program.as_str(),
                "chmod" | "chown" | "chgrp"
            )));
            cmd.writes.extend(targets);
        }
        "dd" => {
            for arg in &args {
                if let Some(path) = arg.text.strip_prefix("of=") {
                    cmd.writes.push(path.to_owned());
                } else if let Some(path) = arg.text.strip_prefix("if=") {
                    cmd.reads.push(path.to_owned());
                }
            }
        }
        "curl" | "wget" => download(cmd, &args),
        "git" => git(cmd, &args),
        "echo" | "printf" | "true" | "false" | ":" => {}
        _ => cmd.reads.extend(
            args.iter()
                .filter(|a| looks_like_path(&a.text))
                .map(|a| option_value(&a.text)),
        ),
    }
    if NETWORK.contains(&program.as_str()) {
        cmd.flags.network = true;
    }
    if DESTRUCTIVE.contains(&program.as_str()) {
        cmd.flags.destructive = true;
    }
    if PRIVILEGE.contains(&program.as_str()) {
        cmd.flags.privilege = true;
    }
    // An interpreter runs code: inline (`-c`, `-e`), from a file, or from standard input.
    if is_interpreter(&program)
        && !args
            .iter()
            .any(|a| matches!(a.text.as_str(), "--version" | "-V"))
    {
        cmd.flags.code_execution = true;
        inline_code_reads(cmd, &args);
    }
    if is_shell(&program) {
        cmd.flags.code_execution = true;
        if args.iter().all(|a| a.text.starts_with('-')) {
            cmd.flags.stdin_script = true;
        }
    }
    super::runners::check(cmd);
}

/// Paths written as string literals in inline code (`node -e "fs.readFileSync('…')"`) are reads
/// the path rules see: a denied file stays denied through an interpreter.
fn inline_code_reads(cmd: &mut SimpleCommand, args: &[Arg]) {
    let flags = ["-e", "-c", "-E", "--eval", "-p", "--print", "-r"];
    for code in args
        .windows(2)
        .filter(|w| flags.contains(&w[0].text.as_str()))
        .map(|w| &w[1].text)
    {
        cmd.reads.extend(quoted_paths(code));
    }
}

/// The string literals in `code` that look like paths, for the path rules.
fn quoted_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for quote in ['\'', '"', '`'] {
        for (i, literal) in code.split(quote).enumerate() {
            // Odd pieces are inside quotes.
            if i % 2 == 1
                && (literal.starts_with('/') || literal.starts_with("~/"))
                && !literal.contains(['\n', '$', '{'])
            {
                found.push(literal.to_owned());
            }
        }
    }
    found
}

/// Arguments that are not options: `--` ends options; `-` is standard input.
fn operands(args: &[Arg]) -> Vec<String> {
    let mut out = Vec::new();
    let mut options_done = false;
    for arg in args {
        if !options_done && arg.text == "--" {
            options_done = true;
            continue;
        }
        if !options_done && arg.text.starts_with('-') && arg.text != "-" {
            if let Some((_, value)) = arg.text.split_once('=')
                && looks_like_path(value)
            {
                out.push(value.to_owned());
            }
            continue;
        }
        if arg.text != "-" {
            out.push(arg.text.clone());
        }
    }
    out
}

fn pattern_reader(cmd: &mut SimpleCommand, program: &str, args: &[Arg]) {
    if program == "rg"
        && args
            .iter()
            .any(|a| a.text == "--pre" || a.text.starts_with("--pre="))
    {
        cmd.flags.code_execution = true;
        cmd.flags.hidden_exec = true;
    }
    let explicit_pattern = args
        .iter()
        .any(|a| matches!(a.text.as_str(), "-e" | "-f" | "--regexp" | "--file"));
    let mut files = operands(args);
    // The first operand is the pattern or the program; what sed and awk programs run, write and
    // read is the readers' table's (`runners`).
    if !explicit_pattern && !files.is_empty() {
        files.remove(0);
    }
    if let Some(file) = value_after(args, &["-f", "--file"]) {
        files.push(file);
    }
    cmd.reads.extend(files);
}

fn find(cmd: &mut SimpleCommand, args: &[Arg]) {
    let (starts, expression) = super::feeds::find_starts(args);
    let mut in_exec = false;
    let mut rest = args[expression..].iter();
    while let Some(arg) = rest.next() {
        match arg.text.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => in_exec = true,
            ";" | "+" => in_exec = false,
            "-delete" if !in_exec => {
                cmd.flags.destructive = true;
                cmd.writes.extend(starts.iter().cloned());
            }
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" if !in_exec => {
                if let Some(file) = rest.next() {
                    cmd.writes.push(file.text.clone());
                }
            }
            _ => {}
        }
    }
    cmd.reads.extend(starts);
}

fn copy_like(cmd: &mut SimpleCommand, args: &[Arg], operands: &[String]) {
    if let Some(dir) = value_after(args, &["-t", "--target-directory"]) {
        cmd.writes.push(dir.clone());
        cmd.reads
            .extend(operands.iter().filter(|o| **o != dir).cloned());
        return;
    }
    if let Some((target, sources)) = operands.split_last() {
        cmd.writes.push(target.clone());
        cmd.reads.extend(sources.iter().cloned());
    }
    if cmd.program == "rsync" && operands.iter().any(|o| o.contains(':')) {
        cmd.flags.network = true;
    }
}

fn download(cmd: &mut SimpleCommand, args: &[Arg]) {
    if let Some(out) = value_after(args, &["-o", "--output", "-O", "--output-document"])
        && out != "-"
    {
        cmd.writes.push(out);
    }
    for arg in args {
        if let Some(file) = arg.text.strip_prefix('@') {
            cmd.reads.push(file.to_owned());
        }
        if let Some((_, file)) = arg.text.split_once("=@") {
            cmd.reads.push(file.to_owned());
        }
    }
    if let Some(file) = value_after(
        args,
        &[
            "-T",
            "--upload-file",
            "-K",
            "--config",
            "--data-binary",
            "-d",
            "--data",
        ],
    ) {
        let file = file.strip_prefix('@').unwrap_or(&file).to_owned();
        if looks_like_path(&file) {
            cmd.reads.push(file);
        }
    }
}

fn git(cmd: &mut SimpleCommand, args: &[Arg]) {
    let mut iter = args.iter();
    let mut sub = None;
    while let Some(arg) = iter.next() {
        let text = arg.text.as_str();
        match text {
            "-c" => {
                if let Some(kv) = iter.next() {
                    git_setting(cmd, &kv.text);
                }
            }
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path" => {
                iter.next();
            }
            _ if text.starts_with("--exec-path=")
                || text.starts_with("--git-dir=")
                || text.starts_with("--work-tree=") => {}
            _ if text.starts_with("--config-env") => {
                cmd.flags.code_execution = true;
                cmd.flags.hidden_exec = true;
            }
            _ if text.starts_with('-') => {}
            _ => {
                sub = Some(text.to_owned());
                break;
            }
        }
    }
    let rest: Vec<&Arg> = iter.collect();
    match sub.as_deref() {
        Some("diff" | "log" | "show" | "format-patch" | "cat-file") => {
            for (i, arg) in rest.iter().enumerate() {
                if let Some(file) = arg.text.strip_prefix("--output=") {
                    cmd.writes.push(file.to_owned());
                } else if arg.text == "--output"
                    || (arg.text == "-o" && sub.as_deref() == Some("format-patch"))
                {
                    if let Some(file) = rest.get(i + 1) {
                        cmd.writes.push(file.text.clone());
                    }
                } else if arg.text.starts_with("--ext-diff") {
                    cmd.flags.code_execution = true;
                    cmd.flags.hidden_exec = true;
                } else if let Some((rev, path)) = arg.text.split_once(':')
                    && !rev.is_empty()
                    && !path.is_empty()
                    && !arg.text.starts_with('-')
                {
                    // `git show REV:PATH` reads PATH out of the object store.
                    cmd.reads.push(path.to_owned());
                }
            }
        }
        Some("config") => {
            let reading = rest.iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "--get" | "--get-all" | "--get-regexp" | "-l" | "--list" | "get" | "list"
                )
            });
            if !reading {
                let global = rest
                    .iter()
                    .any(|a| matches!(a.text.as_str(), "--global" | "--system"));
                cmd.writes.push(if global {
                    "~/.gitconfig".to_owned()
                } else {
                    ".git/config".to_owned()
                });
                if let Some(key) = rest.iter().find(|a| !a.text.starts_with('-')) {
                    git_setting(cmd, &format!("{}=", key.text));
                }
            }
        }
        _ => {}
    }
}

fn git_setting(cmd: &mut SimpleCommand, key_value: &str) {
    let key = key_value
        .split('=')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    // A pager that only shows (`-c core.pager=cat`, `pager.branch=false`) runs nothing new.
    let value = key_value.split_once('=').map_or("", |(_, v)| v.trim());
    let pager = key == "core.pager" || key.starts_with("pager.");
    if pager
        && matches!(
            value,
            "cat" | "less" | "less -R" | "less -FRX" | "more" | "false" | "true" | ""
        )
    {
        return;
    }
    let exec = GIT_EXEC_KEYS
        .iter()
        .any(|k| key == *k || key.starts_with(k))
        || key.starts_with("alias.")
        || key.starts_with("filter.")
        || key.starts_with("diff.") && key.ends_with(".textconv")
        || key.starts_with("diff.") && key.ends_with(".command")
        || key.starts_with("merge.") && key.ends_with(".driver")
        || key.starts_with("pager.")
        || key.starts_with("sendemail.")
        || key == "web.browser"
        || key == "core.alternaterefscommand"
        || ["man.", "browser.", "difftool.", "mergetool."]
            .iter()
            .any(|p| key.starts_with(p))
            && matches!(key.rsplit('.').next(), Some("cmd" | "path"))
        || key.starts_with("gpg.") && key.ends_with(".program")
        || key.starts_with("credential.") && key.ends_with(".helper");
    if exec {
        cmd.flags.code_execution = true;
        cmd.flags.hidden_exec = true;
    }
}

fn value_after(args: &[Arg], names: &[&str]) -> Option<String> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if names.contains(&arg.text.as_str()) {
            return iter.next().map(|a| a.text.clone());
        }
        for name in names.iter().filter(|n| n.starts_with("--")) {
            if let Some(value) = arg.text.strip_prefix(&format!("{name}=")) {
                return Some(value.to_owned());
            }
        }
    }
    None
}

/// The value of `--opt=value`, or the word itself.
fn option_value(text: &str) -> String {
    match text.split_once('=') {
        Some((name, value)) if name.starts_with('-') => value.to_owned(),
        _ => text.to_owned(),
    }
}

/// A word that names a file: has a slash, or starts with `.` or `~`.
fn looks_like_path(text: &str) -> bool {
    let value = option_value(text);
    !value.is_empty()
        && !value.contains("://")
        && (value.contains('/') || value.starts_with('.') || value.starts_with('~'))
}

#[cfg(test)]
mod tests {
    use super::quoted_paths;

    #[test]
    fn paths_quoted_in_inline_code_are_found() {
        assert_eq!(
            quoted_paths("console.log(require('fs').readFileSync('/h/Private/p.txt', \"utf8\"))"),
            ["/h/Private/p.txt"]
        );
        assert_eq!(
            quoted_paths("open(\"~/.aws/credentials\").read()"),
            ["~/.aws/credentials"]
        );
        // Built at run time: left to the sandbox.
        assert!(
            quoted_paths("open(os.environ['HOME'] + '/x')")
                .iter()
                .all(|p| p == "/x")
        );
        assert!(quoted_paths("print(1)").is_empty());
    }
}

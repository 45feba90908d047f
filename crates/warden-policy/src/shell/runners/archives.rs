//! Archivers: the options that make them run a program, and what extracting or creating writes
//! (the directory, the members named, the archive).

use super::{long, option_at, runs, writes};
use crate::shell::{Arg, SimpleCommand};

pub(super) fn tar(cmd: &mut SimpleCommand, args: &[Arg]) {
    const RUNS: &[&str] = &[
        "to-command",
        "use-compress-program",
        "info-script",
        "new-volume-script",
        "rsh-command",
        "rmt-command",
    ];
    let (mut extracting, mut creating) = (false, false);
    let mut directory = None;
    let mut archive = None;
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text.as_str();
        let old_style = i == 0 && !text.starts_with('-');
        if text.starts_with("--") {
            if RUNS.iter().any(|o| long(text, o).is_some())
                || long(text, "checkpoint-action")
                    .is_some_and(|v| v.value().is_none_or(|v| v.contains("exec")))
            {
                runs(
                    cmd,
                    "tar runs the program an option names (--to-command, -I, …)",
                );
            }
            extracting |= long(text, "extract").is_some() || long(text, "get").is_some();
            creating |= ["create", "append", "update"]
                .iter()
                .any(|o| long(text, o).is_some());
            if let Some((dir, next)) = option_at(args, i, &[], &["directory"]) {
                directory = Some(dir);
                i = next;
                continue;
            }
            if let Some((file, next)) = option_at(args, i, &[], &["file"]) {
                archive = Some(file);
                i = next;
                continue;
            }
        } else if let Some(letters) = text.strip_prefix('-').or(old_style.then_some(text)) {
            // Letters together (`-xzf A`, old-style `xCf DIR A`); those that take a value take
            // the rest of the word (with a dash) or the next words in order.
            let mut taken = 0;
            for (at, c) in letters.char_indices() {
                let rest = &letters[at + c.len_utf8()..];
                match c {
                    'x' => extracting = true,
                    'c' | 'r' | 'u' => creating = true,
                    'I' | 'F' => runs(
                        cmd,
                        "tar runs the program an option names (--to-command, -I, …)",
                    ),
                    _ => {}
                }
                if matches!(
                    c,
                    'f' | 'C' | 'I' | 'F' | 'T' | 'X' | 'b' | 'K' | 'N' | 'V' | 'g' | 'L'
                ) {
                    let value = if !old_style && !rest.is_empty() {
                        Some(rest.to_owned())
                    } else {
                        taken += 1;
                        args.get(i + taken).map(|a| a.text.clone())
                    };
                    match c {
                        'f' => archive = value,
                        'C' => directory = value,
                        _ => {}
                    }
                    if !old_style && !rest.is_empty() {
                        break;
                    }
                }
            }
            i += 1 + taken;
            continue;
        } else {
            operands.push(text.to_owned());
        }
        i += 1;
    }
    if creating && let Some(file) = &archive {
        writes(cmd, file);
    }
    if extracting {
        let dir = directory.unwrap_or_else(|| ".".to_owned());
        writes(cmd, &dir);
        // Members named on the command line are the files written.
        for member in &operands {
            writes(cmd, &format!("{dir}/{member}"));
        }
    }
}

pub(super) fn zip(cmd: &mut SimpleCommand, args: &[Arg]) {
    for (i, arg) in args.iter().enumerate() {
        if option_at(args, i, &["-TT"], &["unzip-command"]).is_some() || arg.text == "-TT" {
            runs(
                cmd,
                "zip runs the program it is given to test the archive (-TT)",
            );
        }
    }
    // The archive, its first operand, is written.
    if let Some(archive) = args.iter().find(|a| !a.text.starts_with('-')) {
        writes(cmd, &archive.text);
    }
}

pub(super) fn unzip(cmd: &mut SimpleCommand, args: &[Arg]) {
    let mut directory = ".".to_owned();
    let mut only_reads = false;
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text.as_str();
        if let Some(letters) = text.strip_prefix('-').filter(|l| !l.starts_with('-')) {
            for (at, c) in letters.char_indices() {
                let rest = &letters[at + c.len_utf8()..];
                match c {
                    // Listing, testing and printing to standard output extract nothing.
                    'l' | 't' | 'p' | 'v' | 'Z' => only_reads = true,
                    'd' | 'P' | 'x' => {
                        let value = if rest.is_empty() {
                            i += 1;
                            args.get(i).map(|a| a.text.clone()).unwrap_or_default()
                        } else {
                            rest.to_owned()
                        };
                        if c == 'd' {
                            directory = value;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        } else {
            operands.push(text.to_owned());
        }
        i += 1;
    }
    if only_reads {
        return;
    }
    writes(cmd, &directory);
    // Members named after the archive are the files written.
    for member in operands.iter().skip(1) {
        writes(cmd, &format!("{directory}/{member}"));
    }
}

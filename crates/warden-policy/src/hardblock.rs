//! Commands refused in every mode, before any rule is read.

use std::path::Path;

use crate::paths::{self, is_critical};
use crate::shell::{Analysis, SimpleCommand};

/// Why the whole command string is refused outright, if it is.
pub(crate) fn whole(source: &str, _analysis: &Analysis) -> Option<String> {
    let squeezed: String = source.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed.contains(":(){:|:&};:") || squeezed.contains("(){:|:&}") {
        return Some("a fork bomb".to_owned());
    }
    None
}

/// Why one simple command is refused outright, if it is.
pub(crate) fn part(cmd: &SimpleCommand, cwd: &Path, home: &Path, root: &Path) -> Option<String> {
    let program = cmd.program.as_str();
    match program {
        p if p.starts_with("mkfs") => return Some(format!("{p} formats a file system")),
        "wipefs" | "fdisk" | "sfdisk" | "parted" => {
            return Some(format!("{program} rewrites disk partitions"));
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            return Some(format!("{program} stops the machine"));
        }
        "init" | "telinit"
            if cmd
                .args
                .first()
                .is_some_and(|a| a.text == "0" || a.text == "6") =>
        {
            return Some(format!("{program} stops the machine"));
        }
        _ => {}
    }
    for write in &cmd.writes {
        if write.starts_with("/dev/")
            && !paths::is_harmless_device(write)
            && !write.starts_with("/dev/shm")
        {
            return Some(format!("writes the device {write}"));
        }
    }
    let recursive = cmd.args.iter().any(|a| {
        a.text == "--recursive"
            || (a.text.starts_with('-')
                && !a.text.starts_with("--")
                && (a.text.contains('r') || a.text.contains('R')))
    });
    // Deleting the root, a top-level directory, the home directory or the workspace is refused
    // even without -r: the intent is what matters.
    let deletes = matches!(program, "rm" | "rmdir" | "shred" | "srm")
        || matches!(program, "chmod" | "chown" | "chgrp") && recursive
        || program == "find" && cmd.flags.destructive;
    if deletes {
        for target in &cmd.writes {
            if let Some(why) = critical_target(target, cwd, home, root) {
                return Some(format!("{program} of {target}: {why}"));
            }
        }
    }
    None
}

fn critical_target(target: &str, cwd: &Path, home: &Path, root: &Path) -> Option<&'static str> {
    let variable = target.starts_with('$') || target.contains("${") || target.starts_with("$(…)");
    if variable {
        return Some("a path built from a variable that may be empty");
    }
    let (dir, glob) = match target
        .strip_suffix("/*")
        .or_else(|| target.strip_suffix("/.*"))
    {
        Some(dir) => (if dir.is_empty() { "/" } else { dir }, true),
        None if target == "*" || target == ".*" => (".", true),
        None => (target, false),
    };
    let resolved = paths::resolve(dir, cwd, home);
    for path in resolved.both() {
        if is_critical(path, home, root) || (glob && path == root) {
            return Some("the root, a top-level directory, the home directory or the workspace");
        }
    }
    None
}

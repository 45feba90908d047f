//! The macOS backend's profile: the same [`Plan`] as the native backend, written as a Seatbelt
//! (SBPL) policy for `sandbox-exec -p`. Generated and snapshot-tested here; it cannot run on
//! Linux, so it is not verified on macOS (docs/security-model.md says so).

use std::fmt::Write as _;
use std::path::Path;

use crate::plan::{Mount, Plan};

/// The SBPL profile for `plan`: deny by default; read the plan's mounts; write only its
/// writable mounts; masked and protected paths denied after the allows (later rules win in
/// SBPL); no network unless the plan has it.
pub fn profile(plan: &Plan) -> String {
    let mut out = String::from("(version 1)\n(deny default)\n");
    out.push_str(
        "(allow process-exec)\n(allow process-fork)\n(allow signal (target same-sandbox))\n",
    );
    out.push_str("(allow sysctl-read)\n(allow file-read-metadata)\n(allow mach-lookup (global-name \"com.apple.system.logger\"))\n");
    out.push_str("(allow file-read* file-write* (literal \"/dev/null\") (literal \"/dev/tty\"))\n");
    out.push_str("(allow file-read* (literal \"/dev/random\") (literal \"/dev/urandom\"))\n");
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    let mut denied_reads = Vec::new();
    let mut denied_writes = Vec::new();
    for mount in &plan.mounts {
        match mount {
            Mount::Bind {
                source, writable, ..
            } => {
                reads.push(subpath(source));
                if *writable {
                    writes.push(subpath(source));
                } else {
                    denied_writes.push(subpath(source));
                }
            }
            Mount::Tmpfs {
                target,
                writable: true,
                ..
            } if target == Path::new("/tmp") => {
                reads.push(subpath(Path::new("/private/tmp")));
                writes.push(subpath(Path::new("/private/tmp")));
            }
            // An empty tmpfs over part of a visible tree is a mask; one elsewhere (the home
            // directory) is hidden already by the default deny.
            Mount::Tmpfs { target, .. } => {
                let masks = plan.mounts.iter().any(|m| matches!(m, Mount::Bind { target: t, .. } if target.starts_with(t) && target != t));
                if masks {
                    denied_reads.push(subpath(target));
                }
            }
            Mount::MaskFile { target } => denied_reads.push(format!("(literal {})", quote(target))),
        }
    }
    for (verb, list) in [("allow file-read*", &reads), ("allow file-write*", &writes)] {
        if !list.is_empty() {
            let _ = writeln!(out, "({verb}\n  {})", list.join("\n  "));
        }
    }
    // Read-only binds inside writable ones (protected paths) come later in the plan: deny their
    // writes after the allows.
    let protected: Vec<&String> = denied_writes
        .iter()
        .filter(|d| writes.iter().any(|w| inside(d, w)))
        .collect();
    if !protected.is_empty() {
        let _ = writeln!(
            out,
            "(deny file-write*\n  {})",
            protected
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }
    if !denied_reads.is_empty() {
        let _ = writeln!(
            out,
            "(deny file-read* file-write*\n  {})",
            denied_reads.join("\n  ")
        );
    }
    if plan.network {
        out.push_str("(allow network*)\n");
    } else {
        out.push_str("(deny network*)\n(allow network* (local unix))\n");
    }
    out
}

fn subpath(path: &Path) -> String {
    format!("(subpath {})", quote(path))
}

/// Whether the `(subpath …)` form `a` lies inside `b`.
fn inside(a: &str, b: &str) -> bool {
    let strip = |s: &str| {
        s.trim_start_matches("(subpath \"")
            .trim_end_matches("\")")
            .to_owned()
    };
    let (a, b) = (strip(a), strip(b));
    a != b && Path::new(&a).starts_with(&b)
}

/// An SBPL string literal.
fn quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn plan(network: bool) -> Plan {
        let bind = |p: &str, writable| Mount::Bind {
            source: PathBuf::from(p),
            target: PathBuf::from(p),
            writable,
        };
        Plan {
            program: "npm".into(),
            args: vec!["test".into()],
            cwd: "/Users/ada/name-cleaner".into(),
            env: Vec::new(),
            mounts: vec![
                bind("/usr", false),
                bind("/bin", false),
                Mount::Tmpfs {
                    target: "/Users/ada".into(),
                    writable: false,
                    size_mb: 1,
                },
                Mount::Tmpfs {
                    target: "/tmp".into(),
                    writable: true,
                    size_mb: 1024,
                },
                bind("/Users/ada/.npm", false),
                bind("/Users/ada/name-cleaner", true),
                bind("/Users/ada/name-cleaner/.git/hooks", false),
                Mount::MaskFile {
                    target: "/Users/ada/name-cleaner/secret \"quoted\".txt".into(),
                },
            ],
            network,
            ..Plan::default()
        }
    }

    #[test]
    fn the_profile_for_a_workspace_write_plan() {
        insta::assert_snapshot!("seatbelt_workspace_write", profile(&plan(false)));
    }

    #[test]
    fn the_network_is_allowed_only_when_the_plan_has_it() {
        assert!(profile(&plan(true)).contains("(allow network*)\n"));
        assert!(profile(&plan(false)).contains("(deny network*)\n"));
        assert!(profile(&plan(false)).contains("\\\"quoted\\\""));
    }
}

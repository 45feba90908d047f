//! The built-in risk table (SPEC P4), extendable from settings.

use warden_protocol::RiskLevel;

use crate::shell::SimpleCommand;

/// Information only.
const L0: &[&str] = &[
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    ":",
    "whoami",
    "id",
    "date",
    "uname",
    "hostname",
    "which",
    "type",
    "basename",
    "dirname",
    "seq",
    "sleep",
    "cd",
    "pushd",
    "popd",
    "dirs",
    "export",
    "set",
    "unset",
    "alias",
    "history",
    "clear",
    "tty",
    "groups",
    "uptime",
    "df",
    "free",
    "nproc",
    "arch",
    "locale",
    "yes",
    "test",
    "[",
    "[[",
    "hash",
    "shopt",
    "wait",
    "jobs",
    "umask",
    "ulimit",
    "printenv",
    "env",
    "expr",
    "bc",
    "cal",
    "tput",
    "stty",
    "read",
    "getconf",
    "lsb_release",
    "sw_vers",
    "logname",
    "users",
    "who",
    "w",
    "timeout",
    "time",
    "nice",
    "nohup",
    "stdbuf",
    "setsid",
    "command",
    "builtin",
    "xargs",
    "ionice",
    "chrt",
    "taskset",
    "watch",
    "tput",
    "exit",
    "return",
    "shift",
    "local",
    "declare",
    "typeset",
    "readonly",
    "let",
    "trap",
    "getopts",
    "ls",
    "tree",
];

/// Reads.
const L1: &[&str] = &[
    "cat",
    "tac",
    "head",
    "tail",
    "less",
    "more",
    "bat",
    "nl",
    "wc",
    "sort",
    "uniq",
    "cut",
    "paste",
    "join",
    "column",
    "fold",
    "fmt",
    "rev",
    "tr",
    "diff",
    "cmp",
    "comm",
    "file",
    "stat",
    "xxd",
    "hexdump",
    "od",
    "strings",
    "base64",
    "base32",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "du",
    "realpath",
    "readlink",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "awk",
    "gawk",
    "mawk",
    "sed",
    "jq",
    "yq",
    "find",
    "fd",
    "fdfind",
    "locate",
    "man",
    "help",
    "info",
    "tldr",
    "ldd",
    "objdump",
    "readelf",
    "nm",
    "iconv",
    "expand",
    "unexpand",
    "pr",
    "look",
    "shuf",
    "zcat",
    "bzcat",
    "xzcat",
    "tokei",
    "cloc",
    "scc",
    "lsof",
    "ps",
    "pgrep",
    "top",
    "htop",
    "mkdir",
    "touch",
    "tee",
    "cp",
    "ln",
    "install",
    "split",
    "csplit",
    "numfmt",
    "sha",
    "tsort",
    "jobs",
    "delta",
    "difft",
    "colordiff",
    "vimdiff",
    "view",
];

/// Build and test.
const L2: &[&str] = &[
    "make",
    "cmake",
    "ninja",
    "meson",
    "pytest",
    "py.test",
    "tox",
    "nox",
    "jest",
    "vitest",
    "mocha",
    "ava",
    "tap",
    "rspec",
    "phpunit",
    "tsc",
    "eslint",
    "prettier",
    "black",
    "ruff",
    "mypy",
    "pyright",
    "flake8",
    "pylint",
    "isort",
    "rustfmt",
    "clippy-driver",
    "gofmt",
    "goimports",
    "golangci-lint",
    "shellcheck",
    "shfmt",
    "hadolint",
    "mvn",
    "mvnw",
    "gradle",
    "gradlew",
    "ant",
    "sbt",
    "bazel",
    "buck",
    "dotnet",
    "swift",
    "xcodebuild",
    "ctest",
    "gcc",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "rustc",
    "javac",
    "kotlinc",
    "zig",
    "nim",
    "ghc",
    "stack",
    "cabal",
    "mix",
    "elixir",
    "erl",
    "rebar3",
    "go",
    "cargo",
    "npm",
    "yarn",
    "pnpm",
    "bun",
    "deno",
    "rake",
    "bundle",
    "composer",
    "dune",
    "opam",
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "patch",
    "diff3",
    "wasm-pack",
    "trunk",
    "vite",
    "webpack",
    "rollup",
    "esbuild",
    "turbo",
    "nx",
    "lerna",
    "storybook",
    "playwright",
    "cypress",
];

/// Destructive or publishing.
const L4: &[&str] = &[
    "rm",
    "rmdir",
    "shred",
    "unlink",
    "mv",
    "truncate",
    "chmod",
    "chown",
    "chgrp",
    "dd",
    "kill",
    "killall",
    "pkill",
    "crontab",
    "systemctl",
    "service",
    "launchctl",
    "mount",
    "umount",
    "fdisk",
    "parted",
    "iptables",
    "ufw",
    "srm",
    "reboot",
    "shutdown",
    "halt",
    "poweroff",
    "mkfs",
    "wipefs",
];

/// Privilege.
const L5: &[&str] = &[
    "sudo", "su", "doas", "pkexec", "run0", "passwd", "visudo", "chpasswd", "useradd", "usermod",
    "setcap",
];

/// The risk of one simple command from its program, subcommand and flags, with the reason.
pub fn classify(cmd: &SimpleCommand, extra: &[(String, RiskLevel)]) -> (RiskLevel, String) {
    let program = cmd.program.as_str();
    let (mut level, mut reason) = base(cmd);
    if let Some((_, configured)) = extra.iter().find(|(name, _)| name == program) {
        level = *configured;
        reason = format!("{program} is {configured:?} by the settings");
    }
    // A reader that runs code through what it was given: at least L3, named.
    if let Some(construct) = cmd.executes.first()
        && level <= RiskLevel::L3
    {
        level = RiskLevel::L3;
        reason.clone_from(construct);
    }
    let mut raise = |to: RiskLevel, why: &str| {
        if to > level {
            level = to;
            why.clone_into(&mut reason);
        }
    };
    if cmd.flags.privilege {
        raise(RiskLevel::L5, "runs with raised privilege");
    }
    if cmd.flags.destructive {
        raise(RiskLevel::L4, "deletes or irreversibly changes files");
    }
    if cmd.flags.network {
        raise(RiskLevel::L3, "reaches the network");
    }
    if cmd.flags.code_execution || cmd.flags.hidden_exec {
        raise(RiskLevel::L3, "executes code the policy cannot see");
    }
    if cmd.flags.dangerous_env {
        raise(
            RiskLevel::L3,
            "sets a variable that changes which code runs",
        );
    }
    if cmd.flags.unknown {
        raise(RiskLevel::L3, "cannot be fully resolved before running");
    }
    (level, reason)
}

fn base(cmd: &SimpleCommand) -> (RiskLevel, String) {
    let program = cmd.program.as_str();
    if cmd.wrapper {
        return (
            RiskLevel::L0,
            format!("{program} runs what is analysed inside it"),
        );
    }
    let sub = cmd
        .args
        .iter()
        .map(|a| a.text.as_str())
        .find(|a| !a.starts_with('-'))
        .unwrap_or("");
    let has = |flag: &str| cmd.args.iter().any(|a| a.text == flag);
    let level = match program {
        "" => RiskLevel::L0,
        "git" => git(cmd),
        "npm" | "yarn" | "pnpm" | "bun" => match sub {
            "test" | "t" | "run" | "run-script" | "build" | "lint" | "start" | "" => RiskLevel::L2,
            "ls" | "list" | "view" | "info" | "outdated" | "audit" | "why" | "explain"
            | "config" | "help" | "root" | "bin" | "prefix" | "--version" => RiskLevel::L1,
            "publish" | "unpublish" | "deprecate" | "owner" | "dist-tag" | "token" | "adduser"
            | "login" => RiskLevel::L4,
            _ => RiskLevel::L3,
        },
        "cargo" => match sub {
            "test" | "build" | "check" | "clippy" | "fmt" | "doc" | "bench" | "run" | "nextest"
            | "metadata" | "tree" | "" => RiskLevel::L2,
            "publish" | "yank" | "owner" | "login" => RiskLevel::L4,
            _ => RiskLevel::L3,
        },
        "go" => match sub {
            "test" | "build" | "vet" | "fmt" | "run" | "list" | "version" | "env" | "doc" | "" => {
                RiskLevel::L2
            }
            _ => RiskLevel::L3,
        },
        "pip" | "pip3" | "uv" | "poetry" | "pipenv" | "gem" | "composer" | "conda" | "mamba"
        | "brew" | "apt" | "apt-get" | "yum" | "dnf" | "pacman" | "apk" | "snap" | "choco"
        | "winget" => match sub {
            "list" | "show" | "freeze" | "search" | "info" | "check" | "--version" | "help" => {
                RiskLevel::L1
            }
            "run" | "test" => RiskLevel::L2,
            _ => RiskLevel::L3,
        },
        "python" | "python3" | "python2" if cmd.args.len() >= 2 && has("-m") => {
            let module = cmd
                .args
                .iter()
                .skip_while(|a| a.text != "-m")
                .nth(1)
                .map_or("", |a| a.text.as_str());
            match module {
                "pytest" | "unittest" | "mypy" | "black" | "ruff" | "pyflakes" | "compileall"
                | "py_compile" => RiskLevel::L2,
                _ => RiskLevel::L3,
            }
        }
        "docker" | "podman" | "kubectl" | "helm" | "terraform" | "pulumi" | "ansible"
        | "ansible-playbook" | "vagrant" => match sub {
            "ps" | "images" | "version" | "get" | "describe" | "logs" | "plan" | "show"
            | "list" => RiskLevel::L3,
            "push" | "apply" | "delete" | "destroy" | "rm" | "rmi" | "prune" => RiskLevel::L4,
            _ => RiskLevel::L3,
        },
        "make" if sub == "install" || sub == "deploy" || sub == "publish" || sub == "release" => {
            RiskLevel::L3
        }
        p if L0.contains(&p) => RiskLevel::L0,
        p if L1.contains(&p) => RiskLevel::L1,
        p if L2.contains(&p) => RiskLevel::L2,
        p if L4.contains(&p) => RiskLevel::L4,
        p if L5.contains(&p) => RiskLevel::L5,
        _ => return (RiskLevel::L3, format!("{program} is not a known program")),
    };
    let what = match level {
        RiskLevel::L0 => "information only",
        RiskLevel::L1 => "reads",
        RiskLevel::L2 => "builds or tests",
        RiskLevel::L3 => "installs, reaches the network or runs code",
        RiskLevel::L4 => "is destructive or publishes",
        RiskLevel::L5 => "needs privilege",
    };
    let name = if program == "git" || sub.is_empty() {
        program.to_owned()
    } else {
        format!("{program} {sub}")
    };
    (level, format!("{name} {what}"))
}

fn git(cmd: &SimpleCommand) -> RiskLevel {
    let mut words = cmd.args.iter().map(|a| a.text.as_str());
    let mut sub = "";
    while let Some(word) = words.next() {
        match word {
            "-c" | "-C" | "--git-dir" | "--work-tree" | "--namespace" => {
                words.next();
            }
            w if w.starts_with('-') => {}
            w => {
                sub = w;
                break;
            }
        }
    }
    let rest: Vec<&str> = words.collect();
    let has = |flag: &str| {
        rest.iter()
            .any(|w| *w == flag || w.starts_with(&format!("{flag}=")))
    };
    match sub {
        "status" | "version" | "help" | "" => RiskLevel::L0,
        "diff" | "log" | "show" | "blame" | "grep" | "ls-files" | "ls-tree" | "rev-parse"
        | "describe" | "shortlog" | "reflog" | "cat-file" | "rev-list" | "name-rev"
        | "whatchanged" | "show-ref" | "for-each-ref" | "count-objects" | "check-ignore"
        | "merge-base" | "var" | "annotate" | "range-diff" => RiskLevel::L1,
        "branch" | "tag" | "remote" | "stash" | "config" | "worktree" | "notes" => {
            let listing = rest.is_empty()
                || rest.iter().all(|w| {
                    w.starts_with('-')
                        && !matches!(
                            *w,
                            "-d" | "-D" | "--delete" | "-f" | "--force" | "-m" | "-M"
                        )
                });
            let shows = rest
                .first()
                .is_some_and(|w| matches!(*w, "list" | "show" | "get-url" | "-v" | "--list"));
            if (listing || shows) && !has("--unset") && !has("--add") {
                RiskLevel::L1
            } else if has("-D")
                || has("--delete") && has("--force")
                || rest.first().is_some_and(|w| matches!(*w, "drop" | "clear"))
            {
                RiskLevel::L4
            } else {
                RiskLevel::L2
            }
        }
        "add" | "commit" | "checkout" | "switch" | "restore" | "merge" | "rebase"
        | "cherry-pick" | "revert" | "mv" | "apply" | "am" | "init" | "bisect" | "stage"
        | "format-patch" | "gc" | "fsck" | "sparse-checkout" => {
            if has("--hard")
                || (sub == "checkout" && has("--"))
                || (sub == "restore" && !has("--staged"))
                || has("-f") && sub == "checkout"
            {
                RiskLevel::L4
            } else {
                RiskLevel::L2
            }
        }
        "reset" => {
            if has("--hard") || has("--merge") || has("--keep") {
                RiskLevel::L4
            } else {
                RiskLevel::L2
            }
        }
        "clean" => {
            if rest
                .iter()
                .any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('n'))
                || has("--dry-run")
            {
                RiskLevel::L1
            } else {
                RiskLevel::L4
            }
        }
        "rm" | "filter-branch" | "filter-repo" | "update-ref" | "prune" | "replace" => {
            RiskLevel::L4
        }
        "push" => RiskLevel::L4,
        "fetch" | "pull" | "clone" | "submodule" | "ls-remote" | "archive" | "request-pull"
        | "send-email" | "lfs" => RiskLevel::L3,
        _ => RiskLevel::L3,
    }
}

//! What warden knows of programs: which are shells and interpreters (they run code the analysis
//! cannot see, unless it is given to them as a string, `bash -c`, which is then analysed in
//! turn), which read, reach the network, destroy or need privilege, and the environment and git
//! settings that make a program run another.

pub(super) const SHELLS: &[&str] = &[
    "bash",
    "sh",
    "zsh",
    "dash",
    "ksh",
    "ash",
    "mksh",
    "fish",
    "busybox-sh",
];
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "perl",
    "ruby",
    "php",
    "deno",
    "bun",
    "lua",
    "Rscript",
    "osascript",
];

pub(super) fn is_interpreter(program: &str) -> bool {
    INTERPRETERS.contains(&program) || program.starts_with("python3.")
}

pub(super) fn is_shell(program: &str) -> bool {
    SHELLS.contains(&program)
}

/// Variables that change which code runs or how.
pub(super) const DANGEROUS_ENV: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "PATH",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_ASKPASS",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_PARAMETERS",
    "GIT_EXEC_PATH",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS4",
    "SHELLOPTS",
    "IFS",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "NODE_OPTIONS",
    "PERL5OPT",
    "RUBYOPT",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "LESSOPEN",
    "LESSCLOSE",
    "LESSKEY",
    "LESSKEYIN",
    "LESSKEY_CONTENT",
    "LESSEDIT",
    "MANPAGER",
    "MANOPT",
    "BROWSER",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_CONFIG",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_SYSTEM",
    "GIT_PROXY_COMMAND",
    "GIT_SEQUENCE_EDITOR",
    "GIT_TEMPLATE_DIR",
    "GLOBIGNORE",
    "BASHOPTS",
    "VIMINIT",
    "EXINIT",
    "MYVIMRC",
    "MANROFFOPT",
    "GROFF_COMMAND_PREFIX",
];

/// Commands whose non-option arguments are files they read.
pub(super) const READERS: &[&str] = &[
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
    "ls",
    "tree",
    "du",
    "realpath",
    "readlink",
    "source",
    ".",
    "view",
    "vim",
    "vi",
    "nano",
    "emacs",
    "code",
    "open",
    "xdg-open",
    "iconv",
    "expand",
    "unexpand",
    "split",
    "csplit",
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "zcat",
    "bzcat",
    "xzcat",
    "pr",
    "look",
    "ldd",
    "objdump",
    "readelf",
    "nm",
    "git-blame",
    "shuf",
    "test",
    "[",
];

/// Commands whose first non-option argument is a pattern or program, the rest files.
pub(super) const PATTERN_READERS: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk", "mawk", "jq", "yq", "sed",
];

/// Commands that reach the network.
pub(super) const NETWORK: &[&str] = &[
    "curl", "wget", "ssh", "scp", "sftp", "ftp", "telnet", "nc", "ncat", "netcat", "socat",
    "rsync", "http", "https", "aria2c", "lftp", "mosh", "ping", "dig", "nslookup", "host", "whois",
    "gh", "hub", "glab", "aws", "gcloud", "az",
];

/// Commands that delete or irreversibly change what they are given.
pub(super) const DESTRUCTIVE: &[&str] = &[
    "rm", "rmdir", "shred", "unlink", "mv", "truncate", "chmod", "chown", "chgrp", "dd", "mkfs",
    "wipefs", "srm",
];

pub(super) const PRIVILEGE: &[&str] = &[
    "sudo", "su", "doas", "pkexec", "run0", "chroot", "nsenter", "unshare", "setcap", "capsh",
];

/// Git settings that make git run a program.
pub(super) const GIT_EXEC_KEYS: &[&str] = &[
    "core.pager",
    "core.sshcommand",
    "core.fsmonitor",
    "core.editor",
    "core.hookspath",
    "core.askpass",
    "core.gitproxy",
    "core.worktree",
    "diff.external",
    "sequence.editor",
    "credential.helper",
    "gpg.program",
    "uploadpack.packobjectshook",
    "protocol.allow",
    "include.path",
    "includeif",
];

//! Which programs are shells and interpreters: they run code the analysis cannot see, unless it
//! is given to them as a string (`bash -c`), which is then analysed in turn.

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

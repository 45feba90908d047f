//! Where the commands of one shell string run, and what their paths stand for, as far as the
//! policy can follow them before running: the working directory each `cd` leaves, and the
//! symbolic links earlier commands of the string make (`ln -s conf x && cat x/prod.yaml` reads
//! `conf/prod.yaml`). Where only running tells, the paths are made unknown (`$PWD/…`), which the
//! layers ask about; a protected name among them is still refused.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::paths;
use crate::shell::{Analysis, Arg, SimpleCommand};

/// The working directory and the links, command by command.
pub(super) struct Place<'a> {
    pub(super) cwd: PathBuf,
    home: &'a Path,
    /// A `cd` went where the policy cannot tell: relative paths are unknown until a `cd` to an
    /// absolute path.
    lost: bool,
    /// How the string's `cd`s look their directory up.
    lookup: Lookup,
    /// Links made so far: each link's path, and its target's (`None`: not known before running).
    links: Vec<(PathBuf, Option<PathBuf>)>,
    /// A link was made whose own name is not known: any path may pass through it.
    unknown_link: bool,
}

impl<'a> Place<'a> {
    pub(super) fn new(cwd: &Path, home: &'a Path, source: &str, analysis: &Analysis) -> Self {
        let physical = analysis.commands.iter().any(|c| {
            c.program == "set"
                && c.args.iter().any(|a| {
                    a.text == "physical" || a.text.starts_with('-') && a.text.contains('P')
                })
        });
        Place {
            cwd: cwd.to_path_buf(),
            home,
            lost: false,
            lookup: Lookup {
                cdpath: source.contains("CDPATH"),
                physical,
            },
            links: Vec::new(),
            unknown_link: false,
        }
    }

    /// `cmd` as it must be checked here: its relative paths unknown where the directory is,
    /// every path unknown past a link of unknown name, and a path through a link made earlier
    /// checked as its target's too.
    pub(super) fn seen<'c>(&self, cmd: &'c SimpleCommand) -> Cow<'c, SimpleCommand> {
        if !self.lost && !self.unknown_link && self.links.is_empty() {
            return Cow::Borrowed(cmd);
        }
        let through = |list: &[String]| -> Vec<String> {
            let mut out = Vec::new();
            for p in list {
                if !super::bash::resolvable(p) {
                    out.push(p.clone());
                    continue;
                }
                let absolute = p.starts_with('/') || p.starts_with('~');
                if self.unknown_link || self.lost && !absolute {
                    out.push(format!("$PWD/{p}"));
                    continue;
                }
                out.push(p.clone());
                let at = paths::resolve(&super::bash::expand_home(p), &self.cwd, self.home).lexical;
                out.extend(self.aliases(&at));
            }
            out
        };
        Cow::Owned(SimpleCommand {
            reads: through(&cmd.reads),
            writes: through(&cmd.writes),
            redirected: through(&cmd.redirected),
            ..cmd.clone()
        })
    }

    /// What `at` also is through the links made so far: each target with the rest of the path
    /// (an unknown target makes it unknown).
    fn aliases(&self, at: &Path) -> Vec<String> {
        self.links
            .iter()
            .filter_map(|(link, target)| {
                let rest = at.strip_prefix(link).ok()?;
                Some(match target {
                    Some(target) => target.join(rest).display().to_string(),
                    None => format!("$LINK/{}", rest.display()),
                })
            })
            .collect()
    }

    /// What `cmd` (as checked) leaves for the commands after it.
    pub(super) fn after(&mut self, cmd: &SimpleCommand) {
        match next_cwd(
            cmd,
            &self.cwd,
            self.home,
            self.lost || self.lookup.cdpath,
            self.lookup.physical,
        ) {
            Cd::No => {}
            Cd::To(next) => {
                self.cwd = next;
                self.lost = false;
            }
            Cd::Unknown => self.lost = true,
        }
        self.links_made(cmd);
    }

    /// The symbolic links `ln -s` (or `cp -s`) makes: `ln -s TARGET` (here, by the target's
    /// name), `ln -s TARGET LINK` (LINK, or a link by the target's name inside it when it is a
    /// directory: both are taken unless `-T`), `ln -s TARGET… DIR` and `-t DIR`. A target is
    /// relative to its link's directory (to this one with `-r`).
    fn links_made(&mut self, cmd: &SimpleCommand) {
        if cmd.program != "ln" && cmd.program != "cp" {
            return;
        }
        let Some(ln) = Ln::read(cmd) else {
            return;
        };
        let known = |a: &Arg| a.literal && !super::globs::is_glob(&a.text);
        let here = |text: &str| paths::resolve(text, &self.cwd, self.home).lexical;
        let base = |a: &Arg| {
            Path::new(a.text.trim_end_matches('/'))
                .file_name()
                .map(PathBuf::from)
        };
        let named = |dir: &str, dir_literal: bool, target: &Arg| {
            (dir_literal && !super::globs::is_glob(dir) && known(target))
                .then(|| base(target).map(|b| here(dir).join(b)))
                .flatten()
        };
        // Each link's path (`None`: not known) and its target.
        let mut made: Vec<(Option<PathBuf>, &Arg)> = Vec::new();
        match (&ln.into, ln.operands.as_slice()) {
            (Some((dir, literal)), targets) => {
                made.extend(targets.iter().map(|t| (named(dir, *literal, t), *t)));
            }
            (None, [target]) => made.push((
                known(target)
                    .then(|| base(target).map(|b| self.cwd.join(b)))
                    .flatten(),
                target,
            )),
            (None, [target, link]) => {
                made.push((known(link).then(|| here(&link.text)), target));
                if !ln.no_dir {
                    made.push((named(&link.text, link.literal, target), target));
                }
            }
            (None, [targets @ .., dir]) => {
                made.extend(
                    targets
                        .iter()
                        .map(|t| (named(&dir.text, dir.literal, t), *t)),
                );
            }
            (None, []) => {}
        }
        for (link, target) in made {
            let Some(link) = link else {
                self.unknown_link = true;
                continue;
            };
            let to = known(target).then(|| {
                let from = if ln.relative {
                    self.cwd.clone()
                } else {
                    link.parent().unwrap_or(Path::new("/")).to_path_buf()
                };
                let text = super::bash::expand_home(&target.text);
                let at = paths::resolve(&text, &from, self.home).lexical;
                // A link to a link made earlier in the string is a link to its target.
                self.aliases(&at)
                    .into_iter()
                    .next()
                    .map_or(at, PathBuf::from)
            });
            self.links.push((link, to));
        }
    }
}

/// An `ln` (or `cp`) that makes symbolic links, as its options say.
struct Ln<'c> {
    operands: Vec<&'c Arg>,
    /// `-t DIR`: the directory the links go in (its text, and whether it is literal).
    into: Option<(String, bool)>,
    /// `-T`: the last operand is the link itself, never a directory.
    no_dir: bool,
    /// `-r`: targets are relative to the working directory.
    relative: bool,
}

impl<'c> Ln<'c> {
    /// `None` when it makes no symbolic link.
    fn read(cmd: &'c SimpleCommand) -> Option<Self> {
        let mut ln = Ln {
            operands: Vec::new(),
            into: None,
            no_dir: false,
            relative: false,
        };
        let mut symbolic = false;
        let mut args = cmd.args.iter();
        let mut options_done = false;
        while let Some(arg) = args.next() {
            let text = arg.text.as_str();
            if options_done || !text.starts_with('-') || text == "-" {
                ln.operands.push(arg);
                continue;
            }
            match text {
                "--" => options_done = true,
                "--symbolic" | "--symbolic-link" => symbolic = true,
                "--no-target-directory" => ln.no_dir = true,
                "--relative" => ln.relative = true,
                "--target-directory" => ln.into = args.next().map(dir),
                "--suffix" => {
                    args.next();
                }
                _ if text.starts_with("--target-directory=") => {
                    let value = text.trim_start_matches("--target-directory=");
                    ln.into = Some((value.to_owned(), arg.literal));
                }
                _ if text.starts_with("--") => {}
                _ => {
                    let flags = &text[1..];
                    // A value in the cluster (`-tDIR`, `-S~`) or in the next argument.
                    let valued = flags.find(['t', 'S']);
                    let own = valued.map_or(flags, |i| &flags[..=i]);
                    symbolic |= own.contains('s');
                    ln.no_dir |= own.contains('T');
                    ln.relative |= own.contains('r');
                    if let Some(i) = valued {
                        let value = if i + 1 == flags.len() {
                            args.next().map(dir)
                        } else {
                            Some((flags[i + 1..].to_owned(), arg.literal))
                        };
                        if flags.as_bytes()[i] == b't' {
                            ln.into = value;
                        }
                    }
                }
            }
        }
        symbolic.then_some(ln)
    }
}

/// An option's value as a directory: its text, and whether it is literal.
fn dir(arg: &Arg) -> (String, bool) {
    (arg.text.clone(), arg.literal)
}

/// How a string's `cd`s look their directory up, from what it sets.
#[derive(Clone, Copy)]
struct Lookup {
    /// `CDPATH` is set somewhere in the string: a relative `cd` may be looked up elsewhere.
    cdpath: bool,
    /// `set -P` somewhere in the string: every `cd` is physical.
    physical: bool,
}

/// What a command does to the working directory of the commands after it.
enum Cd {
    /// Nothing.
    No,
    /// It moves to a directory known before running.
    To(PathBuf),
    /// It moves where only running tells.
    Unknown,
}

/// The working directory after `cd DIR` / `pushd DIR`: known when DIR is a literal path
/// (`relative_unknown`: a relative one is not, since the directory it is relative to, or a
/// `CDPATH` it is looked up in, is not known). Unknown for a glob, a variable or a
/// substitution, `cd -` (the previous directory), `popd`, `pushd` without a directory or with an
/// option (`-n` stays, `+N`/`-N` rotate), and `cd -P` (or any `cd` after `set -P`) through
/// `..`, which leaves a symbolic link's target rather than the link: lexical `..` is what a
/// logical `cd`, bash's default, does.
fn next_cwd(
    cmd: &SimpleCommand,
    cwd: &Path,
    home: &Path,
    relative_unknown: bool,
    set_physical: bool,
) -> Cd {
    let program = cmd.program.as_str();
    if program == "popd" {
        return Cd::Unknown;
    }
    if !matches!(program, "cd" | "chdir" | "pushd") {
        return Cd::No;
    }
    let mut options = Vec::new();
    let mut operand = None;
    let mut args = cmd.args.iter();
    while let Some(arg) = args.next() {
        if arg.text == "--" {
            operand = args.next();
            break;
        }
        if arg.text.len() > 1 && arg.text.starts_with(['-', '+']) {
            options.push(arg.text.as_str());
            continue;
        }
        operand = Some(arg);
        break;
    }
    let physical = set_physical || options.iter().any(|o| o.contains('P'));
    match operand {
        _ if program == "pushd" && !options.is_empty() => Cd::Unknown,
        None if program == "pushd" => Cd::Unknown,
        None => Cd::To(home.to_path_buf()),
        Some(dir) if dir.text == "-" || !dir.literal || super::globs::is_glob(&dir.text) => {
            Cd::Unknown
        }
        Some(dir) if physical && dir.text.split('/').any(|part| part == "..") => Cd::Unknown,
        Some(dir) => {
            let absolute = dir.text.starts_with('/') || dir.text.starts_with('~');
            if relative_unknown && !absolute {
                return Cd::Unknown;
            }
            Cd::To(paths::resolve(&dir.text, cwd, home).lexical)
        }
    }
}

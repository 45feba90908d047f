//! A path a command names with glob characters (`cat .e*`, `cat ~/.ss?/id_*`) is every name it
//! could match: the protected names each of its parts could match when the command runs (a file
//! an earlier part of the command makes counts too), and what it matches on disk now (a
//! protected path of the settings' own, `secrets/prod.json` for `secrets/p*`). Any of them
//! protected refuses the command, as the name itself would.

use std::path::{Path, PathBuf};

/// Names the protections and the secret list are written in, stood in for a part of a glob
/// that could match them.
const PROTECTED_NAMES: &[&str] = &[
    ".env",
    ".env.local",
    ".env.production",
    ".envrc",
    ".ssh",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "id_dsa",
    ".aws",
    "credentials",
    "credentials.toml",
    ".gnupg",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".pgpass",
    ".docker",
    "config.json",
    ".kube",
    "config",
    ".git",
    "hooks",
    "pre-commit",
    ".gitmodules",
    ".vscode",
    "tasks.json",
    ".husky",
    ".warden",
    ".claude",
    ".github",
    "workflows",
    ".config",
    "gh",
    "hosts.yml",
    ".azure",
    "accessTokens.json",
    "gcloud",
    ".bashrc",
    ".zshrc",
    ".profile",
    ".bash_profile",
    ".idea",
];

/// How many names one glob stands for at the most (its parts' choices multiplied, and what is
/// on disk): past it, the first ones.
const MOST: usize = 256;

/// Whether the shell would expand `raw`: a glob, a brace expansion or an extglob pattern.
pub(super) fn is_glob(raw: &str) -> bool {
    raw.contains(['*', '?', '[']) || raw.contains('{') || raw.contains('(')
}

/// The names `raw` could stand for, written as paths the policy resolves like any other: its
/// brace expansions and extglob alternatives, then for each of them every part replaced by the
/// protected names it could match and by a plain name of its shape, and the paths it matches on
/// disk now under `cwd` (or `home`, for `~/…`).
pub(super) fn candidates(raw: &str, cwd: &Path, home: &Path, ruled: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let words = expansions(raw);
    if words.len() >= MOST {
        // Too many names to go through: read as every protected name where they stand.
        let before = raw.split(['{', '(']).next().unwrap_or_default();
        let dir = before.rsplit_once('/').map_or("", |(dir, _)| dir);
        for name in PROTECTED_NAMES {
            out.push(if dir.is_empty() {
                (*name).to_owned()
            } else {
                format!("{dir}/{name}")
            });
        }
    }
    for word in words {
        if word.contains(['*', '?', '[']) {
            out.extend(glob_candidates(&word, cwd, home, ruled));
        } else {
            out.push(word);
        }
        if out.len() >= 2 * MOST {
            break;
        }
    }
    out.dedup();
    out
}

/// The words brace expansion makes of `raw` (`.{e,x}nv`: `.env`, `.xnv`; `.{d..f}nv`), and
/// an extglob pattern's alternatives (`.@(env|x)`; `!(…)` as `*`), at most [`MOST`].
fn expansions(raw: &str) -> Vec<String> {
    let mut done = Vec::new();
    let mut todo = vec![raw.to_owned()];
    while let Some(word) = todo.pop() {
        if done.len() + todo.len() >= MOST {
            done.push(word);
            continue;
        }
        match first_group(&word) {
            Some((before, alternatives, after)) => {
                for alternative in alternatives {
                    todo.push(format!("{before}{alternative}{after}"));
                }
            }
            None => done.push(word),
        }
    }
    done
}

/// The first `{…}` with a `,` or `..` at its top level, or extglob `@(…)`, `?(…)`, `*(…)`,
/// `+(…)`, `!(…)`: what stands before it, its alternatives, what follows.
fn first_group(word: &str) -> Option<(String, Vec<String>, String)> {
    let chars: Vec<char> = word.chars().collect();
    for (start, &c) in chars.iter().enumerate() {
        let extglob =
            c == '(' && start > 0 && matches!(chars[start - 1], '@' | '?' | '*' | '+' | '!');
        if c != '{' && !extglob {
            continue;
        }
        let close = if c == '{' { '}' } else { ')' };
        let mut depth = 0;
        let mut parts = vec![String::new()];
        let mut end = None;
        for (k, &d) in chars.iter().enumerate().skip(start + 1) {
            match d {
                '{' | '(' => depth += 1,
                _ if d == close && depth == 0 => {
                    end = Some(k);
                    break;
                }
                '}' | ')' => depth -= 1,
                ',' | '|' if depth == 0 => {
                    parts.push(String::new());
                    continue;
                }
                _ => {}
            }
            if let Some(last) = parts.last_mut() {
                last.push(d);
            }
        }
        let end = end?;
        let after: String = chars[end + 1..].iter().collect();
        if extglob {
            let kind = chars[start - 1];
            let before: String = chars[..start - 1].iter().collect();
            let mut alternatives = if kind == '!' {
                vec!["*".to_owned()]
            } else {
                parts
            };
            if matches!(kind, '?' | '*') {
                alternatives.push(String::new());
            }
            return Some((before, alternatives, after));
        }
        let before: String = chars[..start].iter().collect();
        if parts.len() > 1 {
            return Some((before, parts, after));
        }
        if let Some((from, to)) = parts[0].split_once("..") {
            return Some((before, sequence(from, to)?, after));
        }
    }
    None
}

/// `{a..e}` or `{1..5}`, at most [`MOST`] items.
fn sequence(from: &str, to: &str) -> Option<Vec<String>> {
    if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        let (lo, hi) = (a.min(b), a.max(b));
        return Some((lo..=hi).take(MOST).map(|n| n.to_string()).collect());
    }
    let (mut a, mut b) = (from.chars(), to.chars());
    match (a.next(), a.next(), b.next(), b.next()) {
        (Some(x), None, Some(y), None) => {
            let (lo, hi) = (x.min(y), x.max(y));
            Some((lo..=hi).take(MOST).map(String::from).collect())
        }
        _ => None,
    }
}

/// The names glob `raw` could stand for (see [`candidates`]); `ruled` are the names and name
/// patterns the settings' deny and ask path rules are written in (`*appsettings*`), each a
/// name a part could match too (`*.json` could be `appsettings.json`).
fn glob_candidates(raw: &str, cwd: &Path, home: &Path, ruled: &[String]) -> Vec<String> {
    let mut out: Vec<String> = vec![String::new()];
    let absolute = raw.starts_with('/');
    for part in raw.split('/').filter(|p| !p.is_empty()) {
        let choices: Vec<String> = if is_glob(part) {
            // A part that is all wildcards (`src/*`) is what is on disk: read as every
            // protected name, no glob would be a read.
            let aimed = part.chars().any(|c| !matches!(c, '*' | '?'));
            let mut choices: Vec<String> = PROTECTED_NAMES
                .iter()
                .filter(|name| aimed && matches(part, name))
                .map(|name| (*name).to_owned())
                .collect();
            if aimed {
                choices.extend(
                    ruled
                        .iter()
                        .filter_map(|pattern| witness(part, pattern))
                        .filter(|name| !name.is_empty() && matches(part, name)),
                );
            }
            choices.push(plain(part));
            choices
        } else {
            vec![part.to_owned()]
        };
        let mut next = Vec::new();
        for prefix in &out {
            for choice in &choices {
                if next.len() < MOST {
                    next.push(if prefix.is_empty() {
                        choice.clone()
                    } else {
                        format!("{prefix}/{choice}")
                    });
                }
            }
        }
        out = next;
    }
    if absolute {
        for path in &mut out {
            path.insert(0, '/');
        }
    }
    out.extend(on_disk(raw, cwd, home));
    out
}

/// The names and name patterns deny and ask path rules are written in, for [`candidates`]: each
/// part of the rule's path that is not all wildcards (`Read(**/*appsettings*)`:
/// `*appsettings*`; `Read(secrets/**)`: `secrets`).
pub(super) fn ruled_names(rules: &[crate::rules::Rule]) -> Vec<String> {
    let mut names: Vec<String> = rules
        .iter()
        .filter(|r| r.kind != crate::rules::RuleKind::Allow && r.path_globs().is_some())
        .filter_map(|r| {
            let text = r.text();
            let spec = &text[text.find('(')? + 1..text.strip_suffix(')')?.len()];
            Some(spec.split('/').map(str::to_owned).collect::<Vec<_>>())
        })
        .flatten()
        .filter(|part| part.chars().any(|c| !matches!(c, '*' | '?')) && part != "~")
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// A name both globs match, if there is one: `*.json` and `*appsettings*` share
/// `appsettings.json`. Globs with brackets or braces are not compared (`None`).
pub(super) fn witness(a: &str, b: &str) -> Option<String> {
    if [a, b].iter().any(|g| g.contains(['[', '{', '\\'])) {
        return None;
    }
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut failed = std::collections::HashSet::new();
    let mut out = String::new();
    meet(&a, &b, (0, 0), &mut failed, &mut out).then_some(out)
}

/// Whether `left[at.0..]` and `right[at.1..]` match a common name, written to `out` if so;
/// `failed` keeps the positions known not to, so the search is quadratic at most.
fn meet(
    left: &[char],
    right: &[char],
    at: (usize, usize),
    failed: &mut std::collections::HashSet<(usize, usize)>,
    out: &mut String,
) -> bool {
    if failed.contains(&at) {
        return false;
    }
    let (li, ri) = at;
    let len = out.len();
    let mut next = |out: &mut String, ch: Option<char>, step: (usize, usize)| {
        out.extend(ch.map(|ch| if ch == '?' { 'x' } else { ch }));
        meet(left, right, (li + step.0, ri + step.1), failed, out)
    };
    let found = match (left.get(li), right.get(ri)) {
        (None, None) => true,
        (Some('*'), _) if next(out, None, (1, 0)) => true,
        (_, Some('*')) if next(out, None, (0, 1)) => true,
        // A star takes one character of the other side and stays.
        (Some('*'), Some(&ch)) => next(out, Some(ch), (0, 1)),
        (Some(&ch), Some('*')) => next(out, Some(ch), (1, 0)),
        (Some(&lc), Some(&rc)) if lc == rc || lc == '?' || rc == '?' => {
            next(out, Some(if lc == '?' { rc } else { lc }), (1, 1))
        }
        _ => false,
    };
    if !found {
        out.truncate(len);
        failed.insert(at);
    }
    found
}

/// A name `part` matches: each `*` as `x`, each `?` as `x`, a bracket as its first member.
fn plain(part: &str) -> String {
    let mut out = String::new();
    let mut chars = part.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' | '?' => out.push('x'),
            '[' => {
                let class: String = chars.by_ref().take_while(|c| *c != ']').collect();
                out.extend(class.trim_start_matches(['!', '^']).chars().next());
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether glob `part` matches `name` as the shell would: a leading `.` only where the part
/// starts with one (hidden files are not matched by `*`; a command that changes that is
/// rated on its own: `shopt -s dotglob`, `GLOBIGNORE`).
fn matches(part: &str, name: &str) -> bool {
    if name.starts_with('.') && !part.starts_with('.') {
        return false;
    }
    globset::GlobBuilder::new(part)
        .literal_separator(true)
        .build()
        .is_ok_and(|glob| glob.compile_matcher().is_match(name))
}

/// What `raw` matches on disk now, at most [`MOST`] paths.
fn on_disk(raw: &str, cwd: &Path, home: &Path) -> Vec<String> {
    let (base, rest): (PathBuf, &str) = if let Some(rest) = raw.strip_prefix("~/") {
        (home.to_path_buf(), rest)
    } else if let Some(rest) = raw.strip_prefix('/') {
        (PathBuf::from("/"), rest)
    } else {
        (cwd.to_path_buf(), raw)
    };
    let mut found = vec![base];
    for part in rest.split('/').filter(|p| !p.is_empty()) {
        let mut next = Vec::new();
        for dir in &found {
            if !is_glob(part) {
                next.push(dir.join(part));
                continue;
            }
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten().take(4 * MOST) {
                let name = entry.file_name();
                if let Some(name) = name.to_str()
                    && matches(part, name)
                    && next.len() < MOST
                {
                    next.push(dir.join(name));
                }
            }
        }
        found = next;
    }
    found
        .into_iter()
        .filter(|p| p.exists())
        .filter_map(|p| p.to_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_stands_for_the_protected_names_it_could_match() {
        let none = Path::new("/nonexistent-warden-test");
        let has = |raw: &str, want: &str| {
            let got = candidates(raw, none, none, &[]);
            assert!(got.iter().any(|c| c == want), "{raw}: {got:?}");
        };
        has(".e*", ".env");
        has(".en?", ".env");
        has(".[e]nv", ".env");
        has("~/.ss?/id_*", "~/.ssh/id_rsa");
        has("/home/*/.ssh/id_rsa", "/home/x/.ssh/id_rsa");
        has("*/.env", "x/.env");
        has(".*", ".env");
        has(".git/hoo*/pre-*", ".git/hooks/pre-commit");
        // `*` does not match a hidden name, as in the shell.
        let star = candidates("*", none, none, &[]);
        assert!(!star.iter().any(|c| c.starts_with('.')), "{star:?}");
        assert_eq!(candidates("src/*.rs", none, none, &[]), ["src/x.rs"]);
        // Brace expansion and extglob.
        has(".{e,x}nv", ".env");
        has("{.,}env", ".env");
        has(".env{,}", ".env");
        has(".{d..f}nv", ".env");
        has(".@(env|x)", ".env");
        has(".gi{t,}/hooks/pre-commit", ".git/hooks/pre-commit");
        has("~/.bash{rc,}", "~/.bashrc");
        // Past the cap, every protected name where the names stand.
        has(".{a..z}{a..z}{a..z}", ".env");
        has("{.env,x{1..300}}", ".env");
    }

    #[test]
    fn two_globs_meet_in_a_name_both_match() {
        let meets = |a: &str, b: &str, want: Option<&str>| {
            assert_eq!(witness(a, b).as_deref(), want, "{a} / {b}");
            if let Some(name) = witness(a, b) {
                assert!(matches(a, &name) && matches(b, &name), "{a} / {b}: {name}");
            }
        };
        meets("*.json", "*appsettings*", Some("appsettings.json"));
        meets("s*", "secrets", Some("secrets"));
        meets("a?c", "*b*", Some("abc"));
        meets("*.rs", "*.json", None);
        meets("x*", "y*", None);
        meets("*", "*", Some(""));
        meets("*.[jt]s", "*.js", None);
        // The names of the settings' rules are candidates of a glob like the protected ones.
        let none = Path::new("/nonexistent-warden-test");
        let ruled = ["*appsettings*".to_owned(), "secrets".to_owned()];
        let got = candidates("./**/*.json", none, none, &ruled);
        assert!(got.iter().any(|c| c == "./xx/appsettings.json"), "{got:?}");
        let got = candidates("s*/key", none, none, &ruled);
        assert!(got.iter().any(|c| c == "secrets/key"), "{got:?}");
    }

    #[test]
    fn what_a_glob_matches_on_disk_is_among_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("secrets")).unwrap();
        std::fs::write(dir.path().join("secrets/prod.json"), "{}").unwrap();
        let got = candidates("secrets/p*", dir.path(), dir.path(), &[]);
        let want = dir.path().join("secrets/prod.json");
        assert!(got.iter().any(|c| Path::new(c) == want), "{got:?}");
    }
}

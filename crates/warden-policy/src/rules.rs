//! Permission rules: `Tool` or `Tool(specifier)` in allow, ask and deny lists (SPEC P6).

use std::fmt;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobSetBuilder};
use warden_protocol::wildcard;

/// Which list a rule is in. Ordered by precedence: deny beats ask beats allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleKind {
    Allow,
    Ask,
    Deny,
}

impl RuleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

/// What a rule is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleTool {
    Bash,
    /// Every reading tool and every read by a shell command.
    Read,
    /// Every writing tool and every write by a shell command (`Write` is the same).
    Edit,
    Glob,
    Grep,
    WebFetch,
    Skill,
    /// A custom or MCP tool, by name.
    Other(String),
}

/// A rule could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid rule {rule:?}: {reason}")]
pub struct RuleError {
    pub rule: String,
    pub reason: String,
}

/// One parsed rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub kind: RuleKind,
    pub tool: RuleTool,
    text: String,
    spec: Spec,
}

#[derive(Debug, Clone)]
enum Spec {
    Any,
    /// A command pattern: `*` matches anything; a trailing ` *` also matches nothing.
    Command(String),
    /// Parsed, not compiled: the engine compiles every path rule into one set per list.
    Path(Vec<Glob>),
    Domain {
        host: String,
        subdomains: bool,
    },
    Text(String),
}

/// Where relative path rules are anchored.
#[derive(Debug, Clone)]
pub struct Anchors {
    pub project_root: PathBuf,
    pub cwd: PathBuf,
    pub home: PathBuf,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Rule {
    /// Parses `Tool` or `Tool(specifier)`.
    pub fn parse(text: &str, kind: RuleKind, anchors: &Anchors) -> Result<Self, RuleError> {
        let err = |reason: &str| RuleError {
            rule: text.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = text.trim();
        let (name, spec) = match trimmed.find('(') {
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(err("expected a closing ')' at the end"));
                };
                (&trimmed[..open], Some(inner.trim()))
            }
            None if trimmed.contains(')') => return Err(err("a ')' without its '('")),
            None => (trimmed, None),
        };
        let valid_name = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
        if !valid_name {
            return Err(err(
                "expected a tool name such as Bash, Read, Edit or WebFetch before the '('",
            ));
        }
        if spec.is_some_and(str::is_empty) {
            return Err(err(
                "an empty specifier; write the tool name alone to match every call",
            ));
        }
        let tool = match name {
            "Bash" => RuleTool::Bash,
            "Read" => RuleTool::Read,
            "Edit" | "Write" | "MultiEdit" => RuleTool::Edit,
            "Glob" => RuleTool::Glob,
            "Grep" => RuleTool::Grep,
            "WebFetch" => RuleTool::WebFetch,
            "Skill" => RuleTool::Skill,
            other => RuleTool::Other(other.to_owned()),
        };
        let spec = match (spec, &tool) {
            (None, _) => Spec::Any,
            (Some(spec), RuleTool::Bash) => Spec::Command(normalise_command(spec)),
            (Some(spec), RuleTool::Read | RuleTool::Edit | RuleTool::Glob | RuleTool::Grep) => {
                Spec::Path(path_glob(spec, anchors).map_err(|reason| err(&reason))?)
            }
            (Some(spec), RuleTool::WebFetch) => {
                let Some(domain) = spec.strip_prefix("domain:") else {
                    return Err(err(
                        "WebFetch rules take domain:HOST, e.g. WebFetch(domain:example.com)",
                    ));
                };
                let domain = domain.trim().to_ascii_lowercase();
                match domain.strip_prefix("*.") {
                    Some(host) if !host.is_empty() => Spec::Domain {
                        host: host.to_owned(),
                        subdomains: true,
                    },
                    _ if domain.is_empty() || domain.contains(['/', '*', ' ']) => {
                        return Err(err("expected a host name, or *.HOST for its subdomains"));
                    }
                    _ => Spec::Domain {
                        host: domain,
                        subdomains: false,
                    },
                }
            }
            (Some(spec), RuleTool::Skill | RuleTool::Other(_)) => Spec::Text(spec.to_owned()),
        };
        Ok(Self {
            kind,
            tool,
            text: trimmed.to_owned(),
            spec,
        })
    }

    /// Why this rule allows more than a remembered approval may (see [`Engine::too_broad`]).
    ///
    /// [`Engine::too_broad`]: crate::Engine::too_broad
    pub(crate) fn too_broad(&self, anchors: &Anchors) -> Option<String> {
        match (&self.spec, &self.tool) {
            (Spec::Any, RuleTool::Skill | RuleTool::Other(_)) | (Spec::Text(_), _) => None,
            (Spec::Any, _) => Some(format!(
                "{} with no pattern allows every call of the tool",
                self.text
            )),
            (Spec::Command(pattern), _) => crate::approvals::too_broad_command(pattern),
            (Spec::Path(globs), _) => {
                let glob = globs.first()?.glob();
                let literal: Vec<&str> = glob
                    .split('/')
                    .take_while(|part| !part.contains(['*', '?', '[', '{', '\\']))
                    .collect();
                let base = crate::paths::normalize(&Path::new("/").join(literal.join("/")));
                let rest = glob[literal.join("/").len()..].trim_start_matches('/');
                crate::approvals::too_broad_place(
                    &base,
                    rest.is_empty() || rest.chars().all(|c| matches!(c, '*' | '/')),
                    anchors,
                )
            }
            (Spec::Domain { host, subdomains }, _) => (*subdomains && !host.contains('.'))
                .then(|| format!("it covers every host under .{host}")),
        }
    }

    /// Whether the rule names its tool alone, matching every call.
    pub fn is_any(&self) -> bool {
        matches!(self.spec, Spec::Any)
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a command rule's pattern starts with this literal program name, for indexing.
    pub(crate) fn command_program(&self) -> Option<&str> {
        match &self.spec {
            Spec::Command(pattern) => {
                let first = pattern.split(' ').next().unwrap_or_default();
                (!first.contains('*') && !first.is_empty()).then_some(first)
            }
            _ => None,
        }
    }

    /// Whether this Bash rule matches a command line (argv joined by single spaces).
    pub fn matches_command(&self, line: &str) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Command(pattern) => command_matches(pattern, line),
            _ => false,
        }
    }

    /// The globs of a path rule.
    pub(crate) fn path_globs(&self) -> Option<&[Glob]> {
        match &self.spec {
            Spec::Path(globs) => Some(globs),
            _ => None,
        }
    }

    /// Whether this path rule matches an absolute path (compiles the rule each call; the engine
    /// uses its compiled index instead).
    pub fn matches_path(&self, path: &Path) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Path(globs) => {
                let mut set = GlobSetBuilder::new();
                for glob in globs {
                    set.add(glob.clone());
                }
                set.build().is_ok_and(|set| set.is_match(path))
            }
            _ => false,
        }
    }

    /// Whether this `WebFetch` rule matches a host.
    pub fn matches_host(&self, host: &str) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Domain {
                host: want,
                subdomains,
            } => {
                let host = host.to_ascii_lowercase();
                if *subdomains {
                    host.ends_with(&format!(".{want}"))
                } else {
                    host == *want
                }
            }
            _ => false,
        }
    }

    /// Whether this rule matches a free-form target (skills, custom tools).
    pub fn matches_text(&self, target: &str) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Text(pattern) => wildcard(pattern, target),
            _ => false,
        }
    }

    /// Whether this rule covers a call of the custom or MCP tool `name` with arguments `target`
    /// (their JSON text): a rule naming the tool (`mcp__gh__search`, with an optional pattern of
    /// the arguments), a server's tools as Claude Code writes them (`mcp__gh`), or
    /// `Mcp(SERVER)` and `Mcp(SERVER:TOOL)`, either part with `*` wildcards.
    pub fn covers_tool(&self, name: &str, target: &str) -> bool {
        let RuleTool::Other(ruled) = &self.tool else {
            return false;
        };
        if ruled == name {
            return match (&self.spec, mcp_parts(name)) {
                (Spec::Text(pattern), Some(_)) => {
                    crate::arguments::covers(pattern, target, self.kind != RuleKind::Allow)
                }
                _ => self.matches_text(target),
            };
        }
        // `readMcpResource` reads a resource of the server its arguments name.
        let resource_of = (name == "readMcpResource")
            .then(|| serde_json::from_str::<serde_json::Value>(target).ok())
            .flatten()
            .and_then(|args| args.get("server")?.as_str().map(str::to_owned));
        let split = mcp_parts(name);
        let Some((server, tool)) = resource_of
            .as_deref()
            .map(|server| (server, "readMcpResource"))
            .or(split)
        else {
            return false;
        };
        if ruled == "Mcp" {
            return match &self.spec {
                Spec::Any => true,
                Spec::Text(pattern) if pattern.contains(':') => {
                    wildcard(pattern, &format!("{server}:{tool}"))
                }
                Spec::Text(pattern) => wildcard(pattern, server),
                _ => false,
            };
        }
        ruled.strip_prefix("mcp__") == Some(server)
            && match &self.spec {
                Spec::Text(pattern) => {
                    crate::arguments::covers(pattern, target, self.kind != RuleKind::Allow)
                }
                _ => self.matches_text(target),
            }
    }
}

/// The server and tool a `mcp__SERVER__TOOL` name stands for.
pub(crate) fn mcp_parts(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("mcp__")?.split_once("__")
}

/// `npm test:*` (an older spelling) means `npm test *`; runs of spaces are one space.
fn normalise_command(spec: &str) -> String {
    let spec = spec
        .strip_suffix(":*")
        .map_or_else(|| spec.to_owned(), |s| format!("{s} *"));
    spec.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn command_matches(pattern: &str, line: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix(" *") {
        // The word boundary: `ls *` matches `ls` and `ls -la`, never `lsof`.
        if wildcard(prefix, line) {
            return true;
        }
        return wildcard(pattern, line);
    }
    wildcard(pattern, line)
}

/// A gitignore-style path specifier as an absolute glob: `//abs`, `~/…`, `/…` (the project root),
/// `./…` or bare (the working directory; a bare name with no `/` matches at any depth below it).
fn path_glob(spec: &str, anchors: &Anchors) -> Result<Vec<Glob>, String> {
    let (base, rest): (PathBuf, &str) = if let Some(rest) = spec.strip_prefix("//") {
        (PathBuf::from("/"), rest)
    } else if let Some(rest) = spec.strip_prefix("~/") {
        (anchors.home.clone(), rest)
    } else if spec == "~" {
        (anchors.home.clone(), "")
    } else if let Some(rest) = spec.strip_prefix('/') {
        (anchors.project_root.clone(), rest)
    } else if let Some(rest) = spec.strip_prefix("./") {
        (anchors.cwd.clone(), rest)
    } else {
        (anchors.cwd.clone(), spec)
    };
    // The anchor is a directory's name, never a pattern: `[` in it is a bracket, not a class.
    let base = escape_glob(&base.display().to_string());
    let base = base.trim_end_matches('/');
    let rest = rest.trim_end_matches('/');
    let glob = if rest.is_empty() {
        base.to_owned()
    } else if spec.contains('/') || spec.starts_with('~') {
        format!("{base}/{rest}")
    } else {
        format!("{base}/**/{rest}")
    };
    [glob.clone(), format!("{glob}/**")]
        .iter()
        .map(|pattern| {
            GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("invalid path pattern: {e}"))
        })
        .collect()
}

/// `text` with every character a glob reads specially escaped.
pub(crate) fn escape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '!') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchors() -> Anchors {
        Anchors {
            project_root: "/p".into(),
            cwd: "/p/sub".into(),
            home: "/h".into(),
        }
    }

    fn rule(text: &str) -> Rule {
        Rule::parse(text, RuleKind::Allow, &anchors()).unwrap()
    }

    #[test]
    fn a_trailing_star_keeps_the_word_boundary() {
        let r = rule("Bash(ls *)");
        assert!(r.matches_command("ls"));
        assert!(r.matches_command("ls -la src"));
        assert!(!r.matches_command("lsof"));
        assert!(rule("Bash(npm test:*)").matches_command("npm test --watch"));
        assert!(rule("Bash(git * main)").matches_command("git push origin main"));
        assert!(!rule("Bash(npm test)").matches_command("npm test --watch"));
    }

    #[test]
    fn path_anchors() {
        assert!(rule("Read(//etc/**)").matches_path(Path::new("/etc/passwd")));
        assert!(rule("Read(~/Private/**)").matches_path(Path::new("/h/Private/a/b")));
        assert!(rule("Edit(/src/**)").matches_path(Path::new("/p/src/x.rs")));
        assert!(!rule("Edit(/src/**)").matches_path(Path::new("/p/sub/src/x.rs")));
        assert!(rule("Edit(src/**)").matches_path(Path::new("/p/sub/src/x.rs")));
        assert!(rule("Read(.env)").matches_path(Path::new("/p/sub/deep/.env")));
        assert!(rule("Read(secrets)").matches_path(Path::new("/p/sub/secrets/key")));
    }

    #[test]
    fn domains_and_subdomains() {
        assert!(rule("WebFetch(domain:example.com)").matches_host("EXAMPLE.com"));
        assert!(!rule("WebFetch(domain:example.com)").matches_host("api.example.com"));
        assert!(rule("WebFetch(domain:*.example.com)").matches_host("api.example.com"));
        assert!(!rule("WebFetch(domain:*.example.com)").matches_host("example.com"));
    }

    #[test]
    fn malformed_rules_are_errors() {
        for bad in [
            "Bash(ls",
            "Bash)",
            "(ls)",
            "Bash()",
            "WebFetch(example.com)",
            "Read([z-a])",
            "9tool",
        ] {
            assert!(
                Rule::parse(bad, RuleKind::Deny, &anchors()).is_err(),
                "{bad}"
            );
        }
    }
}

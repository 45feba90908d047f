//! The secret patterns.
//!
//! Each rule is a regex whose `secret` group is replaced with [`REDACTED`]; the rest of the match
//! (a `password=`, a `ghp_` prefix, the PEM armour lines) is kept, so a reader can still tell what
//! was there. `(?-u:\b)` is an ASCII word boundary: it keeps the lazy DFA usable on non-ASCII
//! text, where a Unicode `\b` would force a slower engine.

use regex::Captures;

pub(super) const REDACTED: &str = "[REDACTED]";

pub(super) struct Rule {
    /// Lower-case literals of which at least one occurs in any text the pattern can match: a
    /// rule whose needles are all absent is skipped without running (or compiling) its regex.
    pub(super) needles: &'static [&'static str],
    pub(super) pattern: &'static str,
    /// A last check on the secret; a match it rejects is left alone.
    pub(super) accept: fn(&str) -> bool,
}

/// The name part of `name=value` and `name: "value"` forms. A name matches when it ends with one
/// of these words (`DB_PASSWORD`, `github-token`), so `password_field` and `token_count` do not.
macro_rules! secret_name {
    () => {
        r"(?i)(?-u:\b)[A-Za-z0-9_.\-]*(?:password|passwd|pwd|passphrase|token|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|credentials?)"
    };
}

/// In order: specific formats first, so their prefix hint survives the generic rules after them.
pub(super) fn rules() -> Vec<Rule> {
    let mut rules = vec![
        // PEM private key.
        Rule {
            needles: &["private key"],
            // Lazy body up to the first END line, or to the end of a truncated text.
            pattern: r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?P<secret>.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
            accept: any,
        },
        // Anthropic key.
        Rule {
            needles: &["sk-ant-"],
            pattern: r"(?-u:\b)sk-ant-[a-z]+[0-9]*-(?P<secret>[A-Za-z0-9_\-]{20,})",
            accept: any,
        },
        // OpenAI key.
        Rule {
            needles: &["sk-"],
            pattern: r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?(?P<secret>[A-Za-z0-9_\-]{20,})",
            accept: has_digit,
        },
        // Stripe key.
        Rule {
            needles: &["_live_", "_test_"],
            pattern: r"(?-u:\b)(?:sk|rk)_(?:live|test)_(?P<secret>[A-Za-z0-9]{16,})",
            accept: any,
        },
        // AWS access key id.
        Rule {
            needles: &["akia", "asia"],
            pattern: r"(?-u:\b)(?:AKIA|ASIA)(?P<secret>[0-9A-Z]{16})(?-u:\b)",
            accept: any,
        },
        // AWS secret access key.
        Rule {
            needles: &["aws_secret_access_key"],
            pattern: r#"(?i)aws_secret_access_key["']?\s*[:=]\s*["']?(?P<secret>[A-Za-z0-9/+=]{30,})"#,
            accept: any,
        },
        // GitHub token.
        Rule {
            needles: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
            pattern: r"(?-u:\b)(?:gh[pousr]_(?P<secret>[A-Za-z0-9]{30,})|github_pat_(?P<pat>[A-Za-z0-9_]{22,}))",
            accept: any,
        },
        // GitLab token.
        Rule {
            needles: &["glpat-"],
            pattern: r"(?-u:\b)glpat-(?P<secret>[A-Za-z0-9_\-]{20,})",
            accept: any,
        },
        // Slack token.
        Rule {
            needles: &["xox"],
            pattern: r"(?-u:\b)xox[abposr]-(?P<secret>[A-Za-z0-9\-]{10,})",
            accept: any,
        },
        // Google API key.
        Rule {
            needles: &["aiza"],
            pattern: r"(?-u:\b)AIza(?P<secret>[0-9A-Za-z_\-]{35})",
            accept: any,
        },
        // JWT.
        Rule {
            needles: &["eyj"],
            pattern: r"(?-u:\b)(?P<secret>eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*)",
            accept: any,
        },
        // Authorization header.
        Rule {
            needles: &["authorization"],
            pattern: r#"(?i)(?-u:\b)(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest)\s+)?(?P<secret>[^\s"',;]+)"#,
            accept: not_a_reference,
        },
        // Bearer token.
        Rule {
            needles: &["bearer"],
            pattern: r"(?-u:\b)Bearer\s+(?P<secret>[A-Za-z0-9._~+/\-]{16,}=*)",
            accept: any,
        },
        // URL credentials.
        Rule {
            needles: &["://"],
            pattern: r"(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:(?P<secret>[^\s/@]+)@",
            accept: not_a_reference,
        },
    ];
    rules.extend(named_value_rules());
    rules
}

/// The words of `secret_name!`, as needles.
const NAMED: &[&str] = &["pass", "pwd", "token", "secret", "key", "credential"];

/// `password="…"`, `password=…`, `password: s3cret!` and values with high entropy after names
/// containing KEY, TOKEN or SECRET.
fn named_value_rules() -> [Rule; 4] {
    [
        // `name = "value"`, `"name": "value"`, `name: 'value'`.
        Rule {
            needles: NAMED,
            pattern: concat!(secret_name!(), r#"["']?\s*[:=]\s*["'](?P<secret>[^"'\n]+)"#),
            accept: not_a_reference,
        },
        Rule {
            needles: NAMED,
            // `name=value` without spaces, as in a shell, a URL query or a flag. With spaces it
            // is more likely code (`let token = next_token();`).
            pattern: concat!(
                secret_name!(),
                r#"=(?P<secret>[^\s"'&;,(){}<>\[\]]+)(?:[\s"'&;,]|$)"#
            ),
            accept: not_a_reference,
        },
        Rule {
            needles: NAMED,
            // `name: value` as in YAML or a header; code (`token: String`) rarely has a digit or
            // a symbol in the type, so one is required.
            pattern: concat!(
                secret_name!(),
                r#":[ \t]*(?P<secret>[^\s"'&;,(){}<>\[\]]{4,})(?:[\s"'&;,]|$)"#
            ),
            accept: |value| not_a_reference(value) && has_digit_or_symbol(value),
        },
        // Random-looking values after names containing KEY, TOKEN or SECRET.
        Rule {
            needles: &["key", "token", "secret"],
            pattern: r#"(?i)(?-u:\b)[A-Za-z0-9_.\-]*(?:key|token|secret)[A-Za-z0-9_.\-]*["']?\s*[:=]\s*["']?(?P<secret>[A-Za-z0-9+/=_.~\-]{16,})"#,
            accept: looks_random,
        },
    ]
}

/// Replaces the secret group of one match, or keeps the match when the rule rejects it.
pub(super) fn replace(caps: &Captures<'_>, accept: fn(&str) -> bool) -> String {
    let whole = &caps[0];
    let Some(secret) = caps.name("secret").or_else(|| caps.name("pat")) else {
        return whole.to_owned();
    };
    if !accept(secret.as_str()) {
        return whole.to_owned();
    }
    let start = caps.get(0).map_or(0, |m| m.start());
    let (from, to) = (secret.start() - start, secret.end() - start);
    format!("{}{REDACTED}{}", &whole[..from], &whole[to..])
}

fn any(_: &str) -> bool {
    true
}

fn has_digit(value: &str) -> bool {
    value.bytes().any(|b| b.is_ascii_digit())
}

fn has_digit_or_symbol(value: &str) -> bool {
    value
        .bytes()
        .any(|b| b.is_ascii_digit() || b"!@#%^*+=/~?$".contains(&b))
}

/// `$TOKEN`, `${TOKEN}` and `%TOKEN%` name a secret without being one; so does a value already
/// redacted.
fn not_a_reference(value: &str) -> bool {
    !(value.starts_with('$') || value.starts_with('%') || value.starts_with(REDACTED))
}

/// Random-looking: long, of at least two character classes, and with high Shannon entropy.
/// Random base64 of 16 characters scores about 3.7 bits per character; English words and
/// `snake_case` names score well under 3.5 and mostly have one class.
pub(super) fn looks_random(value: &str) -> bool {
    const MIN_BITS_PER_CHAR: f64 = 3.5;
    if value.len() < 16 {
        return false;
    }
    let classes = [
        value.bytes().any(|b| b.is_ascii_lowercase()),
        value.bytes().any(|b| b.is_ascii_uppercase()),
        value.bytes().any(|b| b.is_ascii_digit()),
    ];
    classes.iter().filter(|&&c| c).count() >= 2 && shannon_entropy(value) >= MIN_BITS_PER_CHAR
}

fn shannon_entropy(value: &str) -> f64 {
    let mut counts = [0_u32; 256];
    for b in value.bytes() {
        counts[usize::from(b)] += 1;
    }
    let len = f64::from(u32::try_from(value.len()).unwrap_or(u32::MAX));
    counts
        .iter()
        .filter(|&&n| n > 0)
        .map(|&n| {
            let p = f64::from(n) / len;
            -p * p.log2()
        })
        .sum()
}

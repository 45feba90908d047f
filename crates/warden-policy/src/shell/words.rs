//! Words: quotes and escapes removed, expansions kept as written, substitutions collected.

use brush_parser::ParserOptions;
use brush_parser::word::{self, TildeExpr, WordPiece, WordPieceWithSource};

use super::Arg;

/// A word resolved as far as it can be without running anything.
pub(super) struct Resolved {
    pub(super) arg: Arg,
    /// Command strings run by `$( )` and backticks inside the word.
    pub(super) substitutions: Vec<String>,
    /// Why the word could not be parsed, if it could not.
    pub(super) error: Option<String>,
}

/// Resolves one word of the source. A word that does not parse is kept as written and marked
/// non-literal, with the reason.
pub(super) fn resolve(raw: &str, options: &ParserOptions) -> Resolved {
    resolve_with(raw, options, false)
}

/// Resolves a here-document body (quotes are literal there).
pub(super) fn resolve_heredoc(raw: &str, options: &ParserOptions) -> Resolved {
    resolve_with(raw, options, true)
}

fn resolve_with(raw: &str, options: &ParserOptions, heredoc: bool) -> Resolved {
    // As for whole scripts (`walk.rs`): a panic in the word grammar makes the word unknown.
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if heredoc {
            word::parse_heredoc(raw, options)
        } else {
            word::parse(raw, options)
        }
    }));
    let Ok(parsed) = parsed else {
        return Resolved {
            arg: Arg {
                text: raw.to_owned(),
                literal: false,
            },
            substitutions: Vec::new(),
            error: Some(format!("the word grammar failed on {raw:?}")),
        };
    };
    match parsed {
        Ok(pieces) => {
            let mut out = Resolved {
                arg: Arg {
                    text: String::new(),
                    literal: true,
                },
                substitutions: Vec::new(),
                error: None,
            };
            pieces_into(&pieces, &mut out);
            out
        }
        Err(err) => Resolved {
            arg: Arg {
                text: raw.to_owned(),
                literal: false,
            },
            substitutions: Vec::new(),
            error: Some(format!("cannot parse the word {raw:?}: {err}")),
        },
    }
}

fn pieces_into(pieces: &[WordPieceWithSource], out: &mut Resolved) {
    for piece in pieces {
        piece_into(&piece.piece, out);
    }
}

fn piece_into(piece: &WordPiece, out: &mut Resolved) {
    match piece {
        WordPiece::Text(text) | WordPiece::SingleQuotedText(text) => out.arg.text.push_str(text),
        WordPiece::AnsiCQuotedText(text) => out.arg.text.push_str(&ansi_c(text)),
        WordPiece::EscapeSequence(text) => out
            .arg
            .text
            .push_str(text.strip_prefix('\\').unwrap_or(text)),
        WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
            pieces_into(inner, out);
        }
        WordPiece::TildeExpansion(tilde) => match tilde {
            TildeExpr::Home => out.arg.text.push('~'),
            TildeExpr::UserHome(user) => {
                out.arg.text.push('~');
                out.arg.text.push_str(user);
                out.arg.literal = false;
            }
            TildeExpr::WorkingDir
            | TildeExpr::OldWorkingDir
            | TildeExpr::NthDirFromTopOfDirStack { .. }
            | TildeExpr::NthDirFromBottomOfDirStack { .. } => {
                out.arg.text.push_str("~+");
                out.arg.literal = false;
            }
        },
        WordPiece::ParameterExpansion(expr) => {
            out.arg.text.push_str(&parameter_text(expr));
            out.arg.literal = false;
        }
        WordPiece::CommandSubstitution(command)
        | WordPiece::BackquotedCommandSubstitution(command) => {
            out.arg.text.push_str("$(…)");
            out.arg.literal = false;
            out.substitutions.push(command.clone());
        }
        WordPiece::ArithmeticExpression(expr) => {
            out.arg.text.push_str("$((…))");
            out.arg.literal = false;
            if expr.value.contains("$(") || expr.value.contains('`') {
                out.error = Some("a command substitution inside arithmetic".to_owned());
            }
            if assigns_a_dangerous_variable(&expr.value) {
                out.error = Some("an assignment to a variable that changes what runs".to_owned());
            }
        }
    }
}

/// `$NAME` for a plain expansion, `${…}` for the rest.
fn parameter_text(expr: &word::ParameterExpr) -> String {
    match expr {
        word::ParameterExpr::Parameter {
            parameter,
            indirect: false,
        } => match parameter {
            word::Parameter::Named(name) => format!("${name}"),
            other => other.to_string(),
        },
        // `${NAME:=…}` sets NAME: its name is kept, for what setting it would change.
        word::ParameterExpr::AssignDefaultValues {
            parameter: word::Parameter::Named(name),
            ..
        } => format!("${{{name}:=…}}"),
        _ => "${…}".to_owned(),
    }
}

/// The common escapes of `$'…'`; anything else is kept as written.
fn ansi_c(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    // Up to `most` digits of `radix`, as bash reads `\xHH`, `\NNN`, `\uHHHH`, `\UHHHHHHHH`.
    let number = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, radix: u32, most| {
        let mut digits = String::new();
        while digits.len() < most && chars.peek().is_some_and(|c| c.is_digit(radix)) {
            digits.extend(chars.next());
        }
        u32::from_str_radix(&digits, radix)
            .ok()
            .and_then(char::from_u32)
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some('\'') => out.push('\''),
            Some('"') => out.push('"'),
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('e' | 'E') => out.push('\u{1b}'),
            Some('f') => out.push('\u{c}'),
            Some('v') => out.push('\u{b}'),
            Some('x') => out.extend(number(&mut chars, 16, 2)),
            Some('u') => out.extend(number(&mut chars, 16, 4)),
            Some('U') => out.extend(number(&mut chars, 16, 8)),
            Some(d @ '0'..='7') => {
                let mut digits = String::from(d);
                while digits.len() < 3 && chars.peek().is_some_and(|c| c.is_digit(8)) {
                    digits.extend(chars.next());
                }
                out.extend(
                    u32::from_str_radix(&digits, 8)
                        .ok()
                        .and_then(char::from_u32),
                );
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Whether arithmetic text assigns (`=`, `+=`, …, not `==`) a variable that changes which code
/// runs or what a glob matches (`$((GLOBIGNORE=1))`).
pub(super) fn assigns_a_dangerous_variable(text: &str) -> bool {
    super::programs::DANGEROUS_ENV.iter().any(|name| {
        text.match_indices(name).any(|(at, _)| {
            let rest = text[at + name.len()..].trim_start();
            let rest = rest
                .strip_prefix(|c: char| "+-*/%&|^<>".contains(c))
                .unwrap_or(rest);
            rest.starts_with('=') && !rest.starts_with("==")
        })
    })
}

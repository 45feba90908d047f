//! A tokenizer for the common subset of shell: simple commands of plain, quoted and escaped
//! words, joined by `|`, `&&`, `||` and `;`, with `<`, `>`, `>>` and `N>&M` redirections and a
//! trailing comment. It is a shortcut, not a second grammar: at the first thing it is not sure of
//! (any expansion, substitution, grouping, reserved word, here-document, line break or unusual
//! operator) it answers `None` and the command goes to brush-parser. A property test and a
//! differential fuzz target hold its analyses equal to brush-parser's.

use super::Arg;

/// A script in the subset: `;`-separated lists of `&&`/`||` chains of pipelines of commands.
pub(super) type Script = Vec<Chain>;
/// Pipelines joined by `&&` or `||` (which of the two does not change the analysis).
pub(super) type Chain = Vec<Pipeline>;
/// Commands joined by `|`.
pub(super) type Pipeline = Vec<Command>;
/// The items of one simple command, in source order.
pub(super) type Command = Vec<Item>;

/// One item of a simple command.
#[derive(Debug)]
pub(super) enum Item {
    /// A word (every word here is literal: nothing in it expands).
    Word(Arg),
    /// `NAME=value` before the command's name.
    Assignment(String, String),
    /// A redirection to or from a file.
    Redirect(Redirect, String),
    /// `N>&M`, `>&-`: a descriptor duplicated or closed, no file.
    Duplicate,
}

/// What a file redirection does.
#[derive(Debug, Clone, Copy)]
pub(super) enum Redirect {
    Read,
    Write,
}

/// Words that mean something to the shell at the start of a command.
const RESERVED: &[&str] = &[
    "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for",
    "function", "if", "in", "select", "then", "time", "until", "while",
];

/// The command string as a script of the subset, or `None` when it is not (certainly) one.
pub(super) fn parse(source: &str) -> Option<Script> {
    // Line breaks end commands, continue lines and start here-documents: left to the grammar.
    if source.bytes().any(|b| b == b'\n' || b == b'\r' || b == 0) {
        return None;
    }
    let mut lexer = Lexer {
        source,
        bytes: source.as_bytes(),
        at: 0,
    };
    let mut script = Script::new();
    let mut chain = Chain::new();
    let mut pipeline = Pipeline::new();
    let mut command = Command::new();
    // Whether an operator is waiting for the command after it (`a |`, `a &&`).
    let mut pending = false;
    loop {
        lexer.skip_blanks();
        let Some(&next) = lexer.bytes.get(lexer.at) else {
            break;
        };
        match next {
            b'#' => break,
            b'|' | b'&' | b';' => {
                let op = lexer.operator()?;
                if command.is_empty() {
                    return None;
                }
                pipeline.push(std::mem::take(&mut command));
                if op == Op::Pipe {
                    pending = true;
                    continue;
                }
                chain.push(std::mem::take(&mut pipeline));
                if op == Op::AndOr {
                    pending = true;
                    continue;
                }
                script.push(std::mem::take(&mut chain));
                pending = false;
            }
            b'<' | b'>' => {
                command.push(lexer.redirect()?);
                pending = false;
            }
            _ => {
                let named = command.iter().any(|i| matches!(i, Item::Word(_)));
                let word = lexer.word(named)?;
                // `2>file`: digits right before `<` or `>` name a descriptor; one digit is
                // common, more are left to the grammar.
                if word.plain
                    && word.text.bytes().all(|b| b.is_ascii_digit())
                    && matches!(lexer.bytes.get(lexer.at), Some(b'<' | b'>'))
                {
                    if word.text.len() != 1 {
                        return None;
                    }
                    command.push(lexer.redirect()?);
                    pending = false;
                    continue;
                }
                if !named {
                    if let Some(assignment) = word.assignment {
                        command.push(assignment);
                        pending = false;
                        continue;
                    }
                    if RESERVED.contains(&word.text.as_str()) {
                        return None;
                    }
                }
                command.push(Item::Word(Arg {
                    text: word.text,
                    literal: true,
                }));
                pending = false;
            }
        }
    }
    if pending {
        return None;
    }
    if !command.is_empty() {
        pipeline.push(command);
        chain.push(pipeline);
        script.push(chain);
    }
    Some(script)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Pipe,
    AndOr,
    Sequence,
}

struct Lexer<'a> {
    source: &'a str,
    bytes: &'a [u8],
    at: usize,
}

/// A word read by the lexer.
struct Word {
    /// Quotes and escapes removed.
    text: String,
    /// Whether it was written without quotes or escapes.
    plain: bool,
    /// The assignment it spells, if it has the form `NAME=value`.
    assignment: Option<Item>,
}

impl Lexer<'_> {
    fn skip_blanks(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    fn operator(&mut self) -> Option<Op> {
        let first = self.bytes[self.at];
        let second = self.bytes.get(self.at + 1).copied();
        let (op, len) = match (first, second) {
            (b'|', Some(b'|')) | (b'&', Some(b'&')) => (Op::AndOr, 2),
            // `|&`, `;;`, `;&` and a lone `&` (a background job) are the grammar's.
            (b'|', Some(b'&')) | (b';', Some(b';' | b'&')) | (b'&', _) => return None,
            (b'|', _) => (Op::Pipe, 1),
            _ => (Op::Sequence, 1),
        };
        self.at += len;
        Some(op)
    }

    /// `<`, `>` or `>>` and a plain target word, or `>&N`/`>&-`; anything else is the grammar's
    /// (`<<`, `<<<`, `<>`, `>|`, `<&`, `>&file`, `&>`).
    fn redirect(&mut self) -> Option<Item> {
        let rest = &self.bytes[self.at..];
        let (kind, len) = match rest {
            [b'>', b'>', b'>' | b'&' | b'|' | b'<', ..]
            | [b'<', b'<' | b'>' | b'&' | b'(', ..]
            | [b'>', b'|' | b'(', ..] => return None,
            [b'>', b'&', ..] => return self.duplicate(),
            [b'>', b'>', ..] => (Redirect::Write, 2),
            [b'>', ..] => (Redirect::Write, 1),
            _ => (Redirect::Read, 1),
        };
        self.at += len;
        self.skip_blanks();
        match self.bytes.get(self.at) {
            None | Some(b'|' | b'&' | b';' | b'<' | b'>' | b'#') => None,
            Some(_) => {
                let word = self.word(true)?;
                if word.text.is_empty() && word.plain {
                    return None;
                }
                Some(Item::Redirect(kind, word.text))
            }
        }
    }

    /// `>&` followed at once by digits or `-`, ending there.
    fn duplicate(&mut self) -> Option<Item> {
        self.at += 2;
        let start = self.at;
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        if self.at == start && self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let ends = matches!(
            self.bytes.get(self.at),
            None | Some(b' ' | b'\t' | b'|' | b'&' | b';')
        );
        (self.at > start && ends).then_some(Item::Duplicate)
    }

    /// One word: plain characters, `'…'`, `"…"` without `$`, `` ` `` or `\` inside, and `\x`.
    /// Anything that expands, groups or is unusual ends the shortcut. `named` says whether the
    /// command already has its name (braces and assignments mean nothing after it).
    fn word(&mut self, named: bool) -> Option<Word> {
        let mut text = String::new();
        let mut plain = true;
        // Where the `=` of `NAME=value` is, while the word so far could be a name.
        let mut name_end = None;
        let mut could_be_name = true;
        let start = self.at;
        while let Some(&b) = self.bytes.get(self.at) {
            match b {
                b' ' | b'\t' | b'|' | b'&' | b';' | b'<' | b'>' => break,
                b'$' | b'`' | b'(' | b')' | b'!' => return None,
                b'{' | b'}' if !named => return None,
                // `~` expands at the start of a word and after `=` or `:` (`PATH=~/bin:~/x`);
                // elsewhere (`HEAD~1`) it is a character.
                b'~' if self.at == start || matches!(self.bytes[self.at - 1], b'=' | b':') => {
                    return None;
                }
                b'\'' => {
                    let close = self.source[self.at + 1..].find('\'')?;
                    text.push_str(&self.source[self.at + 1..self.at + 1 + close]);
                    self.at += close + 2;
                    plain = false;
                    could_be_name = false;
                }
                b'"' => {
                    let close = self.source[self.at + 1..].find('"')?;
                    let inner = &self.source[self.at + 1..self.at + 1 + close];
                    if inner
                        .bytes()
                        .any(|b| matches!(b, b'$' | b'`' | b'\\' | b'!'))
                    {
                        return None;
                    }
                    text.push_str(inner);
                    self.at += close + 2;
                    plain = false;
                    could_be_name = false;
                }
                b'\\' => {
                    let escaped = self.source[self.at + 1..].chars().next()?;
                    // brush-parser reads `\$'…'` as an ANSI-C quote where bash reads an escaped
                    // `$`: escaped `$` and `` ` `` are left to the grammar, so the two agree.
                    if matches!(escaped, '$' | '`') {
                        return None;
                    }
                    text.push(escaped);
                    self.at += 1 + escaped.len_utf8();
                    plain = false;
                    could_be_name = false;
                }
                b'=' if could_be_name && name_end.is_none() => {
                    if self.at == start {
                        could_be_name = false;
                    } else {
                        name_end = Some(text.len());
                    }
                    text.push('=');
                    self.at += 1;
                }
                _ => {
                    if name_end.is_none() {
                        let first = self.at == start;
                        let fits =
                            b == b'_' || b.is_ascii_alphabetic() || (!first && b.is_ascii_digit());
                        if !fits && could_be_name {
                            // `a+=1`, `a[0]=1`: assignments the shortcut leaves to the grammar.
                            let rest = &self.bytes[self.at..];
                            let word_end = rest
                                .iter()
                                .position(|b| matches!(b, b' ' | b'\t'))
                                .unwrap_or(rest.len());
                            let appends = b == b'+' && rest.get(1) == Some(&b'=');
                            let element = b == b'[' && rest[..word_end].contains(&b'=');
                            if !named && self.at > start && (appends || element) {
                                return None;
                            }
                            could_be_name = false;
                        }
                    }
                    let c = self.source[self.at..].chars().next()?;
                    text.push(c);
                    self.at += c.len_utf8();
                }
            }
        }
        let assignment = name_end.map(|end| {
            let value = text[end + 1..].to_owned();
            Item::Assignment(text[..end].to_owned(), value)
        });
        Some(Word {
            text,
            plain,
            assignment,
        })
    }
}

//! The program texts of `awk` and `sed`, read for what makes them run code, write or read: their
//! strings set apart, sed's addresses taken off.

use super::{option_at, reads, runs, writes};
use crate::shell::{Arg, SimpleCommand};

pub(super) fn awk(cmd: &mut SimpleCommand, args: &[Arg]) {
    let mut texts = Vec::new();
    let mut from_file = false;
    let mut operand = None;
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text.as_str();
        if let Some((_, next)) = option_at(
            args,
            i,
            &["-f", "-i", "-E", "-l"],
            &["--file", "--include", "--exec", "--load"],
        ) {
            from_file = true;
            i = next;
        } else if let Some((source, next)) = option_at(args, i, &["-e"], &["--source"]) {
            texts.push(source);
            i = next;
        } else if let Some((_, next)) =
            option_at(args, i, &["-v", "-F"], &["--assign", "--field-separator"])
        {
            i = next;
        } else if text == "--" {
            operand = args.get(i + 1).map(|a| a.text.clone());
            break;
        } else if text.starts_with('-') && text != "-" {
            i += 1;
        } else {
            operand = Some(text.to_owned());
            break;
        }
    }
    if from_file {
        runs(
            cmd,
            "awk program comes from a file (-f), which is not seen before it runs",
        );
    }
    if texts.is_empty() && !from_file {
        texts.extend(operand);
    }
    for text in &texts {
        awk_text(cmd, text);
    }
}

/// An awk program's text, strings set apart: `system()`, pipes, `@load`/`@include`, output
/// redirected to a file, input read from a file named at run time.
fn awk_text(cmd: &mut SimpleCommand, text: &str) {
    let tokens = awk_tokens(text);
    for (k, token) in tokens.iter().enumerate() {
        let next = tokens.get(k + 1);
        match token {
            Token::Word(w) if w == "system" => {
                runs(cmd, "awk program runs a command through system()");
            }
            Token::Word(w) if w == "@load" || w == "@include" => {
                runs(cmd, "awk program loads code (@load, @include)");
            }
            Token::Punct('|') => {
                runs(cmd, "awk program pipes to or from a command (|)");
            }
            Token::Word(w) if w == "print" || w == "printf" => {
                // `print … > FILE`, `print … >> FILE`, before the statement ends.
                let mut depth = 0i32;
                for (j, t) in tokens.iter().enumerate().skip(k + 1) {
                    match t {
                        Token::Punct('(') => depth += 1,
                        Token::Punct(')') => depth -= 1,
                        Token::Punct(';' | '}' | '\n') => break,
                        Token::Punct('>') if depth <= 0 => {
                            let target = tokens[j + 1..]
                                .iter()
                                .find(|t| !matches!(t, Token::Punct('>')));
                            match target {
                                Some(Token::Str(path)) => {
                                    writes(cmd, path);
                                    runs(cmd, "awk program writes a file (print > FILE)");
                                }
                                _ => runs(cmd, "awk program writes a file named when it runs"),
                            }
                            break;
                        }
                        _ => {}
                    }
                }
            }
            Token::Word(w) if w == "getline" => {
                // `getline < FILE`, `getline VAR < FILE`.
                let rest = match next {
                    Some(Token::Word(_)) => &tokens[(k + 2).min(tokens.len())..],
                    _ => &tokens[k + 1..],
                };
                if let Some(Token::Punct('<')) = rest.first() {
                    match rest.get(1) {
                        Some(Token::Str(path)) => reads(cmd, path),
                        _ => runs(cmd, "awk program reads a file named when it runs"),
                    }
                }
            }
            _ => {}
        }
    }
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Str(String),
    Punct(char),
}

/// Words, string literals and punctuation of an awk program (`||` is one token, not a pipe;
/// regular expressions are read as punctuation and words, which can only find more).
fn awk_tokens(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => s.extend(chars.next()),
                        '"' => break,
                        c => s.push(c),
                    }
                }
                tokens.push(Token::Str(s));
            }
            '#' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        tokens.push(Token::Punct('\n'));
                        break;
                    }
                }
            }
            '|' if chars.peek() == Some(&'|') => {
                chars.next();
                tokens.push(Token::Punct('o'));
            }
            c if c.is_alphanumeric() || c == '_' || c == '@' => {
                let mut w = String::from(c);
                while let Some(&c) = chars.peek() {
                    if c.is_alphanumeric() || c == '_' {
                        w.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Word(w));
            }
            c if c.is_whitespace() && c != '\n' => {}
            c => tokens.push(Token::Punct(c)),
        }
    }
    tokens
}

pub(super) fn sed(cmd: &mut SimpleCommand, args: &[Arg]) {
    // GNU sed's --sandbox refuses e, w and r itself.
    if args.iter().any(|a| a.text == "--sandbox") {
        return;
    }
    let mut scripts = Vec::new();
    let mut from_file = false;
    let mut operand = None;
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text.as_str();
        if let Some(script) = text.strip_prefix("--expression=") {
            scripts.push(script.to_owned());
        } else if text.starts_with("--file=") {
            from_file = true;
        } else if text == "--expression" || text == "--file" {
            from_file |= text == "--file";
            if text == "--expression" {
                scripts.extend(args.get(i + 1).map(|a| a.text.clone()));
            }
            i += 1;
        } else if text == "--" {
            operand = operand.or_else(|| args.get(i + 1).map(|a| a.text.clone()));
            break;
        } else if let Some(cluster) = text
            .strip_prefix('-')
            .filter(|c| !c.is_empty() && !c.starts_with('-'))
        {
            // Short options together: `-ne SCRIPT`, `-nf FILE`, `-es/a/b/`, `-i.bak`.
            for (at, c) in cluster.char_indices() {
                let rest = &cluster[at + c.len_utf8()..];
                match c {
                    'e' | 'f' | 'l' => {
                        let value = if rest.is_empty() {
                            i += 1;
                            args.get(i).map(|a| a.text.clone())
                        } else {
                            Some(rest.to_owned())
                        };
                        if c == 'e' {
                            scripts.extend(value);
                        }
                        from_file |= c == 'f';
                        break;
                    }
                    'i' => break,
                    _ => {}
                }
            }
        } else if operand.is_none() && !text.starts_with("--") {
            operand = Some(text.to_owned());
        }
        i += 1;
    }
    if from_file {
        runs(
            cmd,
            "sed script comes from a file (-f), which is not seen before it runs",
        );
    }
    if scripts.is_empty() && !from_file {
        scripts.extend(operand);
    }
    for script in &scripts {
        sed_script(cmd, script);
    }
}

/// Each command of a sed script, its address taken off: `e` runs, `w`/`W` write, `r`/`R` read,
/// and `s///` with an `e` or `w FILE` flag.
fn sed_script(cmd: &mut SimpleCommand, script: &str) {
    for part in script.split([';', '\n', '{', '}']) {
        let command = strip_address(part.trim_start()).trim_start();
        let mut chars = command.chars();
        let Some(letter) = chars.next() else {
            continue;
        };
        let argument = chars.as_str().trim();
        match letter {
            'e' => runs(cmd, "sed script runs a command (e)"),
            'w' | 'W' => writes(cmd, argument),
            'r' | 'R' => reads(cmd, argument),
            's' => {
                let Some(delim) = argument.chars().next().filter(|d| !d.is_alphanumeric()) else {
                    continue;
                };
                let body = &command[1..].trim_start()[delim.len_utf8()..];
                let pieces: Vec<&str> = body.splitn(3, delim).collect();
                if let Some(flags) = pieces.get(2) {
                    let (flags, file) = flags.split_once('w').map_or((*flags, ""), |(f, w)| (f, w));
                    if flags.contains('e') {
                        runs(cmd, "sed s command runs its result as a command (s///e)");
                    }
                    writes(cmd, file.trim());
                }
            }
            _ => {}
        }
    }
}

/// A sed command without its address: `N`, `$`, `/RE/`, `\cREc`, `first~step`, `A,B`, `A,+N`,
/// then an optional `!`.
fn strip_address(text: &str) -> &str {
    let mut rest = text;
    for _ in 0..2 {
        rest = one_address(rest);
        match rest.strip_prefix(',') {
            Some(after) => rest = after.trim_start(),
            None => break,
        }
    }
    rest.trim_start().trim_start_matches('!')
}

fn one_address(text: &str) -> &str {
    let mut chars = text.char_indices();
    match chars.next() {
        Some((_, '/')) => regex_end(text, 1, '/'),
        Some((_, '\\')) => match chars.next() {
            Some((at, delim)) => regex_end(text, at + delim.len_utf8(), delim),
            None => "",
        },
        Some((_, c)) if c.is_ascii_digit() || c == '$' || c == '+' || c == '~' => {
            text.trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, '$' | '+' | '~'))
        }
        _ => text,
    }
}

/// What follows a regular expression started at `from` and closed by `delim` (escapes
/// skipped), its `I`/`M` flags taken off.
fn regex_end(text: &str, from: usize, delim: char) -> &str {
    let mut escaped = false;
    for (at, c) in text[from..].char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == delim {
            return text[from + at + c.len_utf8()..].trim_start_matches(['I', 'M']);
        }
    }
    ""
}

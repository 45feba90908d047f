//! The program texts of `awk` and `sed`, read the way the programs read them, for what makes
//! them run code, write or read: awk's strings and regular expressions set apart, sed's commands
//! one after another with their addresses, delimiters and file names. Options are read as GNU's
//! getopt reads them (clusters, `--opt=value`, abbreviations).

use super::{Long, long, reads, runs, writes};
use crate::shell::{Arg, SimpleCommand};

/// awk's short options that take a value, attached or as the next word.
const AWK_VALUE: &[char] = &['f', 'v', 'F', 'i', 'l', 'E', 'e', 'W'];
/// gawk's short options whose value can only be attached (`-oFILE`); the file is written.
const AWK_ATTACHED: &[char] = &['o', 'p', 'd', 'D', 'L'];

pub(super) fn awk(cmd: &mut SimpleCommand, args: &[Arg]) {
    let mut texts = Vec::new();
    let mut from_file = false;
    let mut operand = None;
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text.as_str();
        let next = || args.get(i + 1).map(|a| a.text.clone());
        if text == "--" {
            operand = next();
            break;
        } else if text.starts_with("--") {
            let takes = |full: &str| long(text, full).map(Long::value);
            if let Some(value) = ["file", "include", "exec", "load"]
                .iter()
                .find_map(|f| takes(f))
            {
                from_file = true;
                i += usize::from(value.is_none());
            } else if let Some(value) = takes("source") {
                texts.extend(value.map(str::to_owned).or_else(next));
                i += usize::from(value.is_none());
            } else if let Some(value) = takes("assign").or_else(|| takes("field-separator")) {
                i += usize::from(value.is_none());
            } else if let Some(value) = ["pretty-print", "dump-variables", "profile", "debug"]
                .iter()
                .find_map(|f| takes(f))
            {
                writes(cmd, value.unwrap_or("awkprof.out"));
                runs(
                    cmd,
                    "awk writes a file of its own (--pretty-print, --profile, …)",
                );
            }
        } else if let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) {
            for (at, c) in cluster.char_indices() {
                let rest = &cluster[at + c.len_utf8()..];
                if AWK_VALUE.contains(&c) {
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i).map(|a| a.text.clone())
                    } else {
                        Some(rest.to_owned())
                    };
                    match c {
                        'f' | 'i' | 'l' | 'E' => from_file = true,
                        'e' => texts.extend(value),
                        // `-W NAME[=VALUE]` is gawk's `--NAME`, mawk's `-W exec FILE` too.
                        'W' => {
                            let long_form = format!("--{}", value.as_deref().unwrap_or_default());
                            let named = |full: &str| long(&long_form, full).is_some();
                            if ["file", "include", "exec", "load"].iter().any(|f| named(f)) {
                                from_file = true;
                            } else if let Some(source) =
                                long(&long_form, "source").and_then(Long::value)
                            {
                                texts.push(source.to_owned());
                            } else if let Some(file) = ["pretty-print", "dump-variables", "profile"]
                                .iter()
                                .find_map(|f| long(&long_form, f))
                            {
                                writes(cmd, file.value().unwrap_or("awkprof.out"));
                                runs(cmd, "awk writes a file of its own (-W profile, …)");
                            }
                        }
                        _ => {}
                    }
                    break;
                }
                if AWK_ATTACHED.contains(&c) {
                    if !rest.is_empty() {
                        writes(cmd, rest);
                        runs(cmd, "awk writes a file of its own (-o, -p, -d)");
                    }
                    break;
                }
            }
        } else {
            operand = Some(text.to_owned());
            break;
        }
        i += 1;
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

/// An awk program's text: `system()`, pipes, `@load`/`@include` and indirect calls, output
/// redirected to a file, input read from a file; every string that names a path is a read.
fn awk_text(cmd: &mut SimpleCommand, text: &str) {
    // Whatever the tokens say, these spellings are never a plain read.
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains("system(") {
        runs(cmd, "awk program runs a command through system()");
    }
    if compact.contains("|getline") || compact.contains("|&") {
        runs(cmd, "awk program pipes to or from a command (|)");
    }
    // A `/` after `)`, `]`, `++` or `--` may start a regular expression or divide (`if (c)
    // /re/` against `(a) / b`): read both ways, and what either finds counts.
    for ambiguous_is_regex in [false, true] {
        awk_findings(cmd, &awk_tokens(text, ambiguous_is_regex));
    }
}

/// What the tokens of an awk program run, write and read.
fn awk_findings(cmd: &mut SimpleCommand, tokens: &[Token]) {
    for (k, token) in tokens.iter().enumerate() {
        match token {
            Token::Word(w) if w == "system" => {
                runs(cmd, "awk program runs a command through system()");
            }
            Token::Word(w) if w.starts_with('@') => {
                runs(
                    cmd,
                    "awk program loads code or calls a function by name (@load, @f())",
                );
            }
            Token::Punct('|') => runs(cmd, "awk program pipes to or from a command (|)"),
            Token::Str(s) if looks_like_path(s) => reads(cmd, s),
            Token::Word(w) if w == "print" || w == "printf" => print_target(cmd, &tokens[k + 1..]),
            Token::Word(w) if w == "getline" => {
                // `getline < FILE`, `getline VAR < FILE`, `getline a[1] < FILE`, `getline $0 < …`.
                let target = tokens[k + 1..]
                    .iter()
                    .take_while(|t| !matches!(t, Token::Punct(';' | '}' | '\n')))
                    .skip_while(|t| !matches!(t, Token::Punct('<')))
                    .nth(1);
                match target {
                    None => {}
                    Some(Token::Str(path)) => reads(cmd, path),
                    Some(_) => runs(cmd, "awk program reads a file named when it runs"),
                }
            }
            Token::Word(w) if w == "ARGV" => {
                // A file named in ARGV by the program is a string (read above); one built at
                // run time is not known.
                let value = tokens[k + 1..]
                    .iter()
                    .take_while(|t| !matches!(t, Token::Punct(';' | '}' | '\n')))
                    .skip_while(|t| !matches!(t, Token::Punct('=')))
                    .nth(1);
                if value.is_some_and(|v| !matches!(v, Token::Str(_))) {
                    runs(cmd, "awk program reads a file named when it runs (ARGV)");
                }
            }
            _ => {}
        }
    }
}

/// `print … > FILE`, `print … >> FILE` before the statement ends (outside parentheses).
fn print_target(cmd: &mut SimpleCommand, rest: &[Token]) {
    let mut depth = 0i32;
    for (j, t) in rest.iter().enumerate() {
        match t {
            Token::Punct('(') => depth += 1,
            Token::Punct(')') => depth -= 1,
            Token::Punct(';' | '}' | '\n') => return,
            Token::Punct('>') if depth <= 0 => {
                let target = rest[j + 1..]
                    .iter()
                    .find(|t| !matches!(t, Token::Punct('>')));
                match target {
                    Some(Token::Str(path))
                        if matches!(
                            path.as_str(),
                            "/dev/stdout" | "/dev/stderr" | "/dev/null" | "-"
                        ) || path.starts_with("/dev/fd/") => {}
                    Some(Token::Str(path)) => {
                        writes(cmd, path);
                        runs(cmd, "awk program writes a file (print > FILE)");
                    }
                    _ => runs(cmd, "awk program writes a file named when it runs"),
                }
                return;
            }
            _ => {}
        }
    }
}

/// A string that names a file (`.env`, `~/x`, `/etc/passwd`, `a/b`), not a separator (`"/"`)
/// or one of the standard streams.
fn looks_like_path(s: &str) -> bool {
    let name = s.trim_matches('/');
    !name.is_empty()
        && !s.contains(['\n', ' ', '\t'])
        && !s.starts_with("/dev/")
        && (s.starts_with('.') || s.starts_with('~') || s.starts_with('/') || name.contains('/'))
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Str(String),
    Regex,
    Punct(char),
}

/// Words, strings, regular expressions and punctuation of an awk program, as awk reads them: a
/// `/` where an operand is expected starts a regular expression (in which `#`, `"` and `|` are
/// its own), anywhere else it divides; `||` is one token, never a pipe.
fn awk_tokens(text: &str, ambiguous_is_regex: bool) -> Vec<Token> {
    let mut tokens: Vec<Token> = Vec::new();
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
            '/' if operand_expected(&tokens, ambiguous_is_regex) => {
                let mut in_class = false;
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '[' => in_class = true,
                        ']' => in_class = false,
                        '/' if !in_class => break,
                        _ => {}
                    }
                }
                tokens.push(Token::Regex);
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
            c if c.is_alphanumeric() || c == '_' || c == '@' || c == '$' => {
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

/// Whether a `/` after `tokens` starts a regular expression: at the start, after an operator or
/// a keyword; never after a name, a string or a regular expression; after `)`, `]`, `++` or
/// `--` as `ambiguous_is_regex` says.
fn operand_expected(tokens: &[Token], ambiguous_is_regex: bool) -> bool {
    let n = tokens.len();
    let increment = n >= 2
        && matches!(
            (&tokens[n - 2], &tokens[n - 1]),
            (Token::Punct('+'), Token::Punct('+')) | (Token::Punct('-'), Token::Punct('-'))
        );
    if increment {
        return ambiguous_is_regex;
    }
    match tokens.last() {
        None => true,
        Some(Token::Word(w)) => matches!(
            w.as_str(),
            "print"
                | "printf"
                | "return"
                | "in"
                | "case"
                | "if"
                | "while"
                | "else"
                | "do"
                | "exit"
                | "delete"
                | "getline"
        ),
        Some(Token::Str(_) | Token::Regex) => false,
        Some(Token::Punct(')' | ']')) => ambiguous_is_regex,
        Some(Token::Punct(_)) => true,
    }
}

/// sed's long options that take a value as the next word when not given with `=`.
const SED_VALUE: &[&str] = &["expression", "file", "line-length"];

pub(super) fn sed(cmd: &mut SimpleCommand, args: &[Arg]) {
    // GNU sed's --sandbox refuses e, w and r itself.
    if args
        .iter()
        .any(|a| long(&a.text, "sandbox").is_some() && a.text.len() > 4)
    {
        return;
    }
    let mut scripts = Vec::new();
    let mut from_file = false;
    let mut in_place = false;
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let text = args[i].text.as_str();
        let next = args.get(i + 1).map(|a| a.text.clone());
        if text == "--" {
            operands.extend(args[i + 1..].iter().map(|a| a.text.clone()));
            break;
        } else if text.starts_with("--") {
            if let Some(name) = SED_VALUE.iter().find(|n| long(text, n).is_some()) {
                let value = long(text, name).and_then(Long::value).map(str::to_owned);
                if value.is_none() {
                    i += 1;
                }
                let value = value.or(next);
                match *name {
                    "expression" => scripts.extend(value),
                    "file" => from_file = true,
                    _ => {}
                }
            } else if long(text, "in-place").is_some() {
                in_place = true;
            }
        } else if let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) {
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
                    'i' => {
                        in_place = true;
                        break;
                    }
                    _ => {}
                }
            }
        } else {
            operands.push(text.to_owned());
        }
        i += 1;
    }
    if from_file {
        runs(
            cmd,
            "sed script comes from a file (-f), which is not seen before it runs",
        );
    }
    let files = if scripts.is_empty() && !from_file && !operands.is_empty() {
        scripts.push(operands.remove(0));
        operands
    } else {
        operands
    };
    if in_place {
        for file in &files {
            writes(cmd, file);
        }
    }
    for script in &scripts {
        sed_script(cmd, script);
    }
}

/// Each command of a sed script in turn, as sed reads it: its addresses (regular expressions
/// with any delimiter, classes and escapes), `!`, the command letter and what it takes. `e`
/// runs, `w`/`W` write, `r`/`R` read, and `s` with an `e` or `w FILE` flag.
fn sed_script(cmd: &mut SimpleCommand, script: &str) {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let line = |from: usize| -> (String, usize) {
        let end = chars[from..]
            .iter()
            .position(|c| *c == '\n')
            .map_or(chars.len(), |p| from + p);
        (
            chars[from..end]
                .iter()
                .collect::<String>()
                .trim()
                .to_owned(),
            end,
        )
    };
    while i < chars.len() {
        if chars[i].is_whitespace() || matches!(chars[i], ';' | '{' | '}') {
            i += 1;
            continue;
        }
        i = sed_address(&chars, i);
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == '!') {
            i += 1;
        }
        if i < chars.len() && chars[i] == ',' {
            i = sed_address(&chars, i + 1);
            while i < chars.len() && (chars[i].is_whitespace() || chars[i] == '!') {
                i += 1;
            }
        }
        let Some(&letter) = chars.get(i) else {
            break;
        };
        i += 1;
        match letter {
            '#' | 'a' | 'i' | 'c' => i = line(i).1,
            // A label ends at `;` as well as at the end of the line (GNU).
            ':' | 'b' | 't' | 'T' | 'v' => {
                while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            'e' => {
                runs(cmd, "sed script runs a command (e)");
                i = line(i).1;
            }
            'w' | 'W' => {
                let (file, end) = line(i);
                writes(cmd, &file);
                i = end;
            }
            'r' | 'R' => {
                let (file, end) = line(i);
                reads(cmd, &file);
                i = end;
            }
            's' | 'y' => {
                let Some(&delim) = chars.get(i) else {
                    break;
                };
                i = delimited(&chars, i + 1, delim, letter == 's');
                i = delimited(&chars, i, delim, false);
                if letter == 's' {
                    while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                        match chars[i] {
                            'e' => runs(cmd, "sed s command runs its result as a command (s///e)"),
                            'w' => {
                                let (file, end) = line(i + 1);
                                writes(cmd, &file);
                                i = end;
                                break;
                            }
                            _ => {}
                        }
                        i += 1;
                    }
                }
            }
            _ => {}
        }
    }
}

/// Past one sed address at `i`: `N`, `N~M`, `$`, `/RE/` or `\cREc` with `I`/`M` after it,
/// `+N` or `~N` after a comma.
fn sed_address(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    match chars.get(i) {
        Some('/') => {
            i = delimited(chars, i + 1, '/', true);
            while i < chars.len() && matches!(chars[i], 'I' | 'M') {
                i += 1;
            }
        }
        Some('\\') => {
            if let Some(&delim) = chars.get(i + 1) {
                i = delimited(chars, i + 2, delim, true);
                while i < chars.len() && matches!(chars[i], 'I' | 'M') {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        Some(c) if c.is_ascii_digit() || matches!(c, '$' | '+' | '~') => {
            while i < chars.len()
                && (chars[i].is_ascii_digit() || matches!(chars[i], '$' | '+' | '~'))
            {
                i += 1;
            }
        }
        _ => {}
    }
    i
}

/// Past a part of a sed command that `delim` ends (escapes skipped; in a regular expression, a
/// bracket class too).
fn delimited(chars: &[char], mut i: usize, delim: char, regex: bool) -> usize {
    let mut in_class = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            i += 2;
            continue;
        }
        if regex && c == '[' && !in_class {
            in_class = true;
            // `[]…]` and `[^]…]`: the first `]` is a member.
            if chars.get(i + 1) == Some(&']') {
                i += 1;
            } else if chars.get(i + 1) == Some(&'^') && chars.get(i + 2) == Some(&']') {
                i += 2;
            }
        } else if in_class && c == ']' {
            in_class = false;
        } else if !in_class && c == delim {
            return i + 1;
        }
        i += 1;
    }
    i
}

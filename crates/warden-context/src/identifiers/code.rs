//! Names of code: functions, methods and types, from where compilers, tracebacks and test runners
//! put them — a quoted name after the word that says what it is, a definition, a stack frame, a
//! test id, an exception class.

use std::sync::LazyLock;

use regex::Regex;

use super::{Finder, Kind, has, re};

/// A quoted name after the word that says what it is: `` function `load` ``, `struct ‘point’`,
/// `class 'Item'`, `symbol:   method total(int)`.
static NAMED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"\b(function|fn|method|associated function|func|struct|enum|trait|type|class|interface|union|record|type alias|table|column)\s+(?:named\s+)?[`‘'"]([^`’'"\n]{1,160})[`’'"]"#,
    )
});

/// A name a sentence says what it is of: `the refreshSession method`, `the user_sessions table`,
/// `` the `billing` column ``. Only names that read as code (an underscore, a capital inside, or
/// quoted) count.
static PROSE_NAMED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"`?\b([A-Za-z_](?:[\w.:]*\w)?)`?\s+(method|function|helper|callback|handler|class|struct|type|enum|trait|interface|table|column|view)\b",
    )
});

/// Where a name can only be a type: C's `‘struct ring_buffer’` and `unknown type name ‘x’`,
/// Python's `'NoneType' object` and a traceback's last line (`shipping.errors.QuoteRejected:`),
/// Java's `method run() in Runnable` and `incompatible types: A cannot be converted to B`,
/// `impl Trait for Type`, a constant of a class (`RoundingMode.HALF_UP`), C's `_t` types.
static PLACED_TYPE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?m)[‘`'"](?:const\s+)?(?:struct|enum|union|class)\s+([A-Za-z_]\w*)[’`'"]|\btype name [‘`'"]([A-Za-z_]\w*)[’`'"]|'([A-Za-z_]\w*)' object\b|^((?:[a-z_]\w*(?:\.|::))+[A-Z]\w*):\s|\b([A-Z][A-Za-z0-9]*[a-z]\w*)::[A-Z]\w*|\bimpl(?:<[^>]*>)?\s+[\w:<>]+\s+for\s+([A-Z]\w*)|\b([A-Z][a-z]\w*)\.[A-Z][A-Z0-9_]{2,}\b|@([A-Z]\w*)\b|\bon ([A-Z]\w*) instance\b|‘([A-Za-z_]\w*)’ \{aka|No enum constant ((?:[\w$]+\.)*[A-Z][\w$]*)\.[A-Z_][A-Z0-9_]*|\b(?:struct|union|enum)[ \t]+([a-z_]\w*)[ \t]*(?:\{|\*|,|\)|[A-Za-z_]\w*[ \t]*[;=,)\[])|\b(?:class|interface|enum) ((?:[a-z_]\w*\.)+[A-Z][\w$]*)"#,
    )
});

/// Java's `incompatible types: A cannot be converted to B<C>`, `method x() in Y`, the bounds of
/// a derive, `implements`/`extends` lists: each capitalised name in them is a type.
static TYPE_LIST: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)incompatible types: ([^\n]+)|\bmethod \w+\([^)\n]*\) in ([\w.]+)|\bmethod \w+\(([^)\n]*)\)|\bin (?:class|interface|enum) ([\w.$]+)|#\[derive\(([^)\n]*)\)|\b(?:implements|extends|throws)\s+([\w.<>, ]+)|\bderives? ([\w, ]+)",
    )
});

/// Names a file imports: `from flask import Blueprint, abort`, `import java.nio.file.Path;`,
/// `use crate::audit::AuditLog;`, `import { readFile } from`.
static IMPORTED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)\bfrom\s+[\w.]+\s+import\s+\(?([\w, ]+)\)?|^(?:\s*\d+\t|[^\s:]+:\d+:)?\s*import\s+(?:static\s+)?([\w.]+\.[A-Z]\w*)\s*;|\buse\s+((?:crate|super|self|std|[a-z_]\w*)::[\w:]*[A-Z]\w*)\s*;|\buse\s+((?:crate|super|self)::[a-z_]\w*::[\w:]*[a-z_]\w*)\s*;|\bimport\s*\{([\w, ]+)\}\s*from",
    )
});
static LISTED_TYPE: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b(?:[a-z_]\w*\.)*[A-Z][A-Za-z0-9_]*[a-z][A-Za-z0-9_]*\b"));
static IMPORTED_NAME: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z_][\w.:]*"));

/// Words before `table` that say what kind of table it is, not which.
const NOT_TABLES: &[&str] = &[
    "hash",
    "lookup",
    "routing",
    "symbol",
    "truth",
    "page",
    "jump",
    "dispatch",
    "pivot",
    "round",
    "side",
    "time",
    "same",
    "whole",
    "new",
    "old",
    "temporary",
    "join",
    "main",
    "first",
    "last",
    "next",
    "previous",
    "following",
    "above",
    "below",
    "wrong",
    "right",
    "entire",
    "target",
    "source",
    "base",
    "summary",
    "comparison",
    "decision",
    "conversion",
    "translation",
];

/// Java's `symbol:   class Item` and `location: class com.acme.Store`.
static JAVA_SYMBOL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)^\s*(?:symbol|location):\s+(class|interface|enum|method|variable)\s+([A-Za-z_$][\w$.]*)",
    )
});

/// A definition: `class Store`, `struct Config`, `enum Mode`, `interface Item`, `type Id =`.
static DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(?:struct|enum|trait|class|interface|union|record|protocol)\s+([A-Z][\w]*)|\bimpl(?:<[^>]*>)?\s+((?:[a-z_]\w*::)*[A-Z]\w*)|\btype\s+([A-Z]\w*)\s*(?:<[^>]*>)?\s*=|\bstruct\s+([a-z_]\w*)\s*\{",
    )
});

/// An exception or error class: `ValueError`, `com.acme.OutOfStockException`, `ParseIntError`.
static EXCEPTION: LazyLock<Regex> = LazyLock::new(|| {
    re(r"\b((?:[a-z_]\w*\.)*[A-Z][\w$]*(?:Error|Exception|Warning|Fault|Interrupt|Exit))\b")
});

/// `new Item(`: a constructor names its class.
static CONSTRUCTED: LazyLock<Regex> =
    LazyLock::new(|| re(r"\bnew\s+([A-Z][\w$]*(?:\.[A-Z][\w$]*)*)\s*[(<]"));

/// Stack frames and test ids that name a function: Python's `, in name`, Rust's numbered
/// backtrace frames, `test a::b ... FAILED`, `---- a::b stdout ----`, unittest's
/// `FAIL: test_x (module.Class.test_x)`, gcc's `in function ‘main’`.
static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m), line \d+, in ([A-Za-z_][\w.]*)|^test \S+ - ([\w:]+) \(line \d+\)|\boperator: '(\w+)'|^([A-Za-z_]\w*) \([^)\n]*=[^)\n]*\) at |^\s*\d+:\s+(?:0x[0-9a-f]+ - )?([A-Za-z_<][^\n]*?::[^\n]*?)[ \t]*$|^test ([\w:]+)(?: - should panic)? \.\.\.|^---- ([\w:]+) stdout ----|^(?:(?:FAIL|ERROR): )?([A-Za-z_]\w*) \(([\w.]+)\)(?: \.\.\.|\s*$)|\bin function [‘'`]([A-Za-z_]\w*)[’'`]",
    )
});

/// A generic type (`Map<String, Item>`) and a declaration's type (`Path file)`,
/// `OrderRepository repo =`).
static DECLARED_TYPE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b((?:[a-z_]\w*\.)*[A-Z][A-Za-z0-9_]*[a-z][A-Za-z0-9_]*)(?:<|\[\]|\s+[a-z_]\w*\s*[=;,)]|\s*\{\s*[a-z_]\w*:)",
    )
});

static CODE_TYPE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:\b[a-z_]\w*\??:\s*|[<,]\s*[A-Z]\w*:\s*|(?:[(,][ \t]*[a-z_]\w*|^[ \t]*(?:\d+\t)?[ \t]*\w+)[ \t]+\*?(?:\[\])?|->\s*|=>\s*|<\s*|<[^<>\n]{0,60},\s*|\[[^\[\]\n]{0,60},\s*|&\s*(?:mut\s+|'\w+\s+)?|\*\s*(?:mut\s+|const\s+)?|\b(?:new|dyn|instanceof|except|raise|throw new|catch\s*\()\s+|\[\s*|\(\s*)((?:[a-z_]\w*(?:\.|::))*[A-Z][A-Za-z0-9_]*[a-z][A-Za-z0-9_]*)\b",
    )
});

/// C's `typedef` names (`packet_t`, `ring_buffer_t`) and Rust's `c_int`, where code declares
/// something of them.
static C_TYPE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:^|[\s(,:*&])((?:[a-z_][a-z0-9_]*_t)|c_(?:int|uint|void|char|long|ulong|short|double|float))\b\s*[*&\s),.;]",
    )
});

/// A C function's definition or declaration: `int main(int argc, char **argv)`, as a file or
/// a compiler's excerpt shows it.
static C_FUNCTION: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)^[ \t]*(?:\d+[ \t]*\|[ \t]*|\d+\t[ \t]*)?(?:(?:static|inline|extern|const|unsigned|signed|struct|enum)[ \t]+)*(?:void|int|char|long|short|float|double|bool|size_t|ssize_t|[a-z_]\w*_t|[a-z_]\w*)[ \t]*\**[ \t]+\**([A-Za-z_]\w*)[ \t]*\([^;{}\n]*\)[ \t]*[{;]?[ \t]*$",
    )
});

/// A class a statement names as one: `except sqlite3.Error as e`, `raise QuoteRejected`,
/// `new Store`, `catch (IOException e)`, `x instanceof Item`.
static STRONG_TYPE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(?:except|raise|new|instanceof|catch\s*\()\s*\(?\s*((?:[a-z_]\w*\.)*[A-Z][\w$]*(?:\.[A-Z][\w$]*)*)",
    )
});

/// C's own types: a pointer parameter's (`ring_buf *rb`), a function pointer's name
/// (`typedef void (*uv_cb)(…)`), what a function returns when the line defines it
/// (`rb_status rb_push(`).
static C_NAMED_TYPE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)[(,][ \t]*(?:const[ \t]+|struct[ \t]+)?([a-z_]\w*)[ \t]*\*+[ \t]*[a-z_]\w*[ \t]*[,)]|\btypedef[ \t]+[\w[ \t]*]+\([ \t]*\*[ \t]*([A-Za-z_]\w*)[ \t]*\)|^[ \t]*(?:\d+[ \t]*\|[ \t]*|\d+\t[ \t]*)?(?:static[ \t]+|inline[ \t]+)*([a-z_]\w*)[ \t]+\**[a-z_]\w*[ \t]*\([^;{}\n]*\)[ \t]*\{?[ \t]*$",
    )
});

/// A capitalised name called: a class constructed (`Observation(parts[0])`, `QuoteRejected(…)`).
static CONSTRUCTOR_CALL: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:^|[^\w.$#:])([A-Z][A-Za-z0-9_]*[a-z][A-Za-z0-9_]*)\("));

/// Names of types in a compiler's quoted code: `` expected `Config`, found `&str` ``.
static QUOTED_CODE: LazyLock<Regex> = LazyLock::new(|| re(r"`([^`\n]{1,160})`"));
/// A path to a method in quoted code: `` `HashMap::<K, V, S, A>::insert` ``.
static QUOTED_PATH_CALL: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[A-Za-z_][\w:<>, ]*[A-Z][\w<>, ]*::[a-z_]\w*$"));
/// A name alone in quoted code that reads as code: `rollout_pct`, `gcContent`, `reads.quality`.
static CODE_SPAN_NAME: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?:[a-z_][a-z0-9]*_[\w]*|[a-z]+[A-Z]\w*|[a-z_]\w*\.[a-z_]\w*)$"));
/// A table and its columns in quoted prose: `` `cell_values(sheet_id, ref, value)` ``.
static CODE_SPAN_TABLE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^([a-z_]\w*)\(([a-z_]\w*(?:,\s*[a-z_]\w*)+)\)$"));
static NAME_IN_LIST: LazyLock<Regex> = LazyLock::new(|| re(r"[a-z_]\w*"));
static CAMEL: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[A-Z][a-z]{2,}[0-9]*)\b"));

/// C's keywords and the words a pattern of C's types can meet in their place.
const C_WORDS: &[&str] = &[
    "return",
    "static",
    "inline",
    "extern",
    "const",
    "unsigned",
    "signed",
    "struct",
    "enum",
    "union",
    "void",
    "if",
    "else",
    "while",
    "for",
    "switch",
    "sizeof",
    "typedef",
    "def",
    "fn",
    "pub",
    "async",
    "await",
    "let",
    "var",
    "new",
    "function",
    "public",
    "private",
    "protected",
    "at",
    "because",
    "error",
    "warning",
    "note",
    "in",
    "from",
    "it",
    "get",
    "set",
    "was",
    "is",
    "to",
    "of",
    "and",
    "or",
    "the",
    "a",
    "an",
    "by",
    "with",
    "on",
    "as",
    "help",
    "see",
    "then",
];

/// Words that name the language's own basic types, never the project's.
pub(super) const BASIC_TYPES: &[&str] = &[
    "Self",
    "String",
    "Vec",
    "Option",
    "Result",
    "Box",
    "Some",
    "None",
    "Ok",
    "Err",
    "Object",
    "Integer",
    "Long",
    "Boolean",
    "Double",
    "Float",
    "Exception",
    "Error",
    "Warning",
    "Fault",
    "Exit",
    "Interrupt",
    "True",
    "False",
    "Null",
    "The",
    "Traceback",
    "string",
    "number",
    "boolean",
    "bigint",
    "symbol",
    "any",
    "void",
    "never",
    "unknown",
    "object",
    "undefined",
    "null",
    "int",
    "float",
    "double",
    "long",
    "short",
    "str",
    "bool",
    "char",
    "bytes",
    "byte",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "f32",
    "f64",
    "unsigned",
    "signed",
    "size_t",
    "ssize_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uintptr_t",
    "intptr_t",
    "off_t",
    "pid_t",
    "time_t",
    "mode_t",
];

fn basic(name: &str) -> bool {
    BASIC_TYPES.contains(&name)
}

impl Finder<'_> {
    fn add_type(&mut self, s: usize, e: usize) {
        if !basic(&self.text[s..e]) {
            self.add(Kind::Type, s, e);
        }
    }

    pub(super) fn frames(&mut self) {
        let text = self.text;
        for c in FRAME.captures_iter(text) {
            for i in 1..=10 {
                if let Some(m) = c.get(i)
                    && m.as_str() != "module"
                {
                    self.add(Kind::Function, m.start(), m.end());
                }
            }
        }
    }

    pub(super) fn code(&mut self) {
        let text = self.text;
        for c in PLACED_TYPE.captures_iter(text) {
            if let Some(m) = (1..=13).find_map(|i| c.get(i)) {
                self.add_type(m.start(), m.end());
            }
        }
        if has(
            text,
            &[
                "incompatible types",
                "method ",
                "derive",
                "implements",
                "extends",
                "throws",
            ],
        ) {
            for c in TYPE_LIST.captures_iter(text) {
                let Some(list) = (1..=7).find_map(|i| c.get(i)) else {
                    continue;
                };
                for m in LISTED_TYPE.find_iter(list.as_str()) {
                    self.add_type(list.start() + m.start(), list.start() + m.end());
                }
            }
        }
        if has(text, &["import", "use "]) {
            for c in IMPORTED.captures_iter(text) {
                if let Some(whole) = c.get(2).or_else(|| c.get(3)) {
                    self.add_type(whole.start(), whole.end());
                    continue;
                }
                if let Some(function) = c.get(4) {
                    self.add(Kind::Function, function.start(), function.end());
                    continue;
                }
                let Some(list) = c.get(1).or_else(|| c.get(5)) else {
                    continue;
                };
                for m in IMPORTED_NAME.find_iter(list.as_str()) {
                    let (s, e) = (list.start() + m.start(), list.start() + m.end());
                    if m.as_str().starts_with(|c: char| c.is_ascii_uppercase()) {
                        self.add_type(s, e);
                    } else if !m.as_str().contains('.') {
                        self.add(Kind::Function, s, e);
                    }
                }
            }
        }
        self.named();
    }

    /// Names a message says what they are of: quoted after the word, or in a sentence.
    fn named(&mut self) {
        let text = self.text;
        if has(text, &["`", "‘", "'", "\""]) {
            for c in NAMED.captures_iter(text) {
                let (Some(word), Some(name)) = (c.get(1), c.get(2)) else {
                    continue;
                };
                // The name without its generics, arguments or a leading `&`/`mut`.
                let raw = name.as_str();
                let lead = raw.len() - raw.trim_start_matches(['&', '*', ' ']).len();
                let body = &raw[lead..];
                let len = body
                    .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | ':' | '.' | '$')))
                    .unwrap_or(body.len());
                let (s, e) = (name.start() + lead, name.start() + lead + len);
                if s == e {
                    continue;
                }
                let kind = match word.as_str() {
                    "function" | "fn" | "method" | "associated function" | "func" => Kind::Function,
                    "table" => Kind::Table,
                    "column" => Kind::Column,
                    _ => Kind::Type,
                };
                if kind == Kind::Type {
                    self.add_type(s, e);
                } else {
                    self.add(kind, s, e);
                }
            }
        }
        if has(
            text,
            &[
                " method",
                " function",
                " helper",
                " callback",
                " handler",
                " class",
                " struct",
                " type",
                " enum",
                " trait",
                " interface",
                " table",
                " column",
                " view",
            ],
        ) {
            for c in PROSE_NAMED.captures_iter(text) {
                let (Some(name), Some(word)) = (c.get(1), c.get(2)) else {
                    continue;
                };
                let plain = name.as_str();
                if plain.chars().all(|c| !c.is_lowercase()) {
                    continue;
                }
                let quoted = text[..name.start()].ends_with('`');
                let typeish = matches!(
                    word.as_str(),
                    "class" | "struct" | "type" | "enum" | "trait" | "interface"
                ) && plain.starts_with(|c: char| c.is_ascii_uppercase());
                let codeish = quoted
                    || typeish
                    || plain.contains(['_', '.', ':'])
                    || plain.chars().skip(1).any(char::is_uppercase);
                // `the legs table`: a plain word names a table when a sentence says so.
                let plain_table = matches!(word.as_str(), "table" | "view")
                    && text[..name.start()].trim_end_matches('`').ends_with("the ")
                    && !NOT_TABLES.contains(&plain);
                if !codeish && !plain_table {
                    continue;
                }
                match word.as_str() {
                    "method" | "function" | "helper" | "callback" | "handler" => {
                        self.add(Kind::Function, name.start(), name.end());
                    }
                    "table" | "view" => self.add(Kind::Table, name.start(), name.end()),
                    "column" => self.add(Kind::Column, name.start(), name.end()),
                    _ => self.add_type(name.start(), name.end()),
                }
            }
        }
        self.declared();
    }

    /// Types and functions by what declares them: Java's symbol lines, definitions,
    /// constructors, exception classes, a compiler's quoted code.
    fn declared(&mut self) {
        let text = self.text;
        if has(text, &["symbol:", "location:"]) {
            for c in JAVA_SYMBOL.captures_iter(text) {
                let (Some(word), Some(name)) = (c.get(1), c.get(2)) else {
                    continue;
                };
                match word.as_str() {
                    "method" => self.add(Kind::Function, name.start(), name.end()),
                    "variable" => {}
                    _ => self.add_type(name.start(), name.end()),
                }
            }
        }
        for c in DEFINITION.captures_iter(text) {
            if let Some(m) = (1..=4).find_map(|i| c.get(i)) {
                self.add_type(m.start(), m.end());
            }
        }
        if has(text, &["new "]) {
            for c in CONSTRUCTED.captures_iter(text) {
                if let Some(m) = c.get(1) {
                    self.add_type(m.start(), m.end());
                }
            }
        }
        if has(
            text,
            &[
                "Error",
                "Exception",
                "Warning",
                "Fault",
                "Interrupt",
                "Exit",
            ],
        ) {
            for m in EXCEPTION.find_iter(text) {
                self.add_type(m.start(), m.end());
            }
        }
        // Capitalised names inside a compiler's quoted code are types.
        if has(text, &["`"]) {
            for c in QUOTED_CODE.captures_iter(text) {
                let Some(code) = c.get(1) else { continue };
                let owner = code.as_str().split("::").next().unwrap_or("");
                if QUOTED_PATH_CALL.is_match(code.as_str()) && !basic(owner) {
                    self.add(Kind::Function, code.start(), code.end());
                    continue;
                }
                if let Some(shape) = CODE_SPAN_TABLE.captures(code.as_str()) {
                    for (i, kind) in [(1, Kind::Table), (2, Kind::Column)] {
                        let Some(m) = shape.get(i) else { continue };
                        for w in NAME_IN_LIST.find_iter(m.as_str()) {
                            let at = code.start() + m.start();
                            self.add(kind, at + w.start(), at + w.end());
                        }
                    }
                    continue;
                }
                if CODE_SPAN_NAME.is_match(code.as_str()) {
                    let kind = if text[..c.get(0).map_or(0, |w| w.start())].ends_with("table ") {
                        Kind::Table
                    } else {
                        Kind::Function
                    };
                    self.add(kind, code.start(), code.end());
                    continue;
                }
                if code.as_str().contains(char::is_whitespace)
                    && !code.as_str().contains(['<', '&'])
                {
                    continue;
                }
                for m in CAMEL.find_iter(code.as_str()) {
                    let (s, e) = (code.start() + m.start(), code.start() + m.end());
                    let before = text[..s].chars().next_back();
                    let after = text[e..].chars().next();
                    // `Foo::bar` and `Foo.bar(` are functions, found by their own patterns.
                    if matches!(before, Some(':' | '.'))
                        || matches!(after, Some(':' | '.' | '(' | '!'))
                    {
                        continue;
                    }
                    self.add_type(s, e);
                }
            }
        }
    }

    /// Capitalised names where code puts a type: after a parameter's `name:` or `->`, inside
    /// `<…>`, after `&`, `&mut`, `*`, `new`, `dyn`, `instanceof`, `except`, `raise`, `catch (`,
    /// or as the first of a list of them. Runs last: every other reading of a name comes first.
    pub(super) fn code_types(&mut self) {
        let text = self.text;
        for c in CODE_TYPE.captures_iter(text) {
            if let Some(m) = c.get(1)
                && !text[..m.start()].ends_with([':', '.'])
                && text[m.end()..]
                    .trim_start_matches([' ', '\t'])
                    .chars()
                    .next()
                    .is_some_and(|c| ",>)]=;{<([?|".contains(c))
            {
                self.add_type(m.start(), m.end());
            }
        }
        for c in DECLARED_TYPE.captures_iter(text) {
            if let Some(m) = c.get(1)
                && !text[..m.start()].ends_with([':', '.'])
            {
                self.add_type(m.start(), m.end());
            }
        }
        for c in STRONG_TYPE.captures_iter(text) {
            if let Some(m) = c.get(1) {
                self.add_type(m.start(), m.end());
            }
        }
        for c in C_NAMED_TYPE.captures_iter(text) {
            if let Some(m) = (1..=3).find_map(|i| c.get(i))
                && !C_WORDS.contains(&m.as_str())
            {
                self.add_type(m.start(), m.end());
            }
        }
        for c in CONSTRUCTOR_CALL.captures_iter(text) {
            if let Some(m) = c.get(1) {
                self.add_type(m.start(), m.end());
            }
        }
        if has(text, &["("]) {
            for c in C_FUNCTION.captures_iter(text) {
                if let Some(m) = c.get(1)
                    && !matches!(
                        m.as_str(),
                        "if" | "while" | "for" | "switch" | "return" | "sizeof"
                    )
                {
                    self.add(Kind::Function, m.start(), m.end());
                }
            }
        }
        for c in C_TYPE.captures_iter(text) {
            if let Some(m) = c.get(1)
                && !BASIC_TYPES.contains(&m.as_str())
            {
                self.add(Kind::Type, m.start(), m.end());
            }
        }
    }
}

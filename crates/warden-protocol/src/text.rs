//! Text from outside warden (a repository's files, a model's arguments, a command's words) as
//! it may be shown to a person: every control character, which a terminal would obey (moving the
//! cursor, erasing lines, setting the title), and every bidirectional override, which makes text
//! read other than it is, spelled out as `\u{…}`.

/// `text` with every control character and bidirectional override spelled out: one line.
pub fn printable(text: &str) -> String {
    escape(text, false)
}

/// At most `max` characters of `text`, on one line, with `…` when it was cut.
pub fn short(text: &str, max: usize) -> String {
    let mut cut: String = text.chars().take(max).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut.replace('\n', " ")
}

/// As [`printable`], keeping line breaks and tabs: text of several lines.
pub fn printable_text(text: &str) -> String {
    escape(text, true)
}

fn escape(text: &str, lines: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        );
        let kept = lines && matches!(c, '\n' | '\t');
        if (c.is_control() && !kept) || bidi {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_overrides_are_spelled_out() {
        let hostile = "ok\u{1b}[2K\r\u{202e}cba\u{7}";
        assert_eq!(printable(hostile), "ok\\u{1b}[2K\\u{d}\\u{202e}cba\\u{7}");
        assert_eq!(printable("a\nb"), "a\\u{a}b");
        assert_eq!(printable_text("a\n\tb\u{1b}"), "a\n\tb\\u{1b}");
        assert_eq!(printable("plain é ünïcode"), "plain é ünïcode");
    }
}

//! HTML as readable text: scripts, styles and other invisible parts dropped, block elements as
//! line breaks, list items as `- `, links' text kept with their target, entities decoded,
//! runs of blank space folded. Not a browser: enough to read a page.

use std::fmt::Write as _;

/// Elements whose content is never text.
const HIDDEN: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "head", "iframe", "object",
];
/// Elements that break lines.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "ul",
    "ol",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "main",
    "aside",
    "pre",
    "blockquote",
    "dt",
    "dd",
    "dl",
    "figure",
    "figcaption",
    "form",
    "title",
];

/// The readable text of `html`.
pub(crate) fn to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    let mut hidden: Option<String> = None;
    let mut href: Option<String> = None;
    let mut pre = 0usize;
    while !rest.is_empty() {
        let Some(open) = rest.find('<') else {
            if hidden.is_none() {
                push_text(&mut out, rest, pre > 0);
            }
            break;
        };
        if hidden.is_none() {
            push_text(&mut out, &rest[..open], pre > 0);
        }
        rest = &rest[open..];
        // Comments and declarations.
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        let Some(close) = rest.find('>') else {
            break;
        };
        let tag = &rest[1..close];
        rest = &rest[close + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        if let Some(inside) = &hidden {
            if closing && *inside == name {
                hidden = None;
            }
            continue;
        }
        if HIDDEN.contains(&name.as_str()) && !closing && !tag.ends_with('/') {
            hidden = Some(name);
            continue;
        }
        match name.as_str() {
            "pre" if closing => pre = pre.saturating_sub(1),
            "pre" => pre += 1,
            "a" if !closing => href = attribute(tag, "href"),
            "a" => {
                if let Some(link) = href.take().filter(|l| l.starts_with("http")) {
                    let _ = write!(out, " ({link})");
                }
            }
            "li" if !closing => {
                line_break(&mut out);
                out.push_str("- ");
                continue;
            }
            "td" | "th" if !closing => out.push_str(" | "),
            _ => {}
        }
        if BLOCKS.contains(&name.as_str()) {
            line_break(&mut out);
        }
    }
    tidy(&out)
}

fn attribute(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let at = lower.find(&format!("{name}="))? + name.len() + 1;
    let value = &tag[at..];
    let value = match value.chars().next()? {
        quote @ ('"' | '\'') => value[1..].split(quote).next()?,
        _ => value
            .split(|c: char| c.is_whitespace() || c == '>')
            .next()?,
    };
    Some(decode(value))
}

fn push_text(out: &mut String, text: &str, pre: bool) {
    let decoded = decode(text);
    if pre {
        out.push_str(&decoded);
        return;
    }
    let mut last_space = out.ends_with([' ', '\n']) || out.is_empty();
    for c in decoded.chars() {
        if c.is_whitespace() {
            if !last_space {
                out.push(' ');
                last_space = true;
            }
        } else {
            out.push(c);
            last_space = false;
        }
    }
}

fn line_break(out: &mut String) {
    while out.ends_with(' ') {
        out.pop();
    }
    if !out.ends_with('\n') && !out.is_empty() {
        out.push('\n');
    }
}

/// Lines trimmed, and no more than one blank line in a row.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            if blank == 1 && !out.is_empty() {
                out.push('\n');
            }
            continue;
        }
        blank = 0;
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_owned() + "\n"
}

/// Character references: the common named ones, and numeric ones.
fn decode(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest[..rest.len().min(12)].find(';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" | "#39" => Some('\''),
            "nbsp" => Some(' '),
            "mdash" => Some('—'),
            "ndash" => Some('–'),
            "hellip" => Some('…'),
            "copy" => Some('©'),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        if let Some(c) = decoded {
            out.push(c);
            rest = &rest[end + 1..];
        } else {
            out.push('&');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_becomes_readable_text() {
        let html = "<!doctype html><html><head><title>T</title><style>p{}</style></head><body>\
                    <script>alert('x')</script><h1>Release&nbsp;notes</h1><p>Fixed <b>slugify</b> for \
                    runs   of\n spaces &amp; tabs.</p><ul><li>one</li><li>two</li></ul>\
                    <p>See <a href=\"https://example.com/docs\">the docs</a>.</p><!-- hidden -->\
                    <pre>  keep\n   this</pre><p>&#x263A; &#9731; &lt;tag&gt;</p></body></html>";
        let text = to_text(html);
        assert_eq!(
            text,
            "Release notes\nFixed slugify for runs of spaces & tabs.\n- one\n- two\nSee the docs \
             (https://example.com/docs).\n  keep\n   this\n☺ ☃ <tag>\n"
        );
        assert!(!text.contains("alert") && !text.contains("p{}") && !text.contains("hidden"));
    }
}

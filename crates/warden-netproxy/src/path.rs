//! Request paths as rules see them and upstreams get them: one spelling of each. Percent-escapes
//! of unreserved characters are decoded (`%7E` is `~`, `%2e` is `.`), other escapes written in
//! upper case, `.` and `..` segments resolved, empty segments (`//`) folded. An escaped `/`
//! stays one, inside its segment (`@types%2Fnode`), unless read as a `/` it would make a `.`,
//! `..` or empty segment. A path an upstream could read otherwise is refused, never forwarded:
//! an escaped `\`, a `\`, a NUL or other control character, a `..` that climbs above the root,
//! a malformed escape, an escaped `%` (decoded twice, it would be another path), bytes that are
//! not UTF-8 once decoded (overlong spellings of `.` and `/`), a segment that is `.`, `..` or
//! empty before its `;` parameters (`..;` is `..` to some servers).

/// The path and query of an origin-form request target, normalised; why it is refused.
pub(crate) fn normalise(target: &str) -> Result<String, String> {
    let (path, query) = match target.find(['?', '#']) {
        Some(at) => target.split_at(at),
        None => (target, ""),
    };
    if !path.starts_with('/') {
        return Err(format!("the path {target:?} does not start with /"));
    }
    let decoded = decode_unreserved(path)?;
    if std::str::from_utf8(&decode_all(&decoded)).is_err() {
        return Err(format!(
            "the path {target:?} is not UTF-8 once decoded (an overlong spelling?)"
        ));
    }
    let mut segments: Vec<&str> = Vec::new();
    let parts: Vec<&str> = decoded.split('/').skip(1).collect();
    let mut trailing = false;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        match *part {
            "" => trailing = last,
            "." => trailing = last,
            ".." => {
                if segments.pop().is_none() {
                    return Err(format!(
                        "the path {target:?} climbs above the root with `..`"
                    ));
                }
                trailing = last;
            }
            other => {
                // Before its parameters (`;…`), and read with its escaped slashes as slashes.
                let bare = other.split(';').next().unwrap_or(other);
                let dotted = bare
                    .split("%2F")
                    .any(|piece| piece.is_empty() || piece == "." || piece == "..");
                if dotted {
                    return Err(format!(
                        "the path {target:?} has a segment {other:?} that some upstreams read as \
                         `.`, `..` or empty"
                    ));
                }
                segments.push(other);
                trailing = false;
            }
        }
    }
    let mut out = String::with_capacity(decoded.len() + query.len());
    out.push('/');
    out.push_str(&segments.join("/"));
    if trailing && !segments.is_empty() {
        out.push('/');
    }
    out.push_str(query);
    Ok(out)
}

/// `path` with escapes of unreserved characters decoded and the others upper-cased; an escape
/// of `/`, `\` or a control character, a raw `\` or control character, or a malformed escape
/// refuses it.
fn decode_unreserved(path: &str) -> Result<String, String> {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("the path {path:?} holds a malformed escape"))?;
            match hex {
                b'/' => out.push_str("%2F"),
                b'%' => {
                    return Err(format!(
                        "the path {path:?} holds an escaped `%`, which a second decoding would read \
                         as another path"
                    ));
                }
                b'\\' => {
                    return Err(format!(
                        "the path {path:?} holds an escaped {:?}, which upstreams read differently",
                        char::from(hex)
                    ));
                }
                c if c.is_ascii_control() => {
                    return Err(format!(
                        "the path {path:?} holds an escaped control character"
                    ));
                }
                c if c.is_ascii_alphanumeric() || b"-._~".contains(&c) => out.push(char::from(c)),
                c => {
                    const HEX: &[u8; 16] = b"0123456789ABCDEF";
                    out.push('%');
                    out.push(char::from(HEX[usize::from(c >> 4)]));
                    out.push(char::from(HEX[usize::from(c & 0xF)]));
                }
            }
            i += 3;
            continue;
        }
        if b == b'\\' {
            return Err(format!(
                "the path {path:?} holds a `\\`, which some upstreams read as `/`"
            ));
        }
        if b.is_ascii_control() {
            return Err(format!("the path {path:?} holds a control character"));
        }
        // Not an escape: copied as it is (UTF-8 runs whole).
        let len = utf8_len(b);
        out.push_str(path.get(i..i + len).unwrap_or(""));
        i += len.max(1);
    }
    Ok(out)
}

/// `path` with every escape decoded, as bytes.
fn decode_all(path: &str) -> Vec<u8> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| path.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        if let Some(b) = escaped {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_the_same_path_are_one() {
        for (given, want) in [
            ("/lodash", "/lodash"),
            ("/lodash/", "/lodash/"),
            ("//lodash///x", "/lodash/x"),
            ("/a/./b/../c", "/a/c"),
            ("/a/%2e%2E/c", "/c"),
            ("/%6codash", "/lodash"),
            ("/a%7Eb", "/a~b"),
            ("/@scope%40x", "/@scope%40x"),
            ("/a%3fb?x=%2f", "/a%3Fb?x=%2f"),
            ("/a/b/..", "/a/"),
            ("/", "/"),
            ("/@types%2fnode", "/@types%2Fnode"),
            ("/a;v=1/b", "/a;v=1/b"),
        ] {
            assert_eq!(normalise(given).as_deref(), Ok(want), "{given}");
        }
    }

    #[test]
    fn spellings_an_upstream_may_read_otherwise_are_refused() {
        for bad in [
            "/lodash/../../evil",
            "/..",
            "/lodash%2f..%2fevil",
            "/lodash%2F..",
            "/lodash/..;/evil",
            "/lodash/%2e%2e;/evil",
            "/lodash/%252e%252e/evil",
            "/lodash/%c0%ae%c0%ae/evil",
            "/lodash%c0%af..%c0%afevil",
            "/a%2f%2fb",
            "/a%5cb",
            "/a\\b",
            "/a%00b",
            "/a\u{1}b",
            "/a%zz",
            "/a%2",
            "lodash",
        ] {
            assert!(normalise(bad).is_err(), "{bad}");
        }
    }

    /// The path as an upstream that decodes every escape and then resolves dot segments reads
    /// it.
    fn as_upstream_reads(path: &str) -> Option<String> {
        let mut decoded = Vec::new();
        let bytes = path.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                decoded.push(u8::from_str_radix(path.get(i + 1..i + 3)?, 16).ok()?);
                i += 3;
            } else {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
        let text = String::from_utf8(decoded).ok()?.replace('\\', "/");
        let mut segments: Vec<&str> = Vec::new();
        for part in text.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    segments.pop();
                }
                other => segments.push(other),
            }
        }
        Some(format!("/{}", segments.join("/")))
    }

    #[test]
    fn what_is_allowed_is_what_the_upstream_would_read() {
        // Generated paths from pieces attackers use; whatever the proxy lets through under a
        // rule for `/lodash*` is under `/lodash` as an upstream resolves it too.
        let pieces = [
            "lodash", "evil", "..", ".", "%2e%2e", "%2E", "%2f", "%5c", "", "a%7Eb", "%6c",
            "odash", "%2e", "x",
        ];
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..20_000 {
            let mut path = String::new();
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let n = 1 + (seed >> 60) as usize % 6;
            for _ in 0..n {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                path.push('/');
                path.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            if let Ok(normal) = normalise(&path)
                && normal.starts_with("/lodash")
            {
                let read = as_upstream_reads(&path).expect("a path the proxy took decodes");
                assert!(
                    read.starts_with("/lodash"),
                    "{path} -> {normal}, read as {read}"
                );
            }
        }
    }
}

//! The wildcard of warden's rules: in commands, hosts' request paths and text specifiers alike.

/// Whether `text` matches `pattern`, where `*` matches any run of bytes (`/` included) and
/// everything else matches itself.
pub fn wildcard(pattern: &str, text: &str) -> bool {
    let (pattern, text) = (pattern.as_bytes(), text.as_bytes());
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
mod tests {
    use super::wildcard;

    #[test]
    fn a_star_matches_any_run_and_the_rest_matches_itself() {
        assert!(wildcard("npm test *", "npm test --watch"));
        assert!(wildcard("/pkg/*", "/pkg/left-pad/-/x.tgz"));
        assert!(wildcard("*", ""));
        assert!(wildcard("a*b*c", "aXXbYc"));
        assert!(!wildcard("a*b*c", "aXXbY"));
        assert!(!wildcard("/pkg/*", "/admin"));
        assert!(!wildcard("ls", "lsof"));
    }
}

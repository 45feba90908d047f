//! A command's output as the model should see it (SPEC C3): each line as a terminal would show
//! it at the end (carriage returns, cursor moves and line erasures applied, colours and other
//! escape sequences removed, spinner glyphs gone), installer and build progress dropped and
//! counted, runs of identical lines and of lines alike but for their numbers folded ("… 312
//! similar lines …"), long lines cut, and only the head and tail of a long output. Whatever was
//! dropped is counted, so the summary can say so.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Lines kept from the start and from the end of a long output.
const HEAD_LINES: usize = 40;
const TAIL_LINES: usize = 80;
/// Characters kept of one line.
const LINE_CHARS: usize = 400;
/// Bytes of a line looked at to tell whether it reads as an error.
const ERROR_PREFIX: usize = 200;

/// Starts of lines (after their indentation) that installers and builders print about their
/// progress: downloads, packages already there, compiling dependencies, unpacking.
const NOISE: &[&str] = &[
    "npm WARN deprecated",
    "npm warn deprecated",
    "npm notice",
    "npm http fetch",
    "npm http cache",
    "Requirement already satisfied:",
    "Collecting ",
    "Downloading ",
    "Using cached ",
    "Installing collected packages",
    "Compiling ",
    "Downloaded ",
    "Updating crates.io index",
    "Updating git repository",
    "Locking ",
    "Adding ",
    "Checking ",
    "Fresh ",
    "Building [",
    "Blocking waiting for file lock",
    "Get:",
    "Hit:",
    "Ign:",
    "Unpacking ",
    "Selecting previously unselected",
    "Preparing to unpack",
    "Setting up ",
    "Processing triggers",
    "Reading package lists",
    "Building dependency tree",
    "Reading state information",
    "(Reading database",
];

/// A command's output, normalised, with the counts behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalised {
    pub text: String,
    /// Something was dropped or shortened.
    pub cut: bool,
    /// Lines in the raw output.
    pub lines: usize,
    /// Progress and installer lines dropped.
    pub noise: usize,
    /// Lines folded into "… N similar lines …".
    pub similar: usize,
    /// The first line that reads as an error.
    pub first_error: Option<String>,
}

/// Normalises a command's output: see the module's documentation.
#[allow(clippy::too_many_lines)]
pub fn normalise(bytes: &[u8]) -> Normalised {
    let text = String::from_utf8_lossy(bytes);
    let mut seen: Vec<Cow<'_, str>> = Vec::new();
    let mut cut = false;
    let mut noise = 0usize;
    let mut first_error = None;
    let mut total = 0usize;
    let mut lower = String::new();
    for raw in text.lines() {
        total += 1;
        let shown = visible(raw);
        let body = shown.trim_start();
        if body.is_empty() {
            // A spinner or a bar that erased itself leaves nothing; blank lines stay, one of a
            // run.
            if !raw.trim().is_empty() && raw.len() != shown.len() {
                noise += 1;
            } else if seen.last().is_some_and(|l| !l.trim().is_empty()) {
                seen.push(Cow::Borrowed(""));
            }
            continue;
        }
        if is_noise(body) || is_progress_bar(body) {
            noise += 1;
            continue;
        }
        if first_error.is_none() && is_error_line(&shown, &mut lower) {
            first_error = Some(shown.chars().take(200).collect());
        }
        let shown = match shown.char_indices().nth(LINE_CHARS) {
            Some((at, _)) => {
                cut = true;
                Cow::Owned(format!("{}…", &shown[..at]))
            }
            None => shown,
        };
        seen.push(shown);
    }
    while seen.last().is_some_and(|l| l.is_empty()) {
        seen.pop();
    }
    // Identical neighbours, then neighbours of one shape.
    let mut lines: Vec<Cow<'_, str>> = Vec::new();
    let mut similar = 0usize;
    let mut i = 0;
    while i < seen.len() {
        let mut j = i + 1;
        while j < seen.len() && seen[j] == seen[i] {
            j += 1;
        }
        if j - i > 1 {
            lines.push(seen[i].clone());
            lines.push(Cow::Owned(format!(
                "[the line above repeated {} more times]",
                j - i - 1
            )));
            cut = true;
            i = j;
            continue;
        }
        let mut k = i + 1;
        if has_digit(&seen[i]) {
            while k < seen.len() && seen[k] != seen[k - 1] && same_shape(&seen[k], &seen[i]) {
                k += 1;
            }
        }
        if k - i >= 4 {
            lines.push(seen[i].clone());
            lines.push(Cow::Owned(format!("[… {} similar lines …]", k - i - 2)));
            lines.push(seen[k - 1].clone());
            similar += k - i - 2;
            cut = true;
            i = k;
            continue;
        }
        lines.push(seen[i].clone());
        i += 1;
    }
    if noise > 0 {
        lines.push(Cow::Owned(format!(
            "[{noise} installer and build progress lines dropped]"
        )));
        cut = true;
    }
    if lines.len() > HEAD_LINES + TAIL_LINES {
        let omitted = lines.len() - HEAD_LINES - TAIL_LINES;
        let tail = lines.split_off(lines.len() - TAIL_LINES);
        lines.truncate(HEAD_LINES);
        lines.push(Cow::Owned(format!("[… {omitted} lines omitted …]")));
        lines.extend(tail);
        cut = true;
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') && !out.is_empty() {
        out.push('\n');
    }
    Normalised {
        text: out,
        cut,
        lines: total,
        noise,
        similar,
        first_error,
    }
}

/// One line on what a command did: its exit, how much it printed and what was dropped of it,
/// and the first line that reads as an error.
pub fn one_line(exit_code: i32, duration_ms: u64, out: &Normalised, err: &Normalised) -> String {
    #[allow(clippy::cast_precision_loss)]
    let seconds = duration_ms as f64 / 1000.0;
    let mut line = format!(
        "exit {exit_code} after {seconds:.1} s; {} lines of output",
        out.lines + err.lines
    );
    let dropped = out.noise + err.noise + out.similar + err.similar;
    if dropped > 0 {
        let _ = write!(line, ", {dropped} of them progress, noise or alike");
    }
    if let Some(error) = err.first_error.as_ref().or(out.first_error.as_ref()) {
        let _ = write!(line, "; first error: {error}");
    }
    line
}

/// Whether a line (its indentation removed) is installer or build progress.
fn is_noise(body: &str) -> bool {
    static FIRST: std::sync::LazyLock<[bool; 256]> = std::sync::LazyLock::new(|| {
        let mut first = [false; 256];
        for n in NOISE {
            first[usize::from(n.as_bytes()[0])] = true;
        }
        first
    });
    FIRST[usize::from(body.as_bytes()[0])] && NOISE.iter().any(|n| body.starts_with(n))
}

/// Lines that say something went wrong.
fn is_error_line(line: &str, lower: &mut String) -> bool {
    lower.clear();
    let mut end = line.len().min(ERROR_PREFIX);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    lower.extend(line[..end].chars().map(|c| c.to_ascii_lowercase()));
    let lower = lower.trim_start();
    lower.starts_with("error")
        || lower.contains("error:")
        || lower.contains("error[")
        || lower.starts_with("fatal")
        || lower.starts_with("failed")
        || lower.contains(" failed")
        || lower.starts_with("traceback")
        || lower.contains("panicked at")
        || lower.starts_with("not ok")
        || lower.contains("err!")
        || lower.starts_with("npm error")
        || lower.starts_with("e   ")
        || lower.contains("error [")
        // Test runners' marks of a failed test.
        || lower.starts_with(['\u{2716}', '\u{2717}', '\u{2718}', '\u{00d7}'])
}

fn has_digit(line: &str) -> bool {
    line.bytes().any(|b| b.is_ascii_digit())
}

/// Whether two lines differ only in their numbers and spacing: `[  9%]` and `[ 11%]` are one
/// shape.
fn same_shape(a: &str, b: &str) -> bool {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        let skip = |s: &mut &[u8], what: fn(u8) -> bool| -> bool {
            let n = s.iter().take_while(|&&c| what(c)).count();
            *s = &s[n..];
            n > 0
        };
        let (da, db) = (
            skip(&mut a, |c| c.is_ascii_digit()),
            skip(&mut b, |c| c.is_ascii_digit()),
        );
        if da != db {
            return false;
        }
        let (sa, sb) = (skip(&mut a, |c| c == b' '), skip(&mut b, |c| c == b' '));
        if da || sa || sb {
            continue;
        }
        match (a.first(), b.first()) {
            (None, None) => return true,
            (Some(x), Some(y)) if x == y => {
                a = &a[1..];
                b = &b[1..];
            }
            _ => return false,
        }
    }
}

/// A progress bar's last frame: a run of bar glyphs (`━━━━`, `████`, `[=====>   ]`) beside
/// numbers (a size, a percentage, a rate).
fn is_progress_bar(line: &str) -> bool {
    // Bar glyphs (U+2500–U+259F) all start with E2 in UTF-8.
    if memchr::memchr2(0xE2, b'[', line.as_bytes()).is_none() || !has_digit(line) {
        return false;
    }
    let glyphs = line
        .chars()
        .filter(|c| matches!(c, '\u{2500}'..='\u{259F}'))
        .count();
    if glyphs >= 8 {
        return true;
    }
    // `[=====>    ] 45%`
    if let (Some(open), Some(close)) = (line.find('['), line.find(']'))
        && open < close
    {
        let inside = &line[open + 1..close];
        let bar = inside
            .chars()
            .filter(|c| matches!(c, '=' | '#' | '>' | '-' | ' ' | '.'))
            .count();
        return inside.chars().count() >= 10
            && bar == inside.chars().count()
            && inside.contains(['=', '#'])
            && line.contains('%');
    }
    false
}

/// What a terminal shows of one line at the end: a carriage return or a move to the first
/// column starts it again, an erase of the whole line clears it, colour codes and other
/// escape sequences go, and so do the spinner glyphs of progress indicators.
fn visible(raw: &str) -> Cow<'_, str> {
    let bytes = raw.as_bytes();
    // Spinner glyphs are U+2800–U+28FF: E2 A0..A3 in UTF-8.
    let spinner = bytes.first() == Some(&0xE2) && raw.starts_with(is_spinner);
    if memchr::memchr2(b'\r', 0x1b, bytes).is_none() && !spinner {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut at = 0;
    while at < bytes.len() {
        // Copy up to the next control byte.
        let next = memchr::memchr2(b'\r', 0x1b, &bytes[at..]).map_or(bytes.len(), |n| at + n);
        out.push_str(&raw[at..next]);
        if next == bytes.len() {
            break;
        }
        at = next + 1;
        if bytes[next] == b'\r' {
            // What follows overwrites the line. A bare return at the end leaves it.
            if at < bytes.len() {
                out.clear();
            }
            continue;
        }
        match bytes.get(at) {
            // CSI: parameters and intermediates, then one final byte.
            Some(b'[') => {
                let start = at + 1;
                let end = bytes[start..]
                    .iter()
                    .position(|b| (0x40..=0x7e).contains(b))
                    .map_or(bytes.len(), |n| start + n);
                let params = &bytes[start..end];
                match (bytes.get(end), params) {
                    // To the first column, or erase the whole line.
                    (Some(b'G'), b"" | b"1" | b"0") | (Some(b'K'), b"2") => out.clear(),
                    _ => {}
                }
                at = end + 1;
            }
            // OSC (titles, hyperlinks): to BEL or ESC \.
            Some(b']') => {
                let mut end = at + 1;
                while end < bytes.len() {
                    if bytes[end] == 0x07 {
                        end += 1;
                        break;
                    }
                    if bytes[end] == 0x1b && bytes.get(end + 1) == Some(&b'\\') {
                        end += 2;
                        break;
                    }
                    end += 1;
                }
                at = end;
            }
            // Character sets: ESC ( B and the like.
            Some(b'(' | b')' | b'*' | b'+') => at += 2,
            Some(_) => at += 1,
            None => {}
        }
        // Never stop inside a character.
        while at < bytes.len() && !raw.is_char_boundary(at) {
            at += 1;
        }
    }
    let trimmed = out.trim_start_matches(is_spinner);
    if trimmed.len() != out.len() {
        out = trimmed.to_owned();
    }
    Cow::Owned(out)
}

/// The braille glyphs spinners cycle through.
fn is_spinner(c: char) -> bool {
    ('\u{2800}'..='\u{28ff}').contains(&c)
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/tests/fixtures/output/{name}.txt",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// No escape, carriage return or spinner glyph is left.
    fn clean(text: &str) {
        assert!(!text.contains('\u{1b}'), "an escape is left:\n{text}");
        assert!(!text.contains('\r'), "a carriage return is left:\n{text}");
        assert!(!text.contains(is_spinner), "a spinner is left:\n{text}");
        assert!(!text.contains("(B"), "a charset escape is left:\n{text}");
    }

    #[test]
    fn progress_bars_colours_and_repeats_are_folded() {
        let raw = "Downloading 10%\r Downloading 50%\r Done\n\u{1b}[32mok\u{1b}[0m\nsame\nsame\nsame\nend\n";
        let n = normalise(raw.as_bytes());
        assert_eq!(
            n.text,
            " Done\nok\nsame\n[the line above repeated 2 more times]\nend\n"
        );
        assert!(n.cut);
        let plain = normalise(b"a\nb\n");
        assert_eq!((plain.text.as_str(), plain.cut), ("a\nb\n", false));
    }

    #[test]
    fn terminal_control_is_applied_not_shown() {
        // A spinner redrawn in place with a move to column 1 and an erase, then the text.
        let npm = "\u{2819}\u{1b}[1G\u{1b}[0K\u{2839}\u{1b}[1G\u{1b}[0Kadded 3 packages\n";
        assert_eq!(normalise(npm.as_bytes()).text, "added 3 packages\n");
        // A hyperlink (OSC 8) and a charset switch.
        let link = "see \u{1b}]8;;https://x.test\u{1b}\\docs\u{1b}]8;;\u{1b}\\ ok\u{1b}(B\n";
        assert_eq!(normalise(link.as_bytes()).text, "see docs ok\n");
        // A cursor-hiding sequence with a private parameter, and an erase of the whole line.
        let pip = "\u{1b}[?25lbar 10%\u{1b}[2Kdone\u{1b}[?25h\n";
        assert_eq!(normalise(pip.as_bytes()).text, "done\n");
    }

    #[test]
    fn npm_install() {
        let n = normalise(&fixture("npm-install"));
        clean(&n.text);
        // 140 registry fetches and the spinner frames are progress, not output.
        assert!(n.noise >= 140, "{}", n.noise);
        assert!(!n.text.contains("npm http fetch"), "{}", n.text);
        for kept in [
            "added 70 packages in 10s",
            "5 packages are looking for funding",
            "npm warn EBADENGINE Unsupported engine",
            "npm warn install-scripts 2 packages have install scripts",
        ] {
            assert!(n.text.contains(kept), "{kept}:\n{}", n.text);
        }
        assert!(n.text.lines().count() < 60, "{}", n.text);
    }

    #[test]
    fn npm_test_failure() {
        let n = normalise(&fixture("npm-test-failure"));
        clean(&n.text);
        assert_eq!(
            n.first_error.as_deref(),
            Some("\u{2716} slugify: trims surrounding whitespace (1.450828ms)")
        );
        assert!(
            n.text
                .contains("npm error Lifecycle script `test` failed with error:")
        );
        assert!(
            n.text
                .contains("AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:")
        );
    }

    #[test]
    fn cargo_build_error() {
        let n = normalise(&fixture("cargo-build-error"));
        clean(&n.text);
        assert!(
            n.text
                .starts_with("error[E0308]: mismatched types\n  --> src/main.rs:17:5"),
            "{}",
            n.text
        );
        assert_eq!(
            n.first_error.as_deref(),
            Some("error[E0308]: mismatched types")
        );
        assert!(n.text.contains("warning: unused variable: `unused_total`"));
        for gone in [
            "Compiling",
            "Downloaded",
            "Building [",
            "Locking",
            "Updating",
        ] {
            assert!(!n.text.contains(gone), "{gone}:\n{}", n.text);
        }
        assert!(n.noise >= 14);
    }

    #[test]
    fn cargo_test_failure() {
        let n = normalise(&fixture("cargo-test-failure"));
        clean(&n.text);
        assert!(
            n.text.contains(
                "test result: FAILED. 30 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out"
            ),
            "{}",
            n.text
        );
        assert!(n.text.contains("assertion `left == right` failed"));
        assert!(n.text.contains("  left: \"Hello  World\""));
        assert_eq!(
            n.first_error.as_deref(),
            Some("test tests::kv_hex_value ... FAILED")
        );
    }

    #[test]
    fn pytest_failure() {
        let n = normalise(&fixture("pytest-failure"));
        clean(&n.text);
        // Forty parametrised passes are one shape, whatever their spacing.
        assert!(n.text.contains("[… 38 similar lines …]"), "{}", n.text);
        assert!(n.text.contains("test_square_is_non_negative[0] PASSED"));
        assert!(n.text.contains("test_square_is_non_negative[39] PASSED"));
        assert!(n.text.contains("E       assert 404 == 204"));
        assert!(n.text.contains("E       KeyError: 'port'"));
        assert!(n.text.contains("2 failed, 60 passed in 0.12s"));
        assert!(
            n.first_error.as_deref().is_some_and(
                |e| e.starts_with("test_app.py::test_delete_user_returns_no_content FAILED")
            ),
            "{:?}",
            n.first_error
        );
    }

    #[test]
    fn pip_install_progress() {
        let n = normalise(&fixture("pip-install-progress"));
        clean(&n.text);
        assert!(
            !n.text.contains('\u{2501}'),
            "the bars are gone:\n{}",
            n.text
        );
        assert!(!n.text.contains("Downloading"), "{}", n.text);
        assert!(
            n.text
                .contains("Successfully installed certifi-2026.10.19.post1")
        );
        assert!(n.text.lines().count() <= 3, "{}", n.text);
    }

    #[test]
    fn apt_get_install() {
        let n = normalise(&fixture("apt-get-install"));
        clean(&n.text);
        assert!(
            n.text
                .contains("0 upgraded, 2 newly installed, 0 to remove")
        );
        for gone in [
            "Get:1",
            "Unpacking cowsay",
            "Setting up cowsay",
            "Reading package lists",
        ] {
            assert!(!n.text.contains(gone), "{gone}:\n{}", n.text);
        }
        assert!(!n.text.starts_with("[the line above"), "{}", n.text);
    }

    #[test]
    fn installer_noise_and_alike_lines_are_dropped_and_counted() {
        let mut cargo = String::new();
        for i in 0..40 {
            let _ = writeln!(cargo, "   Compiling crate{i} v0.{i}.0");
        }
        cargo.push_str("error[E0308]: mismatched types\n  --> src/main.rs:4:18\n");
        let n = normalise(cargo.as_bytes());
        assert_eq!(n.noise, 40);
        assert!(n.text.starts_with("error[E0308]"), "{}", n.text);
        let mut pytest = String::new();
        for i in 0..50 {
            let _ = writeln!(
                pytest,
                "tests/test_api.py::test_case_{i} PASSED [{}%]",
                i * 2
            );
        }
        pytest.push_str("FAILED tests/test_api.py::test_delete_user - assert 404 == 204\n");
        let n = normalise(pytest.as_bytes());
        assert_eq!(n.similar, 48);
        assert!(n.text.contains("[… 48 similar lines …]"), "{}", n.text);
        let line = one_line(1, 2300, &n, &normalise(b""));
        assert!(
            line.starts_with("exit 1 after 2.3 s; 51 lines of output, 48 of them"),
            "{line}"
        );
        assert!(line.contains("first error: FAILED tests/test_api.py::test_delete_user"));
    }

    #[test]
    fn long_outputs_keep_head_and_tail() {
        // Lines that differ in more than their numbers: none of them alike.
        let mut raw = String::new();
        for i in 0..1000 {
            let _ = writeln!(raw, "line {i} {}", "x".repeat(i % 7));
        }
        let n = normalise(raw.as_bytes());
        assert!(n.cut);
        assert!(n.text.starts_with("line 0 \n"));
        assert!(n.text.contains("[… 880 lines omitted …]"));
        assert!(n.text.ends_with("line 999 xxxxx\n"));
    }

    #[test]
    fn shapes_ignore_numbers_and_spacing_only() {
        assert!(same_shape("a [  9%]", "a [ 11%]"));
        assert!(same_shape("took 12ms", "took 3ms"));
        assert!(!same_shape("took 12ms", "took 12s"));
        assert!(!same_shape("a1", "a"));
        assert!(is_progress_bar("[=====>      ] 45% 1.2 MB"));
        assert!(!is_progress_bar("[ok] all 3 passed"));
    }
}

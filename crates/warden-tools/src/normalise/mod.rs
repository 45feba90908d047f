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
// Long because it is one pass over the lines with the state the folds share (the lines kept,
// the noise dropped, the first error, the totals); split, that state would be threaded through.
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
mod tests;

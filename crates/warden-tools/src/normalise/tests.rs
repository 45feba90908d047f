//! The normaliser against the output of real tools (npm, cargo, pytest, pip, apt-get) and what
//! it folds: progress bars, colours, repeats, terminal control, installer noise.

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
    let raw =
        "Downloading 10%\r Downloading 50%\r Done\n\u{1b}[32mok\u{1b}[0m\nsame\nsame\nsame\nend\n";
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

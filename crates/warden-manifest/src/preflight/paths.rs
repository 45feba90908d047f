//! Path tests the checks share: absolute without `.` or `..`, and below another.

/// Whether `path` is absolute, without `.` or `..` components.
pub(super) fn absolute(path: &str) -> bool {
    path.starts_with('/') && !path.split('/').any(|c| c == ".." || c == ".")
}

/// Whether `path` is `base` or below it.
pub(super) fn under(path: &str, base: &str) -> bool {
    let base = base.trim_end_matches('/');
    path == base
        || base.is_empty()
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'))
}

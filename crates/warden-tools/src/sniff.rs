//! Telling binary files from text, and naming common binary types.

/// How much of a file's start is inspected, as git does.
pub(crate) const SNIFF_BYTES: usize = 8192;

/// A file is binary when its first bytes hold a NUL.
pub(crate) fn is_binary(head: &[u8]) -> bool {
    memchr::memchr(0, head).is_some()
}

/// A short name for the type of a binary file, from its magic number.
pub(crate) fn describe(head: &[u8]) -> &'static str {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "PNG image"),
        (b"\xff\xd8\xff", "JPEG image"),
        (b"GIF87a", "GIF image"),
        (b"GIF89a", "GIF image"),
        (b"%PDF-", "PDF document"),
        (b"PK\x03\x04", "ZIP archive"),
        (b"\x1f\x8b", "gzip archive"),
        (b"\x28\xb5\x2f\xfd", "zstd archive"),
        (b"\xfd7zXZ\x00", "xz archive"),
        (b"BZh", "bzip2 archive"),
        (b"\x7fELF", "ELF executable"),
        (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
        (b"\0asm", "WebAssembly module"),
        (b"SQLite format 3\0", "SQLite database"),
        (b"MZ", "Windows executable"),
    ];
    MAGIC
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map_or("binary data", |(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers_name_types() {
        assert_eq!(describe(b"\x89PNG\r\n\x1a\n\0\0"), "PNG image");
        assert_eq!(describe(b"\x7fELF\x02\x01"), "ELF executable");
        assert_eq!(describe(b"\0\0\0"), "binary data");
        assert!(is_binary(b"abc\0def"));
        assert!(!is_binary("héllo\n".as_bytes()));
    }
}

//! What leaves a run (SPEC M6): only the declared artifacts, reached without following a link,
//! redacted (the manifest's patterns, warden's secret patterns, the run's credentials) and
//! hashed; and the workspace's patch against the pinned commit.

use std::path::{Path, PathBuf};

use regex::bytes::Regex;
use sha2::{Digest as _, Sha256};
use warden_sandbox::Collected;

use super::Bind;
use super::git::Repo;
use super::layout::{Resolved, RunDir};
use super::receipt::{Artifact, Receipt};
use crate::parse::{Parsed, hex};
use crate::schema::{Alias, Manifest};

/// The largest artifact collected.
const MAX_ARTIFACT: u64 = 64 * 1024 * 1024;

/// The deepest mount holding a path inside the sandbox, and the path below its target.
fn deepest<'a>(mounts: &'a [Bind], inside: &'a Path) -> Option<(&'a Bind, &'a Path)> {
    mounts
        .iter()
        .filter(|b| inside.starts_with(&b.target))
        .max_by_key(|b| b.target.components().count())
        .map(|b| (b, inside.strip_prefix(&b.target).unwrap_or(inside)))
}

/// The host path behind a path inside the sandbox: through the deepest mount holding it.
fn host_path(mounts: &[Bind], inside: &Path) -> Option<(PathBuf, PathBuf)> {
    deepest(mounts, inside).map(|(b, rel)| (b.host.clone(), b.host.join(rel)))
}

/// Where a path inside the sandbox is on the host when the deepest mount holding it is an
/// overlay's: in its upper layer, or in its lower layer where the upper has nothing there.
fn overlaid(mounts: &[Bind], inside: &Path) -> Option<Result<(PathBuf, PathBuf), String>> {
    let (bind, rel) = deepest(mounts, inside)?;
    let layer = bind.layer.as_ref()?;
    Some(super::layered::seen_at(
        &layer.join("upper"),
        &bind.host,
        rel,
    ))
}

/// The declared artifacts that live in a scratch tmpfs: (declared path, source on the host
/// as the helper sees it, where the helper copies it).
pub(crate) fn scratch_sources(
    m: &Manifest,
    mounts: &[Bind],
    sized: &[(PathBuf, u64)],
    collected: &Path,
) -> Vec<(String, PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for (i, declared) in m.artifacts.collect.iter().enumerate() {
        let Some((_, source)) = host_path(mounts, Path::new(declared)) else {
            continue;
        };
        if sized.iter().any(|(d, _)| source.starts_with(d)) {
            out.push((declared.clone(), source, collected.join(i.to_string())));
        }
    }
    out
}

/// Reads `path`, a regular file under `root`, without following a link on the way.
fn read_beneath(root: &Path, path: &Path) -> Result<Vec<u8>, String> {
    let rel = path
        .strip_prefix(root)
        .map_err(|_| "not under its mount".to_owned())?;
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        let meta = std::fs::symlink_metadata(&at).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "not there".to_owned(),
            _ => e.to_string(),
        })?;
        if meta.file_type().is_symlink() {
            return Err(format!(
                "{} is a symbolic link: links are not followed",
                at.display()
            ));
        }
    }
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > MAX_ARTIFACT {
        return Err(format!(
            "{} bytes: more than the {MAX_ARTIFACT} collected",
            meta.len()
        ));
    }
    std::fs::read(path).map_err(|e| e.to_string())
}

/// `bytes` redacted: the manifest's patterns, the run's credentials, warden's own patterns.
/// With how many matches were replaced.
pub(crate) fn redact(bytes: &[u8], patterns: &[Regex], secrets: &[String]) -> (Vec<u8>, usize) {
    const MARK: &[u8] = b"[REDACTED]";
    let mut count = 0;
    let mut out = bytes.to_vec();
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        let needle = secret.as_bytes();
        let mut next = Vec::with_capacity(out.len());
        let mut i = 0;
        while i < out.len() {
            if out[i..].starts_with(needle) {
                next.extend_from_slice(MARK);
                i += needle.len();
                count += 1;
            } else {
                next.push(out[i]);
                i += 1;
            }
        }
        out = next;
    }
    for pattern in patterns {
        let matches = pattern.find_iter(&out).count();
        if matches > 0 {
            count += matches;
            out = pattern.replace_all(&out, MARK).into_owned();
        }
    }
    if let Ok(text) = std::str::from_utf8(&out) {
        let redacted = warden_trace::redact(text);
        if let std::borrow::Cow::Owned(changed) = redacted {
            let before = text.matches("[REDACTED]").count();
            count += changed.matches("[REDACTED]").count().saturating_sub(before);
            out = changed.into_bytes();
        }
    }
    (out, count)
}

fn store(dir: &RunDir, name: &str, bytes: &[u8]) -> Result<(PathBuf, String), String> {
    let artifacts = dir.artifacts();
    std::fs::create_dir_all(&artifacts).map_err(|e| format!("{}: {e}", artifacts.display()))?;
    let path = artifacts.join(name);
    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((path, hex(&Sha256::digest(bytes))))
}

/// The name an artifact is stored under: its file name, numbered when it repeats.
fn stored_name(declared: &str, taken: &[String]) -> String {
    let base = Path::new(declared).file_name().map_or_else(
        || "artifact".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut name = base.clone();
    let mut n = 1;
    while taken.contains(&name) || name == "patch.diff" {
        n += 1;
        name = format!("{n}-{base}");
    }
    name
}

/// Collects the declared artifacts into the run's `artifacts/`.
pub(crate) fn artifacts(
    m: &Manifest,
    mounts: &[Bind],
    in_sized: &[(String, PathBuf, PathBuf)],
    collected: &[Collected],
    dir: &RunDir,
    secrets: &[String],
    receipt: &mut Receipt,
) {
    let patterns: Vec<Regex> = m
        .artifacts
        .redact
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .collect();
    let mut taken: Vec<String> = Vec::new();
    for declared in &m.artifacts.collect {
        let mut artifact = Artifact {
            path: declared.clone(),
            ..Artifact::default()
        };
        let bytes = if let Some((_, source, copy)) = in_sized.iter().find(|(d, _, _)| d == declared)
        {
            match collected.iter().find(|c| &c.source == source) {
                Some(c) if c.error.is_some() => Err(c.error.clone().unwrap_or_default()),
                Some(_) => std::fs::read(copy).map_err(|e| e.to_string()),
                None => Err("the sandbox did not report it".to_owned()),
            }
        } else {
            match overlaid(mounts, Path::new(declared)).or_else(|| {
                host_path(mounts, Path::new(declared)).map(|(root, path)| Ok((root, path)))
            }) {
                Some(Ok((root, path))) => read_beneath(&root, &path),
                Some(Err(why)) => Err(why),
                None => Err("under no mount".to_owned()),
            }
        };
        match bytes {
            Ok(bytes) => {
                let (clean, redactions) = redact(&bytes, &patterns, secrets);
                let name = stored_name(declared, &taken);
                match store(dir, &name, &clean) {
                    Ok((path, sha)) => {
                        artifact.stored = Some(path.display().to_string());
                        artifact.sha256 = Some(sha);
                        artifact.bytes = clean.len() as u64;
                        artifact.redactions = redactions;
                        taken.push(name);
                    }
                    Err(e) => artifact.error = Some(e),
                }
            }
            Err(why) => {
                if why.contains("symbolic link") {
                    receipt.denied.filesystem_denials += 1;
                }
                artifact.error = Some(why);
            }
        }
        receipt.artifacts.push(artifact);
    }
}

/// How the workspace's patch is made: by the host's git in its worktree, or inside the run's
/// sandbox over its overlay.
pub(crate) enum PatchFrom<'a> {
    Worktree(&'a Repo),
    /// The run's sandbox, the sandbox's helper, and the workspace's target inside.
    Overlay(&'a warden_sandbox::Request, &'a Path, &'a Path),
}

/// The workspace's patch against the pinned commit, as `artifacts/patch.diff`.
pub(crate) fn patch(
    from: PatchFrom<'_>,
    resolved: &[Resolved],
    parsed: &Parsed,
    dir: &RunDir,
    secrets: &[String],
    receipt: &mut Receipt,
) {
    let (Some(workspace), Some(commit)) = (
        resolved.iter().find(|r| r.alias == Alias::Workspace),
        receipt.input.commit.clone(),
    ) else {
        return;
    };
    let made = match (from, &workspace.git_dir, &workspace.shared) {
        (PatchFrom::Worktree(repo), Some(git_dir), None) => {
            repo.patch(&workspace.path, git_dir, &commit)
        }
        (PatchFrom::Overlay(base, helper, target), None, Some(_)) => {
            let upper = workspace.path.join("upper");
            if !upper.is_dir() {
                return;
            }
            let gitdir = dir.root.join("gitdir");
            super::layered::patch(base, helper, target, &upper, &gitdir, &commit)
        }
        _ => return,
    };
    let patterns: Vec<Regex> = parsed
        .manifest
        .artifacts
        .redact
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .collect();
    let mut artifact = Artifact {
        path: "patch".to_owned(),
        ..Artifact::default()
    };
    match made {
        Ok(bytes) => {
            let (clean, redactions) = redact(&bytes, &patterns, secrets);
            // A redaction that changed which files the patch touches would store a patch other
            // than the one made (and checked).
            if redactions > 0
                && super::layered::touched(&clean).ok() != super::layered::touched(&bytes).ok()
            {
                artifact.error =
                    Some("redacting the patch changed which files it touches: not kept".to_owned());
                receipt.artifacts.push(artifact);
                return;
            }
            match store(dir, "patch.diff", &clean) {
                Ok((path, sha)) => {
                    artifact.stored = Some(path.display().to_string());
                    artifact.sha256 = Some(sha);
                    artifact.bytes = clean.len() as u64;
                    artifact.redactions = redactions;
                }
                Err(e) => artifact.error = Some(e),
            }
        }
        Err(e) => artifact.error = Some(e),
    }
    receipt.artifacts.push(artifact);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_takes_the_patterns_the_credentials_and_warden_s_own() {
        let patterns = vec![Regex::new(r"(?i)password\s*=\s*\S+").unwrap()];
        let text =
            b"ok\npassword = hunter2\nsent ghs_0123456789abcdef0123 to x\nAKIAIOSFODNN7EXAMPLE\n";
        let (out, n) = redact(text, &patterns, &["ghs_0123456789abcdef0123".to_owned()]);
        let out = String::from_utf8(out).unwrap();
        assert!(
            !out.contains("hunter2") && !out.contains("ghs_0123") && !out.contains("AKIAIOSF"),
            "{out}"
        );
        assert!(out.starts_with("ok\n"));
        assert_eq!(n, 3, "{out}");
    }

    #[test]
    fn a_redaction_that_changes_what_a_patch_touches_is_seen() {
        // A private key's start in one file and its end in the next: redacted across the
        // second file's header, the patch would name other files than the one made.
        let raw = "diff --git a/a.txt b/a.txt\nnew file mode 100644\n--- /dev/null\n\
            +++ b/a.txt\n@@ -0,0 +1 @@\n+-----BEGIN RSA PRIVATE KEY-----\n\
            diff --git a/b.txt b/b.txt\nnew file mode 100644\n--- /dev/null\n\
            +++ b/b.txt\n@@ -0,0 +1 @@\n+-----END RSA PRIVATE KEY-----\n";
        let (clean, n) = redact(raw.as_bytes(), &[], &[]);
        assert!(n > 0);
        let before = super::super::layered::touched(raw.as_bytes()).unwrap();
        assert_eq!(before.len(), 2);
        assert_ne!(super::super::layered::touched(&clean).ok(), Some(before));
    }

    #[test]
    fn a_link_on_the_way_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("scratch");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("out.txt")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
        assert!(
            read_beneath(&root, &root.join("out.txt"))
                .unwrap_err()
                .contains("symbolic link")
        );
        assert!(
            read_beneath(&root, &root.join("up/secret"))
                .unwrap_err()
                .contains("symbolic link")
        );
        std::fs::write(root.join("real.txt"), "r").unwrap();
        assert_eq!(read_beneath(&root, &root.join("real.txt")).unwrap(), b"r");
    }
}

//! The policy's secret list as the sandbox asks it: one list, enforced by the file tools (through
//! the path policy) and by the sandbox (through this), so both give the same answer for a path.

use std::path::{Path, PathBuf};

use warden_policy::Secrets;
use warden_sandbox::MaskDecision;

/// [`Secrets`] for the sandbox's walk of a command's roots.
#[derive(Debug)]
pub struct SecretMask(pub Secrets);

impl warden_sandbox::Masking for SecretMask {
    fn decide(
        &self,
        path: &Path,
        beside_key: bool,
        head: &mut dyn FnMut() -> Option<Vec<u8>>,
    ) -> MaskDecision {
        // The head is read at most once for both questions.
        let mut kept: Option<Option<Vec<u8>>> = None;
        let mut once = || kept.get_or_insert_with(&mut *head).clone();
        if self.0.check(path, beside_key, &mut once).is_some() {
            MaskDecision::Masked
        } else if self.0.unmasked(path).is_some()
            && self.0.unmasked_secret(path, beside_key, &mut once)
        {
            MaskDecision::Unmasked
        } else {
            MaskDecision::Readable
        }
    }

    fn by_place(&self, path: &Path) -> bool {
        self.0.by_place(path)
    }

    fn may_mask(&self, name: &str, beside_key: bool) -> bool {
        self.0.may_be_secret(name, beside_key)
    }

    fn fingerprint(&self) -> String {
        self.0.fingerprint()
    }

    fn credential_paths(&self) -> Vec<(PathBuf, MaskDecision)> {
        let mut paths = Vec::new();
        for path in self.0.credential_files() {
            // A directory is hidden whole, unless the user unmasked something in it: then each
            // of its files is decided on its own.
            if self.0.unmasks_any()
                && !self.0.always_hidden(path)
                && self.0.unmasked(path).is_none()
                && path.is_dir()
            {
                paths.extend(files_below(path).into_iter().map(|file| {
                    let decision = self.credential(&file);
                    (file, decision)
                }));
            } else {
                paths.push((path.clone(), self.credential(path)));
            }
        }
        paths
    }
}

impl SecretMask {
    /// A credential path is masked unless the user unmasked it (which the home's hidden
    /// credentials ignore).
    fn credential(&self, path: &Path) -> MaskDecision {
        if self.0.check(path, false, &mut || None).is_some() {
            MaskDecision::Masked
        } else if self.0.unmasked(path).is_some() {
            MaskDecision::Unmasked
        } else {
            // Where it is not a secret at all (a settings pattern would have said so).
            MaskDecision::Readable
        }
    }
}

/// How many files of a credential directory are decided one by one.
const CREDENTIAL_FILES: usize = 10_000;

/// The regular files below `dir`, links not followed, at most [`CREDENTIAL_FILES`] of them
/// (past that the directory is hidden whole).
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(at) = dirs.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                dirs.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
            if files.len() > CREDENTIAL_FILES {
                return vec![dir.to_path_buf()];
            }
        }
    }
    files
}

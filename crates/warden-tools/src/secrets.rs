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

    fn may_mask(&self, name: &str, beside_key: bool) -> bool {
        self.0.may_be_secret(name, beside_key)
    }

    fn fingerprint(&self) -> String {
        self.0.fingerprint()
    }

    fn always_checked(&self) -> Vec<PathBuf> {
        self.0
            .credential_files()
            .iter()
            .filter(|p| !p.is_dir())
            .cloned()
            .collect()
    }
}

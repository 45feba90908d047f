//! `warden sandbox doctor`: each layer tried, not listed. The warden binary is mounted into a
//! sandbox built for one layer and run as `PROBE_ARG KIND …` ([`probe_main`]): it attempts what
//! that layer must stop (a write only Landlock stands in the way of, a `ptrace`, a read of a
//! masked file, a connection out, more processes or memory than the limit) and says what
//! happened. A layer works when the attempt fails in the way the layer fails it; it is missing
//! otherwise, and the report says why. One missing layer stops no other check.

mod inside;
mod limits;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::masking::MaskRule;
use crate::plan::{Fallback, Limits, Plan, Request, RootIdentity};
use crate::spawn::{Outcome, Output, Sandbox};
use inside::{Attempt, Status};

pub use inside::probe_main;

/// The first argument that makes the warden binary a probe inside a sandbox.
pub const PROBE_ARG: &str = "__sandbox-probe";

/// Where the probe binary is mounted inside.
const PROBE_AT: &str = "/.warden/probe";

/// One layer's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerCheck {
    /// The layer, as the sandbox names it.
    pub layer: &'static str,
    /// It stopped what it must stop.
    pub works: bool,
    /// What was tried and what happened.
    pub detail: String,
    /// Nothing may run without it.
    pub required: bool,
}

/// Tries every layer with `helper` running the sandbox and `probe` (the warden binary)
/// mounted inside; `scratch` is a new private directory of the host the checks may use,
/// `mask` the secret list of the user's settings and `identity` who commands are when warden
/// runs as root.
pub fn check_layers(
    helper: &Path,
    probe: &Path,
    scratch: &Path,
    mask: &MaskRule,
    identity: RootIdentity,
    fallback: Fallback,
) -> Vec<LayerCheck> {
    let doctor = Doctor {
        sandbox: Sandbox::new(helper.to_path_buf()),
        probe,
        scratch,
        mask,
        identity,
        fallback,
    };
    let mut checks = Vec::new();
    let Some(seccomp_mode) = doctor.process(&mut checks) else {
        return checks;
    };
    doctor.files(&mut checks, &seccomp_mode);
    doctor.network(&mut checks);
    doctor.limits(&mut checks);
    checks
}

/// What a probe run gave: the probe's report, and how the command ended.
type Ran = Result<(Option<Attempt>, Outcome), String>;

struct Doctor<'a> {
    sandbox: Sandbox,
    probe: &'a Path,
    scratch: &'a Path,
    mask: &'a MaskRule,
    identity: RootIdentity,
    /// `[sandbox.limits] fallback = "rlimits"`.
    fallback: Fallback,
}

impl Doctor<'_> {
    fn run(&self, request: &Request) -> Ran {
        let plan = Plan::new(request)?;
        let outcome = self
            .sandbox
            .run(&plan, Output::Capture)
            .map_err(|e| e.to_string())?;
        let attempt = serde_json::from_slice(outcome.stdout.trim_ascii()).ok();
        Ok((attempt, outcome))
    }

    fn base(&self, args: &[&str]) -> Request {
        Request {
            root_identity: self.identity,
            ..base_request(self.probe, self.scratch, args)
        }
    }

    /// Who the command is on the host: not root, unless the user chose it; and a file it
    /// writes in the workspace belongs to the user who ran warden.
    fn identity(&self, inside: &Status) -> LayerCheck {
        const LAYER: &str = "unprivileged-identity";
        let own = crate::sys::effective_uid();
        let host = inside
            .host_uid
            .map_or_else(|| "unknown".to_owned(), |u| u.to_string());
        if own != 0 {
            let detail = format!(
                "warden runs as uid {own}, not root; the command is uid {host} on the host"
            );
            return check(LAYER, inside.host_uid == Some(own), &detail, true);
        }
        let RootIdentity::Unprivileged(id) = self.identity else {
            let detail = "[sandbox] root_identity = \"host\": commands run as root on the host, \
                          and every file only root may read is readable to them";
            return check(LAYER, false, detail, false);
        };
        let workspace = self.scratch.join("workspace");
        let written = workspace.join("identity.txt");
        let inside_path = written.display().to_string();
        let wrote = self.run(&self.base(&["write", &inside_path]));
        let owner =
            std::fs::symlink_metadata(&written).map(|m| std::os::unix::fs::MetadataExt::uid(&m));
        let _ = std::fs::remove_file(&written);
        let (works, detail) = match (&wrote, owner) {
            (Ok((Some(attempt), _)), Ok(owner)) if attempt.done => (
                inside.host_uid == Some(id) && owner == own,
                format!(
                    "the command is uid {host} on the host (warden runs as root); a file it \
                     wrote in the workspace belongs to uid {owner}"
                ),
            ),
            (Err(why), _) => (false, format!("nothing could run: {why}")),
            _ => (
                false,
                format!(
                    "the command is uid {host} on the host, but it could not write in the \
                     workspace"
                ),
            ),
        };
        check(LAYER, works, &detail, true)
    }

    /// The namespaces, capabilities, `no_new_privs`, descriptors and the environment: what the
    /// command's process is, against what this one is. Returns the seccomp mode it is in, or
    /// `None` when nothing could run at all.
    fn process(&self, checks: &mut Vec<LayerCheck>) -> Option<String> {
        let inside = match self.run(&self.base(&["status"])) {
            Ok((Some(attempt), _)) => attempt
                .error
                .and_then(|text| serde_json::from_str::<Status>(&text).ok()),
            Ok((None, outcome)) => {
                let why = String::from_utf8_lossy(&outcome.stderr).trim().to_owned();
                checks.push(check(
                    "sandbox",
                    false,
                    &format!("the probe did not run: {why}"),
                    true,
                ));
                return None;
            }
            Err(why) => {
                checks.push(check(
                    "sandbox",
                    false,
                    &format!("nothing could run: {why}"),
                    true,
                ));
                return None;
            }
        };
        let Some(inside) = inside else {
            checks.push(check(
                "sandbox",
                false,
                "the probe said nothing readable",
                true,
            ));
            return None;
        };
        let outside = Status::of_this_process();
        for ((name, there), (_, here)) in inside.namespaces.iter().zip(&outside.namespaces) {
            let layer = match name.as_str() {
                "user" => "user-namespace",
                "mnt" => "mount-namespace",
                "pid" => "pid-namespace",
                "ipc" => "ipc-namespace",
                "uts" => "uts-namespace",
                _ => "network-namespace",
            };
            let works = !there.is_empty() && there != here;
            let detail = format!("the command's is {there}, warden's {here}");
            checks.push(check(layer, works, &detail, true));
        }
        let no_caps = !inside.cap_eff.is_empty() && inside.cap_eff.chars().all(|c| c == '0');
        let caps = format!("effective capabilities {}", inside.cap_eff);
        checks.push(check("capabilities-dropped", no_caps, &caps, true));
        let nnp = format!("NoNewPrivs: {}", inside.no_new_privs);
        checks.push(check(
            "no-new-privs",
            inside.no_new_privs == "1",
            &nnp,
            true,
        ));
        let extra = inside.env.iter().filter(|k| *k != "PATH").count();
        let env = format!("the command saw {extra} variable(s) besides the one given");
        checks.push(check("clean-environment", extra == 0, &env, true));
        let fds = format!(
            "{} descriptors open (standard streams and the one listing them)",
            inside.fds
        );
        checks.push(check("closed-descriptors", inside.fds <= 4, &fds, true));
        checks.push(self.identity(&inside));
        Some(inside.seccomp)
    }

    /// Landlock, seccomp, a masked file, a denied path.
    fn files(&self, checks: &mut Vec<LayerCheck>, seccomp_mode: &str) {
        // Landlock: a writable mount whose writes only Landlock refuses.
        let landlock_dir = self.scratch.join("landlock");
        let _ = std::fs::create_dir_all(&landlock_dir);
        let mut request = self.base(&["write", "/.warden/landlock/x"]);
        request.mounts.push((
            landlock_dir.clone(),
            PathBuf::from("/.warden/landlock"),
            true,
        ));
        request.landlock_denied = vec![PathBuf::from("/.warden/landlock")];
        let what = "a write where only Landlock stood in the way";
        let ran = self.run(&request);
        checks.push(refused("landlock", ran, what, &[libc::EACCES], false));
        let _ = std::fs::remove_dir_all(&landlock_dir);

        let ran = self.run(&self.base(&["ptrace"]));
        let mut seccomp = refused(
            "seccomp",
            ran,
            "ptrace(PTRACE_TRACEME)",
            &[libc::EPERM],
            true,
        );
        seccomp.works &= seccomp_mode == "2";
        seccomp.detail = format!(
            "Seccomp: {seccomp_mode} (2 is a filter); {}",
            seccomp.detail
        );
        checks.push(seccomp);

        // A masked file and a denied path of a readable root, and a secret of the list.
        let root = self.scratch.join("readable");
        let made = std::fs::create_dir_all(root.join("hidden"))
            .and_then(|()| std::fs::write(root.join("masked.txt"), "x"))
            .and_then(|()| std::fs::write(root.join("hidden/file.txt"), "x"))
            .and_then(|()| std::fs::write(root.join(".env"), "TOKEN=x"));
        if let Err(e) = made {
            for layer in ["masked-file", "denied-path", "secret-list"] {
                let why = format!("the check's files could not be made: {e}");
                checks.push(check(layer, false, &why, true));
            }
            return;
        }
        let readable = |args: &[&str], deny: PathBuf| {
            let mut request = self.base(args);
            request.allow_read.push(root.clone());
            request.deny_read.push(deny);
            request
        };
        let masked = root.join("masked.txt");
        let request = readable(&["read", &masked.display().to_string()], masked.clone());
        let what = "reading a masked file";
        let ran = self.run(&request);
        checks.push(refused("masked-file", ran, what, &[libc::EACCES], true));
        let hidden = root.join("hidden/file.txt").display().to_string();
        let request = readable(&["read", &hidden], root.join("hidden"));
        let what = "reading below a denied directory";
        let ran = self.run(&request);
        checks.push(refused("denied-path", ran, what, &[libc::ENOENT], true));
        let secret = root.join(".env");
        let mut request = self.base(&["read", &secret.display().to_string()]);
        request.allow_read.push(root.clone());
        request.mask = self.mask.clone();
        checks.push(self.secret_list(&request, &secret));
    }

    /// The secret list: a `.env` of a readable root, masked by the user's rule.
    fn secret_list(&self, request: &Request, secret: &Path) -> LayerCheck {
        let what = "reading a .env the secret list masks";
        if self.mask.rule().is_none() {
            return check("secret-list", false, "no secret list was given", true);
        }
        let plan = match Plan::new(request) {
            Ok(plan) => plan,
            Err(why) => return check("secret-list", false, &format!("{what}: {why}"), true),
        };
        if plan.unmasked.iter().any(|p| p == secret) {
            let why = format!("{what}: readable, because [permissions] unmask says so");
            return check("secret-list", false, &why, false);
        }
        let ran = self
            .sandbox
            .run(&plan, Output::Capture)
            .map_err(|e| e.to_string())
            .map(|outcome| {
                let attempt = serde_json::from_slice(outcome.stdout.trim_ascii()).ok();
                (attempt, outcome)
            });
        refused("secret-list", ran, what, &[libc::EACCES], true)
    }

    /// The network: a listener on the host's loopback, out of the sandbox's reach.
    fn network(&self, checks: &mut Vec<LayerCheck>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").ok();
        let address = listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map_or_else(|| "127.0.0.1:9".to_owned(), |a| a.to_string());
        let ran = self.run(&self.base(&["connect", &address]));
        let what = "connecting to a port listening on the host's loopback";
        checks.push(refused("network", ran, what, &[], true));
        drop(listener);
    }
}

fn check(layer: &'static str, works: bool, detail: &str, required: bool) -> LayerCheck {
    LayerCheck {
        layer,
        works,
        detail: detail.to_owned(),
        required,
    }
}

/// The verdict of an attempt the layer must refuse: refused (an error the layer gives, a
/// signal, the timeout) is working; done, or refused with an error of another cause (`errnos`,
/// when not empty, are the layer's), is missing.
fn refused(
    layer: &'static str,
    ran: Ran,
    what: &str,
    errnos: &[i32],
    required: bool,
) -> LayerCheck {
    let (works, detail) = match ran {
        Err(why) => (
            false,
            format!("{what}: the sandbox could not run it: {why}"),
        ),
        Ok((_, outcome)) if outcome.timed_out => (true, format!("{what}: stopped by the timeout")),
        Ok((_, outcome)) if outcome.signal.is_some() => (
            true,
            format!(
                "{what}: stopped by signal {}",
                outcome.signal.unwrap_or_default()
            ),
        ),
        Ok((Some(attempt), _)) if attempt.done => (false, format!("{what}: it succeeded")),
        Ok((Some(attempt), _)) => {
            let error = attempt
                .error
                .unwrap_or_else(|| "no reason given".to_owned());
            match attempt.errno {
                Some(errno) if !errnos.is_empty() && !errnos.contains(&errno) => (
                    false,
                    format!(
                        "{what}: refused ({error}), but not by this layer, which fails it with {}",
                        names(errnos)
                    ),
                ),
                _ => (true, format!("{what}: refused ({error})")),
            }
        }
        Ok((None, outcome)) => (
            outcome.exit_code != 0,
            format!(
                "{what}: the probe reported nothing (exit {}): {}",
                outcome.exit_code,
                String::from_utf8_lossy(&outcome.stderr).trim()
            ),
        ),
    };
    check(layer, works, &detail, required)
}

/// Error numbers as the system names them.
fn names(errnos: &[i32]) -> String {
    errnos
        .iter()
        .map(|e| std::io::Error::from_raw_os_error(*e).to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The limits of every check: a time and a process count, per process where no group can hold
/// them (the other layers are checked wherever they can run; the limit checks say what binds).
fn short() -> Limits {
    Limits {
        timeout_ms: Some(20_000),
        pids: Some(64),
        fallback: Fallback::Rlimits,
        ..Limits::default()
    }
}

/// A sandbox with nothing but the probe in it: an empty workspace of `scratch`, no network.
fn base_request(probe: &Path, scratch: &Path, args: &[&str]) -> Request {
    let workspace = scratch.join("workspace");
    let _ = std::fs::create_dir_all(&workspace);
    let mut all = vec![PROBE_ARG.to_owned()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    Request {
        program: PROBE_AT.to_owned(),
        args: all,
        workspace: workspace.canonicalize().unwrap_or(workspace),
        home: PathBuf::from("/nonexistent"),
        env: vec![("PATH".to_owned(), "/usr/bin:/bin".to_owned())],
        mounts: vec![(probe.to_path_buf(), PathBuf::from(PROBE_AT), false)],
        limits: short(),
        ..Request::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(exit_code: i32, signal: Option<i32>, timed_out: bool) -> Outcome {
        Outcome {
            exit_code,
            signal,
            timed_out,
            ..crate::spawn::Outcome::default()
        }
    }

    fn attempt(done: bool) -> Attempt {
        Attempt {
            done,
            error: (!done).then(|| "Permission denied".to_owned()),
            count: None,
            errno: (!done).then_some(libc::EACCES),
        }
    }

    #[test]
    fn a_layer_works_only_when_the_attempt_was_stopped() {
        let works = |ran| refused("x", ran, "trying", &[libc::EACCES], true).works;
        assert!(!works(Ok((Some(attempt(true)), outcome(0, None, false)))));
        assert!(works(Ok((Some(attempt(false)), outcome(0, None, false)))));
        assert!(works(Ok((None, outcome(-1, Some(9), false)))));
        assert!(works(Ok((None, outcome(-1, None, true)))));
        assert!(!works(Err("no helper".to_owned())));
        assert!(!works(Ok((None, outcome(0, None, false)))));
        // Refused, but by something else than the layer (a read-only mount, not Landlock).
        let mut other = attempt(false);
        other.errno = Some(libc::EROFS);
        assert!(!works(Ok((Some(other), outcome(0, None, false)))));
    }
}

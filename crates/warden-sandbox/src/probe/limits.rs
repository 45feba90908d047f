//! The doctor's limit checks: where groups can be made, then each limit tried against the
//! whole sandbox — more processes, more memory across several processes, a busy CPU — and the
//! per-process limits (one allocation, one file, the time).

use super::{Doctor, LayerCheck, Ran, check, refused, short};
use crate::cgroup::Mechanism;
use crate::plan::{Fallback, Limits, Request};

impl Doctor<'_> {
    /// Processes, memory, CPU, file size and time.
    pub(super) fn limits(&self, checks: &mut Vec<LayerCheck>) {
        checks.push(cgroups());
        let limited = |args: &[&str], limits: Limits| Request {
            limits: Limits {
                fallback: self.fallback,
                ..limits
            },
            ..self.base(args)
        };
        for (layer, args, limits, what, errnos) in [
            (
                "process-limit",
                &["fork", "64"][..],
                Limits {
                    pids: Some(16),
                    ..short()
                },
                "64 processes under a limit of 16",
                &[libc::EAGAIN][..],
            ),
            (
                "memory-limit",
                &["alloc", "512"][..],
                Limits {
                    memory_mb: Some(64),
                    ..short()
                },
                "512 MiB under a limit of 64",
                &[libc::ENOMEM][..],
            ),
            (
                "sandbox-memory",
                &["alloc-each", "4", "24"][..],
                Limits {
                    memory_mb: Some(64),
                    ..short()
                },
                "4 processes of 24 MiB each under a limit of 64 MiB for the sandbox",
                &[][..],
            ),
            (
                "file-size-limit",
                &["fill", "/tmp/fill", "16"][..],
                Limits {
                    disk_mb: Some(4),
                    ..short()
                },
                "16 MiB written under a limit of 4",
                &[libc::EFBIG, libc::ENOSPC][..],
            ),
            (
                "timeout",
                &["sleep", "30"][..],
                Limits {
                    timeout_ms: Some(300),
                    ..short()
                },
                "30 s of sleep under a timeout of 0.3 s",
                &[][..],
            ),
        ] {
            let ran = self.run(&limited(args, limits));
            let by = bound_by(&ran, layer);
            let mut verdict = refused(layer, ran, what, errnos, true);
            if let Some(by) = by {
                verdict.detail = format!("{} [{}]", verdict.detail, by.as_str());
                // Chosen knowingly: a limit per process passes, and says so.
                if self.fallback == Fallback::Rlimits
                    && by == Mechanism::Rlimit
                    && layer == "sandbox-memory"
                {
                    verdict.works = true;
                    verdict.detail.push_str(
                        " (per process: [sandbox.limits] fallback = \"rlimits\"; the processes \
                         together are not bound)",
                    );
                }
            }
            checks.push(verdict);
        }
        checks.push(self.cpu_quota(&limited));
    }

    /// A busy loop under a fifth of a CPU: the group's quota throttles it.
    fn cpu_quota(&self, limited: &dyn Fn(&[&str], Limits) -> Request) -> LayerCheck {
        const LAYER: &str = "cpu-quota";
        let ran = self.run(&limited(
            &["spin", "600"],
            Limits {
                cpus: Some(0.2),
                ..short()
            },
        ));
        match ran {
            Err(why) => check(LAYER, false, &format!("nothing could run: {why}"), false),
            Ok((_, outcome)) => {
                let throttled = outcome.usage.counted.throttled_periods.unwrap_or(0);
                let by = outcome
                    .limits
                    .iter()
                    .find(|b| b.limit == "cpu")
                    .map_or("none", |b| b.by.as_str());
                let detail = format!(
                    "0.6 s of a busy loop under 0.2 CPUs: throttled in {throttled} periods [{by}]"
                );
                check(LAYER, throttled > 0, &detail, false)
            }
        }
    }
}

/// What bound the limit a check tried.
fn bound_by(ran: &Ran, layer: &str) -> Option<Mechanism> {
    let limit = match layer {
        "process-limit" => "processes",
        "memory-limit" | "sandbox-memory" => "memory",
        "file-size-limit" => "file-size",
        _ => return None,
    };
    let (_, outcome) = ran.as_ref().ok()?;
    outcome
        .limits
        .iter()
        .find(|b| b.limit == limit)
        .map(|b| b.by)
}

/// Where this host's groups go, in the order warden looks (see [`crate::cgroup`]): a missing
/// controller is reported here, and the limit checks say what it costs.
fn cgroups() -> LayerCheck {
    const LAYER: &str = "cgroups";
    let order = "order: cgroup v2 (the hierarchy's root, warden's own cgroup, its delegated \
                 parent), then cgroup v1, then per-process rlimits only with [sandbox.limits] \
                 fallback = \"rlimits\"";
    if let Some(v2) = crate::cgroup::describe_v2() {
        return match v2 {
            Ok(text) => check(
                LAYER,
                !text.contains("missing"),
                &format!("{text}; {order}"),
                false,
            ),
            Err(why) => check(LAYER, false, &format!("cgroup v2: {why}; {order}"), false),
        };
    }
    let have: Vec<&str> = ["memory", "pids", "cpu"]
        .into_iter()
        .filter(|c| crate::cgroup::v1_available(c))
        .collect();
    let missing: Vec<&str> = ["memory", "pids", "cpu"]
        .into_iter()
        .filter(|c| !have.contains(c))
        .collect();
    let lacking = if missing.is_empty() {
        String::new()
    } else {
        format!("; missing: {}", missing.join(" "))
    };
    let detail = format!(
        "cgroup v1: controllers {}{lacking}; {order}",
        have.join(" ")
    );
    check(LAYER, missing.is_empty(), &detail, false)
}

//! Inside the sandbox: the warden binary run as `PROBE_ARG KIND …` attempts one thing a layer
//! must stop and prints what happened, as one JSON line.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What one attempt did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Attempt {
    /// The attempt succeeded (what the layer must stop happened).
    pub(super) done: bool,
    /// Why it did not.
    pub(super) error: Option<String>,
    /// A count, where the probe counts (processes made).
    pub(super) count: Option<u64>,
    /// The error number of the failure, when the system gave one.
    #[serde(default)]
    pub(super) errno: Option<i32>,
}

/// Runs one probe and exits: the warden binary's entry point for [`super::PROBE_ARG`].
pub fn probe_main() -> ! {
    let args: Vec<String> = std::env::args().skip(2).collect();
    let attempt = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["write", path] => from(std::fs::File::create_new(path).map(|_| ())),
        ["read", path] => from(std::fs::read(path).map(|_| ())),
        ["ptrace"] => from(crate::sys::ptrace_traceme()),
        ["connect", address] => from(
            address
                .parse()
                .map_err(std::io::Error::other)
                .and_then(|a| std::net::TcpStream::connect_timeout(&a, Duration::from_secs(2)))
                .map(|_| ()),
        ),
        ["fork", n] => fork(n.parse().unwrap_or(0)),
        ["alloc", mb] => alloc(mb.parse().unwrap_or(0)),
        ["alloc-each", n, mb] => alloc_each(n.parse().unwrap_or(0), mb.parse().unwrap_or(0)),
        ["spin", ms] => {
            let until = std::time::Instant::now() + Duration::from_millis(ms.parse().unwrap_or(0));
            let mut turns = 0u64;
            while std::time::Instant::now() < until {
                turns = std::hint::black_box(turns.wrapping_add(1));
            }
            from(Ok(()))
        }
        ["fill", path, mb] => fill(Path::new(path), mb.parse().unwrap_or(0)),
        ["status"] => status(),
        ["sleep", seconds] => {
            std::thread::sleep(Duration::from_secs(seconds.parse().unwrap_or(0)));
            from(Ok(()))
        }
        _ => Attempt {
            done: false,
            error: Some(format!("unknown probe {args:?}")),
            count: None,
            errno: None,
        },
    };
    let text = serde_json::to_string(&attempt).unwrap_or_default();
    let _ = writeln!(std::io::stdout(), "{text}");
    crate::sys::exit(0)
}

/// What the process is: its namespaces, capabilities, `no_new_privs`, seccomp mode, open
/// descriptors and environment, as `/proc` tells.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Status {
    pub(super) namespaces: Vec<(String, String)>,
    pub(super) cap_eff: String,
    pub(super) no_new_privs: String,
    pub(super) seccomp: String,
    pub(super) fds: usize,
    pub(super) env: Vec<String>,
    /// The host uid this process is, as its user namespace's map says.
    #[serde(default)]
    pub(super) host_uid: Option<u32>,
}

impl Status {
    pub(super) fn of_this_process() -> Status {
        let proc_status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let field = |name: &str| {
            proc_status
                .lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
                .unwrap_or_default()
        };
        Status {
            namespaces: NAMESPACES
                .iter()
                .map(|ns| {
                    let link = std::fs::read_link(format!("/proc/self/ns/{ns}"))
                        .map(|l| l.display().to_string())
                        .unwrap_or_default();
                    ((*ns).to_owned(), link)
                })
                .collect(),
            cap_eff: field("CapEff:"),
            no_new_privs: field("NoNewPrivs:"),
            seccomp: field("Seccomp:"),
            fds: std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count),
            env: std::env::vars().map(|(k, _)| k).collect(),
            host_uid: host_uid(&field("Uid:")),
        }
    }
}

/// The host uid of `uids` (the `Uid:` line of `/proc/self/status`, real uid first): where
/// `/proc/self/uid_map` sends it (its second column is the parent namespace's id, which from
/// a namespace one level below the host's is the host's).
fn host_uid(uids: &str) -> Option<u32> {
    let uid: u32 = uids.split_whitespace().next()?.parse().ok()?;
    let map = std::fs::read_to_string("/proc/self/uid_map").ok()?;
    map.lines().find_map(|line| {
        let mut fields = line.split_whitespace().map(|f| f.parse::<u32>().ok());
        let (inside, outside, count) = (fields.next()??, fields.next()??, fields.next()??);
        (uid >= inside && uid - inside < count).then(|| outside + (uid - inside))
    })
}

/// The namespaces a command gets of its own.
const NAMESPACES: &[&str] = &["user", "mnt", "pid", "ipc", "uts", "net"];

fn status() -> Attempt {
    Attempt {
        done: true,
        error: serde_json::to_string(&Status::of_this_process()).ok(),
        count: None,
        errno: None,
    }
}

fn from(result: std::io::Result<()>) -> Attempt {
    Attempt {
        done: result.is_ok(),
        errno: result.as_ref().err().and_then(std::io::Error::raw_os_error),
        error: result.err().map(|e| e.to_string()),
        count: None,
    }
}

fn fork(n: u64) -> Attempt {
    let mut made = 0;
    let mut error = None;
    let mut errno = None;
    for _ in 0..n {
        match crate::sys::fork() {
            Ok(0) => {
                std::thread::sleep(Duration::from_secs(3));
                crate::sys::exit(0);
            }
            Ok(_) => made += 1,
            Err(e) => {
                errno = e.raw_os_error();
                error = Some(e.to_string());
                break;
            }
        }
    }
    Attempt {
        done: made == n,
        error,
        count: Some(made),
        errno,
    }
}

fn alloc(mb: usize) -> Attempt {
    let mut kept: Vec<Vec<u8>> = Vec::new();
    for _ in 0..mb {
        let mut block = Vec::new();
        if block.try_reserve_exact(1 << 20).is_err() {
            return Attempt {
                done: false,
                error: Some(format!("out of memory after {} MiB", kept.len())),
                count: Some(kept.len() as u64),
                errno: Some(libc::ENOMEM),
            };
        }
        block.resize(1 << 20, 1);
        kept.push(block);
    }
    Attempt {
        done: true,
        error: None,
        count: Some(kept.len() as u64),
        errno: None,
    }
}

/// `n` processes, each holding `mb` MiB at once: they all finish under a limit per process
/// that is above `mb`, not under a limit on all of them together below `n × mb`.
fn alloc_each(n: u64, mb: usize) -> Attempt {
    let mut children = Vec::new();
    for _ in 0..n {
        match crate::sys::fork() {
            Ok(0) => {
                let held = vec![1u8; mb << 20];
                std::thread::sleep(Duration::from_secs(1));
                crate::sys::exit(i32::from(std::hint::black_box(held)[0] != 1));
            }
            Ok(pid) => children.push(pid),
            Err(e) => return from(Err(e)),
        }
    }
    let finished = children
        .into_iter()
        .filter(|pid| {
            crate::sys::waitpid(*pid)
                .is_ok_and(|raw| libc::WIFEXITED(raw) && libc::WEXITSTATUS(raw) == 0)
        })
        .count() as u64;
    Attempt {
        done: finished == n,
        error: (finished < n).then(|| format!("{} of {n} processes were stopped", n - finished)),
        count: Some(finished),
        errno: None,
    }
}

fn fill(path: &Path, mb: usize) -> Attempt {
    // A file larger than the limit ends in an error, not a signal.
    crate::sys::ignore_file_size_signal();
    let block = vec![0u8; 1 << 20];
    let result = std::fs::File::create(path).and_then(|mut f| {
        for _ in 0..mb {
            f.write_all(&block)?;
        }
        f.sync_all()
    });
    from(result)
}

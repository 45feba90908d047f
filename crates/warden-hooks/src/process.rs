//! Running one hook's command: as the user, by `sh -c`, in the session's working directory,
//! with a minimal environment, its input on standard input, its output capped, and killed with
//! everything it started when its time is up.

use std::io::{Read, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most of each of a hook's outputs that is kept.
pub(crate) const OUTPUT_CAP: usize = 1 << 20;

/// Variables every hook has from warden's environment, when set.
const BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR",
];

/// What one run of a hook's command came to.
#[derive(Debug)]
pub(crate) struct Finished {
    /// Its exit code; `None` when it was killed or could not start.
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) timed_out: bool,
    /// Why it could not start.
    pub(crate) failed: Option<String>,
    pub(crate) duration: Duration,
}

/// Runs `command` with `input` on its standard input.
pub(crate) fn run(
    command: &str,
    input: &[u8],
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
) -> Finished {
    let started = Instant::now();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: a timeout ends everything it started.
        .process_group(0);
    for name in BASE_ENV {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Finished {
                code: None,
                stdout: String::new(),
                stderr: String::new(),
                timed_out: false,
                failed: Some(format!("could not start: {e}")),
                duration: started.elapsed(),
            };
        }
    };
    let pid = child.id();
    // A hook that does not read its input must not block warden writing it.
    let mut stdin = child.stdin.take();
    let input = input.to_vec();
    std::thread::spawn(move || {
        if let Some(stdin) = stdin.as_mut() {
            let _ = stdin.write_all(&input);
        }
    });
    // Its outputs are read on threads that report when they are done: something it started
    // and left behind can hold them open past the hook itself, and is not waited for beyond
    // the hook's time.
    let (done, finished) = std::sync::mpsc::channel::<(usize, String)>();
    let streams: [Option<Box<dyn Read + Send>>; 2] = [
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn Read + Send>),
    ];
    for (which, stream) in streams.into_iter().enumerate() {
        let done = done.clone();
        std::thread::spawn(move || {
            let _ = done.send((which, stream.map(capped).unwrap_or_default()));
        });
    }
    drop(done);
    let deadline = started + timeout;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                timed_out = true;
                kill_group(pid);
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    // What it started in its group goes with it.
    kill_group(pid);
    let mut outputs = [String::new(), String::new()];
    let mut read = 0;
    while read < 2 {
        let left = deadline.saturating_duration_since(Instant::now());
        if let Ok((which, text)) = finished.recv_timeout(left.max(Duration::from_millis(50))) {
            outputs[which] = text;
            read += 1;
        } else {
            // Its output is still held open by something it left running: past its time, the
            // run counts as timed out.
            timed_out = true;
            break;
        }
    }
    let [stdout, stderr] = outputs;
    Finished {
        code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        stdout,
        stderr,
        timed_out,
        failed: None,
        duration: started.elapsed(),
    }
}

/// Everything `stream` says, kept up to [`OUTPUT_CAP`] bytes (the rest read and dropped).
fn capped(mut stream: Box<dyn Read + Send>) -> String {
    let mut kept = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

#[allow(unsafe_code)]
fn kill_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: signalling a process group warden made for this hook.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

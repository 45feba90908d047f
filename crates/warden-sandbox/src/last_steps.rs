//! The command's last steps, in the sandbox's file system, alike for a helper's command and a
//! warm cell's: its working directory, limits, a session of its own, descriptors, identity,
//! capabilities, `no_new_privs`, Landlock, seccomp, then the program.

use std::fs;
use std::path::{Path, PathBuf};

use crate::plan::{INSIDE_ID, Plan};
use crate::{seccomp, sys};

/// The last steps, in the sandbox's file system: the working directory, limits, descriptors,
/// identity, `no_new_privs`, Landlock, seccomp, then the program. Returns only why it could not.
pub(crate) fn become_command(
    plan: &Plan,
    filters: &[seccompiler::BpfProgram],
    error_fd: i32,
) -> Result<String, String> {
    let step = |what: &str, result: std::io::Result<()>| result.map_err(|e| format!("{what}: {e}"));
    step("working directory", std::env::set_current_dir(&plan.cwd))?;
    limits(plan)?;
    // A session of its own: `kill 0` must not reach warden, its helpers or another command,
    // which share the process group it was started in. A command given the person's terminal
    // keeps it (the terminal's job control is theirs).
    if !sys::is_terminal(0) {
        step("a session of its own", sys::setsid())?;
    }
    step(
        "closing inherited descriptors",
        sys::close_except(3, error_fd),
    )?;
    let program = find_program(plan)
        .ok_or_else(|| format!("{}: command not found in the sandbox", plan.program))?;
    // As root: from here on the command is the unprivileged id, on the host too.
    let switch_to = plan.run_as.map(|_| (INSIDE_ID, INSIDE_ID));
    step("capabilities", sys::drop_capabilities(switch_to))?;
    if switch_to.is_some() {
        // A change of identity clears the parent-death signal: set it again, then make sure
        // the helper did not die in between (it holds the other end of the error pipe).
        step("parent-death signal", sys::set_parent_death_signal())?;
        if sys::reader_gone(error_fd) {
            sys::exit(126);
        }
    }
    step("no_new_privs", sys::set_no_new_privs())?;
    let enforced = crate::landlock::restrict(plan)?;
    if plan.require_landlock && !enforced {
        return Err(
            "landlock: required by [sandbox] require_landlock, but this kernel does not \
             enforce it (it needs Linux 5.13 or newer with landlock in the lsm= boot \
             parameter); nothing ran"
                .to_owned(),
        );
    }
    step("seccomp", seccomp::install(filters))?;
    let mut argv = vec![plan.program.clone()];
    argv.extend(plan.args.iter().cloned());
    Err(format!(
        "{}: {}",
        program.display(),
        sys::execve(&program, &argv, &plan.env)
    ))
}

fn limits(plan: &Plan) -> Result<(), String> {
    let l = &plan.limits;
    let set = |what: &str, resource, value: Option<u64>| match value {
        Some(v) => sys::setrlimit(resource, v).map_err(|e| format!("{what} limit: {e}")),
        None => Ok(()),
    };
    set("core-size", libc::RLIMIT_CORE, Some(0))?;
    // Data, not address space: runtimes such as V8 reserve far more address space than they use.
    set(
        "memory",
        libc::RLIMIT_DATA,
        l.memory_mb.map(|m| m.saturating_mul(1024 * 1024)),
    )?;
    set("process", libc::RLIMIT_NPROC, l.pids)?;
    set("CPU time", libc::RLIMIT_CPU, l.cpu_seconds)?;
    set(
        "file size",
        libc::RLIMIT_FSIZE,
        l.disk_mb.map(|m| m.saturating_mul(1024 * 1024)),
    )?;
    Ok(())
}

/// The program as the sandbox sees it: a path, or the first match on the plan's `PATH`.
fn find_program(plan: &Plan) -> Option<PathBuf> {
    if plan.program.contains('/') {
        return Some(PathBuf::from(&plan.program));
    }
    let path = plan
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map_or("/usr/local/bin:/usr/bin:/bin", |(_, v)| v.as_str());
    path.split(':')
        .map(|dir| Path::new(dir).join(&plan.program))
        .find(|candidate| fs::metadata(candidate).is_ok_and(|m| m.is_file()))
}

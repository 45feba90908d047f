//! Setting a run up: every alias resolved (the pinned commit's worktrees, the scratch space,
//! the caches), git's directory shown inside, the lockfiles' downloads held against the
//! allowlist.

use super::*;

/// Resolves every alias, recording each in the lease as soon as it exists (so that a run
/// killed half-way is still reaped whole).
pub(super) fn setup(
    parsed: &Parsed,
    options: &Options,
    dir: &RunDir,
    lease: &Mutex<lease::Lease>,
    receipt: &mut Receipt,
) -> Result<Setup, String> {
    let m = &parsed.manifest;
    if options.command.is_empty() && !options.session {
        return Err("no command given".to_owned());
    }
    if let Some(expires) = &m.run.expires_at
        && humantime::parse_rfc3339_weak(expires).is_ok_and(|at| at <= SystemTime::now())
    {
        return Err(format!("the manifest expired at {expires}"));
    }
    let needs_git = m
        .filesystem
        .mounts
        .iter()
        .any(|mt| matches!(mt.alias(), Some(Alias::Repo | Alias::Workspace)));
    let mut setup = Setup {
        repo: None,
        resolved: Vec::new(),
        mounts: Vec::new(),
        sized: Vec::new(),
        checkout: None,
    };
    let mut commit = String::new();
    if needs_git {
        let repo = Repo::open(&options.repository)?;
        commit = repo.head()?;
        receipt.input = Input {
            repository: Some(repo.top.display().to_string()),
            commit: Some(commit.clone()),
            dirty: repo.dirty(),
            neutralised: repo.neutralised.clone(),
        };
        if receipt.input.dirty {
            receipt.warnings.push(format!(
                "the working copy has uncommitted changes; the run starts from commit {commit} without them"
            ));
        }
        lock(lease).repository = Some(repo.top.clone());
        setup.repo = Some(repo);
    }
    let enforce = !options.report_only;
    // The commit's shared checkout, shown read-only, or with each command's writes going to
    // an overlay of the run's own. Not for agent sessions (their tools work on the host, on
    // the checkout itself), nor when observing (the repository is writable then), nor for an
    // alias mounted twice; an overlay not when the workspace is kept, writable only in part,
    // nested with another mount, or where overlayfs cannot hold the layer.
    let layers = m.cleanup.delete_workspace && warden_sandbox::overlay_can_hold(&dir.root);
    for mount in &m.filesystem.mounts {
        let rw = mount.mode == Mode::ReadWrite;
        let alias = mount.alias();
        let mut layer = None;
        let writes = alias == Some(Alias::Workspace) && rw;
        let share = needs_git
            && enforce
            && !options.session
            && once(m, alias)
            && (!writes || (layers && alone(m, &mount.target)));
        let host = match alias {
            Some(alias @ (Alias::Repo | Alias::Workspace)) if share => {
                let (tree, own) = shared(&mut setup, options, dir, lease, alias, &commit, writes)?;
                layer = own;
                tree
            }
            Some(alias @ (Alias::Repo | Alias::Workspace)) => {
                checkout(&mut setup, dir, lease, alias, &commit)?
            }
            Some(alias @ (Alias::RunScratch | Alias::Cache)) => {
                let disk = m.run.resources.as_ref().and_then(|r| r.disk_mb);
                let sized = enforce && !options.session;
                own_dir(&mut setup, dir, lease, alias, disk.filter(|_| sized))?
            }
            None => Path::new(&mount.source)
                .canonicalize()
                .map_err(|e| format!("mount source {}: {e}", mount.source))?,
        };
        // A host path is only ever read; the repository is writable only when observing.
        let writable = match alias {
            Some(Alias::Repo) => !enforce,
            Some(Alias::Workspace | Alias::RunScratch | Alias::Cache) => rw || !enforce,
            None => false,
        };
        receipt.grants.mounts.push(MountGrant {
            source: mount.source.clone(),
            resolved: host.display().to_string(),
            target: mount.target.clone(),
            mode: if mount.mode == Mode::ReadWrite {
                "read_write"
            } else {
                "read_only"
            }
            .to_owned(),
        });
        setup.mounts.push(Bind {
            host,
            target: PathBuf::from(&mount.target),
            writable,
            source: alias.map_or(Source::Host, Source::Alias),
            layer: layer.filter(|_| writable),
        });
    }
    git_inside(&mut setup, dir, &commit)?;
    lockfile_warnings(m, &setup, receipt);
    Ok(setup)
}

/// Whether `alias` is mounted once only.
fn once(m: &crate::schema::Manifest, alias: Option<Alias>) -> bool {
    m.filesystem
        .mounts
        .iter()
        .filter(|other| other.alias() == alias)
        .count()
        == 1
}

/// Whether the mount at `target` is writable as a whole or not at all (no writable path
/// narrower than it), and neither holds nor is held by another mount.
fn alone(m: &crate::schema::Manifest, target: &str) -> bool {
    let target = Path::new(target);
    let nested =
        |other: &Path| other != target && (other.starts_with(target) || target.starts_with(other));
    !m.filesystem
        .writable_paths
        .iter()
        .any(|w| Path::new(w).starts_with(target) && Path::new(w) != target)
        && !m
            .filesystem
            .mounts
            .iter()
            .any(|other| nested(Path::new(&other.target)))
}

/// `alias` (`repo` or `workspace`) as the commit's shared checkout: its tree, and, when the
/// alias is writable, the run's layer directory of its overlay.
fn shared(
    setup: &mut Setup,
    options: &Options,
    dir: &RunDir,
    lease: &Mutex<lease::Lease>,
    alias: Alias,
    commit: &str,
    rw: bool,
) -> Result<(PathBuf, Option<PathBuf>), String> {
    let path = dir.alias(alias);
    if setup.resolved(alias).is_some() {
        return Err(format!("{}: shared twice", alias.as_str()));
    }
    if setup.checkout.is_none() {
        let repo = setup.repo.as_ref().ok_or("no repository")?;
        let dir = super::checkout::checkouts_dir(&options.runs_dir);
        setup.checkout = Some(super::checkout::checkout(repo, &dir, commit)?);
    }
    let tree = setup
        .checkout
        .as_ref()
        .map(|c| c.tree.clone())
        .unwrap_or_default();
    std::fs::create_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    setup.resolved.push(Resolved {
        alias,
        path: path.clone(),
        git_dir: None,
        shared: Some(tree.clone()),
    });
    record(lease, dir, &setup.resolved);
    if rw {
        super::layered::make_layer(&path)?;
    }
    Ok((tree, rw.then_some(path)))
}

/// The worktree of `alias` (`repo` or `workspace`) at `commit`, made once.
pub(super) fn checkout(
    setup: &mut Setup,
    dir: &RunDir,
    lease: &Mutex<lease::Lease>,
    alias: Alias,
    commit: &str,
) -> Result<PathBuf, String> {
    if let Some(r) = setup.resolved(alias) {
        return Ok(r.path.clone());
    }
    let path = dir.alias(alias);
    let repo = setup.repo.as_ref().ok_or("no repository")?;
    let git_dir = repo.add_worktree(&path, commit)?;
    setup.resolved.push(Resolved {
        alias,
        path: path.clone(),
        git_dir: Some(git_dir.clone()),
        shared: None,
    });
    record(lease, dir, &setup.resolved);
    // Inside, the repository's git directory is at GIT_INSIDE (read-only).
    let name = git_dir.file_name().unwrap_or_default().to_string_lossy();
    std::fs::write(
        path.join(".git"),
        format!("gitdir: {GIT_INSIDE}/worktrees/{name}\n"),
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    let leaving = layout::links_leaving(&path);
    if !leaving.is_empty() {
        return Err(format!(
            "the checkout has links that lead out of it, refused: {}",
            leaving.join("; ")
        ));
    }
    Ok(path)
}

/// The run's own directory for `alias` (`run-scratch` or `cache`), made once; the scratch is
/// a tmpfs of `disk_mb` for the sandbox's life.
pub(super) fn own_dir(
    setup: &mut Setup,
    dir: &RunDir,
    lease: &Mutex<lease::Lease>,
    alias: Alias,
    disk_mb: Option<u64>,
) -> Result<PathBuf, String> {
    let path = dir.alias(alias);
    if setup.resolved(alias).is_some() {
        return Ok(path);
    }
    std::fs::create_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    setup.resolved.push(Resolved {
        alias,
        path: path.clone(),
        git_dir: None,
        shared: None,
    });
    record(lease, dir, &setup.resolved);
    if alias == Alias::RunScratch
        && let Some(mb) = disk_mb
    {
        setup.sized.push((path.clone(), mb));
    }
    Ok(path)
}

/// git inside reads the repository's objects and refs, with a configuration of its own.
pub(super) fn git_inside(setup: &mut Setup, dir: &RunDir, commit: &str) -> Result<(), String> {
    let Some(repo) = &setup.repo else {
        return Ok(());
    };
    if !setup
        .resolved
        .iter()
        .any(|r| r.git_dir.is_some() || r.shared.is_some())
    {
        return Ok(());
    }
    let config = dir.root.join("git-config");
    std::fs::write(&config, repo.sanitised_config())
        .map_err(|e| format!("{}: {e}", config.display()))?;
    let common = repo.common.clone();
    let git = |host: PathBuf, target: String| Bind {
        host,
        target: PathBuf::from(target),
        writable: false,
        source: Source::Git,
        layer: None,
    };
    setup.mounts.push(git(common, GIT_INSIDE.to_owned()));
    setup
        .mounts
        .push(git(config, format!("{GIT_INSIDE}/config")));
    // The shared checkout's git directory: the run's own, detached at the commit, its index a
    // copy of the checkout's (so that git sees the files as they were made).
    if let Some(checkout) = &setup.checkout {
        let own = dir.root.join("gitdir");
        let made = std::fs::create_dir(&own)
            .and_then(|()| std::fs::write(own.join("HEAD"), format!("{commit}\n")))
            .and_then(|()| std::fs::write(own.join("commondir"), "../git\n"))
            .and_then(|()| std::fs::copy(&checkout.index, own.join("index")).map(drop));
        made.map_err(|e| format!("{}: {e}", own.display()))?;
        setup
            .mounts
            .push(git(own, super::layered::WORKTREE_INSIDE.to_owned()));
    }
    Ok(())
}

/// What an install would download, against what the allowlist reaches.
pub(super) fn lockfile_warnings(m: &crate::schema::Manifest, setup: &Setup, receipt: &mut Receipt) {
    let Some(root) = setup
        .resolved
        .iter()
        .find(|r| matches!(r.alias, Alias::Workspace | Alias::Repo))
    else {
        return;
    };
    let allowed = super::network::allow_entries(m);
    let files = root.shared.as_ref().unwrap_or(&root.path);
    for (file, hosts) in lockfiles::download_hosts(files) {
        let unreachable: Vec<&str> = hosts
            .iter()
            .filter(|h| {
                warden_netproxy::Host::parse(h)
                    .is_ok_and(|host| !allowed.iter().any(|e| e.matches_host(&host)))
            })
            .map(String::as_str)
            .collect();
        if !unreachable.is_empty() {
            receipt.warnings.push(format!(
                "{file} downloads from {}, which network.allow does not reach",
                unreachable.join(", ")
            ));
        }
    }
}

fn record(lease: &Mutex<lease::Lease>, dir: &RunDir, resolved: &[Resolved]) {
    let mut l = lock(lease);
    l.resolved = resolved.to_vec();
    let _ = l.write(&dir.root);
}

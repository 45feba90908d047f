//! The run's sandbox, from the manifest alone: mounts, forbidden paths, limits, the environment
//! of the names allowed; its network is `network.rs`'s.

use super::network::{capabilities, egress, network_grant};
use super::*;

impl Prepared {
    /// Builds the sandbox and the proxy from the manifest.
    pub(super) fn build(&mut self, options: &Options) -> Result<(), String> {
        let m = self.parsed.manifest.clone();
        let Some(setup) = &self.setup else {
            return Ok(());
        };
        let enforce = !options.report_only;
        let resources = m.run.resources.clone().unwrap_or_default();
        let budgets = m.run.budgets.clone().unwrap_or_default();
        if enforce && budgets.tool_calls == Some(0) {
            self.receipt.denied.budget_denials += 1;
            self.receipt.status = Status::BudgetExceeded;
            return Err("run.budgets.tool_calls is 0: no command may run".to_owned());
        }
        let forbidden: Vec<PathBuf> = m
            .filesystem
            .forbidden_paths
            .iter()
            .map(PathBuf::from)
            .collect();
        let cwd = [Alias::Workspace, Alias::Repo, Alias::RunScratch]
            .into_iter()
            .find_map(|alias| setup.bind(alias))
            .map_or_else(|| PathBuf::from("/tmp"), |b| b.target.clone());
        let mounts = sandbox_mounts(&m, setup, enforce)?;
        let overlays = overlays(setup, &mounts);
        let mut env = environment(&m, setup, options, &mut self.receipt);
        self.capabilities = capabilities(&m, options, &mut self.receipt);
        let needs_proxy =
            !m.network.allow.is_empty() || self.capabilities.is_some() || options.report_only;
        if needs_proxy {
            let egress = egress(
                &m,
                options,
                self.capabilities.as_ref(),
                &self.observed,
                &self.dir,
                enforce.then_some(budgets.network_requests).flatten(),
            )?;
            self.egress = Some(Arc::new(egress));
        }
        self.receipt.grants.network =
            network_grant(&m, self.capabilities.as_deref(), self.egress.is_some());
        let timeout_s = m
            .run
            .max_duration_seconds
            .map(|s| if enforce { s } else { s.saturating_mul(2) });
        let mut request = Request {
            workspace: PathBuf::new(),
            cwd: Some(cwd),
            mounts,
            deny_read: forbidden.clone(),
            home: options.home.clone(),
            home_allow: options
                .home_allow
                .iter()
                .filter(|p| !forbidden.iter().any(|f| p.starts_with(f)))
                .cloned()
                .collect(),
            network: false,
            proxy_port: self.egress.as_ref().map(|_| warden_sandbox::PROXY_PORT),
            limits: Limits {
                timeout_ms: timeout_s.map(|s| s.saturating_mul(1000)),
                memory_mb: resources.memory_mb.filter(|_| enforce),
                pids: resources.pids.filter(|_| enforce),
                cpus: resources.cpu.filter(|_| enforce),
                disk_mb: resources.disk_mb.filter(|_| enforce),
                cpu_seconds: None,
                output_bytes: options.capture.then_some(1024 * 1024),
                fallback: options.fallback,
            },
            sized: setup.sized.clone(),
            mask: options.mask.clone(),
            root_identity: options.root_identity,
            owned_mounts: setup
                .mounts
                .iter()
                .filter(|b| b.source.owned())
                .map(|b| b.target.clone())
                .collect(),
            overlays,
            ..Request::default()
        };
        if self.egress.is_some() {
            env.extend(warden_sandbox::proxy_env(warden_sandbox::PROXY_PORT));
        }
        request.env = env;
        if let Some(e) = &self.egress {
            e.trust_at(&mut request, Path::new(CA_INSIDE));
        }
        let collected_dir = self.dir.collected();
        std::fs::create_dir(&collected_dir)
            .map_err(|e| format!("{}: {e}", collected_dir.display()))?;
        self.in_sized = collect::scratch_sources(&m, &setup.mounts, &setup.sized, &collected_dir);
        self.receipt.grants.environment = request.env.iter().map(|(k, _)| k.clone()).collect();
        // Checked now, so that a manifest the sandbox cannot keep runs nothing.
        Plan::new(&Request {
            program: "true".to_owned(),
            ..request.clone()
        })?;
        self.base = Some(request);
        Ok(())
    }
}

/// Each writable view of the shared checkout among `mounts`, as an overlay whose upper layer is
/// the run's.
fn overlays(setup: &Setup, mounts: &[(PathBuf, PathBuf, bool)]) -> Vec<warden_sandbox::Overlay> {
    setup
        .mounts
        .iter()
        .filter_map(|b| {
            let layer = b.layer.as_ref()?;
            mounts
                .iter()
                .any(|(_, t, rw)| *rw && *t == b.target)
                .then(|| warden_sandbox::Overlay {
                    target: b.target.clone(),
                    upper: layer.join("upper"),
                    work: layer.join("work"),
                })
        })
        .collect()
}

/// The sandbox's mounts: each at its target; with writable paths declared, a writable mount
/// writable only there.
fn sandbox_mounts(
    m: &crate::schema::Manifest,
    setup: &Setup,
    enforce: bool,
) -> Result<Vec<(PathBuf, PathBuf, bool)>, String> {
    let mut mounts = Vec::new();
    for Bind {
        host,
        target,
        writable,
        ..
    } in &setup.mounts
    {
        let narrowed = enforce
            && *writable
            && !m.filesystem.writable_paths.is_empty()
            && !m
                .filesystem
                .writable_paths
                .iter()
                .any(|w| Path::new(w) == target);
        mounts.push((host.clone(), target.clone(), *writable && !narrowed));
        if narrowed {
            for w in &m.filesystem.writable_paths {
                let Ok(rel) = Path::new(w).strip_prefix(target) else {
                    continue;
                };
                let source = host.join(rel);
                if !setup.sized.iter().any(|(d, _)| source.starts_with(d)) {
                    std::fs::create_dir_all(&source)
                        .map_err(|e| format!("{}: {e}", source.display()))?;
                }
                mounts.push((source, PathBuf::from(w), true));
            }
        }
    }
    Ok(mounts)
}

/// The environment: the basics, the caches, and the variables the manifest names.
fn environment(
    m: &crate::schema::Manifest,
    setup: &Setup,
    options: &Options,
    receipt: &mut Receipt,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vec![
        (
            "PATH".into(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
        ),
        ("HOME".into(), "/tmp".into()),
        ("TMPDIR".into(), "/tmp".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("USER".into(), "warden".into()),
        ("WARDEN_RUN_ID".into(), options.run_id.clone()),
    ];
    if let Some(Bind { target, .. }) = setup.bind(Alias::Cache) {
        let at = |sub: &str| target.join(sub).display().to_string();
        for (name, sub) in [
            ("npm_config_cache", "npm"),
            ("YARN_CACHE_FOLDER", "yarn"),
            ("PIP_CACHE_DIR", "pip"),
            ("CARGO_HOME", "cargo"),
            ("GOMODCACHE", "go/mod"),
            ("GOCACHE", "go/build"),
        ] {
            env.push((name.to_owned(), at(sub)));
        }
        env.push(("XDG_CACHE_HOME".to_owned(), target.display().to_string()));
    }
    for name in &m.identity.variables {
        match options.environment.iter().find(|(k, _)| k == name) {
            Some((k, v)) => env.push((k.clone(), v.clone())),
            None => receipt.warnings.push(format!(
                "identity.variables: {name} is not set, so not passed"
            )),
        }
    }
    env
}

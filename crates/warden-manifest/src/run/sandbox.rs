//! The run's sandbox and proxy, from the manifest alone: mounts, forbidden paths, limits, the
//! environment of the names allowed, the egress proxy with the allowlist, the budget and the
//! capabilities.

use super::*;

impl Prepared {
    /// Builds the sandbox and the proxy from the manifest.
    pub(super) fn build(&mut self, options: &Options) -> Result<(), String> {
        let m = self.parsed.manifest.clone();
        let Ok(setup) = &self.setup else {
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
        let cwd = ["workspace", "repo", "run-scratch"]
            .iter()
            .find_map(|alias| setup.mounts.iter().find(|mt| mt.3 == *alias))
            .map_or_else(|| PathBuf::from("/tmp"), |mt| mt.1.clone());
        let mounts = sandbox_mounts(&m, setup, enforce)?;
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
            // The checkouts, scratch space and git directory are the user's; host paths are not.
            owned_mounts: setup
                .mounts
                .iter()
                .filter(|mt| {
                    ["repo", "workspace", "run-scratch", "cache", "git"].contains(&mt.3.as_str())
                })
                .map(|mt| mt.1.clone())
                .collect(),
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

/// The network as the receipt states it.
fn network_grant(
    m: &crate::schema::Manifest,
    capabilities: Option<&Capabilities>,
    proxy: bool,
) -> NetworkGrant {
    NetworkGrant {
        mode: if proxy { "proxy" } else { "none" }.to_owned(),
        allow: allow_entries(m)
            .iter()
            .map(|e| e.text.clone())
            .chain(
                capabilities
                    .iter()
                    .flat_map(|c| c.entries())
                    .map(|e| format!("{} (capability)", e.text)),
            )
            .collect(),
        block_private_ranges: m.network.block_private_ranges,
    }
}

/// The sandbox's mounts: each at its target; with writable paths declared, a writable mount
/// writable only there.
fn sandbox_mounts(
    m: &crate::schema::Manifest,
    setup: &Setup,
    enforce: bool,
) -> Result<Vec<(PathBuf, PathBuf, bool)>, String> {
    let mut mounts = Vec::new();
    for (host, target, writable, _) in &setup.mounts {
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
    if let Some((_, target, _, _)) = setup.mounts.iter().find(|mt| mt.3 == "cache") {
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

/// The run's capabilities, live from now, their grants in the receipt.
fn capabilities(
    m: &crate::schema::Manifest,
    options: &Options,
    receipt: &mut Receipt,
) -> Option<Arc<Capabilities>> {
    if m.identity.capabilities.is_empty() {
        return None;
    }
    let start = SystemTime::now();
    let short = &options.run_id[4..options.run_id.len().min(16)];
    let live: Vec<Live> = m
        .identity
        .capabilities
        .iter()
        .enumerate()
        .map(|(i, cap)| Live::new(format!("cap_{short}_{i}"), cap, start, &*options.credential))
        .collect();
    for (l, cap) in live.iter().zip(&m.identity.capabilities) {
        receipt.grants.capabilities.push(CapabilityGrant {
            id: l.id.clone(),
            kind: "source_control".to_owned(),
            repository: l.repository.clone(),
            hosts: l.entries().iter().map(|e| e.text.clone()).collect(),
            actions: cap.actions.clone(),
            require_approval_for: cap.require_approval_for.clone(),
            expires_at: humantime::format_rfc3339_seconds(l.expires).to_string(),
            credential: l.has_credential(),
        });
    }
    Some(Arc::new(Capabilities::new(
        live,
        allow_entries(m),
        options.approver.clone(),
    )))
}

/// The run's egress proxy: the allowlist, the capabilities' hosts behind their gate, the
/// budget; every record kept for the report and sent to the trace.
fn egress(
    m: &crate::schema::Manifest,
    options: &Options,
    capabilities: Option<&Arc<Capabilities>>,
    observed: &Arc<Mutex<Vec<Record>>>,
    dir: &RunDir,
    budget: Option<u64>,
) -> Result<warden_tools::egress::Egress, String> {
    let mut policy =
        NetPolicy::new(&[], &[], m.network.block_private_ranges).map_err(|e| e.to_string())?;
    for entry in allow_entries(m) {
        policy.allow(entry);
    }
    if let Some(caps) = capabilities {
        for entry in caps.entries() {
            policy.allow(entry);
        }
    }
    let seen = Arc::clone(observed);
    let forward = options.sink.clone();
    let sink: Sink = Arc::new(move |record: Record| {
        lock(&seen).push(record.clone());
        forward(record);
    });
    let resolver = warden_tools::egress::resolver()?;
    let mut config = warden_netproxy::Config::new(policy, resolver, sink);
    config.budget = budget;
    if options.report_only {
        // Observing: every public host is let through and recorded.
        config.ask = Some(Arc::new(|_: &str, _: u16| warden_netproxy::Answer::Once));
    }
    if let Some(caps) = capabilities {
        let decider = Arc::clone(caps);
        config.gate = Some(warden_netproxy::Gate {
            hosts: caps.entries(),
            decide: Arc::new(move |request| decider.decide(request)),
        });
    }
    warden_tools::egress::launch(config, Some(&dir.root))
}

//! The run's network: the manifest's allowlist as proxy entries, the capabilities' credentials
//! behind their gate, the egress proxy with the budget, and the network as the receipt states
//! it.

use super::*;

/// The manifest's allowlist as proxy entries: one per host and path.
pub(crate) fn allow_entries(m: &crate::schema::Manifest) -> Vec<Entry> {
    let mut out = Vec::new();
    for allow in &m.network.allow {
        let Ok(base) = Entry::parse(&allow.host) else {
            continue;
        };
        let ports = allow.ports.clone().or_else(|| match allow.protocol {
            Some(Protocol::Https) => Some(vec![443]),
            Some(Protocol::Http) => Some(vec![80]),
            _ => None,
        });
        let methods = allow.methods.as_ref().map(|ms| {
            ms.iter()
                .map(|m| m.to_ascii_uppercase())
                .collect::<Vec<_>>()
        });
        let paths: Vec<Option<String>> = match &allow.paths {
            Some(paths) if !paths.is_empty() => paths.iter().cloned().map(Some).collect(),
            _ => vec![None],
        };
        for path in paths {
            let mut entry = base.clone();
            entry.ports.clone_from(&ports);
            entry.methods.clone_from(&methods);
            entry.path.clone_from(&path);
            entry.text = format!(
                "{}{}{}{}",
                methods
                    .as_ref()
                    .map(|m| format!("{} ", m.join(",")))
                    .unwrap_or_default(),
                allow.host,
                ports
                    .as_ref()
                    .map(|p| format!(
                        ":{}",
                        p.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
                    ))
                    .unwrap_or_default(),
                path.unwrap_or_default()
            );
            out.push(entry);
        }
    }
    out
}

/// The network as the receipt states it.
pub(super) fn network_grant(
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

/// The run's capabilities, live from now, their grants in the receipt.
pub(super) fn capabilities(
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
pub(super) fn egress(
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
    Ok(warden_tools::egress::launch(config, Some(&dir.root))?)
}

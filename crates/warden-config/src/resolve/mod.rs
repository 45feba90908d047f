//! From merged [`RawSettings`] to complete [`Settings`]: defaults filled in, every raw field
//! destructured (so a new field does not compile until it is handled here), then validated.

mod hooks;
mod mcp;
#[cfg(test)]
mod tests;
mod validate;

pub(crate) use validate::Origin;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::ConfigError;
use crate::merge::{Merge, dedup};
use crate::raw::{
    RawBudgets, RawContext, RawContextShares, RawGlobTool, RawGrepTool, RawManifest, RawModel,
    RawOrg, RawOrgManifest, RawPermissions, RawPrice, RawProvider, RawReadTool, RawSandbox,
    RawSandboxEnv, RawSandboxFilesystem, RawSandboxLimits, RawSandboxNetwork, RawSettings,
    RawSkills, RawTools,
};
use crate::settings::{
    Budgets, Context, ContextShares, GlobTool, GrepTool, ManifestRuns, Model, Org, OrgManifest,
    Permissions, Price, Provider, ReadTool, RiskName, Sandbox, SandboxEnv, SandboxFilesystem,
    SandboxLimits, SandboxNetwork, Settings, SettingsSource, Skills, Tools, WardenDirs, WriteTool,
};
use crate::trust::verdict::ProjectTrust;

pub(crate) use validate::Blame;

/// Where the settings apply, carried into [`Settings`] unchanged.
pub(crate) struct Place {
    pub(crate) project_root: PathBuf,
    pub(crate) cwd: PathBuf,
    pub(crate) sources: Vec<SettingsSource>,
}

/// What a load adds beside the merged layers: the project's trust, and what of an untrusted
/// project's files only tightens.
#[derive(Default)]
pub(crate) struct Extras {
    pub(crate) trust: Option<ProjectTrust>,
    pub(crate) asks: Vec<String>,
    pub(crate) risk_floors: BTreeMap<String, RiskName>,
    pub(crate) dirs: WardenDirs,
}

/// Merge `layers` (highest priority first), fill in defaults and validate.
pub(crate) fn resolve(
    layers: &[(Origin, RawSettings)],
    place: Place,
    extras: Extras,
) -> Result<Settings, ConfigError> {
    let mut merged = RawSettings::default();
    for (origin, raw) in layers {
        let mut raw = raw.clone();
        // Each hook keeps the file it came from: `warden hooks list` shows it, and managed
        // settings may keep only their own.
        if let (Some(hooks), Origin::File(path)) = (raw.hooks.as_mut(), origin) {
            for (_, list) in hooks.events_mut() {
                for hook in list.iter_mut().flatten() {
                    hook.source = Some(path.clone());
                }
            }
        }
        merged.merge(raw);
    }
    let blame = Blame::new(layers);
    let mut settings = build(merged, place, extras, &blame)?;
    if settings.org.managed_hooks_only {
        let managed: Vec<&std::path::PathBuf> = settings
            .sources
            .iter()
            .filter(|s| s.layer == crate::settings::Layer::Managed)
            .map(|s| &s.path)
            .collect();
        let kept = settings
            .hooks
            .hooks
            .iter()
            .filter(|h| h.source.as_ref().is_some_and(|p| managed.contains(&p)))
            .cloned()
            .collect();
        settings.hooks.hooks = kept;
    }
    validate::validate(&settings, &blame)?;
    Ok(settings)
}

fn build(
    raw: RawSettings,
    place: Place,
    extras: Extras,
    blame: &Blame<'_>,
) -> Result<Settings, ConfigError> {
    let RawSettings {
        trusted_projects,
        permissions,
        sandbox,
        tools,
        model,
        budgets,
        context,
        skills,
        manifest,
        mcp,
        hooks,
        org,
    } = raw;
    let Place {
        project_root,
        cwd,
        sources,
    } = place;
    let Extras {
        trust,
        asks,
        risk_floors,
        dirs,
    } = extras;
    let project_root_for_mcp = project_root.clone();
    let mut permissions = build_permissions(permissions.unwrap_or_default());
    permissions.project_ask = dedup(asks);
    permissions.project_risk = risk_floors;
    Ok(Settings {
        project_root,
        cwd,
        sources,
        trust: trust.unwrap_or_else(ProjectTrust::none),
        dirs,
        trusted_projects: list(trusted_projects),
        permissions,
        sandbox: build_sandbox(sandbox.unwrap_or_default()),
        tools: build_tools(tools.unwrap_or_default()),
        model: build_model(model.unwrap_or_default(), blame)?,
        budgets: build_budgets(&budgets.unwrap_or_default()),
        context: build_context(context.unwrap_or_default()),
        skills: build_skills(skills.unwrap_or_default()),
        manifest: build_manifest(manifest.unwrap_or_default()),
        mcp: mcp::build(mcp.unwrap_or_default(), &project_root_for_mcp, blame)?,
        hooks: hooks::build(hooks, blame)?,
        org: build_org(org.unwrap_or_default()),
    })
}

/// A list no layer set is empty.
fn list<T: PartialEq>(items: Option<Vec<T>>) -> Vec<T> {
    dedup(items.unwrap_or_default())
}

/// A list no layer set keeps its default; any layer setting it replaces the default.
fn list_or(items: Option<Vec<String>>, default: Vec<String>) -> Vec<String> {
    items.map_or(default, dedup)
}

fn build_permissions(raw: RawPermissions) -> Permissions {
    let RawPermissions {
        mode,
        allow,
        ask,
        deny,
        protected_paths,
        risk,
        unmask,
    } = raw;
    Permissions {
        mode: mode.unwrap_or_default(),
        allow: list(allow),
        ask: list(ask),
        deny: list(deny),
        protected_paths: list(protected_paths),
        risk: risk.unwrap_or_default(),
        project_ask: Vec::new(),
        project_risk: BTreeMap::new(),
        unmask: list(unmask),
    }
}

fn build_sandbox(raw: RawSandbox) -> Sandbox {
    let RawSandbox {
        enabled,
        fail_if_unavailable,
        require_landlock,
        backend,
        root_identity,
        unprivileged_id,
        profile,
        filesystem,
        network,
        limits,
        env,
    } = raw;
    let d = Sandbox::default();
    let RawSandboxFilesystem {
        allow_read,
        deny_read,
        allow_write,
        deny_write,
        home_toolchains,
    } = filesystem.unwrap_or_default();
    let RawSandboxNetwork {
        mode,
        allowed_domains,
        denied_domains,
        block_private_ranges,
    } = network.unwrap_or_default();
    let RawSandboxLimits {
        timeout_seconds,
        memory_mb,
        pids,
        cpu,
        disk_mb,
        output_bytes,
        fallback,
    } = limits.unwrap_or_default();
    let RawSandboxEnv { allow, set } = env.unwrap_or_default();
    Sandbox {
        enabled: enabled.unwrap_or(d.enabled),
        fail_if_unavailable: fail_if_unavailable.unwrap_or(d.fail_if_unavailable),
        require_landlock: require_landlock.unwrap_or(d.require_landlock),
        backend: backend.unwrap_or(d.backend),
        root_identity: root_identity.unwrap_or(d.root_identity),
        unprivileged_id: unprivileged_id.unwrap_or(d.unprivileged_id),
        profile: profile.unwrap_or(d.profile),
        filesystem: SandboxFilesystem {
            allow_read: list(allow_read),
            deny_read: list(deny_read),
            allow_write: list(allow_write),
            deny_write: list(deny_write),
            home_toolchains: list(home_toolchains),
        },
        network: SandboxNetwork {
            mode: mode.unwrap_or(d.network.mode),
            allowed_domains: list(allowed_domains),
            denied_domains: list(denied_domains),
            block_private_ranges: block_private_ranges.unwrap_or(d.network.block_private_ranges),
        },
        limits: SandboxLimits {
            timeout_seconds: timeout_seconds.unwrap_or(d.limits.timeout_seconds),
            memory_mb: memory_mb.unwrap_or(d.limits.memory_mb),
            pids: pids.unwrap_or(d.limits.pids),
            cpu: cpu.unwrap_or(d.limits.cpu),
            disk_mb: disk_mb.unwrap_or(d.limits.disk_mb),
            output_bytes: output_bytes.unwrap_or(d.limits.output_bytes),
            fallback: fallback.unwrap_or(d.limits.fallback),
        },
        env: SandboxEnv {
            allow: list_or(allow, d.env.allow),
            set: set.unwrap_or_default(),
        },
    }
}

fn build_tools(raw: RawTools) -> Tools {
    let RawTools {
        read,
        glob,
        grep,
        write,
    } = raw;
    let d = Tools::default();
    let RawReadTool {
        deny,
        page_lines,
        max_bytes,
        max_line_chars,
    } = read.unwrap_or_default();
    let RawGlobTool {
        max_results,
        exclude: glob_exclude,
    } = glob.unwrap_or_default();
    let RawGrepTool {
        max_hits,
        max_line_chars: grep_line_chars,
        exclude: grep_exclude,
    } = grep.unwrap_or_default();
    // The default deny list guards secrets: layers add to it, never replace it.
    let mut read_deny = d.read.deny;
    read_deny.merge(deny.unwrap_or_default());
    Tools {
        read: ReadTool {
            deny: read_deny,
            page_lines: page_lines.unwrap_or(d.read.page_lines),
            max_bytes: max_bytes.unwrap_or(d.read.max_bytes),
            max_line_chars: max_line_chars.unwrap_or(d.read.max_line_chars),
        },
        glob: GlobTool {
            max_results: max_results.unwrap_or(d.glob.max_results),
            exclude: list_or(glob_exclude, d.glob.exclude),
        },
        grep: GrepTool {
            max_hits: max_hits.unwrap_or(d.grep.max_hits),
            max_line_chars: grep_line_chars.unwrap_or(d.grep.max_line_chars),
            exclude: list_or(grep_exclude, d.grep.exclude),
        },
        write: WriteTool {
            max_bytes: write
                .unwrap_or_default()
                .max_bytes
                .unwrap_or(d.write.max_bytes),
        },
    }
}

fn build_model(raw: RawModel, blame: &Blame<'_>) -> Result<Model, ConfigError> {
    let RawModel {
        default,
        providers,
        prices,
        context_window,
    } = raw;
    let mut resolved_providers = BTreeMap::new();
    for (name, provider) in providers.unwrap_or_default() {
        let RawProvider {
            kind,
            base_url,
            api_key_env,
            model,
        } = provider;
        let required = |field: &str| {
            blame.error(
                &["model", "providers", &name, field],
                "required for every provider",
            )
        };
        let kind = kind.ok_or_else(|| required("kind"))?;
        let model = model.ok_or_else(|| required("model"))?;
        let base_url = base_url.unwrap_or_else(|| kind.default_base_url().to_owned());
        let provider = Provider {
            kind,
            base_url,
            api_key_env,
            model,
        };
        resolved_providers.insert(name, provider);
    }
    let mut resolved_prices = BTreeMap::new();
    for (id, price) in prices.unwrap_or_default() {
        let RawPrice {
            input_per_mtok,
            output_per_mtok,
        } = price;
        let required =
            |field: &str| blame.error(&["model", "prices", &id, field], "required for every price");
        let price = Price {
            input_per_mtok: input_per_mtok.ok_or_else(|| required("input_per_mtok"))?,
            output_per_mtok: output_per_mtok.ok_or_else(|| required("output_per_mtok"))?,
        };
        resolved_prices.insert(id, price);
    }
    Ok(Model {
        default,
        providers: resolved_providers,
        prices: resolved_prices,
        context_window,
    })
}

fn build_budgets(raw: &RawBudgets) -> Budgets {
    let &RawBudgets {
        max_tokens,
        max_cost_usd,
        max_wall_seconds,
        max_tool_calls,
        max_turns,
    } = raw;
    Budgets {
        max_tokens,
        max_cost_usd,
        max_wall_seconds,
        max_tool_calls,
        max_turns,
    }
}

fn build_context(raw: RawContext) -> Context {
    let RawContext {
        shares,
        tool_output_tokens,
        window_tokens,
        tool_results_share,
        tool_results_count,
    } = raw;
    let d = Context::default();
    let RawContextShares {
        rules,
        goal_state,
        tools_permissions,
        files_references,
        recent_trace,
        summary,
    } = shares.unwrap_or_default();
    Context {
        shares: ContextShares {
            rules: rules.unwrap_or(d.shares.rules),
            goal_state: goal_state.unwrap_or(d.shares.goal_state),
            tools_permissions: tools_permissions.unwrap_or(d.shares.tools_permissions),
            files_references: files_references.unwrap_or(d.shares.files_references),
            recent_trace: recent_trace.unwrap_or(d.shares.recent_trace),
            summary: summary.unwrap_or(d.shares.summary),
        },
        tool_output_tokens: tool_output_tokens.unwrap_or(d.tool_output_tokens),
        window_tokens,
        tool_results_share: tool_results_share.unwrap_or(d.tool_results_share),
        tool_results_count: tool_results_count.unwrap_or(d.tool_results_count),
    }
}

fn build_manifest(raw: RawManifest) -> ManifestRuns {
    let RawManifest {
        credentials_file,
        lease_seconds,
        runs_dir,
    } = raw;
    let d = ManifestRuns::default();
    ManifestRuns {
        credentials_file: credentials_file.filter(|f| !f.trim().is_empty()),
        lease_seconds: lease_seconds.filter(|s| *s > 0).unwrap_or(d.lease_seconds),
        runs_dir: runs_dir.filter(|f| !f.trim().is_empty()),
    }
}

fn build_skills(raw: RawSkills) -> Skills {
    let RawSkills {
        enabled,
        roots,
        trusted_roots,
        index_percent,
        auto_load_score,
    } = raw;
    let d = Skills::default();
    Skills {
        enabled: enabled.unwrap_or(d.enabled),
        roots: list(roots),
        trusted_roots: list(trusted_roots),
        index_percent: index_percent.unwrap_or(d.index_percent).min(100),
        auto_load_score: auto_load_score
            .filter(|s| s.is_finite() && *s >= 0.0)
            .unwrap_or(d.auto_load_score),
    }
}

/// The organisation's limits from a raw `[org]` table (an `--org-policy` file), defaults for
/// what it leaves out.
pub fn resolve_org(raw: RawOrg) -> Org {
    build_org(raw)
}

fn build_org(raw: RawOrg) -> Org {
    let RawOrg {
        disable_bypass_mode,
        require_sandbox,
        allowed_modes,
        manifest,
        managed_hooks_only,
    } = raw;
    let od = Org::default();
    let d = od.manifest;
    let RawOrgManifest {
        require_purpose,
        require_owner,
        require_expiry,
        max_duration_seconds,
        max_memory_mb,
        max_cpu,
        max_pids,
        max_disk_mb,
        writable_bases,
        forbidden_paths,
        allow_wildcard_hosts,
    } = manifest.unwrap_or_default();
    Org {
        disable_bypass_mode: disable_bypass_mode.unwrap_or(od.disable_bypass_mode),
        require_sandbox: require_sandbox.unwrap_or(od.require_sandbox),
        allowed_modes: list(allowed_modes),
        managed_hooks_only: managed_hooks_only.unwrap_or(od.managed_hooks_only),
        manifest: OrgManifest {
            require_purpose: require_purpose.unwrap_or(d.require_purpose),
            require_owner: require_owner.unwrap_or(d.require_owner),
            require_expiry: require_expiry.unwrap_or(d.require_expiry),
            max_duration_seconds: max_duration_seconds.unwrap_or(d.max_duration_seconds),
            max_memory_mb: max_memory_mb.unwrap_or(d.max_memory_mb),
            max_cpu: max_cpu.unwrap_or(d.max_cpu),
            max_pids: max_pids.unwrap_or(d.max_pids),
            max_disk_mb: max_disk_mb.unwrap_or(d.max_disk_mb),
            writable_bases: writable_bases.unwrap_or(d.writable_bases),
            forbidden_paths: forbidden_paths.unwrap_or(d.forbidden_paths),
            allow_wildcard_hosts: allow_wildcard_hosts.unwrap_or(d.allow_wildcard_hosts),
        },
    }
}

//! Checks on resolved values that types alone cannot express, with errors naming the key and
//! the highest-priority layer that set it.

use std::fmt::{self, Display};
use std::path::PathBuf;

use crate::error::ConfigError;
use crate::raw::RawSettings;
use crate::settings::{PermissionMode, Settings};

/// Where a layer came from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    File(PathBuf),
    CommandLine,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::CommandLine => f.write_str("command line"),
        }
    }
}

/// Finds which layer set a key, for error messages.
pub(crate) struct Blame<'a> {
    layers: &'a [(Origin, RawSettings)],
}

impl<'a> Blame<'a> {
    pub(crate) fn new(layers: &'a [(Origin, RawSettings)]) -> Self {
        Blame { layers }
    }

    /// The highest-priority layer that sets `path`. For a missing key, the layer that sets the
    /// nearest enclosing table; `settings` if none does (a default).
    fn origin(&self, path: &[&str]) -> String {
        (1..=path.len())
            .rev()
            .find_map(|len| self.layers.iter().find(|(_, raw)| sets(raw, &path[..len])))
            .map_or_else(|| "settings".to_owned(), |(origin, _)| origin.to_string())
    }

    pub(crate) fn error(&self, path: &[&str], message: impl Into<String>) -> ConfigError {
        ConfigError::Value {
            origin: self.origin(path),
            key: path.join("."),
            message: message.into(),
        }
    }
}

fn sets(raw: &RawSettings, path: &[&str]) -> bool {
    let Ok(mut value) = serde_json::to_value(raw) else {
        return false;
    };
    for key in path {
        match value.get_mut(*key) {
            Some(inner) => value = inner.take(),
            None => return false,
        }
    }
    !value.is_null()
}

/// Check every constraint on `settings`, reporting the first broken one.
pub(super) fn validate(settings: &Settings, blame: &Blame<'_>) -> Result<(), ConfigError> {
    let positive = |path: &[&str], value: u64| {
        if value > 0 {
            Ok(())
        } else {
            Err(blame.error(path, "must be greater than 0"))
        }
    };
    let positive_usize =
        |path: &[&str], value: usize| positive(path, u64::try_from(value).unwrap_or(u64::MAX));
    let positive_f64 = |path: &[&str], value: f64| {
        if value.is_finite() && value > 0.0 {
            Ok(())
        } else {
            Err(blame.error(
                path,
                format!("must be a number greater than 0, not {value}"),
            ))
        }
    };

    let limits = &settings.sandbox.limits;
    positive(
        &["sandbox", "limits", "timeout_seconds"],
        limits.timeout_seconds,
    )?;
    positive(&["sandbox", "limits", "memory_mb"], limits.memory_mb)?;
    positive(&["sandbox", "limits", "pids"], limits.pids)?;
    positive_f64(&["sandbox", "limits", "cpu"], limits.cpu)?;
    positive(&["sandbox", "limits", "disk_mb"], limits.disk_mb)?;
    positive(&["sandbox", "limits", "output_bytes"], limits.output_bytes)?;

    let tools = &settings.tools;
    positive_usize(&["tools", "read", "page_lines"], tools.read.page_lines)?;
    positive_usize(&["tools", "read", "max_bytes"], tools.read.max_bytes)?;
    positive_usize(
        &["tools", "read", "max_line_chars"],
        tools.read.max_line_chars,
    )?;
    positive_usize(&["tools", "glob", "max_results"], tools.glob.max_results)?;
    positive_usize(&["tools", "grep", "max_hits"], tools.grep.max_hits)?;
    positive_usize(
        &["tools", "grep", "max_line_chars"],
        tools.grep.max_line_chars,
    )?;

    let model = &settings.model;
    if let Some(window) = model.context_window {
        positive(&["model", "context_window"], window)?;
    }
    for (name, provider) in &model.providers {
        if provider.base_url.trim().is_empty() {
            return Err(blame.error(&["model", "providers", name, "base_url"], "is empty"));
        }
        if provider.model.trim().is_empty() {
            return Err(blame.error(&["model", "providers", name, "model"], "is empty"));
        }
    }
    for (id, price) in &model.prices {
        for (field, value) in [
            ("input_per_mtok", price.input_per_mtok),
            ("output_per_mtok", price.output_per_mtok),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                let message = format!("must be a number of at least 0, not {value}");
                return Err(blame.error(&["model", "prices", id, field], message));
            }
        }
    }

    let (budgets, context) = (&settings.budgets, &settings.context);
    for (section, field, value) in [
        ("budgets", "max_tokens", budgets.max_tokens),
        ("budgets", "max_wall_seconds", budgets.max_wall_seconds),
        ("budgets", "max_tool_calls", budgets.max_tool_calls),
        ("budgets", "max_turns", budgets.max_turns),
        (
            "context",
            "tool_output_tokens",
            Some(context.tool_output_tokens),
        ),
        ("context", "window_tokens", context.window_tokens),
    ] {
        if let Some(value) = value {
            positive(&[section, field], value)?;
        }
    }
    if let Some(cost) = budgets.max_cost_usd {
        positive_f64(&["budgets", "max_cost_usd"], cost)?;
    }
    check_context(settings, blame)?;

    let manifest = &settings.org.manifest;
    for (field, value) in [
        ("max_duration_seconds", manifest.max_duration_seconds),
        ("max_memory_mb", manifest.max_memory_mb),
    ] {
        positive(&["org", "manifest", field], value)?;
    }
    positive_f64(&["org", "manifest", "max_cpu"], manifest.max_cpu)?;

    check_sandbox(settings, blame)?;
    check_org(settings, blame)
}

/// The percentages of `[context]`: shares that make the whole window, a share of it that
/// calls for compaction.
fn check_context(settings: &Settings, blame: &Blame<'_>) -> Result<(), ConfigError> {
    let context = &settings.context;
    for (field, value) in [
        ("tool_results_share", context.tool_results_share),
        ("tool_results_count", context.tool_results_count),
    ] {
        if value == 0 {
            return Err(blame.error(&["context", field], "must be greater than 0"));
        }
    }
    if settings.context.tool_results_share > 100 {
        let message = format!(
            "{} is a percentage of the window: at most 100",
            settings.context.tool_results_share
        );
        return Err(blame.error(&["context", "tool_results_share"], message));
    }
    let total = settings.context.shares.total();
    if !(99..=101).contains(&total) {
        let message = format!("shares sum to {total}, they must sum to 100 (± 1)");
        return Err(blame.error(&["context", "shares"], message));
    }
    Ok(())
}

/// What the sandbox's values cannot say by their types (its named choices are closed sets,
/// refused by name when the file is read).
fn check_sandbox(settings: &Settings, blame: &Blame<'_>) -> Result<(), ConfigError> {
    let sandbox = &settings.sandbox;
    if sandbox.unprivileged_id == 0 || sandbox.unprivileged_id == u32::MAX {
        return Err(blame.error(
            &["sandbox", "unprivileged_id"],
            format!(
                "{} cannot be the unprivileged id: 0 is root and {} means no id",
                sandbox.unprivileged_id,
                u32::MAX
            ),
        ));
    }
    Ok(())
}

/// The organisation's limits bind every other layer.
fn check_org(settings: &Settings, blame: &Blame<'_>) -> Result<(), ConfigError> {
    let org = &settings.org;
    let mode = settings.permissions.mode;
    if !org.allows(mode) {
        let why = if org.disable_bypass_mode && mode == PermissionMode::Bypass {
            "org.disable_bypass_mode".to_owned()
        } else {
            format!("org.allowed_modes = [{}]", quoted(&org.allowed_modes))
        };
        let message = format!("mode `{mode}` is not allowed by the organisation ({why})");
        return Err(blame.error(&["permissions", "mode"], message));
    }
    if org.require_sandbox {
        let sandbox = &settings.sandbox;
        for (field, on) in [
            ("enabled", sandbox.enabled),
            ("fail_if_unavailable", sandbox.fail_if_unavailable),
        ] {
            if !on {
                let message = "must stay true: the organisation sets org.require_sandbox";
                return Err(blame.error(&["sandbox", field], message));
            }
        }
    }
    Ok(())
}

fn quoted<T: Display>(items: &[T]) -> String {
    items
        .iter()
        .map(|item| format!("\"{item}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

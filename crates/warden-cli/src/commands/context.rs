//! `warden context show`: what the next call of a saved run would contain, per layer, and the
//! report's table (also the interactive session's `/context`).

use std::path::PathBuf;

use serde_json::json;
use warden_config::RawSettings;
use warden_protocol::SessionId;
use warden_tools::Registry;

use super::{load_settings_with, print_json};
use crate::args::ContextShowArgs;
use crate::{CliError, Exit};

/// `warden context show`: what the next call of a saved run would contain, per layer.
pub(super) fn context_show(dir: Option<PathBuf>, args: &ContextShowArgs) -> Result<Exit, CliError> {
    let session: SessionId = args.session.parse().map_err(CliError::usage)?;
    let (header, state) = super::run::load(&session)?;
    let mut raw = RawSettings::default();
    if let Some(window) = args.context_window {
        raw.context
            .get_or_insert_with(Default::default)
            .window_tokens = Some(window);
    }
    let dir = dir.or_else(|| Some(PathBuf::from(&header.cwd)));
    let settings = load_settings_with(dir, raw).map_err(|e| CliError::usage(e.error))?;
    let registry = Registry::builtin().map_err(CliError::failure)?;
    let skills = super::skills::registry(&settings);
    let tools = warden_agent::tool_defs(
        &registry,
        skills.as_ref().is_some_and(|r| !r.skills.is_empty()),
    );
    let network = settings.sandbox.network.mode == warden_config::NetworkMode::On;
    let model = header.model.rsplit('/').next().unwrap_or(&header.model);
    let (_, built) =
        warden_agent::context(&settings, &state, &tools, network, model, skills.as_ref());
    let report = &built.report;
    if args.json {
        let mut value = json!(report);
        if args.items {
            value["items"] = json!(built.fates);
        }
        print_json(&value)?;
        return Ok(Exit::Success);
    }
    crate::print::print_report(report);
    if args.items {
        println!(
            "{:>6} {:<12} {:<11} {:>7} {:>6}",
            "item", "what", "fate", "tokens", "score"
        );
        for fate in &built.fates {
            println!(
                "{:>6} {:<12} {:<11} {:>7} {:>6}",
                fate.index,
                fate.what,
                fate.fate,
                fate.tokens,
                fate.score
                    .map_or_else(|| "-".to_owned(), |s| format!("{s:.2}"))
            );
        }
    }
    Ok(Exit::Success)
}

//! `warden config show|schema|forget`.

use std::path::PathBuf;

use anyhow::anyhow;
use serde_json::json;

use super::{load_for_inspection, print_json};
use crate::args::ConfigCommand;
use crate::{CliError, Exit};

pub(super) fn run(dir: Option<PathBuf>, command: &ConfigCommand) -> Result<Exit, CliError> {
    match command {
        ConfigCommand::Show { json } => {
            let settings = load_for_inspection(dir)?;
            let remembered = remembered(&settings)?;
            if *json {
                let mut value = serde_json::to_value(&settings).map_err(CliError::failure)?;
                value["remembered"] = remembered;
                print_json(&value)?;
            } else {
                println!("project root: {}", settings.project_root.display());
                println!("project trust: {}", settings.trust.basis);
                for source in &settings.sources {
                    println!(
                        "read {:<12} {}",
                        source.layer.as_str(),
                        source.path.display()
                    );
                }
                if let Some(file) = remembered["file"].as_str() {
                    println!("remembered rules ({file}):");
                    let mut any = false;
                    for list in ["allow", "ask", "deny"] {
                        for rule in remembered[list].as_array().into_iter().flatten() {
                            any = true;
                            println!("  {list:<5} {}", rule.as_str().unwrap_or_default());
                        }
                    }
                    if !any {
                        println!("  none");
                    }
                }
                let text = serde_json::to_string_pretty(&settings).map_err(CliError::failure)?;
                println!("{text}");
            }
        }
        ConfigCommand::Schema => {
            let schema = warden_config::json_schema();
            let text = serde_json::to_string_pretty(&schema).map_err(CliError::failure)?;
            println!("{text}");
        }
        ConfigCommand::Forget { rule } => {
            let settings = load_for_inspection(dir)?;
            let data_dir =
                settings.dirs.data_dir.clone().ok_or_else(|| {
                    CliError::failure(anyhow!(warden_config::ConfigError::NoDataDir))
                })?;
            let removed = warden_config::forget_rule(&data_dir, &settings.project_root, rule)
                .map_err(CliError::failure)?;
            let file = warden_config::remembered_path(&data_dir);
            if removed {
                eprintln!("warden: forgot {rule} (from {})", file.display());
                return Ok(Exit::Success);
            }
            eprintln!(
                "warden: {rule} is not remembered for {} (see `warden config show`)",
                settings.project_root.display()
            );
            return Ok(Exit::Failure);
        }
    }
    Ok(Exit::Success)
}

/// The rules remembered for the project, and the file they live in.
fn remembered(settings: &warden_config::Settings) -> Result<serde_json::Value, CliError> {
    let Some(data_dir) = &settings.dirs.data_dir else {
        return Ok(json!({"file": null, "allow": [], "ask": [], "deny": []}));
    };
    let rules =
        warden_config::remembered(data_dir, &settings.project_root).map_err(CliError::usage)?;
    Ok(json!({
        "file": warden_config::remembered_path(data_dir),
        "allow": rules.allow,
        "ask": rules.ask,
        "deny": rules.deny,
    }))
}

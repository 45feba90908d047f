//! `warden config show|schema`.

use std::path::PathBuf;

use super::{load_settings, print_json};
use crate::args::ConfigCommand;
use crate::{CliError, Exit};

pub(super) fn run(dir: Option<PathBuf>, command: &ConfigCommand) -> Result<Exit, CliError> {
    match command {
        ConfigCommand::Show { json } => {
            let settings = load_settings(dir)?;
            if *json {
                print_json(&settings)?;
            } else {
                println!("project root: {}", settings.project_root.display());
                for source in &settings.sources {
                    println!(
                        "read {:<12} {}",
                        source.layer.as_str(),
                        source.path.display()
                    );
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
    }
    Ok(Exit::Success)
}

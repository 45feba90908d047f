//! `warden manifest` — a CLI contract: `validate FILE [--org-policy FILE] [--json]` exits 0
//! when the manifest is valid, 1 when it is not (every problem listed with its document path,
//! line and reason), 2 on usage errors; `init --template NAME`, `approve FILE`, `schema`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::anyhow;
use serde_json::json;
use warden_config::OrgManifest;
use warden_manifest::{Parsed, Problem};
use warden_trace::ApprovalRefused;

use super::{open_trace, print_json};
use crate::args::ManifestCommand;
use crate::{CliError, Exit};

/// `validate`, `init`, `approve` and `schema`; `run`, `reap` and `answer` are in
/// `manifest_run`.
pub(super) fn run(command: ManifestCommand) -> Result<Exit, CliError> {
    match command {
        ManifestCommand::Validate {
            file,
            org_policy,
            json,
        } => validate(&file, org_policy.as_deref(), json),
        ManifestCommand::Init {
            template,
            output,
            force,
        } => init(&template, &output, force),
        ManifestCommand::Approve {
            file,
            ttl,
            by,
            json,
        } => approve(&file, &ttl, by, json),
        ManifestCommand::Run(_) | ManifestCommand::Reap { .. } | ManifestCommand::Answer { .. } => {
            unreachable!("dispatched to manifest_run")
        }
        ManifestCommand::Schema => {
            let schema = serde_json::to_string_pretty(&warden_manifest::json_schema())
                .map_err(CliError::failure)?;
            println!("{schema}");
            Ok(Exit::Success)
        }
    }
}

/// Reads a manifest file: a usage error when it cannot be read, the parse problem otherwise.
pub(super) fn read(file: &Path) -> Result<Result<Parsed, Problem>, CliError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| CliError::usage(anyhow!("{}: {e}", file.display())))?;
    Ok(warden_manifest::parse(&text))
}

/// The organisation's manifest policy: the `[org]` table of `org_policy`, else of the managed
/// file when it has one; `None` when there is no organisation policy.
pub(super) fn org_policy(org_policy: Option<&Path>) -> Result<Option<OrgManifest>, CliError> {
    let (path, required) = match org_policy {
        Some(path) => (path.to_path_buf(), true),
        None => (PathBuf::from(warden_config::MANAGED_PATH), false),
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CliError::usage(anyhow!("{}: {e}", path.display()))),
    };
    let raw = warden_config::parse_str(&text, &path).map_err(CliError::usage)?;
    match raw.org {
        Some(org) => Ok(Some(warden_config::resolve_org(org).manifest)),
        None if required => Err(CliError::usage(anyhow!(
            "{}: no [org] table, so no organisation policy",
            path.display()
        ))),
        None => Ok(None),
    }
}

/// Every problem of a parsed manifest, approvals looked up in the trace.
pub(super) fn problems(parsed: &Parsed, org: Option<&OrgManifest>) -> Vec<Problem> {
    let store = open_trace().ok();
    let now = SystemTime::now();
    let approvals = |reference: &str, digest: &str| -> Result<(), ApprovalRefused> {
        let Some(store) = &store else {
            return Err(ApprovalRefused::Unavailable(
                "the trace, where approvals are kept, cannot be opened".to_owned(),
            ));
        };
        match store.manifest_approval(reference) {
            Ok(Some(approval)) => approval.holds_for(digest, now),
            Ok(None) => Err(ApprovalRefused::Unknown(reference.to_owned())),
            Err(e) => Err(ApprovalRefused::Unavailable(format!(
                "approvals cannot be read: {e}"
            ))),
        }
    };
    warden_manifest::preflight(parsed, org, &approvals, now)
}

fn validate(file: &Path, org_policy_file: Option<&Path>, json: bool) -> Result<Exit, CliError> {
    let org = org_policy(org_policy_file)?;
    let (parsed, problems) = match read(file)? {
        Ok(parsed) => {
            let found = problems(&parsed, org.as_ref());
            (Some(parsed), found)
        }
        Err(problem) => (None, vec![problem]),
    };
    let valid = problems.is_empty();
    if json {
        print_json(&json!({
            "file": file,
            "valid": valid,
            "orgPolicy": org.is_some(),
            "sha256": parsed.as_ref().map(|p| p.sha256.clone()),
            "approvalDigest": parsed.as_ref().map(Parsed::approval_digest),
            "problems": problems,
        }))?;
    } else if valid {
        let under = if org.is_some() {
            " (built-in rules and the organisation's policy)"
        } else {
            " (built-in rules; no organisation policy)"
        };
        println!("{}: valid{under}", file.display());
    } else {
        for p in &problems {
            let at = match (p.line, p.column) {
                (Some(l), Some(c)) => format!(":{l}:{c}"),
                (Some(l), None) => format!(":{l}"),
                _ => String::new(),
            };
            let path = if p.path.is_empty() {
                String::new()
            } else {
                format!(" {}:", p.path)
            };
            println!("{}{at}:{path} {}", file.display(), p.reason);
        }
        eprintln!(
            "warden: {}: {} problem{}",
            file.display(),
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        );
    }
    Ok(if valid { Exit::Success } else { Exit::Failure })
}

fn init(name: &str, output: &Path, force: bool) -> Result<Exit, CliError> {
    let Some(text) = warden_manifest::template(name) else {
        let names: Vec<&str> = warden_manifest::TEMPLATES.iter().map(|(n, _)| *n).collect();
        return Err(CliError::usage(anyhow!(
            "no template {name:?}; the templates are {}",
            names.join(", ")
        )));
    };
    if output == Path::new("-") {
        print!("{text}");
        return Ok(Exit::Success);
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(output).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            CliError::usage(anyhow!("{} exists; --force replaces it", output.display()))
        } else {
            CliError::failure(anyhow!("{}: {e}", output.display()))
        }
    })?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .map_err(|e| CliError::failure(anyhow!("{}: {e}", output.display())))?;
    eprintln!(
        "warden: wrote {} ({name}); check it with `warden manifest validate {}`",
        output.display(),
        output.display()
    );
    Ok(Exit::Success)
}

fn approve(file: &Path, ttl: &str, by: Option<String>, json: bool) -> Result<Exit, CliError> {
    let ttl = humantime::parse_duration(ttl)
        .map_err(|e| CliError::usage(anyhow!("--ttl {ttl:?}: {e}")))?;
    let parsed = match read(file)? {
        Ok(parsed) => parsed,
        Err(problem) => {
            return Err(CliError::failure(anyhow!(
                "{}: cannot approve a manifest that does not parse: {}",
                file.display(),
                problem.reason
            )));
        }
    };
    // Only a manifest that passes the built-in rules may be approved: an approval vouches for
    // what it asks, not for a broken file.
    let built_in: Vec<Problem> = problems(&parsed, None)
        .into_iter()
        .filter(|p| !p.path.ends_with("approval_ref"))
        .collect();
    if let Some(first) = built_in.first() {
        return Err(CliError::failure(anyhow!(
            "{}: {} problem(s), so it cannot be approved; the first: {}: {}",
            file.display(),
            built_in.len(),
            first.path,
            first.reason
        )));
    }
    let by = by
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "unknown".to_owned());
    let store = open_trace()?;
    let approval = store
        .approve_manifest(
            &parsed.approval_digest(),
            &file.display().to_string(),
            &by,
            ttl,
        )
        .map_err(CliError::failure)?;
    if json {
        print_json(&approval)?;
    } else {
        println!("{}", approval.id);
        eprintln!(
            "warden: approved {} for {by} until {}; name it in the capabilities' approval_ref \
             (the approval holds while the rest of the manifest stays as it is)",
            file.display(),
            approval.expires_at
        );
    }
    Ok(Exit::Success)
}

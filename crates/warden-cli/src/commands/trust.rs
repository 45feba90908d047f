//! `warden trust`, `warden untrust`, the question a first `warden run` asks in an untrusted
//! project, and the report of what a project's files could not set — a CLI contract: flags,
//! JSON fields and exit codes (0 trusted, 1 declined or not trusted, 2 usage) are stable.

use std::fmt::Write as _;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde_json::json;
use warden_config::{IgnoredSetting, Settings, TrustBasis, TrustDecision};

use super::{load_quietly, print_json};
use crate::args::{TrustArgs, UntrustArgs};
use crate::{CliError, Exit};

/// What is said on standard error when some of the project's files was set aside.
pub(super) fn report_lines(settings: &Settings) -> Vec<String> {
    let trust = &settings.trust;
    let mut lines = Vec::new();
    if let TrustBasis::Changed { at } = &trust.basis {
        lines.push(format!(
            "warden: this project was trusted at {at}, but its settings files have changed since; \
             what they grant is set aside until you run `warden trust` again"
        ));
    }
    if trust.ignored.is_empty() {
        return lines;
    }
    let root = &settings.project_root;
    lines.push(format!(
        "warden: {} of the project's settings not applied:",
        count(trust.ignored.len(), "value")
    ));
    for ignored in &trust.ignored {
        lines.push(format!("  {}", shown(ignored, root)));
    }
    if !trust.trusted {
        lines.push(
            "warden: the project is not trusted; to honour its settings, review them with \
             `warden trust` (or pass --trust-project for one command)"
                .to_owned(),
        );
    }
    lines
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// One set-aside value, its file shown relative to the project root.
fn shown(ignored: &IgnoredSetting, root: &Path) -> String {
    let mut ignored = ignored.clone();
    if let Ok(relative) = ignored.file.strip_prefix(root) {
        ignored.file = relative.to_path_buf();
    }
    ignored.to_string()
}

/// The plain-words summary of what the project's files would grant beyond the user's own
/// settings, grouped.
pub(super) fn summary(settings: &Settings) -> String {
    let trust = &settings.trust;
    let root = &settings.project_root;
    let mut out = format!("project: {}\nnow: {}\n", root.display(), trust.basis);
    let (widening, never): (Vec<&IgnoredSetting>, Vec<&IgnoredSetting>) = trust
        .widening
        .iter()
        .partition(|i| i.why.starts_with("the project is not trusted"));
    if widening.is_empty() {
        out.push_str("Its settings files grant nothing beyond your own settings.\n");
    } else {
        out.push_str("Trusted, its settings files would grant, beyond your own settings:\n");
        let mut groups: Vec<(&str, Vec<&IgnoredSetting>)> = Vec::new();
        for item in widening {
            let group = group_of(&item.key);
            match groups.iter_mut().find(|(g, _)| *g == group) {
                Some((_, items)) => items.push(item),
                None => groups.push((group, vec![item])),
            }
        }
        for (group, items) in groups {
            let _ = write!(out, "\n  {group}\n");
            for item in items {
                let at = warden_config_location(item, root);
                let loosens = item
                    .why
                    .split_once("it would loosen yours (")
                    .map(|(_, rest)| format!("; yours: {}", rest.trim_end_matches(')')))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "    {} = {}: {}{loosens}  ({at})",
                    item.key, item.value, item.what
                );
            }
        }
    }
    if !never.is_empty() {
        out.push_str("\nNever applied from a project's files, trusted or not:\n");
        for item in never {
            let at = warden_config_location(item, root);
            let _ = writeln!(
                out,
                "    {} = {}: {}  ({at})",
                item.key, item.value, item.why
            );
        }
    }
    out
}

fn warden_config_location(item: &IgnoredSetting, root: &Path) -> String {
    let file = item.file.strip_prefix(root).unwrap_or(&item.file);
    match item.line {
        Some(line) => format!("{}:{line}", file.display()),
        None => file.display().to_string(),
    }
}

fn group_of(key: &str) -> &'static str {
    let mut parts = key.split('.');
    match (parts.next(), parts.next()) {
        (Some("permissions"), _) => "Permissions: what runs without asking",
        (Some("sandbox"), Some("filesystem")) => "Files commands and tools may read or write",
        (Some("sandbox"), Some("network")) => "Network",
        (Some("sandbox"), Some("env")) => "Commands' environment (secrets, preloaded code)",
        (Some("sandbox"), Some("limits")) | (Some("budgets" | "tools"), _) => "Limits and budgets",
        (Some("sandbox"), _) => "The sandbox",
        (Some("model"), _) => "Models: where requests (and your API keys) go",
        (Some("skills"), _) => "Skills",
        (Some("manifest"), _) => "Manifest runs",
        _ => "Other",
    }
}

fn data_dir() -> Result<PathBuf, CliError> {
    warden_config::data_dir().ok_or_else(|| {
        CliError::failure(anyhow!(
            "no data directory to keep the answer in: none of WARDEN_HOME, XDG_DATA_HOME or \
             HOME is set"
        ))
    })
}

fn on_a_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks `question` on the terminal until one of `choices` (their first letters) is typed;
/// end of input is `default`.
fn ask(question: &str, choices: &[&'static str], default: &'static str) -> &'static str {
    let mut err = std::io::stderr().lock();
    loop {
        let _ = write!(err, "{question}");
        let _ = err.flush();
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
            return default;
        }
        let typed = line.trim().to_ascii_lowercase();
        if let Some(choice) = choices
            .iter()
            .find(|c| typed == **c || (typed.len() == 1 && c.starts_with(typed.as_str())))
        {
            return choice;
        }
    }
}

/// `warden trust [DIR] [--yes] [--json]`, `warden trust --list [--json]`.
pub(super) fn trust(dir: Option<PathBuf>, args: &TrustArgs) -> Result<Exit, CliError> {
    if args.list {
        return list(args.json);
    }
    let dir = args.dir.clone().or(dir);
    let settings = load_quietly(dir.clone(), warden_config::RawSettings::default())?;
    let data_dir = data_dir()?;
    let root = settings.project_root.clone();
    if !args.json {
        eprint!("{}", summary(&settings));
    }
    let already = matches!(settings.trust.basis, TrustBasis::Record { .. });
    let yes = if args.yes || already {
        true
    } else if args.json || !on_a_terminal() {
        false
    } else {
        ask("Trust this project? [y]es, [n]o: ", &["yes", "no"], "no") == "yes"
    };
    if !yes {
        if args.json {
            print_json(&outcome(&settings, None, &[]))?;
        } else if !on_a_terminal() && !args.yes {
            eprintln!("warden: not trusted: there is no terminal to ask; pass --yes to trust it");
        } else {
            eprintln!("warden: not trusted");
        }
        return Ok(Exit::Failure);
    }
    // What is recorded must be what was shown: the files may change while the person decides.
    let shown = settings;
    let settings = load_quietly(dir.clone(), warden_config::RawSettings::default())?;
    if settings.trust.digest != shown.trust.digest {
        return Err(changed_meanwhile());
    }
    let (settings, moved) = offer_move(&shown, settings, dir, &data_dir, args.json)?;
    let file = warden_config::record_trust(
        &data_dir,
        &root,
        &settings.trust.digest,
        TrustDecision::Trusted,
    )
    .map_err(CliError::failure)?;
    if args.json {
        print_json(&outcome(&settings, Some(&file), &moved))?;
    } else {
        if !moved.is_empty() {
            eprintln!(
                "warden: moved {} to {}",
                count(moved.len(), "rule"),
                warden_config::remembered_path(&data_dir).display()
            );
        }
        eprintln!(
            "warden: trusted {} (recorded in {}); a change to what its settings files grant ends it",
            root.display(),
            file.display()
        );
    }
    Ok(Exit::Success)
}

/// On a terminal, offers to move the rules of the project's `.warden/settings.local.toml` into
/// the user's own remembered rules, as listed; returns the settings after the move and the
/// rules moved. Anything but the moved rules changed meanwhile refuses the trust.
fn offer_move(
    shown: &Settings,
    settings: Settings,
    dir: Option<PathBuf>,
    data_dir: &Path,
    json: bool,
) -> Result<(Settings, Vec<String>), CliError> {
    let root = &shown.project_root;
    let mut moved = Vec::new();
    let mut settings = settings;
    let rules = warden_config::local_rules(root).map_err(CliError::usage)?;
    if !rules.is_empty() && !json && on_a_terminal() {
        // Only on a terminal, rule by rule as shown: moved, they are the user's own and stay
        // when the trust ends.
        eprintln!("\n.warden/settings.local.toml holds these rules:");
        for (_, rule) in &rules {
            eprintln!("    {}", warden_protocol::printable(rule));
        }
        let question = "Move them into warden's own remembered rules (kept outside the project \
            where no repository can write them, and kept if you untrust it)? [y]es, [n]o: ";
        if ask(question, &["yes", "no"], "no") == "yes" {
            moved = warden_config::move_local_rules(data_dir, root, &rules)
                .map_err(CliError::failure)?;
            settings = load_quietly(dir, warden_config::RawSettings::default())?;
            // Nothing but the moved rules may differ from what was shown.
            let local = root.join(".warden/settings.local.toml");
            let shown_moved: Vec<String> = moved
                .iter()
                .map(|r| warden_protocol::printable(r))
                .collect();
            let key = |i: &warden_config::IgnoredSetting| {
                (i.file.clone(), i.key.clone(), i.value.clone())
            };
            let mut expected: Vec<_> = shown
                .trust
                .widening
                .iter()
                .filter(|i| {
                    !(i.file == local
                        && matches!(i.key.as_str(), "permissions.allow" | "permissions.ask")
                        && shown_moved.contains(&i.value))
                })
                .map(key)
                .collect();
            let mut now: Vec<_> = settings.trust.widening.iter().map(key).collect();
            expected.sort();
            now.sort();
            if now != expected {
                return Err(CliError::failure(anyhow!(
                    "moved the {} you chose into your remembered rules, but the project's \
                     settings files changed meanwhile, so it is not trusted: run `warden trust` \
                     again to see what they grant now",
                    count(moved.len(), "rule")
                )));
            }
        }
    } else if !rules.is_empty() && !json {
        eprintln!(
            "warden: the {} of .warden/settings.local.toml stay there, honoured while the project \
             is trusted; `warden trust` on a terminal offers to move them into your own",
            count(rules.len(), "rule")
        );
    }
    Ok((settings, moved))
}

fn changed_meanwhile() -> CliError {
    CliError::failure(anyhow!(
        "the project's settings files changed while you were deciding; nothing was recorded: \
         run `warden trust` again to see what they grant now"
    ))
}

fn outcome(settings: &Settings, file: Option<&Path>, moved: &[String]) -> serde_json::Value {
    json!({
        "root": settings.project_root,
        "trusted": file.is_some(),
        "recorded": file,
        "digest": settings.trust.digest,
        "basis": settings.trust.basis,
        "widening": settings.trust.widening,
        "migrated": moved,
    })
}

/// `warden trust --list`: every record, and whether the project's files still grant what they
/// granted.
fn list(json: bool) -> Result<Exit, CliError> {
    let data_dir = data_dir()?;
    let records = warden_config::trust_records(&data_dir).map_err(CliError::failure)?;
    let mut rows = Vec::new();
    for record in records {
        let state = if record.root.is_dir() {
            let mut options = warden_config::LoadOptions::new(&record.root);
            options.allow_home_workspace = true;
            match warden_config::load(&options) {
                Ok(s) if s.trust.digest == record.digest => "current".to_owned(),
                Ok(_) => "changed".to_owned(),
                Err(e) => format!("unreadable: {e}"),
            }
        } else {
            "missing".to_owned()
        };
        rows.push((record, state));
    }
    if json {
        let list: Vec<_> = rows
            .iter()
            .map(|(r, state)| {
                json!({"root": r.root, "decision": r.decision, "at": r.at, "digest": r.digest, "state": state})
            })
            .collect();
        print_json(&json!({"file": data_dir.join("trust.toml"), "projects": list}))?;
        return Ok(Exit::Success);
    }
    if rows.is_empty() {
        println!("no project is trusted");
    }
    for (record, state) in rows {
        let decision = match record.decision {
            TrustDecision::Trusted => "trusted",
            TrustDecision::Declined => "declined",
        };
        println!(
            "{decision:<9} {:<8} {}  {}",
            state,
            record.at,
            record.root.display()
        );
    }
    Ok(Exit::Success)
}

/// `warden untrust [DIR]`.
pub(super) fn untrust(dir: Option<PathBuf>, args: &UntrustArgs) -> Result<Exit, CliError> {
    let dir = match args.dir.clone().or(dir) {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(CliError::failure)?,
    };
    let spelled = std::path::absolute(&dir).map_err(CliError::failure)?;
    let dir = dir
        .canonicalize()
        .map_err(|e| CliError::usage(anyhow!("{}: {e}", dir.display())))?;
    let data_dir = data_dir()?;
    // As the directory is now, and as it was spelled: a trusted root since replaced by a link
    // elsewhere is still its own record.
    let root = warden_config::project_root(&dir);
    let mut removed = warden_config::forget_trust(&data_dir, &root).map_err(CliError::failure)?;
    if !removed && spelled != root {
        removed = warden_config::forget_trust(&data_dir, &spelled).map_err(CliError::failure)?;
    }
    if removed {
        eprintln!("warden: {} is no longer trusted", root.display());
        Ok(Exit::Success)
    } else {
        eprintln!("warden: {} was not trusted", root.display());
        Ok(Exit::Failure)
    }
}

/// The trace's record of what the project's files could not set.
pub(super) fn ignored_event(settings: &Settings) -> serde_json::Value {
    json!({
        "projectRoot": settings.project_root,
        "trusted": settings.trust.trusted,
        "basis": settings.trust.basis,
        "ignored": settings.trust.ignored,
        "wayOut": "warden trust",
    })
}

/// The settings of a `warden run` in `dir` with the command line's `cli` layer: when `asking`
/// (a terminal, no manifest), an untrusted project whose files would widen something is asked
/// about first, and loaded again as the answer says — what is trusted being what was shown.
/// Reports what stays set aside.
pub(super) fn settings_for_run(
    dir: Option<PathBuf>,
    cli: &warden_config::RawSettings,
    asking: bool,
) -> Result<Settings, CliError> {
    let mut settings =
        load_quietly(dir.clone(), cli.clone()).map_err(|e| CliError::usage(e.error))?;
    if asking && let Some(answer) = ask_before_run(&settings)? {
        if answer == RunAnswer::ThisRun {
            super::trust_for_this_command();
        }
        if answer != RunAnswer::Declined {
            let shown = settings.trust.digest.clone();
            settings = load_quietly(dir, cli.clone()).map_err(|e| CliError::usage(e.error))?;
            // Trusted for this run is what was shown, not what the files hold by now.
            if settings.trust.digest != shown {
                return Err(CliError::failure(anyhow!(
                    "the project's settings files changed while you were deciding; run again to \
                     see what they grant now"
                )));
            }
        }
    }
    super::report_trust(&settings);
    Ok(settings)
}

/// What a first `warden run` on a terminal answers about an untrusted project whose files
/// would widen something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RunAnswer {
    /// Trusted, recorded.
    Trusted,
    /// Trusted for this run only.
    ThisRun,
    /// Not trusted, recorded: not asked again while the files grant the same.
    Declined,
}

/// Asks, once, whether to trust the project before a run, and records the answer. `None`
/// when there is nothing to ask about.
pub(super) fn ask_before_run(settings: &Settings) -> Result<Option<RunAnswer>, CliError> {
    let trust = &settings.trust;
    // Only what an untrusted load sets aside is worth a question; ask rules and risk levels
    // already apply, as tightening.
    let widening = trust
        .ignored
        .iter()
        .any(|i| i.why.starts_with("the project is not trusted"));
    let asked_before = matches!(trust.basis, TrustBasis::Declined { .. });
    if trust.trusted || !widening || asked_before || !on_a_terminal() {
        return Ok(None);
    }
    eprintln!("\n── this project is not trusted ──────────────────");
    eprint!("{}", summary(settings));
    let answer = ask(
        "Trust this project's settings? [y]es, [n]o, this [r]un only: ",
        &["yes", "no", "run"],
        "no",
    );
    let data_dir = data_dir()?;
    let record = |decision| {
        warden_config::record_trust(&data_dir, &settings.project_root, &trust.digest, decision)
            .map_err(CliError::failure)
    };
    Ok(Some(match answer {
        "yes" => {
            record(TrustDecision::Trusted)?;
            RunAnswer::Trusted
        }
        "run" => RunAnswer::ThisRun,
        _ => {
            record(TrustDecision::Declined)?;
            RunAnswer::Declined
        }
    }))
}

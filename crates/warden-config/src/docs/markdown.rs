//! `docs/settings.md`: the settings reference, walked from the JSON schema, with defaults
//! taken from [`Settings::defaults`] so the documented default is the real one.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;

use super::{deref, json_schema};
use crate::settings::Settings;
use crate::trust::{KeyInfo, KeyTrust};

const INTRO: &str = "\
# Settings reference

<!-- Generated from crates/warden-config by `WARDEN_BLESS=1 cargo test -p warden-config`. \
Do not edit by hand. -->

warden reads its settings from these layers, highest priority first; missing files are skipped:

1. **managed**: `/etc/warden/managed.toml`, set by the organisation. The only layer that may \
contain `[org]`.
2. **command line**: flags given to `warden`.
3. **remembered**: rules remembered from \"always\" answers, kept per project in warden's own \
`remembered.toml` in the user's data directory (`$WARDEN_HOME`, else \
`$XDG_DATA_HOME/warden`, else `~/.local/share/warden`).
4. **local**: `<project root>/.warden/settings.local.toml`.
5. **project**: `<project root>/.warden/settings.toml`.
6. **user**: `$XDG_CONFIG_HOME/warden/settings.toml` (`~/.config/warden/settings.toml`).

The two files in the project (**local** and **project**) come with the repository, so they are \
the repository's, not the user's: until the user trusts the project (`warden trust`, \
`trusted_projects`, or `--trust-project` for one command), each of their keys does only what \
the column *Untrusted project* says. **may set**: honoured. **may only tighten**: honoured \
where it narrows what the other layers give, in the way named. **ignored when untrusted**: \
set aside, and reported on standard error and in the trace with its file and line. **never**: \
not honoured from a project's files even when trusted. What trust means and how it ends: \
`docs/security-model.md`.

The project root is the nearest ancestor of the working directory (itself included) holding a \
`.warden/` directory or a `.git` entry, else the working directory.

Layers merge key by key. A scalar comes from the highest layer that sets it. Lists are \
concatenated across layers, highest first, duplicates removed. Maps and tables merge by key, \
recursively. Unknown keys, values of the wrong type and malformed files are errors naming the \
file, line and key; they are never ignored. Relative paths stay as written and are interpreted \
relative to the project root.

The JSON schema of a settings file is `docs/settings.schema.json`.
";

/// The settings reference, `docs/settings.md`: per table, each key with its type, default,
/// the layers that may set it and its description.
pub fn settings_markdown() -> String {
    let root = json_schema();
    let defaults = serde_json::to_value(Settings::defaults(PathBuf::new())).unwrap_or_default();
    let mut out = INTRO.to_owned();
    let trust = crate::trust::key_trust();
    walk(&root, &root, &[], Some(&defaults), &trust, &mut out);
    out
}

/// What an untrusted project may do with `key`: its own rule, else its nearest table's.
fn untrusted(trust: &[KeyInfo], key: &str) -> &'static str {
    let mut key = key;
    loop {
        if let Some(info) = trust.iter().find(|k| k.key == key) {
            return info.trust.describe();
        }
        match key.rfind('.') {
            Some(at) => key = &key[..at],
            None => return "—",
        }
    }
}

/// The table of `docs/security-model.md`: every key a project may not simply set, and what an
/// untrusted project's value of it does.
pub fn trust_markdown() -> String {
    let mut out = String::from("| Key | What it is | From an untrusted project |\n|---|---|---|\n");
    for info in crate::trust::key_trust() {
        if matches!(info.trust, KeyTrust::MaySet | KeyTrust::Table) {
            continue;
        }
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            info.key,
            info.what,
            info.trust.describe()
        );
    }
    out.push_str(
        "\nEverything else (`[context]`, the glob and grep tools' `exclude`, `skills.index_percent` \
         and `skills.auto_load_score`) a project may set.\n",
    );
    out
}

/// Emit the section for the table `schema` at `path`, then its sub-tables.
fn walk(
    root: &Value,
    schema: &Value,
    path: &[String],
    defaults: Option<&Value>,
    trust: &[KeyInfo],
    out: &mut String,
) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let mut rows = Vec::new();
    let mut tables = Vec::new();
    for (key, property) in properties {
        let target = deref(root, property);
        let entry = target
            .get("additionalProperties")
            .map(|value| deref(root, value));
        let mut child = path.to_vec();
        child.push(key.clone());
        let child_defaults = defaults.and_then(|d| d.get(key));
        if target.get("properties").is_some() {
            tables.push((child, target, child_defaults));
        } else if let Some(entry) = entry.filter(|e| e.get("properties").is_some()) {
            child.push("<name>".to_owned());
            tables.push((child, entry, None));
        } else {
            let dotted = child.join(".");
            let untrusted = untrusted(trust, &dotted);
            rows.push(row(root, key, property, child_defaults, untrusted));
        }
    }
    if path.is_empty() {
        out.push_str("\n## Top level\n");
    } else {
        let _ = write!(out, "\n## `[{}]`\n\n", path.join("."));
        out.push_str(&table_description(schema));
        out.push('\n');
    }
    if !rows.is_empty() {
        out.push_str("\n| Key | Type | Default | Untrusted project | Description |\n");
        out.push_str("|---|---|---|---|---|\n");
        for row in rows {
            out.push_str(&row);
        }
    }
    for (child, table, child_defaults) in tables {
        walk(root, table, &child, child_defaults, trust, out);
    }
}

fn row(
    root: &Value,
    key: &str,
    property: &Value,
    default: Option<&Value>,
    untrusted: &str,
) -> String {
    let description = property
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    // The Default column states it; the doc comment's closing "Default ..." would repeat it.
    let description = match default {
        Some(_) => cell(without_default_sentence(&paragraph(description))),
        None => cell(description),
    };
    let default = default.map_or_else(|| "—".to_owned(), render_default);
    format!(
        "| `{key}` | {} | {default} | {untrusted} | {description} |\n",
        type_name(root, property)
    )
}

/// The table's own doc comment, without the `` `[name]`: `` prefix that repeats the heading.
fn table_description(schema: &Value) -> String {
    let text = schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    let text = text
        .strip_prefix("`[")
        .and_then(|rest| rest.split_once("]`: "))
        .map_or(text, |(_, rest)| rest);
    let mut chars = text.chars();
    let text = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    };
    paragraph(&text)
}

fn without_default_sentence(text: &str) -> &str {
    match text.rfind("Default ") {
        Some(0) => "",
        Some(at) if text[..at].ends_with(". ") => text[..at].trim_end(),
        _ => text,
    }
}

fn type_name(root: &Value, schema: &Value) -> String {
    let schema = deref(root, schema);
    if let Some(variants) = schema.get("oneOf").and_then(Value::as_array) {
        let names: Vec<String> = variants
            .iter()
            .filter_map(|variant| variant.get("const").and_then(Value::as_str))
            .map(|name| format!("`{name}`"))
            .collect();
        return format!("one of {}", names.join(", "));
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names: Vec<String> = values
            .iter()
            .filter_map(Value::as_str)
            .map(|name| format!("`{name}`"))
            .collect();
        return format!("one of {}", names.join(", "));
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|kind| *kind != "null")
            .unwrap_or("any"),
        _ => "any",
    };
    match kind {
        "array" => match schema.get("items") {
            Some(items) => format!("array of {}", type_name(root, items)),
            None => "array".to_owned(),
        },
        "object" => match schema.get("additionalProperties") {
            Some(values @ Value::Object(_)) => format!("table of {}", type_name(root, values)),
            _ => "table".to_owned(),
        },
        other => other.to_owned(),
    }
}

fn render_default(value: &Value) -> String {
    match value {
        Value::Null => "none".to_owned(),
        other => format!("`{}`", cell(&other.to_string())),
    }
}

/// Doc comments wrap lines; a table cell must be one line without bare pipes.
fn cell(text: &str) -> String {
    paragraph(text).replace('|', "\\|")
}

fn paragraph(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_lists_every_table_with_real_defaults() {
        let markdown = settings_markdown();
        for table in [
            "permissions",
            "sandbox",
            "sandbox.filesystem",
            "sandbox.network",
            "sandbox.limits",
            "sandbox.env",
            "tools.read",
            "tools.glob",
            "tools.grep",
            "model",
            "model.providers.<name>",
            "model.prices.<name>",
            "budgets",
            "context",
            "context.shares",
            "skills",
            "mcp",
            "mcp.servers.<name>",
            "org",
            "org.manifest",
        ] {
            assert!(markdown.contains(&format!("## `[{table}]`")), "{table}");
        }
        assert!(markdown.contains(
            "| `timeout_seconds` | integer | `120` | may only tighten: a lower value than yours |"
        ));
        assert!(markdown.contains("| `mode` | one of `plan`, `default`, `accept-edits`"));
        assert!(markdown.contains("| `mode` | one of `off`, `allowlist`, `on` | `\"off\"`"));
        assert!(markdown.contains("| `backend` | one of `auto`, `native`, `bwrap` |"));
        assert!(markdown.contains("| `max_cpu` | number | `4.0` | never (managed file only) |"));
        assert!(markdown.contains("| `set` | table of string | `{}` | ignored when untrusted |"));
        assert!(markdown.contains("| `trusted_projects` | array of string | `[]` | never"));
    }
}

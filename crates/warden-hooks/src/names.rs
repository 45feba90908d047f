//! warden's tools as Claude Code's hooks know them, and back: names and input fields.
//!
//! | warden        | Claude Code | fields                                                        |
//! |---------------|-------------|---------------------------------------------------------------|
//! | `bash`        | `Bash`      | `command`, `description`; `timeoutSeconds` ↔ `timeout` (ms); `background` ↔ `run_in_background` |
//! | `readFile`    | `Read`      | `path` ↔ `file_path` (absolute); `startLine` ↔ `offset`; `endLine` ↔ `offset + limit - 1` |
//! | `writeFile`   | `Write`     | `path` ↔ `file_path`; `content`                              |
//! | `editFile`    | `Edit`      | `path` ↔ `file_path`; `oldString` ↔ `old_string`; `newString` ↔ `new_string`; `replaceAll` ↔ `replace_all` |
//! | `apply_patch` | `MultiEdit` | `patch`; `file_paths` (the files it touches, absolute) shown |
//! | `glob`        | `Glob`      | `pattern`, `path`                                            |
//! | `grep`        | `Grep`      | `pattern`, `path`, `glob`; `caseInsensitive` ↔ `-i`; `context` ↔ `-C`; `maxHits` ↔ `head_limit` |
//! | `webFetch`    | `WebFetch`  | `url`; `maxBytes`                                            |
//! | `mcp__S__T`   | `mcp__S__T` | unchanged                                                    |
//!
//! Fields with no counterpart pass through under warden's name.

use std::path::Path;

use serde_json::{Map, Value, json};

/// Claude Code's name for a warden tool (the name itself when there is none).
pub fn claude_name(warden: &str) -> &str {
    match warden {
        "bash" => "Bash",
        "readFile" => "Read",
        "writeFile" => "Write",
        "editFile" => "Edit",
        "apply_patch" => "MultiEdit",
        "glob" => "Glob",
        "grep" => "Grep",
        "webFetch" => "WebFetch",
        other => other,
    }
}

/// The names a matcher is tried against for the warden tool `warden`: Claude Code's and
/// warden's — and for a patch, which changes and makes files, `Edit` and `Write` too, so that a
/// hook on file changes is not passed by with a patch.
pub fn matched_as(warden: &str) -> Vec<&str> {
    let mut names = vec![claude_name(warden), warden];
    if warden == "apply_patch" {
        names.extend(["Edit", "Write"]);
    }
    names
}

/// warden's name for a tool named the Claude Code way (the name itself when there is none).
pub fn warden_name(claude: &str) -> &str {
    match claude {
        "Bash" => "bash",
        "Read" => "readFile",
        "Write" => "writeFile",
        "Edit" => "editFile",
        "MultiEdit" => "apply_patch",
        "Glob" => "glob",
        "Grep" => "grep",
        "WebFetch" => "webFetch",
        other => other,
    }
}

/// Field renames between warden's input (first) and Claude Code's (second), per tool.
fn renames(warden: &str) -> &'static [(&'static str, &'static str)] {
    match warden {
        "bash" => &[("background", "run_in_background")],
        "readFile" | "writeFile" => &[("path", "file_path")],
        "editFile" => &[
            ("path", "file_path"),
            ("oldString", "old_string"),
            ("newString", "new_string"),
            ("replaceAll", "replace_all"),
        ],
        "grep" => &[
            ("caseInsensitive", "-i"),
            ("context", "-C"),
            ("maxHits", "head_limit"),
        ],
        _ => &[],
    }
}

/// A warden call's arguments in Claude Code's shape: paths absolute (from `cwd`), fields
/// renamed, line ranges as `offset`/`limit`, a command's timeout in milliseconds.
pub fn claude_input(warden: &str, args: &Value, cwd: &Path) -> Value {
    let Some(map) = args.as_object() else {
        return args.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        if value.is_null() {
            continue;
        }
        let renamed = renames(warden)
            .iter()
            .find(|(w, _)| w == key)
            .map_or(key.as_str(), |(_, c)| c);
        out.insert(renamed.to_owned(), value.clone());
    }
    if let Some(Value::String(path)) = out.get("file_path") {
        let absolute = resolved(&cwd.join(path));
        out.insert(
            "file_path".to_owned(),
            Value::String(absolute.display().to_string()),
        );
    }
    // What an edit puts in, under Claude Code's name, whichever of warden's forms it takes.
    if warden == "editFile"
        && !out.contains_key("new_string")
        && let Some(text) = out.get("newText").or_else(|| out.get("diff")).cloned()
    {
        out.insert("new_string".to_owned(), text);
    }
    match warden {
        "readFile" => {
            let start = out.remove("startLine").and_then(|v| v.as_u64());
            let end = out.remove("endLine").and_then(|v| v.as_u64());
            if let Some(start) = start {
                out.insert("offset".to_owned(), json!(start));
            }
            if let Some(end) = end {
                out.insert(
                    "limit".to_owned(),
                    json!(end + 1 - start.unwrap_or(1).min(end)),
                );
            }
        }
        "bash" => {
            if let Some(seconds) = out.remove("timeoutSeconds").and_then(|v| v.as_u64()) {
                out.insert("timeout".to_owned(), json!(seconds.saturating_mul(1000)));
            }
        }
        "apply_patch" => {
            if let Some(Value::String(patch)) = out.get("patch") {
                let files: Vec<Value> = patch_files(patch)
                    .into_iter()
                    .map(|f| Value::String(resolved(&cwd.join(f)).display().to_string()))
                    .collect();
                out.insert("file_paths".to_owned(), Value::Array(files));
            }
        }
        _ => {}
    }
    Value::Object(out)
}

/// A hook's `updatedInput` for the warden tool `warden`, in either shape, as warden's
/// arguments; absolute paths inside `cwd` made relative again.
pub fn warden_input(warden: &str, updated: &Value, cwd: &Path) -> Value {
    let Some(map) = updated.as_object() else {
        return updated.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        let renamed = renames(warden)
            .iter()
            .find(|(_, c)| c == key)
            .map_or(key.as_str(), |(w, _)| w);
        out.insert(renamed.to_owned(), value.clone());
    }
    if let Some(Value::String(path)) = out.get("path")
        && let Ok(inside) = Path::new(path).strip_prefix(cwd)
    {
        out.insert(
            "path".to_owned(),
            Value::String(inside.display().to_string()),
        );
    }
    match warden {
        "readFile" => {
            let offset = out.remove("offset").and_then(|v| v.as_u64());
            let limit = out.remove("limit").and_then(|v| v.as_u64());
            if let Some(offset) = offset {
                out.insert("startLine".to_owned(), json!(offset));
            }
            if let Some(limit) = limit.filter(|l| *l > 0) {
                out.insert("endLine".to_owned(), json!(offset.unwrap_or(1) + limit - 1));
            }
        }
        "bash" => {
            if let Some(ms) = out.remove("timeout").and_then(|v| v.as_u64()) {
                out.insert("timeoutSeconds".to_owned(), json!(ms.div_ceil(1000).max(1)));
            }
        }
        "apply_patch" => {
            out.remove("file_paths");
            out.remove("file_path");
        }
        "editFile" => {
            // `new_string` shown for a line range or a diff comes back as it went.
            let shown = ["newText", "diff"]
                .iter()
                .any(|k| out.get(*k).is_some() && out.get(*k) == out.get("newString"));
            if shown {
                out.remove("newString");
            }
        }
        _ => {}
    }
    Value::Object(out)
}

/// `path` as the file system has it: `.` and `..` taken out, and the symbolic links of the
/// part that exists followed — so that a hook sees where a call really goes.
pub fn resolved(path: &Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut lexical = std::path::PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    // The deepest part that exists, its links followed, and the rest as written.
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(name) => rest.push(name.to_owned()),
            None => return lexical,
        }
        if !existing.pop() {
            return lexical;
        }
    }
    let mut real = existing.canonicalize().unwrap_or(existing);
    for name in rest.iter().rev() {
        real.push(name);
    }
    real
}

/// Each file a patch touches, as its own input in Claude Code's shape (`file_path`, with the
/// whole patch): a hook written for one file at a time sees every one.
pub fn per_file(input: &Value) -> Vec<Value> {
    let files = input["file_paths"].as_array().cloned().unwrap_or_default();
    if files.is_empty() {
        return vec![input.clone()];
    }
    files
        .into_iter()
        .map(|file| {
            let mut one = input.clone();
            one["file_path"] = file;
            one
        })
        .collect()
}

/// The files a patch names (`*** Add File:`, `*** Update File:`, `*** Delete File:`,
/// `*** Move to:`).
fn patch_files(patch: &str) -> Vec<&str> {
    patch
        .lines()
        .filter_map(|line| {
            [
                "*** Add File: ",
                "*** Update File: ",
                "*** Delete File: ",
                "*** Move to: ",
            ]
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix))
        })
        .map(str::trim)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_goes_there_and_back() {
        let cwd = Path::new("/work/p");
        for (tool, args) in [
            (
                "bash",
                json!({"command": "ls", "timeoutSeconds": 5, "background": true}),
            ),
            (
                "readFile",
                json!({"path": "src/a.rs", "startLine": 10, "endLine": 19}),
            ),
            ("writeFile", json!({"path": "a.txt", "content": "x"})),
            (
                "editFile",
                json!({"path": "a.txt", "oldString": "a", "newString": "b", "replaceAll": true}),
            ),
            (
                "grep",
                json!({"pattern": "x", "caseInsensitive": true, "context": 2, "maxHits": 5}),
            ),
            ("glob", json!({"pattern": "**/*.rs"})),
            ("mcp__gh__search", json!({"q": "x"})),
        ] {
            let claude = claude_input(tool, &args, cwd);
            assert_eq!(warden_input(tool, &claude, cwd), args, "{tool}: {claude}");
            assert_eq!(warden_name(claude_name(tool)), tool);
        }
        let read = claude_input(
            "readFile",
            &json!({"path": "a", "startLine": 10, "endLine": 19}),
            cwd,
        );
        assert_eq!(
            read,
            json!({"file_path": "/work/p/a", "offset": 10, "limit": 10})
        );
        let edit = claude_input(
            "editFile",
            &json!({"path": "a", "oldString": "x", "newString": "y"}),
            cwd,
        );
        assert_eq!(
            edit,
            json!({"file_path": "/work/p/a", "old_string": "x", "new_string": "y"})
        );
        let patch = claude_input(
            "apply_patch",
            &json!({"patch": "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** End Patch\n"}),
            cwd,
        );
        assert_eq!(patch["file_paths"], json!(["/work/p/src/a.rs"]));
    }

    #[test]
    fn an_updated_input_in_warden_s_shape_stays_as_it_is() {
        let cwd = Path::new("/work/p");
        let own = json!({"path": "b.txt", "oldString": "1", "newString": "2"});
        assert_eq!(warden_input("editFile", &own, cwd), own);
        // A path outside the workspace stays absolute, for the policy to judge.
        let outside = json!({"file_path": "/etc/passwd", "content": "x"});
        assert_eq!(
            warden_input("writeFile", &outside, cwd),
            json!({"path": "/etc/passwd", "content": "x"})
        );
    }
}

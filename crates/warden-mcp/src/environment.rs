//! A server's environment: a few variables every program expects, the ones its settings name,
//! and nothing else of warden's (a server inheriting the user's whole environment would see every
//! token in it).

use warden_config::McpServer;

/// Variables every server gets from warden's environment, when set.
const BASE: &[&str] = &["PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR"];

/// The whole environment of `server`: [`BASE`] and the locale (`LC_*`) from `lookup`, then the
/// variables `env_vars` names, then `env`'s values, which win.
pub fn environment(
    server: &McpServer,
    lookup: impl Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    let set = |env: &mut Vec<(String, String)>, key: &str, value: String| {
        env.retain(|(k, _)| k != key);
        env.push((key.to_owned(), value));
    };
    let named = BASE
        .iter()
        .copied()
        .chain(["LC_ALL", "LC_CTYPE", "LC_MESSAGES"]);
    for key in named {
        if let Some(value) = lookup(key) {
            set(&mut env, key, value);
        }
    }
    if !env.iter().any(|(k, _)| k == "PATH") {
        set(&mut env, "PATH", "/usr/local/bin:/usr/bin:/bin".to_owned());
    }
    for key in &server.env_vars {
        if let Some(value) = lookup(key) {
            set(&mut env, key, value);
        }
    }
    for (key, value) in &server.env {
        set(&mut env, key, value.clone());
    }
    env
}

/// `value` with each `${NAME}` replaced by the variable `NAME` from `lookup` (an HTTP server's
/// header: `Bearer ${GITHUB_TOKEN}`). A variable that is not set is an error naming it, not an
/// empty value: a header sent without its token fails later and less clearly. `$` not followed
/// by `{` stands for itself.
pub fn expand(value: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("{value:?} opens ${{ without closing it"));
        };
        let name = &after[..end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("${{{name}}} is not a variable's name"));
        }
        match lookup(name) {
            Some(found) => out.push_str(&found),
            None => return Err(format!("the variable {name} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn only_the_named_variables_reach_a_server() {
        let server = McpServer {
            env: BTreeMap::from([("MODE".to_owned(), "ci".to_owned())]),
            env_vars: vec!["GITHUB_TOKEN".to_owned()],
            ..McpServer::stdio("srv", Vec::new())
        };
        let warden = |key: &str| match key {
            "PATH" => Some("/bin".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            "GITHUB_TOKEN" => Some("ghp_named".to_owned()),
            "AWS_SECRET_ACCESS_KEY" => Some("not-named".to_owned()),
            _ => None,
        };
        let env = environment(&server, warden);
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["PATH", "HOME", "GITHUB_TOKEN", "MODE"]);
        assert!(!env.iter().any(|(_, v)| v == "not-named"));
    }

    #[test]
    fn a_header_takes_its_variables_and_names_a_missing_one() {
        let lookup = |key: &str| (key == "TOKEN").then(|| "s3cret".to_owned());
        assert_eq!(expand("Bearer ${TOKEN}", lookup).unwrap(), "Bearer s3cret");
        assert_eq!(expand("a$b ${TOKEN}$", lookup).unwrap(), "a$b s3cret$");
        assert_eq!(expand("plain", lookup).unwrap(), "plain");
        assert!(
            expand("${MISSING}", lookup)
                .unwrap_err()
                .contains("MISSING")
        );
        assert!(expand("${TOKEN", lookup).is_err());
        assert!(expand("${A-B}", lookup).is_err());
    }
}

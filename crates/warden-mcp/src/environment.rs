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
}

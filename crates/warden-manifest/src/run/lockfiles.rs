//! The hosts a Node or Python install would download from, read from the project's lockfiles
//! and requirement files, so that a run can say before it starts which of them the network
//! allowlist does not reach.

use std::path::Path;

/// The files read, and how.
const FILES: &[&str] = &[
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    ".npmrc",
    "requirements.txt",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "pip.conf",
];

/// Each lockfile found in `root` and the download hosts it names, sorted and unique.
pub(crate) fn download_hosts(root: &Path) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for name in FILES {
        let Ok(text) = std::fs::read_to_string(root.join(name)) else {
            continue;
        };
        let mut hosts: Vec<String> = urls(&text).filter_map(|u| host_of(&u)).collect();
        if *name == "package-lock.json" || *name == "yarn.lock" || *name == "pnpm-lock.yaml" {
            // A lockfile without URLs installs from the default registry.
            if hosts.is_empty() && !text.trim().is_empty() {
                hosts.push("registry.npmjs.org".to_owned());
            }
        }
        if *name == "requirements.txt" && !text.contains("--index-url") && !text.contains("-i ") {
            hosts.push("pypi.org".to_owned());
            hosts.push("files.pythonhosted.org".to_owned());
        }
        hosts.sort();
        hosts.dedup();
        if !hosts.is_empty() {
            out.push(((*name).to_owned(), hosts));
        }
    }
    out
}

/// The `http://` and `https://` URLs in `text`.
fn urls(text: &str) -> impl Iterator<Item = String> + '_ {
    text.match_indices("http").filter_map(move |(at, _)| {
        let rest = &text[at..];
        let rest = rest
            .strip_prefix("https://")
            .or_else(|| rest.strip_prefix("http://"))?;
        let end = rest
            .find(|c: char| c.is_whitespace() || "\"'`,<>()[]{}#".contains(c))
            .unwrap_or(rest.len());
        Some(rest[..end].to_owned())
    })
}

/// The host of a URL without its scheme: no user, no port, lowercase.
fn host_of(url: &str) -> Option<String> {
    let authority = url.split('/').next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?.trim_end_matches('.');
    let ok = !host.is_empty()
        && host.contains('.')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    ok.then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_come_from_the_lockfiles_urls_and_their_defaults() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("package-lock.json"),
            r#"{"packages": {"node_modules/lodash": {"resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz"},
               "node_modules/x": {"resolved": "https://user:pw@npm.example.com:8443/x.tgz"}}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("requirements.txt"),
            "requests==2.31\n--extra-index-url https://pypi.example.org/simple\n",
        )
        .unwrap();
        let found = download_hosts(dir.path());
        assert_eq!(
            found,
            vec![
                (
                    "package-lock.json".to_owned(),
                    vec![
                        "npm.example.com".to_owned(),
                        "registry.npmjs.org".to_owned()
                    ]
                ),
                (
                    "requirements.txt".to_owned(),
                    vec![
                        "files.pythonhosted.org".to_owned(),
                        "pypi.example.org".to_owned(),
                        "pypi.org".to_owned()
                    ]
                ),
            ]
        );
    }
}

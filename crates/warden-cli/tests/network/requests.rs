//! Requests decided one by one: webFetch through the same checks, and hosts whose rules name
//! methods and paths.

use super::*;

/// A server on 127.0.0.1 with a page, a redirect and a large page.
fn web_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                }
                let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
                let (status, extra, body) = match path.as_str() {
                    "/moved" => (
                        "301 Moved",
                        "location: /page.html\r\n".to_owned(),
                        String::new(),
                    ),
                    "/big" => (
                        "200 OK",
                        String::new(),
                        format!("<p>{}</p>", "word ".repeat(50_000)),
                    ),
                    _ => (
                        "200 OK",
                        String::new(),
                        "<html><head><script>steal()</script></head><body><h1>Docs</h1>\
                         <p>Use <code>slugify</code> &amp; test.</p></body></html>"
                            .to_owned(),
                    ),
                };
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: text/html\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}

fn web_fetch(p: &Project, block_private: bool, args: &str) -> Run {
    p.trust();
    p.write(
        ".warden/settings.toml",
        &format!(
            "[permissions]\nallow = [\"WebFetch(domain:allowed.test)\"]\n\n[sandbox.network]\nblock_private_ranges = {block_private}\n"
        ),
    );
    let mut cmd = p.command();
    cmd.env("WARDEN_TEST_RESOLVE", NAMES)
        .args(["tool", "webFetch", "--args", args]);
    finish(&cmd.output().unwrap())
}

#[test]
fn web_fetch_reads_an_allowed_page_as_text_through_the_same_checks() {
    let p = Project::new();
    let port = web_server();
    let page = web_fetch(
        &p,
        false,
        &format!(r#"{{"url": "http://allowed.test:{port}/page.html"}}"#),
    );
    assert_eq!(page.code, 0, "{}", page.stderr);
    let json = page.json();
    assert_eq!(json["status"], 200);
    assert_eq!(json["content"], "Docs\nUse slugify & test.\n", "{json}");
    assert!(!json["content"].as_str().unwrap().contains("steal"));
    // A redirect is named, not followed.
    let moved = web_fetch(
        &p,
        false,
        &format!(r#"{{"url": "http://allowed.test:{port}/moved"}}"#),
    )
    .json();
    assert_eq!(moved["status"], 301);
    assert_eq!(
        moved["redirect"],
        format!("http://allowed.test:{port}/page.html")
    );
    // A long page is cut and says so.
    let big = web_fetch(
        &p,
        false,
        &format!(r#"{{"url": "http://allowed.test:{port}/big", "maxBytes": 1000}}"#),
    )
    .json();
    assert_eq!(
        (big["truncated"].as_bool(), big["truncationReason"].as_str()),
        (Some(true), Some("max_bytes"))
    );
    assert!(big["content"].as_str().unwrap().len() <= 1000);
    // Private addresses are refused by the proxy's checks, whatever the rule allows.
    let private = web_fetch(
        &p,
        true,
        &format!(r#"{{"url": "http://allowed.test:{port}/page.html"}}"#),
    );
    assert_eq!(private.code, 1);
    assert!(private.stdout.contains("loopback"), "{}", private.stdout);
    // A host no rule allows is not fetched without approval.
    let other = web_fetch(
        &p,
        false,
        &format!(r#"{{"url": "http://other.test:{port}/page.html"}}"#),
    );
    assert_eq!(other.code, 1, "{}", other.stdout);
    assert!(!other.stdout.contains("Docs"));
}

#[test]
fn a_host_whose_rule_names_methods_and_paths_is_decided_request_by_request() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let ca = p.tmp().join("upstream-ca.pem");
    let (port, _) = crate::support::tls_server("secure.test", &ca);
    let rule = format!("GET secure.test:{port}/pkg/*");
    let before = ca_dirs();
    let settings = p.tmp().join("open.toml");
    std::fs::write(
        &settings,
        "[sandbox.network]\nblock_private_ranges = false\n",
    )
    .unwrap();
    let script = format!(
        "curl -s -m 10 https://secure.test:{port}/pkg/left-pad; echo; \
         curl -s -m 10 -o /dev/null -w '%{{http_code}}\\n' -X PUT https://secure.test:{port}/pkg/left-pad; \
         curl -s -m 10 -o /dev/null -w '%{{http_code}}\\n' https://secure.test:{port}/admin; \
         test -r \"$SSL_CERT_FILE\" && grep -c 'BEGIN CERTIFICATE' \"$NODE_EXTRA_CA_CERTS\""
    );
    let mut cmd = p.command();
    cmd.env("WARDEN_TEST_RESOLVE", "secure.test=127.0.0.1")
        .env("WARDEN_TEST_UPSTREAM_CA", &ca)
        .args(["exec", "--json", "--net", "allowlist", "--settings"])
        .arg(&settings)
        .args(["--allow-host", &rule, "--", "bash", "-c", &script]);
    let run = finish(&cmd.output().unwrap());
    let json: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    assert_eq!(
        stdout(&json),
        "tls server saw: GET /pkg/left-pad HTTP/1.1\n403\n403\n1\n",
        "a download passes, publishing and other paths do not; the CA is there to trust: {json}"
    );
    let seen = connections(&p, &json);
    let https: Vec<Value> = seen
        .iter()
        .filter(|c| c["kind"] == "https")
        .cloned()
        .collect();
    let requests = crate::support::fields(&https, &["method", "path", "decision"]);
    assert_eq!(
        requests,
        [
            "GET /pkg/left-pad allow",
            "PUT /pkg/left-pad deny",
            "GET /admin deny"
        ],
        "{seen:?}"
    );
    // The CA's files are gone with the run (no other test makes any).
    assert_eq!(ca_dirs(), before, "this run's CA was left behind");
}

fn ca_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("warden-ca-"))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs
}

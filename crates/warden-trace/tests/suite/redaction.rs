//! What redaction removes, and what it leaves alone.

use serde_json::json;
use warden_trace::{redact, redact_value};

use super::support::fake;

fn assert_redacts(input: &str, expected: &str) {
    assert_eq!(redact(input), expected, "input: {input}");
}

#[test]
fn provider_api_keys_are_redacted() {
    let openai = fake("sk-", "Zx8q2LmN4pR7tV1wY3bC5dF6gH9jK0aB2cD4eF6gH8jK1mN3");
    assert_redacts(&format!("OPENAI={openai}"), "OPENAI=sk-[REDACTED]");
    let project = fake(
        "sk-proj-",
        "Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9fG1hJ3kL5mN7pQ9rS1tU3_T3BlbkFJxY7zA9bC1dE3fG5",
    );
    assert_redacts(
        &format!("curl -H 'x-key: {project}' https://api.openai.com"),
        "curl -H 'x-key: sk-proj-[REDACTED]' https://api.openai.com",
    );
    let anthropic = fake(
        "sk-ant-api03-",
        "q1W2e3R4t5Y6u7I8o9P0a1S2d3F4g5H6j7K8l9Z0x1C2v3B4n5M6q7W8e9R0t1Y2u3I4o5P6a7S8-AbCdEfAA",
    );
    assert_redacts(
        &format!("key {anthropic} end"),
        "key sk-ant-api03-[REDACTED] end",
    );
    let google = fake("AIza", "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY");
    assert_redacts(&format!("?key={google}"), "?key=AIza[REDACTED]");
    let stripe = fake("sk_live_", "4eC39HqLyjWDarjtT1zdp7dc");
    let restricted = fake("rk_live_", "51H8x2eZvKYlo2C0a9d8f7g6");
    assert_redacts(
        &format!("{stripe} {restricted}"),
        "sk_live_[REDACTED] rk_live_[REDACTED]",
    );
}

#[test]
fn cloud_and_forge_tokens_are_redacted() {
    let access = fake("AKIA", "IOSFODNN7EXAMPLE");
    assert_redacts(&format!("id {access}."), "id AKIA[REDACTED].");
    let secret = fake("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKEY");
    assert_redacts(
        &format!("aws_secret_access_key = {secret}"),
        "aws_secret_access_key = [REDACTED]",
    );
    for prefix in ["ghp_", "gho_", "ghs_"] {
        let token = fake(prefix, "16C7e42F292c6912E7710c838347Ae178B4a");
        assert_redacts(
            &format!("token {token}"),
            &format!("token {prefix}[REDACTED]"),
        );
    }
    let pat = fake(
        "github_pat_",
        "11ABCDEFG0123456789abc_dEfGhIjKlMnOpQrStUvWxYz0123456789ABCDEFGHIJKLMNOPQRSTUVW",
    );
    assert_redacts(&format!("GH={pat}"), "GH=github_pat_[REDACTED]");
    let gitlab = fake("glpat-", "xYz12AbC34dEf56GhI78");
    assert_redacts(&format!("git push {gitlab}"), "git push glpat-[REDACTED]");
    let slack = fake("xoxb-", "1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx");
    assert_redacts(&format!("slack {slack}"), "slack xoxb-[REDACTED]");
}

#[test]
fn jwts_and_authorization_headers_are_redacted() {
    let jwt = fake(
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.",
        "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    );
    assert_redacts(&format!("session={jwt};"), "session=[REDACTED];");
    assert_redacts(
        "curl -H 'Authorization: Bearer abc123def456ghi789' https://x.dev",
        "curl -H 'Authorization: Bearer [REDACTED]' https://x.dev",
    );
    assert_redacts(
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "Authorization: Basic [REDACTED]",
    );
    assert_redacts(
        r#"{"authorization": "token 0123abcd"}"#,
        r#"{"authorization": "token [REDACTED]"}"#,
    );
    assert_redacts(
        "send Bearer Zm9vYmFyYmF6cXV4MTIzNDU2",
        "send Bearer [REDACTED]",
    );
    // A reference to a variable is not the secret itself.
    let reference = "curl -H \"Authorization: Bearer $TOKEN\"";
    assert_redacts(reference, reference);
}

#[test]
fn named_secret_values_are_redacted() {
    let cases = [
        ("password=hunter2", "password=[REDACTED]"),
        ("mysql --passwd=s3cr3t db", "mysql --passwd=[REDACTED] db"),
        ("pwd=abc", "pwd=[REDACTED]"),
        ("DB_PASSWORD=correct-horse", "DB_PASSWORD=[REDACTED]"),
        (
            "GET /v1?api_key=abc123&page=2",
            "GET /v1?api_key=[REDACTED]&page=2",
        ),
        ("token=abc secret=def", "token=[REDACTED] secret=[REDACTED]"),
        ("password: hunter2", "password: [REDACTED]"),
        ("  token: 8f3e9a1c", "  token: [REDACTED]"),
        ("X-Api-Key: k3y-v4lue", "X-Api-Key: [REDACTED]"),
        (
            r#"{"password": "hunter2", "user": "bob"}"#,
            r#"{"password": "[REDACTED]", "user": "bob"}"#,
        ),
        ("client_secret = 'abc def'", "client_secret = '[REDACTED]'"),
        (
            "export DB_SECRET=\"Xk29fLq83NvZ0pQw1RtY\"",
            "export DB_SECRET=\"[REDACTED]\"",
        ),
    ];
    for (input, expected) in cases {
        assert_redacts(input, expected);
    }
}

#[test]
fn random_values_after_key_token_secret_names_are_redacted() {
    assert_redacts(
        "MY_SERVICE_KEY=q8ZrT3vXk9LmP2sWn7Yb",
        "MY_SERVICE_KEY=[REDACTED]",
    );
    assert_redacts(
        "session_token: 'a9F2kLm3Qp8Zr4Tx7Vb1'",
        "session_token: '[REDACTED]'",
    );
    // Words and names are not random.
    for kept in [
        "MY_SERVICE_KEY=development",
        "SORT_KEY=created_at_descending",
        "PRIMARY_KEY=organisation_id",
    ] {
        assert_redacts(kept, kept);
    }
}

#[test]
fn credentials_in_urls_are_redacted_and_the_user_kept() {
    assert_redacts(
        "git clone https://alice:s3cret@github.com/org/repo.git",
        "git clone https://alice:[REDACTED]@github.com/org/repo.git",
    );
    assert_redacts(
        "DATABASE_URL=postgres://app:pa55word@db:5432/app",
        "DATABASE_URL=postgres://app:[REDACTED]@db:5432/app",
    );
}

#[test]
fn pem_private_keys_are_redacted_whole() {
    for kind in ["", "RSA ", "EC ", "OPENSSH "] {
        let pem = format!(
            "key:\n-----BEGIN {kind}PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n\
             BKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END {kind}PRIVATE KEY-----\ndone"
        );
        assert_redacts(
            &pem,
            &format!(
                "key:\n-----BEGIN {kind}PRIVATE KEY-----[REDACTED]-----END {kind}PRIVATE KEY-----\ndone"
            ),
        );
    }
    // Truncated output still loses the key material.
    let cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC";
    assert_redacts(cut, "-----BEGIN RSA PRIVATE KEY-----[REDACTED]");
    // A public key is not a secret.
    let public = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0B\n-----END PUBLIC KEY-----";
    assert_redacts(public, public);
}

#[test]
fn ordinary_code_and_prose_are_kept() {
    let kept = [
        "let token = next_token();",
        "if password_field.is_empty() { return; }",
        "struct Config { token: String, api_key: Option<String> }",
        "fn tokenize(input: &str) -> Vec<Token>",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "request 123e4567-e89b-12d3-a456-426614174000 failed",
        "the key is in the drawer",
        "basic usage: cargo build --release",
        "max_tokens=4096",
        "let password_hash = argon2(&password);",
        "see https://docs.rs/regex/latest/regex/ and git@github.com:org/repo.git",
        "task-runner-for-very-long-kebab-case-names",
        "{\"path\": \"src/main.rs\", \"startLine\": 10}",
        "Öffne die Datei und lies den Schlüssel – keine Geheimnisse hier.",
    ];
    for text in kept {
        assert_redacts(text, text);
    }
}

#[test]
fn json_values_are_redacted_by_key_and_by_content() {
    let github = fake("ghp_", "16C7e42F292c6912E7710c838347Ae178B4a");
    let value = json!({
        "command": format!("gh auth login --with-token {github}"),
        "env": {"API_KEY": "abc", "HOME": "/root", "PWD": "/work"},
        "headers": [{"Authorization": "Bearer abc"}],
        "maxTokens": 1000,
    });
    assert_eq!(
        redact_value(&value),
        json!({
            "command": "gh auth login --with-token ghp_[REDACTED]",
            "env": {"API_KEY": "[REDACTED]", "HOME": "/root", "PWD": "/work"},
            "headers": [{"Authorization": "[REDACTED]"}],
            "maxTokens": 1000,
        })
    );
}

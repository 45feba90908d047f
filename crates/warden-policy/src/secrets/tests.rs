//! The secret list: names, places, contents, unmask.
use super::*;

fn secrets(unmask: &[&str]) -> Secrets {
    let mut settings = Settings::defaults(PathBuf::from("/ws"));
    settings.permissions.unmask = unmask.iter().map(|s| (*s).to_owned()).collect();
    settings.sandbox.filesystem.deny_read = vec!["private/**".to_owned()];
    Secrets::new(&settings, Path::new("/home/u"), Path::new("/home/u/.cargo")).unwrap()
}

fn secret(s: &Secrets, path: &str, content: &str) -> bool {
    let bytes = content.as_bytes().to_vec();
    s.check(Path::new(path), false, &mut || Some(bytes.clone()))
        .is_some()
}

const KEY: &str =
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n";
const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

#[test]
fn names_places_and_contents() {
    let s = secrets(&[]);
    for (path, content, is) in [
        ("/ws/.env", "", true),
        ("/ws/.ENV", "", true),
        ("/ws/ID_RSA", "", true),
        ("/home/u/src/app/.npmrc", "//r/:_authToken=abc\n", true),
        ("/ws/app/.env.production", "", true),
        ("/ws/.env.example", "", false),
        ("/ws/.env.sample", "", false),
        ("/ws/.environment", "", false),
        ("/ws/deploy/id_rsa", "", true),
        ("/ws/deploy/id_rsa.pub", "", false),
        ("/ws/id_ed25519_ci", "", true),
        ("/ws/certs/store.p12", "", true),
        ("/ws/db.kdbx", "", true),
        ("/ws/tls/server.key", KEY, true),
        ("/ws/venv/certifi/cacert.pem", CERT, false),
        ("/ws/tls/server.crt", CERT, false),
        ("/ws/tls/bundle.pem", &format!("{CERT}{KEY}"), true),
        ("/home/u/.cargo/credentials.toml", "", true),
        ("/home/u/.cargo/registry/x/.npmrc", "", false),
        ("/home/u/.npmrc", "", true),
        ("/home/u/.config/gcloud/credentials.db", "", true),
        ("/ws/.npmrc", "registry=https://r.example/\n", false),
        ("/ws/.npmrc", "//r.example/:_authToken=abc\n", true),
        ("/ws/.yarnrc.yml", "npmAuthToken: \"x\"\n", true),
        (
            "/ws/.yarnrc.yml",
            "# npmAuthToken: x\nnodeLinker: pnp\n",
            false,
        ),
        ("/ws/private/notes.txt", "", true),
        ("/ws/README.md", "", false),
        ("/etc/ssh/ssh_host_ed25519_key", "", true),
        ("/ws/backup/ssh_host_rsa_key", "", true),
        ("/etc/ssh/ssh_host_ed25519_key.pub", "", false),
        ("/etc/ssl/private/ssl-cert-snakeoil.key", "", true),
        ("/etc/letsencrypt/live/example.org/privkey.pem", "", true),
    ] {
        assert_eq!(secret(&s, path, content), is, "{path}");
    }
}

#[test]
fn unmask_makes_a_built_in_secret_readable_but_not_a_settings_one() {
    let s = secrets(&[
        ".env",
        "private/**",
        "~/.config/gh/**",
        "~/.config/gcloud/**",
    ]);
    // The home's hidden credentials stay hidden; the other credential files open.
    assert!(secret(&s, "/home/u/.config/gh/hosts.yml", ""));
    assert!(!secret(&s, "/home/u/.config/gcloud/credentials.db", ""));
    assert!(!secret(&s, "/ws/.env", ""));
    assert_eq!(s.unmasked(Path::new("/ws/.env")), Some(".env"));
    assert!(secret(&s, "/ws/app/.env.local", ""));
    assert!(secret(&s, "/ws/private/notes.txt", ""));
}

#[test]
fn an_extension_less_file_beside_a_key_is_sniffed() {
    assert!(Secrets::sniffs_beside("server", ["server.crt", "x"]));
    assert!(!Secrets::sniffs_beside("server", ["README.md"]));
    assert!(!Secrets::sniffs_beside("notes.txt", ["a.pem"]));
    let s = secrets(&[]);
    let key = KEY.as_bytes().to_vec();
    assert!(
        s.check(Path::new("/ws/tls/server"), true, &mut || Some(key.clone()))
            .is_some()
    );
    assert!(
        s.check(Path::new("/ws/tls/server"), false, &mut || Some(
            key.clone()
        ))
        .is_none()
    );
}

#[test]
fn the_quick_look_says_yes_to_every_built_in_name() {
    let s = secrets(&[]);
    let s = Secrets {
        settings: Anchored::new(&[], Path::new("/ws"), Path::new("/home/u")).unwrap(),
        ..s
    };
    for name in [
        ".env",
        ".Env.local",
        "id_rsa",
        "ssh_host_rsa_key",
        "a.P12",
        "k.DER",
    ] {
        assert!(s.may_be_secret(name, false), "{name}");
    }
    assert!(!s.may_be_secret("main.rs", false));
}

#[test]
fn the_quick_look_names_every_credential_file() {
    for path in HOME_CREDENTIALS
        .iter()
        .chain(CARGO_CREDENTIALS)
        .chain(TOKEN_FILES)
    {
        let name = path.rsplit('/').next().unwrap_or(path);
        assert!(CREDENTIAL_NAMES.contains(&name), "{name}");
    }
}

#[test]
fn private_keys_of_every_kind_and_no_certificates() {
    for begin in [
        "PRIVATE KEY",
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "DSA PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
    ] {
        assert!(holds_private_key(
            format!("x\n-----BEGIN {begin}-----\n").as_bytes()
        ));
    }
    assert!(!holds_private_key(CERT.as_bytes()));
    assert!(!holds_private_key(b"-----BEGIN PUBLIC KEY-----\n"));
    assert!(holds_private_key(
        b"-----BEGIN PGP PRIVATE KEY BLOCK-----\n"
    ));
    assert!(holds_private_key(b"PuTTY-User-Key-File-3: ssh-ed25519\n"));
    // DER: PKCS#8 (long-form length, version 0), SEC1 (version 1); a certificate opens with
    // a SEQUENCE.
    assert!(holds_private_key(&[
        0x30, 0x82, 0x04, 0xbd, 0x02, 0x01, 0x00, 0x30
    ]));
    assert!(holds_private_key(&[0x30, 0x77, 0x02, 0x01, 0x01, 0x04]));
    assert!(!holds_private_key(&[
        0x30, 0x82, 0x03, 0x0d, 0x30, 0x82, 0x01
    ]));
    assert!(!holds_private_key(b"plain text"));
}

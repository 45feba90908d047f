//! A session's kept walk of its workspace: what changes between two of its commands (a new
//! secret, a hard link out, a key in a new directory) is masked on the very next one, as a fresh
//! walk masks it, and a mask whose reason is gone is lifted.

use super::*;

#[test]
fn what_changes_between_two_commands_of_a_session_is_masked_on_the_next() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    place(&p, "src/main.rs", "fn main() {}\n");
    let outside = p.tmp().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("token"), "OUTSIDE-TOKEN-31337\n").unwrap();
    let ws = p.root().canonicalize().unwrap();
    let settings = warden_config::Settings::defaults(ws.clone());
    let secrets = warden_policy::Secrets::from_settings(&settings).unwrap();
    let rule = || {
        warden_sandbox::MaskRule::new(std::sync::Arc::new(warden_tools::SecretMask(
            secrets.clone(),
        )))
    };
    let session = rule().keep_walks();
    let sandbox = warden_sandbox::Sandbox::new(env!("CARGO_BIN_EXE_warden"));
    let run = |mask: &warden_sandbox::MaskRule, script: &str| {
        let args = ["-c".to_owned(), script.to_owned()];
        let mut request =
            warden_sandbox::request_from_settings(&settings, &ws, "sh", &args, &[]).unwrap();
        request.mask = mask.clone();
        let plan = warden_sandbox::Plan::new(&request).unwrap();
        let out = sandbox.run(&plan, warden_sandbox::Output::Capture).unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The session's first command walks the workspace and keeps the walk.
    assert!(run(&session, "cat src/main.rs").contains("fn main"));

    std::fs::hard_link(outside.join("token"), ws.join("src/leak")).unwrap();
    place(&p, "src/.env.local", "SECRET=ENV-NEW-31337\n");
    place(&p, "src/new/deeper/deploy.pem", &key("KEY-NEW-31337"));
    let read = "cat src/leak src/.env.local src/new/deeper/deploy.pem 2>&1; echo ran";
    let markers = ["OUTSIDE-TOKEN-31337", "ENV-NEW-31337", "KEY-NEW-31337"];
    // The probe: without the sandbox each reads.
    let bare = p.run(&["exec", "--no-sandbox", "--", "sh", "-c", read]);
    for marker in markers {
        assert!(bare.stdout.contains(marker), "the probe: {}", bare.stdout);
    }
    // The session's next command: none.
    let next = run(&session, read);
    assert!(next.contains("ran"), "{next}");
    for marker in markers {
        assert!(!next.contains(marker), "{marker} read: {next}");
    }
    // What a fresh walk gives.
    assert_eq!(next, run(&rule(), read));

    // The reasons gone: the link out replaced by a plain file, the key by a certificate.
    std::fs::remove_file(ws.join("src/leak")).unwrap();
    place(&p, "src/leak", "PLAIN-31337\n");
    place(&p, "src/new/deeper/deploy.pem", CERT);
    let read = "cat src/leak src/new/deeper/deploy.pem src/.env.local 2>&1; echo ran";
    let after = run(&session, read);
    assert!(
        after.contains("PLAIN-31337") && after.contains("PUBLIC-CERT-31337"),
        "{after}"
    );
    assert!(!after.contains("ENV-NEW-31337"), "{after}");
    assert_eq!(after, run(&rule(), read));
}

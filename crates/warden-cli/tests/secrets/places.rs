//! Secrets by every place and name: through a home that is a link, other names of a key,
//! directories too deep, files swapped or moved between the plan and the mounts, names that are not
//! UTF-8.

use super::*;

#[test]
fn credentials_stay_masked_through_a_home_that_is_a_link_and_their_directories_hide_whole() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    place(
        &p,
        "~/.cargo/credentials.toml",
        "token = \"CARGO-LINKED-31337\"\n",
    );
    place(
        &p,
        "~/.config/gh/hosts.yml",
        "oauth_token: GH-TOKEN-31337\n",
    );
    place(
        &p,
        "~/.config/gcloud/credentials.db",
        "GCLOUD-TOKEN-31337\n",
    );
    place(
        &p,
        "~/.config/gcloud/configurations/config_default",
        "GCLOUD-CONFIG-31337\n",
    );
    place(&p, "~/.config/other/notes", "NOT-A-SECRET-31337\n");
    user_settings(&p, "[sandbox.filesystem]\nallow_read = [\"~/.config\"]\n");
    // HOME is a link to the real home directory, as on machines with /home elsewhere.
    let link = p.tmp().join("home-link");
    std::os::unix::fs::symlink(&p.home, &link).unwrap();
    let run_as = |args: &[&str]| {
        let mut command = p.command();
        command.env("HOME", &link).args(args);
        crate::support::finish(&command.output().unwrap())
    };
    let files = "cat \"$HOME/.cargo/credentials.toml\" \"$HOME/.config/gh/hosts.yml\" \
                 \"$HOME/.config/gcloud/credentials.db\" \
                 \"$HOME/.config/gcloud/configurations/config_default\" \
                 \"$HOME/.config/other/notes\"";
    let bare = run_as(&["exec", "--no-sandbox", "--", "sh", "-c", files]);
    let markers = [
        "CARGO-LINKED-31337",
        "GH-TOKEN-31337",
        "GCLOUD-TOKEN-31337",
        "GCLOUD-CONFIG-31337",
    ];
    for marker in markers {
        assert!(
            bare.stdout.contains(marker),
            "the probe: {marker}: {}",
            bare.stderr
        );
    }
    let script = format!(
        "{files}; ls -a \"$HOME/.config/gh\"; {}",
        spellings("$HOME/.config/gh/hosts.yml")
    );
    let run = run_as(&["exec", "--", "sh", "-c", &script]);
    for marker in markers {
        assert!(!run.stdout.contains(marker), "{marker}: {}", run.stdout);
    }
    assert!(run.stdout.contains("NOT-A-SECRET-31337"), "{}", run.stderr);
    assert!(!run.stdout.contains("hosts.yml"), "{}", run.stdout);
    // The user unmasks one file of a credential directory: that one opens, the rest stays
    // hidden, and the home's hidden credentials ignore an unmask.
    user_settings(
        &p,
        "[sandbox.filesystem]\nallow_read = [\"~/.config\"]\n\
         [permissions]\nunmask = [\"~/.config/gcloud/configurations/**\", \"~/.config/gh\"]\n",
    );
    let run = run_as(&["exec", "--", "sh", "-c", files]);
    assert!(run.stdout.contains("GCLOUD-CONFIG-31337"), "{}", run.stderr);
    for marker in ["GCLOUD-TOKEN-31337", "GH-TOKEN-31337", "CARGO-LINKED-31337"] {
        assert!(!run.stdout.contains(marker), "{marker}: {}", run.stdout);
    }
}

#[test]
fn a_readable_roots_other_name_for_a_key_and_a_single_file_root_are_masked() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    // A key kept outside every root, and a plain file, each with a second name in a root the
    // user lets commands read.
    let away = p.tmp().join("away");
    std::fs::create_dir_all(&away).unwrap();
    std::fs::write(away.join("deploy"), key("LINKED-KEY-31337")).unwrap();
    std::fs::write(away.join("plain"), "PLAIN-LINK-31337\n").unwrap();
    place(&p, "~/shared/readme.txt", "SHARED-31337\n");
    std::fs::hard_link(away.join("deploy"), p.home.join("shared/notes.txt")).unwrap();
    std::fs::hard_link(away.join("plain"), p.home.join("shared/plain.txt")).unwrap();
    place(&p, "~/keys/.env.prod", "SECRET=SINGLE-FILE-31337\n");
    user_settings(
        &p,
        "[sandbox.filesystem]\nallow_read = [\"~/shared\", \"~/keys/.env.prod\"]\n",
    );
    let files = format!(
        "cat {0}/shared/notes.txt {0}/shared/plain.txt {0}/shared/readme.txt {0}/keys/.env.prod",
        p.home.display()
    );
    let bare = p.run(&["exec", "--no-sandbox", "--", "sh", "-c", &files]);
    for marker in ["LINKED-KEY-31337", "SINGLE-FILE-31337"] {
        assert!(
            bare.stdout.contains(marker),
            "the probe: {marker}: {}",
            bare.stderr
        );
    }
    let run = exec(&p, &files);
    assert!(!run.stdout.contains("LINKED-KEY-31337"), "{}", run.stdout);
    assert!(!run.stdout.contains("SINGLE-FILE-31337"), "{}", run.stdout);
    assert!(run.stdout.contains("PLAIN-LINK-31337"), "{}", run.stderr);
    assert!(run.stdout.contains("SHARED-31337"), "{}", run.stderr);
}

#[test]
fn a_directory_too_deep_to_look_into_stops_the_command_instead_of_showing_its_secrets() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    // Past PATH_MAX: reachable one step at a time, not by its whole name.
    let deep = "import os\nfor _ in range(24):\n    os.makedirs('d' * 200, exist_ok=True)\n    os.chdir('d' * 200)\n";
    let make = format!("{deep}open('.env', 'w').write('SECRET=DEEP-31337')\n");
    let read = format!("{deep}print(open('.env').read())\n");
    let bare = p.run(&["exec", "--no-sandbox", "--", "python3", "-c", &make]);
    assert_eq!(bare.code, 0, "{}", bare.stderr);
    let bare = p.run(&["exec", "--no-sandbox", "--", "python3", "-c", &read]);
    assert!(
        bare.stdout.contains("DEEP-31337"),
        "the probe: {}",
        bare.stderr
    );
    let run = p.run(&["exec", "--", "python3", "-c", &read]);
    assert!(!run.stdout.contains("DEEP-31337"), "{}", run.stdout);
    assert_eq!(run.code, 126, "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot be looked into"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_secret_swapped_between_the_plan_and_the_mounts_stops_the_command() {
    let p = project_with_secrets();
    if !sandbox_available(&p) {
        return;
    }
    let ws = p.root().canonicalize().unwrap();
    let settings = warden_config::Settings::defaults(ws.clone());
    let secrets = warden_policy::Secrets::from_settings(&settings).unwrap();
    let plan_for = |script: &str| {
        let args = ["-c".to_owned(), script.to_owned()];
        let mut request =
            warden_sandbox::request_from_settings(&settings, &ws, "sh", &args, &[]).unwrap();
        request.mask = warden_sandbox::MaskRule::new(std::sync::Arc::new(
            warden_tools::SecretMask(secrets.clone()),
        ));
        warden_sandbox::Plan::new(&request).unwrap()
    };
    let sandbox = warden_sandbox::Sandbox::new(env!("CARGO_BIN_EXE_warden"));
    let run = |plan: &warden_sandbox::Plan| {
        sandbox
            .run(plan, warden_sandbox::Output::Capture)
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let read = "cat app/config/.env.production app/moved/.env.production; echo ran";
    // The probe: unchanged, the plan runs and masks.
    let out = run(&plan_for(read)).unwrap();
    assert!(
        out.contains("ran") && !out.contains("ENV-NESTED-31337"),
        "{out}"
    );
    // Another process moves the secret's directory away and leaves a decoy at its name, after
    // the plan looked and before the mounts are made: nothing runs.
    let plan = plan_for(read);
    std::fs::rename(ws.join("app/config"), ws.join("app/moved")).unwrap();
    std::fs::create_dir(ws.join("app/config")).unwrap();
    std::fs::write(ws.join("app/config/.env.production"), "DECOY\n").unwrap();
    let err = run(&plan).unwrap_err().to_string();
    assert!(
        err.contains("changed while the sandbox was being built"),
        "{err}"
    );
    // Moved without a decoy: nothing runs either.
    std::fs::remove_dir_all(ws.join("app/config")).unwrap();
    std::fs::rename(ws.join("app/moved"), ws.join("app/config")).unwrap();
    let plan = plan_for(read);
    std::fs::rename(ws.join("app/config"), ws.join("app/moved")).unwrap();
    let err = run(&plan).unwrap_err().to_string();
    assert!(
        err.contains("changed while the sandbox was being built"),
        "{err}"
    );
}

#[test]
fn another_name_of_a_hidden_credential_in_a_toolchain_directory_is_hidden_too() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    place(
        &p,
        "~/.aws/credentials",
        "aws_secret_access_key = AWS-LINKED-31337\n",
    );
    place(&p, "~/.cargo/registry/readme", "CARGO-README-31337\n");
    std::fs::hard_link(
        p.home.join(".aws/credentials"),
        p.home.join(".cargo/registry/notes"),
    )
    .unwrap();
    let files = format!(
        "cat {0}/.cargo/registry/notes {0}/.cargo/registry/readme",
        p.home.display()
    );
    let bare = p.run(&["exec", "--no-sandbox", "--", "sh", "-c", &files]);
    assert!(
        bare.stdout.contains("AWS-LINKED-31337"),
        "the probe: {}",
        bare.stderr
    );
    let run = exec(&p, &files);
    assert!(!run.stdout.contains("AWS-LINKED-31337"), "{}", run.stdout);
    assert!(run.stdout.contains("CARGO-README-31337"), "{}", run.stderr);
}

#[test]
fn a_secret_masked_by_its_place_cannot_be_freed_by_renaming_a_directory_above_it() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    place(&p, "private/sub/notes.txt", "PLACED-31337\n");
    place(&p, "other/sub/notes.txt", "OTHER-31337\n");
    user_settings(&p, "[sandbox.filesystem]\ndeny_read = [\"private/**\"]\n");
    // The probe: a directory beside it renames, and its file reads.
    let run = exec(&p, "mv other moved && cat moved/sub/notes.txt");
    assert!(run.stdout.contains("OTHER-31337"), "{}", run.stderr);
    let run = exec(
        &p,
        "mv private public; mv private/sub private/sub2; cat public/sub/notes.txt private/sub2/notes.txt",
    );
    assert!(!run.stdout.contains("PLACED-31337"), "{}", run.stdout);
    assert!(run.stderr.contains("busy"), "{}", run.stderr);
    let run = exec(
        &p,
        "cat public/sub/notes.txt private/sub2/notes.txt private/sub/notes.txt",
    );
    assert!(!run.stdout.contains("PLACED-31337"), "{}", run.stdout);
    let read = p.run(&[
        "tool",
        "readFile",
        "--args",
        r#"{"path": "private/sub/notes.txt"}"#,
    ]);
    assert!(!read.stdout.contains("PLACED-31337"), "{}", read.stdout);
}

#[test]
fn a_key_moved_past_the_longest_path_stops_the_next_command_instead_of_being_read() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    place(&p, "certs/server.key", &key("DEEP-KEY-31337"));
    // Command 1 moves the key's directory so deep that its whole name is too long to open.
    let deep = "import os\nos.makedirs('deep', exist_ok=True)\nos.chdir('deep')\n\
                while len(os.getcwd()) + 201 < 4084:\n    os.makedirs('d' * 200, exist_ok=True)\n    os.chdir('d' * 200)\n\
                last = 'e' * (4083 - len(os.getcwd()))\nos.makedirs(last, exist_ok=True)\nos.chdir(last)\n";
    let moved = format!("{deep}os.rename(os.environ['W'] + '/certs', 'certs')\n");
    let read = format!("{deep}print(open('certs/server.key').read())\n");
    let ws = p.root().canonicalize().unwrap().display().to_string();
    let w = format!("W={ws}");
    let bare = p.run(&[
        "exec",
        "--no-sandbox",
        "--env",
        &w,
        "--",
        "python3",
        "-c",
        &moved,
    ]);
    assert_eq!(bare.code, 0, "{}", bare.stderr);
    let bare = p.run(&["exec", "--no-sandbox", "--", "python3", "-c", &read]);
    assert!(
        bare.stdout.contains("DEEP-KEY-31337"),
        "the probe: {}",
        bare.stderr
    );
    let run = p.run(&["exec", "--", "python3", "-c", &read]);
    assert!(!run.stdout.contains("DEEP-KEY-31337"), "{}", run.stdout);
    assert_eq!(run.code, 126, "{}", run.stderr);
    assert!(
        run.stderr.contains("longer than the system allows"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_homes_hidden_credentials_stay_hidden_through_a_link_and_another_mount() {
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    place(&p, "~/.kube/config", "token: KUBE-31337\n");
    place(
        &p,
        "~/dotfiles/aws/credentials",
        "aws_secret_access_key = DOTFILES-AWS-31337\n",
    );
    std::os::unix::fs::symlink(p.home.join("dotfiles/aws"), p.home.join(".aws")).unwrap();
    let home = p.home.display().to_string();
    let kube = format!("{home}/.kube/config");
    let aws = format!("{home}/dotfiles/aws/credentials");
    let bare = p.run(&["exec", "--no-sandbox", "--", "cat", &kube, &aws]);
    for marker in ["KUBE-31337", "DOTFILES-AWS-31337"] {
        assert!(
            bare.stdout.contains(marker),
            "the probe: {marker}: {}",
            bare.stderr
        );
    }
    // The home shown again elsewhere, and the link's target inside a readable root.
    let mount = format!("{home}:/mnt/h");
    let readable = format!("{home}/dotfiles");
    user_settings(
        &p,
        &format!("[sandbox.filesystem]\nallow_read = [\"{readable}\"]\n"),
    );
    let run = p.run(&[
        "exec",
        "--mount",
        &mount,
        "--",
        "sh",
        "-c",
        &format!("cat /mnt/h/.kube/config /mnt/h/dotfiles/aws/credentials {aws}"),
    ]);
    for marker in ["KUBE-31337", "DOTFILES-AWS-31337"] {
        assert!(!run.stdout.contains(marker), "{marker}: {}", run.stdout);
    }
    let args = serde_json::json!({"path": aws}).to_string();
    let read = p.run(&["tool", "readFile", "--args", &args]);
    assert!(
        !read.stdout.contains("DOTFILES-AWS-31337"),
        "{}",
        read.stdout
    );
}

#[test]
fn names_that_are_not_utf8_are_secrets_like_any_other() {
    use std::os::unix::ffi::OsStrExt as _;
    let p = Project::new();
    if !sandbox_available(&p) {
        return;
    }
    let odd = |base: &Path, bytes: &[u8]| base.join(std::ffi::OsStr::from_bytes(bytes));
    let toolchain = odd(&p.home.join(".cargo/registry"), b"caf\xe9");
    std::fs::create_dir_all(&toolchain).unwrap();
    std::fs::write(toolchain.join(".env"), "SECRET=ODD-DIR-31337\n").unwrap();
    std::fs::write(odd(&p.root(), b"cl\xe9.pem"), key("ODD-KEY-31337")).unwrap();
    let script = format!(
        "cat {}/.cargo/registry/caf*/.env; cat ./cl*.pem",
        p.home.display()
    );
    let bare = p.run(&["exec", "--no-sandbox", "--", "sh", "-c", &script]);
    for marker in ["ODD-DIR-31337", "ODD-KEY-31337"] {
        assert!(
            bare.stdout.contains(marker),
            "the probe: {marker}: {}",
            bare.stderr
        );
    }
    // Twice: the second command goes by the toolchain index the first one wrote.
    for _ in 0..2 {
        let run = exec(&p, &script);
        for marker in ["ODD-DIR-31337", "ODD-KEY-31337"] {
            assert!(!run.stdout.contains(marker), "{marker}: {}", run.stdout);
        }
    }
}

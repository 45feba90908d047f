//! A repository's history cannot be destroyed from inside the sandbox, and the agent can still
//! commit. Each attack first destroys history in a copy of the repository without the sandbox,
//! then leaves it whole through `warden exec`.

use std::path::Path;
use std::process::Command;

use crate::support::{Project, Run, git, sandbox_available};

/// Whether `dir`'s repository still has `id` and its history is sound.
fn holds(dir: &Path, id: &str) -> bool {
    let ok = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    ok(&["cat-file", "-e", &format!("{id}^{{commit}}")])
        && ok(&["rev-parse", "--verify", "refs/heads/main"])
        && ok(&["fsck", "--no-dangling"])
}

/// A project whose repository has two commits on `main`, the first packed, the second loose.
fn repository() -> (Project, String, String) {
    let p = Project::new();
    std::fs::remove_dir_all(p.root().join(".git")).unwrap();
    git(&p.root(), &["init", "-q", "-b", "main"]);
    p.write("a.txt", "a\n");
    git(&p.root(), &["add", "."]);
    git(&p.root(), &["commit", "-qm", "first"]);
    git(&p.root(), &["gc", "-q"]);
    p.write("b.txt", "b\n");
    git(&p.root(), &["add", "."]);
    git(&p.root(), &["commit", "-qm", "second"]);
    let first = git(&p.root(), &["rev-parse", "HEAD~1"]);
    let second = git(&p.root(), &["rev-parse", "HEAD"]);
    (p, first, second)
}

fn exec(p: &Project, script: &str) -> Run {
    p.run(&["exec", "--json", "--", "sh", "-c", script])
}

/// Runs `script` without the sandbox in a copy of the project's repository.
fn unsandboxed(p: &Project, script: &str) -> std::path::PathBuf {
    let copy = p
        .tmp()
        .join(format!("copy-{}", p.tmp().read_dir().unwrap().count()));
    let copied = Command::new("cp")
        .arg("-a")
        .arg(p.root())
        .arg(&copy)
        .status()
        .unwrap();
    assert!(copied.success());
    let ran = Command::new("sh")
        .args(["-c", script])
        .current_dir(&copy)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(ran.status.code().is_some());
    copy
}

#[test]
fn a_command_cannot_destroy_the_history_it_started_with() {
    let (p, first, second) = repository();
    if !sandbox_available(&p) {
        return;
    }
    // A configuration that expires every reflog and prunes at once, where the command sees it.
    let hostile = p.root().join("hostile.gitconfig");
    std::fs::write(
        &hostile,
        "[gc]\n\treflogExpire = now\n\treflogExpireUnreachable = now\n\tpruneExpire = now\n",
    )
    .unwrap();
    let hostile = hostile.display().to_string();
    let attacks = [
        "rm -rf .git".to_owned(),
        "rm -rf .git/objects".to_owned(),
        "rm -rf .git/* .git/.[!.]*".to_owned(),
        "chmod -R u+w .git/objects && for p in .git/objects/pack/*.pack; do : > $p; done"
            .to_owned(),
        format!(
            "git update-ref -d refs/heads/main; git checkout -q --orphan other; \
             GIT_CONFIG_GLOBAL={hostile} git reflog expire --all; \
             GIT_CONFIG_GLOBAL={hostile} git gc -q --prune=now"
        ),
        format!(
            "git -c user.name=a -c user.email=a@example.com commit -q --allow-empty -m x && \
             git reset -q --hard HEAD~2 && GIT_CONFIG_GLOBAL={hostile} git reflog expire --all && \
             GIT_CONFIG_GLOBAL={hostile} git gc -q --prune=now"
        ),
    ];
    for attack in &attacks {
        // Each from the same place: what an attack left checked out (an orphan branch) is
        // the command's to leave, and not history.
        git(&p.root(), &["checkout", "-qf", "main"]);
        let copy = unsandboxed(&p, attack);
        assert!(
            !holds(&copy, &first) || !holds(&copy, &second),
            "the probe must destroy history unsandboxed: {attack}"
        );
        let run = exec(&p, attack);
        assert!(
            holds(&p.root(), &first) && holds(&p.root(), &second),
            "{attack}: {}",
            run.stdout
        );
        assert_eq!(
            git(&p.root(), &["rev-parse", "refs/heads/main"]).len(),
            40,
            "{attack}"
        );
    }
    // Nothing left behind in the repository by what was not taken (a truncated pack).
    for dir in [".git/objects", ".git/objects/pack"] {
        for entry in std::fs::read_dir(p.root().join(dir)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(
                !name.starts_with("tmp_") && !name.starts_with("incoming-"),
                "{dir}/{name}"
            );
        }
    }
    // The branch the last attack moved back by two commits was moved, its old value kept.
    let kept = git(
        &p.root(),
        &[
            "for-each-ref",
            "--format=%(objectname)",
            "refs/warden/kept/",
        ],
    );
    assert!(!kept.is_empty());
    assert!(holds(&p.root(), &second));
}

#[test]
fn the_agents_commits_land_without_running_a_hook_on_the_host() {
    let (p, _, second) = repository();
    if !sandbox_available(&p) {
        return;
    }
    // A hook that git runs on every ref change, writing outside the workspace.
    let marker = p.tmp().join("hook-ran");
    let hook = p.root().join(".git/hooks/reference-transaction");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\n{{ echo ran >> {}; }} 2>/dev/null\nexit 0\n",
            marker.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    git(&p.root(), &["update-ref", "refs/heads/probe", &second]);
    assert!(marker.exists(), "the hook must run outside");
    std::fs::remove_file(&marker).unwrap();
    git(&p.root(), &["update-ref", "-d", "refs/heads/probe"]);
    std::fs::remove_file(&marker).unwrap();

    // Staged in one command, committed in the next, on a new branch.
    let run = exec(&p, "echo c > c.txt && git add c.txt");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(git(&p.root(), &["status", "--porcelain"]), "A  c.txt");
    let run = exec(
        &p,
        "git checkout -q -b feature && \
         git -c user.name=a -c user.email=a@example.com commit -q -m third && \
         git -c user.name=a -c user.email=a@example.com commit -q --amend -m third-amended && \
         git stash list && git log --format=%s",
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        git(&p.root(), &["symbolic-ref", "HEAD"]),
        "refs/heads/feature"
    );
    assert_eq!(
        git(&p.root(), &["log", "--format=%s", "feature"]),
        "third-amended\nsecond\nfirst"
    );
    assert_eq!(git(&p.root(), &["rev-parse", "main"]), second);
    assert!(holds(&p.root(), &second));
    assert!(!marker.exists(), "a hook ran on the host");
    // git's record of the commit is there too.
    assert!(git(&p.root(), &["reflog", "feature"]).contains("third-amended"));
}

#[test]
fn what_a_command_forges_in_git_does_not_come_back() {
    let (p, first, second) = repository();
    if !sandbox_available(&p) {
        return;
    }
    let blob = git(&p.root(), &["rev-parse", "HEAD:a.txt"]);
    // A loose object whose name is not its content's hash, a ref to it, a ref to the existing
    // history's blob dressed as a commit, an alternate object store, a hook and a config change.
    let fake = "0123456789abcdef0123456789abcdef01234567";
    let script = format!(
        "mkdir -p .git/objects/01 && cp .git/objects/$(git rev-parse HEAD | cut -c1-2)/$(git rev-parse HEAD | cut -c3-) .git/objects/01/{rest}; \
         echo {fake} > .git/refs/heads/forged; \
         echo {blob} > .git/refs/heads/blob-branch; \
         echo /etc > .git/objects/info/alternates; \
         echo 'ref: ../../config' > .git/HEAD.new; \
         echo '#!/bin/sh' > .git/hooks/post-checkout; \
         git config core.fsmonitor 'touch /tmp/pwned'; true",
        rest = &fake[2..]
    );
    let run = exec(&p, &script);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let refs = git(&p.root(), &["for-each-ref", "--format=%(refname)"]);
    assert!(!refs.contains("forged"), "{refs}");
    assert!(!p.root().join(".git/objects/info/alternates").exists());
    assert!(!p.root().join(".git/HEAD.new").exists());
    assert!(!p.root().join(".git/hooks/post-checkout").exists());
    assert!(
        !std::fs::read_to_string(p.root().join(".git/config"))
            .unwrap()
            .contains("fsmonitor")
    );
    assert!(holds(&p.root(), &first) && holds(&p.root(), &second));
    let notes = run.json()["sandbox"]["history"].to_string();
    assert!(notes.contains("forged"), "{}", run.stdout);
}

#[test]
fn where_no_overlay_can_be_made_git_is_read_only_and_history_kept() {
    let (p, first, second) = repository();
    if !sandbox_available(&p) {
        return;
    }
    let attack = "rm -rf .git/objects; \
                  git -c user.name=a -c user.email=a@example.com commit -q --allow-empty -m x";
    let copy = unsandboxed(&p, attack);
    assert!(
        !holds(&copy, &first),
        "the probe must destroy history unsandboxed"
    );
    // A temporary directory whose name overlayfs cannot take in its options.
    let tmp = p.tmp().join("a,b");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = p.command();
    cmd.env("TMPDIR", &tmp)
        .args(["exec", "--json", "--", "sh", "-c", attack]);
    let run = crate::support::finish(&cmd.output().unwrap());
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("Read-only file system"),
        "{}",
        run.stdout
    );
    assert!(holds(&p.root(), &first) && holds(&p.root(), &second));
    assert_eq!(git(&p.root(), &["rev-parse", "HEAD"]), second);
}

#[test]
fn a_rebase_left_in_progress_does_not_come_back_to_run_on_the_host() {
    let (p, _, second) = repository();
    if !sandbox_available(&p) {
        return;
    }
    let marker = p.tmp().join("ran-on-the-host");
    // Stops at `exec false`, leaving `exec touch …` to do: git runs it at `--continue`.
    let script = format!(
        "GIT_SEQUENCE_EDITOR=true git -c user.name=a -c user.email=a@example.com \
         rebase -q -i --exec false --exec 'touch {}' HEAD~1; true",
        marker.display()
    );
    let copy = unsandboxed(&p, &script);
    let _ = Command::new("git")
        .args(["rebase", "--continue"])
        .current_dir(&copy)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        marker.exists(),
        "the probe must run at --continue unsandboxed"
    );
    std::fs::remove_file(&marker).unwrap();
    let run = exec(&p, &script);
    assert!(
        run.json()["sandbox"]["history"]
            .to_string()
            .contains("rebase"),
        "{}",
        run.stdout
    );
    let continued = Command::new("git")
        .args(["rebase", "--continue"])
        .current_dir(p.root())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(!continued.status.success());
    assert!(!marker.exists(), "the to-do list ran on the host");
    assert!(holds(&p.root(), &second));
    // The branch is checked out as it was, not the rebase's detached HEAD.
    assert_eq!(git(&p.root(), &["symbolic-ref", "HEAD"]), "refs/heads/main");
    assert_eq!(git(&p.root(), &["rev-parse", "HEAD"]), second);
}

#[test]
fn a_commit_the_user_approves_through_the_bash_tool_lands_and_one_refused_does_not() {
    let (p, _, second) = repository();
    if !sandbox_available(&p) {
        return;
    }
    p.write("d.txt", "d\n");
    let command =
        "git add d.txt && git -c user.name=a -c user.email=a@example.com commit -qm agent";
    let args = serde_json::json!({ "command": command }).to_string();
    let refused = p.run(&["tool", "bash", "--on-ask", "deny", "--args", &args]);
    // It asks; refused, nothing ran.
    assert_eq!(
        refused.json()["error"]["kind"],
        "needs_approval",
        "{}",
        refused.stdout
    );
    assert_eq!(git(&p.root(), &["rev-parse", "main"]), second);
    let run = p.run(&["tool", "bash", "--on-ask", "allow", "--args", &args]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["exitCode"], 0, "{}", run.stdout);
    assert_eq!(
        git(&p.root(), &["log", "--format=%s", "main"]),
        "agent\nsecond\nfirst"
    );
    assert_eq!(git(&p.root(), &["status", "--porcelain"]), "");
}

#[test]
fn what_would_run_on_the_host_later_does_not_come_back_through_git() {
    let (p, first, second) = repository();
    if !sandbox_available(&p) {
        return;
    }
    // `.envrc` cannot be written inside; staged, committed on a branch, stashed, it would be
    // written on the host by a checkout, a reset or a pop. A replace ref would show the first
    // commit as the second.
    let script = format!(
        "b=$(echo 'echo pwned' | git hash-object -w --stdin); \
         git update-index --add --cacheinfo 100644,$b,.envrc && \
         git checkout -q -b evil && \
         git -c user.name=a -c user.email=a@example.com commit -qm evil && \
         git -c user.name=a -c user.email=a@example.com stash -q 2>/dev/null; \
         git replace {first} {second}; true"
    );
    let copy = unsandboxed(&p, &script);
    let ran = Command::new("sh")
        .args(["-c", "git checkout -q -- .envrc && git replace -l"])
        .current_dir(&copy)
        .output()
        .unwrap();
    assert!(
        copy.join(".envrc").exists(),
        "the probe must stage .envrc unsandboxed"
    );
    assert!(String::from_utf8_lossy(&ran.stdout).contains(&first));
    let run = exec(&p, &script);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let notes = run.json()["sandbox"]["history"].to_string();
    assert!(notes.contains("refs/heads/evil"), "{notes}");
    let refs = git(&p.root(), &["for-each-ref", "--format=%(refname)"]);
    assert!(!refs.lines().any(|r| r == "refs/heads/evil"), "{refs}");
    assert!(
        !refs.lines().any(|r| r.starts_with("refs/replace/")),
        "{refs}"
    );
    assert!(!refs.lines().any(|r| r == "refs/stash"), "{refs}");
    assert!(refs.contains("refs/warden/held/"), "{refs}");
    assert_eq!(git(&p.root(), &["symbolic-ref", "HEAD"]), "refs/heads/main");
    let _ = git(&p.root(), &["checkout", "-q", "--", "."]);
    assert!(!p.root().join(".envrc").exists());
    assert!(holds(&p.root(), &first) && holds(&p.root(), &second));

    // A mark that hides a change from `git status` does not come back.
    let run = exec(
        &p,
        "echo EVIL >> a.txt && git update-index --skip-worktree a.txt",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(git(&p.root(), &["status", "--porcelain"]), "M a.txt");
}

#[test]
fn a_hook_passed_through_on_the_way_or_left_in_a_reflog_does_not_come_back() {
    let (p, _, second) = repository();
    if !sandbox_available(&p) {
        return;
    }
    // A fast-forward of `main` through a commit that adds `.envrc` and the next that takes it
    // out again, and reflog lines that send `main@{0}` and `git checkout -` to another commit
    // with `.envrc`.
    let script = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a \
         GIT_COMMITTER_EMAIL=a@b; b=$(echo 'echo pwned' | git hash-object -w --stdin); \
         t=$(git ls-tree HEAD | { cat; printf '100644 blob %s\\t.envrc\\n' $b; } | git mktree); \
         c1=$(git commit-tree -p HEAD -m add $t); \
         c2=$(git commit-tree -p $c1 -m remove $(git rev-parse HEAD^{tree})); \
         e=$(git commit-tree -p HEAD -m other $t); m=$(git rev-parse HEAD); \
         git update-ref refs/heads/main $c2 && \
         printf '%s %s a <a@b> 1796172999 +0000\\tcheckout: moving from %s to main\\n' $m $m $e >> .git/logs/HEAD && \
         printf '%s %s a <a@b> 1796172999 +0000\\tcommit: fix\\n' $c2 $e >> .git/logs/refs/heads/main";
    let copy = unsandboxed(&p, script);
    let probe = Command::new("sh")
        .args(["-c", "git checkout -q HEAD~1 2>/dev/null; test -f .envrc"])
        .current_dir(&copy)
        .status()
        .unwrap();
    assert!(probe.success(), "the probe must reach .envrc unsandboxed");
    let run = exec(&p, script);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.json()["sandbox"]["history"]
            .to_string()
            .contains("refs/heads/main"),
        "{}",
        run.stdout
    );
    assert_eq!(git(&p.root(), &["rev-parse", "main"]), second);
    let reflog = git(&p.root(), &["reflog", "--format=%s", "main"]);
    assert!(!reflog.contains("fix"), "{reflog}");
    let head_log = std::fs::read_to_string(p.root().join(".git/logs/HEAD")).unwrap();
    assert!(!head_log.contains("1796172999"), "{head_log}");
}

//! The mount plan: what each request turns into.
use super::*;

fn request(ws: &Path) -> Request {
    Request {
        program: "true".into(),
        workspace: ws.to_path_buf(),
        home: PathBuf::from("/nonexistent-home"),
        ..Request::default()
    }
}

#[test]
fn system_dirs_are_read_only_and_the_workspace_writable() {
    let ws = tempfile::tempdir().unwrap();
    let plan = Plan::new(&request(ws.path())).unwrap();
    assert!(plan.mounts.contains(&Mount::Bind {
        source: "/usr".into(),
        target: "/usr".into(),
        writable: false
    }));
    assert!(plan.mounts.contains(&Mount::Bind {
        source: ws.path().into(),
        target: ws.path().into(),
        writable: true
    }));
    assert!(plan.mounts.iter().any(
        |m| matches!(m, Mount::Tmpfs { target, writable: true, .. } if target == Path::new("/tmp"))
    ));
    // Parents come before what is mounted inside them.
    let depths: Vec<usize> = plan.mounts.iter().map(|m| depth(target(m))).collect();
    assert!(depths.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn read_only_profile_makes_the_workspace_read_only_and_secrets_are_masked() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("secret.txt"), "s").unwrap();
    let mut req = request(ws.path());
    req.profile = Profile::ReadOnly;
    req.deny_read.push(ws.path().join("secret.txt"));
    let plan = Plan::new(&req).unwrap();
    assert!(plan.mounts.contains(&Mount::Bind {
        source: ws.path().into(),
        target: ws.path().into(),
        writable: false
    }));
    assert!(plan.mounts.contains(&Mount::MaskFile {
        target: ws.path().join("secret.txt")
    }));
    if Path::new("/etc/shadow").exists() {
        assert!(plan.mounts.contains(&Mount::MaskFile {
            target: "/etc/shadow".into()
        }));
    }
}

/// Masks `.env` by name; its credential paths are given; deciding `trigger` moves
/// `from` to `to` and back, `moves` times at most (another command's `mv`, while the walk goes
/// on).
#[derive(Debug, Default)]
struct Rule {
    credentials: Vec<(PathBuf, crate::masking::MaskDecision)>,
    from: PathBuf,
    to: PathBuf,
    moves: std::sync::atomic::AtomicUsize,
}

impl crate::masking::Masking for Rule {
    fn decide(
        &self,
        path: &Path,
        _: bool,
        _: &mut dyn FnMut() -> Option<Vec<u8>>,
    ) -> crate::masking::MaskDecision {
        use std::sync::atomic::Ordering;
        let name = path.file_name().unwrap_or_default();
        if name == "trigger" && self.moves.load(Ordering::SeqCst) > 0 {
            self.moves.fetch_sub(1, Ordering::SeqCst);
            if self.from.exists() {
                std::fs::rename(&self.from, &self.to).unwrap();
            } else {
                std::fs::rename(&self.to, &self.from).unwrap();
            }
        }
        if name == ".env" {
            crate::masking::MaskDecision::Masked
        } else {
            crate::masking::MaskDecision::Readable
        }
    }

    fn credential_paths(&self) -> Vec<(PathBuf, crate::masking::MaskDecision)> {
        self.credentials.clone()
    }
}

fn with_rule(req: &mut Request, rule: Rule) {
    req.mask = crate::masking::MaskRule::new(std::sync::Arc::new(rule));
}

#[test]
fn a_secret_is_masked_wherever_a_bind_shows_it_and_credential_directories_hide_whole() {
    use crate::masking::MaskDecision::{Masked, Unmasked};
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let away = tempfile::tempdir().unwrap();
    std::fs::write(ws.join(".env"), "s").unwrap();
    std::fs::create_dir(ws.join("creds")).unwrap();
    std::fs::write(ws.join("creds/.env"), "s").unwrap();
    std::fs::write(ws.join("token"), "t").unwrap();
    std::fs::write(away.path().join("token"), "t").unwrap();
    let mut req = request(ws);
    // The workspace shown a second time, elsewhere.
    req.mounts
        .push((ws.to_path_buf(), PathBuf::from("/mnt/ws"), false));
    let credentials = vec![
        (ws.join("creds"), Masked),
        (ws.join("token"), Unmasked),
        // Not visible: nothing to do.
        (away.path().join("token"), Masked),
    ];
    with_rule(
        &mut req,
        Rule {
            credentials,
            ..Rule::default()
        },
    );
    let plan = Plan::new(&req).unwrap();
    for at in [ws.to_path_buf(), PathBuf::from("/mnt/ws")] {
        assert!(
            plan.mounts.contains(&Mount::MaskFile {
                target: at.join(".env")
            }),
            "{at:?}: {:#?}",
            plan.mounts
        );
        assert!(plan.mounts.contains(&Mount::Tmpfs {
            target: at.join("creds"),
            writable: false,
            size_mb: 1
        }));
        // What the hidden directory holds needs no mask of its own.
        assert!(!plan.mounts.contains(&Mount::MaskFile {
            target: at.join("creds/.env")
        }));
    }
    assert!(
        !plan
            .mounts
            .iter()
            .any(|m| target(m).starts_with(away.path()))
    );
    assert_eq!(plan.unmasked, vec![ws.join("token")]);
}

#[test]
fn a_directory_moved_during_the_walk_is_walked_again_where_it_went() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    std::fs::write(ws.join("trigger"), "").unwrap();
    std::fs::create_dir(ws.join("a")).unwrap();
    std::fs::write(ws.join("a/.env"), "s").unwrap();
    let plan_with = |moves: usize| {
        let mut req = request(ws);
        let rule = Rule {
            from: ws.join("a"),
            to: ws.join("z"),
            moves: std::sync::atomic::AtomicUsize::new(moves),
            ..Rule::default()
        };
        with_rule(&mut req, rule);
        Plan::new(&req)
    };
    // Moved once, after the walk listed it and before it looked inside: the walk starts
    // over and finds the secret where it went.
    let plan = plan_with(1).unwrap();
    assert!(ws.join("z/.env").exists());
    assert!(plan.mounts.contains(&Mount::MaskFile {
        target: ws.join("z/.env")
    }));
    // Moving on every walk: nothing runs.
    let err = plan_with(usize::MAX).unwrap_err();
    assert!(err.0.contains("kept moving"), "{err}");
}

#[test]
fn an_overlay_is_refused_where_another_writable_root_would_write_its_lower_layer() {
    let dir = tempfile::tempdir().unwrap();
    let (lower, layer) = (dir.path().join("lower"), dir.path().join("layer"));
    for d in [lower.join("sub"), layer.join("upper"), layer.join("work")] {
        std::fs::create_dir_all(d).unwrap();
    }
    let overlay = Overlay {
        target: PathBuf::from("/workspace"),
        upper: layer.join("upper"),
        work: layer.join("work"),
    };
    let with = |mounts: Vec<(PathBuf, PathBuf, bool)>| Request {
        program: "true".into(),
        home: PathBuf::from("/nonexistent-home"),
        cwd: Some(PathBuf::from("/workspace")),
        mounts,
        overlays: vec![overlay.clone()],
        ..Request::default()
    };
    let own = (lower.clone(), PathBuf::from("/workspace"), true);
    let plan = Plan::new(&with(vec![own.clone()])).unwrap();
    assert_eq!(plan.overlays, vec![overlay.clone()]);
    // The lower layer, or part of it, writable at another place.
    for other in [lower.clone(), lower.join("sub")] {
        let err = Plan::new(&with(vec![own.clone(), (other, "/other".into(), true)]))
            .unwrap_err()
            .0;
        assert!(err.contains("lower layer writable"), "{err}");
    }
    // Read-only there, it is only read.
    Plan::new(&with(vec![
        own.clone(),
        (lower.clone(), "/ro".into(), false),
    ]))
    .unwrap();
    // Another writable root around it or inside it.
    for at in ["/", "/workspace/cache"] {
        let other = (layer.join("work"), PathBuf::from(at), true);
        let err = Plan::new(&with(vec![own.clone(), other])).unwrap_err().0;
        assert!(err.contains("another writable root"), "{at}: {err}");
    }
    // No writable mount of its own: nothing to show through it.
    let ro = (lower.clone(), PathBuf::from("/workspace"), false);
    let err = Plan::new(&with(vec![ro])).unwrap_err().0;
    assert!(err.contains("writable mount of its own"), "{err}");
}

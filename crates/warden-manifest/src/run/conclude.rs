//! The end of a run (SPEC M6–M8): its status from the commands it ran, the declared artifacts
//! and the workspace's patch collected, the proxy stopped and the capabilities revoked, every
//! directory destroyed and checked (or the run quarantined), the lease closed and the receipt
//! written.

use super::*;

impl Prepared {
    /// Ends the run: counts, artifacts and the patch, capabilities revoked, every directory
    /// destroyed and checked (or the run quarantined), the receipt written.
    pub fn finish(mut self) -> Result<Finished, RunError> {
        self.conclude()
    }

    /// [`Prepared::finish`], also from `Drop`: once only.
    pub(super) fn conclude(&mut self) -> Result<Finished, RunError> {
        if self.concluded {
            return Err(RunError::FinishedAlready);
        }
        self.concluded = true;
        let m = self.parsed.manifest.clone();
        self.tally();
        let secrets = self
            .capabilities
            .as_ref()
            .map(|c| c.secrets())
            .unwrap_or_default();
        self.collect_artifacts(&m, &secrets);
        // The proxy goes first: nothing reaches out once the run is over.
        self.egress = None;
        let cleanup_started = Instant::now();
        if let Some(caps) = &self.capabilities {
            caps.revoke();
            self.receipt.denied.capability_denials = caps.denials();
        }
        self.receipt.cleanup.capabilities_revoked = true;
        // Every sandbox's processes end with it; none outlives its command.
        self.receipt.cleanup.processes_terminated = true;
        self.collect_patch(&secrets);
        let destroyed = self.destroy(&m);
        let retain = std::time::Duration::from_secs(m.cleanup.retain_artifacts_hours * 3600);
        let until = SystemTime::now() + retain;
        let receipt = &mut self.receipt;
        receipt.cleanup.artifacts_retained_until =
            Some(humantime::format_rfc3339_seconds(until).to_string());
        receipt.timings.cleanup_ms = elapsed_ms(cleanup_started);
        receipt.timings.finished_at =
            humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        self.close_lease(destroyed, retain);
        self.write_receipt()
    }

    /// The run's time, the proxy's refusals, and the status the commands give it.
    fn tally(&mut self) {
        let receipt = &mut self.receipt;
        receipt.timings.run_ms = elapsed_ms(self.run_started);
        if let Some(e) = &self.egress {
            let counts = e.proxy.counts();
            receipt.denied.network_denials = counts.denied;
            receipt.denied.budget_denials += counts.over_budget;
        }
        let foreground: Vec<&CommandRun> =
            receipt.commands.iter().filter(|c| !c.background).collect();
        if let Some(last) = foreground.last() {
            receipt.exit_code = Some(last.exit_code);
            receipt.status = if foreground.iter().any(|c| c.timed_out) {
                Status::TimedOut
            } else if receipt.denied.budget_denials > 0 {
                Status::BudgetExceeded
            } else if foreground.iter().all(|c| c.exit_code == 0) {
                Status::Succeeded
            } else {
                Status::Failed
            };
        }
    }

    /// The declared artifacts, and in report-only mode what the run used against what the
    /// manifest declared: only when something ran.
    fn collect_artifacts(&mut self, m: &crate::schema::Manifest, secrets: &[String]) {
        let receipt = &mut self.receipt;
        let Some(setup) = self.setup.as_ref().filter(|_| !receipt.commands.is_empty()) else {
            return;
        };
        collect::artifacts(
            m,
            &setup.mounts,
            &self.in_sized,
            &self.collected,
            &self.dir,
            secrets,
            receipt,
        );
        if self.report_only
            && let Some(outcome) = &self.last
        {
            let records = lock(&self.observed).clone();
            let report = report::build(m, setup, &records, outcome, self.began);
            receipt.denied.filesystem_denials += report.undeclared_writes.len() as u64;
            receipt.report = Some(report);
        }
    }

    /// The workspace's patch against the pinned commit: only when something ran.
    fn collect_patch(&mut self, secrets: &[String]) {
        let receipt = &mut self.receipt;
        let Some(setup) = self.setup.as_ref().filter(|_| !receipt.commands.is_empty()) else {
            return;
        };
        let workspace = setup.bind(Alias::Workspace).filter(|b| b.layer.is_some());
        let from = match (&self.base, workspace, &setup.repo) {
            (Some(base), Some(bind), _) => {
                collect::PatchFrom::Overlay(base, &self.helper, &bind.target)
            }
            (_, None, Some(repo)) => collect::PatchFrom::Worktree(repo),
            _ => return,
        };
        collect::patch(
            from,
            &setup.resolved,
            &self.parsed,
            &self.dir,
            secrets,
            receipt,
        );
    }

    /// Destroys what the run made (the set-up's, or the lease's when the set-up stopped
    /// half-way), the workspace kept only where the manifest says so.
    fn destroy(&mut self, m: &crate::schema::Manifest) -> layout::Destroyed {
        let (repo, resolved) = if let Some(s) = &self.setup {
            (s.repo.clone(), s.resolved.clone())
        } else {
            let l = lock(&self.lease);
            (
                l.repository.as_deref().and_then(|r| Repo::open(r).ok()),
                l.resolved.clone(),
            )
        };
        let keep_workspace = !m.cleanup.delete_workspace;
        let to_destroy: Vec<Resolved> = resolved
            .into_iter()
            .filter(|r| !(keep_workspace && r.alias == Alias::Workspace))
            .collect();
        let destroyed = layout::destroy(
            repo.as_ref(),
            &to_destroy,
            &[
                ("collected", self.dir.collected()),
                ("git directory", self.dir.root.join("gitdir")),
            ],
        );
        let receipt = &mut self.receipt;
        receipt.cleanup.workspace_destroyed = destroyed.destroyed && !keep_workspace;
        receipt.cleanup.errors.clone_from(&destroyed.errors);
        if keep_workspace {
            receipt
                .warnings
                .push("cleanup.delete_workspace is false: the workspace is kept".to_owned());
        }
        destroyed
    }

    /// The lease's last word: finished, or quarantined with what is left.
    fn close_lease(&mut self, destroyed: layout::Destroyed, retain: std::time::Duration) {
        self.heartbeat = None;
        let mut l = lock(&self.lease);
        l.heartbeat_ms = lease::now_ms();
        l.artifacts_until_ms =
            Some(lease::now_ms() + u64::try_from(retain.as_millis()).unwrap_or(u64::MAX));
        if destroyed.destroyed {
            l.status = lease::LeaseStatus::Finished;
        } else {
            l.status = lease::LeaseStatus::Quarantined;
            l.quarantine = destroyed.errors;
            self.receipt.status = Status::Quarantined;
        }
        let _ = l.write(&self.dir.root);
    }

    /// `receipt.json` in the run's directory.
    fn write_receipt(&self) -> Result<Finished, RunError> {
        let text = serde_json::to_string_pretty(&self.receipt)
            .map_err(|e| RunError::Receipt(e.to_string()))?;
        let path = self.dir.root.join("receipt.json");
        std::fs::write(&path, text + "\n")
            .map_err(|e| RunError::Receipt(format!("{}: {e}", path.display())))?;
        Ok(Finished {
            receipt: self.receipt.clone(),
            dir: self.dir.root.clone(),
            stdout: Vec::new(),
            stderr: Vec::new(),
        })
    }
}

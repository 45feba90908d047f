//! Running calls: validate, ask the policy engine, run, record — every call, whatever its outcome.

use std::time::Instant;

use serde_json::Value;
use warden_policy::{Action, Engine};
use warden_protocol::{
    Decision, DecisionKind, PolicyLayer, SessionId, ToolError, ToolErrorKind, ToolEvent, ToolName,
    ToolResult, ToolStatus, WorkingSet,
};
use warden_trace::{TraceError, TraceStore};

use crate::{Registry, ToolContext};

/// What to answer when the policy asks for approval and no person is there to ask.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnAsk {
    /// Refuse (the default).
    #[default]
    Deny,
    /// Approve. Never applies to a deny or to an escalation: a flag cannot widen the sandbox.
    Allow,
}

/// Runs tool calls for one session and records every call, whatever its outcome.
pub struct ToolRunner<'a> {
    registry: &'a Registry,
    ctx: &'a ToolContext,
    policy: &'a Engine,
    on_ask: OnAsk,
    trace: Option<&'a TraceStore>,
    session: SessionId,
    sandbox_profile: String,
    seq: u64,
    working_set: WorkingSet,
}

impl<'a> ToolRunner<'a> {
    /// A runner for `session`, deciding every call with `policy`. With a trace store, the next
    /// sequence number continues the session's existing events.
    pub fn new(
        registry: &'a Registry,
        ctx: &'a ToolContext,
        policy: &'a Engine,
        trace: Option<&'a TraceStore>,
        session: SessionId,
    ) -> Result<Self, TraceError> {
        let seq = match trace {
            Some(store) => {
                // Calls of one session share what it has read, whichever process runs them.
                for (path, sha256, len) in store.reads(&session)? {
                    ctx.reads.record(
                        path,
                        crate::ReadRecord {
                            sha256,
                            len,
                            modified: None,
                        },
                    );
                }
                store.next_seq(&session)?
            }
            None => 1,
        };
        Ok(Self {
            registry,
            ctx,
            policy,
            on_ask: OnAsk::Deny,
            trace,
            session,
            sandbox_profile: "none".to_owned(),
            seq,
            working_set: WorkingSet::default(),
        })
    }

    /// The answer to approval requests. Default [`OnAsk::Deny`].
    #[must_use]
    pub fn with_on_ask(mut self, on_ask: OnAsk) -> Self {
        self.on_ask = on_ask;
        self
    }

    /// The sandbox profile recorded with each event. Default `none` (the tools run in-process).
    #[must_use]
    pub fn with_sandbox_profile(mut self, profile: impl Into<String>) -> Self {
        self.sandbox_profile = profile.into();
        self
    }

    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// What this runner's calls actually read and changed (SPEC S1).
    pub fn working_set(&self) -> &WorkingSet {
        &self.working_set
    }

    fn note(&mut self, name: &str, output: &Value) {
        let path = |v: &Value| v.get("path").and_then(Value::as_str).map(str::to_owned);
        match name {
            "readFile" => self.working_set.files_read.extend(path(output)),
            "writeFile" | "editFile" if output.get("applied") != Some(&Value::Bool(false)) => {
                self.working_set.files_edited.extend(path(output));
            }
            "apply_patch" => {
                let files = output
                    .get("files")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                self.working_set
                    .files_edited
                    .extend(files.iter().filter_map(path));
            }
            _ => {}
        }
    }

    /// Validates, decides, runs and records one call. The tool's own failure and a refusal are
    /// in the returned result; only a failure to record is an `Err`, so nothing runs unrecorded
    /// without the caller knowing.
    pub fn run(&mut self, name: &str, args: Value) -> Result<ToolResult, TraceError> {
        let checked = self.check(name, args);
        let result = self.executor().execute(&checked);
        self.record(checked, &result)?;
        Ok(result)
    }

    /// Validates and decides one call, without running it. The caller may ask a person about
    /// it ([`Checked::approve`]), then runs it with an [`Executor`] and hands it to
    /// [`ToolRunner::record`].
    pub fn check(&self, name: &str, args: Value) -> Checked {
        let started = Instant::now();
        let tool: ToolName = name.parse().unwrap_or_else(|_| unknown_tool_name());
        let bytes_in = args.to_string().len() as u64;
        let kept_args = recorded(&args);
        // Invalid arguments go back to the model before the policy is asked anything.
        let (invalid, decision) = match self.registry.validate(name, &args) {
            Err(err) => (Some(err), Decision::unchecked()),
            Ok(()) => (None, self.decide(name, &args)),
        };
        Checked {
            name: name.to_owned(),
            tool,
            args,
            kept_args,
            bytes_in,
            started,
            invalid,
            decision,
            network_once: false,
        }
    }

    /// What runs calls: shareable between threads, so that read-only calls can run at once.
    pub fn executor(&self) -> Executor<'a> {
        Executor {
            registry: self.registry,
            ctx: self.ctx,
        }
    }

    /// The policy engine deciding this runner's calls.
    pub fn policy(&self) -> &'a Engine {
        self.policy
    }

    /// Records a call that was checked and run (or refused), and notes what it did in the
    /// working set. Calls are recorded in the order the model made them.
    pub fn record(&mut self, checked: Checked, result: &ToolResult) -> Result<(), TraceError> {
        let duration_ms = u64::try_from(checked.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if let Some(output) = &result.output {
            self.note(&checked.name, output);
        }
        // The sandbox a command ran in, as it was (not as configured).
        let ran_in = self
            .ctx
            .last_sandbox
            .lock()
            .ok()
            .and_then(|mut last| last.take());
        if let Some(store) = self.trace {
            let bytes_out = result.output.as_ref().map_or(0, |o| o.to_string().len());
            let mut summary = result
                .output
                .as_ref()
                .and_then(|o| summary(&checked.name, o));
            let sandbox_profile = match ran_in {
                Some((profile, sandbox)) => {
                    if let Some(Value::Object(map)) = summary.as_mut() {
                        map.insert("sandbox".to_owned(), sandbox);
                    }
                    profile
                }
                None => self.sandbox_profile.clone(),
            };
            let event = ToolEvent {
                session_id: self.session.clone(),
                seq: self.seq,
                tool: checked.tool,
                bytes_in: checked.bytes_in,
                arguments: checked.kept_args,
                decision: checked.decision,
                sandbox_profile,
                status: result.status,
                error: result.error.as_ref().map(|e| e.message.clone()),
                duration_ms,
                timestamp: warden_trace::now_rfc3339(),
                bytes_out: bytes_out as u64,
                summary,
            };
            store.record(&event)?;
            // This call is the turn: what it changed is kept for `warden undo`.
            let changes = self.ctx.changes.take();
            if !changes.is_empty() {
                store.record_changes(&self.session, self.seq, &changes, &event.timestamp)?;
            }
            let reads = self.ctx.reads.all();
            if !reads.is_empty() {
                store.record_reads(&self.session, &reads)?;
            }
            self.seq += 1;
        }
        Ok(())
    }

    /// The policy's decision, with a non-interactive approval applied where it may be.
    fn decide(&self, name: &str, args: &Value) -> Decision {
        let mut decision = if name == "apply_patch" {
            // Every file the patch touches is an edit; the strictest decision stands for all.
            let patch = args
                .get("patch")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let mut paths = crate::patch::paths(patch);
            if paths.is_empty() {
                paths.push(".".to_owned());
            }
            paths
                .into_iter()
                .map(|p| self.policy.check(&Action::Edit(p)).decision)
                .max_by_key(|d| d.decision.strictness())
                .unwrap_or_else(Decision::unchecked)
        } else {
            self.policy.check(&action(name, args)).decision
        };
        // A tool whose definition changed since it was pinned is put to a person, whatever the
        // rules say; a refusal stays a refusal.
        if let Some(why) = self.registry.held(name) {
            match decision.decision {
                DecisionKind::Allow => {
                    decision.decision = DecisionKind::RequireApproval;
                    decision.reason = why;
                    decision.layer = PolicyLayer::Approval;
                }
                DecisionKind::RequireApproval => {
                    decision.reason = format!("{}; and {why}", decision.reason);
                }
                _ => {}
            }
        }
        // Only a plain approval: a rewrite is never run silently, and an escalation (a wider
        // sandbox) is never granted by a flag.
        if decision.decision == DecisionKind::RequireApproval && self.on_ask == OnAsk::Allow {
            decision.reason = format!(
                "approved non-interactively (--on-ask allow): {}",
                decision.reason
            );
            decision.decision = DecisionKind::Allow;
            decision.layer = PolicyLayer::Approval;
        }
        decision
    }
}

/// A call validated and decided, not yet run.
#[derive(Debug, Clone)]
pub struct Checked {
    pub name: String,
    tool: ToolName,
    pub args: Value,
    kept_args: Value,
    bytes_in: u64,
    started: Instant,
    /// Why the arguments were refused before the policy was asked.
    pub invalid: Option<ToolError>,
    pub decision: Decision,
    /// An approved escalation: this one command runs with the network on.
    pub network_once: bool,
}

impl Checked {
    /// A person approved it: it runs, and the trace says who decided.
    pub fn approve(&mut self, how: &str) {
        self.decision.reason = format!("{how}: {}", self.decision.reason);
        self.decision.decision = DecisionKind::Allow;
        self.decision.layer = PolicyLayer::Approval;
    }

    /// A person refused it.
    pub fn refuse(&mut self, how: &str) {
        self.decision.reason = format!("{how}: {}", self.decision.reason);
        self.decision.decision = DecisionKind::Deny;
        self.decision.layer = PolicyLayer::Approval;
    }

    /// Whether the policy wants a person asked before it runs.
    pub fn needs_approval(&self) -> bool {
        self.invalid.is_none()
            && matches!(
                self.decision.decision,
                DecisionKind::RequireApproval
                    | DecisionKind::Rewrite
                    | DecisionKind::RequireEscalation
            )
    }
}

/// Runs checked calls; `Sync`, so read-only calls of one turn can run at once.
#[derive(Clone, Copy)]
pub struct Executor<'a> {
    registry: &'a Registry,
    ctx: &'a ToolContext,
}

impl Executor<'_> {
    /// Runs the call if its decision allows it; otherwise says why it did not run.
    pub fn execute(&self, checked: &Checked) -> ToolResult {
        let tool = checked.tool.clone();
        if let Some(err) = &checked.invalid {
            return failed(&tool, err.clone());
        }
        let decision = &checked.decision;
        if decision.decision == DecisionKind::Allow {
            let once = &self.ctx.network_once;
            if checked.network_once {
                once.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            let called = self
                .registry
                .call(self.ctx, &checked.name, checked.args.clone());
            if checked.network_once {
                once.store(false, std::sync::atomic::Ordering::SeqCst);
            }
            return match called {
                Ok(output) => ToolResult {
                    tool,
                    status: ToolStatus::Ok,
                    output: Some(output),
                    error: None,
                },
                Err(err) => failed(&tool, err),
            };
        }
        let kind = if decision.decision == DecisionKind::Deny {
            ToolErrorKind::PolicyDenied
        } else {
            ToolErrorKind::NeedsApproval
        };
        let mut err = ToolError::new(
            kind,
            format!("{}: {}", decision.decision.as_str(), decision.reason),
        );
        if let Some(rewrite) = &decision.rewrite {
            err.message = format!(
                "{} (suggested instead: {} {:?} — {})",
                err.message, rewrite.tool, rewrite.target, rewrite.reason
            );
        }
        ToolResult {
            tool,
            status: ToolStatus::Denied,
            output: None,
            error: Some(err),
        }
    }
}

/// What the trace keeps of a result: where and how much, never contents.
fn summary(name: &str, output: &Value) -> Option<Value> {
    let keys: &[&str] = match name {
        "readFile" => &["path", "range", "truncated", "unmaskedSecret"],
        "glob" => &["totalMatches", "truncated"],
        "grep" => &["totalMatches", "truncated", "unmaskedSecrets"],
        "bash" => &[
            "exitCode",
            "durationMs",
            "truncated",
            "timedOut",
            "unmaskedSecrets",
        ],
        "writeFile" => &["path", "created", "bytesWritten", "diffSummary"],
        "editFile" => &["path", "applied", "changedRanges", "diffSummary"],
        "apply_patch" => &["files"],
        _ => return None,
    };
    let object = output.as_object()?;
    let mut kept: serde_json::Map<String, Value> = keys
        .iter()
        .filter_map(|k| object.get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect();
    // A command's first lines, for a reviewer (`warden audit`): a few, short, secrets redacted.
    if name == "bash" {
        let head: Vec<String> = ["stdoutSummary", "stderrSummary"]
            .iter()
            .filter_map(|k| object.get(*k).and_then(Value::as_str))
            .flat_map(str::lines)
            .filter(|line| !line.trim().is_empty())
            .take(OUTPUT_HEAD_LINES)
            .map(|line| warden_trace::redact(&warden_protocol::short(line, 160)).into_owned())
            .collect();
        if !head.is_empty() {
            kept.insert("outputHead".to_owned(), Value::String(head.join("\n")));
        }
    }
    Some(Value::Object(kept))
}

/// How many lines of a command's output the trace keeps.
const OUTPUT_HEAD_LINES: usize = 3;

/// The arguments as the trace keeps them: file contents are replaced by their size, so the
/// trace holds what changed where, not the text (the diff stats are in the result).
fn recorded(args: &Value) -> Value {
    let mut kept = args.clone();
    if let Some(object) = kept.as_object_mut() {
        for key in ["content", "oldString", "newString", "newText", "patch"] {
            if let Some(text) = object.get(key).and_then(Value::as_str) {
                let size = format!("<{} bytes>", text.len());
                object.insert(key.to_owned(), Value::String(size));
            }
        }
    }
    kept
}

/// What the policy is asked about a call of a built-in tool.
fn action(name: &str, args: &Value) -> Action {
    let path = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .unwrap_or(".")
            .to_owned()
    };
    match name {
        "readFile" => Action::Read(path("path")),
        "glob" => Action::Glob(path("path")),
        "grep" => Action::Grep(path("path")),
        "writeFile" => Action::Write(path("path")),
        "editFile" => Action::Edit(path("path")),
        "webFetch" => Action::Fetch(
            args.get("url")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ),
        "bash" => Action::Bash(
            args.get("command")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ),
        other => Action::Tool {
            name: other.to_owned(),
            target: args.to_string(),
        },
    }
}

/// A tool error as a result: a refusal of the tool's own guards (roots, protected files) is
/// `denied`, anything else `error`.
fn failed(tool: &ToolName, err: ToolError) -> ToolResult {
    let refused = matches!(
        err.kind,
        ToolErrorKind::OutsideRoots | ToolErrorKind::SymlinkEscape | ToolErrorKind::DeniedPath
    );
    let status = if refused {
        ToolStatus::Denied
    } else {
        ToolStatus::Error
    };
    ToolResult {
        tool: tool.clone(),
        status,
        output: None,
        error: Some(err),
    }
}

fn unknown_tool_name() -> ToolName {
    // A constant that satisfies the name check; recorded when the model used an invalid name.
    "unknown"
        .parse()
        .unwrap_or_else(|_| unreachable!("\"unknown\" is a valid tool name"))
}

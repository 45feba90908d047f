//! `[hooks]` resolved: each hook with its event, its defaults and the file it came from.

use std::path::PathBuf;

use serde::Serialize;

/// A point of a session where hooks run, named as Claude Code names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PermissionRequest,
    PostToolUse,
    PostToolUseFailure,
    PreCompact,
    Notification,
    Stop,
    SessionEnd,
}

impl HookEvent {
    pub const ALL: [HookEvent; 10] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PreCompact,
        HookEvent::Notification,
        HookEvent::Stop,
        HookEvent::SessionEnd,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
            HookEvent::Stop => "Stop",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    /// The event named `name` (as Claude Code spells it).
    pub fn named(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether its hooks are about one tool call (their matcher is over tool names).
    pub fn is_tool_event(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PermissionRequest
                | HookEvent::PostToolUse
                | HookEvent::PostToolUseFailure
        )
    }
}

/// What a hook's failure means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOnError {
    /// The call is refused (the session goes on).
    Deny,
    /// Reported; the session goes on as if the hook had said nothing.
    Ignore,
}

/// One hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hook {
    /// Serialised as the key its list is under.
    #[serde(skip)]
    pub event: HookEvent,
    /// An anchored regular expression, checked when loaded; `None` matches every one.
    pub matcher: Option<String>,
    pub command: String,
    pub timeout_seconds: u64,
    pub on_error: HookOnError,
    /// Variables passed from warden's environment.
    pub env: Vec<String>,
    /// The settings file it came from (`None`: the command line).
    pub source: Option<PathBuf>,
}

/// `[hooks]`: every hook, in the order they run (higher layers first). Serialised as the
/// settings write it: a list per event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hooks {
    pub hooks: Vec<Hook>,
}

impl Serialize for Hooks {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut by_event: std::collections::BTreeMap<&str, Vec<&Hook>> =
            std::collections::BTreeMap::new();
        for hook in &self.hooks {
            by_event.entry(hook.event.as_str()).or_default().push(hook);
        }
        by_event.serialize(serializer)
    }
}

impl Hooks {
    /// The hooks of `event`.
    pub fn of(&self, event: HookEvent) -> impl Iterator<Item = &Hook> {
        self.hooks.iter().filter(move |h| h.event == event)
    }
}

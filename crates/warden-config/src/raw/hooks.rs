//! `[hooks]`: commands warden runs at points of a session, in Claude Code's shapes.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::merge::merge_struct;

/// `[hooks]`: commands run at points of a session, each event a list of `[[hooks.EVENT]]`
/// tables. A hook reads the event as JSON on its standard input and answers with its exit code
/// and, optionally, JSON on its standard output — the shapes of Claude Code's hooks, so its
/// hook scripts run unchanged (`docs/hooks.md`). Hooks of every layer run; a project's only
/// once it is trusted. A hook can narrow what the policy allows, never widen it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHooks {
    /// When a session starts or resumes (matcher: `startup` or `resume`). Default none.
    #[serde(rename = "SessionStart")]
    pub session_start: Option<Vec<RawHook>>,
    /// When the person's prompt is about to reach the model; may block it or add context. Default none.
    #[serde(rename = "UserPromptSubmit")]
    pub user_prompt_submit: Option<Vec<RawHook>>,
    /// Before a tool call is decided (matcher: the tool's name); may deny it, ask about it,
    /// answer a question the policy would ask, or change its arguments. Default none.
    #[serde(rename = "PreToolUse")]
    pub pre_tool_use: Option<Vec<RawHook>>,
    /// When a person is about to be asked to approve a call; may answer for them. Default none.
    #[serde(rename = "PermissionRequest")]
    pub permission_request: Option<Vec<RawHook>>,
    /// After a tool call succeeded; may tell the model something about it. Default none.
    #[serde(rename = "PostToolUse")]
    pub post_tool_use: Option<Vec<RawHook>>,
    /// After a tool call failed or was refused. Default none.
    #[serde(rename = "PostToolUseFailure")]
    pub post_tool_use_failure: Option<Vec<RawHook>>,
    /// Before the conversation is summarised (matcher: `manual` or `auto`). Default none.
    #[serde(rename = "PreCompact")]
    pub pre_compact: Option<Vec<RawHook>>,
    /// When warden waits for the person (matcher: `permission_prompt`). Default none.
    #[serde(rename = "Notification")]
    pub notification: Option<Vec<RawHook>>,
    /// When the model is done; may send it back to work with a reason. Default none.
    #[serde(rename = "Stop")]
    pub stop: Option<Vec<RawHook>>,
    /// When a run ends (matcher: the reason). Default none.
    #[serde(rename = "SessionEnd")]
    pub session_end: Option<Vec<RawHook>>,
}

merge_struct!(RawHooks {
    session_start,
    user_prompt_submit,
    pre_tool_use,
    permission_request,
    post_tool_use,
    post_tool_use_failure,
    pre_compact,
    notification,
    stop,
    session_end,
});

impl RawHooks {
    /// Every event's hooks, by its name.
    pub fn events_mut(&mut self) -> [(&'static str, &mut Option<Vec<RawHook>>); 10] {
        [
            ("SessionStart", &mut self.session_start),
            ("UserPromptSubmit", &mut self.user_prompt_submit),
            ("PreToolUse", &mut self.pre_tool_use),
            ("PermissionRequest", &mut self.permission_request),
            ("PostToolUse", &mut self.post_tool_use),
            ("PostToolUseFailure", &mut self.post_tool_use_failure),
            ("PreCompact", &mut self.pre_compact),
            ("Notification", &mut self.notification),
            ("Stop", &mut self.stop),
            ("SessionEnd", &mut self.session_end),
        ]
    }
}

/// `[[hooks.EVENT]]`: one hook.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct RawHook {
    /// Which calls it runs for: a regular expression matched against the whole tool name, as
    /// Claude Code's (`Bash`, `Edit|Write`, `mcp__github__.*`); Claude Code's names and
    /// warden's both match (`Bash` and `bash`). For events without a tool, matched against the
    /// event's source, trigger or reason. `*` or empty: every one. Default every one.
    pub matcher: Option<String>,
    /// The command, run by `sh -c` as you (not in the sandbox), in the session's working
    /// directory. Required.
    pub command: String,
    /// Seconds it may run before it is killed (with everything it started). Must be greater
    /// than zero. Default `60`.
    pub timeout_seconds: Option<u64>,
    /// What a failure (an exit code other than 0 and 2, a timeout, output that is not the JSON
    /// it starts to be) means: `"deny"` (the call is refused) or `"ignore"` (reported, the
    /// session goes on). Default `"deny"` for `PreToolUse` and `PermissionRequest`, `"ignore"`
    /// for the others.
    pub on_error: Option<String>,
    /// Names of variables passed from warden's environment to the hook's. Its environment
    /// holds only `PATH`, `HOME`, `USER`, the locale, `CLAUDE_PROJECT_DIR`,
    /// `WARDEN_PROJECT_DIR` and these. Default none.
    pub env: Option<Vec<String>>,
    /// The file it was read from (set by the loader).
    #[serde(skip)]
    #[schemars(skip)]
    pub source: Option<PathBuf>,
}

//! What an approval can remember of a file tool's call, and whether a rule is broader than any
//! approval or granted permission may be.

use super::Engine;
use crate::error::PolicyError;
use crate::rules::{Rule, RuleKind};

impl Engine {
    /// What an approval of a file tool's call on `raw` can remember: `Read(…)`, `Edit(…)` or
    /// `Write(…)` (`tool`) of exactly that path, anchored at the project root, the home directory
    /// or `/`, and its directory as the wider second choice, refused where that would cover a
    /// top-level directory, the home directory, the workspace whole or what holds it.
    pub fn remembered_path(&self, tool: &str, raw: &str) -> crate::approvals::Remembered {
        let target = self.target(raw, &self.anchors.cwd);
        crate::approvals::remembered_path(tool, &target.lexical, &self.anchors)
    }

    /// Why `rule` allows more than a remembered approval or a permission granted to the model
    /// may: every call of a tool, any program, a program that runs whatever it is given, a path
    /// rule over the whole file system, a top-level directory, the home directory or the whole
    /// workspace; `None` when it is narrow enough. A rule that does not parse is an error.
    pub fn too_broad(&self, rule: &str) -> Result<Option<String>, PolicyError> {
        let parsed = Rule::parse(rule, RuleKind::Allow, &self.anchors).map_err(|source| {
            PolicyError::Rule {
                place: String::new(),
                list: "allow",
                source,
            }
        })?;
        Ok(parsed.too_broad(&self.anchors))
    }
}

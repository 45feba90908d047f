//! The permission-mode table (issue contract): what the mode decides when no rule did.

use warden_config::PermissionMode;

/// How restrictive an outcome is; the most restrictive part of a compound wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    Allow,
    Rewrite,
    Approve,
    Escalate,
    Deny,
}

/// A row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// L0, and L1 reads inside the workspace.
    Info,
    /// L1 reads outside the workspace (not protected).
    ReadOutside,
    /// Workspace edits, by tools or shell writes.
    Edit,
    L2,
    L3,
    L4,
    /// L5, protected paths, hard-blocked commands.
    L5,
}

impl Row {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "information and workspace reads",
            Self::ReadOutside => "reads outside the workspace",
            Self::Edit => "workspace edits",
            Self::L2 => "L2 build and test",
            Self::L3 => "L3 installs, network, code execution, unknown programs",
            Self::L4 => "L4 destructive or publishing",
            Self::L5 => "L5 privilege, secrets, hard-blocked",
        }
    }
}

/// The cell for `row` in `mode`.
pub(crate) fn cell(mode: PermissionMode, row: Row, sandboxed: bool) -> Outcome {
    use Outcome::{Allow as A, Approve as Q, Deny as D};
    match (mode, row) {
        (_, Row::Info) => A,
        (_, Row::L5) => D,
        (PermissionMode::Bypass, Row::L4) => Q,
        (PermissionMode::Bypass, _) => A,
        (PermissionMode::Plan, Row::ReadOutside) => Q,
        (PermissionMode::Plan, _) => D,
        (PermissionMode::AcceptEdits | PermissionMode::Auto, Row::Edit) => A,
        (PermissionMode::Auto, Row::L2) if sandboxed => A,
        (PermissionMode::Default | PermissionMode::AcceptEdits | PermissionMode::Auto, _) => Q,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PermissionMode::{AcceptEdits, Auto, Bypass, Default, Plan};

    #[test]
    fn the_table_as_written() {
        let rows = [
            Row::Info,
            Row::ReadOutside,
            Row::Edit,
            Row::L2,
            Row::L3,
            Row::L4,
            Row::L5,
        ];
        let expect: [(PermissionMode, &str); 5] = [
            (Plan, "a?ddddd"),
            (Default, "a?????d"),
            (AcceptEdits, "a?a???d"),
            (Auto, "a?aa??d"),
            (Bypass, "aaaaa?d"),
        ];
        for (mode, cells) in expect {
            for (row, want) in rows.iter().zip(cells.chars()) {
                let got = match cell(mode, *row, true) {
                    Outcome::Allow => 'a',
                    Outcome::Approve => '?',
                    Outcome::Deny => 'd',
                    Outcome::Rewrite | Outcome::Escalate => 'x',
                };
                assert_eq!(got, want, "{mode:?} {row:?}");
            }
        }
        assert_eq!(cell(Auto, Row::L2, false), Outcome::Approve);
    }
}

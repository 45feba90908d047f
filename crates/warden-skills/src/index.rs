//! The index the model sees (SPEC K3): each skill's name, description and path, and nothing
//! more, within a budget. Past it, descriptions are shortened, then the last skills left out,
//! and the index says how many.

use std::fmt::Write as _;
use std::path::Path;

use crate::registry::Registry;

/// What was put in the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub text: String,
    pub listed: usize,
    /// Listed with a shortened description.
    pub shortened: usize,
    /// Not listed for lack of room.
    pub omitted: usize,
}

/// Lengths descriptions are cut to, in turn, until the index fits.
const CUTS: [usize; 4] = [usize::MAX, 160, 60, 0];

fn entry(out: &mut String, name: &str, description: &str, cut: usize, path: &str) -> bool {
    let mut shortened = false;
    let shown: String = if description.chars().count() > cut {
        shortened = true;
        let mut s: String = description.chars().take(cut).collect();
        if cut > 0 {
            s.push('…');
        }
        s
    } else {
        description.to_owned()
    };
    if shown.is_empty() {
        let _ = writeln!(out, "- {name} ({path})");
    } else {
        let _ = writeln!(out, "- {name}: {shown} ({path})");
    }
    shortened
}

impl Registry {
    /// The index of the skills at `order` (indices into `skills`, most relevant first) within
    /// `budget` tokens, as counted by `count`. Paths are shown relative to `base` where they
    /// are below it.
    pub fn index(
        &self,
        order: &[usize],
        budget: u64,
        base: &Path,
        count: &dyn Fn(&str) -> u64,
    ) -> Index {
        let head = "\n## Skills (load one with the Skill tool when the task calls for it)\n";
        let shown_path = |p: &Path| {
            let file = p.join("SKILL.md");
            file.strip_prefix(base)
                .map_or_else(|_| file.display().to_string(), |r| r.display().to_string())
        };
        if order.is_empty() {
            return Index {
                text: String::new(),
                listed: 0,
                shortened: 0,
                omitted: 0,
            };
        }
        let head_tokens = count(head);
        let omitted_line = |n: usize| {
            format!(
                "[{n} more skills not listed: the index is at its budget; ask for one by name \
                 with the Skill tool]\n"
            )
        };
        // Room is kept for the line that says what was left out.
        let reserve = count(&omitted_line(order.len()));
        for cut in CUTS {
            let mut text = String::from(head);
            let mut shortened = 0;
            let mut listed = 0;
            let mut used = head_tokens;
            let mut full = true;
            for &i in order {
                let skill = &self.skills[i];
                let mut line = String::new();
                let short = entry(
                    &mut line,
                    skill.meta.name.as_str(),
                    &skill.meta.description,
                    cut,
                    &shown_path(&skill.path),
                );
                let cost = count(&line);
                if used + cost + reserve > budget {
                    full = false;
                    if cut != 0 {
                        break;
                    }
                    // At the shortest, list what fits and say how many did not.
                    let omitted = order.len() - listed;
                    text.push_str(&omitted_line(omitted));
                    return Index {
                        text,
                        listed,
                        shortened,
                        omitted,
                    };
                }
                used += cost;
                text.push_str(&line);
                listed += 1;
                shortened += usize::from(short);
            }
            if full {
                return Index {
                    text,
                    listed,
                    shortened,
                    omitted: 0,
                };
            }
        }
        unreachable!("the shortest cut always returns")
    }
}

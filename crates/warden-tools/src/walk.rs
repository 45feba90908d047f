//! The directory walk shared by `glob` and `grep`: gitignore honoured, default excludes and
//! denied paths pruned, symlinks not followed.

use std::path::Path;
use std::sync::{Arc, Mutex};

use globset::{GlobBuilder, GlobMatcher};
use ignore::{ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkParallel, WalkState};
use warden_protocol::{ToolError, ToolErrorKind};

use warden_policy::PathPolicy;

/// A parallel walk of `base`. Directories named in `exclude` and paths the policy denies are never
/// entered or yielded; symlinks are not followed, so the walk stays inside the roots.
pub(crate) fn walker(base: &Path, exclude: &[String], policy: &PathPolicy) -> WalkParallel {
    let exclude: Arc<[String]> = exclude.into();
    let policy = Arc::new(policy.clone());
    let mut builder = WalkBuilder::new(base);
    builder
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .git_global(false)
        .threads(
            std::thread::available_parallelism()
                .map_or(2, std::num::NonZero::get)
                .min(8),
        )
        .filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if is_dir
                && entry.depth() > 0
                && entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| exclude.iter().any(|e| e == name))
            {
                return false;
            }
            policy.denied_by(entry.path()).is_none() && !policy.hides(entry.path())
        });
    builder.build_parallel()
}

/// A user-supplied path pattern: without `/` it matches a file name at any depth, with `/` it is
/// anchored at the search base. Patterns may not be absolute or climb out with `..`.
pub(crate) fn path_glob(pattern: &str, field: &str) -> Result<GlobMatcher, ToolError> {
    let invalid = |message: String| {
        ToolError::new(ToolErrorKind::InvalidPattern, message)
            .with_field(field)
            .with_expected("a relative glob such as \"**/*.rs\" or \"src/*.ts\"")
    };
    if pattern.is_empty() {
        return Err(invalid("the pattern is empty".to_owned()));
    }
    if pattern.starts_with('/') || pattern.starts_with('~') {
        return Err(invalid(format!(
            "{pattern:?} is absolute; patterns stay inside the workspace"
        )));
    }
    if pattern.split('/').any(|part| part == "..") {
        return Err(invalid(format!(
            "{pattern:?} climbs out with '..'; patterns stay inside the workspace"
        )));
    }
    let glob = if pattern.contains('/') {
        pattern.to_owned()
    } else {
        format!("**/{pattern}")
    };
    GlobBuilder::new(&glob)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|err| invalid(format!("invalid pattern {pattern:?}: {err}")))
}

/// Resolves the directory a search starts from (default: the working directory).
pub(crate) fn base_dir(
    policy: &PathPolicy,
    cwd: &Path,
    path: Option<&str>,
) -> Result<warden_policy::ResolvedPath, ToolError> {
    let resolved = policy.resolve(cwd, path.unwrap_or("."))?;
    Ok(resolved)
}

/// Runs a parallel walk, giving each thread its own state from `init`, and gathers what `visit`
/// pushes. Each thread collects locally and hands its batch over once, when it finishes.
pub(crate) fn collect<S, T, I, V>(walk: WalkParallel, init: I, visit: V) -> Vec<T>
where
    S: Send,
    T: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, ignore::DirEntry, &mut Vec<T>) -> WalkState + Sync,
{
    let all = Mutex::new(Vec::new());
    let mut builder = Builder {
        all: &all,
        init: &init,
        visit: &visit,
    };
    walk.visit(&mut builder);
    all.into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Builder<'a, T, I, V> {
    all: &'a Mutex<Vec<T>>,
    init: &'a I,
    visit: &'a V,
}

impl<'s, S, T, I, V> ParallelVisitorBuilder<'s> for Builder<'s, T, I, V>
where
    T: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, ignore::DirEntry, &mut Vec<T>) -> WalkState + Sync,
    S: Send + 's,
{
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            all: self.all,
            visit: self.visit,
            state: (self.init)(),
            local: Vec::new(),
        })
    }
}

struct Visitor<'a, S, T, V> {
    all: &'a Mutex<Vec<T>>,
    visit: &'a V,
    state: S,
    local: Vec<T>,
}

impl<S, T, V> ParallelVisitor for Visitor<'_, S, T, V>
where
    S: Send,
    T: Send,
    V: Fn(&mut S, ignore::DirEntry, &mut Vec<T>) -> WalkState + Sync,
{
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> WalkState {
        match entry {
            Ok(entry) => (self.visit)(&mut self.state, entry, &mut self.local),
            // An unreadable entry is skipped, as ripgrep does; the walk goes on.
            Err(_) => WalkState::Continue,
        }
    }
}

impl<S, T, V> Drop for Visitor<'_, S, T, V> {
    fn drop(&mut self) {
        let mut all = self
            .all
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        all.append(&mut self.local);
    }
}

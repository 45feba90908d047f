//! Starting manifests for seed 003's three kinds of task (SPEC M10): explaining code (no
//! network, no credentials, nothing written but notes), testing and patching (a throwaway
//! worktree, the registry it installs from, a patch and a test report out), and opening a
//! pull request (the same, with a short-lived source-control capability whose writes wait for
//! a person).

/// The templates, by name.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("explain", EXPLAIN),
    ("test-and-patch", TEST_AND_PATCH),
    ("create-pr", CREATE_PR),
];

/// The template called `name`.
pub fn template(name: &str) -> Option<&'static str> {
    TEMPLATES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

const EXPLAIN: &str = r#"# A read-only task: explain code, answer questions. No network, no credentials.
version: 1
run:
  purpose: "Explain how the project's parser handles errors"
  owner: "you@example.com"
  # After this the manifest starts nothing (RFC 3339).
  expires_at: "2030-01-01T00:00:00Z"
  max_duration_seconds: 600
  resources:
    cpu: 1
    memory_mb: 2048
    pids: 128
    disk_mb: 256
  budgets:
    tool_calls: 100
    tokens: 200000

filesystem:
  mounts:
    # The repository at its pinned commit, read-only.
    - source: repo
      target: /workspace
      mode: read_only
    # Where notes may be written.
    - source: run-scratch
      target: /scratch
      mode: read_write
  writable_paths:
    - /scratch
  forbidden_paths:
    - /home
    - /root
    - /var/run/docker.sock

network:
  default: deny
  allow: []

identity:
  environment: allowlist
  capabilities: []

cleanup:
  delete_workspace: true
  retain_artifacts_hours: 24

artifacts:
  collect:
    - /scratch/notes.md
"#;

const TEST_AND_PATCH: &str = r#"# Fix something and prove it: edits in a throwaway worktree, tests run, a patch out.
version: 1
run:
  purpose: "Fix the failing slug test and run the unit tests"
  owner: "you@example.com"
  expires_at: "2030-01-01T00:00:00Z"
  max_duration_seconds: 900
  resources:
    cpu: 2
    memory_mb: 4096
    pids: 512
    # The size of /scratch and of the run's caches.
    disk_mb: 2048
  budgets:
    network_requests: 500
    tool_calls: 200
    tokens: 500000

filesystem:
  mounts:
    # The input, at its pinned commit: read-only.
    - source: repo
      target: /repo
      mode: read_only
    # A worktree of it at the same commit: edits happen here; the patch is its diff.
    - source: workspace
      target: /workspace
      mode: read_write
    # Test reports and other outputs.
    - source: run-scratch
      target: /scratch
      mode: read_write
    # npm, pip and cargo caches of this run only (installs need no wider grant).
    - source: cache
      target: /cache
      mode: read_write
  writable_paths:
    - /workspace
    - /scratch
    - /cache
  forbidden_paths:
    - /home
    - /root
    - /var/run/docker.sock

network:
  default: deny
  allow:
    # Downloading packages, not publishing them.
    - host: registry.npmjs.org
      ports: [443]
      methods: [GET, HEAD]
  block_private_ranges: true
  proxy_required: true

identity:
  environment: allowlist
  variables: [CI]
  capabilities: []

cleanup:
  delete_workspace: true
  retain_artifacts_hours: 24

artifacts:
  collect:
    - /scratch/test-results.xml
    - /scratch/diff.patch
  redact:
    - "(?i)(api[_-]?key|token|password)\\s*[:=]\\s*\\S+"
"#;

const CREATE_PR: &str = r#"# Open a pull request: the test-and-patch task, plus a short-lived capability on one
# repository. Pushing and opening the PR wait for a person each time.
version: 1
run:
  purpose: "Update the API documentation and open a pull request"
  owner: "you@example.com"
  expires_at: "2030-01-01T00:00:00Z"
  max_duration_seconds: 1800
  resources:
    cpu: 2
    memory_mb: 4096
    pids: 512
    disk_mb: 2048
  budgets:
    network_requests: 500
    tool_calls: 300

filesystem:
  mounts:
    - source: repo
      target: /repo
      mode: read_only
    - source: workspace
      target: /workspace
      mode: read_write
    - source: run-scratch
      target: /scratch
      mode: read_write
  writable_paths:
    - /workspace
    - /scratch
  forbidden_paths:
    - /home
    - /root
    - /var/run/docker.sock

network:
  default: deny
  allow:
    - host: api.github.com
      ports: [443]
    - host: github.com
      ports: [443]
  block_private_ranges: true
  proxy_required: true

identity:
  environment: allowlist
  capabilities:
    - type: source_control
      repository: acme/docs-site
      actions: [create_branch, push_branch, create_pull_request]
      expires_after_seconds: 1200
      require_approval_for: [push_branch, create_pull_request]
      # An organisation policy asks for a recorded approval of writing capabilities:
      # `warden manifest approve FILE`, then put its id here.
      # approval_ref: "appr_..."

cleanup:
  delete_workspace: true
  retain_artifacts_hours: 24

artifacts:
  collect:
    - /scratch/diff.patch
  redact:
    - "(?i)(api[_-]?key|token|password)\\s*[:=]\\s*\\S+"
"#;

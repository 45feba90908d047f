//! warden's agent loop (SPEC A2, T2, T3, S1–S3, P8, P9): the model proposes, warden decides.
//! [`Agent::run`] builds the context, calls the model, checks every call against the policy,
//! asks a person where the policy says so, runs what is allowed (commands in the sandbox,
//! read-only calls of one turn at once, results in call order), and saves the session after
//! every step, until a final answer, a budget, Ctrl-C or an error.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod accounting;
mod added;
mod agent;
mod approve;
mod asking;
mod builder;
mod calls;
mod compaction;
mod context;
mod extra;
mod hooked;
mod output;
mod owned;
mod prompt;
mod served;
mod skills;
mod state;
mod turn;

pub use agent::{Agent, AgentError, Compacted, Interrupt, Status};
pub use approve::{Answer, Approver, Question, Terminal};
pub use asking::{Asking, remembered};
pub use builder::{AgentBuilder, MAX_OUTPUT_TOKENS};
pub use context::{context, window};
pub use output::{Quiet, Sink};
pub use owned::tool_defs;
pub use prompt::{INSTRUCTIONS_CAP, instructions, known, rules, system};
pub use served::ServedHooks;
pub use skills::layer as skills_layer;
pub use state::{ActiveSkill, CommandRecord, State};
pub use warden_protocol::{Budgets, Event, Trigger};

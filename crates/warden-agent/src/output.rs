//! Where a run's events go: the loop produces [`Event`]s, whoever runs it decides what to show
//! (the CLI prints JSON lines or text for a person; a test may keep them).

use warden_protocol::Event;

/// Where a run's events go.
pub trait Sink: Send {
    /// A piece of the model's answer, as it streams.
    fn text(&mut self, chunk: &str);
    /// One step of the run.
    fn event(&mut self, event: &Event);
    /// What a command printed (normalised, secrets redacted), after its `tool_result`: for a
    /// person watching; the events carry no output.
    fn output(&mut self, _tool: &str, _text: &str) {}
}

/// Keeps nothing: a run whose steps nobody watches (`warden compact`).
#[derive(Debug, Default)]
pub struct Quiet;

impl Sink for Quiet {
    fn text(&mut self, _: &str) {}
    fn event(&mut self, _: &Event) {}
}

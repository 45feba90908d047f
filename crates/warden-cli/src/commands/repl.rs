//! An interactive session on a terminal: each line typed is a message to the agent, which
//! runs until it is done; lines starting with `/` are warden's own commands.

use std::io::Write as _;

use warden_agent::{Agent, State, Trigger};
use warden_model::Item;

use super::exit_of;
use crate::Exit;
use crate::print::{Last, print_report};

/// What is shown before each line is read.
const PROMPT: &str = "warden› ";

const HELP: &str = "\
  /compact         summarise the older part of the conversation now (identifiers kept)
  /context         what the next model call would contain, per layer
  /pin TEXT        a constraint for the whole session, in every call and never cut
  /pins            the pinned constraints;  /unpin N  removes one
  /last            all that the last command printed (normalised, secrets redacted)
  /exit            leave (also Ctrl-D); the session is saved: `warden resume` goes on
  anything else    a message to the agent";

/// Reads lines and acts on them until `/exit`, the end of input or Ctrl-C at the prompt.
/// Returns the exit of the last run (130 for Ctrl-C at the prompt).
pub(super) fn session(
    runtime: &tokio::runtime::Runtime,
    agent: &mut Agent<'_>,
    state: &mut State,
    mut last: Exit,
    printed: &Last,
) -> Exit {
    note(&format!(
        "warden: interactive session {}; /help for commands, /exit or Ctrl-D to leave",
        agent.session()
    ));
    loop {
        let line = match read_line(runtime, agent) {
            Line::Text(line) => line,
            Line::End => return last,
            Line::Interrupted => return Exit::Code(130),
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        match command {
            "/exit" | "/quit" => return last,
            "/help" => note(HELP),
            "/last" => printed.show(),
            "/compact" => match runtime.block_on(agent.compact_now(state, Trigger::Manual)) {
                Ok(done) => note(&format!(
                    "compacted {} messages into a summary ({} identifiers put back); {} \
                     messages now",
                    done.messages,
                    done.restored.len(),
                    state.items.len()
                )),
                Err(why) => note(&format!("warden: {why}")),
            },
            "/context" => {
                let tools = agent.tools();
                let (_, built) = agent.context(state, &tools);
                print_report(&built.report);
            }
            "/pin" if rest.is_empty() => note("/pin TEXT: say what must hold for the session"),
            "/pin" => {
                state.pin(&[rest.to_owned()]);
                saved(agent, state, &format!("pinned: {rest}"));
            }
            "/pins" => {
                if state.pinned.is_empty() {
                    note("no pinned constraints");
                }
                for (n, text) in state.pinned.iter().enumerate() {
                    note(&format!("  {}. {text}", n + 1));
                }
            }
            "/unpin" => match rest.parse::<usize>() {
                Ok(n) if (1..=state.pinned.len()).contains(&n) => {
                    let text = state.pinned.remove(n - 1);
                    saved(agent, state, &format!("unpinned: {text}"));
                }
                _ => note(&format!(
                    "/unpin N: N from 1 to {} (see /pins)",
                    state.pinned.len()
                )),
            },
            _ if command.starts_with('/') => {
                note(&format!("unknown command {command}; /help lists them"));
            }
            _ => {
                if state.goal.is_empty() {
                    line.clone_into(&mut state.goal);
                }
                state.items.push(Item::User {
                    text: line.to_owned(),
                });
                agent.interrupt().clear();
                last = exit_of(runtime.block_on(agent.run(state)));
                agent.interrupt().clear();
            }
        }
    }
}

fn saved(agent: &Agent<'_>, state: &State, done: &str) {
    match agent.save(state, "finished") {
        Ok(()) => note(done),
        Err(why) => note(&format!("warden: {why}")),
    }
}

fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

enum Line {
    Text(String),
    End,
    Interrupted,
}

/// One line from standard input, or Ctrl-C. The line is read on a thread of its own so that
/// Ctrl-C at the prompt is seen at once; nothing else reads standard input meanwhile.
fn read_line(runtime: &tokio::runtime::Runtime, agent: &Agent<'_>) -> Line {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{PROMPT}");
    let _ = err.flush();
    drop(err);
    let (send, receive) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::stdin().read_line(&mut line);
        let _ = send.send(match read {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        });
    });
    let interrupt = agent.interrupt().clone();
    runtime.block_on(async move {
        tokio::select! {
            biased;
            () = interrupt.wait() => Line::Interrupted,
            line = receive => {
                // Ctrl-C then Enter: the signal may be seen a moment after the (empty) line,
                // which is nothing to act on: wait that moment for it.
                if matches!(&line, Ok(Some(text)) if text.trim().is_empty()) && !interrupt.raised() {
                    let _ = tokio::time::timeout(
                        std::time::Duration::from_millis(100),
                        interrupt.wait(),
                    )
                    .await;
                }
                match line {
                    _ if interrupt.raised() => Line::Interrupted,
                    Ok(Some(line)) => Line::Text(line),
                    _ => Line::End,
                }
            }
        }
    })
}

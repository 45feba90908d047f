//! Making an [`Agent`]: [`Agent::builder`] takes the settings, the model and the trace, and has a
//! default for everything else, each said on its setter.

use std::sync::Arc;

use warden_config::{NetworkMode, Settings};
use warden_model::Client;
use warden_policy::Engine;
use warden_protocol::{Budgets, SessionId};
use warden_tools::{OnAsk, Registry, ToolContext};
use warden_trace::TraceStore;

use crate::agent::{Agent, AgentError, Interrupt};
use crate::approve::Approver;
use crate::output::{Quiet, Sink};

/// The most tokens a model's answer may take, unless told otherwise.
pub const MAX_OUTPUT_TOKENS: u32 = 8192;

/// An [`Agent`] being put together. Nothing is made until [`AgentBuilder::build`].
pub struct AgentBuilder<'a> {
    settings: &'a Settings,
    client: &'a Client,
    store: &'a TraceStore,
    session: SessionId,
    sink: Option<&'a mut dyn Sink>,
    registry: Option<Arc<Registry>>,
    ctx: Option<Arc<ToolContext>>,
    engine: Option<Engine>,
    session_rules: Vec<String>,
    on_ask: OnAsk,
    approver: Option<&'a dyn Approver>,
    budgets: Option<Budgets>,
    interrupt: Option<Arc<Interrupt>>,
    network: Option<bool>,
    max_output_tokens: u32,
    saved_items: usize,
    shield: Option<warden_context::Shield>,
    skills: Option<&'a warden_skills::Registry>,
    mcp: Option<&'a warden_tools::McpServers>,
}

impl<'a> Agent<'a> {
    /// An agent for `settings` that asks `client` and saves session `session` in `store`; see
    /// the setters for what else it takes and the default of each.
    pub fn builder(
        settings: &'a Settings,
        client: &'a Client,
        store: &'a TraceStore,
        session: SessionId,
    ) -> AgentBuilder<'a> {
        AgentBuilder {
            settings,
            client,
            store,
            session,
            sink: None,
            registry: None,
            ctx: None,
            engine: None,
            session_rules: Vec::new(),
            on_ask: OnAsk::Deny,
            approver: None,
            budgets: None,
            interrupt: None,
            network: None,
            max_output_tokens: MAX_OUTPUT_TOKENS,
            saved_items: 0,
            shield: None,
            skills: None,
            mcp: None,
        }
    }
}

impl<'a> AgentBuilder<'a> {
    /// Where the run's events go. Default: nowhere ([`Quiet`]).
    #[must_use]
    pub fn sink(mut self, sink: &'a mut dyn Sink) -> Self {
        self.sink = Some(sink);
        self
    }

    /// The tools offered. Default: the built-in ones ([`Registry::builtin`]).
    #[must_use]
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(Arc::new(registry));
        self
    }

    /// What the tools run with: paths, sandbox, egress proxy, background jobs. Default:
    /// [`ToolContext::from_settings`] of the settings, without a sandbox helper (commands then
    /// cannot run).
    #[must_use]
    pub fn tool_context(mut self, ctx: ToolContext) -> Self {
        self.ctx = Some(Arc::new(ctx));
        self
    }

    /// The policy engine. Default: [`Engine::from_settings`] of the settings.
    #[must_use]
    pub fn engine(mut self, engine: Engine) -> Self {
        self.engine = Some(engine);
        self
    }

    /// Rules approved for this session before (a resumed one): they hold again. Default none.
    #[must_use]
    pub fn session_rules(mut self, rules: &[String]) -> Self {
        self.session_rules = rules.to_vec();
        self
    }

    /// The session's MCP servers (their tools already in the registry): a tool one of them adds
    /// during the run is put to the person (or `on_ask`) before the next turn, and offered from
    /// then on when approved. Default: none.
    #[must_use]
    pub fn mcp(mut self, servers: Option<&'a warden_tools::McpServers>) -> Self {
        self.mcp = servers;
        self
    }

    /// The answer when no person is asked (`--on-ask`). Default [`OnAsk::Deny`].
    #[must_use]
    pub fn on_ask(mut self, on_ask: OnAsk) -> Self {
        self.on_ask = on_ask;
        self
    }

    /// A person to ask. Default: none (the `on_ask` answer stands).
    #[must_use]
    pub fn approver(mut self, approver: Option<&'a dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// What the run may spend. Default: the settings' `[budgets]`.
    #[must_use]
    pub fn budgets(mut self, budgets: Budgets) -> Self {
        self.budgets = Some(budgets);
        self
    }

    /// Ctrl-C, shared with whoever raises it. Default: one of its own, never raised.
    #[must_use]
    pub fn interrupt(mut self, interrupt: Arc<Interrupt>) -> Self {
        self.interrupt = Some(interrupt);
        self
    }

    /// Whether commands have the network, as the prompt tells the model. Default: the
    /// settings' `[sandbox.network] mode` is `on`.
    #[must_use]
    pub fn network(mut self, network: bool) -> Self {
        self.network = Some(network);
        self
    }

    /// The most tokens an answer may take. Default [`MAX_OUTPUT_TOKENS`].
    #[must_use]
    pub fn max_output_tokens(mut self, tokens: u32) -> Self {
        self.max_output_tokens = tokens;
        self
    }

    /// How many items of the conversation are saved already (a resumed session's). Default 0.
    #[must_use]
    pub fn saved_items(mut self, items: usize) -> Self {
        self.saved_items = items;
        self
    }

    /// What labels tool output and redacts secrets before the model sees it. Default:
    /// [`warden_context::Shield::from_env`] of this process's environment.
    #[must_use]
    pub fn shield(mut self, shield: warden_context::Shield) -> Self {
        self.shield = Some(shield);
        self
    }

    /// The skills found for the project. Default: none (skills off).
    #[must_use]
    pub fn skills(mut self, skills: Option<&'a warden_skills::Registry>) -> Self {
        self.skills = skills;
        self
    }

    /// The agent. Fails when a default cannot be made from the settings or a session rule
    /// does not parse.
    pub fn build(self) -> Result<Agent<'a>, AgentError> {
        let settings = self.settings;
        let registry = match self.registry {
            Some(registry) => registry,
            None => Arc::new(Registry::builtin().map_err(|e| AgentError::Tools(e.to_string()))?),
        };
        let ctx = match self.ctx {
            Some(ctx) => ctx,
            None => Arc::new(
                ToolContext::from_settings(settings)
                    .map_err(|e| AgentError::Settings(e.to_string()))?,
            ),
        };
        let mut engine = match self.engine {
            Some(engine) => engine,
            None => {
                Engine::from_settings(settings).map_err(|e| AgentError::Settings(e.to_string()))?
            }
        };
        for rule in &self.session_rules {
            engine
                .allow_for_session(rule)
                .map_err(|e| AgentError::Settings(format!("the session's rule {rule}: {e}")))?;
        }
        let sink: &'a mut dyn Sink = match self.sink {
            Some(sink) => sink,
            // Leaked once per agent made without a sink: a zero-sized value, nothing is lost.
            None => Box::leak(Box::new(Quiet)),
        };
        let b = &settings.budgets;
        Ok(Agent {
            settings,
            client: self.client,
            registry,
            ctx,
            engine: Arc::new(engine),
            store: self.store,
            session: self.session,
            on_ask: self.on_ask,
            approver: self.approver,
            mcp: self.mcp,
            budgets: self.budgets.unwrap_or(Budgets {
                max_tokens: b.max_tokens,
                max_cost_usd: b.max_cost_usd,
                max_wall_seconds: b.max_wall_seconds,
                max_tool_calls: b.max_tool_calls,
                max_turns: b.max_turns,
            }),
            sink,
            interrupt: self.interrupt.unwrap_or_default(),
            network: self
                .network
                .unwrap_or(settings.sandbox.network.mode == NetworkMode::On),
            max_output_tokens: self.max_output_tokens,
            saved_items: std::cell::Cell::new(self.saved_items),
            shield: self
                .shield
                .unwrap_or_else(|| warden_context::Shield::from_env(std::env::vars())),
            skills: self.skills,
            hooks: warden_hooks::HookRunner::new(&settings.hooks, &settings.project_root),
            hook_notes: std::collections::HashMap::new(),
            transcript_seq: std::cell::Cell::new(0),
            asked_by_org: std::collections::HashSet::new(),
            stop_blocks: 0,
            opened: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn client() -> Client {
        Client::new(warden_model::ModelSpec {
            kind: warden_config::ProviderKind::Openai,
            provider: "openai".into(),
            model: "test-model".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: None,
        })
        .unwrap()
    }

    #[test]
    fn the_defaults_come_from_the_settings_and_each_setter_overrides_one() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TraceStore::open(&tmp.path().join("trace.db")).unwrap();
        let client = client();
        let mut settings = Settings::defaults(PathBuf::from("/nonexistent-project"));
        settings.budgets.max_turns = Some(7);
        settings.sandbox.network.mode = NetworkMode::On;
        let agent = Agent::builder(&settings, &client, &store, SessionId::new())
            .build()
            .unwrap();
        assert_eq!(agent.budgets.max_turns, Some(7));
        assert!(agent.network);
        assert_eq!(agent.max_output_tokens, MAX_OUTPUT_TOKENS);
        assert_eq!(agent.on_ask, OnAsk::Deny);
        assert!(agent.approver.is_none() && agent.skills().is_none());
        assert!(!agent.tools().is_empty(), "the built-in tools are offered");
        let agent = Agent::builder(&settings, &client, &store, SessionId::new())
            .budgets(Budgets::default())
            .network(false)
            .max_output_tokens(100)
            .on_ask(OnAsk::Allow)
            .build()
            .unwrap();
        assert_eq!(agent.budgets.max_turns, None);
        assert!(!agent.network);
        assert_eq!(agent.max_output_tokens, 100);
        assert_eq!(agent.on_ask, OnAsk::Allow);
    }

    #[test]
    fn a_session_rule_that_does_not_parse_is_a_settings_error() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TraceStore::open(&tmp.path().join("trace.db")).unwrap();
        let client = client();
        let settings = Settings::defaults(PathBuf::from("/nonexistent-project"));
        let err = Agent::builder(&settings, &client, &store, SessionId::new())
            .session_rules(&["Bash(".to_owned()])
            .build()
            .err()
            .unwrap();
        assert!(matches!(err, AgentError::Settings(_)), "{err}");
    }
}

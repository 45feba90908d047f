//! The clients against a scripted provider speaking the real wire formats on loopback.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use serde_json::json;
use warden_config::ProviderKind;
use warden_fake_provider::{Call, FakeProvider, Reply, anthropic, openai};
use warden_model::{
    ApiKey, Client, Event, Finish, Item, ModelError, ModelSpec, Request, Retry, ToolCall, ToolDef,
};

fn client(kind: ProviderKind, server: &FakeProvider) -> Client {
    let base_url = match kind {
        ProviderKind::Openai => format!("{}/v1", server.url()),
        ProviderKind::Anthropic => server.url(),
    };
    Client::new(ModelSpec {
        kind,
        provider: "test".into(),
        model: "m-1".into(),
        base_url,
        api_key: Some(ApiKey::new("sk-test-key")),
    })
    .unwrap()
    .with_retry(Retry {
        attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
    })
}

fn request() -> Request {
    Request {
        system: "be brief".into(),
        items: vec![
            Item::User {
                text: "list files".into(),
            },
            Item::Assistant {
                text: String::new(),
                calls: vec![ToolCall {
                    id: "old".into(),
                    name: "glob".into(),
                    arguments: "{\"pattern\":\"*\"}".into(),
                }],
            },
            Item::ToolResult {
                call_id: "old".into(),
                name: "glob".into(),
                content: "a.rs".into(),
                is_error: false,
            },
        ],
        tools: vec![ToolDef {
            name: "readFile".into(),
            description: "read".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_output_tokens: 1000,
    }
}

async fn complete(client: &Client) -> (Result<warden_model::Turn, ModelError>, String, u32) {
    let mut text = String::new();
    let mut retries = 0;
    let turn = client
        .complete(
            &request(),
            &mut |e| {
                if let Event::Text(t) = e {
                    text.push_str(&t);
                }
            },
            &mut |_| retries += 1,
        )
        .await;
    (turn, text, retries)
}

fn calls() -> Vec<Call<'static>> {
    vec![
        Call::new("c1", "readFile", &json!({"path": "src/slugify.js"})),
        Call::new("c2", "grep", &json!({"pattern": "\\s+", "path": "src"})),
    ]
}

#[tokio::test(flavor = "current_thread")]
async fn openai_parallel_calls_in_small_pieces_are_assembled() {
    let server = FakeProvider::start(vec![openai::calls("Looking.", &calls(), 3)]);
    let (turn, text, _) = complete(&client(ProviderKind::Openai, &server)).await;
    let turn = turn.unwrap();
    assert_eq!(text, "Looking.");
    assert_eq!(turn.finish, Finish::ToolCalls);
    assert_eq!(turn.calls.len(), 2);
    assert_eq!(turn.calls[0].name, "readFile");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&turn.calls[1].arguments).unwrap(),
        json!({"pattern": "\\s+", "path": "src"})
    );
    assert_eq!(turn.usage.total(), 150);
    let sent = &server.received()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-key"));
    let body = sent.json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "m-1");
    assert_eq!(body["tools"][0]["function"]["name"], "readFile");
    assert_eq!(body["messages"][2]["tool_calls"][0]["id"], "old");
    assert_eq!(body["messages"][3]["role"], "tool");
}

#[tokio::test(flavor = "current_thread")]
async fn anthropic_tool_use_blocks_are_assembled() {
    let server = FakeProvider::start(vec![anthropic::calls("Looking.", &calls(), 4)]);
    let (turn, text, _) = complete(&client(ProviderKind::Anthropic, &server)).await;
    let turn = turn.unwrap();
    assert_eq!(text, "Looking.");
    assert_eq!((turn.finish, turn.calls.len()), (Finish::ToolCalls, 2));
    assert_eq!(turn.calls[0].id, "c1");
    assert_eq!(turn.usage.input_tokens, 100);
    let sent = &server.received()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-test-key"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    let body = sent.json();
    assert_eq!(body["system"], "be brief");
    assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
    assert_eq!(body["messages"][2]["content"][0]["type"], "tool_result");
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
}

#[tokio::test(flavor = "current_thread")]
async fn a_stream_cut_mid_call_yields_nothing_and_is_retried() {
    for kind in [ProviderKind::Openai, ProviderKind::Anthropic] {
        let whole = match kind {
            ProviderKind::Openai => openai::calls("", &calls(), 3),
            ProviderKind::Anthropic => anthropic::calls("", &calls(), 3),
        };
        let cut = whole.clone().cut_after(whole.chunks.len() / 2);
        // Cut every time: the turn fails, and no call comes out of it.
        let server = FakeProvider::start(vec![cut.clone(), cut.clone(), cut.clone()]);
        let (turn, _, retries) = complete(&client(kind, &server)).await;
        assert!(
            matches!(turn, Err(ModelError::Exhausted { .. })),
            "{kind:?}: {turn:?}"
        );
        assert_eq!((retries, server.received().len()), (2, 3));
        // Cut once, then whole: the whole answer.
        let server = FakeProvider::start(vec![cut, whole]);
        let (turn, _, retries) = complete(&client(kind, &server)).await;
        assert_eq!((turn.unwrap().calls.len(), retries), (2, 1), "{kind:?}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn busy_providers_are_retried_honouring_retry_after_and_bad_keys_are_not() {
    let server = FakeProvider::start(vec![
        Reply::status(429, "slow down").header("retry-after", "1"),
        openai::text("done"),
    ]);
    let started = Instant::now();
    let (turn, text, retries) = complete(&client(ProviderKind::Openai, &server)).await;
    assert_eq!(
        (turn.unwrap().finish, text.as_str(), retries),
        (Finish::Stop, "done", 1)
    );
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was honoured"
    );

    let server = FakeProvider::start(vec![Reply::status(401, "invalid key"), openai::text("no")]);
    let (turn, _, retries) = complete(&client(ProviderKind::Openai, &server)).await;
    let err = turn.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, ModelError::Refused { status: 401, .. }));
    assert!(
        message.contains("m-1")
            && message.contains(&server.url())
            && message.contains("invalid key"),
        "{message}"
    );
    assert!(!message.contains("sk-test-key"));
    assert_eq!((retries, server.received().len()), (0, 1));

    let server = FakeProvider::start(vec![Reply::status(503, "down"); 3]);
    let (turn, _, _) = complete(&client(ProviderKind::Openai, &server)).await;
    assert!(turn.unwrap_err().to_string().contains("after 3 attempts"));
}

/// A stream recorded from llama-cpp-python 0.3.36's server (`--chat_format
/// chatml-function-calling`, SmolLM2-135M-Instruct, the tool forced): legacy `function_call`
/// deltas beside `tool_calls`, the name repeated in every fragment, `null` fields, no usage.
#[tokio::test(flavor = "current_thread")]
async fn a_recorded_llama_cpp_stream_gives_one_whole_call() {
    let recorded = include_str!("fixtures/llama-cpp-python-tool-call.sse");
    let chunks: Vec<String> = recorded
        .split_inclusive("\n\n")
        .map(str::to_owned)
        .collect();
    let reply = Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        chunks,
        pause: Duration::ZERO,
        delay: Duration::ZERO,
    };
    let server = FakeProvider::start(vec![reply]);
    let (turn, _, _) = complete(&client(ProviderKind::Openai, &server)).await;
    let turn = turn.unwrap();
    assert_eq!(turn.finish, Finish::ToolCalls);
    assert_eq!(turn.calls.len(), 1, "{:?}", turn.calls);
    assert_eq!(turn.calls[0].name, "readFile");
    assert!(turn.calls[0].id.starts_with("call__0_readFile"));
    let args: serde_json::Value = serde_json::from_str(&turn.calls[0].arguments).unwrap();
    assert!(args["path"].is_string(), "{args}");
    assert_eq!(turn.usage.total(), 0);
}

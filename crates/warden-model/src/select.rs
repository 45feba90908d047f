//! Which model a run uses: `--model PROVIDER/MODEL`, else the configured default, else a key in
//! the environment, else a local server answering on its usual port.

use std::time::Duration;

use warden_config::{ProviderKind, Settings};

use crate::client::{ApiKey, ModelSpec};

/// Providers known without settings: name, protocol, base URL, the variables that may override
/// the base URL and hold the key, and the model used when none is named.
struct Builtin {
    name: &'static str,
    kind: ProviderKind,
    base_url: &'static str,
    base_url_env: Option<&'static str>,
    key_env: Option<&'static str>,
    default_model: Option<&'static str>,
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "openai",
        kind: ProviderKind::Openai,
        base_url: "https://api.openai.com/v1",
        base_url_env: Some("OPENAI_BASE_URL"),
        key_env: Some("OPENAI_API_KEY"),
        default_model: Some("gpt-4.1"),
    },
    Builtin {
        name: "anthropic",
        kind: ProviderKind::Anthropic,
        base_url: "https://api.anthropic.com",
        base_url_env: Some("ANTHROPIC_BASE_URL"),
        key_env: Some("ANTHROPIC_API_KEY"),
        default_model: Some("claude-sonnet-4-5"),
    },
    Builtin {
        name: "ollama",
        kind: ProviderKind::Openai,
        base_url: "http://127.0.0.1:11434/v1",
        base_url_env: None,
        key_env: None,
        default_model: None,
    },
    Builtin {
        name: "llamacpp",
        kind: ProviderKind::Openai,
        base_url: "http://127.0.0.1:8080/v1",
        base_url_env: None,
        key_env: None,
        default_model: None,
    },
    Builtin {
        name: "vllm",
        kind: ProviderKind::Openai,
        base_url: "http://127.0.0.1:8000/v1",
        base_url_env: None,
        key_env: None,
        default_model: None,
    },
    Builtin {
        name: "lmstudio",
        kind: ProviderKind::Openai,
        base_url: "http://127.0.0.1:1234/v1",
        base_url_env: None,
        key_env: None,
        default_model: None,
    },
];

/// Why no model could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error("{0}")]
    Unknown(String),
    #[error(
        "no model is configured: pass --model PROVIDER/MODEL (for example openai/gpt-4.1, \
         anthropic/claude-sonnet-4-5 or ollama/qwen2.5-coder), set OPENAI_API_KEY or \
         ANTHROPIC_API_KEY, set [model] default in .warden/settings.toml, or start a local \
         server (Ollama on 127.0.0.1:11434, llama.cpp's server on 127.0.0.1:8080); \
         --base-url points an OpenAI-compatible provider elsewhere"
    )]
    NoneFound,
}

/// Reads an environment variable; the caller's view of the environment (tests pass their own).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The model for this run.
pub async fn select(
    model: Option<&str>,
    base_url: Option<&str>,
    settings: &Settings,
    env: Env<'_>,
) -> Result<ModelSpec, SelectError> {
    let wanted = model
        .map(str::to_owned)
        .or_else(|| settings.model.default.clone());
    let mut spec = match wanted {
        Some(name) => named(&name, settings, env, base_url.is_some())?,
        None => match from_environment(env) {
            Some(spec) => spec,
            None => match base_url {
                // An explicit endpoint with no model named: ask it what it serves.
                Some(url) => local(url.trim_end_matches('/'), "openai").await?,
                None => probe_local().await.ok_or(SelectError::NoneFound)?,
            },
        },
    };
    if let Some(url) = base_url {
        url.trim_end_matches('/').clone_into(&mut spec.base_url);
    }
    Ok(spec)
}

/// `PROVIDER/MODEL`, or the name of a `[model.providers]` table.
fn named(
    name: &str,
    settings: &Settings,
    env: Env<'_>,
    has_url: bool,
) -> Result<ModelSpec, SelectError> {
    let (provider, model) = match name.split_once('/') {
        Some((p, m)) if !p.is_empty() && !m.is_empty() => (p, Some(m)),
        Some(_) => {
            return Err(SelectError::Unknown(format!(
                "--model {name:?}: expected PROVIDER/MODEL, like openai/gpt-4.1"
            )));
        }
        None => (name, None),
    };
    if let Some(table) = settings.model.providers.get(provider) {
        return Ok(ModelSpec {
            kind: table.kind,
            provider: provider.to_owned(),
            model: model.map_or_else(|| table.model.clone(), str::to_owned),
            base_url: table.base_url.trim_end_matches('/').to_owned(),
            api_key: table.api_key_env.as_deref().and_then(env).map(ApiKey::new),
        });
    }
    let Some(builtin) = BUILTINS.iter().find(|b| b.name == provider) else {
        // Any other name with an explicit endpoint is an OpenAI-compatible gateway.
        if has_url && let Some(model) = model {
            return Ok(ModelSpec {
                kind: ProviderKind::Openai,
                provider: provider.to_owned(),
                model: model.to_owned(),
                base_url: String::new(),
                api_key: env("OPENAI_API_KEY").map(ApiKey::new),
            });
        }
        let known: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
        return Err(SelectError::Unknown(format!(
            "unknown provider {provider:?}: use one of {}, a [model.providers] table of the \
             settings, or any name with --base-url for an OpenAI-compatible endpoint",
            known.join(", ")
        )));
    };
    let model = model
        .or(builtin.default_model)
        .ok_or_else(|| SelectError::Unknown(format!("--model {provider}/MODEL: name the model")))?;
    Ok(spec_of(builtin, model, env))
}

fn spec_of(builtin: &Builtin, model: &str, env: Env<'_>) -> ModelSpec {
    let base_url = builtin
        .base_url_env
        .and_then(env)
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| builtin.base_url.to_owned());
    ModelSpec {
        kind: builtin.kind,
        provider: builtin.name.to_owned(),
        model: model.to_owned(),
        base_url: base_url.trim_end_matches('/').to_owned(),
        api_key: builtin.key_env.and_then(env).map(ApiKey::new),
    }
}

/// A key in the environment picks its provider and that provider's default model.
fn from_environment(env: Env<'_>) -> Option<ModelSpec> {
    BUILTINS.iter().find_map(|b| {
        let key = b.key_env.and_then(env).filter(|k| !k.trim().is_empty())?;
        let mut spec = spec_of(b, b.default_model?, env);
        spec.api_key = Some(ApiKey::new(key));
        Some(spec)
    })
}

/// The first local server that answers, with the first model it serves.
async fn probe_local() -> Option<ModelSpec> {
    for name in ["ollama", "llamacpp"] {
        let builtin = BUILTINS.iter().find(|b| b.name == name)?;
        if let Ok(spec) = local(builtin.base_url, name).await {
            return Some(spec);
        }
    }
    None
}

/// Asks the OpenAI-compatible server at `base_url` which models it serves.
async fn local(base_url: &str, provider: &str) -> Result<ModelSpec, SelectError> {
    let none = || {
        SelectError::Unknown(format!(
            "{base_url}/models did not name a model: pass --model {provider}/MODEL"
        ))
    };
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(1500))
        .build()
        .map_err(|_| none())?;
    let response = http
        .get(format!("{base_url}/models"))
        .send()
        .await
        .map_err(|_| none())?;
    if !response.status().is_success() {
        return Err(none());
    }
    let text = response.text().await.map_err(|_| none())?;
    let body: serde_json::Value = serde_json::from_str(&text).map_err(|_| none())?;
    let model = body["data"][0]["id"].as_str().ok_or_else(none)?;
    Ok(ModelSpec {
        kind: ProviderKind::Openai,
        provider: provider.to_owned(),
        model: model.to_owned(),
        base_url: base_url.to_owned(),
        api_key: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn named_models_keys_and_base_urls() {
        let settings = Settings::defaults("/nonexistent".into());
        let e = env(&[
            ("ANTHROPIC_API_KEY", "k"),
            ("OPENAI_BASE_URL", "http://gw/v1/"),
        ]);
        let spec = select(Some("openai/gpt-4o"), None, &settings, &e)
            .await
            .unwrap();
        assert_eq!(
            (
                spec.base_url.as_str(),
                spec.model.as_str(),
                spec.api_key.is_none()
            ),
            ("http://gw/v1", "gpt-4o", true)
        );
        // No --model: the key in the environment decides.
        let spec = select(None, None, &settings, &e).await.unwrap();
        assert_eq!(spec.label(), "anthropic/claude-sonnet-4-5");
        assert_eq!(spec.api_key, Some(ApiKey::new("k")));
        let spec = select(
            Some("ollama/qwen2.5-coder"),
            Some("http://h:1/v1"),
            &settings,
            &e,
        )
        .await
        .unwrap();
        assert_eq!(
            (spec.base_url.as_str(), spec.kind),
            ("http://h:1/v1", ProviderKind::Openai)
        );
        assert!(select(Some("nope/x"), None, &settings, &e).await.is_err());
        assert!(select(Some("openai/"), None, &settings, &e).await.is_err());
    }
}

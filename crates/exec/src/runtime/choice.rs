//! Which runtime runs each tier's agents, and why, in words for the run log. The configured runtime wins;
//! `auto` (the default for T4 and T5) becomes Claude Code when the `claude` binary is on the PATH and the
//! built-in agent when it is not (the seed's default, through core's [`Runtime::resolve`]). In a run whose
//! models answer from a script, `auto` is always the built-in agent: a script answers agency's own model
//! calls and cannot drive an external CLI ([`choose_for_run`]). [`build`] then makes the chosen runtime
//! from what the runner knows ([`RuntimeSetup`]), Claude Code and Codex on the tier's model from team.yaml
//! when its provider speaks their API ([`TierModel`]).

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use agency_core::Tier;
use agency_core::config::{ProviderKind, RolloutMode, Runtime, TiersConfig};
use agency_llm::Provider;

use super::tier_model::{Endpoint, TierModel};
use super::{
    BuiltinRuntime, ClaudeCodeRuntime, CodexProvider, CodexRuntime, CommandRuntime, PiRuntime,
    Runtime as AgentRuntime, RuntimeError,
};

/// Whether a model id can be given to an external CLI (the same rule `agency config check` applies).
pub use agency_core::config::check_model_name;

/// The runtime chosen for one tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeChoice {
    /// The tier.
    pub tier: Tier,
    /// The concrete runtime (never `auto`).
    pub runtime: Runtime,
    /// Why, for the run log: `claude found at /usr/bin/claude`, `claude not on PATH`, `configured`.
    pub reason: String,
}

// `t4: claude-code (claude found at /usr/bin/claude)`: the line the run log shows.
impl fmt::Display for RuntimeChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.tier, self.runtime.as_str(), self.reason)
    }
}

/// The runtime for `tier`, given where `claude` was found (if anywhere).
pub fn choose(tiers: &TiersConfig, tier: Tier, claude: Option<&Path>) -> RuntimeChoice {
    let configured = tiers.runtime(tier);
    let runtime = configured.resolve(claude.is_some());
    let reason = match (configured, claude) {
        (Runtime::Auto, Some(path)) => format!("claude found at {}", path.display()),
        (Runtime::Auto, None) => "claude not on PATH".to_owned(),
        _ => "configured".to_owned(),
    };
    RuntimeChoice {
        tier,
        runtime,
        reason,
    }
}

/// The runtime for every tier, looking `claude` up on `path` (a `PATH` value).
pub fn choose_all(tiers: &TiersConfig, path: Option<&OsStr>) -> Vec<RuntimeChoice> {
    let claude = find_program("claude", path);
    Tier::ALL
        .into_iter()
        .map(|tier| choose(tiers, tier, claude.as_deref()))
        .collect()
}

/// Where a run's models answer from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    /// The configured providers.
    Live,
    /// A script (`agency run --script`, the demo): it answers agency's own model calls only.
    Scripted,
}

/// Why `auto` is the built-in agent in a scripted run, for the run log.
pub const SCRIPTED_AUTO_REASON: &str = "auto in a scripted run: a script cannot drive an external CLI";

/// The runtime for every tier of a run whose models answer from `source`, looking `claude` up on `path`.
/// Explicitly configured runtimes are kept even in a scripted run (an external CLI then reaches its
/// model through its own environment, e.g. `ANTHROPIC_BASE_URL`).
pub fn choose_for_run(tiers: &TiersConfig, path: Option<&OsStr>, source: ModelSource) -> Vec<RuntimeChoice> {
    let mut choices = choose_all(tiers, path);
    if source == ModelSource::Scripted {
        for choice in &mut choices {
            if tiers.runtime(choice.tier) == Runtime::Auto {
                choice.runtime = Runtime::Builtin;
                choice.reason = SCRIPTED_AUTO_REASON.to_owned();
            }
        }
    }
    choices
}

/// The first executable file called `name` in the absolute directories of `path`.
pub fn find_program(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// What the runner knows that the runtimes need.
#[derive(Debug, Clone)]
pub struct RuntimeSetup {
    /// The tier's model: the built-in agent thinks with it, and does the teachback step for a command.
    pub provider: Arc<dyn Provider>,
    /// The `agency` binary whose `hook` subcommand gates Claude Code, Codex and pi.
    pub agency: PathBuf,
    /// The run's blackboard (`AGENCY_DB` for the hook).
    pub db: PathBuf,
    /// The team configuration (`AGENCY_CONFIG` for the hook), when not the default location.
    pub config: Option<PathBuf>,
    /// The teachback gate's rollout mode in force for the run, passed to the hook in the agent's
    /// environment so that it is never read from a file the agent can write.
    pub rollout: RolloutMode,
    /// Where external agents' private homes go (e.g. `.agency/agents`).
    pub state_dir: PathBuf,
    /// The tier's `command` argv from team.yaml, for `runtime: command`.
    pub command: Option<Vec<String>>,
    /// Strings to redact from every recorded event.
    pub secrets: Vec<String>,
    /// The runner's gate service, through which Claude Code and Codex agents reach their teachback gate
    /// (the blackboard is in no agent's sandbox). `None`: their hook is given [`RuntimeSetup::db`] instead,
    /// which only works where the agent runs without a sandbox.
    pub gate: Option<Arc<dyn crate::gate::GateIssuer>>,
    /// The runner's model-key relay: Claude Code and pi agents call their model through it and are never
    /// given the key. `None`: the key is passed in the agent's environment.
    pub relay: Option<Arc<agency_relay::KeyRelay>>,
    /// The endpoint Codex agents use instead of OpenAI's (from `OPENAI_BASE_URL` in `agency run`).
    pub codex_provider: Option<CodexProvider>,
    /// The tier's model from team.yaml ([`TierModel::of`]); Claude Code and Codex are started on it.
    pub model: Option<TierModel>,
    /// team.yaml's `models.prices`, for pi, which runs a model of its own choosing and reports no cost
    /// for a model it has no price for.
    pub prices: agency_llm::PriceTable,
}

/// The runtime `choice` names, made from `setup`. `command` without an argv is an error naming the tier.
pub fn build(choice: &RuntimeChoice, setup: &RuntimeSetup) -> Result<Arc<dyn AgentRuntime>, RuntimeError> {
    let builtin = BuiltinRuntime::new(setup.provider.clone())
        .with_secrets(setup.secrets.clone())
        .with_max_tokens_ceiling(setup.model.as_ref().and_then(|model| model.max_tokens));
    Ok(match choice.runtime {
        Runtime::Builtin | Runtime::Auto => Arc::new(builtin),
        Runtime::ClaudeCode => {
            let mut runtime =
                ClaudeCodeRuntime::new(&setup.agency, &setup.db, setup.state_dir.join("claude-code"));
            runtime.config.clone_from(&setup.config);
            runtime.rollout = setup.rollout;
            runtime.secrets.clone_from(&setup.secrets);
            runtime.gate.clone_from(&setup.gate);
            runtime.relay.clone_from(&setup.relay);
            let model = cli_model(choice, setup, ProviderKind::Anthropic)?;
            runtime.model = model.map(|m| m.model.clone());
            runtime.endpoint = model.and_then(|m| m.endpoint.clone());
            // Claude Code costs its session only when it ends: each call is priced as it answers.
            runtime.price = model.and_then(|m| m.price);
            Arc::new(runtime)
        }
        Runtime::Codex => {
            let mut runtime = CodexRuntime::new(&setup.agency, &setup.db, setup.state_dir.join("codex"));
            runtime.config.clone_from(&setup.config);
            runtime.rollout = setup.rollout;
            runtime.secrets.clone_from(&setup.secrets);
            runtime.gate.clone_from(&setup.gate);
            runtime.provider.clone_from(&setup.codex_provider);
            let model = cli_model(choice, setup, ProviderKind::Openai)?;
            runtime.model = model.map(|m| m.model.clone());
            // Codex reports tokens only: priced at the model it runs on, when team.yaml prices it.
            runtime.price = model.and_then(|m| m.price);
            if let Some(endpoint) = model.and_then(|m| m.endpoint.as_ref()) {
                runtime.provider = Some(codex_provider_at(endpoint));
            }
            Arc::new(runtime)
        }
        Runtime::Pi => {
            let mut runtime = PiRuntime::new(builtin, setup.state_dir.join("pi"));
            // Gated by agency's extension on every tool call, as Claude Code is by its hook.
            runtime.gate = Some(super::pi::PiGate {
                agency: setup.agency.clone(),
                db: setup.db.clone(),
                config: setup.config.clone(),
                rollout: setup.rollout,
                service: setup.gate.clone(),
            });
            runtime.secrets.clone_from(&setup.secrets);
            runtime.prices.clone_from(&setup.prices);
            runtime.relay.clone_from(&setup.relay);
            // pi speaks both APIs: any tier model runs on it, its name checked as for the other CLIs.
            if let Some(model) = &setup.model {
                check_model_name(&model.model).map_err(|why| {
                    RuntimeError::Other(format!(
                        "{}: {why} (the model of tiers.{}, passed to pi)",
                        model.field, choice.tier
                    ))
                })?;
                runtime.use_tier_model(model);
            }
            Arc::new(runtime)
        }
        Runtime::Command => {
            let argv = setup
                .command
                .clone()
                .filter(|argv| !argv.is_empty())
                .ok_or_else(|| {
                    RuntimeError::Other(format!(
                        "tiers.{}.command: `runtime: command` needs the argv to start",
                        choice.tier
                    ))
                })?;
            let mut runtime = CommandRuntime::new(argv, builtin);
            runtime.secrets.clone_from(&setup.secrets);
            Arc::new(runtime)
        }
    })
}

/// The Codex provider entry for a team.yaml provider's endpoint: its key variable when it names one, the
/// OpenAI key on OpenAI's own API, no key elsewhere (as the built-in agent calls it).
fn codex_provider_at(endpoint: &Endpoint) -> CodexProvider {
    let public = endpoint.base_url.trim_end_matches('/') == ProviderKind::Openai.default_base_url();
    CodexProvider {
        name: endpoint.provider.clone(),
        base_url: endpoint.base_url.clone(),
        wire_api: "responses".to_owned(),
        env_key: endpoint
            .api_key_env
            .clone()
            .or_else(|| public.then(|| ProviderKind::Openai.default_api_key_env().to_owned())),
    }
}

/// The model an external CLI that calls a `speaks` API is started on: the tier's from team.yaml when its
/// provider speaks that API, its name checked so that it cannot be read as one of the CLI's flags; otherwise
/// `None`, and the CLI keeps its own default (for Claude Code, `ANTHROPIC_MODEL` when set) and endpoint.
fn cli_model<'s>(
    choice: &RuntimeChoice,
    setup: &'s RuntimeSetup,
    speaks: ProviderKind,
) -> Result<Option<&'s TierModel>, RuntimeError> {
    let Some(model) = setup.model.as_ref().filter(|m| m.kind == speaks) else {
        return Ok(None);
    };
    check_model_name(&model.model).map_err(|why| {
        RuntimeError::Other(format!(
            "{}: {why} (the model of tiers.{}, passed to {})",
            model.field,
            choice.tier,
            choice.runtime.as_str()
        ))
    })?;
    Ok(Some(model))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agency_core::config::TierConfig;

    #[test]
    fn auto_tiers_use_claude_code_only_when_it_is_installed() {
        let tiers = TiersConfig::default();
        let found = choose(&tiers, Tier::T4, Some(Path::new("/usr/bin/claude")));
        assert_eq!(
            found.to_string(),
            "t4: claude-code (claude found at /usr/bin/claude)"
        );
        assert_eq!(
            choose(&tiers, Tier::T5, None).to_string(),
            "t5: builtin (claude not on PATH)"
        );
        assert_eq!(
            choose(&tiers, Tier::T2, None).to_string(),
            "t2: builtin (configured)"
        );
        let codex = TiersConfig {
            t4: TierConfig {
                runtime: Some(Runtime::Codex),
                ..TierConfig::default()
            },
            ..TiersConfig::default()
        };
        let choice = choose(&codex, Tier::T4, Some(Path::new("/usr/bin/claude")));
        assert_eq!(choice.to_string(), "t4: codex (configured)");
    }

    #[test]
    fn programs_are_found_on_absolute_path_entries_only() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("claude");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([Path::new("relative"), dir.path()]).unwrap();
        assert_eq!(find_program("claude", Some(&path)), Some(bin));
        assert_eq!(find_program("claude", Some(OsStr::new("relative"))), None);
        let choices = choose_all(&TiersConfig::default(), Some(&path));
        assert_eq!(choices.len(), 5);
        assert_eq!(choices[3].runtime, Runtime::ClaudeCode);
        assert_eq!(
            choose_all(&TiersConfig::default(), None)[3].runtime,
            Runtime::Builtin
        );
    }

    #[test]
    fn auto_is_builtin_in_a_scripted_run_but_configured_runtimes_stay() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("claude");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([dir.path()]).unwrap();
        let tiers = TiersConfig {
            t5: TierConfig {
                runtime: Some(Runtime::ClaudeCode),
                ..TierConfig::default()
            },
            ..TiersConfig::default()
        };
        let scripted = choose_for_run(&tiers, Some(&path), ModelSource::Scripted);
        assert_eq!(
            scripted[3].to_string(),
            format!("t4: builtin ({SCRIPTED_AUTO_REASON})")
        );
        assert_eq!(scripted[4].to_string(), "t5: claude-code (configured)");
        let live = choose_for_run(&tiers, Some(&path), ModelSource::Live);
        assert_eq!(live[3].runtime, Runtime::ClaudeCode);
        assert_eq!(live[3].reason, format!("claude found at {}", bin.display()));
    }

    #[test]
    fn codex_calls_a_team_yaml_endpoint_with_its_key_and_a_keyless_server_without_one() {
        let endpoint = |base_url: &str, key: Option<&str>| Endpoint {
            provider: "local".into(),
            base_url: base_url.into(),
            api_key_env: key.map(str::to_owned),
        };
        let vllm = codex_provider_at(&endpoint("http://gpu:8000/v1", None));
        assert_eq!(
            (vllm.name.as_str(), vllm.base_url.as_str(), vllm.env_key),
            ("local", "http://gpu:8000/v1", None)
        );
        assert_eq!(
            codex_provider_at(&endpoint("http://gpu:8000/v1", Some("VLLM_KEY"))).env_key,
            Some("VLLM_KEY".into())
        );
        assert_eq!(
            codex_provider_at(&endpoint("https://api.openai.com/v1/", None)).env_key,
            Some("OPENAI_API_KEY".into())
        );
    }

    #[test]
    fn external_clis_get_the_tier_model_only_when_its_provider_speaks_their_api() {
        let with = |model: &str, kind| RuntimeSetup {
            model: Some(TierModel {
                model: model.into(),
                price: None,
                kind,
                field: "models.capable.model".into(),
                endpoint: None,
                max_tokens: None,
            }),
            ..setup()
        };
        let choice = |runtime| RuntimeChoice {
            tier: Tier::T5,
            runtime,
            reason: String::new(),
        };
        let claude = choice(Runtime::ClaudeCode);
        let codex = choice(Runtime::Codex);
        let anthropic = with("claude-sonnet-4-5", ProviderKind::Anthropic);
        let openai = with("gpt-5.5", ProviderKind::Openai);
        let model_of = |choice: &RuntimeChoice, setup: &RuntimeSetup, speaks| {
            cli_model(choice, setup, speaks).unwrap().map(|m| m.model.clone())
        };
        assert_eq!(
            model_of(&claude, &anthropic, ProviderKind::Anthropic),
            Some("claude-sonnet-4-5".to_string())
        );
        // An OpenAI model means nothing to Claude Code (and the reverse): the CLI keeps its default.
        assert_eq!(model_of(&claude, &openai, ProviderKind::Anthropic), None);
        assert_eq!(model_of(&codex, &anthropic, ProviderKind::Openai), None);
        assert_eq!(
            model_of(&codex, &openai, ProviderKind::Openai),
            Some("gpt-5.5".to_string())
        );
        assert_eq!(model_of(&claude, &setup(), ProviderKind::Anthropic), None);
        for (bad, kind) in [
            ("--dangerously-skip-permissions", ProviderKind::Anthropic),
            ("gpt 5", ProviderKind::Openai),
        ] {
            let runtime = match kind {
                ProviderKind::Anthropic => Runtime::ClaudeCode,
                ProviderKind::Openai => Runtime::Codex,
            };
            let err = build(&choice(runtime), &with(bad, kind)).unwrap_err().to_string();
            assert!(
                err.starts_with("models.capable.model: the model id ")
                    && err.ends_with(&format!(
                        "(the model of tiers.t5, passed to {})",
                        runtime.as_str()
                    )),
                "{err}"
            );
        }
    }

    #[test]
    fn model_names_that_a_command_line_could_misread_are_refused() {
        for good in [
            "claude-opus-4-8",
            "gpt-5.5",
            "claude-opus-4-8[1m]",
            "org/model:tag",
        ] {
            assert_eq!(check_model_name(good), Ok(()), "{good}");
        }
        for bad in ["", "-m", "--model=x", "a b", "a\tb", "a\nb", "a\u{7}b"] {
            assert!(check_model_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check_model_name("--bare").unwrap_err(),
            "the model id \"--bare\" starts with `-`, which a command line would read as a flag"
        );
    }

    fn setup() -> RuntimeSetup {
        let script = agency_llm::Script::from_yaml("replies: []").unwrap();
        RuntimeSetup {
            provider: Arc::new(agency_llm::ScriptedProvider::new(script)),
            agency: "/usr/bin/agency".into(),
            db: ".agency/agency.db".into(),
            config: None,
            rollout: RolloutMode::Enforce,
            state_dir: ".agency/agents".into(),
            command: None,
            secrets: vec![],
            gate: None,
            relay: None,
            codex_provider: None,
            model: None,
            prices: agency_llm::PriceTable::default(),
        }
    }

    #[test]
    fn build_makes_the_chosen_runtime() {
        let setup = setup();
        let made = |runtime| {
            let choice = RuntimeChoice {
                tier: Tier::T4,
                runtime,
                reason: String::new(),
            };
            build(&choice, &setup)
        };
        for (runtime, name) in [
            (Runtime::Builtin, "builtin"),
            (Runtime::ClaudeCode, "claude-code"),
            (Runtime::Codex, "codex"),
            (Runtime::Pi, "pi"),
        ] {
            assert_eq!(made(runtime).unwrap().name(), name);
        }
        let err = made(Runtime::Command).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tiers.t4.command: `runtime: command` needs the argv to start"
        );
    }
}

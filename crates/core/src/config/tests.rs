//! The file format's contract: defaults, error wording and locations, semantic checks, overrides.

use super::*;
use crate::gate::GateKind;
use crate::tier::Tier;

fn parse(text: &str) -> Result<TeamConfig, ConfigError> {
    parse_team_config(text, "team.yaml")
}

fn error_text(text: &str) -> String {
    match parse(text) {
        Ok(config) => panic!("expected an error, parsed {config:?}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn default_yaml_is_exactly_the_default_config() {
    assert_eq!(parse(DEFAULT_TEAM_YAML).unwrap(), TeamConfig::default());
}

#[test]
fn default_config_is_valid() {
    TeamConfig::default().validate("team.yaml").unwrap();
}

#[test]
fn default_yaml_mentions_every_key() {
    // Every key the default config serializes is written (and so commented) in the default file.
    fn keys(value: &serde_json::Value, out: &mut Vec<String>) {
        if let serde_json::Value::Object(map) = value {
            for (key, child) in map {
                out.push(key.clone());
                keys(child, out);
            }
        }
    }
    let mut all = Vec::new();
    keys(&serde_json::to_value(TeamConfig::default()).unwrap(), &mut all);
    // Optional keys are unset by default and only appear commented out.
    all.extend(
        [
            "base_url",
            "api_key_env",
            "max_tokens",
            "temperature",
            "concurrency",
            "command",
            "judge_model",
            "auditor_model",
            "dir",
            "tokens",
            "usd",
        ]
        .map(String::from),
    );
    for key in all {
        assert!(
            DEFAULT_TEAM_YAML.contains(&format!("{key}:")),
            "DEFAULT_TEAM_YAML does not mention `{key}`"
        );
    }
}

#[test]
fn empty_or_comment_only_file_is_the_default() {
    for text in ["", "\n", "# nothing yet\n", "---\n", "~\n"] {
        assert_eq!(parse(text).unwrap(), TeamConfig::default(), "{text:?}");
    }
}

#[test]
fn a_section_with_no_value_takes_its_defaults() {
    let config = parse("visibility:\nbudgets:\n  run:\nnotifiers:\npersonalities:\n").unwrap();
    assert_eq!(config, TeamConfig::default());
    // An empty tier entry leaves every field to the tier's default.
    let config = parse("tiers:\n  t4:\n").unwrap();
    assert_eq!(config.tiers.t4, TierConfig::default());
    assert_eq!(config.tiers.capability(Tier::T4), CapabilityLevel::FastCheap);
    assert_eq!(config.tiers.runtime(Tier::T4), Runtime::Auto);
}

#[test]
fn unknown_key_names_line_path_and_the_keys_allowed() {
    let text = "visibility:\n  strict_mode: true\n  inspection_gate:\n    t2_lead: true\n";
    assert_eq!(
        error_text(text),
        "team.yaml:3: visibility.inspection_gate: unknown key; expected one of strict_mode, \
         log_level, inspection_gates, gate_timeout_minutes"
    );
    assert_eq!(
        error_text("runner:\n  concurrency: 2\nrunnr: {}\n"),
        "team.yaml:3: runnr: unknown key; expected one of visibility, providers, models, tiers, \
         retry, teachback, budgets, signoff, notifiers, personalities, runner, forge, secrets, sandbox"
    );
}

#[test]
fn unknown_key_inside_a_tagged_list_item_names_the_key() {
    let text = "notifiers:\n  - kind: command\n    argv: [notify-send]\n  - kind: webhook\n    urll: x\n";
    assert_eq!(
        error_text(text),
        "team.yaml:5: notifiers[1].urll: unknown key; expected one of url"
    );
}

#[test]
fn wrong_type_names_line_path_expected_and_found() {
    let text = "# gates\nvisibility:\n  inspection_gates:\n    t2_synthesis: yes\n";
    assert_eq!(
        error_text(text),
        "team.yaml:4: visibility.inspection_gates.t2_synthesis: expected true or false, found \"yes\""
    );
    assert_eq!(
        error_text("runner:\n  concurrency: many # agents\n"),
        "team.yaml:2: runner.concurrency: expected a whole number (0 or more), found \"many\""
    );
    assert_eq!(
        error_text("runner:\n  concurrency: -1\n"),
        "team.yaml:2: runner.concurrency: expected a whole number (0 or more), found \"-1\""
    );
    assert_eq!(
        error_text("teachback:\n  readonly_bash: ls\n"),
        "team.yaml:2: teachback.readonly_bash: expected a list, found \"ls\""
    );
    assert_eq!(
        error_text("visibility: [strict]\n"),
        "team.yaml:1: visibility: expected a section of `key: value` lines, found \"[strict]\""
    );
}

#[test]
fn unknown_enum_value_lists_the_choices() {
    assert_eq!(
        error_text("tiers:\n  t3:\n    capability: smart\n"),
        "team.yaml:3: tiers.t3.capability: expected one of reasoning-heavy, capable, fast-cheap, \
         found \"smart\""
    );
    assert_eq!(
        error_text("teachback:\n  mode: block\n"),
        "team.yaml:2: teachback.mode: expected one of shadow, warn, enforce, found \"block\""
    );
}

#[test]
fn missing_required_key_is_named() {
    assert_eq!(
        error_text("providers:\n  local:\n    base_url: http://127.0.0.1:8080/v1\n"),
        "team.yaml:3: providers.local.kind: required key is missing"
    );
}

#[test]
fn duplicate_key_is_refused() {
    assert_eq!(
        error_text("runner:\n  concurrency: 1\n  concurrency: 2\n"),
        "team.yaml:3: runner.concurrency: duplicate key; each key may appear once"
    );
}

#[test]
fn api_key_in_clear_is_refused_with_the_way_out() {
    let text = "providers:\n  anthropic:\n    kind: anthropic\n    api_key: sk-ant-123\n";
    assert_eq!(
        error_text(text),
        "team.yaml:4: providers.anthropic.api_key: keys never live in team.yaml: export the key in \
         an environment variable and set api_key_env to that variable's name"
    );
    let text = "providers:\n  anthropic:\n    kind: anthropic\n    api_key_env: sk-ant-123\n";
    assert!(
        error_text(text)
            .starts_with("team.yaml:4: providers.anthropic.api_key_env: this looks like a secret itself"),
        "{}",
        error_text(text)
    );
}

#[test]
fn t1_plan_gate_cannot_be_turned_off() {
    let text = "visibility:\n  inspection_gates:\n    t1_plan: false\n";
    assert_eq!(
        error_text(text),
        "team.yaml:3: visibility.inspection_gates.t1_plan: the T1 plan gate is always on (required \
         by design); remove the line or set it to true"
    );
}

#[test]
fn semantic_problems_are_all_reported_in_file_order() {
    let text = "\
models:
  capable: {provider: nope, model: x}
visibility:
  inspection_gates:
    t1_plan: false
tiers:
  t4:
    command: [aider]
runner:
  concurrency: 0
";
    let err = parse(text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "team.yaml:2: models.capable.provider: unknown provider \"nope\"; configured providers: anthropic\n\
         team.yaml:5: visibility.inspection_gates.t1_plan: the T1 plan gate is always on (required by \
         design); remove the line or set it to true\n\
         team.yaml:8: tiers.t4.command: only used with runtime: command, but this tier's runtime is auto\n\
         team.yaml:10: runner.concurrency: must be at least 1"
    );
    assert_eq!(err.problems().len(), 4);
    assert_eq!(err.problems()[0].line, Some(2));
}

#[test]
fn a_tier_level_without_a_model_is_refused() {
    let text = "models:\n  capable: null\n";
    let err = parse(text).unwrap_err();
    let paths: Vec<&str> = err.problems().iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["tiers.t3.capability", "tiers.t5.capability"]);
    assert_eq!(
        err.problems()[0].message,
        "capability level capable has no model; add models.capable"
    );

    // Moving the tiers off the level, and the judge too, makes it fine.
    let text = "models:\n  capable: null\ntiers:\n  t3: {capability: reasoning-heavy}\n  t5: {capability: fast-cheap}\n";
    parse(text).unwrap();
}

#[test]
fn the_judge_level_must_have_a_model_unless_a_judge_model_is_given() {
    let text =
        "models:\n  reasoning-heavy: ~\ntiers:\n  t1: {capability: capable}\n  t2: {capability: capable}\n";
    let err = parse(text).unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    assert_eq!(err.problems()[0].path, "signoff.judge");

    let text = format!(
        "{text}providers:\n  anthropic: {{kind: anthropic}}\n  openai: {{kind: openai}}\n\
         signoff:\n  judge_model: {{provider: openai, model: gpt-judge}}\n"
    );
    let config = parse(&text).unwrap();
    assert_eq!(
        config.signoff.judge_model,
        Some(ModelBinding::new("openai", "gpt-judge"))
    );
}

#[test]
fn strict_mode_turns_every_gate_on() {
    let config = parse("visibility:\n  strict_mode: true\n").unwrap();
    for kind in GateKind::ALL {
        assert!(config.visibility.gate_enabled(kind), "{kind}");
    }
}

#[test]
fn without_strict_mode_the_configured_gates_apply() {
    let visibility = TeamConfig::default().visibility;
    let enabled: Vec<GateKind> = GateKind::ALL
        .into_iter()
        .filter(|k| visibility.gate_enabled(*k))
        .collect();
    assert_eq!(
        enabled,
        [
            GateKind::T1Plan,
            GateKind::T2Synthesis,
            GateKind::Pause,
            GateKind::Budget,
            GateKind::Escalation,
            GateKind::Halt
        ]
    );
    let config = parse("visibility:\n  inspection_gates: {t2_synthesis: false, t3_plan: true}\n").unwrap();
    assert!(!config.visibility.gate_enabled(GateKind::T2Synthesis));
    assert!(config.visibility.gate_enabled(GateKind::T3Plan));
}

#[test]
fn a_partly_written_tier_keeps_its_own_defaults() {
    let config = parse("tiers:\n  t4:\n    concurrency: 2\n  t1:\n    runtime: codex\n").unwrap();
    assert_eq!(config.tiers.capability(Tier::T4), CapabilityLevel::FastCheap);
    assert_eq!(config.tiers.runtime(Tier::T4), Runtime::Auto);
    assert_eq!(config.tiers.t4.concurrency, Some(2));
    assert_eq!(config.tiers.capability(Tier::T1), CapabilityLevel::ReasoningHeavy);
    assert_eq!(config.tiers.runtime(Tier::T1), Runtime::Codex);
    for tier in Tier::ALL {
        assert_eq!(
            TeamConfig::default().tiers.capability(tier),
            default_capability(tier)
        );
    }
}

#[test]
fn command_runtime_needs_its_argv() {
    let err = parse("tiers:\n  t4:\n    runtime: command\n").unwrap_err();
    assert_eq!(err.problems()[0].path, "tiers.t4.command");
    assert_eq!(err.problems()[0].line, Some(2));
    let config = parse("tiers:\n  t4:\n    runtime: command\n    command: [aider, --yes-always]\n").unwrap();
    assert_eq!(config.tiers.runtime(Tier::T4), Runtime::Command);
    assert!(parse("tiers:\n  t4:\n    runtime: command\n    command: []\n").is_err());
}

#[test]
fn auto_runtime_resolves_on_what_is_installed() {
    assert_eq!(Runtime::Auto.resolve(true), Runtime::ClaudeCode);
    assert_eq!(Runtime::Auto.resolve(false), Runtime::Builtin);
    assert_eq!(Runtime::Codex.resolve(false), Runtime::Codex);
}

#[test]
fn providers_default_their_endpoint_and_key_variable() {
    let text = "providers:\n  anthropic: {kind: anthropic}\n  local:\n    kind: openai\n    \
                base_url: http://127.0.0.1:8080/v1\n    api_key_env: LOCAL_KEY\n";
    let config = parse(text).unwrap();
    let anthropic = &config.providers["anthropic"];
    assert_eq!(anthropic.base_url(), "https://api.anthropic.com");
    assert_eq!(anthropic.api_key_env(), "ANTHROPIC_API_KEY");
    let local = &config.providers["local"];
    assert_eq!(local.base_url(), "http://127.0.0.1:8080/v1");
    assert_eq!(local.api_key_env(), "LOCAL_KEY");
    assert_eq!(local.timeouts, ProviderTimeouts::default());
    assert_eq!(
        ProviderConfig::of_kind(ProviderKind::Openai).api_key_env(),
        "OPENAI_API_KEY"
    );
}

#[test]
fn models_and_prices_parse() {
    let text = "models:\n  fast-cheap: {provider: anthropic, model: m, max_tokens: 4000, temperature: 0.2}\n  \
                prices:\n    m: {input: 1, output: 5, cache_read: 0.1}\n";
    let config = parse(text).unwrap();
    let binding = config.models.binding(CapabilityLevel::FastCheap).unwrap();
    assert_eq!(binding.max_tokens, Some(4000));
    assert_eq!(binding.temperature, Some(0.2));
    let price = config.models.price("m").unwrap();
    assert_eq!((price.input, price.output), (1.0, 5.0));
    assert_eq!((price.cache_read, price.cache_write), (Some(0.1), None));

    let err = parse("models:\n  prices:\n    m: {input: -1, output: 5}\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "team.yaml:3: models.prices.m.input: expected a price of 0 or more"
    );
}

#[test]
fn notifiers_parse_by_kind_and_are_checked() {
    let text = "notifiers:\n  - {kind: command, argv: [notify-send, agency]}\n  - {kind: webhook, url: \"https://example.invalid/h\"}\n  - {kind: slack, webhook_url_env: SLACK_URL}\n";
    let config = parse(text).unwrap();
    assert_eq!(
        config.notifiers,
        [
            NotifierConfig::Command {
                argv: vec!["notify-send".into(), "agency".into()]
            },
            NotifierConfig::Webhook {
                url: "https://example.invalid/h".into()
            },
            NotifierConfig::Slack {
                webhook_url_env: "SLACK_URL".into()
            },
        ]
    );
    let err = parse("notifiers:\n  - kind: webhook\n    url: example.invalid\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "team.yaml:3: notifiers[0].url: expected an http:// or https:// URL, found \"example.invalid\""
    );
}

#[test]
fn budgets_are_unlimited_unless_set() {
    assert_eq!(TeamConfig::default().budgets, BudgetsConfig::default());
    let config = parse("budgets:\n  run: {tokens: 5000000, usd: 50}\n  brief: {usd: 2.5}\n").unwrap();
    assert_eq!(config.budgets.run.tokens, Some(5_000_000));
    assert_eq!(config.budgets.run.usd, Some(50.0));
    assert_eq!(config.budgets.brief.usd, Some(2.5));
    assert_eq!(config.budgets.workstream, BudgetLimit::default());
}

#[test]
fn personality_registry_looks_up_by_tier_and_domain() {
    let config = TeamConfig::default();
    assert_eq!(
        config.personalities.personality_for(Tier::T2, "backend"),
        Some("engineering-software-architect")
    );
    assert_eq!(config.personalities.personality_for(Tier::T1, "strategy"), None);
    let err = parse("personalities:\n  registry:\n    t4:\n      backend: Backend Architect\n").unwrap_err();
    assert_eq!(err.problems()[0].path, "personalities.registry.t4.backend");
    assert_eq!(err.problems()[0].line, Some(4));
}

#[test]
fn teachback_mode_env_override() {
    let config = TeamConfig::default();
    assert_eq!(
        config.effective_teachback_mode(None).unwrap(),
        RolloutMode::Enforce
    );
    assert_eq!(
        config.effective_teachback_mode(Some("  ")).unwrap(),
        RolloutMode::Enforce
    );
    assert_eq!(
        config.effective_teachback_mode(Some("warn")).unwrap(),
        RolloutMode::Warn
    );
    assert_eq!(
        config.effective_teachback_mode(Some("SHADOW")).unwrap(),
        RolloutMode::Shadow
    );
    assert_eq!(
        config
            .effective_teachback_mode(Some("off"))
            .unwrap_err()
            .to_string(),
        "AGENCY_TEACHBACK_MODE: expected one of shadow, warn, enforce, found \"off\""
    );
    let config = parse("teachback:\n  mode: shadow\n").unwrap();
    assert_eq!(
        config.effective_teachback_mode(None).unwrap(),
        RolloutMode::Shadow
    );
    assert_eq!(
        config.effective_teachback_mode(Some("enforce")).unwrap(),
        RolloutMode::Enforce
    );
}

#[test]
fn readonly_bash_names_only_commands_agency_has_a_grammar_for() {
    let text = error_text("teachback:\n  readonly_bash: [git log, cargo tree]\n");
    assert!(
        text.contains(
            "teachback.readonly_bash[1]: expected one of the commands agency has a read-only grammar for \
             (git status, git diff, git log, git show, ls, cat, head, tail, wc, pwd, grep, rg, find), found \
             \"cargo tree\""
        ),
        "{text}"
    );
}

#[test]
fn readonly_bash_checks_options_and_refuses_chaining() {
    let teachback = TeachbackConfig::default();
    for allowed in [
        "git status",
        "git diff --stat",
        "git log --oneline | head -3",
        "ls -la src",
        "  cat README.md",
        "rg foo",
    ] {
        assert!(teachback.allows_readonly_bash(allowed), "{allowed}");
    }
    for refused in [
        "git commit -m x",
        "gitstatus",
        "lsof",
        "cat a > b",
        "ls; rm -rf .",
        "cat $(echo x)",
        "ls && touch x",
        "git diff | sh",
        "",
        "rm -rf .",
        "git log --output=.agency/team.yaml",
        "rg --pre sh x",
    ] {
        assert!(!teachback.allows_readonly_bash(refused), "{refused}");
    }
}

#[test]
fn serializes_and_reads_back_as_json() {
    // Runs keep a snapshot of their config; it must survive the round trip.
    let config = parse(
        "tiers:\n  t4: {concurrency: 2}\nbudgets:\n  run: {usd: 10}\nnotifiers:\n  - {kind: slack, webhook_url_env: S}\n",
    )
    .unwrap();
    let json = serde_json::to_string(&config).unwrap();
    assert_eq!(serde_json::from_str::<TeamConfig>(&json).unwrap(), config);
}

#[test]
fn json_schema_describes_the_sections() {
    let schema = serde_json::to_value(schemars::schema_for!(TeamConfig)).unwrap();
    let properties = schema["properties"].as_object().unwrap();
    for section in [
        "visibility",
        "providers",
        "models",
        "tiers",
        "retry",
        "teachback",
        "budgets",
        "signoff",
        "notifiers",
        "personalities",
        "runner",
    ] {
        assert!(properties.contains_key(section), "{section}");
    }
}

#[test]
fn config_problem_display_without_line_or_path() {
    let problem = ConfigProblem {
        origin: "team.yaml".into(),
        line: None,
        path: String::new(),
        message: "expected a mapping".into(),
    };
    assert_eq!(problem.to_string(), "team.yaml: expected a mapping");
}

#[test]
fn syntax_errors_name_the_line() {
    let err = error_text("visibility:\n\tstrict_mode: true\n");
    assert!(err.starts_with("team.yaml:2: "), "{err}");
    let err = error_text("runner: {concurrency: 2\n");
    assert!(err.starts_with("team.yaml:1: runner: "), "{err}");
}

#[test]
fn a_bad_scalar_is_shown_whole() {
    // A mis-indented line continues the scalar above it; the message shows what the parser read.
    assert_eq!(
        error_text("visibility:\n strict_mode: true\n  log_level: normal\n"),
        "team.yaml:2: visibility.strict_mode: expected true or false, found \"true log_level\""
    );
}

#[test]
fn a_model_id_a_command_line_would_misread_is_refused() {
    let text = "\
models:
  capable: { provider: anthropic, model: --bare }
";
    let err = parse(text).unwrap_err();
    assert!(
        err.to_string().contains(
            "models.capable.model: the model id \"--bare\" starts with `-`, which a command line would read as a flag"
        ),
        "{err}"
    );
}

#[test]
fn secret_env_names_gather_every_variable_the_config_reads_a_secret_from() {
    let text = "notifiers:\n  - kind: slack\n    webhook_url_env: TEAM_HOOK\n\
                secrets:\n  extra_env: [DATABASE_URL]\n";
    let config = parse_team_config(text, "team.yaml").unwrap();
    assert_eq!(
        config.secret_env_names(),
        ["ANTHROPIC_API_KEY", "DATABASE_URL", "GITHUB_TOKEN", "TEAM_HOOK"]
    );
    assert_eq!(
        error_text("secrets:\n  extra: [X]\n"),
        "team.yaml:2: secrets.extra: unknown key; expected one of extra_env"
    );
}

#[test]
fn the_sandbox_is_on_by_default_and_can_be_turned_off_or_cut_off_the_network() {
    use super::{SandboxMode, SandboxNetwork};
    let default = parse_team_config("", "team.yaml").unwrap();
    assert_eq!(default.sandbox.mode, SandboxMode::On);
    assert_eq!(default.sandbox.network, SandboxNetwork::Full);
    let off = parse_team_config("sandbox:\n  mode: off\n", "team.yaml").unwrap();
    assert_eq!(off.sandbox.mode, SandboxMode::Off);
    let cut = parse_team_config("sandbox:\n  network: none\n", "team.yaml").unwrap();
    assert_eq!(cut.sandbox.network, SandboxNetwork::None);
    assert_eq!(
        error_text("sandbox:\n  extra_writable: [cache]\n"),
        "team.yaml:2: sandbox.extra_writable[0]: expected an absolute path or one starting with `~/`, \
         found \"cache\""
    );
}

#[test]
fn teachback_calibration_is_on_unless_switched_off() {
    use super::Calibration;
    assert_eq!(TeachbackConfig::default().calibration, Calibration::On);
    let off = parse("teachback:\n  calibration: off\n").unwrap();
    assert_eq!(off.teachback.calibration, Calibration::Off);
    let on = parse("teachback:\n  calibration: on\n").unwrap();
    assert_eq!(on.teachback.calibration, Calibration::On);
    let wrong = parse("teachback:\n  calibration: sometimes\n")
        .unwrap_err()
        .to_string();
    assert!(wrong.contains("calibration"), "{wrong}");
}

#[test]
fn an_auditor_model_is_checked_like_any_binding_and_named_by_its_key() {
    let text = "signoff:\n  auditor_model: {provider: nowhere, model: gpt-audit}\n";
    let err = parse(text).unwrap_err();
    let paths: Vec<&str> = err.problems().iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["signoff.auditor_model.provider"], "{err}");
    assert!(err.to_string().contains("unknown provider"), "{err}");

    let text = "providers:\n  anthropic: {kind: anthropic}\n  openai: {kind: openai}\n\
                signoff:\n  auditor_model: {provider: openai, model: gpt-audit}\n";
    let config = parse(text).unwrap();
    assert_eq!(
        config.signoff.auditor_model,
        Some(ModelBinding::new("openai", "gpt-audit"))
    );
    // Unset by default: the auditor runs on the T5 tier's model.
    assert_eq!(parse("").unwrap().signoff.auditor_model, None);
}

#[test]
fn workstream_labels_are_read_and_a_bad_label_names_its_workstream() {
    let config =
        parse("runner:\n  workstream_labels:\n    ws-ml: [gpu, big-tests]\n    \"*\": [linux]\n").unwrap();
    assert_eq!(
        config.runner.workstream_labels.get("ws-ml"),
        Some(&vec!["gpu".to_string(), "big-tests".to_string()])
    );
    assert_eq!(config.runner.unplaced_alert_seconds, 120);
    let err = error_text("runner:\n  workstream_labels:\n    ws-ml: [\"has space\"]\n");
    assert!(err.contains("runner.workstream_labels.ws-ml"), "{err}");
    assert!(err.contains("\"has space\""), "{err}");
    let err = error_text("runner:\n  unplaced_alert_seconds: 0\n");
    assert!(err.contains("runner.unplaced_alert_seconds"), "{err}");
}

#[test]
fn a_mesh_round_bound_of_zero_is_refused_naming_the_key() {
    let err = parse("retry:\n  t3_mesh_rounds: 0\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "team.yaml:2: retry.t3_mesh_rounds: must be at least 1"
    );
    let err = parse("retry:\n  t3_mesh_rounds: -1\n").unwrap_err();
    assert!(err.to_string().contains("t3_mesh_rounds"), "{err}");
    let team = parse("retry:\n  t3_mesh_rounds: 5\n").unwrap();
    assert_eq!(team.retry.t3_mesh_rounds, 5);
    assert_eq!(parse("").unwrap().retry.t3_mesh_rounds, 3);
}

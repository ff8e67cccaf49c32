//! Checks that need the whole parsed config: references between sections (a tier's level has a model, a
//! model's provider exists), values no type can express (`t1_plan` stays on, timeouts are not zero), and
//! secrets written where only a variable's name belongs. Every problem is collected, not just the first.

use super::TeamConfig;
use super::error::quote;
use super::models::{CapabilityLevel, ModelBinding};
use super::notifiers::NotifierConfig;
use super::policy::BudgetLimit;
use super::tiers::Runtime;
use crate::intercept::readonly;
use crate::tier::Tier;

/// A problem found in a parsed config, before it is located in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Issue {
    /// Dotted path of the offending key.
    pub path: String,
    /// What is wrong and what was expected.
    pub message: String,
}

/// Collects issues with their paths.
#[derive(Default)]
struct Issues(Vec<Issue>);

impl Issues {
    fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Issue {
            path: path.into(),
            message: message.into(),
        });
    }

    /// Durations and counts where zero would stall or disable the thing they bound.
    fn at_least_one(&mut self, path: &str, value: u32) {
        if value == 0 {
            self.push(path, "must be at least 1");
        }
    }

    fn env_var_name(&mut self, path: &str, name: &str) {
        if looks_like_secret(name) {
            self.push(
                path,
                "this looks like a secret itself; keys never live in team.yaml: give the name of the \
                 environment variable that holds it",
            );
        } else if !is_env_var_name(name) {
            self.push(
                path,
                format!(
                    "expected an environment variable name (letters, digits, _), found {}",
                    quote(name)
                ),
            );
        }
    }

    fn http_url(&mut self, path: &str, url: &str) {
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            self.push(
                path,
                format!("expected an http:// or https:// URL, found {}", quote(url)),
            );
        }
    }

    fn argv(&mut self, path: &str, argv: &[String]) {
        if argv.first().is_none_or(|program| program.trim().is_empty()) {
            self.push(path, "expected a program and its arguments, found an empty list");
        }
    }
}

/// Every semantic problem in `config`, in section order.
pub(crate) fn check(config: &TeamConfig) -> Vec<Issue> {
    let mut issues = Issues::default();
    visibility(config, &mut issues);
    providers(config, &mut issues);
    models(config, &mut issues);
    tiers(config, &mut issues);
    policies(config, &mut issues);
    notifiers(config, &mut issues);
    personalities(config, &mut issues);
    sandbox(config, &mut issues);
    issues.0
}

/// Extra sandbox paths are absolute or under the runner's HOME: a relative one would mean a different
/// place for each agent's working directory.
fn sandbox(config: &TeamConfig, issues: &mut Issues) {
    let sandbox = &config.sandbox;
    if sandbox.program.trim().is_empty() {
        issues.push(
            "sandbox.program",
            "must name the bubblewrap program (default `bwrap`)",
        );
    }
    for (key, paths) in [
        ("extra_readable", &sandbox.extra_readable),
        ("extra_writable", &sandbox.extra_writable),
    ] {
        for (i, path) in paths.iter().enumerate() {
            if !(path.starts_with('/') || path.starts_with("~/")) {
                issues.push(
                    format!("sandbox.{key}[{i}]"),
                    format!(
                        "expected an absolute path or one starting with `~/`, found {}",
                        quote(path)
                    ),
                );
            }
        }
    }
}

fn visibility(config: &TeamConfig, issues: &mut Issues) {
    if !config.visibility.inspection_gates.t1_plan {
        issues.push(
            "visibility.inspection_gates.t1_plan",
            "the T1 plan gate is always on (required by design); remove the line or set it to true",
        );
    }
    issues.at_least_one(
        "visibility.gate_timeout_minutes",
        config.visibility.gate_timeout_minutes,
    );
}

fn providers(config: &TeamConfig, issues: &mut Issues) {
    for (name, provider) in &config.providers {
        let path = format!("providers.{name}");
        if let Some(url) = &provider.base_url {
            issues.http_url(&format!("{path}.base_url"), url);
        }
        if let Some(var) = &provider.api_key_env {
            issues.env_var_name(&format!("{path}.api_key_env"), var);
        }
        let timeouts = &provider.timeouts;
        for (key, value) in [
            ("connect_seconds", timeouts.connect_seconds),
            ("idle_seconds", timeouts.idle_seconds),
            ("request_seconds", timeouts.request_seconds),
            ("outage_seconds", timeouts.outage_seconds),
        ] {
            issues.at_least_one(&format!("{path}.timeouts.{key}"), value);
        }
    }
}

fn models(config: &TeamConfig, issues: &mut Issues) {
    for level in CapabilityLevel::ALL {
        if let Some(binding) = config.models.binding(level) {
            binding_ok(config, &format!("models.{level}"), binding, issues);
        }
    }
    for (model, price) in &config.models.prices {
        let path = format!("models.prices.{model}");
        for (key, value) in [
            ("input", Some(price.input)),
            ("output", Some(price.output)),
            ("cache_read", price.cache_read),
            ("cache_write", price.cache_write),
        ] {
            if value.is_some_and(|v| !v.is_finite() || v < 0.0) {
                issues.push(format!("{path}.{key}"), "expected a price of 0 or more");
            }
        }
    }
}

/// A model binding names a configured provider and sane sampling settings.
fn binding_ok(config: &TeamConfig, path: &str, binding: &ModelBinding, issues: &mut Issues) {
    if !config.providers.contains_key(&binding.provider) {
        let known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
        let hint = if known.is_empty() {
            "no providers are configured".to_string()
        } else {
            format!("configured providers: {}", known.join(", "))
        };
        issues.push(
            format!("{path}.provider"),
            format!("unknown provider {}; {hint}", quote(&binding.provider)),
        );
    }
    if let Err(why) = super::models::check_model_name(&binding.model) {
        issues.push(format!("{path}.model"), why);
    }
    if binding.max_tokens == Some(0) {
        issues.push(format!("{path}.max_tokens"), "must be at least 1");
    }
    if binding.temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
        issues.push(format!("{path}.temperature"), "expected a number from 0 to 2");
    }
}

/// A capability level that something uses must have a model.
fn level_bound(config: &TeamConfig, path: &str, level: CapabilityLevel, issues: &mut Issues) {
    if config.models.binding(level).is_none() {
        issues.push(
            path,
            format!("capability level {level} has no model; add models.{level}"),
        );
    }
}

fn tiers(config: &TeamConfig, issues: &mut Issues) {
    for tier in Tier::ALL {
        let path = format!("tiers.{tier}");
        let settings = config.tiers.get(tier);
        level_bound(
            config,
            &format!("{path}.capability"),
            config.tiers.capability(tier),
            issues,
        );
        match (&settings.command, config.tiers.runtime(tier)) {
            (Some(argv), Runtime::Command) => issues.argv(&format!("{path}.command"), argv),
            (None, Runtime::Command) => issues.push(
                format!("{path}.command"),
                "runtime command needs the program to start: set command: [program, args...]",
            ),
            (Some(_), runtime) => issues.push(
                format!("{path}.command"),
                format!(
                    "only used with runtime: command, but this tier's runtime is {}",
                    runtime.as_str()
                ),
            ),
            (None, _) => {}
        }
        if let Some(n) = settings.concurrency {
            issues.at_least_one(&format!("{path}.concurrency"), n);
        }
    }
}

fn policies(config: &TeamConfig, issues: &mut Issues) {
    issues.at_least_one(
        "retry.t3_mesh_timeout_minutes",
        config.retry.t3_mesh_timeout_minutes,
    );
    issues.at_least_one("retry.t3_mesh_rounds", config.retry.t3_mesh_rounds);

    let teachback = &config.teachback;
    issues.at_least_one(
        "teachback.pending_timeout_minutes",
        teachback.pending_timeout_minutes,
    );
    issues.at_least_one(
        "teachback.review_timeout_minutes",
        teachback.review_timeout_minutes,
    );
    issues.env_var_name("teachback.mode_env_var", &teachback.mode_env_var);
    for (i, name) in teachback.readonly_bash.iter().enumerate() {
        if readonly::command_named(name).is_none() {
            let known: Vec<&str> = readonly::READ_ONLY_COMMANDS.iter().map(|c| c.name).collect();
            issues.push(
                format!("teachback.readonly_bash[{i}]"),
                format!(
                    "expected one of the commands agency has a read-only grammar for ({}), found {}",
                    known.join(", "),
                    quote(name)
                ),
            );
        }
    }

    for (scope, limit) in [
        ("run", &config.budgets.run),
        ("workstream", &config.budgets.workstream),
        ("brief", &config.budgets.brief),
    ] {
        budget_ok(&format!("budgets.{scope}"), limit, issues);
    }

    let signoff = &config.signoff;
    match &signoff.judge_model {
        Some(binding) => binding_ok(config, "signoff.judge_model", binding, issues),
        None => level_bound(config, "signoff.judge", signoff.judge, issues),
    }
    if let Some(binding) = &signoff.auditor_model {
        binding_ok(config, "signoff.auditor_model", binding, issues);
    }
    issues.at_least_one("signoff.verify_timeout_seconds", signoff.verify_timeout_seconds);

    issues.at_least_one("runner.concurrency", config.runner.concurrency);
    issues.at_least_one("runner.claim_lease_seconds", config.runner.claim_lease_seconds);
    issues.at_least_one(
        "runner.unplaced_alert_seconds",
        config.runner.unplaced_alert_seconds,
    );
    for (workstream, labels) in &config.runner.workstream_labels {
        if workstream.trim().is_empty() {
            issues.push(
                "runner.workstream_labels".to_string(),
                "a workstream id (or `*` for every workstream) may not be empty",
            );
        }
        for label in labels {
            if !crate::placement::valid_label(label) {
                issues.push(
                    format!("runner.workstream_labels.{workstream}"),
                    format!("label {label:?}: expected 1 to 64 letters, digits, `-`, `_` or `.`"),
                );
            }
        }
    }
}

fn budget_ok(path: &str, limit: &BudgetLimit, issues: &mut Issues) {
    if limit.tokens == Some(0) {
        issues.push(
            format!("{path}.tokens"),
            "must be at least 1 (leave it unset for no limit)",
        );
    }
    if limit.usd.is_some_and(|usd| !usd.is_finite() || usd <= 0.0) {
        issues.push(
            format!("{path}.usd"),
            "expected an amount above 0 (leave it unset for no limit)",
        );
    }
}

fn notifiers(config: &TeamConfig, issues: &mut Issues) {
    for (i, notifier) in config.notifiers.iter().enumerate() {
        let path = format!("notifiers[{i}]");
        match notifier {
            NotifierConfig::Command { argv } => issues.argv(&format!("{path}.argv"), argv),
            NotifierConfig::Webhook { url } => issues.http_url(&format!("{path}.url"), url),
            NotifierConfig::Slack { webhook_url_env } => {
                issues.env_var_name(&format!("{path}.webhook_url_env"), webhook_url_env);
            }
        }
    }
}

fn personalities(config: &TeamConfig, issues: &mut Issues) {
    for (tier, domains) in &config.personalities.registry {
        for (domain, slug) in domains {
            let path = format!("personalities.registry.{tier}.{domain}");
            if !is_slug(slug) {
                issues.push(
                    path,
                    format!(
                        "expected a personality file slug (lowercase letters, digits, -), found {}",
                        quote(slug)
                    ),
                );
            }
        }
    }
}

/// `NAME_1`: what a POSIX shell accepts as a variable name.
fn is_env_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Key and token shapes people paste by mistake: provider prefixes, bearer tokens, URLs with credentials.
fn looks_like_secret(value: &str) -> bool {
    const PREFIXES: [&str; 6] = ["sk-", "sk_", "xoxb-", "xoxp-", "Bearer ", "https://hooks."];
    PREFIXES.iter().any(|p| value.starts_with(p))
}

/// `engineering-software-architect`.
fn is_slug(value: &str) -> bool {
    !value.is_empty()
        && !value.starts_with('-')
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

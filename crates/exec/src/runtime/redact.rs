//! Secret redaction for everything a runtime records. Values of environment variables whose names look
//! secret (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`) and any configured secrets are replaced by
//! `[redacted]` before an event reaches [`AgentHooks::record`], so an agent that prints its API key (or a
//! command that echoes it) does not put it on the blackboard.

use super::{AgentEvent, AgentHooks};

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Name fragments that mark an environment variable as secret.
const SECRET_NAME_PARTS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"];

/// Values shorter than this are not redacted: replacing every `1` or `on` in a transcript would hide more
/// than it protects, and real secrets are longer.
const MIN_SECRET_LEN: usize = 4;

/// Replaces known secret values in text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    // Longest first, so a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// Redacts the values of secret-looking variables in `env` and every string in `extra`.
    pub fn new<'a>(env: impl IntoIterator<Item = &'a (String, String)>, extra: &[String]) -> Self {
        let mut secrets: Vec<String> = env
            .into_iter()
            .filter(|(name, _)| looks_secret(name))
            .map(|(_, value)| value.clone())
            .chain(extra.iter().cloned())
            .filter(|value| value.len() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Self { secrets }
    }

    /// `text` with every secret replaced.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    /// `event` with its text fields redacted.
    pub fn event(&self, event: AgentEvent) -> AgentEvent {
        match event {
            AgentEvent::ToolCall {
                name,
                summary,
                allowed,
            } => AgentEvent::ToolCall {
                name,
                summary: self.redact(&summary),
                allowed,
            },
            AgentEvent::Said(text) => AgentEvent::Said(self.redact(&text)),
            AgentEvent::Note(text) => AgentEvent::Note(self.redact(&text)),
            usage @ AgentEvent::Usage(_) => usage,
            process @ AgentEvent::Process(_) => process,
        }
    }
}

/// Whether a variable name looks like it holds a secret.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
}

/// The hooks as a runtime records through them: every event redacted first.
#[derive(Clone, Copy)]
pub struct Recorder<'a> {
    hooks: &'a dyn AgentHooks,
    redactor: &'a Redactor,
}

impl std::fmt::Debug for Recorder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

impl<'a> Recorder<'a> {
    /// Records to `hooks` through `redactor`.
    pub fn new(hooks: &'a dyn AgentHooks, redactor: &'a Redactor) -> Self {
        Self { hooks, redactor }
    }

    /// Records `event`, redacted.
    pub fn record(&self, event: AgentEvent) {
        self.hooks.record(self.redactor.event(event));
    }

    /// `text` redacted, for what a runtime returns rather than records.
    pub fn redacted(&self, text: &str) -> String {
        self.redactor.redact(text)
    }

    /// Records a note, redacted.
    pub fn note(&self, text: impl Into<String>) {
        self.record(AgentEvent::Note(text.into()));
    }
}

/// `text` cut to at most `max` bytes on a character boundary, with `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_variables_and_configured_secrets_are_redacted() {
        let env = [
            ("ANTHROPIC_API_KEY".to_owned(), "sk-ant-123456".to_owned()),
            ("GITHUB_TOKEN".to_owned(), "ghp_abcdef".to_owned()),
            ("PATH".to_owned(), "/usr/bin".to_owned()),
            ("DB_PASSWORD".to_owned(), "no".to_owned()),
        ];
        let redactor = Redactor::new(&env, &["hunter22".to_owned()]);
        assert_eq!(
            redactor.redact("key sk-ant-123456 tok ghp_abcdef pw hunter22 path /usr/bin no"),
            "key [redacted] tok [redacted] pw [redacted] path /usr/bin no"
        );
        assert_eq!(
            redactor.event(AgentEvent::Said("sk-ant-123456".into())),
            AgentEvent::Said(REDACTED.into())
        );
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h…");
        assert_eq!(truncate("abc", 3), "abc");
    }
}

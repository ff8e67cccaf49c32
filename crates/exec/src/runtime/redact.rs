//! Secret redaction for everything a runtime records, with agency-core's [`Redactor`]: the values of the
//! task's environment variables whose names look secret, the provider keys the runtime was given, and
//! well-known token shapes are replaced (`[redacted:NAME]`) before an event reaches
//! [`RunnerLink::record`], so an agent that prints its API key (or a command that echoes it) does not put
//! it on the blackboard. The blackboard redacts again on write (`agency_store::RedactingBlackboard`), with
//! every secret the runner holds; this pass keeps the key out of what the runtime hands back as well.

pub use agency_core::redact::{Redactor, looks_secret};

use super::{AgentEvent, RunnerLink};

/// The name a provider key given to a runtime without its variable's name is shown by.
pub const PROVIDER_KEY: &str = "provider-key";

/// The redactor of one agent run: `env`'s secret-looking values, `secrets` (provider keys), token shapes.
pub fn redactor_for(env: &[(String, String)], secrets: &[String]) -> Redactor {
    let mut redactor = Redactor::from_env(env.iter().cloned(), &[]);
    for secret in secrets {
        redactor.add(PROVIDER_KEY, secret);
    }
    redactor
}

/// `event` with its text fields redacted.
pub fn redact_event(redactor: &Redactor, event: AgentEvent) -> AgentEvent {
    match event {
        AgentEvent::ToolCall {
            name,
            summary,
            allowed,
        } => AgentEvent::ToolCall {
            name,
            summary: redactor.redact(&summary).into_owned(),
            allowed,
        },
        AgentEvent::Said(text) => AgentEvent::Said(redactor.redact(&text).into_owned()),
        AgentEvent::Note(text) => AgentEvent::Note(redactor.redact(&text).into_owned()),
        usage @ AgentEvent::Usage(_) => usage,
        process @ AgentEvent::Process(_) => process,
    }
}

/// The runner link as a runtime records through them: every event redacted first.
#[derive(Clone, Copy)]
pub struct Recorder<'a> {
    link: &'a dyn RunnerLink,
    redactor: &'a Redactor,
}

impl std::fmt::Debug for Recorder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

impl<'a> Recorder<'a> {
    /// Records to `link` through `redactor`.
    pub fn new(link: &'a dyn RunnerLink, redactor: &'a Redactor) -> Self {
        Self { link, redactor }
    }

    /// Records `event`, redacted.
    pub fn record(&self, event: AgentEvent) {
        self.link.record(redact_event(self.redactor, event));
    }

    /// `text` redacted, for what a runtime returns rather than records.
    pub fn redacted(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
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
    fn secret_looking_variables_and_provider_keys_are_redacted() {
        let env = [
            ("ANTHROPIC_API_KEY".to_owned(), "sk-ant-123456".to_owned()),
            ("GITHUB_TOKEN".to_owned(), "ghp_abcdef".to_owned()),
            ("PATH".to_owned(), "/usr/bin".to_owned()),
            ("DB_PASSWORD".to_owned(), "no".to_owned()),
        ];
        let redactor = redactor_for(&env, &["hunter22".to_owned()]);
        assert_eq!(
            redactor.redact("key sk-ant-123456 tok ghp_abcdef pw hunter22 path /usr/bin no"),
            "key [redacted:ANTHROPIC_API_KEY] tok [redacted:GITHUB_TOKEN] pw [redacted:provider-key] path /usr/bin no"
        );
        assert_eq!(
            redact_event(&redactor, AgentEvent::Said("sk-ant-123456".into())),
            AgentEvent::Said("[redacted:ANTHROPIC_API_KEY]".into())
        );
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h…");
        assert_eq!(truncate("abc", 3), "abc");
    }
}

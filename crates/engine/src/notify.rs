//! Notifications: telling a human, through whatever team.yaml's `notifiers` name, that a gate is waiting,
//! an ALERT or HALT was raised, or the run ended.
//!
//! The seed's `notify_adapter.send()`: the runner only sends; how a reply becomes `agency approve` is each
//! notifier's own business, and the runner keeps polling the blackboard either way. Three notifiers exist:
//! a command (argv, shell-free, the notification as JSON on stdin), a webhook (the same JSON POSTed) and a
//! Slack incoming webhook (`{"text": ...}`, its URL read from the environment because it is a secret).
//!
//! Notifications are derived from the blackboard, not from call sites: the [`Outbox`] tails the run's
//! events (`gate_pending`, `alert`, `halt`, `run_status`), so a gate opened anywhere — a tier boundary, a
//! budget refusal inside a provider call, an escalation — is announced the same way. Each delivered
//! notification leaves a verbose `log` event carrying the sequence number it covered, so a resumed run
//! does not announce the same thing twice. A failing notifier never fails the run: it leaves a `log` event
//! naming the notifier (with any URL reduced to its host) and why.

use agency_core::GateId;
use agency_core::config::NotifierConfig;
use agency_core::event::payload::LogLine;
use agency_core::event::{Event, EventKind, EventPayload, NewEvent};
use agency_core::gate::{GateKind, GateStatus};
use agency_core::{RunId, Tier};
use agency_exec::process::{self, CommandSpec};
use agency_store::{Run, RunStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use std::sync::Arc;

use agency_store::Blackboard;

use crate::forge::Publisher;
use crate::http::{HttpError, clip, post_json};

pub use crate::http::{SEND_TIMEOUT, redact_url};

/// What a notification is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    /// A gate opened and waits for a decision.
    GatePending,
    /// The run ended with a branch (and maybe a pull request) to review.
    RunSucceeded,
    /// The run ended without a result (failed, halted, cancelled).
    RunFailed,
    /// An agent or the runner raised an ALERT: the phase is blocked.
    Alert,
    /// An agent raised a HALT: the run stopped.
    Halt,
}

impl NotificationKind {
    /// The wire name (`gate_pending`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::GatePending => "gate_pending",
            NotificationKind::RunSucceeded => "run_succeeded",
            NotificationKind::RunFailed => "run_failed",
            NotificationKind::Alert => "alert",
            NotificationKind::Halt => "halt",
        }
    }
}

/// One notification, exactly as a command reads it on stdin and a webhook receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    /// The run's full id (its short form, or any unique part at either end, works with `agency approve`).
    pub run: String,
    /// What it is about.
    pub kind: NotificationKind,
    /// The gate's kind (`t1_plan`, `budget`, ...), for gate notifications.
    pub gate: Option<String>,
    /// One line for a human.
    pub title: String,
    /// The details: a gate's tier summary (message, produced, next, anomalies), a signal's payload, the
    /// run's outcome.
    pub summary: Value,
    /// What happens next, and the commands that decide it.
    pub what_happens_next: Vec<String>,
    /// The branch to review, when there is one.
    pub branch: Option<String>,
    /// The pull request, when one was opened.
    pub url: Option<String>,
}

impl Notification {
    /// The plain-text form (Slack, logs): title, next steps, branch and pull request.
    pub fn text(&self) -> String {
        let short: String = self.run.chars().take(8).collect();
        let mut text = format!("[agency {short}] {}", self.title);
        for step in &self.what_happens_next {
            text.push_str(&format!("\n• {step}"));
        }
        if let Some(url) = &self.url {
            text.push_str(&format!("\nPull request: {url}"));
        }
        if let Some(branch) = &self.branch {
            text.push_str(&format!("\nBranch: {branch}"));
        }
        text
    }
}

/// Why one notifier could not deliver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotifyError {
    /// The Slack webhook variable is not set.
    #[error("{var} is not set; export it with the Slack incoming-webhook URL")]
    MissingUrl {
        /// The variable team.yaml names.
        var: String,
    },
    /// The command could not be started.
    #[error("could not run the command: {0}")]
    Spawn(String),
    /// The command ran and failed.
    #[error("the command ended with {status}: {stderr}")]
    Command {
        /// `exit 1`, `signal 9 (timed out after 10.0s)`, ...
        status: String,
        /// The tail of its stderr.
        stderr: String,
    },
    /// The HTTP request failed before an answer (connection, timeout).
    #[error("the request failed: {0}")]
    Http(String),
    /// The endpoint answered with an error status.
    #[error("the endpoint answered {status}: {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        body: String,
    },
}

impl From<HttpError> for NotifyError {
    fn from(error: HttpError) -> Self {
        match error {
            HttpError::Http(why) => NotifyError::Http(why),
            HttpError::Status { status, body } => NotifyError::Status { status, body },
        }
    }
}

/// One configured notification target, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notifier {
    /// Runs `argv` (no shell) with the notification JSON on stdin.
    Command {
        /// Program and arguments.
        argv: Vec<String>,
    },
    /// POSTs the notification JSON to `url`.
    Webhook {
        /// The endpoint.
        url: String,
    },
    /// POSTs `{"text": ...}` to a Slack incoming webhook.
    Slack {
        /// The variable that holds the URL (named in logs; the URL never is).
        var: String,
        /// The URL read from it, if it was set.
        url: Option<String>,
    },
}

impl Notifier {
    /// The notifier a team.yaml entry describes; `env` reads the Slack URL's variable.
    pub fn from_config(config: &NotifierConfig, env: &dyn Fn(&str) -> Option<String>) -> Notifier {
        match config {
            NotifierConfig::Command { argv } => Notifier::Command { argv: argv.clone() },
            NotifierConfig::Webhook { url } => Notifier::Webhook { url: url.clone() },
            NotifierConfig::Slack { webhook_url_env } => Notifier::Slack {
                var: webhook_url_env.clone(),
                url: env(webhook_url_env).filter(|u| !u.trim().is_empty()),
            },
        }
    }

    /// A secret-free name for logs: the command's program, a webhook's host, Slack's variable.
    pub fn describe(&self) -> String {
        match self {
            Notifier::Command { argv } => {
                format!("command {}", argv.first().map(String::as_str).unwrap_or("?"))
            }
            Notifier::Webhook { url } => format!("webhook {}", redact_url(url)),
            Notifier::Slack { var, .. } => format!("slack (${var})"),
        }
    }

    /// Delivers `notification`, within [`SEND_TIMEOUT`].
    pub async fn send(&self, notification: &Notification) -> Result<(), NotifyError> {
        match self {
            Notifier::Command { argv } => run_command(argv, notification).await,
            Notifier::Webhook { url } => {
                let body = serde_json::to_value(notification).unwrap_or(Value::Null);
                post_json(url, &[], &body).await?;
                Ok(())
            }
            Notifier::Slack { var, url } => {
                let url = url
                    .as_deref()
                    .ok_or_else(|| NotifyError::MissingUrl { var: var.clone() })?;
                post_json(url, &[], &json!({ "text": notification.text() })).await?;
                Ok(())
            }
        }
    }
}

async fn run_command(argv: &[String], notification: &Notification) -> Result<(), NotifyError> {
    let stdin = serde_json::to_vec(notification).unwrap_or_default();
    let spec = CommandSpec::from_argv(argv)
        .ok_or_else(|| NotifyError::Spawn("the argv is empty".into()))?
        .stdin(stdin)
        .timeout(SEND_TIMEOUT)
        .inherit_env("PATH")
        .inherit_env("HOME")
        .inherit_env("LANG");
    // The process API blocks while it supervises the child; keep the runner's thread free.
    let output = tokio::task::spawn_blocking(move || process::run(&spec))
        .await
        .map_err(|e| NotifyError::Spawn(e.to_string()))?
        .map_err(|e| NotifyError::Spawn(e.to_string()))?;
    if output.success() {
        return Ok(());
    }
    Err(NotifyError::Command {
        status: output.describe(),
        stderr: clip(output.stderr.text().trim()),
    })
}

/// Tails one run's events and announces what a human must hear, through every configured notifier.
pub(crate) struct Outbox {
    run: RunId,
    cursor: i64,
    notifiers: Vec<Notifier>,
    /// The run's events, read from here; delivery records written here.
    store: Arc<dyn Blackboard>,
    /// Gates the runner decides itself (`agency demo`) are not announced.
    auto_approve: bool,
    /// Publishes the run (push and pull request) when it succeeds, before the news goes out.
    publisher: Publisher,
}

impl Outbox {
    /// The outbox of `run` with the `notifiers` team.yaml configures, continuing after whatever an
    /// earlier runner already announced.
    pub(crate) fn open(
        run: RunId,
        notifiers: &[NotifierConfig],
        auto_approve: bool,
        publisher: Publisher,
    ) -> Outbox {
        let env = |var: &str| std::env::var(var).ok();
        let notifiers: Vec<Notifier> = notifiers.iter().map(|c| Notifier::from_config(c, &env)).collect();
        let store = publisher.store.clone();
        let cursor = if notifiers.is_empty() {
            0
        } else {
            last_notified(store.as_ref(), run)
        };
        Outbox {
            run,
            cursor,
            notifiers,
            store,
            auto_approve,
            publisher,
        }
    }

    /// Announces the events since the last call; on success, first publishes the branch (push and pull
    /// request, where a forge is configured). Never fails: problems are logged on the blackboard.
    pub(crate) async fn deliver(&mut self, record: &Run) {
        if self.notifiers.is_empty() {
            if record.status == RunStatus::Succeeded {
                crate::forge::publish(&self.publisher, record).await;
            }
            return;
        }
        const PAGE: usize = 200;
        loop {
            let Ok(page) = self.store.events_after(Some(self.run), self.cursor, PAGE) else {
                return;
            };
            for event in &page {
                self.cursor = event.seq;
                if let Some(notification) = notification_for(self, record, event).await {
                    self.send_all(event, &notification).await;
                }
            }
            if page.len() < PAGE {
                return;
            }
        }
    }

    async fn send_all(&self, event: &Event, notification: &Notification) {
        let mut delivered = 0;
        for notifier in &self.notifiers {
            match notifier.send(notification).await {
                Ok(()) => delivered += 1,
                Err(err) => {
                    let message = format!(
                        "notifier {} failed to send {}: {err}",
                        notifier.describe(),
                        notification.kind.as_str()
                    );
                    let _ = self.store.append_event(log_event(
                        self.run,
                        event.tier,
                        "normal",
                        "NOTIFY_FAILED",
                        message,
                    ));
                }
            }
        }
        let line = LogLine::new(
            "verbose",
            Some("NOTIFY"),
            format!(
                "{} sent to {delivered} of {} notifier(s)",
                notification.kind.as_str(),
                self.notifiers.len()
            ),
        );
        let mut record = NewEvent::typed(
            self.run,
            EventPayload::Log(LogLine {
                notified_seq: Some(event.seq),
                ..line
            }),
        );
        record.tier = event.tier;
        // Losing this record only risks announcing the event again after a resume.
        let _ = self.store.append_event(record);
    }
}

fn log_event(run: RunId, tier: Option<Tier>, level: &str, tag: &str, message: String) -> NewEvent {
    let mut event = NewEvent::typed(run, EventPayload::Log(LogLine::new(level, Some(tag), message)));
    event.tier = tier;
    event
}

/// The sequence number the last delivery record of `run` covered (0 when none).
fn last_notified(store: &dyn Blackboard, run: RunId) -> i64 {
    let mut after = 0;
    let mut notified = 0;
    while let Ok(page) = store.events_after(Some(run), after, 1000) {
        let Some(last) = page.last() else { break };
        after = last.seq;
        for event in &page {
            if event.kind == EventKind::Log
                && let Ok(EventPayload::Log(line)) = event.typed()
                && let Some(seq) = line.notified_seq
            {
                notified = notified.max(seq);
            }
        }
    }
    notified
}

/// The notification an event calls for, if any.
async fn notification_for(outbox: &Outbox, record: &Run, event: &Event) -> Option<Notification> {
    let run = record.id;
    let short = run.short();
    let base = |kind, title: String, summary: Value, next: Vec<String>| Notification {
        run: run.to_string(),
        kind,
        gate: None,
        title,
        summary,
        what_happens_next: next,
        branch: None,
        url: None,
    };
    let payload = match event.typed() {
        Ok(payload) => payload,
        // A signal whose record does not read is still a signal: announced as unreadable, not dropped.
        Err(error) if matches!(event.kind, EventKind::Alert | EventKind::Halt) => {
            let kind = if event.kind == EventKind::Alert {
                NotificationKind::Alert
            } else {
                NotificationKind::Halt
            };
            let title = format!("{} UNREADABLE: {error}", event.kind.as_str().to_ascii_uppercase());
            let next = vec![format!("`agency inspect {short}` shows the run")];
            return Some(base(kind, title, event.payload.clone(), next));
        }
        Err(_) => return None,
    };
    match payload {
        EventPayload::GatePending(opened) => {
            let id: GateId = opened.gate?;
            let gate = outbox.store.get_gate(id).ok()?;
            // A decided gate needs no one; auto-approved gates (the demo) are decided by the runner itself.
            // A halt gate is announced by its `halt` event, which carries the signal.
            if gate.status != GateStatus::Pending
                || (outbox.auto_approve && !gate.kind.needs_a_human())
                || gate.kind == GateKind::Halt
            {
                return None;
            }
            let title = gate.summary["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("the {} gate is waiting for a decision", gate.kind));
            let mut next = strings(&gate.summary["next"]);
            next.push(format!(
                "decide: `agency approve {short}` or `agency reject {short} --reason \"…\"`"
            ));
            let mut n = base(NotificationKind::GatePending, title, gate.summary.clone(), next);
            n.gate = Some(gate.kind.as_str().to_string());
            Some(unconfined(record, n))
        }
        // A gate that waits for a human past the gate timeout (budget, escalation) is announced again.
        EventPayload::Log(line) if line.tag.as_deref() == Some("REMINDER") => {
            let id: GateId = line.gate?;
            let gate = outbox.store.get_gate(id).ok()?;
            if gate.status != GateStatus::Pending {
                return None;
            }
            let title = format!("Reminder: {}", line.message);
            let next = vec![format!(
                "decide: `agency approve {short}` or `agency reject {short} --reason \"…\"`"
            )];
            let mut n = base(NotificationKind::GatePending, title, gate.summary.clone(), next);
            n.gate = Some(gate.kind.as_str().to_string());
            Some(unconfined(record, n))
        }
        EventPayload::Alert(signal) | EventPayload::Halt(signal) => {
            let (kind, label, next) = if event.kind == EventKind::Alert {
                (
                    NotificationKind::Alert,
                    "ALERT",
                    format!("the phase is blocked until a human decides: `agency inspect {short}`"),
                )
            } else {
                (
                    NotificationKind::Halt,
                    "HALT",
                    format!(
                        "all work of the run is stopped until a human acknowledges it: `agency inspect {short}`, \
                         then `agency ack {short} --note \"…\" --resume` or `--cancel`"
                    ),
                )
            };
            let title = format!(
                "{label} {}: {}",
                signal.category.as_deref().unwrap_or("signal"),
                signal.issue.as_deref().unwrap_or("")
            );
            // The channel gets the signal's record as written (Issue, Evidence, Impact, Recommended Action).
            Some(base(kind, title, event.payload.clone(), vec![next]))
        }
        EventPayload::RunStatus(change) => {
            let to: RunStatus = change.to.parse().ok()?;
            if to == RunStatus::Succeeded {
                let published = crate::forge::publish(&outbox.publisher, record).await;
                let branch = outbox.publisher.integration.clone();
                let title = match &published.url {
                    Some(url) => format!("Run {short} succeeded — review and merge the pull request {url}"),
                    None => format!("Run {short} succeeded — review and merge branch {branch}"),
                };
                let summary =
                    json!({ "goal": record.goal, "status": "succeeded", "accept": published.accept_summary });
                let next = vec!["nothing is merged until a human merges it".to_string()];
                let mut n = base(NotificationKind::RunSucceeded, title, summary, next);
                n.branch = Some(branch);
                n.url = published.url;
                return Some(n);
            }
            if !to.is_terminal() {
                return None;
            }
            let title = format!("Run {short} ended {}", to.as_str());
            let summary = json!({ "goal": record.goal, "status": to.as_str() });
            let next = vec![format!(
                "`agency inspect {short}` shows what failed; nothing was merged"
            )];
            Some(base(NotificationKind::RunFailed, title, summary, next))
        }
        _ => None,
    }
}

/// A summary's `next` as lines, whether it was written as one string or a list.
/// A gate's notification of a run with `sandbox.mode: off`: its title starts with `SANDBOX OFF` and its
/// first step is the whole warning, so no reader decides the gate without seeing it.
fn unconfined(record: &Run, mut n: Notification) -> Notification {
    if agency_core::config::sandbox_off_in(&record.config) {
        n.title = format!("SANDBOX OFF · {}", n.title);
        n.what_happens_next
            .insert(0, agency_core::config::SANDBOX_OFF_BANNER.to_owned());
    }
    n
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Notification {
        Notification {
            run: "0123abcd-0000-7000-8000-000000000000".into(),
            kind: NotificationKind::GatePending,
            gate: Some("t1_plan".into()),
            title: "Plan ready".into(),
            summary: json!({ "message": "Plan ready" }),
            what_happens_next: vec!["T4 spawns".into()],
            branch: None,
            url: None,
        }
    }

    #[test]
    fn the_json_form_names_the_kind_in_snake_case() {
        let value = serde_json::to_value(sample()).unwrap_or(Value::Null);
        assert_eq!(value["kind"], "gate_pending");
        assert_eq!(value["gate"], "t1_plan");
        assert_eq!(value["what_happens_next"], json!(["T4 spawns"]));
    }

    #[test]
    fn the_text_form_has_the_short_run_and_the_steps() {
        assert_eq!(sample().text(), "[agency 0123abcd] Plan ready\n• T4 spawns");
    }

    #[test]
    fn descriptions_never_show_a_webhook_path_or_a_slack_url() {
        let webhook = Notifier::Webhook {
            url: "https://hooks.example.com/services/T000/SECRET".into(),
        };
        assert_eq!(webhook.describe(), "webhook https://hooks.example.com/…");
        let slack = Notifier::from_config(
            &NotifierConfig::Slack {
                webhook_url_env: "SLACK_URL".into(),
            },
            &|_| Some("https://hooks.slack.com/services/SECRET".into()),
        );
        assert_eq!(slack.describe(), "slack ($SLACK_URL)");
    }

    #[test]
    fn next_reads_a_string_or_a_list() {
        assert_eq!(strings(&json!("go")), ["go"]);
        assert_eq!(strings(&json!(["a", "b"])), ["a", "b"]);
        assert!(strings(&Value::Null).is_empty());
    }

    #[tokio::test]
    async fn a_missing_slack_variable_is_an_error_naming_it() {
        let slack = Notifier::Slack {
            var: "AGENCY_SLACK_WEBHOOK".into(),
            url: None,
        };
        let err = slack.send(&sample()).await.err();
        assert_eq!(
            err.map(|e| e.to_string()).unwrap_or_default(),
            "AGENCY_SLACK_WEBHOOK is not set; export it with the Slack incoming-webhook URL"
        );
    }
}

//! Agent processes a runner left running when it died. Claude Code, Codex, pi and command agents each run
//! in their own process group, so a runner killed without a word (SIGKILL, a crash, a second Ctrl-C)
//! cannot take them with it: they go on editing the brief's worktree and spending its budget. So each
//! agent process is recorded as it starts (an `agent-process/<brief>` artifact: pid, group, start time,
//! boot id; [`record`]), and before a brief whose runner died is started again — by `agency run --resume`
//! taking back the old driver's claims, or by any runner taking back a claim whose lease ran out — what is
//! left of that process is stopped ([`Engine::stop_leftover`]): SIGTERM to its group, SIGKILL after a grace
//! period, and only if the pid still names the process recorded, so a recycled pid is never signalled.
//! What it found and did is an `ORPHAN` line in the log.

use agency_core::event::payload::LogLine;
use agency_core::event::{EventPayload, NewEvent};
use agency_core::{Brief, BriefId};
use agency_exec::process::{DEFAULT_KILL_GRACE, Leftover, ProcessIdentity, stop_leftover};
use agency_store::{Blackboard, NewArtifact};

use crate::engine::Engine;
use crate::error::{EngineError, Result};

/// The artifact that records who `brief`'s agent process is; the latest one is its current process.
pub fn artifact_name(brief: BriefId) -> String {
    format!("agent-process/{brief}")
}

/// Records that `brief`'s agent runs as `identity`. Written on its own, at once: a runner killed the next
/// moment must leave it on the blackboard.
pub(crate) fn record(store: &dyn Blackboard, brief: &Brief, identity: &ProcessIdentity) -> Result<()> {
    let bytes =
        serde_json::to_vec(identity).map_err(|e| EngineError::State(format!("agent process record: {e}")))?;
    let mut artifact = NewArtifact::new(brief.run, artifact_name(brief.id), "application/json", bytes);
    artifact.brief = Some(brief.id);
    store.put_artifact(artifact)?;
    Ok(())
}

impl Engine {
    /// Stops what is left of the agent process `brief`'s previous runner (`holder`, when known) started
    /// for it, before the brief is started again, and says so in the log. Nothing recorded, or the process
    /// gone: nothing happens. A process that cannot be looked at (no `/proc`) is said in the log and the
    /// brief restarts anyway: refusing to resume would not stop it either.
    pub(crate) async fn stop_leftover(&self, brief: &Brief, holder: Option<&str>) -> Result<()> {
        let Some(artifact) = self.store.latest_artifact(brief.run, &artifact_name(brief.id))? else {
            return Ok(());
        };
        let left_by = holder.map(|h| format!(", left by {h}")).unwrap_or_default();
        let identity: ProcessIdentity = match serde_json::from_slice(&artifact.bytes) {
            Ok(identity) => identity,
            Err(e) => {
                let message = format!(
                    "{}: its agent's process record (artifact {}) is unreadable ({e}); if it is still running, \
                     stop it by hand",
                    brief.title, artifact.meta.id
                );
                return self.log_leftover(brief, "normal", message, LogLine::default());
            }
        };
        let looked = {
            let identity = identity.clone();
            tokio::task::spawn_blocking(move || stop_leftover(&identity, DEFAULT_KILL_GRACE)).await
        };
        let process = format!("pid {}, group {}", identity.pid, identity.pgid);
        let mut details = LogLine {
            pid: Some(identity.pid),
            pgid: Some(identity.pgid),
            start_ticks: Some(identity.start_ticks),
            boot_id: Some(identity.boot_id.clone()),
            claimed_by: holder.map(str::to_string),
            ..LogLine::default()
        };
        let (level, found, message) = match looked {
            Ok(Ok(leftover)) => {
                let found = match &leftover {
                    Leftover::Gone => "gone",
                    Leftover::OtherBoot { .. } => "other_boot",
                    Leftover::Recycled { .. } => "recycled",
                    Leftover::Stopped { .. } => "stopped",
                };
                let account = leftover.describe();
                match leftover {
                    Leftover::Stopped {
                        members,
                        killed,
                        survivors,
                    } => {
                        details.members = Some(members);
                        details.killed = Some(killed);
                        details.survivors = Some(survivors);
                        let message = format!(
                            "{}: its agent was still running{left_by} ({process}): {account}",
                            brief.title
                        );
                        ("normal", found, message)
                    }
                    // Nothing was signalled: detail for `agency watch --verbose`.
                    _ => (
                        "verbose",
                        found,
                        format!("{}: its agent's process ({process}) {account}", brief.title),
                    ),
                }
            }
            Ok(Err(e)) => (
                "normal",
                "unknown",
                format!(
                    "{}: its agent's process ({process}) could not be looked at ({e}); if it is still \
                     running, stop it by hand",
                    brief.title
                ),
            ),
            Err(e) => (
                "normal",
                "unknown",
                format!(
                    "{}: stopping its agent's process ({process}) failed ({e}); if it is still running, stop \
                     it by hand",
                    brief.title
                ),
            ),
        };
        details.found = Some(found.to_string());
        self.log_leftover(brief, level, message, details)
    }

    fn log_leftover(&self, brief: &Brief, level: &str, message: String, details: LogLine) -> Result<()> {
        let line = LogLine {
            level: level.to_string(),
            tag: Some("ORPHAN".to_string()),
            message,
            ..details
        };
        let event = NewEvent::typed(brief.run, EventPayload::Log(line))
            .brief(brief.id)
            .tier(brief.tier);
        self.store.append_event(event)?;
        Ok(())
    }
}

//! Whether anybody drives a run. A run that is not ended but whose driver lock nobody holds has no runner
//! attached (it was killed, or its machine went away): `runs`, `inspect` and the dashboard say so, with
//! the command that resumes it — the one recorded when the run started (`--script FILE`, `--record` and
//! `--remote NAME` included).

use agency_core::RunId;
use agency_core::event::payload::LogLine;
use agency_core::event::{EventPayload, NewEvent};
use agency_store::{Blackboard, Run};

/// The tag of the log line that records how the run is resumed.
const RESUMABLE: &str = "RESUMABLE";

/// Records, at a run's start, the command that resumes it: with its script, and with `--record` when its
/// model calls are recorded, so a resumed run goes on as it started (a resumed recording keeps recording).
pub fn record_resume_command(
    store: &dyn Blackboard,
    run: RunId,
    script: Option<&std::path::Path>,
    recording: bool,
    remote: Option<&str>,
) {
    let mut command = format!("agency run --resume {}", run.short());
    if let Some(script) = script {
        let path = std::fs::canonicalize(script).unwrap_or_else(|_| script.to_path_buf());
        command.push_str(&format!(" --script {}", path.display()));
    }
    if recording {
        command.push_str(" --record");
    }
    if let Some(remote) = remote {
        command.push_str(&format!(" --remote {remote}"));
    }
    let event = NewEvent::typed(
        run,
        EventPayload::Log(LogLine {
            command: Some(command.clone()),
            remote: remote.map(str::to_string),
            ..LogLine::new("verbose", Some(RESUMABLE), format!("resume with `{command}`"))
        }),
    );
    // Best effort: without it the hint names the command without its script or `--record`.
    let _ = store.append_event(event);
}

/// The command that resumes `run`: the one recorded at its start, else the plain form.
pub fn resume_command(store: &dyn Blackboard, run: RunId) -> String {
    // Recorded among the run's first events: the first page holds it.
    let recorded = store.events_after(Some(run), 0, 50).ok().and_then(|page| {
        page.into_iter().find_map(|event| match event.typed() {
            Ok(EventPayload::Log(line)) if line.tag.as_deref() == Some(RESUMABLE) => line.command,
            _ => None,
        })
    });
    recorded.unwrap_or_else(|| format!("agency run --resume {}", run.short()))
}

/// The git remote `run` was started sharing its branches through (`agency run --remote NAME`), as recorded
/// with its resume command; `None` for a run on one machine (or one that recorded nothing).
pub fn recorded_remote(store: &dyn Blackboard, run: RunId) -> Option<String> {
    let page = store.events_after(Some(run), 0, 50).ok()?;
    page.into_iter().find_map(|event| match event.typed() {
        Ok(EventPayload::Log(line)) if line.tag.as_deref() == Some(RESUMABLE) => line.remote,
        _ => None,
    })
}

/// `running` or, for a run that is not ended and has no runner, `running (no runner attached)`.
pub fn status_text(store: &dyn Blackboard, run: &Run) -> String {
    if agency_store::unattached(store, run) {
        format!("{} (no runner attached)", run.status.as_str())
    } else {
        run.status.as_str().to_string()
    }
}

/// `team`, `goals` or `session` (see [`agency_store::RunKind`]).
pub fn run_kind(run: &Run) -> &'static str {
    agency_store::RunKind::of(run).as_str()
}

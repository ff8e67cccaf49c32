//! One module per subcommand, named after it, plus the few things they share: the invocation context,
//! opening the blackboard, and naming runs by prefix.

pub mod ack;
pub mod amendment;
pub mod approve;
pub mod attached;
pub mod cancel;
pub mod config;
pub mod dashboard;
pub mod demo;
pub mod explain;
pub mod gc;
pub mod goal;
pub mod hook;
pub mod init;
pub mod inspect;
pub mod models;
pub mod pause;
pub mod reject;
pub mod resume;
pub mod run;
pub mod runs;
pub mod show;
pub mod teachback;
pub mod variety;
pub mod watch;
pub mod worker;

use std::path::PathBuf;
use std::sync::Arc;

use agency_core::RunId;
use agency_core::config::TeamConfig;
use agency_core::gate::{Gate, GateKind, GateStatus};
use agency_core::redact::Redactor;
use agency_store::{Blackboard, RedactingBlackboard, StoreError};

use crate::error::{CommandError, CommandResult, ErrorKind};
use crate::workspace::{Overrides, Workspace};

/// What every command may need to know about where it runs.
#[derive(Debug, Clone)]
pub struct Context {
    /// The directory agency was started in.
    pub cwd: PathBuf,
    /// `--db` and `--config` overrides.
    pub overrides: Overrides,
}

impl Context {
    /// The initialised workspace around the current directory.
    pub fn workspace(&self) -> CommandResult<Workspace> {
        Workspace::discover(&self.cwd, &self.overrides)
    }

    /// Opens the blackboard for reading and writing: the SQLite file, or the PostgreSQL database `--db`
    /// names, with everything written to it redacted ([`Context::redactor`]).
    pub fn open_store(&self) -> CommandResult<Arc<dyn Blackboard>> {
        let ws = self.workspace()?;
        if !ws.has_db() {
            return Err(
                CommandError::new(ErrorKind::NoWorkspace, format!("no blackboard at {}", ws.db))
                    .hint("run `agency init` at the top of your git repository"),
            );
        }
        let store = ws.db.open()?;
        Ok(RedactingBlackboard::wrap(store, self.redactor()))
    }

    /// Reads and validates the configuration this workspace uses (or `--config`'s): its path as shown in
    /// messages, and what it says. A file that cannot be read means no workspace here.
    pub fn team_config(&self) -> CommandResult<(String, TeamConfig)> {
        let path = match &self.overrides.config {
            Some(path) => path.clone(),
            None => self.workspace()?.config,
        };
        let text = std::fs::read_to_string(&path).map_err(|err| {
            CommandError::new(
                ErrorKind::NoWorkspace,
                format!("cannot read {}: {err}", path.display()),
            )
            .hint("run `agency init` to write a default team.yaml")
        })?;
        let shown = path.display().to_string();
        let config = agency_core::config::parse_team_config(&text, &shown)
            .map_err(|err| CommandError::input(err.to_string()))?;
        Ok((shown, config))
    }

    /// What is redacted from everything this invocation writes to the blackboard: the values of this
    /// process's variables whose names look secret, of those team.yaml reads secrets from, and known token
    /// shapes. A team.yaml that cannot be read gives the default configuration's variables: the command
    /// that needs it reports why.
    pub fn redactor(&self) -> Redactor {
        let names = self
            .team_config()
            .map(|(_, team)| team.secret_env_names())
            .unwrap_or_else(|_| TeamConfig::default().secret_env_names());
        Redactor::from_process_env(&names)
    }
}

/// Maps a store error to the CLI's error, keeping the store's message.
pub fn store_error(err: StoreError) -> CommandError {
    err.into()
}

/// Resolves what the user typed (a short or full id, or any unique part at either end) to a run.
pub fn resolve_run(store: &dyn Blackboard, typed: &str) -> CommandResult<RunId> {
    Ok(store.resolve_run(typed)?)
}

/// The gate `approve`/`reject` act on: the oldest pending gate that is not a manual pause (a pause is
/// released with `agency resume`, so approving a plan never silently un-pauses a run).
pub fn gate_to_decide(store: &dyn Blackboard, run: RunId) -> CommandResult<Gate> {
    let pending: Vec<Gate> = store
        .list_gates(run)?
        .into_iter()
        .filter(|g| g.status == GateStatus::Pending)
        .collect();
    if let Some(gate) = pending.iter().find(|g| g.kind != GateKind::Pause) {
        return Ok(gate.clone());
    }
    let mut error = CommandError::new(
        ErrorKind::NothingToDo,
        format!("run {} has no gate waiting for a decision", run.short()),
    );
    if !pending.is_empty() {
        error = error.hint(format!(
            "the run is paused; `agency resume {}` releases it",
            run.short()
        ));
    }
    Err(error)
}

/// Who is deciding, for the record: `cli:<user>`, the name the passwd database gives the process's
/// (effective) uid, or `cli:uid:<n>` when it gives none. Never `$USER` or `$LOGNAME`: whoever starts the
/// process sets those, so they would let anyone sign a decision as anyone.
pub fn decider() -> String {
    match whoami::username() {
        Ok(name) if !name.is_empty() => format!("cli:{name}"),
        _ => format!("cli:uid:{}", rustix::process::geteuid().as_raw()),
    }
}

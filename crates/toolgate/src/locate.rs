//! Where the hook finds its brief, blackboard and configuration. An agent a runner spawned in a run gets its
//! brief and the runner's gate service from its environment ([`ENV_BRIEF`], [`ENV_GATE_SOCKET`],
//! [`ENV_GATE_CAPABILITY`]) and asks the service, which has the blackboard; one started with the blackboard's
//! path instead gets [`ENV_BRIEF`], [`ENV_DB`], [`ENV_CONFIG`], and the rollout mode in [`ROLLOUT_ENV_VAR`]; a
//! plain session finds `.agency/` above the session's working directory, its brief through a binding made
//! by `agency teachback start`, and its rollout mode in the team.yaml committed at HEAD
//! ([`HookEnv::committed_team_config`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agency_core::config::{ROLLOUT_ENV_VAR, TeamConfig, parse_team_config};

/// The gate service's socket, in a runner-spawned agent's environment. The runtime sets it and this and the
/// next names are the same as `agency_exec::gate`'s (agency-cli's tests check that they agree: this crate
/// does not depend on the runtimes).
pub const ENV_GATE_SOCKET: &str = "AGENCY_GATE_SOCKET";
/// The agent's capability for the gate service, in its environment.
pub const ENV_GATE_CAPABILITY: &str = "AGENCY_GATE_CAPABILITY";
/// The workspace's directory at the repository's top level (agency-cli's `workspace::AGENCY_DIR`).
pub const AGENCY_DIR: &str = ".agency";
/// The team configuration in [`AGENCY_DIR`].
pub const CONFIG_FILE: &str = "team.yaml";
/// The blackboard in [`AGENCY_DIR`].
pub const DB_FILE: &str = "agency.db";

/// The brief a runner-spawned agent works on (its id, or any unique part at either end). Its presence makes
/// the gate fail closed.
pub const ENV_BRIEF: &str = "AGENCY_BRIEF";
/// The blackboard database.
pub const ENV_DB: &str = "AGENCY_DB";
/// The team configuration.
pub const ENV_CONFIG: &str = "AGENCY_CONFIG";

/// The hook's environment, read once.
#[derive(Debug, Clone, Default)]
pub struct HookEnv {
    /// [`ENV_BRIEF`], when set and not empty.
    pub brief: Option<String>,
    /// [`ENV_DB`].
    pub db: Option<PathBuf>,
    /// [`ENV_CONFIG`].
    pub config: Option<PathBuf>,
    /// [`ROLLOUT_ENV_VAR`], when set and not empty: the rollout mode a runner resolved for its agents.
    pub rollout: Option<String>,
    /// The process's working directory, used when the event carries no `cwd`.
    pub cwd: Option<PathBuf>,
    /// The runner's gate service and this agent's capability ([`ENV_GATE_SOCKET`], [`ENV_GATE_CAPABILITY`]),
    /// when both are set: the hook then asks the service rather than reading any blackboard.
    pub gate: Option<GateEnv>,
}

/// Where a runner-spawned agent's gate service is, and its capability.
#[derive(Clone, Default)]
pub struct GateEnv {
    /// The service's unix socket.
    pub socket: PathBuf,
    /// The capability (a secret; not shown by `Debug`).
    pub token: String,
}

impl std::fmt::Debug for GateEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateEnv")
            .field("socket", &self.socket)
            .field("token", &"<redacted>")
            .finish()
    }
}

impl HookEnv {
    /// Reads the environment.
    pub fn from_process() -> HookEnv {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        HookEnv {
            brief: var(ENV_BRIEF).map(|v| v.to_string_lossy().into_owned()),
            db: var(ENV_DB).map(PathBuf::from),
            config: var(ENV_CONFIG).map(PathBuf::from),
            rollout: var(ROLLOUT_ENV_VAR).map(|v| v.to_string_lossy().into_owned()),
            cwd: std::env::current_dir().ok(),
            gate: match (var(ENV_GATE_SOCKET), var(ENV_GATE_CAPABILITY)) {
                (Some(socket), Some(token)) => Some(GateEnv {
                    socket: PathBuf::from(socket),
                    token: token.to_string_lossy().into_owned(),
                }),
                _ => None,
            },
        }
    }

    /// The `.agency/` root above `cwd` (the event's, else the process's).
    fn root(&self, event_cwd: Option<&Path>) -> Option<PathBuf> {
        let start = event_cwd.or(self.cwd.as_deref())?;
        start
            .ancestors()
            .find(|dir| dir.join(AGENCY_DIR).is_dir())
            .map(Path::to_path_buf)
    }

    /// The blackboard to use, if any can be found (it may not exist).
    pub fn db_path(&self, event_cwd: Option<&Path>) -> Option<PathBuf> {
        self.db
            .clone()
            .or_else(|| self.root(event_cwd).map(|r| r.join(AGENCY_DIR).join(DB_FILE)))
    }

    /// The team configuration: the file when there is one, the defaults when there is none.
    pub fn team_config(&self, event_cwd: Option<&Path>) -> Result<TeamConfig, String> {
        let path = self
            .config
            .clone()
            .or_else(|| self.root(event_cwd).map(|r| r.join(AGENCY_DIR).join(CONFIG_FILE)));
        let Some(path) = path.filter(|p| p.is_file()) else {
            return Ok(TeamConfig::default());
        };
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        parse_team_config(&text, &path.display().to_string()).map_err(|e| e.to_string())
    }

    /// The team configuration as committed at HEAD in the repository holding `.agency/` (`git cat-file blob
    /// HEAD:./.agency/team.yaml`), never the working tree's, which an agent may have just written. The
    /// defaults (rollout mode enforce) when there is none to read: no `.agency/` found, not a repository, no
    /// commit yet, the file never committed, or git not runnable. A committed file that does not parse is an
    /// error.
    pub fn committed_team_config(&self, event_cwd: Option<&Path>) -> Result<TeamConfig, String> {
        let Some(root) = self.root(event_cwd) else {
            return Ok(TeamConfig::default());
        };
        let spec = format!("HEAD:./{AGENCY_DIR}/{CONFIG_FILE}");
        let output = Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(["cat-file", "blob", &spec])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        let text = match output {
            Ok(output) if output.status.success() => String::from_utf8(output.stdout)
                .map_err(|_| format!("{spec} in {}: not UTF-8", root.display()))?,
            _ => return Ok(TeamConfig::default()),
        };
        parse_team_config(&text, &format!("{spec} in {}", root.display())).map_err(|e| e.to_string())
    }
}

//! One client session's goal state, kept between `agency hook` and `agency goal` invocations in
//! `.agency/goal-sessions/<session>.json` (in the temporary directory when the repository has no
//! `.agency/`): the goal hooks' counters, the loop's state (`agency goal loop`), the loop judge's last
//! verdict, and the sign-off judge chosen for the session (`agency goal judge`).
//!
//! Reading fails open: a missing or unreadable file is a fresh session, so a broken file can never trap a
//! session in its loop.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{CommandError, CommandResult};
use crate::workspace::AGENCY_DIR;

/// Whether the Stop hook keeps the session working on its open goals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopState {
    /// The loop runs: the Stop hook keeps the session working while goals are open and budget remains.
    #[default]
    On,
    /// Paused (by `agency goal loop pause` or the loop judge): the session may stop; `resume` continues
    /// with the continuations already spent.
    Paused,
    /// Cleared: off, its counters forgotten, until `agency goal loop start`.
    Off,
}

impl LoopState {
    /// The word shown and parsed.
    pub fn as_str(self) -> &'static str {
        match self {
            LoopState::On => "on",
            LoopState::Paused => "paused",
            LoopState::Off => "off",
        }
    }
}

/// A session's state, kept between invocations.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Session {
    /// File-changing tool calls since plan.md last changed (the reminder's counter).
    #[serde(default)]
    pub edits_since_plan: u32,
    /// Continuations the Stop hook forced in the current turn.
    #[serde(default)]
    pub stop_blocks: u32,
    /// The loop's state.
    #[serde(default, rename = "loop")]
    pub loop_state: LoopState,
    /// Why the loop was last paused (by whom, and the loop judge's reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_because: Option<String>,
    /// The sign-off judge for this session's `agency goal complete`, as `PROVIDER/MODEL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_model: Option<String>,
    #[serde(skip)]
    path: Option<PathBuf>,
}

impl Session {
    /// The state of session `session_id` of the repository at `root`; a fresh one when there is none, and
    /// one that is never saved when there is no session id.
    pub fn load(root: &Path, session_id: Option<&str>) -> Session {
        let Some(id) = session_id.filter(|s| !s.is_empty()) else {
            return Session::default();
        };
        let path = session_path(root, id);
        let mut session: Session = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        session.path = Some(path);
        session
    }

    /// Whether the state is kept between invocations (the session has an id).
    pub fn is_kept(&self) -> bool {
        self.path.is_some()
    }

    /// Saves the state; failures are ignored (the goal hooks fail open).
    pub fn save(&self) {
        let _ = self.try_save();
    }

    /// Saves the state, saying what failed.
    pub fn try_save(&self) -> CommandResult {
        let Some(path) = &self.path else {
            return Err(CommandError::input(
                "no session id: a session's loop state is kept per session".to_string(),
            )
            .hint("pass --session ID (pi's extension passes its session id)"));
        };
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
            std::fs::write(path, bytes)
        };
        write().map_err(|e| CommandError::internal(format!("cannot write {}: {e}", path.display())))
    }
}

/// Where session `id`'s state is kept.
fn session_path(root: &Path, id: &str) -> PathBuf {
    let name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    // Without an agency workspace the state goes to the temporary directory rather than creating
    // `.agency/` in someone's repository; it must be kept somewhere, or the stop budget never runs out.
    let dir = if root.join(AGENCY_DIR).is_dir() {
        root.join(AGENCY_DIR).join("goal-sessions")
    } else {
        let key: String = root
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        std::env::temp_dir().join("agency-goal-sessions").join(key)
    };
    dir.join(format!("{name}.json"))
}

/// Continuations the Stop hook may force in one turn.
pub const ENV_STOP_BUDGET: &str = "AGENCY_GOAL_STOP_BUDGET";
const DEFAULT_STOP_BUDGET: u32 = 8;

/// The continuations the Stop hook may force in one turn ([`ENV_STOP_BUDGET`], default 8).
pub(super) fn stop_budget() -> u32 {
    env_number(ENV_STOP_BUDGET, DEFAULT_STOP_BUDGET)
}

/// A count from the environment variable `name`, or `default` when it is unset or not a number.
pub(super) fn env_number(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

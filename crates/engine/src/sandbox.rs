//! Which OS sandbox an agent or a verify command gets ([`agency_exec::sandbox`]), from team.yaml's
//! `sandbox` section. Out of every sandbox: the repository's `.agency/` (the blackboard, team.yaml, the
//! other agents' homes), the worktrees directory, [`crate::EngineOptions::hidden`] and the user's
//! credentials. An agent that starts processes (every external runtime; the built-in agent when it may run
//! commands) does not start where the sandbox cannot be set up; with `sandbox.mode: off` it starts, and a
//! `SANDBOX` line in the run's log says it runs unconfined.

use std::path::{Path, PathBuf};

use agency_core::{Brief, config::SandboxMode};
use agency_exec::runtime::{Access, Runtime};
use agency_exec::sandbox::{self, Sandboxing};

use crate::engine::Engine;
use crate::error::{EngineError, Result};

impl Engine {
    /// The sandbox team.yaml asks for (see the module docs for what it hides).
    pub(crate) fn sandboxing(&self) -> Sandboxing {
        let root = self.repo.root();
        let absolute =
            |path: &Path| std::path::absolute(root.join(path)).unwrap_or_else(|_| path.to_path_buf());
        let mut hidden: Vec<PathBuf> = vec![root.join(".agency"), absolute(&self.options.worktrees)];
        hidden.extend(self.options.hidden.iter().map(|p| absolute(p)));
        let home = std::env::var_os("HOME").map(PathBuf::from);
        sandbox::configured(&self.config.sandbox, &hidden, home.as_deref())
    }

    /// The sandbox `brief`'s agent runs in. An agent that starts processes is refused (an error naming
    /// why and the way out) where the sandbox cannot be set up; with the sandbox off it is allowed, and
    /// the run's log says so.
    pub(crate) fn agent_sandbox(
        &self,
        brief: &Brief,
        runtime: &dyn Runtime,
        access: Access,
    ) -> Result<Sandboxing> {
        let starts_processes = runtime.name() != "builtin" || access == Access::ReadWrite;
        if self.config.sandbox.mode == SandboxMode::Off {
            if starts_processes {
                self.log_at(
                    brief.run,
                    Some(brief.tier),
                    "normal",
                    "SANDBOX",
                    format!(
                        "WARN: {} runs WITHOUT a sandbox (team.yaml `sandbox.mode: off`): it can read the \
                         blackboard and the runner's environment and write wherever the runner can",
                        brief.title
                    ),
                )?;
            }
            return Ok(Sandboxing::Off);
        }
        let sandboxing = self.sandboxing();
        if let Sandboxing::On(policy) = &sandboxing
            && starts_processes
        {
            policy.probe().map_err(|e| {
                EngineError::Config(format!(
                    "{} ({} agent) was not started: {e}",
                    brief.title,
                    runtime.name()
                ))
            })?;
        }
        Ok(sandboxing)
    }
}

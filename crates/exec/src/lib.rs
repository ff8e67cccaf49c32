//! Processes, git worktrees and agent runtimes: everything agency does to the machine it runs on.
//!
//! - [`process`] runs children without a shell, each in its own process group with a deadline; on timeout
//!   or cancel the whole group is terminated, then killed. Output is captured as a capped tail, and the
//!   environment is allow-listed. [`command_line`] splits a configured command string into an argv and
//!   refuses shell syntax.
//! - [`git`] drives the git CLI through [`process`]: one worktree and branch per brief
//!   ([`branch_name`] says how branches are named), commits on an agent's behalf, diffs, and merges that
//!   report conflicts with their files instead of resolving them.
//! - [`gc`] finds and removes the worktrees and branches of finished runs.
//! - [`sandbox`] wraps an agent's processes and verify commands in bubblewrap: its worktree writable, the
//!   blackboard, other worktrees, credentials and the runner's `/proc` out of reach.
//! - [`runtime`] is the contract every agent runtime keeps (the built-in agent, Claude Code, Codex, ...).
//!
//! Nothing here knows about the blackboard or the runner: callers pass in what they know (a timeout, a
//! cancel token, a "run finished" predicate) and get plain results back.

pub mod branch_name;
pub mod command_line;
pub mod gate;
pub mod gc;
pub mod git;
pub mod process;
pub mod runtime;
pub mod sandbox;

pub use branch_name::{brief_branch_name, parse_brief_branch, sanitize_ref_component};
pub use command_line::{CommandLineError, split_command_line};
pub use gc::{GcReport, Leftover, finished_run_leftovers, remove_leftovers};
pub use git::{
    ChangeKind, CommitInfo, CommitOutcome, Diff, DiffHead, FileChange, GitError, GitOptions, Identity,
    MergeChain, MergeOutcome, RemoteAccess, Repo, WorktreeInfo, WorktreeSweep, redact_url_credentials,
};
pub use process::{
    CancelToken, Captured, CommandSpec, EnvPolicy, Output, ProcessError, RunningChild, run, run_cancellable,
    spawn,
};
pub use sandbox::{Network, SandboxError, SandboxPolicy, Sandboxing};

//! (in progress) Processes, git worktrees and agent runtimes.

//! `agency-flow` is the runner's decision core: what the engine does next, decided by plain functions of
//! plain values. Nothing here reads the blackboard, touches git, runs an agent or asks the clock: the
//! engine gathers what a decision needs (a snapshot, read incrementally as its passes always did), asks
//! the core, and carries the answer out through its executors. So every decision is tested here with
//! values alone, and property-tested over generated runs.
//!
//! - [`agreement`]: agreement verification at a handoff (seed 003's L0/L1/L2), and when a mismatch is
//!   significant;
//! - [`amendments`]: what a workstream's path becomes when an approved path amendment applies;
//! - [`attempts`]: which attempt of each title is the current one, and whether a squad's tasks are done;
//! - [`calibration`]: whether a domain's calibration scores a new workstream's brief (Learning II's
//!   setting);
//! - [`stages`]: which stage of the plan starts, which workstreams are examined for a merge, when the run
//!   goes to T1's acceptance — the walk over the plan's stages that every pass makes;
//! - [`conflicts`]: T2's conflict cycles — back to the specialists, then T1's ruling, then a human;
//! - [`gates`]: where a brief stands at its gate (open it, wait, go on, re-invoke);
//! - [`verdicts`]: a squad's joint verdict and what it does (merge, retry the rejected slices, escalate);
//! - [`merges`]: handing a slice over and merging a squad's slices — whether an implementer changed
//!   anything, whether a squad's round is judged, the merge order, what a merge conflict sends where;
//! - [`mesh`]: the T3 mesh's drafts, their overlaps, and what a closed round leads to (commit, reconcile,
//!   escalate to the domain's specialist);
//! - [`start`]: where an agent starts — how many briefs a runner claims, what a writer's branch starts
//!   from, what a reader checks out, when a worktree made ahead is used;
//! - [`narration`]: what the tier-level lines of the live log say (a tier's agents started, its work
//!   ready);
//! - [`placement`]: which runner may take which brief, and which waiting briefs no live runner can take;
//! - [`summaries`]: what a human reads at a tier's gate (the line, what was produced, what approval
//!   starts, what the output flags);
//! - [`tiers`]: what comes next for a brief whose agent reported, per tier (the mesh, the synthesis, the
//!   acceptance), and what a failure or a rejection at a gate leads to (retry or escalate);
//! - [`ladder`]: the escalation ladder past its first rung (a gate rejection's retry, where an escalation
//!   lands, a HALT's answer);
//! - [`gate_timing`]: what a pending gate's wait calls for, reminders, the monotonic gate clock;
//! - [`stall`]: whether a quiet run is stalled, and what each workstream waits on;
//! - [`budgets`]: what a budget's exhaustion opens and a human's answer does;
//! - [`outage`]: what a provider's outage pauses and when the pause is released;
//! - [`reports`]: what a finished agent's end means for its brief;
//! - [`previous`]: what a retry is told of its previous attempt.

pub mod agreement;
pub mod amendments;
pub mod attempts;
pub mod budgets;
pub mod calibration;
pub mod conflicts;
pub mod gate_timing;
pub mod gates;
pub mod ladder;
pub mod merges;
pub mod mesh;
pub mod narration;
pub mod outage;
pub mod placement;
pub mod previous;
pub mod reports;
pub mod stages;
pub mod stall;
pub mod start;
pub mod summaries;
pub mod tiers;
pub mod verdicts;

pub use attempts::{Attempt, OPEN, current_done_tasks, latest_of};
pub use gates::{AtGate, EscalationGateStep};
pub use stages::{ApprovedPlan, StageProgress, StageStep, StageWalk};
pub use verdicts::SquadVerdict;

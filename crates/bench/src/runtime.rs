//! The bench's agents: each finishes at once with the output its role needs, but goes through the runner's
//! runner link where a real agent does — a teachback for every brief that carries variety (blocking ones are
//! reviewed by the parent tier's scripted model), the tool gate before an edit, a recorded tool call — so
//! the runner's side of each lifecycle is exercised in full. The agents' own work (building their
//! answers, writing one file) is timed so it can be taken out of the runner's figure.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agency_core::teachback::Teachback;
use agency_core::tiers::BriefRole;
use agency_exec::runtime::{
    AgentEvent, AgentOutcome, AgentReport, AgentStop, AgentTask, Evidence, ReportStatus, RunnerLink, Runtime,
    RuntimeError, ToolCallView, ToolDecision,
};
use agency_llm::{BoxFuture, CancelToken};
use serde_json::{Value, json};

use crate::measure::thread_cpu;

/// Agents that report at once.
#[derive(Debug)]
pub struct InstantRuntime {
    plan: Value,
    squad: Value,
    /// Nanoseconds of CPU the agents spent on their own work (not in the runner's link).
    agent_ns: AtomicU64,
}

impl InstantRuntime {
    /// Agents for a plan of `workstreams` workstreams of `tasks` tasks each.
    pub fn new(workstreams: usize, tasks: usize, verify: Option<String>) -> Self {
        let contract = |done_when: &str| match &verify {
            Some(cmd) => json!({ "done_when": done_when, "verify": cmd }),
            None => json!({ "done_when": done_when }),
        };
        let ids: Vec<String> = (0..workstreams).map(|w| format!("ws-{w:05}")).collect();
        let plan = json!({
            "run_id": "00000000-0000-4000-8000-000000000000",
            "goal_anchor": "(filled in by agency)",
            "complexity": "medium",
            "retry_budget_multiplier": 1,
            "workstreams": ids.iter().map(|id| json!({
                "id": id,
                "name": id,
                "domain": "backend",
                "tier_path": ["t3", "t4", "t5"],
                "parallel_group": "A",
                "notes": "bench",
                "variety": { "novelty": 2, "scope": 2, "uncertainty": 2, "risk": 2 },
                "contract": contract("every slice is written"),
            })).collect::<Vec<_>>(),
            "parallelism": { "groups": { "A": ids }, "sequence": ["A"] },
            "self_critique_summary": "Independent slices.",
        });
        // Variety 8: a blocking teachback, reviewed by the squad lead's model.
        let squad = json!({
            "tasks": (0..tasks).map(|t| json!({
                "title": format!("task-{t:05}"),
                "instructions": format!("Write slice {t}."),
                "variety": { "novelty": 2, "scope": 2, "uncertainty": 2, "risk": 2 },
                "contract": contract("the slice file exists"),
            })).collect::<Vec<_>>(),
        });
        InstantRuntime {
            plan,
            squad,
            agent_ns: AtomicU64::new(0),
        }
    }

    /// CPU the agents spent on their own work.
    pub fn agent_cpu(&self) -> Duration {
        Duration::from_nanos(self.agent_ns.load(Ordering::Relaxed))
    }

    /// Adds the CPU spent since `start` to the agents' account.
    fn charge(&self, start: Duration) {
        let spent = thread_cpu().saturating_sub(start);
        self.agent_ns.fetch_add(
            u64::try_from(spent.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    fn output(&self, task: &AgentTask, role: BriefRole) -> Result<Value, RuntimeError> {
        Ok(match role {
            BriefRole::Plan => self.plan.clone(),
            BriefRole::SquadLead => self.squad.clone(),
            BriefRole::Implementer => {
                let file = task.worktree.join(format!("{}.txt", task.brief.id));
                std::fs::write(&file, format!("{}\n", task.brief.title))
                    .map_err(|e| RuntimeError::Other(format!("{}: {e}", file.display())))?;
                json!({})
            }
            // T5 and T1's acceptance are sign-offs; their judges answer in text (see `work`).
            BriefRole::Verifier | BriefRole::Accept => Value::Null,
            other => {
                return Err(RuntimeError::Other(format!(
                    "the bench plan has no {} briefs",
                    other.as_str()
                )));
            }
        })
    }

    async fn work(&self, task: &AgentTask, link: &dyn RunnerLink) -> Result<AgentOutcome, RuntimeError> {
        let role = BriefRole::of(&task.brief);
        if task.brief.variety.is_some() {
            let start = thread_cpu();
            let teachback = Teachback {
                building: task.brief.title.clone(),
                key_constraints: vec!["stay inside the worktree".into()],
                interfaces: vec![],
                files: Vec::new(),
                approach: "write the slice".into(),
                most_likely_wrong: "nothing much".into(),
                least_confident: "the file name".into(),
                first_action: None,
            };
            self.charge(start);
            link.teachback(&teachback)
                .await
                .map_err(|e| RuntimeError::Other(format!("teachback: {e}")))?;
        }
        if role == BriefRole::Implementer {
            let input = json!({ "path": "slice.txt" });
            let call = ToolCallView {
                name: "write_file",
                input: &input,
                read_only: false,
            };
            if let ToolDecision::Deny(reason) = link.check_tool(&call) {
                return Err(RuntimeError::Other(format!("write denied: {reason}")));
            }
            link.record(AgentEvent::ToolCall {
                name: "write_file".into(),
                summary: "slice.txt".into(),
                allowed: true,
            });
        }
        let start = thread_cpu();
        if matches!(task.meta.role.as_deref(), Some("judge" | "auditor")) {
            // A sign-off's judge (a slice's T5, T1's acceptance) or a slice's auditor: its verdict at the end
            // of its answer.
            self.charge(start);
            return Ok(AgentOutcome {
                report: None,
                stop: AgentStop::Finished,
                session_id: None,
                final_text: Some("The slice file is there.\nVERDICT: accept\nmissing: none".into()),
            });
        }
        let output = self.output(task, role);
        // An implementer cites the file it wrote: the sign-off checks it is in the commit.
        let evidence = if role == BriefRole::Implementer {
            vec![Evidence {
                path: format!("{}.txt", task.brief.id),
                quote: Some(task.brief.title.clone()),
            }]
        } else {
            vec![]
        };
        let outcome = output.map(|output| AgentOutcome {
            report: Some(AgentReport {
                status: ReportStatus::Done,
                summary: format!("{} done", task.brief.title),
                evidence,
                output,
            }),
            stop: AgentStop::Finished,
            session_id: None,
            final_text: None,
        });
        self.charge(start);
        outcome
    }
}

impl Runtime for InstantRuntime {
    fn name(&self) -> &'static str {
        "bench"
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        _cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(self.work(task, link))
    }
}

//! Stage 2: the judge. A read-only agent run through any [`Runtime`] with [`Access::ReadOnly`] and a fresh
//! context: it gets the contract, the failure modes, the evidence, the verify result and the diff, inspects
//! the clean checkout with read/list/grep tools, and must end its answer with the block [`parse_verdict`]
//! reads. Its runner link allows read-only tools only and record everything it does as the transcript.
//!
//! A judge that errors, times out or answers without a verdict gives no verdict: the caller records the
//! sign-off as inconclusive.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use agency_core::brief::Brief;
use agency_core::contract::GoalContract;
use agency_core::teachback::{ReviewVerdict, TeachbackReview};
use agency_core::{BriefId, BriefStatus, RunId, TeachbackState, Tier};
use agency_exec::Sandboxing;
use agency_exec::runtime::{
    Access, AgentEvent, AgentLimits, AgentOutcome, AgentStop, AgentTask, AlgedonicSignal, Ending, Evidence,
    RunnerLink, Runtime, RuntimeError, ToolCallView, ToolDecision,
};
use agency_llm::{BoxFuture, CallMeta, CancelToken};

use crate::verdict::{JudgeVerdict, parse_verdict};
use crate::verify_command::VerifyResult;

/// Bytes of diff the judge is shown; a longer diff is cut and the judge told so (it can read the files).
pub(crate) const MAX_DIFF_BYTES: usize = 60 * 1024;
/// Evidence files listed in the judge's prompt, at most; the rest are counted.
const MAX_LISTED_EVIDENCE: usize = 200;

/// The judge's standing instructions: the same bytes on every sign-off, so they cache.
pub const JUDGE_SYSTEM: &str = "\
You are the sign-off judge. An agent claims a goal is done. You decide, from the repository and the \
artifacts alone, whether it is. You are read-only: you can read, list and search files in the checkout of the \
commit under review, nothing else. Do not trust the agent's claims; re-derive them.

Check:
- the done_when condition holds in the code as committed;
- each failure mode is actually ruled out, not just unmentioned;
- the verify command is not trivial or gamed: it must exercise the done_when condition (a command such as \
`true`, `exit 0` or `echo ok`, a test that asserts nothing, or a skipped or weakened test proves nothing);
- the evidence files say what the agent says they say.

Keep your final answer short and end it with exactly this block and nothing after it:
VERDICT: accept|reject
missing:
- one line per thing that is missing or wrong (write `missing: none` when accepting)";

/// The auditor's standing instructions: a second, independent review of a slice whose variety score
/// requires one (7 and above). It is never shown the implementer's claims or the evidence it cites, so what
/// the implementer says cannot lead it; it has the contract, what was asked, the verify result and the diff.
pub const AUDITOR_SYSTEM: &str = "\
You are the independent auditor of a sign-off. A second reviewer (the judge) reviews the same commit; you do \
not see its answer, and you are deliberately not shown what the implementer claims about its work or the \
evidence it cites. Decide from the repository and the artifacts alone whether the contract is met. You are \
read-only: you can read, list and search files in the checkout of the commit under review, nothing else.

Check:
- the done_when condition holds in the code as committed;
- each failure mode is actually ruled out, not just unmentioned;
- the verify command is not trivial or gamed: it must exercise the done_when condition (a command such as \
`true`, `exit 0` or `echo ok`, a test that asserts nothing, or a skipped or weakened test proves nothing);
- the diff does what the brief asked and nothing it did not ask for (no shortcut, no disabled check, no \
hard-coded answer).

Keep your final answer short and end it with exactly this block and nothing after it:
VERDICT: accept|reject
missing:
- one line per thing that is missing or wrong (write `missing: none` when accepting)";

/// How the judge is run.
#[derive(Debug, Clone, Copy)]
pub struct Judge<'a> {
    /// The runtime that runs it (the built-in agent on the judge model, in production).
    pub runtime: &'a dyn Runtime,
    /// Its turn, token and time limits.
    pub limits: AgentLimits,
    /// In a run: the brief it judges as and who else sees what it does; `None` outside a run.
    pub run_as: Option<&'a RunAs<'a>>,
}

/// A judge inside a run works as one of the run's briefs (the slice's T5 brief, T1's accept brief): its model
/// calls carry that brief's metadata, so budgets, usage and scripted replies are the run's, and everything it
/// does is also passed to the runner's link, which writes it to the blackboard.
pub struct RunAs<'a> {
    /// The brief.
    pub brief: &'a Brief,
    /// The metadata of its model calls.
    pub meta: CallMeta,
    /// The tier's own instructions (what a slice's or a run's sign-off weighs), sent after the judge's.
    pub system: Option<&'a str>,
    /// Sees every event the judge records (tool calls, usage, what it said); its tool decisions are not asked.
    pub observer: &'a dyn RunnerLink,
    /// The model it runs on, for the record (an auditor's is written in its `signoff_audit`).
    pub model: Option<String>,
}

impl std::fmt::Debug for RunAs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunAs")
            .field("brief", &self.brief.id)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

/// What the judge is shown.
#[derive(Debug, Clone, Copy)]
pub struct JudgeInput<'a> {
    /// What the goal or brief is called, for the prompt.
    pub subject: &'a str,
    /// What the agent was asked, beyond the contract (in a run: the goal anchor and the brief).
    pub asked: Option<&'a str>,
    /// The contract.
    pub contract: &'a GoalContract,
    /// The agent's claims, as free text.
    pub claims: &'a [String],
    /// The files and quotes it cites.
    pub evidence: &'a [Evidence],
    /// Stage 1's result, when the contract has a verify command.
    pub verify: Option<&'a VerifyResult>,
    /// The commit under review and the base it is compared with.
    pub commit: &'a str,
    /// The goal's base commit.
    pub base: &'a str,
    /// The patch from base to commit, or its start.
    pub diff: &'a str,
    /// The size of the whole patch, when `diff` is only its start (0: `diff` is all of it).
    pub diff_bytes: u64,
    /// The auditor's review ([`AUDITOR_SYSTEM`]): the claims and evidence are left out of its prompt.
    pub audit: bool,
}

/// How the judge run went.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeRun {
    /// The verdict, or why there is none.
    pub verdict: Result<JudgeVerdict, String>,
    /// What the judge said before its verdict block, when it gave one.
    pub answer: Option<String>,
    /// The signal the judge raised instead of a verdict (a HALT stops a run).
    pub signal: Option<AlgedonicSignal>,
    /// The prompt and everything the judge did and said, for the record.
    pub transcript: String,
    /// The provider's trouble that stopped the judge's model call after its retries (overloaded, rate
    /// limited, unreachable, a 5xx, a stall): nothing about the work judged, so no verdict either way.
    pub unavailable: Option<agency_llm::LlmError>,
}

/// Runs the judge in `checkout`.
pub async fn run_judge(
    judge: &Judge<'_>,
    input: &JudgeInput<'_>,
    checkout: &Path,
    sandbox: &Sandboxing,
    run: RunId,
    parent: Option<BriefId>,
    cancel: &CancelToken,
) -> JudgeRun {
    let prompt = render_prompt(input);
    let (brief, meta) = match judge.run_as {
        Some(run_as) => (run_as.brief.clone(), run_as.meta.clone()),
        None => {
            let brief = judge_brief(input, run, parent);
            let meta = CallMeta {
                run: Some(run),
                brief_id: Some(brief.id),
                brief: Some(format!("signoff/{}", input.subject)),
                workstream: Some(brief.workstream.clone()),
                role: Some(if input.audit { "auditor" } else { "judge" }.into()),
                tier: Some(Tier::T5),
                attempt: brief.attempt,
            };
            (brief, meta)
        }
    };
    let standing = if input.audit { AUDITOR_SYSTEM } else { JUDGE_SYSTEM };
    let system: Vec<Cow<'static, str>> = std::iter::once(Cow::Borrowed(standing))
        .chain(
            judge
                .run_as
                .and_then(|r| r.system)
                .map(|own| Cow::Owned(own.to_string())),
        )
        .collect();
    let task = AgentTask {
        meta,
        brief,
        worktree: checkout.to_path_buf(),
        // The judge's rules and its tier's prompt: the same for every judge of the tier.
        shared_system_blocks: system.len(),
        system,
        prompt: prompt.clone(),
        access: Access::ReadOnly,
        // Its verdict block ends its answer; an external runtime must not ask for a report after it.
        ending: Ending::AsInstructed,
        limits: judge.limits,
        env: Vec::new(),
        // A verdict block, not a report: nothing to check.
        check_output: None,
        sandbox: sandbox.clone(),
    };
    let link = JudgeLink {
        events: Mutex::default(),
        observer: judge.run_as.map(|r| r.observer),
    };
    // The runtime keeps its own limit; this outer one only guards against a runtime that does not.
    let deadline = judge.limits.timeout + Duration::from_secs(30);
    let outcome = tokio::time::timeout(deadline, judge.runtime.run(&task, &link, cancel)).await;
    let events = link.take();
    let mut transcript = format!(
        "# Sign-off {}: {}\n\n## Prompt\n\n{prompt}\n\n## Run\n\n",
        if input.audit { "auditor" } else { "judge" },
        input.subject
    );
    for event in &events {
        let _ = writeln!(transcript, "{}", describe_event(event));
    }
    let mut answer = None;
    let mut signal = None;
    let mut unavailable = None;
    let verdict = match outcome {
        Err(_) => Err(format!("the judge did not finish within {}s", deadline.as_secs())),
        Ok(Err(RuntimeError::Model(err))) if err.is_retryable() => {
            let why = format!("the judge's provider is unavailable: {err}");
            let _ = writeln!(transcript, "\nstopped: {why}");
            unavailable = Some(err);
            Err(why)
        }
        Ok(Err(err)) => Err(format!("the judge could not run: {err}")),
        Ok(Ok(AgentOutcome {
            stop: AgentStop::Signal(raised),
            ..
        })) => {
            let _ = writeln!(transcript, "\nstopped: signal {raised:?}");
            let why = format!(
                "the judge raised a {:?} signal ({}): {}",
                raised.level, raised.category, raised.issue
            );
            signal = Some(raised);
            Err(why)
        }
        Ok(Ok(outcome)) => {
            let _ = writeln!(transcript, "\nstopped: {:?}", outcome.stop);
            let mut answers: Vec<&str> = Vec::new();
            if let Some(report) = &outcome.report {
                answers.push(&report.summary);
            }
            if let Some(text) = &outcome.final_text {
                answers.push(text);
            }
            if let Some(said) = events.iter().rev().find_map(|e| match e {
                AgentEvent::Said(text) => Some(text.as_str()),
                _ => None,
            }) {
                answers.push(said);
            }
            first_verdict(&answers).map(|(verdict, said)| {
                answer = Some(said);
                verdict
            })
        }
    };
    JudgeRun {
        verdict,
        answer,
        signal,
        transcript,
        unavailable,
    }
}

/// The first answer that carries a verdict, with what it says before the block; otherwise why the last one
/// does not.
fn first_verdict(answers: &[&str]) -> Result<(JudgeVerdict, String), String> {
    let mut why = "the judge gave no answer".to_string();
    for answer in answers {
        match parse_verdict(answer) {
            Ok(verdict) => {
                let before = answer
                    .rfind("VERDICT:")
                    .map_or(*answer, |at| &answer[..at])
                    .trim()
                    .to_string();
                return Ok((verdict, before));
            }
            Err(err) => why = err,
        }
    }
    Err(why)
}

fn describe_event(event: &AgentEvent) -> String {
    match event {
        AgentEvent::ToolCall {
            name,
            summary,
            allowed,
        } => format!(
            "- tool {name}({summary}){}",
            if *allowed { "" } else { " [denied]" }
        ),
        AgentEvent::Said(text) => format!("- said:\n\n{text}\n"),
        AgentEvent::Usage(usage) => format!("- usage: {usage:?}"),
        AgentEvent::Note(note) => format!("- note: {note}"),
        AgentEvent::Process(process) => format!("- process: pid {}", process.pid),
    }
}

/// The judge's task text: everything it must weigh, in a fixed order.
pub fn render_prompt(input: &JudgeInput<'_>) -> String {
    let contract = input.contract;
    let mut out = String::new();
    let _ = writeln!(out, "Goal under sign-off: {}\n", input.subject);
    if let Some(asked) = input.asked {
        let _ = writeln!(out, "What the agent was asked:\n{}\n", asked.trim_end());
    }
    let _ = writeln!(out, "done_when: {}", contract.done_when);
    let _ = writeln!(
        out,
        "verify command: `{}`",
        contract.verify.as_deref().unwrap_or("(none)")
    );
    out.push_str("failure_modes:\n");
    list(&mut out, &contract.failure_modes);
    out.push_str("may_edit (protected paths the goal may change):\n");
    list(&mut out, &contract.may_edit);
    let _ = writeln!(
        out,
        "\nCommit under review: {} (goal base {})",
        input.commit, input.base
    );
    if input.audit {
        // The auditor's independence: nothing the implementer says about its own work reaches it.
        out.push_str(
            "\nThe implementer's claims and the evidence it cites are withheld from you: re-derive everything \
             from the diff and the checkout.\n",
        );
    } else {
        render_claims(&mut out, input);
    }
    match input.verify {
        Some(v) => {
            let _ = writeln!(
                out,
                "\nVerify result (run by agency in a clean checkout): {}\n```\n{}\n```",
                v.describe(),
                v.tail.trim_end()
            );
        }
        None => out.push_str("\nVerify result: the contract has no verify command.\n"),
    }
    let diff = input.diff;
    let whole = input.diff_bytes.max(diff.len() as u64);
    let mut cut = diff.len().min(MAX_DIFF_BYTES);
    while !diff.is_char_boundary(cut) {
        cut -= 1;
    }
    if (cut as u64) < whole {
        let _ = writeln!(
            out,
            "\nDiff from the goal's base (first {cut} of {whole} bytes; read the files for the rest):\n```diff\n{}\n```",
            &diff[..cut]
        );
    } else {
        let _ = writeln!(
            out,
            "\nDiff from the goal's base:\n```diff\n{}\n```",
            diff.trim_end()
        );
    }
    out
}

/// The implementer's claims and the evidence it cites, as the judge is shown them.
fn render_claims(out: &mut String, input: &JudgeInput<'_>) {
    out.push_str("\nThe agent's claims:\n");
    list(out, input.claims);
    out.push_str("Evidence files (they exist in the commit; quoted lines were found in them):\n");
    let mut evidence: Vec<String> = input
        .evidence
        .iter()
        .take(MAX_LISTED_EVIDENCE)
        .map(|e| match &e.quote {
            Some(q) => format!("{}: {q:?}", e.path),
            None => e.path.clone(),
        })
        .collect();
    if input.evidence.len() > MAX_LISTED_EVIDENCE {
        evidence.push(format!(
            "… and {} more (all checked; the diff names them)",
            input.evidence.len() - MAX_LISTED_EVIDENCE
        ));
    }
    list(out, &evidence);
}

fn list(out: &mut String, items: &[String]) {
    if items.is_empty() {
        out.push_str("  (none)\n");
    }
    for item in items {
        let _ = writeln!(out, "  - {item}");
    }
}

fn judge_brief(input: &JudgeInput<'_>, run: RunId, parent: Option<BriefId>) -> Brief {
    Brief {
        id: BriefId::new(),
        run,
        parent,
        tier: Tier::T5,
        workstream: "signoff".into(),
        title: format!("signoff/{}", input.subject),
        personality: None,
        goal_anchor: input.contract.done_when.clone(),
        instructions: JUDGE_SYSTEM.into(),
        inputs: Vec::new(),
        variety: None,
        contract: Some(input.contract.clone()),
        retry_budget: 0,
        attempt: 0,
        depends_on: Vec::new(),
        branch: None,
        worktree: None,
        status: BriefStatus::Running,
        teachback: TeachbackState::Active,
        claimed_by: None,
        created_at: chrono::Utc::now(),
    }
}

/// The judge's side of the runtime contract: no teachback wait, read-only tools only, everything recorded
/// (and passed on to the observer, in a run).
struct JudgeLink<'a> {
    events: Mutex<Vec<AgentEvent>>,
    observer: Option<&'a dyn RunnerLink>,
}

impl JudgeLink<'_> {
    fn take(&self) -> Vec<AgentEvent> {
        self.events
            .lock()
            .map(|mut events| std::mem::take(&mut *events))
            .unwrap_or_default()
    }
}

impl RunnerLink for JudgeLink<'_> {
    fn teachback<'a>(
        &'a self,
        _teachback: &'a agency_core::Teachback,
    ) -> BoxFuture<'a, Result<TeachbackReview, String>> {
        Box::pin(async {
            Ok(TeachbackReview {
                verdict: ReviewVerdict::Approved,
                reviewer: "signoff".into(),
                note: None,
            })
        })
    }

    fn check_tool(&self, call: &ToolCallView<'_>) -> ToolDecision {
        // raise_signal is read-only: a judge that finds a security, data or ethics problem may HALT.
        if call.read_only {
            ToolDecision::Allow
        } else {
            ToolDecision::Deny(format!(
                "the sign-off judge is read-only; `{}` changes things. Read, list and search, then give your verdict.",
                call.name
            ))
        }
    }

    fn record(&self, event: AgentEvent) {
        if let Some(observer) = self.observer {
            observer.record(event.clone());
        }
        if let Ok(mut events) = self.events.lock() {
            events.push(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(diff: &str, diff_bytes: u64) -> String {
        let contract = GoalContract {
            done_when: "it works".into(),
            ..GoalContract::default()
        };
        render_prompt(&JudgeInput {
            subject: "goal",
            asked: None,
            contract: &contract,
            claims: &[],
            evidence: &[],
            verify: None,
            commit: "c0ffee",
            base: "ba5e",
            diff,
            diff_bytes,
            audit: false,
        })
    }

    #[test]
    fn the_judge_is_told_when_it_sees_only_the_start_of_the_diff() {
        assert!(prompt("+one line\n", 0).contains("Diff from the goal's base:\n```diff\n+one line\n```"));
        // The start of a patch of 900,000 bytes, as the pipeline reads it.
        let cut = prompt("+start\n", 900_000);
        assert!(
            cut.contains("(first 7 of 900000 bytes; read the files for the rest)"),
            "{cut}"
        );
        // A whole patch longer than the judge is shown is cut here, on a character boundary.
        let long = format!("+{}", "é".repeat(MAX_DIFF_BYTES));
        let cut = prompt(&long, 0);
        let shown = MAX_DIFF_BYTES - 1;
        assert!(
            cut.contains(&format!("(first {shown} of {} bytes;", long.len())),
            "cut at {shown}"
        );
    }

    #[test]
    fn a_long_evidence_list_is_cut_and_counted() {
        let contract = GoalContract::default();
        let evidence: Vec<Evidence> = (0..MAX_LISTED_EVIDENCE + 50)
            .map(|n| Evidence {
                path: format!("src/file{n}.rs"),
                quote: None,
            })
            .collect();
        let text = render_prompt(&JudgeInput {
            subject: "accept",
            asked: None,
            contract: &contract,
            claims: &[],
            evidence: &evidence,
            verify: None,
            commit: "c0ffee",
            base: "ba5e",
            diff: "",
            diff_bytes: 0,
            audit: false,
        });
        let last_shown = format!("src/file{}.rs\n", MAX_LISTED_EVIDENCE - 1);
        assert!(text.contains(&last_shown), "{text}");
        assert!(!text.contains(&format!("src/file{}.rs", MAX_LISTED_EVIDENCE)));
        assert!(text.contains("… and 50 more (all checked; the diff names them)"));
    }
}

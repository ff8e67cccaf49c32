//! Agreement verification at the handoffs (seed 003; docs/protocols.md, "Agreement at each handoff"),
//! carried out: each check gathers the two sides, asks [`agency_flow::agreement::check_scope`], and records
//! an `agreement` event. A significant mismatch is put to the tier that handed the work over — one bounded
//! call on that tier's own model ([`confirm_pending`]) — and becomes an `anomaly`, listed on the next tier
//! gate, unless that tier confirms the difference is fine. No outcome holds the handoff back (the seed's
//! verification is non-blocking; the human is involved only through the gate), but the pass that asks
//! waits for the answers: asked together, at most one bounded call ([`ASK_LIMIT`]) per pass.
//!
//! - L0 at T1→T2: the lead's `understanding` against the `files` and `interfaces` the plan declared for its
//!   workstream;
//! - L1 at T2→T3: a committed squad lead's `understanding` against its specialist's declared `files` and
//!   `interfaces` (T1→T3 on a path without T2: the plan's for the workstream);
//! - L1 at T4→T5: the slice as its verifier receives it (the paths its diff changes) against the files
//!   its squad lead's committed draft declared;
//! - L2 at T5→T1: what a squad's slice verdicts say was achieved (`achieved`) against what the plan
//!   declared for the workstream.
//!
//! The handing-over agent's own conversation ended when it reported: the question goes to its tier's model
//! with its recorded output, not to that agent. Where the record declares no scope, the outcome is the
//! seed's fallback, "Agreement: [assumed — specialist unavailable for verification]"; so is the answer when
//! that tier cannot be asked, and the mismatch then stands.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use agency_core::event::payload::{AgreementChecked, Anomaly};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::GateKind;
use agency_core::tiers::{
    Achieved, BriefRole, LeadOutput, SpecialistOutput, SquadOutput, Understanding, VerifierOutput,
};
use agency_core::{Brief, BriefId, BriefStatus, RunId, Tier};
use agency_flow::agreement::{
    ASSUMED, Confirmation, Level, Outcome, Scope, anomaly_after, check, check_acceptance, check_scope,
    check_task, diff_paths, read_answer, worth_asking,
};
use agency_llm::{Block, CancelToken, Message, Request, ToolChoice, ToolSpec};
use agency_store::walk::walk_events_of_kinds;
use serde_json::json;

use crate::agreement_asks::{ASKING, Ask, Handed};
use crate::artifacts::output_name;
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::plan::output_of;
use crate::task::call_meta;

/// One handoff to record.
struct Handoff<'a> {
    level: Level,
    /// `t4→t5`.
    handoff: String,
    /// The receiving brief.
    receiver: &'a Brief,
    /// The brief whose record is the handed-over side: the one asked about a significant mismatch.
    handing_over: Option<BriefId>,
    outcome: Outcome,
    restated: String,
}

/// A restatement as the `agreement` event keeps it: what it builds, then its files and interfaces.
fn restatement_text(understanding: &Understanding) -> String {
    let mut text = understanding.building.trim().to_string();
    if !understanding.files.is_empty() {
        text.push_str(&format!(" [files: {}]", understanding.files.join(", ")));
    }
    if !understanding.interfaces.is_empty() {
        text.push_str(&format!(" [interfaces: {}]", understanding.interfaces.join(", ")));
    }
    text
}

/// Records the check as an `agreement` event, held back to be written with the pass's other writes
/// (nothing waits on it). A significant mismatch is recorded as `asking` and written at once, so a
/// runner that stops before the question still asks it on its next start ([`confirm_pending`]); the
/// question itself is asked at the end of the pass, where a model call may be awaited.
fn record(engine: &Engine, handoff: Handoff<'_>) -> Result<()> {
    let receiver = handoff.receiver;
    let asking = worth_asking(&handoff.outcome);
    let (significant, differences) = match &handoff.outcome {
        Outcome::Mismatch {
            significant,
            differences,
        } => (*significant, differences.clone()),
        Outcome::Agreed | Outcome::Assumed => (false, Vec::new()),
    };
    let checked = AgreementChecked {
        level: handoff.level.as_str().into(),
        handoff: handoff.handoff.clone(),
        workstream: receiver.workstream.clone(),
        outcome: handoff.outcome.as_str().into(),
        significant,
        differences,
        restated: handoff.restated,
        confirmation: asking.then(|| ASKING.to_string()),
        handing_over: handoff.handing_over.filter(|_| asking),
        reason: None,
    };
    let mut event = NewEvent::typed(receiver.run, EventPayload::Agreement(checked.clone()));
    event.tier = Some(receiver.tier);
    event.brief = Some(receiver.id);
    engine.store.append_event_soon(event)?;
    if asking {
        engine.store.flush_events()?;
        engine.agreement_asks.queue(Ask {
            run: receiver.run,
            receiver: receiver.id,
            check: checked,
        })?;
    }
    Ok(())
}

/// Asks the handing-over tier about each significant mismatch of `run` not answered yet, and records each
/// answer ([`record_answer`]). Returns whether it asked any. Called at the end of every pass, which waits
/// for the answers: the questions go out together, so one pass waits at most one [`ASK_LIMIT`].
pub(crate) async fn confirm_pending(engine: &Engine, run: RunId) -> Result<bool> {
    let asks = engine.agreement_asks.take(engine.store.as_ref(), run)?;
    let answers = futures_util::future::join_all(asks.iter().map(|ask| ask_handing_over(engine, ask))).await;
    for (ask, answer) in asks.iter().zip(answers) {
        record_answer(engine, ask, &answer?)?;
    }
    Ok(!asks.is_empty())
}

/// How long the one question may take, retries included; past it, nobody could be asked.
const ASK_LIMIT: Duration = Duration::from_secs(120);
/// The most of the handing-over tier's recorded output sent with the question, in characters.
const OUTPUT_CHARS: usize = 8_000;

/// The tool the handing-over tier answers with.
fn confirm_tool() -> ToolSpec {
    ToolSpec {
        name: "confirm_agreement".into(),
        description:
            "Say whether the differences are fine (true) or a real mismatch (false), with a one-line \
                      reason."
                .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "fine": { "type": "boolean" },
                "reason": { "type": "string" }
            },
            "required": ["fine", "reason"]
        }),
    }
}

/// The question put to the handing-over tier, as its model or agent reads it.
fn question(ask: &Ask, brief: &Brief, output: &str) -> String {
    let differences: Vec<String> = ask.check.differences.iter().map(|d| format!("- {d}")).collect();
    format!(
        "## The handoff\n{} at {} ({})\n\n## What you recorded ({})\n{output}\n\n## The receiver's \
         restatement\n{}\n\n## The differences\n{}",
        ask.check.level,
        ask.check.handoff,
        ask.check.workstream,
        brief.title,
        if ask.check.restated.is_empty() {
            "(none given)"
        } else {
            ask.check.restated.as_str()
        },
        differences.join("\n")
    )
}

/// Puts one mismatch to the tier that handed the work over. On the built-in runtime: one bounded call on
/// that tier's own model (metered and charged to the budget like every call agency makes), its usage
/// recorded. On an external runtime (Claude Code, Codex, pi, a command): a read-only agent of that tier's
/// runtime, run as the sign-off's judge is ([`ask_agent`]). Where the tier cannot be asked — no runtime or
/// no model is configured for it, the call or the agent fails (an outage, a spent budget, the time
/// limit) or its answer says neither — the answer is [`Confirmation::Unavailable`].
async fn ask_handing_over(engine: &Engine, ask: &Ask) -> Result<Confirmation> {
    let unavailable = |why: String| Ok(Confirmation::Unavailable { why });
    let Some(id) = ask.check.handing_over else {
        return unavailable("the handed-over side is no brief's record".into());
    };
    let brief = engine.store.get_brief(id)?;
    let tier = brief.tier;
    let Some(runtime) = engine.runtimes.get(&tier).cloned() else {
        return unavailable(format!("no runtime is configured for {tier}"));
    };
    let output = engine
        .artifact_of(brief.run, id, output_name)?
        .map(|a| {
            String::from_utf8_lossy(&a.bytes)
                .chars()
                .take(OUTPUT_CHARS)
                .collect::<String>()
        })
        .unwrap_or_else(|| "(nothing recorded)".into());
    let question = question(ask, &brief, &output);
    if runtime.name() != "builtin" {
        return ask_agent(engine, &brief, runtime, question).await;
    }
    let Some(provider) = engine.providers.get(&tier) else {
        return unavailable(format!("no model is configured for {tier}"));
    };
    let mut meta = call_meta(&brief);
    meta.role = Some(ROLE.into());
    let request = Request {
        system: vec![crate::prompts::AGREEMENT_CONFIRM.to_string()],
        messages: vec![Message::user(question)],
        tools: vec![confirm_tool()],
        max_tokens: 1_024,
        tool_choice: Some(ToolChoice::Tool("confirm_agreement".into())),
        meta,
        ..Request::default()
    };
    let cancel = CancelToken::new();
    let called = tokio::time::timeout(ASK_LIMIT, provider.complete(&request, &mut |_| {}, &cancel)).await;
    let response = match called {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => return unavailable(format!("{tier}'s model could not be asked ({e})")),
        Err(_) => {
            cancel.cancel();
            return unavailable(format!(
                "{tier}'s model did not answer within {} s",
                ASK_LIMIT.as_secs()
            ));
        }
    };
    // Asked outside any agent's runner link, which writes the usage events of agents' calls: written here.
    let usage = crate::brief_link::usage_of_call(provider.as_ref(), &response);
    engine
        .store
        .append_event_soon(NewEvent::typed(brief.run, usage).brief(brief.id).tier(tier))?;
    let input = response.content.iter().find_map(|b| match b {
        Block::ToolUse { name, input, .. } if name == "confirm_agreement" => Some(input.clone()),
        _ => None,
    });
    Ok(match input {
        Some(input) => read_answer(
            input.get("fine").and_then(|v| v.as_bool()),
            input.get("reason").and_then(|v| v.as_str()),
        ),
        None => Confirmation::Unavailable {
            why: format!("{tier}'s model gave no answer"),
        },
    })
}

/// How an agent on an external runtime gives its answer: in its report's `output`, the fields of
/// `confirm_agreement`.
const AGENT_ANSWER: &str = "You are asked as an agent on your own runtime: you may read, list and search, \
and nothing else (changes are refused). End with your report; its `output` is your answer, exactly \
{\"fine\": true or false, \"reason\": \"one line\"} — the fields of confirm_agreement.";

/// Asks the handing-over tier on its external runtime: a read-only agent of that runtime (the tool gate a
/// sign-off judge has: read, list and search only; the runner's sandbox), run as the handing-over brief, in
/// an empty directory of its own under the run's worktrees (it is given everything it needs in its prompt,
/// and has nothing of the repository's to change), bounded by the runner's agent time limit and
/// [`ASK_LIMIT`], whichever is shorter. Its model calls are the brief's: their usage is recorded on it and
/// charged as a judge's are. Its answer is its report's `output` (`fine`, `reason`); an agent that fails,
/// runs out of time or answers in prose gives none.
async fn ask_agent(
    engine: &Engine,
    brief: &Brief,
    runtime: std::sync::Arc<dyn agency_exec::runtime::Runtime>,
    question: String,
) -> Result<Confirmation> {
    use agency_exec::runtime::{Access, AgentStop, AgentTask, Ending};
    let tier = brief.tier;
    let name = runtime.name();
    let unavailable = |why: String| Ok(Confirmation::Unavailable { why });
    let dir = match engine.branches(brief.run).checkouts() {
        agency_signoff::CheckoutPlace::Under { dir, .. } => dir,
        agency_signoff::CheckoutPlace::Temporary => engine.options.worktrees.clone(),
    }
    .join(format!("agreement-{}", agency_core::BriefId::new()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return unavailable(format!(
            "{tier}'s agent on {name} had no directory to run in ({}: {e})",
            dir.display()
        ));
    }
    let mut meta = call_meta(brief);
    meta.role = Some(ROLE.into());
    let mut limits = engine.options.limits;
    limits.timeout = limits.timeout.min(ASK_LIMIT);
    limits.max_tokens = limits.max_tokens.min(1_024);
    let task = AgentTask {
        brief: brief.clone(),
        worktree: dir.clone(),
        system: vec![
            std::borrow::Cow::Borrowed(crate::prompts::AGREEMENT_CONFIRM),
            std::borrow::Cow::Borrowed(AGENT_ANSWER),
        ],
        shared_system_blocks: 2,
        prompt: question,
        access: Access::ReadOnly,
        ending: Ending::Report,
        limits,
        env: Vec::new(),
        sandbox: engine.sandboxing(),
        meta,
        check_output: None,
    };
    let observer = crate::brief_link::BriefLink::new(
        engine.store.clone(),
        brief.clone(),
        crate::brief_link::Reviewer::Human {
            poll: engine.options.poll,
        },
        CancelToken::new(),
    )
    .charging(engine.unmetered_ledger(Some(&runtime)));
    let link = ReadOnlyLink { observer };
    let cancel = CancelToken::new();
    // The runtime keeps its own limit; this outer one only guards against a runtime that does not.
    let deadline = limits.timeout + Duration::from_secs(5);
    let ran = tokio::time::timeout(deadline, runtime.run(&task, &link, &cancel)).await;
    let _ = std::fs::remove_dir_all(&dir);
    engine.store.flush_events()?;
    let outcome = match ran {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => return unavailable(format!("{tier}'s agent on {name} could not be asked ({e})")),
        Err(_) => {
            cancel.cancel();
            return unavailable(format!(
                "{tier}'s agent on {name} did not answer within {} s",
                deadline.as_secs()
            ));
        }
    };
    if let AgentStop::Signal(signal) = &outcome.stop {
        return unavailable(format!(
            "{tier}'s agent on {name} raised a {:?} signal instead of answering: {}",
            signal.level, signal.issue
        ));
    }
    let answer = outcome.report.as_ref().map(|r| &r.output).and_then(|output| {
        output
            .get("fine")
            .and_then(|v| v.as_bool())
            .map(|fine| (fine, output))
    });
    Ok(match answer {
        Some((fine, output)) => read_answer(Some(fine), output.get("reason").and_then(|v| v.as_str())),
        None => Confirmation::Unavailable {
            why: format!("{tier}'s agent on {name} gave no answer"),
        },
    })
}

/// The link of an agent asked an agreement question: read-only (the sign-off judge's tool gate), no
/// teachback of its own, everything it does recorded on the handing-over brief by `observer`.
struct ReadOnlyLink {
    observer: crate::brief_link::BriefLink,
}

impl agency_exec::runtime::RunnerLink for ReadOnlyLink {
    fn teachback<'a>(
        &'a self,
        _teachback: &'a agency_core::Teachback,
    ) -> agency_llm::BoxFuture<'a, std::result::Result<agency_core::teachback::TeachbackReview, String>> {
        // Read-only, it never needs a teachback approved; one sent anyway is not held up (as a judge's).
        Box::pin(async {
            Ok(agency_core::teachback::TeachbackReview {
                verdict: agency_core::teachback::ReviewVerdict::Approved,
                reviewer: "agreement".into(),
                note: None,
            })
        })
    }

    fn check_tool(
        &self,
        call: &agency_exec::runtime::ToolCallView<'_>,
    ) -> agency_exec::runtime::ToolDecision {
        if call.read_only {
            agency_exec::runtime::ToolDecision::Allow
        } else {
            agency_exec::runtime::ToolDecision::Deny(format!(
                "an agreement question is read-only; `{}` changes things. Read, list and search, then answer.",
                call.name
            ))
        }
    }

    fn record(&self, event: agency_exec::runtime::AgentEvent) {
        agency_exec::runtime::RunnerLink::record(&self.observer, event);
    }
}

/// The model call's role, as scripts match it (`role: agreement`).
pub const ROLE: &str = "agreement";

/// Records the answer: a second `agreement` record of the handoff, with the answer, its reason and whether
/// the mismatch still stands (`significant`); and, when it does, an `anomaly` for the next gate. Where
/// nobody could be asked, the record's reason is the seed's fallback wording with why.
fn record_answer(engine: &Engine, ask: &Ask, answer: &Confirmation) -> Result<()> {
    let receiver = engine.store.get_brief(ask.receiver)?;
    let stands = anomaly_after(answer);
    let reason = match answer {
        Confirmation::Unavailable { why } => format!("{ASSUMED} ({why})"),
        Confirmation::Confirmed { reason } | Confirmation::Corrected { reason } => reason.clone(),
    };
    let asked = ask
        .check
        .handing_over
        .map(|id| engine.store.get_brief(id))
        .transpose()?;
    let answered = AgreementChecked {
        confirmation: Some(answer.as_str().into()),
        significant: stands,
        reason: Some(reason.clone()),
        ..ask.check.clone()
    };
    let mut event = NewEvent::typed(receiver.run, EventPayload::Agreement(answered));
    event.tier = Some(receiver.tier);
    event.brief = Some(receiver.id);
    engine.store.append_event_soon(event)?;
    if stands {
        let by = match (answer, &asked) {
            (Confirmation::Corrected { .. }, Some(asked)) => {
                format!(" — {} {} says: {reason}", asked.tier, asked.title)
            }
            _ => format!(" — {reason}"),
        };
        let mut anomaly = NewEvent::typed(
            receiver.run,
            EventPayload::Anomaly(Anomaly {
                source: "agreement".into(),
                workstream: Some(receiver.workstream.clone()),
                brief: Some(receiver.id),
                message: format!(
                    "{} mismatch at {} ({}): {}{by}",
                    ask.check.level,
                    ask.check.handoff,
                    receiver.title,
                    ask.check.differences.join("; ")
                ),
            }),
        );
        anomaly.tier = Some(receiver.tier);
        anomaly.brief = Some(receiver.id);
        engine.store.append_event_soon(anomaly)?;
    }
    engine.store.flush_events()?;
    Ok(())
}

/// The receiving side's restated scope.
fn restated_scope(understanding: &Understanding) -> Scope<'_> {
    Scope {
        files: &understanding.files,
        interfaces: &understanding.interfaces,
    }
}

/// What T1's plan declared for `brief`'s workstream (its `files` and `interfaces`, nothing when no
/// approved plan names it), and the plan brief that declared it.
type Planned = (Vec<String>, Vec<String>, Option<BriefId>);

fn planned_scope(engine: &Engine, brief: &Brief) -> Result<Planned> {
    let Some(approved) = crate::plan::approved(engine, brief.run)? else {
        return Ok((Vec::new(), Vec::new(), None));
    };
    let (files, interfaces) = approved
        .plan
        .workstream(&brief.workstream)
        .map(|ws| (ws.files.clone(), ws.interfaces.clone()))
        .unwrap_or_default();
    Ok((files, interfaces, Some(approved.brief.id)))
}

/// L0 at T1→T2 for each lead among `verifying` that reported and was not acted on yet (no children, no
/// `t2_lead` gate): checked, and a significant mismatch put to T1, before the pass opens the lead's gate —
/// so a mismatch that stands is on that gate. Returns whether it checked any.
pub(crate) async fn leads_received(engine: &Engine, verifying: &[Brief]) -> Result<bool> {
    let mut checked = false;
    for lead in verifying.iter().filter(|b| BriefRole::of(b) == BriefRole::Lead) {
        if !engine.store.list_children(lead.id)?.is_empty()
            || engine
                .store
                .list_gates_of_kind(lead.run, GateKind::T2Lead)?
                .iter()
                .any(|g| g.brief == Some(lead.id))
        {
            continue;
        }
        let output: LeadOutput = output_of(engine, lead)?;
        lead_received(engine, lead, output.understanding.as_ref())?;
        engine.store.flush_events()?;
        confirm_pending(engine, lead.run).await?;
        checked = true;
    }
    Ok(checked)
}

/// L0 at T1→T2: the lead restated its workstream's topic; held against the files and interfaces T1's
/// plan declared for the workstream (the fallback when it declared none).
fn lead_received(engine: &Engine, lead: &Brief, understanding: Option<&Understanding>) -> Result<()> {
    let (files, interfaces, plan) = planned_scope(engine, lead)?;
    let handed = Scope {
        files: &files,
        interfaces: &interfaces,
    };
    record(
        engine,
        Handoff {
            level: Level::L0,
            handoff: "t1→t2".into(),
            receiver: lead,
            handing_over: plan,
            outcome: check_scope(Level::L0, handed, understanding.map(restated_scope)),
            restated: understanding.map(restatement_text).unwrap_or_default(),
        },
    )
}

/// L1 at T2→T3 (T1→T3 on a path without T2): a squad lead's committed task list restated the design it
/// was handed; held against its specialist's declared `files` and `interfaces` (or, under T1, the plan's
/// for the workstream). A handing-over side that declared none is recorded with the fallback.
pub(crate) fn squad_received(engine: &Engine, squad: &Brief, output: &SquadOutput) -> Result<()> {
    let understanding = output.understanding.as_ref();
    let parent = match squad.parent {
        Some(parent) => Some(engine.store.get_brief(parent)?),
        None => None,
    };
    let from = parent.as_ref().map_or(Tier::T2, |p| p.tier);
    let (files, interfaces, handing_over) = match &parent {
        Some(p) if BriefRole::of(p) == BriefRole::Specialist => {
            let spec: SpecialistOutput = output_of(engine, p)?;
            (spec.files, spec.interfaces, Some(p.id))
        }
        Some(p) if p.tier == Tier::T1 => planned_scope(engine, squad)?,
        _ => (Vec::new(), Vec::new(), None),
    };
    let handed = Scope {
        files: &files,
        interfaces: &interfaces,
    };
    record(
        engine,
        Handoff {
            level: Level::L1,
            handoff: format!("{from}→t3"),
            receiver: squad,
            handing_over,
            outcome: check_scope(Level::L1, handed, understanding.map(restated_scope)),
            restated: understanding.map(restatement_text).unwrap_or_default(),
        },
    )
}

/// L1 at T4→T5 for the implementers just handed to their verifiers: each slice's changed paths (its diff,
/// the verifier's input) against the files its squad lead's committed draft declared. An implementer
/// without a squad lead (a `t4→t5` path) or whose squad declared no files is recorded with the fallback.
pub(crate) fn slices_received(engine: &Engine, implementers: &[&Brief]) -> Result<()> {
    let nothing = Arc::new(Handed::default());
    for implementer in implementers {
        let handed = match implementer.parent {
            // Each squad's draft read once, for all its slices.
            Some(parent) => engine
                .agreement_asks
                .handed(parent, || handed_by_squad(engine, parent))?,
            None => nothing.clone(),
        };
        let declared = &handed.files;
        // A non-empty draft is a squad lead's: it is the one asked.
        let handing_over = implementer.parent.filter(|_| !declared.is_empty());
        // Without a declared design there is nothing to compare: the diff is not read at all.
        let changed = if declared.is_empty() {
            Vec::new()
        } else {
            let name = crate::artifacts::diff_name(implementer.id);
            match engine.store.latest_artifact(implementer.run, &name)? {
                Some(diff) => diff_paths(&String::from_utf8_lossy(&diff.bytes)),
                None => Vec::new(),
            }
        };
        let outcome = check(Level::L1, declared, Some(&changed));
        record(
            engine,
            Handoff {
                level: Level::L1,
                handoff: "t4→t5".into(),
                receiver: implementer,
                handing_over,
                outcome,
                restated: if changed.is_empty() {
                    String::new()
                } else {
                    format!("the slice changes {}", changed.join(", "))
                },
            },
        )?;
    }
    // The records are held back: they go with the pass's next write, or its end.
    Ok(())
}

/// L1 at T3→T4 for every implementer whose teachback was decided since the last pass: its own restatement
/// (the teachback's `files` and `interfaces`) against its squad lead's committed draft (the draft's `files`,
/// and the interfaces it `provides` and `consumes`), decided by [`check_task`]. Runs in the pass, after the
/// teachback is decided — never on the hook's or the review's path, so the teachback gate is no slower —
/// and once per implementer (a restarted runner skips those already recorded). An implementer without a
/// squad lead, or whose squad declared nothing, is recorded with the fallback. A significant mismatch is
/// asked at the end of the pass like the others. Returns whether it checked any.
pub(crate) fn tasks_restated(engine: &Engine, run: RunId) -> Result<bool> {
    let decided = engine
        .agreement_asks
        .decided_teachbacks(engine.store.as_ref(), run)?;
    let mut checked = false;
    let nothing = Arc::new(Handed::default());
    for (id, teachback) in decided {
        let implementer = engine.store.get_brief(id)?;
        if BriefRole::of(&implementer) != BriefRole::Implementer {
            continue;
        }
        let handed = match implementer.parent {
            Some(parent) => engine
                .agreement_asks
                .handed(parent, || handed_by_squad(engine, parent))?,
            None => nothing.clone(),
        };
        let (files, interfaces) = (&handed.files, &handed.interfaces);
        let handed = Scope { files, interfaces };
        let restated = Scope {
            files: &teachback.files,
            interfaces: &teachback.interfaces,
        };
        let declared = !files.is_empty() || !interfaces.is_empty();
        record(
            engine,
            Handoff {
                level: Level::L1,
                handoff: crate::agreement_asks::TASK_HANDOFF.into(),
                receiver: &implementer,
                handing_over: implementer.parent.filter(|_| declared),
                outcome: check_task(handed, Some(restated)),
                restated: restatement_text(&Understanding {
                    building: teachback.building.clone(),
                    files: teachback.files.clone(),
                    interfaces: teachback.interfaces.clone(),
                }),
            },
        )?;
        checked = true;
    }
    // The records are held back: they go with the pass's next write, its hand-overs' commit at the latest
    // (a question asked was written at once, by `record`).
    Ok(checked)
}

/// What the brief `squad` declared in its committed draft when it is a T3 squad lead's (nothing otherwise):
/// the files its tasks touch and the interfaces it provides and consumes.
fn handed_by_squad(engine: &Engine, squad: BriefId) -> Result<Handed> {
    let squad = engine.store.get_brief(squad)?;
    if squad.tier != Tier::T3 {
        return Ok(Handed::default());
    }
    let draft = output_of::<SquadOutput>(engine, &squad)?;
    let mut interfaces = draft.provides;
    interfaces.extend(draft.consumes);
    Ok(Handed {
        files: draft.files,
        interfaces,
    })
}

/// What a signed-off slice achieved, for its verdict ([`agency_core::tiers::VerifierOutput::achieved`]):
/// the files the signed-off commit changes (from the diff the sign-off judged, or else the slice's diff on
/// the blackboard) and the judge's first line.
pub(crate) fn achieved(
    engine: &Engine,
    verifier: &Brief,
    report: &agency_signoff::SignoffReport,
    changed: Option<Vec<String>>,
) -> Achieved {
    let files = changed.unwrap_or_else(|| {
        let Some(implementer) = verifier.parent else {
            return Vec::new();
        };
        let name = crate::artifacts::diff_name(implementer);
        match engine.store.latest_artifact(verifier.run, &name) {
            Ok(Some(diff)) => diff_paths(&String::from_utf8_lossy(&diff.bytes)),
            Ok(None) => Vec::new(),
            // Said, not swallowed: the purpose (L2) check then has no files to hold, and records so.
            Err(error) => {
                let _ = engine.log_at(
                    verifier.run,
                    Some(verifier.tier),
                    "normal",
                    "UNREADABLE",
                    format!(
                        "the diff {} verified could not be read for its L2 check ({error})",
                        verifier.title
                    ),
                );
                Vec::new()
            }
        }
    });
    Achieved {
        summary: judge_first_line(report),
        files,
    }
}

/// The judge's first line (what the sign-off's restatement of the achievement says in words), cut to 200
/// characters; empty when the judge said nothing before its verdict.
pub(crate) fn judge_first_line(report: &agency_signoff::SignoffReport) -> String {
    report
        .judge_answer
        .as_deref()
        .and_then(|a| {
            a.lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with("VERDICT:"))
        })
        .map(|l| l.chars().take(200).collect())
        .unwrap_or_default()
}

/// The `handoff` of the L2 check at the run's acceptance.
pub(crate) const ACCEPT_HANDOFF: &str = "accept";

/// L2 at the run's acceptance, as the runner acts on T1's accept brief: what the acceptance restates the
/// run achieved (the integration branch's changed files) against the files the plan declared over all its
/// workstreams ([`check_acceptance`]). Nobody is asked — T1 both declared the purpose and accepted the
/// result, so there is no other tier to hand the question to — and a significant mismatch is an `anomaly`
/// at once. No tier gate follows the acceptance to list it: the records are on the accept brief, shown in
/// the live log and by `agency inspect`. Checked once per acceptance brief, a restarted runner included.
pub(crate) fn acceptance_checked(engine: &Engine, accept: &Brief) -> Result<()> {
    let mut already = false;
    let kinds = [agency_core::event::EventKind::Agreement];
    walk_events_of_kinds::<EngineError>(engine.store.as_ref(), accept.run, &kinds, 0, |e| {
        already = e.brief == Some(accept.id)
            && matches!(e.typed(), Ok(EventPayload::Agreement(a)) if a.handoff == ACCEPT_HANDOFF);
        Ok(if already {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    })?;
    if already {
        return Ok(());
    }
    let output: agency_core::tiers::AcceptOutput = output_of(engine, accept)?;
    let declared: Vec<String> = crate::plan::approved_plan(engine, accept.run)?
        .map(|plan| {
            plan.workstreams
                .iter()
                .flat_map(|ws| ws.files.iter().cloned())
                .collect()
        })
        .unwrap_or_default();
    let achieved = output.achieved.as_ref().map(|a| a.files.as_slice());
    let outcome = check_acceptance(&declared, achieved);
    let (significant, differences) = match &outcome {
        Outcome::Mismatch {
            significant,
            differences,
        } => (*significant, differences.clone()),
        Outcome::Agreed | Outcome::Assumed => (false, Vec::new()),
    };
    let restated = match &output.achieved {
        Some(a) if !a.files.is_empty() => {
            let mut text = format!("the run changes {}", a.files.join(", "));
            if !a.summary.is_empty() {
                text.push_str(&format!(" [{}]", a.summary));
            }
            text
        }
        _ => String::new(),
    };
    let checked = AgreementChecked {
        level: Level::L2.as_str().into(),
        handoff: ACCEPT_HANDOFF.into(),
        workstream: accept.workstream.clone(),
        outcome: outcome.as_str().into(),
        significant,
        differences: differences.clone(),
        restated,
        ..AgreementChecked::default()
    };
    let mut event = NewEvent::typed(accept.run, EventPayload::Agreement(checked));
    event.tier = Some(accept.tier);
    event.brief = Some(accept.id);
    engine.store.append_event_soon(event)?;
    if significant {
        let mut anomaly = NewEvent::typed(
            accept.run,
            EventPayload::Anomaly(Anomaly {
                source: "agreement".into(),
                workstream: Some(accept.workstream.clone()),
                brief: Some(accept.id),
                message: format!(
                    "L2 mismatch at the run's acceptance: {} — what the plan declared over its workstreams",
                    differences.join("; ")
                ),
            }),
        );
        anomaly.tier = Some(accept.tier);
        anomaly.brief = Some(accept.id);
        engine.store.append_event_soon(anomaly)?;
    }
    engine.store.flush_events()?;
    Ok(())
}

/// L2 at T5→T1, as a squad's joint verdict is formed: what its slices' verdicts restate as achieved (their
/// `achieved` files) against what T1's plan declared for the workstream — the purpose T1 handed down. Once
/// per round: before the T5 verdict gate opens (when it is on), else as the verdict is acted on. A
/// significant mismatch is put to T1 at once, so a mismatch that stands is on that very gate.
pub(crate) async fn purpose_checked(engine: &Engine, verifiers: &[&Brief]) -> Result<()> {
    let Some(anchor) = verifiers.first() else {
        return Ok(());
    };
    if !verifiers.iter().any(|v| v.status == BriefStatus::Verifying) {
        return Ok(());
    }
    if engine.config.visibility.gate_enabled(GateKind::T5Verdict)
        && engine
            .store
            .list_gates_of_kind(anchor.run, GateKind::T5Verdict)?
            .iter()
            .any(|g| g.brief == Some(anchor.id))
    {
        return Ok(());
    }
    let (files, interfaces, plan) = planned_scope(engine, anchor)?;
    let mut achieved: Vec<String> = Vec::new();
    let mut summaries: Vec<String> = Vec::new();
    for verifier in verifiers {
        if let Some(a) = output_of::<VerifierOutput>(engine, verifier)?.achieved {
            for file in a.files {
                if !achieved.contains(&file) {
                    achieved.push(file);
                }
            }
            if !a.summary.is_empty() {
                summaries.push(format!("{}: {}", verifier.title, a.summary));
            }
        }
    }
    let handed = Scope {
        files: &files,
        interfaces: &interfaces,
    };
    let restated = (!achieved.is_empty()).then(|| Scope {
        files: &achieved,
        interfaces: &[],
    });
    let outcome = check_scope(Level::L2, handed, restated);
    let mut text = String::new();
    if !achieved.is_empty() {
        text = format!("the slices change {}", achieved.join(", "));
        if !summaries.is_empty() {
            text.push_str(&format!(" [{}]", summaries.join("; ")));
        }
    }
    record(
        engine,
        Handoff {
            level: Level::L2,
            handoff: "t5→t1".into(),
            receiver: anchor,
            handing_over: plan,
            outcome,
            restated: text,
        },
    )?;
    engine.store.flush_events()?;
    confirm_pending(engine, anchor.run).await?;
    Ok(())
}

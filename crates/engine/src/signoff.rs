//! The runner's sign-offs, through the same `agency-signoff` pipeline `agency goal complete` uses. A T5
//! brief is not a free agent: it is the sign-off of its implementer's commit against the slice's
//! contract — the mechanical checks (evidence, protected paths), stage 1 (the verify result the runner
//! recorded when the implementer committed, on that same commit) and the read-only judge, run on the T5
//! runtime and model as that brief. Its outcome becomes the brief's [`VerifierOutput`], so the joint verdict
//! works as before: a rejection's `missing` items are the issues a retried slice is given.
//!
//! Everything is recorded the way `agency goal complete` records it: `signoff_started`, the verify record
//! and the judge transcript as artifacts, and `signoff_accepted` / `signoff_rejected` /
//! `signoff_inconclusive` on the T5 brief.
//!
//! A slice whose implementer's variety score requires an auditor (7 and above) is also reviewed by one:
//! a second judge beside the first, on the same clean checkout, that is never shown the implementer's
//! claims or evidence. A rejection by either rejects the slice (its missing items go back to the
//! implementer, and repeated rejections escalate to a human as any do); `signoff_audit` records the
//! auditor's verdict and whether it agrees with the judge's, and the T5 verdict's notes say so.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agency_core::contract::GoalContract;
use agency_core::event::payload;
use agency_core::event::{EventPayload, NewEvent};
use agency_core::tiers::{AcceptOutput, Achieved, BriefRole, VerifierOutput};
use agency_core::verdict::SliceVerdict;
use agency_core::{Brief, BriefId, RunId, Tier};
use agency_exec::runtime::{
    AgentOutcome, AgentReport, AgentStop, AgentTask, Evidence, ReportStatus, RunnerLink, Runtime,
    RuntimeError,
};
use agency_llm::{BoxFuture, CancelToken, LlmError};
use agency_signoff::{
    CheckoutPlace, Diffed, Judge, Outcome, Recording, RunAs, SignoffReport, SignoffRequest, Verified,
    VerifyResult,
};

use agency_store::Change;

use crate::artifacts::slice_subject;
use crate::brief_link::{BriefLink, Reviewer};
use crate::crew::{AgentEnd, Launches};
use crate::engine::{Engine, report_name};
use crate::error::{EngineError, Result};

/// Everything one sign-off needs, owned, so its blocking half can run on another thread.
#[derive(Debug, Clone)]
pub(crate) struct Owned {
    pub subject: String,
    pub asked: String,
    pub commit: String,
    pub base: String,
    pub contract: GoalContract,
    pub claims: Vec<String>,
    pub evidence: Vec<Evidence>,
    pub verified: Option<Verified>,
    /// The diff from base to commit, when the runner already took it (the sign-off checks it is of the
    /// ids it judges).
    pub diffed: Option<Diffed>,
    /// The brief the sign-off is recorded on, and the tier it is shown under.
    pub brief: BriefId,
    pub tier: Tier,
    /// Where its clean checkout goes: under the run's worktrees.
    pub checkouts: CheckoutPlace,
    /// The sandbox its verify command and judge run in.
    pub sandbox: agency_exec::Sandboxing,
    /// Whether an auditor reviews beside the judge: the implementer's variety score requires one
    /// ([`agency_core::variety::auditor_required_for_score`], 7 and above).
    pub audit: bool,
}

impl Owned {
    fn request<'a>(&'a self, engine: &'a Engine) -> SignoffRequest<'a> {
        SignoffRequest {
            repo: &engine.repo,
            commit: &self.commit,
            base: &self.base,
            subject: &self.subject,
            asked: Some(&self.asked),
            contract: &self.contract,
            agreed: None,
            claims: &self.claims,
            evidence: &self.evidence,
            verify_timeout: Duration::from_secs(u64::from(engine.config.signoff.verify_timeout_seconds)),
            verified: self.verified.as_ref(),
            diffed: self.diffed.as_ref(),
            checkouts: &self.checkouts,
            sandbox: &self.sandbox,
        }
    }

    fn recording<'a>(&self, engine: &'a Engine, run: agency_core::RunId) -> Recording<'a> {
        Recording {
            store: engine.store.as_ref(),
            run,
            brief: Some(self.brief),
            tier: Some(self.tier),
            // The verifier's end is written as soon as its sign-off returns: one commit for both.
            outcome_soon: true,
        }
    }
}

/// Runs one sign-off as `judge_brief` (the brief whose runtime and model the judge uses). The blocking half
/// runs on a blocking thread, so other agents keep going meanwhile. A judge call the budget refused comes
/// back as that error, not as an inconclusive sign-off: the brief then waits at the budget gate.
pub(crate) async fn run_signoff(
    engine: &Engine,
    owned: Owned,
    judge_brief: &Brief,
    link: &dyn RunnerLink,
    cancel: &CancelToken,
) -> std::result::Result<SignoffReport, RuntimeError> {
    let run = judge_brief.run;
    let blocking = {
        let (engine, owned) = (engine.clone(), owned.clone());
        tokio::task::spawn_blocking(move || {
            agency_signoff::check(&owned.request(&engine), Some(&owned.recording(&engine, run)))
        })
    };
    let checked = blocking
        .await
        .map_err(|e| RuntimeError::Other(format!("sign-off task: {e}")))?
        .map_err(|e| RuntimeError::Other(format!("sign-off of {}: {e}", owned.subject)))?;
    let runtime = engine
        .runtimes
        .get(&judge_brief.tier)
        .cloned()
        .ok_or_else(|| RuntimeError::Other(format!("no runtime for {}", judge_brief.tier)))?;
    let watched = BudgetWatch {
        inner: runtime,
        refused: Mutex::new(None),
    };
    let mut meta = crate::task::call_meta(judge_brief);
    meta.role = Some("judge".into());
    let run_as = RunAs {
        brief: judge_brief,
        meta,
        system: Some(crate::prompts::for_role(BriefRole::of(judge_brief))),
        observer: link,
        model: None,
    };
    let judge = Judge {
        runtime: &watched,
        limits: engine.options.limits,
        run_as: Some(&run_as),
    };
    // The auditor: on `signoff.auditor_model` when it is set, else the judge's runtime and model; in a
    // conversation of its own, under its own role (so its calls, usage and scripted replies are told apart),
    // without the T5 tier's prompt (which speaks to the judge) and without the implementer's claims.
    let (audit_runtime, audit_model) = match &engine.auditor {
        Some(own) => (own.runtime.clone(), Some(own.provider.model().to_string())),
        None => (
            watched.inner.clone(),
            // The model is known for the built-in agent only; an external runtime may pick its own.
            (watched.inner.name() == "builtin")
                .then(|| engine.providers.get(&judge_brief.tier))
                .flatten()
                .map(|p| p.model().to_string()),
        ),
    };
    let audit_watched = BudgetWatch {
        inner: audit_runtime,
        refused: Mutex::new(None),
    };
    let mut audit_meta = crate::task::call_meta(judge_brief);
    audit_meta.role = Some("auditor".into());
    let audit_as = RunAs {
        brief: judge_brief,
        meta: audit_meta,
        system: None,
        observer: link,
        model: audit_model,
    };
    let auditor = Judge {
        runtime: &audit_watched,
        limits: engine.options.limits,
        run_as: Some(&audit_as),
    };
    let request = owned.request(engine);
    let recording = owned.recording(engine, run);
    let report = agency_signoff::judge_and_audit_stage(
        checked,
        &request,
        &judge,
        owned.audit.then_some(&auditor),
        Some(&recording),
        cancel,
    )
    .await
    .map_err(|e| match e {
        // The provider's trouble, as an agent's model call reports it: the runner pauses the run at the
        // outage gate and the brief waits, its attempt not spent ([`crate::outage`]).
        agency_signoff::SignoffError::ProviderUnavailable { error, .. } => RuntimeError::Model(error),
        other => RuntimeError::Other(format!("sign-off of {}: {other}", owned.subject)),
    })?;
    if let Some(refused) = watched.take_refusal().or_else(|| audit_watched.take_refusal()) {
        return Err(refused);
    }
    Ok(report)
}

impl Engine {
    /// Prepares a T5 brief: the sign-off of its implementer's commit (see [`slice`]), started with the
    /// agents of `launches`, so judges run alongside them and are recorded the same way.
    pub(crate) fn spawn_signoff(
        &self,
        launches: &mut Launches,
        brief: Brief,
        cancel: &CancelToken,
    ) -> Result<()> {
        let runtime = self.runtimes.get(&brief.tier).map_or("none", |r| r.name());
        let spawned = NewEvent::typed(
            brief.run,
            EventPayload::Spawned(payload::Spawned {
                title: brief.title.clone(),
                runtime: runtime.to_string(),
                attempt: brief.attempt,
                signoff: Some(true),
            }),
        )
        .brief(brief.id)
        .tier(brief.tier);
        // The judge never teaches back (its own link answers that); this link only record what it does.
        let reviewer = Reviewer::Human {
            poll: self.options.poll,
        };
        let link: Arc<dyn RunnerLink> = Arc::new(
            BriefLink::new(self.store.clone(), brief.clone(), reviewer, cancel.child())
                .charging(self.unmetered_ledger(self.runtimes.get(&brief.tier))),
        );
        let (engine, cancel, id) = (self.clone(), cancel.child(), brief.id);
        // The claim is held like any agent's: lost, the sign-off stops and nothing of it is recorded.
        let claim =
            crate::crew::hold_claim(self.store.clone(), id, self.options.worker.clone(), self.lease());
        let accept = BriefRole::of(&brief) == BriefRole::Accept;
        launches.add(vec![Change::AppendEvent(spawned)], async move {
            let work = async {
                if accept {
                    acceptance(engine, brief, link, cancel.clone()).await
                } else {
                    slice(engine, brief, link, cancel.clone()).await
                }
            };
            tokio::select! {
                outcome = work => (id, AgentEnd::Finished(Box::new(outcome))),
                () = claim => {
                    cancel.cancel();
                    (id, AgentEnd::ClaimLost)
                }
            }
        });
        Ok(())
    }
}

/// T1's acceptance: the sign-off of the integration branch against the goal anchor and every workstream's
/// contract. Every workstream's verify runs on the integration branch as it now is (a later merge can break
/// an earlier workstream); then the mechanical checks (the run's changes since its base, protected paths
/// unless some contract of the run authorised them) and the judge, run on T1's runtime as the accept brief.
/// Its outcome is T1's [`AcceptOutput`]: accepted, the run succeeds; rejected, a human decides.
pub(crate) async fn acceptance(
    engine: Engine,
    accept: Brief,
    link: Arc<dyn RunnerLink>,
    cancel: CancelToken,
) -> std::result::Result<AgentOutcome, RuntimeError> {
    let other = |e: EngineError| RuntimeError::Other(e.to_string());
    let plan = crate::plan::approved_plan(&engine, accept.run)
        .map_err(other)?
        .ok_or_else(|| RuntimeError::Other("accept: the run has no approved plan".into()))?;
    let run = engine.store.get_run(accept.run).map_err(|e| other(e.into()))?;
    let base = run
        .base_rev
        .ok_or_else(|| RuntimeError::Other("accept: the run records no base commit".into()))?;
    let commit = engine
        .repo
        .rev_parse(&engine.branches(accept.run).integration())
        .map_err(|e| other(e.into()))?;
    let recording = Recording {
        store: engine.store.as_ref(),
        run: accept.run,
        brief: Some(accept.id),
        tier: Some(Tier::T1),
        outcome_soon: false,
    };
    let mut ran = Vec::new();
    let mut failed = Vec::new();
    for ws in &plan.workstreams {
        let Some(command) = &ws.contract.verify else {
            continue;
        };
        let result = crate::handover::verify_rev(&engine, accept.run, &commit, command)
            .await
            .map_err(other)?;
        recording
            .verify(&format!("{ACCEPT_SUBJECT}/{}", ws.id), &commit, &result)
            .map_err(|e| RuntimeError::Other(e.to_string()))?;
        ran.push(format!("- {}: `{command}` {}", ws.id, result.describe()));
        if !result.passed {
            failed.push(format!(
                "workstream {}: `{command}` fails on the integration branch ({}):\n{}",
                ws.id,
                result.describe(),
                result.tail.trim_end()
            ));
        }
    }
    // What the run changed, for T1's restatement of what it achieved (L2 at the acceptance).
    let mut changed: Option<Vec<String>> = None;
    let report = if failed.is_empty() {
        let owned = acceptance_request(&engine, &accept, &plan, &base, &commit, &ran).map_err(other)?;
        changed = owned.diffed.as_ref().map(|d| {
            d.changes
                .iter()
                .map(|c| c.path.to_string_lossy().into_owned())
                .collect()
        });
        run_signoff(&engine, owned, &accept, link.as_ref(), &cancel).await?
    } else {
        // Stage 1 rejects on its own: no judge is asked.
        let report = SignoffReport {
            subject: ACCEPT_SUBJECT.into(),
            commit: commit.clone(),
            base: base.clone(),
            outcome: Outcome::Rejected {
                by: agency_signoff::RejectedBy::Verify,
                missing: failed,
            },
            verify: None,
            contract_changes: Vec::new(),
            evidence_problems: Vec::new(),
            protected_edits: Vec::new(),
            judge: None,
            judge_answer: None,
            audit: None,
            judge_signal: None,
            verify_artifact: None,
            transcript_artifact: None,
        };
        recording
            .started(ACCEPT_SUBJECT, &commit, &base)
            .and_then(|()| recording.outcome(&report, None))
            .map_err(|e| RuntimeError::Other(e.to_string()))?;
        report
    };
    if let Some(signal) = report.judge_signal {
        return Ok(raised(signal));
    }
    let mut output = accept_output(&report, engine.config.signoff.inconclusive_blocks)?;
    output.achieved = changed.map(|files| Achieved {
        summary: crate::agreement::judge_first_line(&report),
        files,
    });
    Ok(AgentOutcome {
        report: Some(AgentReport {
            status: ReportStatus::Done,
            summary: output.summary.clone(),
            evidence: Vec::new(),
            output: serde_json::to_value(&output).unwrap_or_default(),
        }),
        stop: AgentStop::Finished,
        session_id: None,
        final_text: None,
    })
}

/// A judge's signal as its brief's outcome: the runner handles it as any agent's (HALT stops the run).
fn raised(signal: agency_exec::runtime::AlgedonicSignal) -> AgentOutcome {
    AgentOutcome {
        report: None,
        stop: AgentStop::Signal(signal),
        session_id: None,
        final_text: None,
    }
}

/// The `may_edit` of every slice's contract under the approved plan, found by walking down from it one
/// family at a time: a read of the whole run here held every brief at once (15 MB at 10,000 briefs, the
/// run's peak memory). A slice's own children (its verifiers) are not read.
fn slices_may_edit(engine: &Engine, run: RunId) -> Result<Vec<String>> {
    let Some(plan) = crate::plan::approved(engine, run)? else {
        return Ok(Vec::new());
    };
    let mut may_edit = Vec::new();
    let mut parents = vec![plan.brief.id];
    while let Some(parent) = parents.pop() {
        for child in engine.store.list_children(parent)? {
            if child.tier == Tier::T4 {
                may_edit.extend(child.contract.into_iter().flat_map(|c| c.may_edit));
            } else {
                parents.push(child.id);
            }
        }
    }
    Ok(may_edit)
}

/// What T1's acceptance is recorded under.
const ACCEPT_SUBJECT: &str = "accept";

/// Changed files an acceptance cites as its evidence, at most: a run of thousands of slices changes
/// thousands of files, which would make a judge's prompt no model could read (and cost the runner memory in
/// proportion); the judge has the diff and the checkout for the rest.
const ACCEPT_EVIDENCE: usize = 200;

/// The acceptance sign-off: the integration branch from the run's base, one contract made of the goal
/// anchor and every workstream's (their failure modes; the `may_edit` of every contract in the run, since
/// each slice was already signed off under its own), the files the run changed as the evidence (the first
/// [`ACCEPT_EVIDENCE`], and how many there are).
fn acceptance_request(
    engine: &Engine,
    accept: &Brief,
    plan: &agency_core::plan::Plan,
    base: &str,
    commit: &str,
    verified: &[String],
) -> Result<Owned> {
    let mut done_when = format!("The goal holds: {}", accept.goal_anchor);
    let mut failure_modes = Vec::new();
    let mut may_edit = Vec::new();
    for ws in &plan.workstreams {
        done_when.push_str(&format!("\n- workstream {}: {}", ws.id, ws.contract.done_when));
        failure_modes.extend(
            ws.contract
                .failure_modes
                .iter()
                .map(|m| format!("{}: {m}", ws.id)),
        );
        may_edit.extend(ws.contract.may_edit.iter().cloned());
    }
    may_edit.extend(slices_may_edit(engine, accept.run)?);
    may_edit.sort();
    may_edit.dedup();
    // The run's changes are the evidence, and the sign-off judges the same diff: one git process for both.
    let diffed = Diffed::of(&engine.repo, base, commit).map_err(|e| EngineError::State(e.to_string()))?;
    let (evidence, uncited) = cited_changes(&diffed.changes, ACCEPT_EVIDENCE);
    let mut claims = vec![
        "every workstream was signed off slice by slice and merged into the integration branch".to_string(),
    ];
    claims.extend(uncited);
    let verified = if verified.is_empty() {
        "No workstream has a verify command.".to_string()
    } else {
        format!(
            "agency ran every workstream's verify command on this commit, in a clean checkout:\n{}",
            verified.join("\n")
        )
    };
    Ok(Owned {
        subject: ACCEPT_SUBJECT.into(),
        asked: format!(
            "Goal anchor (the user's goal, verbatim): {}\nAccept the integrated result only if it fulfils the goal, \
             not just the plan.\n{verified}",
            accept.goal_anchor
        ),
        commit: commit.to_string(),
        base: base.to_string(),
        contract: GoalContract {
            done_when,
            verify: None,
            failure_modes,
            may_edit,
        },
        claims,
        evidence,
        verified: None,
        diffed: Some(diffed),
        brief: accept.id,
        tier: Tier::T1,
        checkouts: engine.branches(accept.run).checkouts(),
        sandbox: engine.sandboxing(),
        // The run's acceptance has no variety score of its own; each slice under it was audited where its
        // own score required.
        audit: false,
    })
}

/// The changed files an acceptance cites as evidence: the first `max` that are still there (a deleted one
/// is not in the checkout to be read), and, when there are more, the claim that says how many.
fn cited_changes(changes: &[agency_exec::FileChange], max: usize) -> (Vec<Evidence>, Option<String>) {
    let present = || {
        changes
            .iter()
            .filter(|c| c.kind != agency_exec::ChangeKind::Deleted)
    };
    let evidence: Vec<Evidence> = present()
        .take(max)
        .map(|c| Evidence {
            path: c.path.to_string_lossy().into_owned(),
            quote: None,
        })
        .collect();
    let files = present().count();
    let uncited = (files > evidence.len()).then(|| {
        format!(
            "the run changed {files} files; the first {} are cited as evidence, the diff has the rest",
            evidence.len()
        )
    });
    (evidence, uncited)
}

/// An acceptance sign-off's outcome as T1's output. Inconclusive blocks as a slice's does.
fn accept_output(
    report: &SignoffReport,
    inconclusive_blocks: bool,
) -> std::result::Result<AcceptOutput, RuntimeError> {
    let at = report.commit.get(..8).unwrap_or(&report.commit);
    Ok(match &report.outcome {
        Outcome::Accepted => AcceptOutput {
            accept: true,
            summary: report
                .judge_answer
                .clone()
                .filter(|a| !a.is_empty())
                .unwrap_or_else(|| format!("the integration branch is signed off at {at}")),
            missing: Vec::new(),
            achieved: None,
        },
        Outcome::Rejected { missing, .. } => AcceptOutput {
            accept: false,
            summary: format!("the integration branch's sign-off was rejected at {at}"),
            missing: missing.clone(),
            achieved: None,
        },
        Outcome::Inconclusive { reason } if inconclusive_blocks => {
            return Err(RuntimeError::Other(format!(
                "the acceptance judge gave no verdict at {at} ({reason}); an inconclusive sign-off blocks \
                 (signoff.inconclusive_blocks)"
            )));
        }
        Outcome::Inconclusive { reason } => AcceptOutput {
            accept: true,
            summary: format!(
                "sign-off INCONCLUSIVE at {at} ({reason}); accepted because signoff.inconclusive_blocks is off"
            ),
            missing: Vec::new(),
            achieved: None,
        },
    })
}

/// A T5 brief's work: the sign-off of its implementer's commit, as the agent outcome the runner records.
pub(crate) async fn slice(
    engine: Engine,
    verifier: Brief,
    link: Arc<dyn RunnerLink>,
    cancel: CancelToken,
) -> std::result::Result<AgentOutcome, RuntimeError> {
    let owned = slice_request(&engine, &verifier).map_err(|e| RuntimeError::Other(e.to_string()))?;
    let changed: Option<Vec<String>> = owned.diffed.as_ref().map(|d| {
        d.changes
            .iter()
            .map(|c| c.path.to_string_lossy().into_owned())
            .collect()
    });
    let report = run_signoff(&engine, owned, &verifier, link.as_ref(), &cancel).await?;
    if let Some(signal) = report.judge_signal {
        return Ok(raised(signal));
    }
    let mut output = verifier_output(&report, engine.config.signoff.inconclusive_blocks)?;
    output.achieved = Some(crate::agreement::achieved(&engine, &verifier, &report, changed));
    Ok(AgentOutcome {
        report: Some(AgentReport {
            status: ReportStatus::Done,
            summary: output.notes.clone(),
            evidence: Vec::new(),
            output: serde_json::to_value(&output).unwrap_or_default(),
        }),
        stop: AgentStop::Finished,
        session_id: None,
        final_text: None,
    })
}

/// The sign-off of a T5 brief's implementer: its branch against the workstream branch it started from, its
/// contract, its report's summary and evidence, and the verify result recorded when it committed.
fn slice_request(engine: &Engine, verifier: &Brief) -> Result<Owned> {
    let parent = verifier
        .parent
        .ok_or_else(|| EngineError::State(format!("T5 brief {} has no implementer", verifier.id.short())))?;
    let implementer = engine.store.get_brief(parent)?;
    let branches = engine.branches(implementer.run);
    // Branch names, not ids: the sign-off resolves each once, and records the ids it judged. Full ref names,
    // which it reads from their ref files where it can.
    let commit = crate::branches::full_ref(&branches.brief(&implementer));
    let base = crate::branches::full_ref(&branches.workstream(&implementer.workstream));
    let report: Option<AgentReport> = engine
        .artifact_of(implementer.run, implementer.id, report_name)?
        .and_then(|a| serde_json::from_slice(&a.bytes).ok());
    let (claims, evidence) = match report {
        Some(report) => (vec![report.summary], report.evidence),
        None => (Vec::new(), Vec::new()),
    };
    let subject = slice_subject(&implementer);
    Ok(Owned {
        verified: recorded_verify(engine, &implementer, &subject)?,
        diffed: match engine.slice_diffs.take(implementer.id) {
            Some(kept) => Some(kept),
            None => crate::slice_diffs::read_spilled(engine.store.as_ref(), implementer.run, implementer.id)?,
        },
        contract: contract_of(&implementer),
        asked: format!(
            "Goal anchor (the user's goal): {}\nThe slice's brief \"{}\":\n{}",
            implementer.goal_anchor,
            implementer.title,
            implementer.instructions.trim_end()
        ),
        subject,
        commit,
        base,
        claims,
        evidence,
        brief: verifier.id,
        tier: Tier::T5,
        checkouts: branches.checkouts(),
        sandbox: engine.sandboxing(),
        audit: implementer.gates().is_some_and(|g| g.auditor_required),
    })
}

/// The contract a brief is signed off against; a brief planned without one is held to its instructions.
fn contract_of(brief: &Brief) -> GoalContract {
    brief.contract.clone().unwrap_or_else(|| GoalContract {
        done_when: brief.instructions.clone(),
        ..GoalContract::default()
    })
}

/// The stage-1 result recorded when `implementer` committed, if it is that brief's. Only an implementer with
/// a stage-1 command has one ([`crate::handover::stage_one_command`]); without, nothing is looked up.
fn recorded_verify(engine: &Engine, implementer: &Brief, subject: &str) -> Result<Option<Verified>> {
    if crate::handover::stage_one_command(implementer).is_none() {
        return Ok(None);
    }
    let Some(artifact) = engine
        .store
        .latest_artifact(implementer.run, &crate::artifacts::verify_name(subject))?
    else {
        return Ok(None);
    };
    if artifact.meta.brief != Some(implementer.id) {
        return Ok(None);
    }
    Ok(serde_json::from_slice::<VerifyResult>(&artifact.bytes)
        .ok()
        .map(|result| Verified {
            result,
            artifact: Some(artifact.meta.id),
        }))
}

/// A sign-off's outcome as a T5 verdict. An inconclusive judge blocks (an error: the T5 brief fails and is
/// retried, then escalated) unless `signoff.inconclusive_blocks` is off, when it passes with a note.
fn verifier_output(
    report: &SignoffReport,
    inconclusive_blocks: bool,
) -> std::result::Result<VerifierOutput, RuntimeError> {
    let at = report.commit.get(..8).unwrap_or(&report.commit);
    let verify = report
        .verify
        .as_ref()
        .map_or("no verify command".to_string(), |v| {
            format!("verify {}", v.describe())
        });
    // The auditor's verdict beside the judge's, and a disagreement said in words: it is what a human at
    // the next gate reads of this slice.
    let audit = match (&report.audit, &report.judge) {
        (Some(audit), Some(judged)) => {
            let (judge, auditor) = (
                agency_signoff::verdict_word(judged),
                agency_signoff::verdict_word(&audit.verdict),
            );
            if judge == auditor {
                format!(", auditor {auditor}")
            } else {
                format!(", auditor {auditor}: DISAGREES with the judge ({judge})")
            }
        }
        _ => String::new(),
    };
    Ok(match &report.outcome {
        Outcome::Accepted => VerifierOutput {
            verdict: SliceVerdict::Pass,
            issues: Vec::new(),
            notes: format!("signed off at {at} ({verify}, judge accept{audit})"),
            achieved: None,
        },
        Outcome::Rejected { by, missing } => VerifierOutput {
            verdict: SliceVerdict::Fail,
            issues: missing.clone(),
            notes: format!(
                "sign-off rejected at {at} by the {}{audit}",
                match by {
                    agency_signoff::RejectedBy::Verify => "verify command",
                    agency_signoff::RejectedBy::Checks => "mechanical checks",
                    agency_signoff::RejectedBy::Judge => "judge",
                    agency_signoff::RejectedBy::Auditor => "auditor",
                }
            ),
            achieved: None,
        },
        Outcome::Inconclusive { reason } if inconclusive_blocks => {
            return Err(RuntimeError::Other(format!(
                "the sign-off judge gave no verdict at {at} ({reason}); an inconclusive sign-off blocks \
                 (signoff.inconclusive_blocks)"
            )));
        }
        Outcome::Inconclusive { reason } => VerifierOutput {
            verdict: SliceVerdict::Pass,
            issues: Vec::new(),
            notes: format!(
                "sign-off INCONCLUSIVE at {at} ({reason}{audit}); passed because signoff.inconclusive_blocks is off"
            ),
            achieved: None,
        },
    })
}

/// A runtime that remembers a model call the budget refused, so the sign-off does not count it as the
/// judge's failure.
#[derive(Debug)]
struct BudgetWatch {
    inner: Arc<dyn Runtime>,
    refused: Mutex<Option<RuntimeError>>,
}

impl BudgetWatch {
    fn take_refusal(&self) -> Option<RuntimeError> {
        self.refused.lock().ok().and_then(|mut r| r.take())
    }
}

impl Runtime for BudgetWatch {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn usage_unmetered(&self) -> bool {
        self.inner.usage_unmetered()
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, std::result::Result<AgentOutcome, RuntimeError>> {
        Box::pin(async move {
            match self.inner.run(task, link, cancel).await {
                Err(err @ RuntimeError::Model(LlmError::Budget(_))) => {
                    let why = err.to_string();
                    if let Ok(mut refused) = self.refused.lock() {
                        *refused = Some(err);
                    }
                    Err(RuntimeError::Other(why))
                }
                other => other,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use agency_exec::{ChangeKind, FileChange};

    use super::cited_changes;

    fn change(kind: ChangeKind, path: &str) -> FileChange {
        FileChange {
            kind,
            path: PathBuf::from(path),
            old_path: None,
        }
    }

    #[test]
    fn an_acceptance_cites_the_first_files_still_there_and_counts_the_rest() {
        let changes = vec![
            change(ChangeKind::Deleted, "gone.rs"),
            change(ChangeKind::Added, "a.rs"),
            change(ChangeKind::Modified, "b.rs"),
            change(ChangeKind::Renamed, "c.rs"),
        ];
        let (evidence, uncited) = cited_changes(&changes, 2);
        let paths: Vec<&str> = evidence.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["a.rs", "b.rs"]);
        assert_eq!(
            uncited.as_deref(),
            Some("the run changed 3 files; the first 2 are cited as evidence, the diff has the rest")
        );
        // All of them fit: no claim about the rest.
        let (evidence, uncited) = cited_changes(&changes, 200);
        assert_eq!(evidence.len(), 3);
        assert_eq!(uncited, None);
    }
}

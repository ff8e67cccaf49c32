//! Checking work out of the agents' reach. When an implementer stops, the runner commits its worktree and
//! runs the contract's verify command itself, in a clean checkout of that commit (stage 1 of sign-off, the
//! sign-off crate's own: a non-zero exit fails the brief at once, with no model call spent, and a pipeline
//! successor never starts from it). Then the slice's T5 brief signs it off ([`crate::signoff`]: the
//! mechanical checks and a read-only judge); when every slice of a squad is signed off or rejected, the
//! joint verdict decides: pass merges the slices into the workstream branch, partial retries only the
//! rejected slices with what their sign-off found missing, fail escalates.
//!
//! Through a shared remote, a worker runs stage 1 itself, in its own clone, on the commit it pushed
//! ([`verify_where_made`]); the driver takes that result for that commit.
//!
//! The effects take narrow contexts: stage 1 a [`CleanVerify`] (the repository, where checkouts go, the
//! timeout, the sandbox), its record the blackboard alone, and the merge of a squad's slices a
//! [`SliceMerge`] (the blackboard and the run's branches). What they decide — whether an implementer
//! changed anything, whether a squad's round is judged, the merge order, what a conflict sends where — is
//! [`agency_flow::merges`]; the joint verdict itself is [`agency_flow::verdicts`].

use std::collections::HashSet;
use std::time::Duration;

use agency_core::escalation::{Failure, decide};
use agency_core::event::payload::{self, BriefStatusChange, LogLine};
use agency_core::event::{EventPayload, NewEvent};
use agency_core::gate::GateKind;
use agency_core::tiers::VerifierOutput;
use agency_core::verdict::{JointVerdict, T5Result};
use agency_core::{Brief, BriefId, BriefStatus, NewBrief, RunId, Tier};
use agency_exec::{MergeChain, MergeOutcome};
use agency_flow::SquadVerdict;
use agency_flow::merges::{MergeConflict, SquadRound};
use agency_flow::verdicts::squad_verdict;
use agency_signoff::verify_command::{VerifyResult, run_verify, verify_argv};
use agency_signoff::{CleanCheckout, Diffed, Recording, SignoffError};
use agency_store::{Blackboard, WriteBatch};

use crate::artifacts::text_artifact;
use crate::branches::{RunBranches, full_ref};
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::plan::{output_of, place_children};

/// What stage 1 — a verify command run in a clean checkout of a commit — needs of the runner: the
/// repository, where the run's clean checkouts go, the command's timeout (team.yaml
/// `signoff.verify_timeout_seconds`) and the sandbox it runs in. Owned, since the command runs on a
/// blocking thread; made once per verify.
pub(crate) struct CleanVerify {
    pub(crate) repo: agency_exec::Repo,
    pub(crate) checkouts: agency_signoff::CheckoutPlace,
    pub(crate) timeout: Duration,
    pub(crate) sandbox: agency_exec::sandbox::Sandboxing,
}

impl CleanVerify {
    /// Runs `command` on `rev`, a full commit id already resolved, in a clean checkout, through the
    /// sign-off crate (the same stage 1 every sign-off uses). A command that needs a shell fails here with
    /// the reason.
    pub(crate) async fn run(self, rev: &str, command: &str) -> Result<VerifyResult> {
        let CleanVerify {
            repo,
            checkouts,
            timeout,
            sandbox,
        } = self;
        let (rev, command) = (rev.to_string(), command.to_string());
        // Tests can take minutes: keep them off the runner's event loop.
        tokio::task::spawn_blocking(move || -> std::result::Result<VerifyResult, SignoffError> {
            let argv = match verify_argv(&command) {
                Ok(argv) => argv,
                // A command that cannot run fails its verification with the reason; it is not the runner's
                // fault, and stopping the runner would stop the whole run.
                Err(unusable) => return Ok(unrunnable(&command, &unusable.to_string())),
            };
            let checkout = CleanCheckout::of_commit(&repo, rev, &checkouts)?;
            run_verify(&command, &argv, checkout.path(), timeout, &sandbox)
        })
        .await
        .map_err(|e| EngineError::State(format!("verify task: {e}")))?
        .map_err(|e| EngineError::State(format!("verify: {e}")))
    }
}

impl Engine {
    /// Stage 1 for `run`: its clean checkouts go where the run's do ([`CleanVerify`]).
    pub(crate) fn clean_verify(&self, run: RunId) -> CleanVerify {
        CleanVerify {
            repo: self.repo.clone(),
            checkouts: self.branches(run).checkouts(),
            timeout: Duration::from_secs(u64::from(self.config.signoff.verify_timeout_seconds)),
            sandbox: self.sandboxing(),
        }
    }
}

/// Runs the contract's verify command on `rev` in a clean checkout made where `run`'s checkouts go
/// ([`CleanVerify::run`]).
pub async fn verify_rev(engine: &Engine, run: RunId, rev: &str, command: &str) -> Result<VerifyResult> {
    engine.clean_verify(run).run(rev, command).await
}

/// The result of a verify command that could not be started (`why`).
fn unrunnable(command: &str, why: &str) -> VerifyResult {
    VerifyResult {
        command: command.to_string(),
        argv: Vec::new(),
        exit_code: None,
        signal: None,
        timed_out: false,
        duration_ms: 0,
        tail: why.to_string(),
        passed: false,
    }
}

/// How a verify command ended, without its duration (the log line stays the same from run to run; the
/// duration is in the record).
pub fn ending(result: &VerifyResult) -> String {
    match (result.exit_code, result.signal, result.timed_out) {
        (_, _, true) => "timed out".to_string(),
        (Some(code), _, _) => format!("exit {code}"),
        (None, Some(signal), _) => format!("signal {signal}"),
        (None, None, _) => "did not run".to_string(),
    }
}

/// Records a verify result the way the sign-off crate does (the `signoff/<subject>/verify` artifact and a
/// `signoff_verify` event), so the slice's sign-off reuses it instead of running the tests again.
fn record_verify(store: &dyn Blackboard, brief: &Brief, rev: &str, result: &VerifyResult) -> Result<()> {
    let recording = Recording {
        store,
        run: brief.run,
        brief: Some(brief.id),
        tier: Some(brief.tier),
        outcome_soon: false,
    };
    recording
        .verify(&crate::artifacts::slice_subject(brief), rev, result)
        .map_err(|e| match e {
            // The blackboard's own failure (a full disk, say) is reported as it is, not as a bad state.
            agency_signoff::SignoffError::Store(store) => EngineError::Store(store),
            other => EngineError::State(format!("recording verify of {}: {other}", brief.title)),
        })?;
    Ok(())
}

/// The verify command an implementer's commit is run through when it reports done (stage 1), whose result
/// is then recorded for its slice's sign-off: its contract's, if it has one.
pub(crate) fn stage_one_command(brief: &Brief) -> Option<&str> {
    brief.contract.as_ref()?.verify.as_deref()
}

/// Stage 1 where the slice was made: a worker sharing the run through a remote (`agency worker --repo`)
/// runs the contract's verify command on the commit it just pushed, in a clean checkout in its own clone,
/// sandboxed as every verify is, and records the result (through its claim's fence) before it reports the
/// slice. The driver then takes that record for the same commit and command instead of running the tests
/// again ([`implementer_done`], which still decides what a failed result does); the slice's sign-off
/// reuses it as on one machine. The driver's own slices, and every runner on one machine, verify as
/// before. Verify is run by agency either way, never by the agent: a worker is agency's own process.
pub(crate) async fn verify_where_made(engine: &Engine, brief: &Brief) -> Result<()> {
    if engine.options.remote.as_ref().is_none_or(|remote| remote.driver) {
        return Ok(());
    }
    let Some(command) = stage_one_command(brief) else {
        return Ok(());
    };
    let branch = engine.branches(brief.run).brief(brief);
    let rev = engine
        .repo
        .rev_parse_all(&[&full_ref(&branch)])?
        .pop()
        .ok_or_else(|| EngineError::State(format!("rev-parse of {branch} gave nothing")))?;
    // The brief is still this worker's claim while its tests run, however long they take: renewed as
    // while its agent worked. A claim lost meanwhile records nothing (the fence refuses the report).
    let holding = crate::crew::hold_claim(
        engine.store.clone(),
        brief.id,
        engine.options.worker.clone(),
        engine.lease(),
    );
    tokio::select! {
        result = verify_rev(engine, brief.run, &rev, command) => record_verify(engine.store.as_ref(), brief, &rev, &result?),
        () = holding => Ok(()),
    }
}

/// The stage-1 result the worker that made `brief`'s slice recorded for commit `rev` and `command`
/// ([`verify_where_made`]), if there is one: the brief's newest verify record, whose `signoff_verify`
/// event names this commit. Only through a remote (`shared`); on one machine the runner verifies itself.
fn verified_where_made(
    store: &dyn Blackboard,
    log: &crate::verify_log::VerifyLog,
    shared: bool,
    brief: &Brief,
    rev: &str,
    command: &str,
) -> Result<Option<VerifyResult>> {
    if !shared {
        return Ok(None);
    }
    let subject = crate::artifacts::slice_subject(brief);
    let Some(artifact) = store.latest_artifact(brief.run, &crate::artifacts::verify_name(&subject))? else {
        return Ok(None);
    };
    if artifact.meta.brief != Some(brief.id) {
        return Ok(None);
    }
    let id = artifact.meta.id.to_string();
    if !log.names(store, brief.run, brief.id, rev, &id)? {
        return Ok(None);
    }
    Ok(serde_json::from_slice::<VerifyResult>(&artifact.bytes)
        .ok()
        .filter(|result| result.command == command))
}

/// What became of an implementer that reported done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handover {
    /// It is `done`, its slice handed to a verifier.
    ToVerifier,
    /// It failed (nothing committed, or its verify command failed), and is handled as failures are.
    Failed,
}

/// An implementer reported done: commit its work, run stage 1, and hand the slice to a verifier. Says which
/// of the two it came to, so the pass need not ask the blackboard.
pub async fn implementer_done(engine: &Engine, brief: &Brief) -> Result<Handover> {
    // Its verifier's state is enough: whether one was written (a runner stopped after the hand-over).
    if engine
        .store
        .list_children_states(brief.id)?
        .iter()
        .any(|b| b.tier == Tier::T5)
    {
        return finish_implementer(engine, brief);
    }
    let branches = engine.branches(brief.run);
    // A slice another machine ran was committed and pushed there: its branch is fetched instead.
    let committed = if branches.worktree_is_here(brief) {
        branches.commit_brief(brief)?
    } else {
        let branch = branches.brief(brief);
        branches.fetch(&[branch, branches.workstream(&brief.workstream)])?;
        false
    };
    let branch = branches.brief(brief);
    let base = branches.workstream(&brief.workstream);
    // The new commit and the base it is diffed from (read from their ref files, or one `rev-parse`).
    let (full_branch, full_base) = (full_ref(&branch), full_ref(&base));
    let ids = engine.repo.rev_parse_all(&[&full_branch, &full_base])?;
    let [rev, base_rev] = <[String; 2]>::try_from(ids)
        .map_err(|ids| EngineError::State(format!("rev-parse of {branch} and {base} gave {ids:?}")))?;
    // Nothing left uncommitted: the agent may have committed itself, or done nothing at all.
    if !agency_flow::merges::changed_something(committed, &rev, &base_rev) {
        crate::failure::fail_brief(
            engine,
            brief,
            "it reported done but changed nothing: no commit on its branch",
        )?;
        return Ok(Handover::Failed);
    }
    if let Some(command) = stage_one_command(brief) {
        let shared = engine.options.remote.is_some();
        let result = match verified_where_made(
            engine.store.as_ref(),
            &engine.verify_log,
            shared,
            brief,
            &rev,
            command,
        )? {
            // Run by the worker that made the slice, on this very commit, before it reported.
            Some(result) => result,
            None => {
                let result = verify_rev(engine, brief.run, &rev, command).await?;
                record_verify(engine.store.as_ref(), brief, &rev, &result)?;
                result
            }
        };
        if !result.passed {
            let why = format!(
                "`{command}` failed on its commit ({}):\n{}",
                result.describe(),
                result.tail
            );
            crate::failure::fail_brief(engine, brief, &why)?;
            return Ok(Handover::Failed);
        }
    }
    // One diff for the verifier's input and the slice's sign-off (its changed paths and the judge's patch).
    let diff = engine
        .repo
        .diff_with_changes(&base_rev, &rev, engine.repo.options().output_cap)?;
    let diff_name = crate::engine::diff_name(brief.id);
    let diff_artifact = text_artifact(
        brief,
        &diff_name,
        "text/x-diff",
        &String::from_utf8_lossy(&diff.patch),
    );
    let diffed = Diffed::new(base_rev, rev, diff.changes, &diff.patch);
    let verifier = NewBrief {
        tier: Tier::T5,
        workstream: brief.workstream.clone(),
        title: brief.title.clone(),
        // The registry's verifier for the workstream's domain is chosen when its agent starts.
        personality: None,
        instructions: format!(
            "Sign off the slice \"{}\" against its contract: the mechanical checks, its verify result and a \
             read-only judge of its commit. Its brief was:\n{}",
            brief.title, brief.instructions
        ),
        inputs: vec![diff_name],
        variety: None,
        contract: brief.contract.clone(),
        depends_on: vec![],
    };
    // The diff, its verifier and the implementer's move to `done` are one write. A crash before it leaves
    // the implementer `verifying` with its commit, and this runs again; the worktree goes after it, at the
    // runner's next sweep, so a crash before that only leaves the worktree of a done brief behind, which
    // nothing starts in again and `agency gc` collects once the run is finished. It is held back to be
    // written with the other implementers' of this pass ([`crate::advance`] writes them before it reads
    // on, and before the worktree goes).
    let mut batch = WriteBatch::new();
    batch.put_artifact(diff_artifact);
    for child in place_children(engine, brief, vec![verifier])? {
        batch.insert_brief(child);
    }
    Engine::stage_move(&mut batch, brief, BriefStatus::Done, done_note());
    // The diffs put out of memory for this one go to the blackboard with it.
    for spilled in engine.slice_diffs.keep(brief.run, brief.id, diffed) {
        if let Some(artifact) = crate::slice_diffs::spilled_artifact(spilled) {
            batch.put_artifact(artifact);
        }
    }
    engine.apply_soon(batch)?;
    branches.remove_worktree(brief);
    Ok(Handover::ToVerifier)
}

fn finish_implementer(engine: &Engine, brief: &Brief) -> Result<Handover> {
    engine.move_brief(brief, BriefStatus::Done, done_note())?;
    Ok(Handover::ToVerifier)
}

fn done_note() -> BriefStatusChange {
    BriefStatusChange::noted("committed and verified; waiting for T5")
}

/// Forms the joint verdict of each squad (the parent brief of its implementers, and their workstream) whose
/// slices are all judged; [`crate::advance`] names the squads whose round may be complete.
pub async fn joint_verdicts(engine: &Engine, squads: &[(BriefId, String)]) -> Result<bool> {
    let mut progressed = false;
    for (parent, workstream) in squads {
        let Some(tasks) = crate::rounds::done_squad_tasks(engine.store.as_ref(), *parent, workstream)? else {
            continue;
        };
        let tasks: Vec<&Brief> = tasks.iter().collect();
        let mut verifiers: Vec<Brief> = Vec::with_capacity(tasks.len());
        for task in &tasks {
            let children = engine.store.list_children(task.id)?;
            match agency_flow::latest_of(children.iter())
                .into_iter()
                .find(|b| b.tier == Tier::T5)
            {
                Some(v) => verifiers.push(v.clone()),
                None => break,
            }
        }
        let statuses: Vec<BriefStatus> = verifiers.iter().map(|v| v.status).collect();
        if agency_flow::merges::squad_round(tasks.len(), &statuses) != SquadRound::Judge {
            continue;
        }
        let verifiers: Vec<&Brief> = verifiers.iter().collect();
        crate::agreement::purpose_checked(engine, &verifiers).await?;
        progressed |= judge_squad(engine, &tasks, &verifiers)?;
    }
    Ok(progressed)
}

/// Forms the joint verdict of a squad whose round is judged and carries out what the decision core makes of
/// it ([`SquadVerdict`]).
fn judge_squad(engine: &Engine, tasks: &[&Brief], verifiers: &[&Brief]) -> Result<bool> {
    let mut results = Vec::with_capacity(verifiers.len());
    for verifier in verifiers {
        let out: VerifierOutput = output_of(engine, verifier)?;
        results.push(T5Result {
            verifier_id: verifier.id.to_string(),
            scope: verifier.title.clone(),
            verdict: out.verdict,
            issues: out.issues,
            notes: out.notes,
        });
    }
    let anchor = verifiers[0];
    let workstream = &anchor.workstream;
    // The optional t5_verdict gate lets a human review the joint verdict before it takes effect.
    let desk = engine.gate_desk();
    let gate_enabled = desk.enabled(GateKind::T5Verdict);
    let gate = desk
        .newest_enabled(anchor, GateKind::T5Verdict)?
        .map(|g| g.status);
    let verdict = squad_verdict(workstream, gate_enabled, gate, results)
        .map_err(|e| EngineError::State(e.to_string()))?;
    let record = |line: &str, joint: &JointVerdict| -> Result<()> {
        engine.store.append_event(
            NewEvent::typed(
                anchor.run,
                EventPayload::Verdict(payload::VerdictRecord {
                    summary: line.to_string(),
                    // A plain struct of strings and lists: serialising it cannot fail.
                    joint: serde_json::to_value(joint).unwrap_or_default(),
                }),
            )
            .tier(Tier::T5),
        )?;
        Ok(())
    };
    match verdict {
        SquadVerdict::OpenGate { joint } => {
            let summary = agency_flow::summaries::verdict_summary(workstream, &joint);
            desk.open(anchor, GateKind::T5Verdict, summary.to_value())?;
        }
        SquadVerdict::AwaitGate => return Ok(false),
        SquadVerdict::Overruled { why } => {
            // A human overrules the verifiers: every slice is retried with the reason.
            for task in tasks {
                retry_slice(engine, task, &why)?;
            }
            consume(engine, verifiers, WriteBatch::new())?;
        }
        SquadVerdict::Pass { joint, line } => {
            record(&line, &joint)?;
            let branches = engine.branches(anchor.run);
            let merge = SliceMerge {
                store: engine.store.as_ref(),
                branches: &branches,
            };
            let merged = merge.merge(tasks, verifiers, |task, conflict| {
                // Read again: the lines written before it may have moved it.
                let fresh = engine.store.get_brief(task.id)?;
                let decision = conflict.decision(fresh.attempt, fresh.retry_budget);
                crate::failure::apply(engine, &fresh, conflict.failure, decision, &conflict.why)
            })?;
            consume(engine, verifiers, merged)?;
        }
        SquadVerdict::Partial { joint, line, retries } => {
            record(&line, &joint)?;
            for retry in retries {
                if let Some(task) = tasks.iter().find(|t| t.title == retry.scope) {
                    retry_slice(engine, task, &retry.why)?;
                }
            }
            consume(engine, verifiers, WriteBatch::new())?;
        }
        SquadVerdict::Fail { joint, line, why } => {
            record(&line, &joint)?;
            consume(engine, verifiers, WriteBatch::new())?;
            let task = tasks[0];
            crate::failure::apply(
                engine,
                task,
                Failure::T5Fail,
                decide(Failure::T5Fail, task.attempt, task.retry_budget),
                &why,
            )?;
        }
    }
    Ok(true)
}

/// A failed slice: a corrected brief while the budget lasts, then escalation (T5 partial in the table).
fn retry_slice(engine: &Engine, task: &Brief, why: &str) -> Result<()> {
    let decision = decide(Failure::T5Partial, task.attempt, task.retry_budget);
    crate::failure::apply(engine, task, Failure::T5Partial, decision, why)
}

/// Verifiers whose results were acted on are done: moved in one write, with what `batch` holds of the
/// verdict's outcome.
fn consume(engine: &Engine, verifiers: &[&Brief], mut batch: WriteBatch) -> Result<()> {
    for v in verifiers.iter().filter(|v| v.status == BriefStatus::Verifying) {
        Engine::stage_move(&mut batch, v, BriefStatus::Done, BriefStatusChange::default());
    }
    engine.apply(batch)
}

/// What merging a squad's verified slices needs of the runner: the blackboard (the `MERGED` and
/// `CONFLICT` lines) and the run's branches (the merges, and the pushes through a shared remote).
pub(crate) struct SliceMerge<'a> {
    pub(crate) store: &'a dyn Blackboard,
    pub(crate) branches: &'a RunBranches,
}

impl SliceMerge<'_> {
    /// Merges verified slices into the workstream branch: all at once with one merge commit where git can
    /// ([`MergeChain::merge_together`]: three slices or more whose own commits do not meet, and no
    /// conflict), otherwise one at a time, each with its merge commit, in [`agency_flow::merges::merge_order`];
    /// the branch is moved once for the lot (one `update-ref` per workstream, not per slice). A conflict
    /// is not resolved here: it is logged and handed to `on_conflict` with what it leads to
    /// ([`agency_flow::merges::merge_conflict`]), which retries the slice on top of what is already merged.
    /// Returns the `MERGED` lines not written yet, for [`consume`] to write with the verifiers' moves: a
    /// crash before that leaves the verifiers `verifying`, and the verdict, taken again, finds those slices
    /// already merged. A `MERGED` line is only ever written once its branch has moved, and once per slice:
    /// a slice judged in an earlier round (merged then, while a sibling conflicted) is found already merged
    /// without a second line.
    pub(crate) fn merge(
        &self,
        tasks: &[&Brief],
        verifiers: &[&Brief],
        mut on_conflict: impl FnMut(&Brief, &MergeConflict) -> Result<()>,
    ) -> Result<WriteBatch> {
        // The verifiers of an earlier round are `done`; this round's are still `verifying`.
        let judged_now: HashSet<BriefId> = verifiers
            .iter()
            .filter(|v| v.status == BriefStatus::Verifying)
            .filter_map(|v| v.parent)
            .collect();
        let branches = self.branches;
        let mut merged = WriteBatch::new();
        let mut chains: Vec<MergeChain<'_>> = Vec::new();
        let mut into = Vec::with_capacity(tasks.len());
        for task in tasks {
            into.push(branches.ensure_workstream(&task.workstream)?);
        }
        let into: Vec<&str> = into.iter().map(String::as_str).collect();
        for (into, group) in agency_flow::merges::merge_order(&into) {
            let group: Vec<&Brief> = group.into_iter().map(|slice| tasks[slice]).collect();
            let mut chain = branches.merge_chain(into)?;
            let from: Vec<String> = group.iter().map(|task| branches.brief(task)).collect();
            let from: Vec<&str> = from.iter().map(String::as_str).collect();
            let together = chain.merge_together(&from, |i| slice_merge_message(group[i]))?;
            chains.push(chain);
            if let Some(outcomes) = together {
                for (task, outcome) in group.iter().zip(outcomes) {
                    log_merged(&mut merged, task, into, &outcome, &judged_now);
                }
                continue;
            }
            let at = chains.len() - 1;
            for (task, from) in group.iter().zip(from) {
                let outcome = chains[at].merge(from, &slice_merge_message(task))?;
                let MergeOutcome::Conflict { files } = outcome else {
                    log_merged(&mut merged, task, into, &outcome, &judged_now);
                    continue;
                };
                // The lines so far first, so the log keeps the order things happened in; their branches
                // move first.
                settle(branches, &mut chains)?;
                self.store.apply(std::mem::take(&mut merged))?;
                let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
                let conflict = agency_flow::merges::merge_conflict(into, &files);
                let line = LogLine::new(
                    "normal",
                    Some("CONFLICT"),
                    format!("{}: {}", task.title, conflict.why),
                );
                let mut event = NewEvent::typed(task.run, EventPayload::Log(line));
                event.tier = Some(Tier::T4);
                self.store.append_event(event)?;
                on_conflict(task, &conflict)?;
            }
        }
        settle(branches, &mut chains)?;
        Ok(merged)
    }
}

/// The merge commit's message for one slice (a line of it when slices merge together).
fn slice_merge_message(task: &Brief) -> String {
    format!("merge {} (agency brief {})", task.title, task.id.short())
}

/// A `MERGED` line for a slice merged now, into `merged`; a slice merged in an earlier round of its squad
/// (up to date, and not judged in this one) is not logged again.
fn log_merged(
    merged: &mut WriteBatch,
    task: &Brief,
    into: &str,
    outcome: &MergeOutcome,
    judged_now: &HashSet<BriefId>,
) {
    let up_to_date = *outcome == MergeOutcome::AlreadyUpToDate;
    if !agency_flow::merges::announce_merge(up_to_date, judged_now.contains(&task.id)) {
        return;
    }
    merged.append_event(
        NewEvent::typed(
            task.run,
            EventPayload::Log(LogLine::new(
                "verbose",
                Some("MERGED"),
                format!("{} merged into {into}", task.title),
            )),
        )
        .brief(task.id)
        .tier(Tier::T4),
    );
}

/// Moves every chain's branch to its newest merge (and pushes it, when the run is shared through a remote).
fn settle(branches: &RunBranches, chains: &mut [MergeChain<'_>]) -> Result<()> {
    for chain in chains {
        chain.settle()?;
        branches.push(&[chain.branch()])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The merge executor on its own: a repository, a blackboard and the run's branches, no `Engine`,
    //! no runtime.

    use agency_core::event::EventPayload;
    use agency_core::{Brief, BriefId, BriefStatus, RunId, Tier};
    use agency_store::conformance::sample_brief;
    use agency_store::{Blackboard, NewRun, SqliteBlackboard};

    use super::SliceMerge;
    use crate::branches::RunBranches;
    use crate::branches::testing::{git, repo_at, run_branches};

    /// A slice of workstream `ws-a` titled `title`, committed on its own branch with `files` written.
    fn slice(
        store: &dyn Blackboard,
        branches: &RunBranches,
        run: RunId,
        title: &str,
        files: &[(&str, &str)],
    ) -> Brief {
        let brief = Brief {
            workstream: "ws-a".into(),
            ..sample_brief(run, title)
        };
        store.insert_brief(&brief).unwrap();
        let workstream = branches.workstream("ws-a");
        let (_, worktree) = branches.prepare_worktree(&brief, &workstream).unwrap();
        for (name, text) in files {
            std::fs::write(worktree.join(name), text).unwrap();
        }
        assert!(branches.commit_brief(&brief).unwrap());
        brief
    }

    /// The verifier that judged `task` in this round (`verifying`).
    fn verifier_of(task: &Brief) -> Brief {
        Brief {
            id: BriefId::new(),
            tier: Tier::T5,
            parent: Some(task.id),
            status: BriefStatus::Verifying,
            ..task.clone()
        }
    }

    /// The log lines of the run, as `TAG message`.
    fn lines(store: &dyn Blackboard, run: RunId) -> Vec<String> {
        store
            .events_after(Some(run), 0, 1000)
            .unwrap()
            .iter()
            .filter_map(|e| match e.typed() {
                Ok(EventPayload::Log(line)) => {
                    Some(format!("{} {}", line.tag.unwrap_or_default(), line.message))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_conflicting_slice_is_handed_back_and_the_slices_around_it_merge() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("repo");
        let (repo, base) = repo_at(&work);
        let store = SqliteBlackboard::open_in_memory().unwrap();
        let run = store
            .create_run(NewRun::new("goal", work.display().to_string()))
            .unwrap();
        let branches = run_branches(&repo, run.id, &dir.path().join("worktrees"), &base);
        let workstream = branches.ensure_workstream("ws-a").unwrap();
        let tasks = [
            slice(&store, &branches, run.id, "first", &[("notes.txt", "a\nfirst\n")]),
            slice(
                &store,
                &branches,
                run.id,
                "second",
                &[("notes.txt", "a\nsecond\n")],
            ),
            slice(&store, &branches, run.id, "third", &[("third.txt", "third\n")]),
        ];
        let verifiers: Vec<Brief> = tasks.iter().map(verifier_of).collect();
        let tasks: Vec<&Brief> = tasks.iter().collect();
        let verifiers: Vec<&Brief> = verifiers.iter().collect();

        let merge = SliceMerge {
            store: &store,
            branches: &branches,
        };
        let mut handed_back = Vec::new();
        let rest = merge
            .merge(&tasks, &verifiers, |task, conflict| {
                // The lines before it are written by now, and the CONFLICT line with them.
                assert_eq!(lines(&store, run.id).len(), 2);
                handed_back.push((task.title.clone(), conflict.why.clone()));
                Ok(())
            })
            .unwrap();

        assert_eq!(
            handed_back,
            [(
                "second".to_string(),
                format!(
                    "merging into {workstream} conflicts in notes.txt; redo the change on top of the current \
                     workstream"
                )
            )]
        );
        // The slice after the conflict merged too; its line rides with the verifiers' moves.
        assert_eq!(rest.changes().len(), 1);
        store.apply(rest).unwrap();
        assert_eq!(
            lines(&store, run.id),
            [
                format!("MERGED first merged into {workstream}"),
                format!("CONFLICT second: {}", handed_back[0].1),
                format!("MERGED third merged into {workstream}"),
            ]
        );
        assert_eq!(
            git(&work, &["show", &format!("{workstream}:notes.txt")]),
            "a\nfirst"
        );
        assert_eq!(git(&work, &["show", &format!("{workstream}:third.txt")]), "third");
    }
}

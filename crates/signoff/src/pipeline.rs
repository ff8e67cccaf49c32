//! The sign-off itself: checkout, mechanical checks, verify, judge, outcome, in that order, each step
//! recorded when a [`Recording`] is given.

use std::path::Path;
use std::time::Duration;

use agency_core::contract::GoalContract;
use agency_exec::runtime::Evidence;
use agency_exec::{ChangeKind, DiffHead, FileChange, Repo, Sandboxing};
use agency_llm::CancelToken;
use agency_store::ArtifactId;

use crate::SignoffError;
use crate::checkout::{self, CheckoutPlace, CleanCheckout};
use crate::evidence::check_evidence;
use crate::judge::{Judge, JudgeInput, run_judge};
use crate::outcome::{Audit, Outcome, ProtectedEdit, RejectedBy, SignoffReport, with_audit};
use crate::protected::{ProtectedPaths, Protection, Rule};
use crate::record::Recording;
use crate::verdict::JudgeVerdict;
use crate::verify_command::{VerifyResult, run_verify, verify_argv};

/// One sign-off to carry out.
#[derive(Debug, Clone, Copy)]
pub struct SignoffRequest<'a> {
    /// The repository (any of its work trees).
    pub repo: &'a Repo,
    /// The commit under review (any revision git understands).
    pub commit: &'a str,
    /// The commit the goal started from: protected edits are counted from here.
    pub base: &'a str,
    /// The goal id or brief title, for records and the judge.
    pub subject: &'a str,
    /// What the agent was asked beyond the contract, for the judge (in a run: the goal anchor and the brief).
    pub asked: Option<&'a str>,
    /// What done means, as the plan says now.
    pub contract: &'a GoalContract,
    /// The contract as agreed when the goal was set (the plan file at the commit that added it), when known.
    /// It is the one checked against: a contract softened since (a new `may_edit`, an easier `verify`) counts
    /// for nothing and is itself a rejection.
    pub agreed: Option<&'a GoalContract>,
    /// The agent's claims, free text, for the judge.
    pub claims: &'a [String],
    /// Files (and quoted lines) the agent offers as evidence.
    pub evidence: &'a [Evidence],
    /// The verify command is killed after this long.
    pub verify_timeout: Duration,
    /// Stage 1 as the caller already ran it on this very commit in a clean checkout with this crate's
    /// [`run_verify`] (the runner does, when an implementer commits, to fail fast): reused, and recorded,
    /// instead of running the tests a second time. It must be the result of the contract's own command.
    pub verified: Option<&'a Verified>,
    /// The changes and patch from base to commit as the caller already had them (the runner diffs a slice
    /// when its implementer commits): used only when they are of the very ids this sign-off resolves, so
    /// git is not asked the same again; otherwise the sign-off diffs itself.
    pub diffed: Option<&'a Diffed>,
    /// Where the clean checkout is made.
    pub checkouts: &'a CheckoutPlace,
    /// The OS sandbox the verify command and the judge's processes run in (they run the agent's code).
    pub sandbox: &'a Sandboxing,
}

/// A diff from base to commit already taken (see [`SignoffRequest::diffed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diffed {
    /// The full id of the base it was taken from.
    pub base: String,
    /// The full id of the commit it was taken to.
    pub commit: String,
    /// The changed paths, renames detected.
    pub changes: Vec<FileChange>,
    /// The start of the patch the judge is shown, and the whole patch's size.
    pub head: DiffHead,
}

impl Diffed {
    /// The diff from `base` to `commit` (full ids) with `patch` the whole patch: only the judge's share of it
    /// is kept.
    pub fn new(base: String, commit: String, changes: Vec<FileChange>, patch: &[u8]) -> Self {
        let head = &patch[..patch.len().min(crate::judge::MAX_DIFF_BYTES)];
        Diffed {
            base,
            commit,
            changes,
            head: DiffHead {
                text: String::from_utf8_lossy(head).into_owned(),
                total_bytes: patch.len() as u64,
            },
        }
    }

    /// `base` to `commit`, from git: the changes and the judge's share of the patch, in one process.
    pub fn of(repo: &Repo, base: &str, commit: &str) -> Result<Self, SignoffError> {
        let diff = repo
            .diff_with_changes(base, commit, crate::judge::MAX_DIFF_BYTES)
            .map_err(|e| SignoffError::Git {
                what: "diffing the goal's base and the commit under review".into(),
                source: e,
            })?;
        Ok(Diffed {
            base: base.to_string(),
            commit: commit.to_string(),
            head: diff.head(),
            changes: diff.changes,
        })
    }
}

/// Stage 1 already run on the commit under review (see [`SignoffRequest::verified`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// What the verify command did.
    pub result: VerifyResult,
    /// Where it is already recorded, if it is: then it is not recorded again.
    pub artifact: Option<ArtifactId>,
}

/// A sign-off after its first half ([`check`]): the clean checkout, and the report with stage 1 and the
/// mechanical checks filled in. [`judge_stage`] finishes it.
#[derive(Debug)]
pub struct Checked {
    report: SignoffReport,
    checkout: CleanCheckout,
    /// The start of the patch from base to commit, for the judge; empty when the checks already rejected.
    diff: DiffHead,
}

impl Checked {
    /// The report so far.
    pub fn report(&self) -> &SignoffReport {
        &self.report
    }
}

/// Runs the two-stage sign-off (see the crate docs). An `Err` means it could not be carried out; a
/// rejection or an inconclusive judge is an `Ok` report.
pub async fn sign_off(
    request: &SignoffRequest<'_>,
    judge: &Judge<'_>,
    recording: Option<&Recording<'_>>,
    cancel: &CancelToken,
) -> Result<SignoffReport, SignoffError> {
    let checked = check(request, recording)?;
    judge_stage(checked, request, judge, recording, cancel).await
}

/// The first half of [`sign_off`], all of it blocking (git, the verify command): the clean checkout, the
/// mechanical checks and stage 1. A caller on an async runtime runs it on a blocking thread, then
/// [`judge_stage`] with the same request.
pub fn check(
    request: &SignoffRequest<'_>,
    recording: Option<&Recording<'_>>,
) -> Result<Checked, SignoffError> {
    let contract = request.agreed.unwrap_or(request.contract);
    if contract.done_when.trim().is_empty() {
        return Err(SignoffError::Input(format!(
            "{}: done_when is empty; a contract needs an observable condition to be signed off against",
            request.subject
        )));
    }
    let argv = contract.verify.as_deref().map(verify_argv).transpose()?;
    let (base, checkout) = base_and_checkout(request)?;
    let commit = checkout.commit().to_string();
    if let Some(rec) = recording {
        rec.started(request.subject, &commit, &base)?;
    }
    let diffed = match request.diffed {
        Some(done) if done.base == base && done.commit == commit => done.clone(),
        _ => Diffed::of(request.repo, &base, &commit)?,
    };
    let mut report = SignoffReport {
        subject: request.subject.to_string(),
        commit: commit.clone(),
        base: base.clone(),
        outcome: Outcome::Accepted,
        verify: None,
        evidence_problems: check_evidence(checkout.path(), request.evidence),
        contract_changes: request
            .agreed
            .map(|agreed| contract_changes(agreed, request.contract))
            .unwrap_or_default(),
        protected_edits: protected_edits(
            request.repo,
            &base,
            &commit,
            &diffed.changes,
            contract,
            argv.as_deref(),
            checkout.path(),
        )?,
        judge: None,
        judge_answer: None,
        audit: None,
        judge_signal: None,
        verify_artifact: None,
        transcript_artifact: None,
    };
    if let Some(argv) = &argv {
        let command = contract.verify.as_deref().unwrap_or_default();
        let (result, recorded) = match request.verified {
            Some(done) if done.result.command == command => (done.result.clone(), done.artifact),
            Some(done) => {
                return Err(SignoffError::Input(format!(
                    "{}: the verify result given was of `{}`, the contract's command is `{command}`",
                    request.subject, done.result.command
                )));
            }
            None => (
                run_verify(
                    command,
                    argv,
                    checkout.path(),
                    request.verify_timeout,
                    request.sandbox,
                )?,
                None,
            ),
        };
        report.verify_artifact = match (recorded, recording) {
            (Some(artifact), _) => Some(artifact),
            (None, Some(rec)) => Some(rec.verify(request.subject, &commit, &result)?),
            (None, None) => None,
        };
        report.verify = Some(result);
    }
    let mut diff = diffed.head;
    if let Some(rejection) = mechanical_rejection(&report) {
        report.outcome = rejection;
        // The judge is not asked: nothing of the patch is kept.
        diff = DiffHead {
            text: String::new(),
            total_bytes: 0,
        };
    }
    Ok(Checked {
        report,
        checkout,
        diff,
    })
}

/// The base's full id and a clean checkout of the commit, both resolved by one git process (a sign-off
/// per slice); when git cannot resolve them, each is resolved alone so the error says which.
fn base_and_checkout(request: &SignoffRequest<'_>) -> Result<(String, CleanCheckout), SignoffError> {
    if let Ok(ids) = request.repo.rev_parse_all(&[request.base, request.commit])
        && let Ok([base, commit]) = <[String; 2]>::try_from(ids)
    {
        return Ok((
            base,
            CleanCheckout::of_commit(request.repo, commit, request.checkouts)?,
        ));
    }
    let base = request
        .repo
        .rev_parse(request.base)
        .map_err(|e| SignoffError::Git {
            what: format!("resolving the goal's base `{}`", request.base),
            source: e,
        })?;
    Ok((
        base,
        CleanCheckout::create(request.repo, request.commit, request.checkouts)?,
    ))
}

/// The second half of [`sign_off`]: unless [`check`] already rejected, the judge; then the outcome is
/// recorded.
pub async fn judge_stage(
    checked: Checked,
    request: &SignoffRequest<'_>,
    judge: &Judge<'_>,
    recording: Option<&Recording<'_>>,
    cancel: &CancelToken,
) -> Result<SignoffReport, SignoffError> {
    judge_and_audit_stage(checked, request, judge, None, recording, cancel).await
}

/// [`judge_stage`] with an auditor: unless [`check`] already rejected, the judge and, when `auditor` is
/// given, the auditor review the same clean checkout side by side. The auditor is not shown the claims or
/// the evidence ([`JudgeInput::audit`]); the outcome counts a rejection by either ([`with_audit`]), and
/// the auditor's verdict, and whether it agrees with the judge's, is recorded as `signoff_audit`.
pub async fn judge_and_audit_stage(
    checked: Checked,
    request: &SignoffRequest<'_>,
    judge: &Judge<'_>,
    auditor: Option<&Judge<'_>>,
    recording: Option<&Recording<'_>>,
    cancel: &CancelToken,
) -> Result<SignoffReport, SignoffError> {
    let Checked {
        mut report,
        checkout,
        diff,
    } = checked;
    let contract = request.agreed.unwrap_or(request.contract);
    let (base, commit) = (report.base.clone(), report.commit.clone());
    // Written with the outcome, in one transaction.
    let mut transcript = None;
    let mut audit_transcript = None;
    if !matches!(report.outcome, Outcome::Rejected { .. }) {
        let input = JudgeInput {
            subject: request.subject,
            asked: request.asked,
            contract,
            claims: request.claims,
            evidence: request.evidence,
            verify: report.verify.as_ref(),
            commit: &commit,
            base: &base,
            diff: &diff.text,
            diff_bytes: diff.total_bytes,
            audit: false,
        };
        let blind = JudgeInput {
            claims: &[],
            evidence: &[],
            audit: true,
            ..input
        };
        let (run, brief) = recording.map_or((agency_core::RunId::new(), None), |r| (r.run, r.brief));
        let judging = run_judge(
            judge,
            &input,
            checkout.path(),
            request.sandbox,
            run,
            brief,
            cancel,
        );
        let auditing = async {
            match auditor {
                Some(auditor) => Some(
                    run_judge(
                        auditor,
                        &blind,
                        checkout.path(),
                        request.sandbox,
                        run,
                        brief,
                        cancel,
                    )
                    .await,
                ),
                None => None,
            }
        };
        let (judged, audited) = tokio::join!(judging, auditing);
        // The provider's trouble is no verdict on the work: nothing is recorded (no inconclusive outcome
        // for a retry to count), and the caller decides whether to wait for it (a run pauses).
        let unavailable = match (
            &judged.unavailable,
            audited.as_ref().and_then(|a| a.unavailable.as_ref()),
        ) {
            (Some(error), _) => Some(("judge", error.clone())),
            (None, Some(error)) => Some(("auditor", error.clone())),
            (None, None) => None,
        };
        if let Some((who, error)) = unavailable {
            return Err(SignoffError::ProviderUnavailable { who, error });
        }
        if let Some(rec) = recording {
            let artifact = rec.transcript(request.subject, &judged.transcript);
            report.transcript_artifact = Some(artifact.id);
            transcript = Some(artifact);
        }
        report.outcome = match &judged.verdict {
            Ok(JudgeVerdict::Accept) => Outcome::Accepted,
            Ok(JudgeVerdict::Reject { missing }) => Outcome::Rejected {
                by: RejectedBy::Judge,
                missing: missing.clone(),
            },
            Err(reason) => Outcome::Inconclusive {
                reason: reason.clone(),
            },
        };
        if let Some(audited) = audited {
            report.outcome = with_audit(report.outcome, &audited.verdict);
            let mut audit = Audit {
                verdict: audited.verdict,
                answer: audited.answer,
                transcript_artifact: None,
                model: auditor.and_then(|a| a.run_as).and_then(|r| r.model.clone()),
            };
            if let Some(rec) = recording {
                let artifact = rec.audit_transcript(request.subject, &audited.transcript);
                audit.transcript_artifact = Some(artifact.id);
                audit_transcript = Some(artifact);
            }
            report.audit = Some(audit);
            report.judge_signal = judged.signal.clone().or(audited.signal);
        }
        if report.judge_signal.is_none() {
            report.judge_signal = judged.signal;
        }
        report.judge = Some(judged.verdict);
        report.judge_answer = judged.answer;
    }
    if let Some(rec) = recording {
        rec.outcome_audited(&report, transcript, audit_transcript)?;
    }
    Ok(report)
}

/// [`sign_off`] on a fresh single-threaded tokio runtime, for callers with none (the CLI).
pub fn sign_off_blocking(
    request: &SignoffRequest<'_>,
    judge: &Judge<'_>,
    recording: Option<&Recording<'_>>,
) -> Result<SignoffReport, SignoffError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| SignoffError::Io {
            what: "starting the async runtime for the judge".into(),
            source: e,
        })?;
    let cancel = CancelToken::new();
    runtime.block_on(sign_off(request, judge, recording, &cancel))
}

/// Stage 1 and the mechanical checks: the rejection they make on their own, if any. Verify's tail comes
/// first, so the agent sees the failing output before the rest.
fn mechanical_rejection(report: &SignoffReport) -> Option<Outcome> {
    let mut missing = Vec::new();
    let mut by = RejectedBy::Checks;
    if let Some(verify) = report.verify.as_ref().filter(|v| !v.passed) {
        by = RejectedBy::Verify;
        missing.push(format!(
            "verify `{}` failed in a clean checkout of {} ({}); uncommitted changes do not count. Output tail:\n{}",
            verify.command,
            short(&report.commit),
            verify.describe(),
            verify.tail.trim_end()
        ));
    }
    missing.extend(report.contract_changes.iter().cloned());
    missing.extend(report.evidence_problems.iter().cloned());
    missing.extend(report.protected_edits.iter().map(ProtectedEdit::describe));
    (!missing.is_empty()).then_some(Outcome::Rejected { by, missing })
}

/// How the plan's contract differs from the agreed one, one line per changed field.
pub fn contract_changes(agreed: &GoalContract, now: &GoalContract) -> Vec<String> {
    let mut changes = Vec::new();
    let mut field = |name: &str, was: String, is: String| {
        if was != is {
            changes.push(format!(
                "the contract's {name} changed since the goal was agreed (was {was}, now {is}); the agreed one is \
                 checked, and a changed contract needs a new goal"
            ));
        }
    };
    field(
        "done_when",
        format!("{:?}", agreed.done_when),
        format!("{:?}", now.done_when),
    );
    field(
        "verify",
        format!("{:?}", agreed.verify),
        format!("{:?}", now.verify),
    );
    field(
        "failure_modes",
        format!("{:?}", agreed.failure_modes),
        format!("{:?}", now.failure_modes),
    );
    field(
        "may_edit",
        format!("{:?}", agreed.may_edit),
        format!("{:?}", now.may_edit),
    );
    changes
}

fn short(commit: &str) -> &str {
    commit.get(..8).unwrap_or(commit)
}

/// The protected paths among `changes` (between `base` and `commit`) that the contract's `may_edit` does
/// not authorise.
pub fn protected_edits(
    repo: &Repo,
    base: &str,
    commit: &str,
    changes: &[FileChange],
    contract: &GoalContract,
    verify_argv: Option<&[String]>,
    checkout: &Path,
) -> Result<Vec<ProtectedEdit>, SignoffError> {
    let exists =
        |path: &str| checkout.join(path).exists() || checkout::exists_at(repo, base, path).unwrap_or(false);
    // A verify script's text at the base and as committed: either may start a tool whose files count.
    let read = |path: &str| {
        let at_base = checkout::file_at(repo, base, path).ok().flatten();
        let committed = std::fs::read_to_string(checkout.join(path)).ok();
        at_base.into_iter().chain(committed).collect()
    };
    let rules = ProtectedPaths::for_verify(verify_argv.unwrap_or_default(), &exists, &read);
    let authorised = |path: &str| contract.may_edit.iter().any(|p| crate::glob::matches(p, path));
    let mut edits = Vec::new();
    for change in changes {
        // No `may_edit` authorises a link out of the repository: it reads or overwrites what is not the
        // project's (a key in $HOME, the runner's own files) when anything follows it.
        if change.kind != ChangeKind::Deleted
            && let Some(target) = crate::links::escaping_link(checkout, &change.path.to_string_lossy())
        {
            edits.push(ProtectedEdit {
                path: change.path.to_string_lossy().into_owned(),
                change: "added",
                protection: Protection::EscapingSymlink,
                target: Some(target),
            });
            continue;
        }
        let paths = [Some(&change.path), change.old_path.as_ref()];
        for path in paths.into_iter().flatten() {
            let path = path.to_string_lossy().into_owned();
            if authorised(&path) {
                continue;
            }
            let protection = match rules.rule(&path) {
                None => continue,
                Some(Rule::Whole(protection)) => protection,
                Some(Rule::Sections(sections)) => {
                    let old = checkout::file_at(repo, base, &path)?;
                    let new = checkout::file_at(repo, commit, &path)?;
                    if !sections.changed(old.as_deref(), new.as_deref()) {
                        continue;
                    }
                    Protection::RunnerConfig
                }
            };
            let change_word = match (change.kind, change.old_path.as_ref()) {
                (ChangeKind::Renamed, Some(old)) if old.to_string_lossy() == path => "renamed away",
                (ChangeKind::Added, _) | (ChangeKind::Copied, _) | (ChangeKind::Renamed, _) => "added",
                (ChangeKind::Deleted, _) => "deleted",
                _ => "modified",
            };
            edits.push(ProtectedEdit {
                path,
                change: change_word,
                protection,
                target: None,
            });
        }
    }
    Ok(edits)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use agency_exec::GitOptions;
    use agency_exec::runtime::Evidence;

    use super::*;

    fn request<'a>(
        repo: &'a Repo,
        base: &'a str,
        commit: &'a str,
        contract: &'a GoalContract,
    ) -> SignoffRequest<'a> {
        SignoffRequest {
            repo,
            commit,
            base,
            subject: "goal",
            asked: None,
            contract,
            agreed: None,
            claims: &[],
            evidence: &[],
            verify_timeout: Duration::from_secs(10),
            verified: None,
            diffed: None,
            checkouts: &CheckoutPlace::Temporary,
            sandbox: &Sandboxing::Off,
        }
    }

    #[test]
    fn base_and_commit_resolve_together_and_a_bad_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repo::init(dir.path(), "main", GitOptions::default()).unwrap();
        std::fs::write(dir.path().join("README"), "x\n").unwrap();
        repo.commit_all("base").unwrap();
        let contract = GoalContract::default();
        let head = repo.rev_parse("main").unwrap();
        let (base, checkout) = base_and_checkout(&request(&repo, "main", "HEAD", &contract)).unwrap();
        assert_eq!((base.as_str(), checkout.commit()), (head.as_str(), head.as_str()));
        let err = base_and_checkout(&request(&repo, "main", "no-such", &contract))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("resolving the commit under review `no-such`"),
            "{err}"
        );
        let err = base_and_checkout(&request(&repo, "nope", "main", &contract))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("resolving the goal's base `nope`"), "{err}");
    }

    #[test]
    fn a_diff_already_taken_is_used_only_for_the_ids_it_was_taken_of() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repo::init(dir.path(), "main", GitOptions::default()).unwrap();
        std::fs::write(dir.path().join("README"), "x\n").unwrap();
        repo.commit_all("base").unwrap();
        let base = repo.rev_parse("main").unwrap();
        std::fs::write(dir.path().join("README"), "y\n").unwrap();
        repo.commit_all("work").unwrap();
        let commit = repo.rev_parse("HEAD").unwrap();
        let contract = GoalContract {
            done_when: "README says y".into(),
            ..GoalContract::default()
        };
        let evidence = [Evidence {
            path: "README".into(),
            quote: None,
        }];
        // A diff that claims a test file changed: a sign-off that believes it rejects the slice.
        let fake = |base: &str| {
            Diffed::new(
                base.to_string(),
                commit.clone(),
                vec![FileChange {
                    kind: ChangeKind::Modified,
                    path: "tests/it.rs".into(),
                    old_path: None,
                }],
                b"not git's patch",
            )
        };
        let taken = fake(&base);
        let mut asked = request(&repo, &base, "main", &contract);
        asked.evidence = &evidence;
        asked.diffed = Some(&taken);
        let checked = check(&asked, None).unwrap();
        let edits = &checked.report().protected_edits;
        assert_eq!(edits.len(), 1, "{edits:?}");
        assert_eq!(edits[0].path, "tests/it.rs");

        // Taken of another base (the workstream moved since): git is asked, and its answer judged.
        let stale = fake(&commit);
        asked.diffed = Some(&stale);
        let checked = check(&asked, None).unwrap();
        assert!(checked.report().protected_edits.is_empty());
        assert!(matches!(checked.report().outcome, Outcome::Accepted));
        let from_git = repo
            .diff_head(&base, &commit, crate::judge::MAX_DIFF_BYTES)
            .unwrap();
        assert_eq!(checked.diff, from_git);

        // The same, given as git gives it, is judged alike.
        let diff = repo.diff_with_changes(&base, &commit, usize::MAX).unwrap();
        let given = Diffed::new(base.clone(), commit.clone(), diff.changes, &diff.patch);
        asked.diffed = Some(&given);
        let reused = check(&asked, None).unwrap();
        assert_eq!(reused.report(), checked.report());
        assert_eq!(reused.diff, from_git);
    }
}

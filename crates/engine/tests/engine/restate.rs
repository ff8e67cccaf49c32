//! The agreement checks issue 28 left unbuilt (docs/protocols.md, "Agreement at each handoff"): an
//! implementer's own restatement at T3→T4, held against its squad lead's committed draft once its teachback
//! is decided; L2 at the run's acceptance, the integration branch's changes against the plan's declared
//! scope; and the handing-over tier confirming on an external runtime. The checks' decisions (what agrees,
//! what is significant and asked, what an answer does) are `crates/flow/tests/restate.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agency_core::Tier;
use agency_core::event::payload::{AGREEMENT_ASSUMED, AgreementChecked};
use agency_core::event::{EventKind, EventPayload};
use agency_core::gate::GateKind;
use agency_exec::runtime::{Access, AgentOutcome, AgentTask, Ending, RunnerLink, Runtime, RuntimeError};
use agency_llm::{BoxFuture, CancelToken};
use agency_store::RunStatus;

use crate::support::{GOAL, Project, approve, config, pending, wait_for, wide_plan};

const SCRIPT: &str = include_str!("../scripts/restate.yaml");

fn agreements(project: &Project, run: agency_core::RunId, handoff: &str) -> Vec<AgreementChecked> {
    project
        .events_of(run, EventKind::Agreement)
        .iter()
        .filter_map(|e| match e.typed() {
            Ok(EventPayload::Agreement(a)) if a.handoff == handoff => Some(a),
            Ok(EventPayload::Agreement(_)) => None,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn anomalies(project: &Project, run: agency_core::RunId) -> Vec<String> {
    project
        .events_of(run, EventKind::Anomaly)
        .iter()
        .filter_map(|e| match e.typed() {
            Ok(EventPayload::Anomaly(a)) if a.source == "agreement" => Some(a.message),
            _ => None,
        })
        .collect()
}

#[test]
fn an_implementer_restating_a_file_its_squad_never_declared_is_corrected_and_on_the_verdict_gate() {
    let project = Project::new();
    let mut team = config();
    team.visibility.inspection_gates.t5_verdict = true;
    let (run, driving) = project.start_in_background(SCRIPT, team, false);
    let store = project.store.clone();
    approve(
        store.as_ref(),
        wait_for("the t1_plan gate", pending(&store, run.id, GateKind::T1Plan)).id,
    );
    let verdict = wait_for(
        "the t5_verdict gate",
        pending(&store, run.id, GateKind::T5Verdict),
    );
    let listed: Vec<&str> = verdict.summary["anomalies"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(
        listed,
        [
            "ws-arith: L1 mismatch at t3→t4 (fix-add): mul.sh is outside what was handed over — t3 arithmetic \
          says: only add.sh was handed over; mul.sh is another squad's (agreement)"
        ],
        "{}",
        verdict.summary
    );
    approve(store.as_ref(), verdict.id);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));

    let task = agreements(&project, run.id, "t3→t4");
    let answers: Vec<(&str, &str, bool)> = task
        .iter()
        .map(|a| {
            (
                a.outcome.as_str(),
                a.confirmation.as_deref().unwrap_or(""),
                a.significant,
            )
        })
        .collect();
    assert_eq!(
        answers,
        [("mismatch", "asking", true), ("mismatch", "corrected", true)]
    );
    assert_eq!(task[0].level, "L1");
    assert_eq!(task[0].differences, ["mul.sh is outside what was handed over"]);
    assert!(
        task[0]
            .restated
            .starts_with("a fix for add.sh so that it adds [files: add.sh, mul.sh]"),
        "{:?}",
        task[0]
    );
    // The slice itself stayed within the draft: the T4→T5 check agrees.
    let slice = agreements(&project, run.id, "t4→t5");
    assert_eq!(slice.len(), 1);
    assert_eq!(slice[0].outcome, "agreed");
}

/// The plan declares add.sh and mul.sh for the run; the run achieves add.sh only. T1's acceptance restates
/// what the run achieved (the integration branch's changed files), and half of the declared scope is not
/// in it: an L2 mismatch at the acceptance, recorded on the accept brief with an anomaly (there is no gate
/// after an accepted run; the live log renders a mismatch record at the normal level, and `agency inspect`
/// shows the accept brief's events).
#[test]
fn an_acceptance_that_achieved_half_the_plans_scope_is_an_l2_anomaly() {
    let project = Project::new();
    let script = SCRIPT
        .replace(
            "                  files: [add.sh]\n              parallelism",
            "                  files: [add.sh, mul.sh]\n              parallelism",
        )
        .replace(
            "              files: [add.sh]\n              understanding",
            "              files: [add.sh, mul.sh]\n              understanding",
        );
    assert_ne!(script, SCRIPT);
    let (run, driving) = project.start_in_background(&script, config(), true);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    // Every earlier handoff agrees: the implementer named files its squad declared, and what each slice
    // achieved is within the workstream's purpose.
    for handoff in ["t3→t4", "t4→t5", "t5→t1"] {
        let checked = agreements(&project, run.id, handoff);
        assert_eq!(checked.len(), 1, "{handoff}: {checked:?}");
        assert_eq!(checked[0].outcome, "agreed", "{handoff}: {checked:?}");
    }
    let accept = agreements(&project, run.id, "accept");
    assert_eq!(accept.len(), 1, "{accept:?}");
    assert_eq!(
        (
            accept[0].level.as_str(),
            accept[0].outcome.as_str(),
            accept[0].significant
        ),
        ("L2", "mismatch", true)
    );
    assert_eq!(accept[0].differences, ["mul.sh was declared and not achieved"]);
    assert!(
        accept[0]
            .restated
            .starts_with("the run changes add.sh [every check passes]"),
        "{:?}",
        accept[0]
    );
    assert_eq!(
        anomalies(&project, run.id),
        [
            "L2 mismatch at the run's acceptance: mul.sh was declared and not achieved — what the plan \
          declared over its workstreams"
        ]
    );
}

/// The squad lead's tier on an external runtime (scripted: the built-in agent on the script behind another
/// name, as a command or Claude Code agent would be). It counts the agreement questions it is given and
/// checks each is asked read-only, for a report; with `stuck`, it never answers them.
#[derive(Debug)]
struct ExternalSquad {
    inner: Arc<dyn Runtime>,
    questions: Arc<AtomicUsize>,
    stuck: bool,
}

impl Runtime for ExternalSquad {
    fn name(&self) -> &'static str {
        "external-squad"
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async move {
            if task.meta.role.as_deref() == Some("agreement") {
                self.questions.fetch_add(1, Ordering::SeqCst);
                assert_eq!(task.access, Access::ReadOnly);
                assert_eq!(task.ending, Ending::Report);
                assert!(
                    task.prompt.contains("mul.sh is outside what was handed over"),
                    "{}",
                    task.prompt
                );
                if self.stuck {
                    std::future::pending::<()>().await;
                }
            }
            self.inner.run(task, link, cancel).await
        })
    }
}

/// The restate script with the squad lead's answer replaced by `answer` (YAML of one reply), run with the
/// T3 tier on [`ExternalSquad`]; returns the t3→t4 records, the agreement anomalies and how often the squad
/// lead's runtime was asked.
fn on_external_runtime(
    answer: &str,
    stuck: bool,
    timeout: Duration,
) -> (Vec<AgreementChecked>, Vec<String>, usize) {
    let cut = SCRIPT.find("  # -- The squad lead's answer").expect("the marker");
    let script = format!("{}{answer}", &SCRIPT[..cut]);
    let project = Project::new();
    let questions = Arc::new(AtomicUsize::new(0));
    let counted = questions.clone();
    let engine = project.runner_with(
        &script,
        config(),
        true,
        "test-runner",
        move |tier, builtin| {
            if tier == Tier::T3 {
                Arc::new(ExternalSquad {
                    inner: builtin,
                    questions: counted.clone(),
                    stuck,
                })
            } else {
                builtin
            }
        },
        |options| options.limits.timeout = timeout,
    );
    let run = engine.start(GOAL).unwrap();
    let outcome = crate::support::Background::drive(engine, run.id).join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    (
        agreements(&project, run.id, "t3→t4"),
        anomalies(&project, run.id),
        questions.load(Ordering::SeqCst),
    )
}

/// A squad lead whose agents run on an external runtime is asked there: a read-only agent of that runtime
/// answers in its report's output, and its confirmation clears the mismatch.
#[test]
fn a_squad_lead_on_an_external_runtime_confirms_through_its_agent() {
    let answer = "  - role: agreement\n    brief: ws-arith/t3/arithmetic\n    reply:\n      tool_calls:\n        \
                  - name: report_result\n          input: { status: done, summary: \"fine\", output: { fine: true, \
                  reason: \"mul.sh is read for its operator, not changed\" } }\n";
    let (task, anomalies, questions) = on_external_runtime(answer, false, Duration::from_secs(30));
    assert_eq!(questions, 1);
    let answers: Vec<(&str, bool, &str)> = task
        .iter()
        .map(|a| {
            (
                a.confirmation.as_deref().unwrap_or(""),
                a.significant,
                a.reason.as_deref().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        answers,
        [
            ("asking", true, ""),
            ("confirmed", false, "mul.sh is read for its operator, not changed")
        ]
    );
    assert!(anomalies.is_empty(), "{anomalies:?}");
}

/// The same agent answering in prose (no report output) gives no answer: the seed's fallback, and the
/// mismatch stands.
#[test]
fn a_squad_lead_on_an_external_runtime_answering_in_prose_is_the_fallback() {
    let answer = "  - role: agreement\n    brief: ws-arith/t3/arithmetic\n    reply: { text: \"Sure, that looks fine to me.\" }\n";
    let (task, anomalies, questions) = on_external_runtime(answer, false, Duration::from_secs(30));
    assert_eq!(questions, 1);
    let last = task.last().expect("an answer's record");
    assert_eq!(last.confirmation.as_deref(), Some("unavailable"));
    assert!(last.significant);
    let reason = last.reason.as_deref().unwrap_or("");
    assert!(
        reason.starts_with(AGREEMENT_ASSUMED) && reason.contains("t3's agent on external-squad"),
        "{reason}"
    );
    assert_eq!(anomalies.len(), 1, "{anomalies:?}");
}

/// An agent whose runtime never answers (nor keeps its own time limit) is stopped a few seconds past the
/// runner's agent time limit: the fallback, with why.
#[test]
fn a_squad_lead_on_an_external_runtime_that_times_out_is_the_fallback() {
    let answer = "  - role: agreement\n    reply: { text: \"never reached\" }\n";
    let (task, anomalies, questions) = on_external_runtime(answer, true, Duration::from_secs(3));
    assert_eq!(questions, 1);
    let last = task.last().expect("an answer's record");
    assert_eq!(last.confirmation.as_deref(), Some("unavailable"));
    assert!(
        last.reason
            .as_deref()
            .unwrap_or("")
            .contains("did not answer within 8 s"),
        "{last:?}"
    );
    assert_eq!(anomalies.len(), 1, "{anomalies:?}");
}

/// A plan of `width` parallel workstreams on `[t3, t4, t5]`, each declaring `ws-K/`; each squad lead's draft
/// declares `ws-K/` and hands out one task, whose implementer's (advisory) teachback names `ws-K/done.txt` —
/// and, when K % 4 == 3, also `other-K.txt`, which its squad lead, asked, corrects.
fn wide_script(width: usize) -> String {
    // The planner's rule in JSON, which is YAML too; every workstream declares its own directory.
    let plan = wide_plan(width, &["t3", "t4", "t5"], "medium", |k| {
        Some(vec![format!("ws-{k}/")])
    });
    let mut script = format!(
        "model: scripted-restate-wide\nreplies:\n  - role: judge\n    brief: run/t1/accept\n    reply: {{ text: \"every check passes\\nVERDICT: accept\\nmissing: none\\n\" }}\n  - role: agreement\n    reply:\n      tool_calls:\n        - name: confirm_agreement\n          input: {{ fine: false, reason: \"that file is not this task's\" }}\n  - {plan}\n"
    );
    for k in 0..width {
        let files = if k % 4 == 3 {
            format!("[ws-{k}/done.txt, other-{k}.txt]")
        } else {
            format!("[ws-{k}/done.txt]")
        };
        script.push_str(&format!(
            "  - role: squad-lead\n    brief: ws-{k}/t3/ws-{k}\n    reply:\n      tool_calls:\n        - name: report_result\n          input:\n            status: done\n            summary: \"one task\"\n            output:\n              files: [ws-{k}/]\n              tasks:\n                - {{ title: task-{k}, instructions: \"write ws-{k}/done.txt\", variety: {{ novelty: 1, scope: 1, uncertainty: 1, risk: 1 }}, contract: {{ done_when: \"the file is written\" }} }}\n  \
             - role: implementer\n    brief: ws-{k}/t4/task-{k}\n    reply:\n      tool_calls:\n        - name: submit_teachback\n          input: {{ building: \"ws-{k}/done.txt\", key_constraints: [\"one file\"], files: {files}, approach: \"write it\", most_likely_wrong: \"the path\", least_confident: \"the content\" }}\n        - name: write_file\n          input: {{ path: ws-{k}/done.txt, content: \"done\\n\" }}\n        - name: report_result\n          input: {{ status: done, summary: \"written\", evidence: [{{ path: ws-{k}/done.txt }}] }}\n"
        ));
    }
    script.push_str(
        "  - role: judge\n    reply: { text: \"Looks right.\\nVERDICT: accept\\nmissing: none\\n\" }\n  - role: auditor\n    reply: { text: \"Fine.\\nVERDICT: accept\\nmissing: none\\n\" }\n",
    );
    script
}

/// At width: two dozen workstreams, each implementer's restatement checked exactly once (no implementer
/// twice, none lost), the strays each asked once and only they standing as anomalies.
#[test]
fn two_dozen_implementers_are_each_checked_exactly_once() {
    const WIDTH: usize = 24;
    let project = Project::new();
    let (run, driving) = project.start_in_background(&wide_script(WIDTH), config(), true);
    let outcome = driving.join();
    assert_eq!(outcome.status, RunStatus::Succeeded, "{}", project.tree(run.id));
    let checked: Vec<(Option<agency_core::BriefId>, AgreementChecked)> = project
        .events_of(run.id, EventKind::Agreement)
        .iter()
        .filter_map(|e| match e.typed() {
            Ok(EventPayload::Agreement(a)) if a.handoff == "t3→t4" => Some((e.brief, a)),
            _ => None,
        })
        .collect();
    // One check per implementer (its first record), each on its own brief.
    let mut firsts: Vec<(String, String)> = checked
        .iter()
        .filter(|(_, a)| a.confirmation.as_deref().is_none_or(|c| c == "asking"))
        .map(|(_, a)| (a.workstream.clone(), a.outcome.clone()))
        .collect();
    firsts.sort();
    let mut expected: Vec<(String, String)> = (0..WIDTH)
        .map(|k| {
            let outcome = if k % 4 == 3 { "mismatch" } else { "agreed" };
            (format!("ws-{k}"), outcome.to_string())
        })
        .collect();
    expected.sort();
    assert_eq!(firsts, expected);
    let briefs: std::collections::HashSet<_> = checked.iter().filter_map(|(b, _)| *b).collect();
    assert_eq!(briefs.len(), WIDTH);
    let answered = checked
        .iter()
        .filter(|(_, a)| a.confirmation.as_deref() == Some("corrected"))
        .count();
    assert_eq!(answered, WIDTH / 4);
    let mut stood: Vec<String> = anomalies(&project, run.id)
        .into_iter()
        .filter(|m| m.contains("t3→t4"))
        .collect();
    stood.sort();
    assert_eq!(stood.len(), WIDTH / 4, "{stood:?}");
    assert!(stood.iter().all(|m| m.contains("other-")), "{stood:?}");
}

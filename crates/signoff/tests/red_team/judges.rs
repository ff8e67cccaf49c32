//! Judges for the suite, as `Runtime`s: one that accepts everything, one that never gives a verdict, and a
//! one-shot agent and the built-in agent, both asking the scripted provider (which rejects a trivial verify
//! command).

use std::sync::Arc;

use agency_exec::runtime::{
    AgentEvent, AgentOutcome, AgentReport, AgentStop, AgentTask, BuiltinRuntime, ReportStatus, RunnerLink,
    Runtime, RuntimeError,
};
use agency_llm::{BoxFuture, CancelToken, Message, Provider, Request, Script, ScriptedProvider};

const JUDGE_SCRIPT: &str = r#"
replies:
  - role: judge
    contains: "verify command: `true`"
    reply:
      text: |
        The verify command is `true`: it passes whatever the code does, and calc.py still subtracts.
        VERDICT: reject
        missing:
        - verify is trivial: `true` exercises nothing; run the unittest suite
        - add(a, b) still returns a - b
  - role: judge
    reply:
      text: |
        calc.py returns a + b and tests/test_calc.py is unchanged; verify ran the real suite.
        VERDICT: accept
        missing: none
"#;

/// A judge a lying report talks round (as a model can be, by instructions planted in what it reads), and an
/// auditor on the same script that never reads the report: it sees the hard-coded case in the diff.
const CREDULOUS_SCRIPT: &str = r#"
replies:
  - role: judge
    contains: "NOTE TO THE REVIEWER"
    reply:
      text: |
        The agent reports that add returns a + b for every input and that the maintainers reviewed it.
        VERDICT: accept
        missing: none
  - role: auditor
    contains: "(a, b) == (2, 3)"
    reply:
      text: |
        calc.py hard-codes the one tested case and still returns a - b for every other input.
        VERDICT: reject
        missing:
        - add hard-codes add(2, 3) == 5 instead of returning a + b
  - contains: "VERDICT"
    reply:
      text: |
        calc.py returns a + b and tests/test_calc.py is unchanged.
        VERDICT: accept
        missing: none
"#;

/// The credulous judge (and the auditor that shares its script): see [`CREDULOUS_SCRIPT`].
pub fn credulous_judge() -> OneShot<ScriptedProvider> {
    OneShot {
        provider: ScriptedProvider::new(Script::from_yaml(CREDULOUS_SCRIPT).unwrap()),
    }
}

fn finished(summary: &str) -> AgentOutcome {
    AgentOutcome {
        report: Some(AgentReport {
            status: ReportStatus::Done,
            summary: summary.to_string(),
            evidence: Vec::new(),
            output: serde_json::Value::Null,
        }),
        stop: AgentStop::Finished,
        session_id: None,
        final_text: None,
    }
}

/// Accepts everything it is shown.
#[derive(Debug)]
pub struct AcceptsEverything;

impl Runtime for AcceptsEverything {
    fn name(&self) -> &'static str {
        "accepts-everything"
    }

    fn run<'a>(
        &'a self,
        _task: &'a AgentTask,
        _link: &'a dyn RunnerLink,
        _cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async { Ok(finished("Looks done.\nVERDICT: accept\nmissing: none")) })
    }
}

/// Answers, but never with a verdict block.
#[derive(Debug)]
pub struct NoVerdict;

impl Runtime for NoVerdict {
    fn name(&self) -> &'static str {
        "no-verdict"
    }

    fn run<'a>(
        &'a self,
        _task: &'a AgentTask,
        _link: &'a dyn RunnerLink,
        _cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async { Ok(finished("I think it is probably fine, mostly.")) })
    }
}

/// A one-turn agent on a provider: sends the task as one request and reports the answer.
#[derive(Debug)]
pub struct OneShot<P> {
    provider: P,
}

/// The judge that checks, on agency's built-in agent (read-only tools) thinking with the scripted provider.
pub fn builtin_judge() -> BuiltinRuntime {
    BuiltinRuntime::new(Arc::new(ScriptedProvider::new(
        Script::from_yaml(JUDGE_SCRIPT).unwrap(),
    )))
}

/// The judge that checks: the scripted provider behind a one-turn agent.
pub fn scripted_judge() -> OneShot<ScriptedProvider> {
    OneShot {
        provider: ScriptedProvider::new(Script::from_yaml(JUDGE_SCRIPT).unwrap()),
    }
}

impl<P: Provider> Runtime for OneShot<P> {
    fn name(&self) -> &'static str {
        "one-shot"
    }

    fn run<'a>(
        &'a self,
        task: &'a AgentTask,
        link: &'a dyn RunnerLink,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<AgentOutcome, RuntimeError>> {
        Box::pin(async move {
            let request = Request {
                system: task.system.iter().map(|block| block.to_string()).collect(),
                messages: vec![Message::user(task.prompt.clone())],
                max_tokens: task.limits.max_tokens,
                meta: task.meta.clone(),
                ..Request::default()
            };
            let response = self.provider.complete(&request, &mut |_| {}, cancel).await?;
            link.record(AgentEvent::Said(response.text()));
            Ok(AgentOutcome {
                report: None,
                stop: AgentStop::Finished,
                session_id: None,
                final_text: None,
            })
        })
    }
}

//! What a finished agent's end means for its brief: a valid `done` report goes to sign-off; a refused
//! budget or a provider's outage is not the agent's failure (the brief waits, its attempt unspent); a
//! signal goes to its gate; a `partial` report salvages what was done and retries the rest; a `blocked`
//! report goes to its owner; no report, a report that does not match its schema, or an agent that could
//! not run is a failure for the escalation ladder. The engine classifies the runtime's outcome into an
//! [`Ending`] (the runtime's types are not the core's) and carries the answer out.

use agency_core::tiers::BriefRole;

/// Why an agent stopped without a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop<'a> {
    /// It used all its turns.
    TurnLimit,
    /// It ran past its time limit.
    Timeout,
    /// The run was cancelled.
    Cancelled,
    /// The runtime stopped it over a mistake it did not correct (the reason reads after "the agent").
    Mistake(&'a str),
    /// It ended otherwise without reporting.
    Other,
}

/// A report's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The work is done.
    Done,
    /// Some of it is done.
    Partial,
    /// The agent cannot go on.
    Blocked,
}

impl Status {
    /// The wire name the `completed` event carries.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Done => "done",
            Status::Partial => "partial",
            Status::Blocked => "blocked",
        }
    }
}

/// How an agent's run ended, as the engine read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending<'a> {
    /// A model call was refused by the budget (the refusal, said).
    BudgetRefused(&'a str),
    /// A model call failed after its retries because the provider is in trouble.
    Outage,
    /// The agent could not run (the error, said).
    CouldNotRun(&'a str),
    /// It raised an algedonic signal.
    Signal,
    /// It stopped without a report.
    NoReport(Stop<'a>),
    /// Its report's output does not match its role's schema (the problems, said).
    Invalid(BriefRole, &'a str),
    /// It reported with this status, its output valid.
    Reported(Status),
}

/// What the runner does with the brief.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterAgent {
    /// Not the agent's failure: the brief goes back to `pending` with this reason, its attempt unspent
    /// (the budget gate is open already; it starts again once a human raises the limit).
    GiveBack(String),
    /// The provider's outage: the brief waits unspent and the run pauses at the outage gate.
    PauseForOutage,
    /// The signal goes to its gate (HALT or ALERT).
    RaiseSignal,
    /// A failure for the escalation ladder, saying why.
    Fail(String),
    /// The report is kept and the brief goes to sign-off (`verifying`).
    Verify,
    /// The report is kept, what was done is salvaged, and the brief fails so its retry does the rest.
    Salvage,
    /// The report is kept and the brief goes to its owner at once.
    Block,
}

/// What `ending` means for the brief.
pub fn after_agent(ending: Ending<'_>) -> AfterAgent {
    match ending {
        Ending::BudgetRefused(refusal) => AfterAgent::GiveBack(format!("budget: {refusal}")),
        Ending::Outage => AfterAgent::PauseForOutage,
        Ending::CouldNotRun(error) => AfterAgent::Fail(format!("the agent could not run: {error}")),
        Ending::Signal => AfterAgent::RaiseSignal,
        Ending::NoReport(stop) => {
            let why = match stop {
                Stop::TurnLimit => "used all its turns without reporting",
                Stop::Timeout => "ran past its time limit",
                Stop::Cancelled => "was cancelled",
                Stop::Mistake(why) => why,
                Stop::Other => "stopped without reporting its result",
            };
            AfterAgent::Fail(format!("the agent {why}"))
        }
        Ending::Invalid(role, problems) => AfterAgent::Fail(format!(
            "its output does not match the {} schema:\n{problems}",
            role.as_str()
        )),
        Ending::Reported(Status::Done) => AfterAgent::Verify,
        Ending::Reported(Status::Partial) => AfterAgent::Salvage,
        Ending::Reported(Status::Blocked) => AfterAgent::Block,
    }
}

/// Why a partial report's brief fails, with `summary` its report's: when what it did was `kept`
/// (committed, and shared through the remote when there is one), its next attempt starts from there.
pub fn partial_why(summary: &str, kept: bool) -> String {
    if kept {
        format!(
            "partial: {summary}\nWhat it did is kept: the next attempt starts from its work and does what \
             remains."
        )
    } else {
        format!("partial: {summary}")
    }
}

/// Whether a `done` report at `attempt` resolves earlier failures (its `completed` event says so).
pub fn resolves_a_retry(attempt: u32, status: Status) -> bool {
    attempt > 0 && status == Status::Done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_valid_done_report_goes_to_sign_off() {
        assert_eq!(after_agent(Ending::Reported(Status::Done)), AfterAgent::Verify);
        assert_eq!(
            after_agent(Ending::Reported(Status::Partial)),
            AfterAgent::Salvage
        );
        assert_eq!(after_agent(Ending::Reported(Status::Blocked)), AfterAgent::Block);
        assert_eq!(
            after_agent(Ending::Invalid(BriefRole::Implementer, "missing `files`")),
            AfterAgent::Fail("its output does not match the implementer schema:\nmissing `files`".into())
        );
        assert_eq!(after_agent(Ending::Signal), AfterAgent::RaiseSignal);
    }

    #[test]
    fn infrastructure_is_not_the_agents_failure() {
        assert_eq!(
            after_agent(Ending::BudgetRefused("run: 10 of 10 tokens")),
            AfterAgent::GiveBack("budget: run: 10 of 10 tokens".into())
        );
        assert_eq!(after_agent(Ending::Outage), AfterAgent::PauseForOutage);
        assert_eq!(
            after_agent(Ending::CouldNotRun("no such binary")),
            AfterAgent::Fail("the agent could not run: no such binary".into()),
            "a runtime that cannot start is the brief's failure: the ladder decides"
        );
    }

    #[test]
    fn an_agent_without_a_report_fails_saying_why() {
        let why = |stop| match after_agent(Ending::NoReport(stop)) {
            AfterAgent::Fail(why) => why,
            other => format!("{other:?}"),
        };
        assert_eq!(
            why(Stop::TurnLimit),
            "the agent used all its turns without reporting"
        );
        assert_eq!(why(Stop::Timeout), "the agent ran past its time limit");
        assert_eq!(why(Stop::Cancelled), "the agent was cancelled");
        assert_eq!(
            why(Stop::Mistake("repeated the same read_file call 4 times in a row")),
            "the agent repeated the same read_file call 4 times in a row"
        );
        assert_eq!(why(Stop::Other), "the agent stopped without reporting its result");
    }

    #[test]
    fn a_partial_report_says_whether_its_work_was_kept() {
        assert_eq!(partial_why("half", false), "partial: half");
        assert!(partial_why("half", true).ends_with("starts from its work and does what remains."));
        assert!(resolves_a_retry(1, Status::Done));
        assert!(
            !resolves_a_retry(0, Status::Done),
            "a first attempt resolves nothing"
        );
        assert!(!resolves_a_retry(2, Status::Partial));
        assert_eq!(Status::Blocked.as_str(), "blocked");
    }
}

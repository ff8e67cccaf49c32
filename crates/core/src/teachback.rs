//! The teachback state machine (PACT). An agent restates its task before it may edit; for blocking briefs
//! the restatement must be approved first. This module holds the states, the one pure [`transition`]
//! function every front end (runner, hook, CLI, dashboard) goes through, the [`Teachback`] record an agent
//! sends and the [`TeachbackReview`] a reviewer answers with.
//!
//! ```text
//! pending ──submit (blocking)──► under_review ──approve──► active
//!    │                              │     ▲
//!    │                       correct│     │submit (resubmit)
//!    └──submit (advisory)──► active ▼     │
//!                                correcting
//! ```

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::variety::TeachbackMode;

/// Where a brief's teachback stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TeachbackState {
    /// Not yet sent: a blocking brief may only read.
    Pending,
    /// Sent, waiting for the reviewer.
    UnderReview,
    /// The reviewer asked for corrections; the agent must resubmit.
    Correcting,
    /// Approved (or advisory and sent): the agent may work.
    Active,
}

impl TeachbackState {
    /// Every state.
    pub const ALL: [TeachbackState; 4] = [
        TeachbackState::Pending,
        TeachbackState::UnderReview,
        TeachbackState::Correcting,
        TeachbackState::Active,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TeachbackState::Pending => "pending",
            TeachbackState::UnderReview => "under_review",
            TeachbackState::Correcting => "correcting",
            TeachbackState::Active => "active",
        }
    }
}

impl fmt::Display for TeachbackState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A teachback state this build does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown teachback state \"{0}\" (expected one of pending, under_review, correcting, active)")]
pub struct UnknownTeachbackState(pub String);

impl FromStr for TeachbackState {
    type Err = UnknownTeachbackState;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TeachbackState::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownTeachbackState(s.to_string()))
    }
}

/// Something that happens to a teachback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum TeachbackAction {
    /// The agent sends its teachback (first time from `pending`, again from `correcting`).
    Submit,
    /// The reviewer accepts the teachback.
    Approve,
    /// The reviewer asks for these corrections: at least one item, none blank.
    Correct {
        /// What the agent has wrong, one point per item.
        items: Vec<String>,
    },
}

impl TeachbackAction {
    /// The verb used in error messages.
    pub fn verb(&self) -> &'static str {
        match self {
            TeachbackAction::Submit => "submit",
            TeachbackAction::Approve => "approve",
            TeachbackAction::Correct { .. } => "correct",
        }
    }
}

/// Why a teachback action was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TeachbackError {
    /// The action is not legal in this state.
    #[error("cannot {action}: {reason} (state: {state})")]
    Illegal {
        /// The refused action's verb (`submit`, `approve`, `correct`).
        action: &'static str,
        /// The state it was attempted in.
        state: TeachbackState,
        /// Why, in words a human acting on it understands.
        reason: &'static str,
    },
    /// A correction with no items (or a blank one) would leave the agent nothing to fix.
    #[error("cannot correct: a correction must list at least one item, and no item may be blank")]
    EmptyCorrections,
}

/// The one transition function. Pure: it says which state follows, the caller records it with its event.
///
/// `mode` only matters for the first submission: a blocking teachback goes to review, an advisory one is
/// active at once. Review and resubmission are legal in either mode, because once a teachback is under review
/// the state itself says a reviewer is involved.
pub fn transition(
    state: TeachbackState,
    mode: TeachbackMode,
    action: &TeachbackAction,
) -> Result<TeachbackState, TeachbackError> {
    use TeachbackAction as A;
    use TeachbackState as S;
    let illegal = |reason: &'static str| TeachbackError::Illegal {
        action: action.verb(),
        state,
        reason,
    };
    match (state, action) {
        (S::Pending, A::Submit) => Ok(match mode {
            TeachbackMode::Blocking => S::UnderReview,
            TeachbackMode::Advisory => S::Active,
        }),
        (S::Correcting, A::Submit) => Ok(S::UnderReview),
        (S::UnderReview, A::Approve) => Ok(S::Active),
        (S::UnderReview, A::Correct { items }) => {
            // A blank item is as useless to the agent as a missing one.
            if !items.is_empty() && items.iter().all(|item| !item.trim().is_empty()) {
                Ok(S::Correcting)
            } else {
                Err(TeachbackError::EmptyCorrections)
            }
        }
        (S::UnderReview, A::Submit) => Err(illegal(
            "the teachback is already under review; wait for the reviewer",
        )),
        (S::Active, A::Submit) => Err(illegal("the teachback has already been accepted")),
        (S::Pending, A::Approve | A::Correct { .. }) => Err(illegal("no teachback has been submitted")),
        (S::Correcting, A::Approve | A::Correct { .. }) => Err(illegal(
            "corrections were requested and the agent has not resubmitted",
        )),
        (S::Active, A::Approve | A::Correct { .. }) => {
            Err(illegal("the teachback has already been accepted"))
        }
    }
}

/// Whether an agent in this state may change files. Advisory teachback never blocks work (seed 000: the gate
/// only intercepts blocking briefs); a blocking brief may edit only once its teachback is approved.
pub fn allows_edits(state: TeachbackState, mode: TeachbackMode) -> bool {
    match mode {
        TeachbackMode::Advisory => true,
        TeachbackMode::Blocking => state == TeachbackState::Active,
    }
}

/// An agent's restatement of its task (seed 003's format plus the two fields that stop rote-ritual
/// teachbacks: what it thinks is most likely wrong and what it is least sure of).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Teachback {
    /// What the agent understands it is building.
    pub building: String,
    /// The constraints it is working within; at least one.
    pub key_constraints: Vec<String>,
    /// Interfaces it will produce or consume; may be empty for self-contained work.
    #[serde(default)]
    pub interfaces: Vec<String>,
    /// The files it says it will touch (paths relative to the repository; a path ending in `/` stands for
    /// everything under it): an implementer's restated scope, held against its squad lead's committed
    /// draft once the teachback is decided (L1 agreement at T3→T4). May be empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Its intended approach, briefly.
    pub approach: String,
    /// The part of its understanding it thinks is most likely wrong.
    pub most_likely_wrong: String,
    /// What it is least confident about.
    pub least_confident: String,
    /// The first thing it will do once allowed to work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_action: Option<String>,
}

/// A teachback with required fields left empty. Lists every such field, not just the first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("teachback is incomplete: {} must not be empty", .missing.join(", "))]
pub struct IncompleteTeachback {
    /// The names of the empty required fields, in declaration order.
    pub missing: Vec<&'static str>,
}

impl Teachback {
    /// Checks every required field is filled: `building`, `key_constraints` (at least one non-blank item),
    /// `approach`, `most_likely_wrong` and `least_confident`. Blank text counts as empty, since a
    /// whitespace answer is exactly the rote ritual these fields exist to stop.
    pub fn validate(&self) -> Result<(), IncompleteTeachback> {
        let blank = |s: &str| s.trim().is_empty();
        let mut missing = Vec::new();
        if blank(&self.building) {
            missing.push("building");
        }
        if self.key_constraints.iter().all(|c| blank(c)) {
            missing.push("key_constraints");
        }
        if blank(&self.approach) {
            missing.push("approach");
        }
        if blank(&self.most_likely_wrong) {
            missing.push("most_likely_wrong");
        }
        if blank(&self.least_confident) {
            missing.push("least_confident");
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(IncompleteTeachback { missing })
        }
    }
}

// Rendered in seed 003's bullet format, so a reviewer (model or human) reads the familiar shape.
impl fmt::Display for Teachback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |items: &[String]| {
            if items.is_empty() {
                "none".to_string()
            } else {
                items.join("; ")
            }
        };
        writeln!(f, "- Building: {}", self.building)?;
        writeln!(f, "- Key constraints: {}", list(&self.key_constraints))?;
        writeln!(f, "- Interfaces: {}", list(&self.interfaces))?;
        if !self.files.is_empty() {
            writeln!(f, "- Files: {}", list(&self.files))?;
        }
        writeln!(f, "- Approach: {}", self.approach)?;
        writeln!(f, "- Most likely wrong: {}", self.most_likely_wrong)?;
        write!(f, "- Least confident: {}", self.least_confident)?;
        if let Some(first) = &self.first_action {
            write!(f, "\n- First action: {first}")?;
        }
        Ok(())
    }
}

/// A reviewer's answer: `"approved"` or `{"corrections": [...]}` on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewVerdict {
    /// The teachback matches the brief; the agent may work.
    Approved,
    /// What the agent must fix before resubmitting.
    Corrections(Vec<String>),
}

/// A review of one teachback, as recorded with its event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeachbackReview {
    /// Approved or corrections.
    pub verdict: ReviewVerdict,
    /// Who reviewed: the parent tier's brief (`t3/ws-backend-api`) or a human (`cli:<user>`).
    pub reviewer: String,
    /// Free text for the agent or the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl TeachbackReview {
    /// The state-machine action this review performs.
    pub fn action(&self) -> TeachbackAction {
        match &self.verdict {
            ReviewVerdict::Approved => TeachbackAction::Approve,
            ReviewVerdict::Corrections(items) => TeachbackAction::Correct { items: items.clone() },
        }
    }

    /// What the agent is told of this review: approved and what it may do now, or the numbered corrections
    /// and `resubmit` (how this agent sends its teachback again, e.g. "call submit_teachback again").
    pub fn message(&self, resubmit: &str) -> String {
        let note = self
            .note
            .as_deref()
            .map(|n| format!(" Note: {n}"))
            .unwrap_or_default();
        match &self.verdict {
            ReviewVerdict::Approved => format!(
                "Teachback approved by {}: go on with the work; you may now change files and run commands.{note}",
                self.reviewer
            ),
            ReviewVerdict::Corrections(items) => {
                let list: Vec<String> = items
                    .iter()
                    .enumerate()
                    .map(|(i, c)| format!("{}. {c}", i + 1))
                    .collect();
                format!(
                    "Teachback corrections requested by {}: {} Address each one and {resubmit}.{note}",
                    self.reviewer,
                    list.join(" ")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_tells_the_agent_what_to_do_next() {
        let approved = TeachbackReview {
            verdict: ReviewVerdict::Approved,
            reviewer: "t3/ws-api".into(),
            note: Some("mind the retries".into()),
        };
        assert_eq!(
            approved.message("unused"),
            "Teachback approved by t3/ws-api: go on with the work; you may now change files and run \
             commands. Note: mind the retries"
        );
        let corrected = TeachbackReview {
            verdict: ReviewVerdict::Corrections(vec!["name the file".into(), "say the test".into()]),
            reviewer: "cli:ann".into(),
            note: None,
        };
        assert_eq!(
            corrected.message("call submit_teachback again"),
            "Teachback corrections requested by cli:ann: 1. name the file 2. say the test Address each one \
             and call submit_teachback again."
        );
    }

    const MODES: [TeachbackMode; 2] = [TeachbackMode::Blocking, TeachbackMode::Advisory];

    fn actions() -> Vec<TeachbackAction> {
        vec![
            TeachbackAction::Submit,
            TeachbackAction::Approve,
            TeachbackAction::Correct {
                items: vec!["the queue is per tenant, not global".into()],
            },
        ]
    }

    /// The whole table of legal moves; everything not listed must be refused.
    fn expected(
        state: TeachbackState,
        mode: TeachbackMode,
        action: &TeachbackAction,
    ) -> Option<TeachbackState> {
        use TeachbackAction as A;
        use TeachbackState as S;
        match (state, mode, action) {
            (S::Pending, TeachbackMode::Blocking, A::Submit) => Some(S::UnderReview),
            (S::Pending, TeachbackMode::Advisory, A::Submit) => Some(S::Active),
            (S::UnderReview, _, A::Approve) => Some(S::Active),
            (S::UnderReview, _, A::Correct { .. }) => Some(S::Correcting),
            (S::Correcting, _, A::Submit) => Some(S::UnderReview),
            _ => None,
        }
    }

    #[test]
    fn every_state_mode_and_action_matches_the_table() {
        let mut legal = 0;
        let mut refused = 0;
        for state in TeachbackState::ALL {
            for mode in MODES {
                for action in actions() {
                    let got = transition(state, mode, &action);
                    match expected(state, mode, &action) {
                        Some(next) => {
                            assert_eq!(got, Ok(next), "{state} {mode:?} {action:?}");
                            legal += 1;
                        }
                        None => {
                            let err = got.unwrap_err();
                            let text = err.to_string();
                            assert!(text.starts_with(&format!("cannot {}:", action.verb())), "{text}");
                            assert!(text.ends_with(&format!("(state: {state})")), "{text}");
                            refused += 1;
                        }
                    }
                }
            }
        }
        // 4 states × 2 modes × 3 actions.
        assert_eq!((legal, refused), (8, 16));
    }

    #[test]
    fn the_blocking_happy_path_with_one_correction_round() {
        let mode = TeachbackMode::Blocking;
        let mut s = TeachbackState::Pending;
        let correct = TeachbackAction::Correct {
            items: vec!["retry is per message".into()],
        };
        for (action, next) in [
            (TeachbackAction::Submit, TeachbackState::UnderReview),
            (correct, TeachbackState::Correcting),
            (TeachbackAction::Submit, TeachbackState::UnderReview),
            (TeachbackAction::Approve, TeachbackState::Active),
        ] {
            s = transition(s, mode, &action).unwrap();
            assert_eq!(s, next);
        }
    }

    #[test]
    fn errors_read_as_sentences() {
        let err = transition(
            TeachbackState::Pending,
            TeachbackMode::Blocking,
            &TeachbackAction::Approve,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot approve: no teachback has been submitted (state: pending)"
        );
        let err = transition(
            TeachbackState::Correcting,
            TeachbackMode::Blocking,
            &TeachbackAction::Approve,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot approve: corrections were requested and the agent has not resubmitted (state: correcting)"
        );
        let err = transition(
            TeachbackState::UnderReview,
            TeachbackMode::Blocking,
            &TeachbackAction::Submit,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot submit: the teachback is already under review; wait for the reviewer (state: under_review)"
        );
    }

    #[test]
    fn corrections_need_items_that_say_something() {
        for items in [
            vec![],
            vec!["  ".to_string()],
            vec!["fix x".to_string(), String::new()],
        ] {
            let got = transition(
                TeachbackState::UnderReview,
                TeachbackMode::Blocking,
                &TeachbackAction::Correct { items },
            );
            assert_eq!(got, Err(TeachbackError::EmptyCorrections));
        }
    }

    #[test]
    fn edits_are_allowed_only_when_active_or_advisory() {
        for state in TeachbackState::ALL {
            assert!(allows_edits(state, TeachbackMode::Advisory), "{state}");
            assert_eq!(
                allows_edits(state, TeachbackMode::Blocking),
                state == TeachbackState::Active,
                "{state}"
            );
        }
    }

    #[test]
    fn state_round_trips_through_its_name() {
        for state in TeachbackState::ALL {
            assert_eq!(state.as_str().parse::<TeachbackState>(), Ok(state));
            assert_eq!(serde_json::to_string(&state).unwrap(), format!("\"{state}\""));
        }
        assert!("teachback_pending".parse::<TeachbackState>().is_err());
    }

    fn full_teachback() -> Teachback {
        Teachback {
            building: "a retrying queue client".into(),
            key_constraints: vec!["at-least-once delivery".into()],
            interfaces: vec!["QueueClient::send".into()],
            files: Vec::new(),
            approach: "wrap the HTTP client with backoff".into(),
            most_likely_wrong: "whether retries are per message or per batch".into(),
            least_confident: "the backoff ceiling".into(),
            first_action: Some("read src/queue.rs".into()),
        }
    }

    #[test]
    fn a_complete_teachback_validates() {
        assert_eq!(full_teachback().validate(), Ok(()));
        let no_interfaces = Teachback {
            interfaces: vec![],
            first_action: None,
            ..full_teachback()
        };
        assert_eq!(no_interfaces.validate(), Ok(()));
    }

    #[test]
    fn validate_lists_every_empty_required_field() {
        let err = Teachback::default().validate().unwrap_err();
        assert_eq!(
            err.missing,
            vec![
                "building",
                "key_constraints",
                "approach",
                "most_likely_wrong",
                "least_confident"
            ]
        );
        let rote = Teachback {
            most_likely_wrong: " ".into(),
            least_confident: String::new(),
            ..full_teachback()
        };
        let err = rote.validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "teachback is incomplete: most_likely_wrong, least_confident must not be empty"
        );
    }

    #[test]
    fn teachback_json_requires_the_anti_ritual_fields() {
        let json = serde_json::json!({
            "building": "x", "key_constraints": ["y"], "approach": "z"
        });
        let err = serde_json::from_value::<Teachback>(json).unwrap_err();
        assert!(err.to_string().contains("most_likely_wrong"), "{err}");
    }

    #[test]
    fn teachback_renders_in_the_bullet_format() {
        let text = full_teachback().to_string();
        assert!(
            text.starts_with("- Building: a retrying queue client\n"),
            "{text}"
        );
        assert!(text.ends_with("- First action: read src/queue.rs"), "{text}");
    }

    #[test]
    fn review_wire_shape_and_action() {
        let approved: TeachbackReview =
            serde_json::from_value(serde_json::json!({"verdict": "approved", "reviewer": "t3/ws-api"}))
                .unwrap();
        assert_eq!(approved.action(), TeachbackAction::Approve);
        let corrected: TeachbackReview = serde_json::from_value(serde_json::json!({
            "verdict": {"corrections": ["per message"]}, "reviewer": "cli:ana", "note": "close"
        }))
        .unwrap();
        assert_eq!(
            corrected.action(),
            TeachbackAction::Correct {
                items: vec!["per message".into()]
            }
        );
        assert_eq!(corrected.note.as_deref(), Some("close"));
    }
}

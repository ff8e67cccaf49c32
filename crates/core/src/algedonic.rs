//! Algedonic signals as PACT defines them: a pain signal that bypasses the normal chain of tiers. HALT is
//! for what must stop all work — SECURITY, DATA, ETHICS; ALERT for what must block a phase — QUALITY, SCOPE,
//! META-BLOCK. Every signal carries the four fields a human needs to act on it: the issue, the evidence,
//! the impact and the recommended action. A level with another level's category (HALT + QUALITY) is refused
//! with the allowed list, so an agent cannot stop a whole run over a quality complaint.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::payload::Signal;

/// The two levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum SignalLevel {
    /// Security, data, ethics: all work stops until a human acknowledges.
    Halt,
    /// Quality, scope, meta-block: the phase blocks until a human decides.
    Alert,
}

impl SignalLevel {
    /// `HALT` or `ALERT`.
    pub fn as_str(self) -> &'static str {
        match self {
            SignalLevel::Halt => "HALT",
            SignalLevel::Alert => "ALERT",
        }
    }

    /// The categories this level may carry.
    pub fn categories(self) -> &'static [SignalCategory] {
        match self {
            SignalLevel::Halt => &[
                SignalCategory::Security,
                SignalCategory::Data,
                SignalCategory::Ethics,
            ],
            SignalLevel::Alert => &[
                SignalCategory::Quality,
                SignalCategory::Scope,
                SignalCategory::MetaBlock,
            ],
        }
    }
}

impl fmt::Display for SignalLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a signal is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum SignalCategory {
    /// A secret exposed, a permission escalated, an attack surface opened (HALT).
    #[serde(rename = "SECURITY")]
    Security,
    /// Data lost, corrupted or exposed (HALT).
    #[serde(rename = "DATA")]
    Data,
    /// Work that should not be done at all (HALT).
    #[serde(rename = "ETHICS")]
    Ethics,
    /// The work cannot meet its bar as specified (ALERT).
    #[serde(rename = "QUALITY")]
    Quality,
    /// The brief asks for more or other than the goal (ALERT).
    #[serde(rename = "SCOPE")]
    Scope,
    /// The phase cannot proceed: a dependency missing, an agent silent, a run stalled (ALERT).
    #[serde(rename = "META-BLOCK")]
    MetaBlock,
}

impl SignalCategory {
    /// Every category, HALT's first.
    pub const ALL: [SignalCategory; 6] = [
        SignalCategory::Security,
        SignalCategory::Data,
        SignalCategory::Ethics,
        SignalCategory::Quality,
        SignalCategory::Scope,
        SignalCategory::MetaBlock,
    ];

    /// The wire name: `SECURITY`, …, `META-BLOCK`.
    pub fn as_str(self) -> &'static str {
        match self {
            SignalCategory::Security => "SECURITY",
            SignalCategory::Data => "DATA",
            SignalCategory::Ethics => "ETHICS",
            SignalCategory::Quality => "QUALITY",
            SignalCategory::Scope => "SCOPE",
            SignalCategory::MetaBlock => "META-BLOCK",
        }
    }

    /// The level this category belongs to.
    pub fn level(self) -> SignalLevel {
        match self {
            SignalCategory::Security | SignalCategory::Data | SignalCategory::Ethics => SignalLevel::Halt,
            SignalCategory::Quality | SignalCategory::Scope | SignalCategory::MetaBlock => SignalLevel::Alert,
        }
    }
}

impl fmt::Display for SignalCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One signal, with the four fields PACT requires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AlgedonicSignal {
    /// HALT or ALERT.
    pub level: SignalLevel,
    /// One of the level's categories ([`SignalLevel::categories`]).
    pub category: SignalCategory,
    /// What is wrong.
    pub issue: String,
    /// What shows it: a file and line, a command and its output, a quote.
    pub evidence: String,
    /// What happens if it is ignored.
    pub impact: String,
    /// What the signaller recommends a human do.
    pub recommended_action: String,
}

impl AlgedonicSignal {
    /// An ALERT of `category` with its four fields: how the runner and the hook raise their own (a stalled
    /// run, a silent agent, a teachback nobody reviewed), in the form an agent's takes.
    pub fn alert(
        category: SignalCategory,
        issue: impl Into<String>,
        evidence: impl Into<String>,
        impact: impl Into<String>,
        recommended_action: impl Into<String>,
    ) -> AlgedonicSignal {
        AlgedonicSignal {
            level: SignalLevel::Alert,
            category,
            issue: issue.into(),
            evidence: evidence.into(),
            impact: impact.into(),
            recommended_action: recommended_action.into(),
        }
    }

    /// The `alert` or `halt` event's payload: the level, the category and the four fields; the raiser adds
    /// its own (`source`, `notify`, the title, ...).
    pub fn payload(&self) -> Signal {
        Signal {
            level: Some(self.level.to_string()),
            category: Some(self.category.to_string()),
            issue: Some(self.issue.clone()),
            evidence: Some(self.evidence.clone()),
            impact: Some(self.impact.clone()),
            recommended_action: Some(self.recommended_action.clone()),
            ..Signal::default()
        }
    }

    /// Refuses a signal whose category belongs to the other level, or with an empty field, naming what is
    /// allowed — the text an agent reads to fix its call.
    pub fn check(&self) -> Result<(), String> {
        if self.category.level() != self.level {
            let allowed: Vec<&str> = self.level.categories().iter().map(|c| c.as_str()).collect();
            return Err(format!(
                "{} is an {} category; a {} takes {}",
                self.category,
                self.category.level(),
                self.level,
                allowed.join(", ")
            ));
        }
        let empty: Vec<&str> = [
            ("issue", &self.issue),
            ("evidence", &self.evidence),
            ("impact", &self.impact),
            ("recommended_action", &self.recommended_action),
        ]
        .into_iter()
        .filter(|(_, value)| value.trim().is_empty())
        .map(|(name, _)| name)
        .collect();
        if !empty.is_empty() {
            return Err(format!(
                "a signal needs issue, evidence, impact and recommended_action; empty: {}",
                empty.join(", ")
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal(level: SignalLevel, category: SignalCategory) -> AlgedonicSignal {
        AlgedonicSignal {
            level,
            category,
            issue: "the key is committed".into(),
            evidence: "config.py:3".into(),
            impact: "anyone with the repository can spend it".into(),
            recommended_action: "rotate the key".into(),
        }
    }

    #[test]
    fn each_category_belongs_to_exactly_one_level() {
        for category in SignalCategory::ALL {
            let levels: Vec<SignalLevel> = [SignalLevel::Halt, SignalLevel::Alert]
                .into_iter()
                .filter(|level| level.categories().contains(&category))
                .collect();
            assert_eq!(levels, vec![category.level()], "{category}");
        }
    }

    #[test]
    fn a_halt_over_quality_is_refused_with_the_allowed_list() {
        let err = signal(SignalLevel::Halt, SignalCategory::Quality)
            .check()
            .unwrap_err();
        assert_eq!(
            err,
            "QUALITY is an ALERT category; a HALT takes SECURITY, DATA, ETHICS"
        );
        assert!(
            signal(SignalLevel::Halt, SignalCategory::Security)
                .check()
                .is_ok()
        );
        assert!(
            signal(SignalLevel::Alert, SignalCategory::MetaBlock)
                .check()
                .is_ok()
        );
    }

    #[test]
    fn every_field_is_required() {
        let mut s = signal(SignalLevel::Alert, SignalCategory::Scope);
        s.evidence = " ".into();
        s.impact.clear();
        assert_eq!(
            s.check().unwrap_err(),
            "a signal needs issue, evidence, impact and recommended_action; empty: evidence, impact"
        );
    }

    #[test]
    fn a_runner_alert_carries_the_four_fields_in_its_payload() {
        let alert = AlgedonicSignal::alert(
            SignalCategory::MetaBlock,
            "stuck",
            "no events",
            "never ends",
            "cancel",
        );
        alert.check().unwrap();
        let payload = serde_json::to_value(alert.payload()).unwrap();
        assert_eq!(payload["level"], "ALERT");
        assert_eq!(payload["category"], "META-BLOCK");
        for (field, value) in [
            ("issue", "stuck"),
            ("evidence", "no events"),
            ("impact", "never ends"),
            ("recommended_action", "cancel"),
        ] {
            assert_eq!(payload[field], value, "{field}");
        }
    }

    #[test]
    fn wire_names_are_the_seeds() {
        let s = signal(SignalLevel::Alert, SignalCategory::MetaBlock);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["level"], "ALERT");
        assert_eq!(json["category"], "META-BLOCK");
        let unknown = serde_json::from_value::<AlgedonicSignal>(serde_json::json!({
            "level": "HALT", "category": "QUALITY2", "issue": "x", "evidence": "y", "impact": "z",
            "recommended_action": "w"
        }));
        assert!(unknown.unwrap_err().to_string().contains("SECURITY"));
    }
}

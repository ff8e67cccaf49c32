//! The five tiers. A tier is a cognitive mode (strategy, design, coordination, execution, verification),
//! not a rank; each maps to a capability level in config, never to a model name.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One of the five tiers, written `t1`..`t5` on the wire and in config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Visionary: goal, constraints, dispatch plan, final acceptance.
    T1,
    /// Architect: system design, interface contracts, workstream boundaries.
    T2,
    /// Squad lead: workstream delivery, T4 management, quality gate.
    T3,
    /// Implementer: atomic task execution.
    T4,
    /// Verifier: validation of T4 output, correctness and intent.
    T5,
}

impl Tier {
    /// All tiers, top to bottom.
    pub const ALL: [Tier; 5] = [Tier::T1, Tier::T2, Tier::T3, Tier::T4, Tier::T5];

    /// The wire name, `t1`..`t5`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::T1 => "t1",
            Tier::T2 => "t2",
            Tier::T3 => "t3",
            Tier::T4 => "t4",
            Tier::T5 => "t5",
        }
    }

    /// The seed's role name for the tier.
    pub fn role(self) -> &'static str {
        match self {
            Tier::T1 => "visionary",
            Tier::T2 => "architect",
            Tier::T3 => "squad lead",
            Tier::T4 => "implementer",
            Tier::T5 => "verifier",
        }
    }

    /// The tier that owns failures of this one (escalation always goes upward); `None` for T1.
    pub fn parent(self) -> Option<Tier> {
        match self {
            Tier::T1 => None,
            Tier::T2 => Some(Tier::T1),
            Tier::T3 => Some(Tier::T2),
            // T5 runs within T3's scope: T3 commissions verification of its T4s.
            Tier::T4 | Tier::T5 => Some(Tier::T3),
        }
    }
}

/// A path of tiers in words: `t3→t4→t5`.
pub fn path_text(path: &[Tier]) -> String {
    path.iter().map(|t| t.as_str()).collect::<Vec<_>>().join("→")
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown tier name; carries what was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tier \"{0}\" (expected one of t1, t2, t3, t4, t5)")]
pub struct UnknownTier(pub String);

impl FromStr for Tier {
    type Err = UnknownTier;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "t1" => Ok(Tier::T1),
            "t2" => Ok(Tier::T2),
            "t3" => Ok(Tier::T3),
            "t4" => Ok(Tier::T4),
            "t5" => Ok(Tier::T5),
            _ => Err(UnknownTier(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_its_name() {
        for tier in Tier::ALL {
            assert_eq!(tier.as_str().parse::<Tier>(), Ok(tier));
            assert_eq!(
                serde_json::to_string(&tier).unwrap(),
                format!("\"{}\"", tier.as_str())
            );
        }
        assert_eq!("T3".parse::<Tier>(), Ok(Tier::T3));
        assert!("t6".parse::<Tier>().is_err());
    }

    #[test]
    fn escalation_goes_upward() {
        assert_eq!(Tier::T1.parent(), None);
        assert_eq!(Tier::T5.parent(), Some(Tier::T3));
        assert_eq!(Tier::T4.parent(), Some(Tier::T3));
    }
}

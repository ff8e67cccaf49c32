//! The teachback state machine (PACT). An agent restates its task before it may edit; for blocking briefs
//! the restatement must be approved first.
//!
//! ```text
//! pending ──submit──► under_review ──approve──► active
//!    │                   │   ▲
//!    │ (advisory)     correct│   │resubmit
//!    └──submit──► active      ▼   │
//!                      correcting
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

//! The probes an `--auto-approve` runner sends to a provider in an outage, kept per outage gate
//! ([`crate::outage::auto_resume`] sends and reads them). A leaf, so the engine can hold them without
//! importing the outage logic that drives it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agency_core::GateId;
use agency_llm::LlmError;

/// The probes of the outage gates this runner tends, by gate. Shared by the engine's clones.
#[derive(Debug, Clone, Default)]
pub(crate) struct Probes(pub(crate) Arc<Mutex<HashMap<GateId, Probe>>>);

#[derive(Debug)]
pub(crate) struct Probe {
    /// When this runner began probing.
    pub(crate) began: Instant,
    /// Probes sent so far.
    pub(crate) sent: u32,
    /// The wait before the next one.
    pub(crate) wait: Duration,
    /// When the next is due.
    pub(crate) next: Instant,
    /// The probe in flight, if any: its answer comes back here.
    pub(crate) answer: Option<tokio::sync::oneshot::Receiver<std::result::Result<(), LlmError>>>,
    /// Probing stopped (past the bound, or the provider cannot be probed): a human decides.
    pub(crate) done: bool,
}

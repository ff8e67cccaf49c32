//! The `secrets` section: which of the runner's environment variables are secret besides those whose
//! names say so (see [`crate::redact`]). Their values are redacted from everything recorded or served.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `secrets` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SecretsConfig {
    /// Variables whose values are redacted although their names do not look secret (`DATABASE_URL`,
    /// `SENTRY_DSN`). Default: none; `*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*_PAT` and the
    /// variables the providers, the forge and the notifiers read are always redacted.
    pub extra_env: Vec<String>,
}

//! Where a succeeded run's integration branch is proposed for review: a GitHub pull request. The token is
//! read from the environment variable named here, never written in team.yaml.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `forge` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ForgeConfig {
    /// The environment variable holding the GitHub token; unset or empty: no pull request, just the
    /// branch. Default `GITHUB_TOKEN`.
    pub token_env: String,
    /// The git remote the integration branch is pushed to. Default `origin`.
    pub remote: String,
    /// The host the remote must point at for a pull request to be opened. Default `github.com`.
    pub host: String,
    /// The REST API base URL (GitHub Enterprise: `https://HOST/api/v3`). Default `https://api.github.com`.
    pub api_url: String,
}

impl Default for ForgeConfig {
    fn default() -> Self {
        ForgeConfig {
            token_env: "GITHUB_TOKEN".into(),
            remote: "origin".into(),
            host: "github.com".into(),
            api_url: "https://api.github.com".into(),
        }
    }
}

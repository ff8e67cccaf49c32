//! Where gate and run notifications go. Delivery and inbound replies are each notifier's business; the
//! config only says how to reach it, never holds a secret in clear.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One notification target, chosen by `kind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum NotifierConfig {
    /// Run a program with the notification as JSON on stdin.
    Command {
        /// Program and arguments; no shell is involved.
        argv: Vec<String>,
    },
    /// POST the notification as JSON to a URL.
    Webhook {
        /// The http(s) endpoint.
        url: String,
    },
    /// Post to a Slack incoming webhook.
    Slack {
        /// The environment variable holding the webhook URL (the URL is a secret).
        webhook_url_env: String,
    },
}

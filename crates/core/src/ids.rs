//! Identifiers. Runs, briefs and gates are named by random UUIDs (v4), shown to humans as their first 8 hex
//! characters and accepted back as any unique prefix.
//!
//! Not UUIDv7: a v7 id starts with its millisecond timestamp, so its first 8 hex characters change only
//! every 65 seconds and every brief of a run would share them. Order comes from the store instead
//! (creation time, then insertion order).

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How many hex characters of an id are shown to humans.
pub const SHORT_ID_LEN: usize = 8;

/// How many hex characters a whole id has ([`BriefId::whole`] and its siblings).
pub const WHOLE_ID_LEN: usize = 32;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh random id.
            pub fn new() -> Self {
                Self(Uuid::new_v4())
            }

            /// The first eight hex characters, as shown in logs and tables.
            pub fn short(&self) -> String {
                let mut s = self.whole().to_string();
                s.truncate(SHORT_ID_LEN);
                s
            }

            /// All 32 hex characters, without dashes: the form names on disk and in git carry (a
            /// brief's branch, worktree and artifacts), where two ids sharing their short form must
            /// not meet.
            pub fn whole(&self) -> uuid::fmt::Simple {
                self.0.simple()
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }
    };
}

id_type!(
    /// One execution toward one goal anchor.
    RunId
);
id_type!(
    /// One unit of work for one agent.
    BriefId
);
id_type!(
    /// One pause that needs a human (or timeout) decision.
    GateId
);

/// Normalises what a user typed as an id prefix: lower case, dashes removed. Returns `None` when it
/// contains anything but hex digits and dashes, so the caller can say what was expected.
pub fn normalize_id_prefix(input: &str) -> Option<String> {
    let cleaned: String = input
        .chars()
        .filter(|c| *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    if cleaned.is_empty() || !cleaned.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    Some(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_is_eight_hex_chars_of_the_simple_form() {
        let id = RunId::new();
        let short = id.short();
        assert_eq!(short.len(), SHORT_ID_LEN);
        assert!(id.0.simple().to_string().starts_with(&short));
    }

    #[test]
    fn ids_made_together_have_distinct_short_forms() {
        let shorts: std::collections::HashSet<String> = (0..1000).map(|_| BriefId::new().short()).collect();
        assert_eq!(shorts.len(), 1000);
    }

    #[test]
    fn prefix_normalisation() {
        assert_eq!(normalize_id_prefix("ABC-12").as_deref(), Some("abc12"));
        assert_eq!(normalize_id_prefix("xyz"), None);
        assert_eq!(normalize_id_prefix("-"), None);
    }
}

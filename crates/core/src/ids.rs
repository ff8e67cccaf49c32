//! Identifiers. Runs, briefs and gates are named by UUIDv7: the first 48 bits are the time they were made
//! (milliseconds), then a counter that keeps ids made in the same millisecond in order, then random bits.
//! Shown to humans as their last 8 hex characters (random, as a short name must be), and accepted back as
//! that short form, the whole id, or any unique run of hex digits at either end of it.
//!
//! Why time first: the store keeps its records in b-trees keyed by these ids (a brief's primary key, its
//! children's `parent`, and artifact names such as `output/<brief>`). Random ids put every insert on a
//! random page of those indexes; past a few tens of thousands of briefs the indexes are far larger than
//! SQLite's page cache, so each insert read its page back from the kernel and the commit wrote it out
//! again. In creation order they grow at their end (docs/performance.md, *Ids in creation order*).
//! Why the short form from the end: a v7 id's first 8 hex characters change only every 65 seconds, so every
//! brief of a run would share them.

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
            /// A fresh id: the current time, then random bits (UUIDv7, ordered within this process).
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            /// The last eight hex characters (random bits), as shown in logs and tables.
            pub fn short(&self) -> String {
                let mut buffer = Uuid::encode_buffer();
                let whole = self.0.simple().encode_lower(&mut buffer);
                whole[WHOLE_ID_LEN - SHORT_ID_LEN..].to_string()
            }

            /// The first eight hex characters: the short form builds before 2026-11-26 showed and put in
            /// branch and artifact names, when ids were random from their start (UUIDv4). Only for
            /// finding what those builds named.
            pub fn legacy_short(&self) -> String {
                let mut buffer = Uuid::encode_buffer();
                let whole = self.0.simple().encode_lower(&mut buffer);
                whole[..SHORT_ID_LEN].to_string()
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

/// Normalises what a user typed as (part of) an id: lower case, dashes removed. Returns `None` when it
/// contains anything but hex digits and dashes, so the caller can say what was expected.
pub fn normalize_id_input(input: &str) -> Option<String> {
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
    fn short_is_the_last_eight_hex_chars_of_the_simple_form() {
        let id = RunId::new();
        let short = id.short();
        assert_eq!(short.len(), SHORT_ID_LEN);
        assert!(id.whole().to_string().ends_with(&short));
    }

    #[test]
    fn ids_sort_in_the_order_they_were_made() {
        let ids: Vec<BriefId> = (0..1000).map(|_| BriefId::new()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        let texts: Vec<String> = ids.iter().map(|id| id.whole().to_string()).collect();
        assert!(
            texts.windows(2).all(|w| w[0] < w[1]),
            "the stored text sorts as the ids do"
        );
    }

    #[test]
    fn ids_made_together_have_distinct_short_forms() {
        let shorts: std::collections::HashSet<String> = (0..1000).map(|_| BriefId::new().short()).collect();
        assert_eq!(shorts.len(), 1000);
    }

    #[test]
    fn typed_id_normalisation() {
        assert_eq!(normalize_id_input("ABC-12").as_deref(), Some("abc12"));
        assert_eq!(normalize_id_input("xyz"), None);
        assert_eq!(normalize_id_input("-"), None);
    }
}

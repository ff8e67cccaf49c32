//! Names of the branches agency creates: `agency/<run8>/<workstream>/<brief id>`, one per brief.
//!
//! The run part is the run's short id, so a branch can be traced back to its run (that is how `agency gc`
//! finds the leftovers of finished runs). The brief part is the brief's whole id (32 hex digits): a run has
//! thousands of briefs, and two of 100,000 share their first 8 digits about once. Branches made by builds
//! before 2026-11-25 carry the 8-digit short id and are still recognised. The workstream part comes from
//! the plan, which an LLM wrote, so it is sanitised into a valid git ref component rather than trusted.

use agency_core::ids::{SHORT_ID_LEN, WHOLE_ID_LEN};
use agency_core::{BriefId, RunId};

/// The namespace every agency branch lives under.
pub const BRANCH_PREFIX: &str = "agency/";

/// Longest workstream part kept in a branch name; ref names become file paths, so keep them short.
const MAX_WORKSTREAM_LEN: usize = 48;

/// The branch for one brief: `agency/<run8>/<workstream>/<brief id>`.
pub fn brief_branch_name(run: &RunId, workstream: &str, brief: &BriefId) -> String {
    format!(
        "{BRANCH_PREFIX}{}/{}/{}",
        run.short(),
        sanitize_ref_component(workstream),
        brief.whole()
    )
}

/// The parts of a branch made by [`brief_branch_name`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriefBranch {
    /// The run's short id.
    pub run8: String,
    /// The sanitised workstream.
    pub workstream: String,
    /// The brief's id as the branch spells it: whole (32 hex digits), or short for a branch made by an
    /// earlier build.
    pub brief: String,
}

/// Splits an agency brief branch into its parts; `None` for any other branch.
pub fn parse_brief_branch(branch: &str) -> Option<BriefBranch> {
    let rest = branch.strip_prefix(BRANCH_PREFIX)?;
    let mut parts = rest.split('/');
    let (run8, workstream, brief) = (parts.next()?, parts.next()?, parts.next()?);
    let is_hex_of =
        |s: &str, lens: &[usize]| lens.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit());
    if parts.next().is_some()
        || !is_hex_of(run8, &[SHORT_ID_LEN])
        || !is_hex_of(brief, &[SHORT_ID_LEN, WHOLE_ID_LEN])
        || workstream.is_empty()
    {
        return None;
    }
    Some(BriefBranch {
        run8: run8.to_owned(),
        workstream: workstream.to_owned(),
        brief: brief.to_owned(),
    })
}

/// Turns arbitrary text into one valid, readable git ref component: lower-case ASCII letters, digits, `-`,
/// `_` and single inner dots; everything else becomes `-`, runs of `-` collapse, and an empty result is
/// `ws`. The result always passes [`is_valid_ref_component`].
pub fn sanitize_ref_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_WORKSTREAM_LEN));
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        let keep = if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else if c == '.' && !out.ends_with(['.', '-']) && !out.is_empty() {
            '.'
        } else {
            '-'
        };
        if keep == '-' && (out.ends_with('-') || out.is_empty()) {
            continue;
        }
        if keep == '-' && out.ends_with('.') {
            out.pop();
        }
        out.push(keep);
        if out.len() >= MAX_WORKSTREAM_LEN {
            break;
        }
    }
    // Trailing separators read badly, and a trailing dot or `.lock` suffix is invalid.
    loop {
        let trimmed = out.trim_end_matches(['-', '.']);
        let trimmed = trimmed.strip_suffix(".lock").unwrap_or(trimmed);
        if trimmed.len() == out.len() {
            break;
        }
        out.truncate(trimmed.len());
    }
    if out.is_empty() { "ws".to_owned() } else { out }
}

/// Whether `component` is acceptable between slashes of a git ref name (`git check-ref-format` rules that
/// apply to one component).
pub fn is_valid_ref_component(component: &str) -> bool {
    !component.is_empty()
        && !component.starts_with('.')
        && !component.ends_with('.')
        && !component.ends_with(".lock")
        && !component.contains("..")
        && !component.contains("@{")
        && component != "@"
        && !component
            .chars()
            .any(|c| c.is_ascii_control() || " ~^:?*[\\/".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn readable_names_survive() {
        assert_eq!(sanitize_ref_component("auth-api"), "auth-api");
        assert_eq!(sanitize_ref_component("Auth API v2.1"), "auth-api-v2.1");
        assert_eq!(
            sanitize_ref_component("db/migrations: add users!"),
            "db-migrations-add-users"
        );
        assert_eq!(sanitize_ref_component("snake_case"), "snake_case");
    }

    #[test]
    fn invalid_shapes_are_repaired() {
        assert_eq!(sanitize_ref_component(""), "ws");
        assert_eq!(sanitize_ref_component("///"), "ws");
        assert_eq!(sanitize_ref_component(".hidden"), "hidden");
        assert_eq!(sanitize_ref_component("a..b"), "a-b");
        assert_eq!(sanitize_ref_component("x.lock"), "x");
        assert_eq!(sanitize_ref_component("x.lock.lock."), "x");
        assert_eq!(sanitize_ref_component("@{u}"), "u");
        assert_eq!(sanitize_ref_component("日本語"), "ws");
        assert_eq!(sanitize_ref_component(&"a".repeat(200)).len(), MAX_WORKSTREAM_LEN);
    }

    #[test]
    fn brief_branches_round_trip() {
        let (run, brief) = (RunId::new(), BriefId::new());
        let name = brief_branch_name(&run, "Auth API", &brief);
        assert_eq!(name, format!("agency/{}/auth-api/{}", run.short(), brief.whole()));
        assert_eq!(
            parse_brief_branch(&name),
            Some(BriefBranch {
                run8: run.short(),
                workstream: "auth-api".into(),
                brief: brief.whole().to_string()
            })
        );
        // A branch an earlier build made, with the brief's short id, is still one of agency's.
        let earlier = format!("agency/{}/auth-api/{}", run.short(), brief.short());
        assert_eq!(parse_brief_branch(&earlier).map(|b| b.brief), Some(brief.short()));
        assert_eq!(parse_brief_branch("main"), None);
        assert_eq!(parse_brief_branch("agency/notahex!/ws/0123abcd"), None);
        assert_eq!(parse_brief_branch("agency/0123abcd/ws/0123abcd/extra"), None);
        assert_eq!(parse_brief_branch("agency/0123abcd/ws/0123abcd0"), None);
        assert_eq!(parse_brief_branch("agency/0123abcd/work/integration"), None);
    }

    proptest! {
        #[test]
        fn sanitised_components_are_always_valid(text in any::<String>()) {
            let component = sanitize_ref_component(&text);
            prop_assert!(is_valid_ref_component(&component), "{:?} -> {:?}", text, component);
            prop_assert!(component.len() <= MAX_WORKSTREAM_LEN);
        }

        #[test]
        fn sanitising_is_idempotent(text in "[ -~]{0,60}") {
            let once = sanitize_ref_component(&text);
            prop_assert_eq!(sanitize_ref_component(&once), once);
        }
    }
}

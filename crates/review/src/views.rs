//! The seed's `[view …]` records of a workstream, one renderer per view for every surface: `agency show <run>
//! boundaries|assumptions|architecture <ws>`, the terminal `inspect` and the dashboard all show the text
//! [`render`] returns, and scripts get [`record_json`]. T2 writes the records: `boundaries/<ws>` (JSON: the
//! domain boundaries and the shared assumptions) and `architecture/<ws>` (markdown: the canonical
//! architecture).
//!
//! The records are agent-written. [`terminal_text`] keeps their escape sequences off a terminal; the dashboard
//! sets them as text nodes.

use agency_core::RunId;
use agency_store::{Blackboard, StoreError};
use serde::Serialize;
use serde_json::{Value, json};

use crate::architecture;

/// One of T2's views of a workstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// Who owns what (`boundaries/<ws>`).
    Boundaries,
    /// The conventions every specialist designs against (`boundaries/<ws>`).
    Assumptions,
    /// The canonical architecture (`architecture/<ws>`).
    Architecture,
}

impl View {
    /// Every view, in the seed's order.
    pub const ALL: [View; 3] = [View::Boundaries, View::Assumptions, View::Architecture];

    /// The seed's line for it.
    pub fn label(self) -> &'static str {
        match self {
            View::Boundaries => "[view domain boundaries]",
            View::Assumptions => "[view shared assumptions]",
            View::Architecture => "[view canonical architecture]",
        }
    }

    /// Its heading.
    pub fn heading(self) -> &'static str {
        match self {
            View::Boundaries => "Domain boundaries",
            View::Assumptions => "Shared assumptions",
            View::Architecture => "Canonical architecture",
        }
    }

    /// The artifact it is read from.
    pub fn artifact(self, workstream: &str) -> String {
        match self {
            View::Boundaries | View::Assumptions => architecture::boundaries_name(workstream),
            View::Architecture => architecture::architecture_name(workstream),
        }
    }
}

/// The newest record `view` of `workstream` is read from, as text, if T2 wrote one.
pub fn read(
    store: &dyn Blackboard,
    run: RunId,
    workstream: &str,
    view: View,
) -> Result<Option<String>, StoreError> {
    Ok(store
        .latest_artifact(run, &view.artifact(workstream))?
        .map(|a| String::from_utf8_lossy(&a.bytes).into_owned()))
}

/// `view` of `workstream` for a human: a heading naming the record, then its text (`record` is the
/// artifact's text, `None` when T2 has not written it). A `boundaries/<ws>` record that is not JSON is shown
/// as it is, after saying so.
pub fn render(view: View, workstream: &str, record: Option<&str>) -> String {
    let name = view.artifact(workstream);
    let Some(text) = record else {
        return format!("no {name} recorded yet: T2 writes it while it designs the workstream\n");
    };
    let body = match view {
        View::Architecture => format!("{}\n", text.trim_end()),
        View::Boundaries | View::Assumptions => match serde_json::from_str::<Value>(text) {
            Ok(value) if view == View::Boundaries => architecture::render_boundaries(&value),
            Ok(value) => architecture::render_assumptions(&value),
            Err(e) => format!("{name} is not JSON ({e}); as written:\n{}\n", text.trim_end()),
        },
    };
    format!("{} of {workstream} ({name})\n\n{body}", view.heading())
}

/// `view` of `workstream` for scripts: `{ view, workstream, artifact, record }`, where `record` is the part of
/// the artifact the view shows (the `boundaries` list, the `shared_assumptions` list, or the architecture's
/// markdown), `null` when T2 has not written it. A `boundaries/<ws>` record that is not JSON is an error
/// naming the artifact.
pub fn record_json(view: View, workstream: &str, record: Option<&str>) -> Result<Value, String> {
    let name = view.artifact(workstream);
    let part = match (view, record) {
        (_, None) => Value::Null,
        (View::Architecture, Some(text)) => Value::String(text.to_string()),
        (View::Boundaries | View::Assumptions, Some(text)) => {
            let value: Value = serde_json::from_str(text)
                .map_err(|e| format!("{name} is not JSON: {e} (expected the object T2 records)"))?;
            let field = if view == View::Boundaries {
                "boundaries"
            } else {
                "shared_assumptions"
            };
            value.get(field).cloned().unwrap_or(Value::Null)
        }
    };
    Ok(json!({ "view": view, "workstream": workstream, "artifact": name, "record": part }))
}

/// `text` safe to print on a terminal with its lines and tabs kept: an escape becomes `^[`, any other
/// control character or bidirectional override `�`. An agent-written string could otherwise move the cursor
/// or rewrite what the human sees.
pub fn terminal_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\x1b' => out.push_str("^["),
            '\n' | '\t' => out.push(c),
            c if c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') => {
                out.push('\u{fffd}');
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = r#"{ "boundaries": [{ "domain": "backend", "owns": ["api/"] }],
                              "shared_assumptions": ["UTC everywhere"] }"#;

    #[test]
    fn each_view_renders_its_part_of_the_record_under_a_heading() {
        assert_eq!(
            render(View::Boundaries, "ws-a", Some(RECORD)),
            "Domain boundaries of ws-a (boundaries/ws-a)\n\nbackend\n  owns      api/\n"
        );
        assert_eq!(
            render(View::Assumptions, "ws-a", Some(RECORD)),
            "Shared assumptions of ws-a (boundaries/ws-a)\n\n- UTC everywhere\n"
        );
        assert_eq!(
            render(View::Architecture, "ws-a", Some("# A\nOne service.\n\n")),
            "Canonical architecture of ws-a (architecture/ws-a)\n\n# A\nOne service.\n"
        );
        assert_eq!(
            render(View::Architecture, "ws-a", None),
            "no architecture/ws-a recorded yet: T2 writes it while it designs the workstream\n"
        );
    }

    #[test]
    fn a_record_that_is_not_json_is_shown_as_written_and_refused_as_json() {
        let shown = render(View::Boundaries, "ws-a", Some("owns: everything"));
        assert!(shown.contains("boundaries/ws-a is not JSON"), "{shown}");
        assert!(shown.ends_with("as written:\nowns: everything\n"), "{shown}");
        let refused = record_json(View::Boundaries, "ws-a", Some("owns: everything")).unwrap_err();
        assert!(refused.starts_with("boundaries/ws-a is not JSON"), "{refused}");
    }

    #[test]
    fn scripts_get_the_part_each_view_shows() {
        let json = record_json(View::Assumptions, "ws-a", Some(RECORD)).unwrap();
        assert_eq!(
            json,
            json!({ "view": "assumptions", "workstream": "ws-a", "artifact": "boundaries/ws-a",
                    "record": ["UTC everywhere"] })
        );
        let json = record_json(View::Boundaries, "ws-a", Some(RECORD)).unwrap();
        assert_eq!(json["record"][0]["domain"], "backend");
        let json = record_json(View::Architecture, "ws-a", None).unwrap();
        assert_eq!(json["record"], Value::Null);
    }

    #[test]
    fn terminal_text_keeps_lines_and_drops_escapes() {
        assert_eq!(terminal_text("a\u{1b}[2Jb\n\tc"), "a^[[2Jb\n\tc");
        assert_eq!(
            terminal_text("x\u{7}\u{9b}\u{202e}y\r"),
            "x\u{fffd}\u{fffd}\u{fffd}y\u{fffd}"
        );
    }
}

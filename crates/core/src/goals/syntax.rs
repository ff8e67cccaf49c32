//! One-line recognisers for plan.md. Each looks at a single line's content (its terminator already split
//! off) and says what the line is: a heading, a known `field: value`, a checkbox, a list item, an id marker,
//! a code fence. The scanner strings them together; byte ranges they return are what the patcher edits, so a
//! patch touches exactly the bytes the scanner read.
//!
//! Everything here is deliberately forgiving about case, spacing and light markdown decoration (`**status:**`,
//! backticks), because plans are written by models and people whose wording drifts; pi-goals replaced its
//! strict parser for exactly that reason.

use std::ops::Range;

/// One physical line of the source: its content and the terminator that followed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceLine {
    pub content: String,
    pub ending: LineEnding,
}

/// How a line was terminated in the source; kept so patches write back the same bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineEnding {
    Lf,
    CrLf,
    /// The last line of a file without a final newline.
    Missing,
}

impl LineEnding {
    pub fn as_str(self) -> &'static str {
        match self {
            LineEnding::Lf => "\n",
            LineEnding::CrLf => "\r\n",
            LineEnding::Missing => "",
        }
    }
}

/// Splits text into lines so that concatenating `content + ending` of every line gives the text back.
pub(crate) fn split_lines(text: &str) -> Vec<SourceLine> {
    text.split_inclusive('\n')
        .map(|piece| {
            if let Some(content) = piece.strip_suffix("\r\n") {
                SourceLine {
                    content: content.to_string(),
                    ending: LineEnding::CrLf,
                }
            } else if let Some(content) = piece.strip_suffix('\n') {
                SourceLine {
                    content: content.to_string(),
                    ending: LineEnding::Lf,
                }
            } else {
                SourceLine {
                    content: piece.to_string(),
                    ending: LineEnding::Missing,
                }
            }
        })
        .collect()
}

/// An ATX heading (`## Goal: x`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Heading<'a> {
    pub level: usize,
    pub text: &'a str,
}

pub(crate) fn heading(line: &str) -> Option<Heading<'_>> {
    let rest = line.trim_start_matches(' ');
    // Four spaces of indent make an indented code block in markdown, not a heading.
    if line.len() - rest.len() > 3 {
        return None;
    }
    let level = rest.len() - rest.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !after.is_empty() && !after.starts_with([' ', '\t']) {
        return None;
    }
    let mut text = after.trim();
    // An optional closing run of `#` is decoration, but only when separated by a space (`C#` is a word).
    let without_closing = text.trim_end_matches('#');
    if without_closing.is_empty() || without_closing.ends_with([' ', '\t']) {
        text = without_closing.trim_end();
    }
    Some(Heading { level, text })
}

/// The title of a goal heading: `Goal: x`, `goal : x`, `Goal 2: x`, `Goal #2: x`, or a bare `Goal`.
pub(crate) fn goal_title(heading_text: &str) -> Option<&str> {
    let rest = strip_prefix_ignore_case(heading_text, "goal")?;
    let rest = rest.trim_start();
    if rest.is_empty() {
        return Some("");
    }
    // An optional goal number between the word and the colon.
    let rest = rest.strip_prefix('#').unwrap_or(rest);
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
    rest.strip_prefix(':').map(str::trim)
}

/// Whether a heading opens the log section (`## Log`, `## log:`).
pub(crate) fn is_log_heading(heading_text: &str) -> bool {
    heading_text
        .trim_end_matches(':')
        .trim()
        .eq_ignore_ascii_case("log")
}

/// The objective of a `# Plan: objective` heading.
pub(crate) fn plan_objective(heading_text: &str) -> Option<&str> {
    let rest = strip_prefix_ignore_case(heading_text, "plan")?.trim_start();
    rest.strip_prefix(':').map(str::trim)
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// The goal fields the scanner knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldKey {
    Status,
    DoneWhen,
    Verify,
    FailureModes,
    MayEdit,
}

impl FieldKey {
    pub fn name(self) -> &'static str {
        match self {
            FieldKey::Status => "status",
            FieldKey::DoneWhen => "done_when",
            FieldKey::Verify => "verify",
            FieldKey::FailureModes => "failure_modes",
            FieldKey::MayEdit => "may_edit",
        }
    }

    fn from_normalised(key: &str) -> Option<FieldKey> {
        Some(match key {
            "status" => FieldKey::Status,
            "done_when" => FieldKey::DoneWhen,
            "verify" => FieldKey::Verify,
            "failure_modes" | "failure_mode" => FieldKey::FailureModes,
            "may_edit" => FieldKey::MayEdit,
            _ => return None,
        })
    }
}

/// A `field: value` line naming a known field, with the byte range of its value in the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldLine {
    pub key: FieldKey,
    pub value: Range<usize>,
}

/// Reads `status: active`, `Done when: …`, `**verify:** …`, `` verify: `cmd` `` and the like. Keys are matched
/// without regard to case, and spaces or dashes stand for underscores. List items are never fields, so a
/// failure mode that happens to start with `verify:` stays a failure mode.
pub(crate) fn field_line(line: &str) -> Option<FieldLine> {
    let body = line.trim_start();
    if bullet(line).is_some() || body.starts_with(['#', '>', '|', '<']) {
        return None;
    }
    let colon = line.find(':')?;
    let raw_key = line[..colon].trim();
    let bold = raw_key.starts_with("**");
    let key: String = raw_key
        .trim_matches(|c| c == '*' || c == '`')
        .trim()
        .chars()
        .map(|c| {
            if c == ' ' || c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    let key = FieldKey::from_normalised(&key)?;

    let mut start = colon + 1;
    if bold {
        // `**status:** active`: the closing stars belong to the key, not the value.
        start += line[start..].len() - line[start..].trim_start_matches('*').len();
    }
    start += line[start..].len() - line[start..].trim_start().len();
    let mut end = start + line[start..].trim_end().len();
    // One pair of backticks around the value is decoration; the patcher keeps it.
    let value = &line[start..end];
    if value.len() >= 2 && value.starts_with('`') && value.ends_with('`') {
        start += 1;
        end -= 1;
    }
    Some(FieldLine {
        key,
        value: start..end,
    })
}

/// A list item (`- x`, `* x`, `+ x`): the byte range of its text.
pub(crate) fn bullet(line: &str) -> Option<Range<usize>> {
    let body = line.trim_start();
    let indent = line.len() - body.len();
    let mut chars = body.chars();
    let marker = chars.next()?;
    if !matches!(marker, '-' | '*' | '+') {
        return None;
    }
    let after = &body[1..];
    if !after.is_empty() && !after.starts_with([' ', '\t']) {
        return None;
    }
    let start = indent + 1 + (after.len() - after.trim_start().len());
    Some(start..start + after.trim().len())
}

/// What a line that looks like a checkbox turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Checkbox {
    /// `- [ ] text` or `- [x] text`; `mark` is the byte offset of the character between the brackets.
    Valid {
        checked: bool,
        mark: usize,
        text: Range<usize>,
    },
    /// Meant as a checkbox but not one the patcher can tick safely (`- [] x`, `-[x] y`, `- [ ]`).
    Malformed,
}

/// Recognises subtask checkboxes. A list item whose text opens with brackets holding at most one visible
/// character (`[]`, `[ x ]`, `[y]`) is taken as an attempt at one; a link (`- [text](url)`) or a tag
/// (`- [WIP] x`) is not.
pub(crate) fn checkbox(line: &str) -> Option<Checkbox> {
    let body = line.trim_start();
    let indent = line.len() - body.len();
    let marker_len = list_marker_len(body)?;
    let after_marker = &body[marker_len..];
    let gap = after_marker.len() - after_marker.trim_start().len();
    let open = indent + marker_len + gap;
    let rest = line[open..].strip_prefix('[')?;
    let close = rest
        .char_indices()
        .take(8)
        .find(|&(_, c)| c == ']')
        .map(|(i, _)| i)?;
    let inner = &rest[..close];
    let after = &rest[close + 1..];
    if inner.trim().chars().count() > 1 || after.starts_with(['(', '[', ':']) {
        return None;
    }
    let text = after.trim();
    let checked = match inner {
        " " => false,
        "x" | "X" => true,
        _ => return Some(Checkbox::Malformed),
    };
    let spaced = after.starts_with([' ', '\t']);
    if gap == 0 || !spaced || text.is_empty() {
        return Some(Checkbox::Malformed);
    }
    let text_start = open + 2 + close + (after.len() - after.trim_start().len());
    Some(Checkbox::Valid {
        checked,
        mark: open + 1,
        text: text_start..text_start + text.len(),
    })
}

/// The length of a list marker at the start of `body`: `-`, `*`, `+`, or `1.` / `1)`.
fn list_marker_len(body: &str) -> Option<usize> {
    if body.starts_with(['-', '*', '+']) {
        return Some(1);
    }
    let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    (digits > 0 && body[digits..].starts_with(['.', ')'])).then_some(digits + 1)
}

/// What an HTML comment line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdMarker<'a> {
    /// `<!-- id: x -->` (the value may be empty or malformed; the scanner judges it).
    Explicit(&'a str),
    /// `<!-- x -->`: a single token, taken as the id only right under the heading.
    Bare(&'a str),
}

pub(crate) fn id_marker(line: &str) -> Option<IdMarker<'_>> {
    let inner = line.trim().strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    if let Some(rest) = strip_prefix_ignore_case(inner, "id") {
        let rest = rest.trim_start();
        if let Some(value) = rest.strip_prefix([':', '=']) {
            return Some(IdMarker::Explicit(value.trim()));
        }
    }
    (!inner.is_empty() && !inner.contains(char::is_whitespace)).then_some(IdMarker::Bare(inner))
}

/// Whether an id can be written inside `<!-- id: … -->` and read back unchanged.
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty() && !id.contains(|c: char| c.is_whitespace() || c == '<' || c == '>') && !id.contains("--")
}

/// A code fence opener or closer (`` ``` ``, `~~~`): returns the fence's marker.
pub(crate) fn fence(line: &str) -> Option<&'static str> {
    let body = line.trim_start();
    if line.len() - body.len() > 3 {
        return None;
    }
    if body.starts_with("```") {
        Some("```")
    } else if body.starts_with("~~~") {
        Some("~~~")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings() {
        assert_eq!(
            heading("## Goal: x"),
            Some(Heading {
                level: 2,
                text: "Goal: x"
            })
        );
        assert_eq!(heading("### C# ##"), Some(Heading { level: 3, text: "C#" }));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("    ## code"), None);
        assert_eq!(heading("####### seven"), None);
        assert_eq!(goal_title("Goal: Implement cache"), Some("Implement cache"));
        assert_eq!(goal_title("goal 2 : x"), Some("x"));
        assert_eq!(goal_title("GOAL #3: y"), Some("y"));
        assert_eq!(goal_title("Goal"), Some(""));
        assert_eq!(goal_title("Goals"), None);
        assert_eq!(goal_title("Goal-setting notes"), None);
        assert!(is_log_heading("Log"));
        assert!(is_log_heading("log:"));
        assert!(!is_log_heading("Logging"));
        assert_eq!(plan_objective("Plan: ship it"), Some("ship it"));
    }

    #[test]
    fn field_lines_tolerate_case_spacing_and_decoration() {
        let cases = [
            ("status: active", FieldKey::Status, "active"),
            ("Status :  Active  ", FieldKey::Status, "Active"),
            ("**status:** done", FieldKey::Status, "done"),
            ("**Status**: done", FieldKey::Status, "done"),
            (
                "Done when: it works: really",
                FieldKey::DoneWhen,
                "it works: really",
            ),
            ("done-when: x", FieldKey::DoneWhen, "x"),
            ("verify: `cargo test`", FieldKey::Verify, "cargo test"),
            ("  verify:", FieldKey::Verify, ""),
            ("Failure modes:", FieldKey::FailureModes, ""),
            ("may_edit: a, b", FieldKey::MayEdit, "a, b"),
        ];
        for (line, key, value) in cases {
            let f = field_line(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!((f.key, &line[f.value]), (key, value), "{line}");
        }
        assert_eq!(field_line("- verify: nope"), None);
        assert_eq!(field_line("owner: bob"), None);
        assert_eq!(field_line("no colon"), None);
    }

    #[test]
    fn checkboxes() {
        let Some(Checkbox::Valid { checked, mark, text }) = checkbox("  - [x] wire it") else {
            panic!("valid")
        };
        assert!(checked);
        assert_eq!(mark, 5);
        assert_eq!(&"  - [x] wire it"[text], "wire it");
        assert!(matches!(
            checkbox("* [ ] a"),
            Some(Checkbox::Valid { checked: false, .. })
        ));
        assert!(matches!(
            checkbox("1. [X] a"),
            Some(Checkbox::Valid { checked: true, .. })
        ));
        for bad in [
            "- [] a",
            "- [ x] a",
            "- [ x ] a",
            "-[ ] a",
            "- [y] a",
            "- [ ]",
            "- [x]a",
        ] {
            assert_eq!(checkbox(bad), Some(Checkbox::Malformed), "{bad}");
        }
        for not in [
            "- plain",
            "- [link](http://x)",
            "- [ref]: x",
            "text [ ] x",
            "- [a long bracket] x",
            "- [WIP] x",
        ] {
            assert_eq!(checkbox(not), None, "{not}");
        }
    }

    #[test]
    fn id_markers() {
        assert_eq!(
            id_marker("<!-- id: cache-1 -->"),
            Some(IdMarker::Explicit("cache-1"))
        );
        assert_eq!(id_marker("<!--id=x-->"), Some(IdMarker::Explicit("x")));
        assert_eq!(id_marker("<!-- id: -->"), Some(IdMarker::Explicit("")));
        assert_eq!(id_marker("<!-- cache-1 -->"), Some(IdMarker::Bare("cache-1")));
        assert_eq!(id_marker("<!-- a note -->"), None);
        assert!(valid_id("cache-layer-1"));
        assert!(!valid_id("a b"));
        assert!(!valid_id("a-->"));
    }

    #[test]
    fn lines_round_trip() {
        for text in ["", "a", "a\n", "a\r\nb", "a\r\n\r\nb\n", "\r", "x\ry\n"] {
            let joined: String = split_lines(text)
                .iter()
                .map(|l| format!("{}{}", l.content, l.ending.as_str()))
                .collect();
            assert_eq!(joined, text);
        }
    }
}

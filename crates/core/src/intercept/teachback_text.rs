//! Reading a teachback out of a message. Agents send it as seed 003's bullet list (one `- Field: value`
//! line per field, list fields separated by `;`) under a `Teachback:` header, or as the JSON of a
//! [`Teachback`]. A message is a teachback when its first non-blank line says `Teachback:` (after an
//! optional `[sender→lead]` tag) or when it is such JSON.

use serde_json::Value;

use crate::teachback::Teachback;

/// How to write a teachback, quoted in denials so the agent can copy the shape.
pub const FORMAT_HINT: &str = "Format: \"Teachback:\" then one line each for \"- Building:\", \
\"- Key constraints:\" (separate items with ;), \"- Interfaces:\", \"- Approach:\", \
\"- Most likely wrong:\", \"- Least confident:\" and optionally \"- Files:\" (the files you will touch, \
separated by ;) and \"- First action:\".";

/// `None` when `text` is not a teachback; otherwise the teachback, or the list of required fields it left
/// empty (as one readable string).
pub fn parse(text: &str) -> Option<Result<Teachback, String>> {
    let teachback = if let Some(json) = json_teachback(text) {
        json
    } else {
        bullets(text)?
    };
    Some(
        teachback
            .validate()
            .map(|()| teachback.clone())
            .map_err(|err| err.missing.join(", ") + " must not be empty"),
    )
}

fn json_teachback(text: &str) -> Option<Teachback> {
    let value: Value = serde_json::from_str(text.trim()).ok()?;
    let inner = value.get("teachback").unwrap_or(&value);
    inner.get("building")?;
    // A JSON teachback with a field missing still counts as a teachback: fill what is there so
    // `validate` can say what is missing rather than the message being treated as chatter.
    let text = |key: &str| {
        inner
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let list = |key: &str| match inner.get(key) {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(String::from).collect(),
        Some(Value::String(s)) => split_list(s),
        _ => Vec::new(),
    };
    Some(Teachback {
        building: text("building"),
        key_constraints: list("key_constraints"),
        interfaces: list("interfaces"),
        files: list("files"),
        approach: text("approach"),
        most_likely_wrong: text("most_likely_wrong"),
        least_confident: text("least_confident"),
        first_action: inner
            .get("first_action")
            .and_then(Value::as_str)
            .map(String::from),
    })
}

fn is_header(line: &str) -> bool {
    let mut rest = line.trim();
    // `[backend-coder→lead] Teachback:` (seed 003's tag).
    if rest.starts_with('[')
        && let Some(end) = rest.find(']')
    {
        rest = rest[end + 1..].trim_start();
    }
    let lower = rest.to_ascii_lowercase();
    lower.starts_with("teachback:") || lower.starts_with("**teachback") || lower == "teachback"
}

fn bullets(text: &str) -> Option<Teachback> {
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    if !is_header(lines.next()?) {
        return None;
    }
    let mut teachback = Teachback::default();
    for line in lines {
        let line = line.trim().trim_start_matches(['-', '*', '•']).trim();
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key
            .trim()
            .trim_matches('*')
            .trim()
            .to_ascii_lowercase()
            .replace(['_', '-'], " ");
        let value = value.trim().trim_start_matches('*').trim().to_string();
        match key.as_str() {
            "building" => teachback.building = value,
            "key constraints" | "constraints" => teachback.key_constraints = split_list(&value),
            "interfaces" => teachback.interfaces = split_list(&value),
            "files" => teachback.files = split_list(&value),
            "approach" => teachback.approach = value,
            "most likely wrong" => teachback.most_likely_wrong = value,
            "least confident" | "least sure" => teachback.least_confident = value,
            "first action" => teachback.first_action = Some(value).filter(|v| !v.is_empty()),
            _ => {}
        }
    }
    Some(teachback)
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty() && !s.eq_ignore_ascii_case("none"))
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "[coder→lead] Teachback:\n- Building: a retrying queue client\n\
        - Key constraints: at-least-once; no new deps\n- Interfaces: QueueClient::send\n\
        - Approach: wrap with backoff\n- Most likely wrong: per-message retries\n\
        - Least confident: the ceiling\n- First action: read src/queue.rs";

    #[test]
    fn reads_the_bullet_format() {
        let tb = parse(GOOD).unwrap().unwrap();
        assert_eq!(tb.building, "a retrying queue client");
        assert_eq!(tb.key_constraints, vec!["at-least-once", "no new deps"]);
        assert_eq!(tb.first_action.as_deref(), Some("read src/queue.rs"));
    }

    #[test]
    fn reads_its_own_rendering() {
        let tb = parse(GOOD).unwrap().unwrap();
        let again = parse(&format!("Teachback:\n{tb}")).unwrap().unwrap();
        assert_eq!(again, tb);
    }

    #[test]
    fn reads_the_files_it_will_touch_in_either_format_and_its_own_rendering() {
        let text = format!("{GOOD}\n- Files: src/queue.rs; src/retry/");
        let tb = parse(&text).unwrap().unwrap();
        assert_eq!(tb.files, ["src/queue.rs", "src/retry/"]);
        let again = parse(&format!("Teachback:\n{tb}")).unwrap().unwrap();
        assert_eq!(again, tb);
        let json = serde_json::json!({"building": "b", "key_constraints": ["k"], "approach": "a",
            "most_likely_wrong": "w", "least_confident": "l", "files": ["add.sh"]});
        assert_eq!(parse(&json.to_string()).unwrap().unwrap().files, ["add.sh"]);
    }

    #[test]
    fn reads_json() {
        let json = serde_json::json!({"teachback": {"building": "b", "key_constraints": ["k"],
            "approach": "a", "most_likely_wrong": "w", "least_confident": "l"}});
        assert!(parse(&json.to_string()).unwrap().is_ok());
    }

    #[test]
    fn a_rote_teachback_names_what_is_missing() {
        let err = parse("Teachback: I understand, proceeding.\n- Building: x")
            .unwrap()
            .unwrap_err();
        assert_eq!(
            err,
            "key_constraints, approach, most_likely_wrong, least_confident must not be empty"
        );
    }

    #[test]
    fn other_messages_are_not_teachbacks() {
        for text in [
            "hello",
            "",
            "Done. Teachback: later",
            "{\"type\":\"shutdown_request\"}",
            "[x] hi",
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
    }
}

//! Comparing a live request with the recorded one: both normalised (roots, run ids, UUIDs, object ids,
//! timestamps, durations), then the first difference as a short diff.

use serde_json::Value;

/// Normalises every string in `value`: `substitutions` first, then UUIDs, object ids and timestamps.
pub(crate) fn normalise(value: &mut Value, substitutions: &[(String, &'static str)]) {
    match value {
        Value::String(text) => {
            let mut out = text.clone();
            for (from, to) in substitutions {
                if out.contains(from.as_str()) {
                    out = out.replace(from.as_str(), to);
                }
            }
            *text = patterns().iter().fold(out, |acc, (pattern, to)| {
                pattern.replace_all(&acc, *to).into_owned()
            });
        }
        Value::Array(items) => items.iter_mut().for_each(|i| normalise(i, substitutions)),
        Value::Object(map) => map.values_mut().for_each(|v| normalise(v, substitutions)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn patterns() -> &'static [(regex::Regex, &'static str)] {
    static PATTERNS: std::sync::OnceLock<Vec<(regex::Regex, &'static str)>> = std::sync::OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            (
                r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
                "<uuid>",
            ),
            (r"\b[0-9a-f]{40}\b", "<sha>"),
            (r"\b[0-9a-f]{32}\b", "<uuid>"),
            (
                r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?\b",
                "<time>",
            ),
            // How long a command took, in the verify results a judge is shown.
            (r"\b\d+(\.\d+)?(ms|s)\b", "<duration>"),
        ]
        .into_iter()
        // The patterns are constants; one that did not compile would only normalise less.
        .filter_map(|(pattern, to)| regex::Regex::new(pattern).ok().map(|r| (r, to)))
        .collect()
    })
}

/// Where `then` (recorded) and `now` (live) first differ, as a short diff; `None` when they are equal.
pub(crate) fn first_difference(path: &str, then: &Value, now: &Value) -> Option<String> {
    match (then, now) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (a.get(k), b.get(k)) {
                (Some(x), Some(y)) => first_difference(&format!("{path}.{k}"), x, y),
                (x, y) => Some(format!(
                    "  {path}.{k}:\n  - recorded: {}\n  + now:      {}",
                    short_json(x),
                    short_json(y)
                )),
            })
        }
        (Value::Array(a), Value::Array(b)) => {
            if let Some(diff) = a
                .iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| first_difference(&format!("{path}[{i}]"), x, y))
            {
                return Some(diff);
            }
            (a.len() != b.len()).then(|| {
                let extra = a.get(b.len()).or_else(|| b.get(a.len()));
                format!(
                    "  {path}: {} items recorded, {} now; the first unmatched: {}",
                    a.len(),
                    b.len(),
                    short_json(extra)
                )
            })
        }
        (Value::String(a), Value::String(b)) if a != b => Some(text_difference(path, a, b)),
        (a, b) if a != b => Some(format!(
            "  {path}:\n  - recorded: {}\n  + now:      {}",
            short_json(Some(a)),
            short_json(Some(b))
        )),
        _ => None,
    }
}

/// The first differing line of two texts, with the line before it.
fn text_difference(path: &str, then: &str, now: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (then.lines().collect(), now.lines().collect());
    let line = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let mut out = format!("  {path}, line {}:", line + 1);
    if let Some(before) = line.checked_sub(1).and_then(|i| a.get(i)) {
        out.push_str(&format!("\n    {}", clip(before)));
    }
    out.push_str(&format!(
        "\n  - recorded: {}\n  + now:      {}",
        a.get(line).map_or("(no such line)".into(), |l| clip(l)),
        b.get(line).map_or("(no such line)".into(), |l| clip(l)),
    ));
    out
}

fn clip(text: &str) -> String {
    const MAX: usize = 160;
    if text.chars().count() <= MAX {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

fn short_json(value: Option<&Value>) -> String {
    match value {
        None => "(absent)".into(),
        Some(v) => clip(&v.to_string()),
    }
}

//! T2's records of a workstream for the human who reviews them: the domain boundaries and shared assumptions
//! the lead drew (`boundaries/<ws>`, JSON) and the canonical architecture it synthesised
//! (`architecture/<ws>`, markdown). The seed's `[view domain boundaries]`, `[view shared assumptions]` and
//! `[view canonical architecture]`.

use std::fmt::Write;

use serde_json::Value;

/// The artifact holding a workstream's boundaries and shared assumptions.
pub fn boundaries_name(workstream: &str) -> String {
    format!("boundaries/{workstream}")
}

/// The artifact holding a workstream's canonical architecture.
pub fn architecture_name(workstream: &str) -> String {
    format!("architecture/{workstream}")
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Each domain with what it owns and what it must not touch, from a `boundaries/<ws>` record.
pub fn render_boundaries(record: &Value) -> String {
    let mut out = String::new();
    let domains = record.get("boundaries").and_then(Value::as_array);
    let Some(domains) = domains.filter(|d| !d.is_empty()) else {
        return "no domain boundaries recorded\n".into();
    };
    for domain in domains {
        let name = domain.get("domain").and_then(Value::as_str).unwrap_or("?");
        let _ = writeln!(out, "{name}");
        let owns = strings(&domain["owns"]);
        let _ = writeln!(
            out,
            "  owns      {}",
            if owns.is_empty() {
                "nothing named".into()
            } else {
                owns.join(", ")
            }
        );
        let excludes = strings(&domain["excludes"]);
        if !excludes.is_empty() {
            let _ = writeln!(out, "  excludes  {}", excludes.join(", "));
        }
    }
    out
}

/// The conventions every specialist designs against, from a `boundaries/<ws>` record.
pub fn render_assumptions(record: &Value) -> String {
    let assumptions = strings(&record["shared_assumptions"]);
    if assumptions.is_empty() {
        return "no shared assumptions recorded\n".into();
    }
    assumptions.iter().map(|a| format!("- {a}\n")).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn boundaries_and_assumptions_read_as_lists() {
        let record = json!({
            "boundaries": [
                { "domain": "backend", "owns": ["api/", "db/"], "excludes": ["infra/"] },
                { "domain": "infra", "owns": [] }
            ],
            "shared_assumptions": ["UTC everywhere", "JSON over HTTP"]
        });
        assert_eq!(
            render_boundaries(&record),
            "backend\n  owns      api/, db/\n  excludes  infra/\ninfra\n  owns      nothing named\n"
        );
        assert_eq!(
            render_assumptions(&record),
            "- UTC everywhere\n- JSON over HTTP\n"
        );
        assert_eq!(render_boundaries(&json!({})), "no domain boundaries recorded\n");
        assert_eq!(render_assumptions(&json!([])), "no shared assumptions recorded\n");
    }
}

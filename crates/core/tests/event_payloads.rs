//! Typed event payloads read the blackboards written before they were typed: every event of a run made by
//! `agency demo` (dumped from its SQLite blackboard before the writers were typed), and one payload of every
//! writer's variant (copied from the writers' `json!` as they were). Each reads back as its kind's type
//! and writes back the same JSON, bar `null`s of fields it leaves out where absent.

#![allow(clippy::unwrap_used)]

use agency_core::EventKind;
use agency_core::event::payload::EventPayload;
use serde_json::Value;

fn fixture(name: &str) -> Vec<(EventKind, Value)> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let events: Vec<Value> = serde_json::from_str(&text).unwrap();
    events
        .into_iter()
        .map(|e| (e["kind"].as_str().unwrap().parse().unwrap(), e["payload"].clone()))
        .collect()
}

/// `value` without its `null` object members, at any depth.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

fn reads_back(name: &str) -> Vec<EventKind> {
    let mut kinds = Vec::new();
    for (kind, stored) in fixture(name) {
        let typed =
            EventPayload::decode(kind, &stored).unwrap_or_else(|e| panic!("{name}: {kind} {stored}: {e}"));
        assert_eq!(typed.kind(), kind);
        assert_eq!(
            without_nulls(&typed.encode()),
            without_nulls(&stored),
            "{name}: a {kind} payload changed on its way through its type"
        );
        kinds.push(kind);
    }
    kinds
}

#[test]
fn a_demo_run_made_before_typing_reads_back_typed() {
    let kinds = reads_back("demo-events.json");
    assert_eq!(kinds.len(), 79);
}

#[test]
fn every_writer_variant_reads_back_typed_and_every_kind_is_covered() {
    let mut kinds = reads_back("demo-events.json");
    kinds.extend(reads_back("writer-variants.json"));
    for kind in EventKind::ALL {
        assert!(kinds.contains(kind), "no fixture payload of kind {kind}");
    }
}

#[test]
fn the_usage_record_reads_its_cost_and_a_renamed_key_is_not_a_cost() {
    let stored = serde_json::json!({
        "model": "m", "provider": "p", "input_tokens": 7, "output_tokens": 3,
        "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": 0.5,
    });
    let Ok(EventPayload::Usage(usage)) = EventPayload::decode(EventKind::Usage, &stored) else {
        panic!("a usage payload reads as usage");
    };
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.cost_usd),
        (7, 3, Some(0.5))
    );
}

#[test]
fn a_field_of_the_wrong_type_is_an_error_naming_the_kind_and_the_field() {
    let stored = serde_json::json!({ "model": "m", "input_tokens": "seven" });
    let err = EventPayload::decode(EventKind::Usage, &stored).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("usage"), "{text}");
    assert!(text.contains("invalid type"), "{text}");
}

#[test]
fn unknown_fields_are_ignored_and_missing_ones_default() {
    let stored = serde_json::json!({ "level": "normal", "message": "hi", "added_later": [1, 2] });
    let Ok(EventPayload::Log(line)) = EventPayload::decode(EventKind::Log, &stored) else {
        panic!("a log payload reads as a log line");
    };
    assert_eq!(
        (line.level.as_str(), line.message.as_str(), line.tag),
        ("normal", "hi", None)
    );
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Issue 26's rule: an event's payload is read through its type (`event.typed()`), never by a string key
/// that a rename would silently turn into a missing value. Scans every crate's library and binary code
/// (not `#[cfg(test)]` modules, which assert on the JSON written).
#[test]
fn no_library_code_reads_an_event_payload_by_string_key() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    assert!(
        files.len() > 100,
        "the scan found only {} files under {}",
        files.len(),
        crates.display()
    );
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            if line.contains("payload[\"") || line.contains("payload.get(\"") {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "payloads read by string key:\n{}",
        found.join("\n")
    );
}

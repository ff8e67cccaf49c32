//! The built-in agent's tools as the model sees them: names, descriptions and JSON Schemas. The set is
//! fixed per [`Toolset`] and built once per agent, so the tool list (part of the cached prompt prefix) is
//! byte-identical on every turn.

use serde_json::{Value, json};

use agency_llm::ToolSpec;

use crate::runtime::Access;

/// Which tools an agent is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toolset {
    /// Read, list, grep, report and raise a signal: planners, judges and reviewers.
    ReadOnly,
    /// Everything: implementers, subject to the teachback gate.
    ReadWrite,
    /// Read, list, grep, submit the teachback (and report or signal when it cannot): the read-only first
    /// step that gets a teachback approved before an ungated agent is started.
    Teachback,
}

impl From<Access> for Toolset {
    fn from(access: Access) -> Self {
        match access {
            Access::ReadOnly => Toolset::ReadOnly,
            Access::ReadWrite => Toolset::ReadWrite,
        }
    }
}

/// One built-in tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// Read a file, optionally a line range.
    ReadFile,
    /// List files under a directory, optionally filtered by a glob.
    ListFiles,
    /// Search file contents with a regex.
    Grep,
    /// Replace one exact, unique string in a file.
    EditFile,
    /// Create or overwrite a file.
    WriteFile,
    /// Run a program (argv, no shell).
    RunCommand,
    /// Send the teachback for review.
    SubmitTeachback,
    /// Report the result; ends the agent.
    ReportResult,
    /// Raise an algedonic HALT or ALERT; ends the agent.
    RaiseSignal,
    /// Propose a different tier path for the workstream; informational, decided at the next human gate.
    ProposePathAmendment,
}

impl Tool {
    /// Every tool, in the order they are offered.
    pub const ALL: [Tool; 10] = [
        Tool::ReadFile,
        Tool::ListFiles,
        Tool::Grep,
        Tool::EditFile,
        Tool::WriteFile,
        Tool::RunCommand,
        Tool::SubmitTeachback,
        Tool::ReportResult,
        Tool::RaiseSignal,
        Tool::ProposePathAmendment,
    ];

    /// The name the model calls it by.
    pub fn name(self) -> &'static str {
        match self {
            Tool::ReadFile => "read_file",
            Tool::ListFiles => "list_files",
            Tool::Grep => "grep",
            Tool::EditFile => "edit_file",
            Tool::WriteFile => "write_file",
            Tool::RunCommand => "run_command",
            Tool::SubmitTeachback => "submit_teachback",
            Tool::ReportResult => "report_result",
            Tool::RaiseSignal => "raise_signal",
            Tool::ProposePathAmendment => "propose_path_amendment",
        }
    }

    /// The tool called `name`.
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether the tool changes nothing in the worktree (what the gate lets through before approval).
    pub fn read_only(self) -> bool {
        matches!(
            self,
            Tool::ReadFile
                | Tool::ListFiles
                | Tool::Grep
                | Tool::SubmitTeachback
                | Tool::ReportResult
                | Tool::RaiseSignal
                | Tool::ProposePathAmendment
        )
    }

    /// Whether an agent with `set` is offered this tool.
    pub fn offered(self, set: Toolset) -> bool {
        let reads = matches!(
            self,
            Tool::ReadFile | Tool::ListFiles | Tool::Grep | Tool::ReportResult
        );
        // Every agent can raise a signal: a reader (a planner, a judge) that finds a security, data or ethics
        // problem must be able to HALT the run as well as a writer can.
        // Every tier may propose a different path for its workstream (seed 001): a planner, a squad lead or
        // an implementer alike. Not in the teachback step, which only restates the task.
        match set {
            Toolset::ReadWrite => true,
            Toolset::ReadOnly => reads || matches!(self, Tool::RaiseSignal | Tool::ProposePathAmendment),
            Toolset::Teachback => reads || matches!(self, Tool::SubmitTeachback | Tool::RaiseSignal),
        }
    }

    /// The tools offered for `set`.
    pub fn offered_for(set: impl Into<Toolset>) -> Vec<Tool> {
        let set = set.into();
        Tool::ALL.into_iter().filter(|t| t.offered(set)).collect()
    }

    /// The spec sent to the model.
    pub fn spec(self) -> ToolSpec {
        let (description, schema) = match self {
            Tool::ReadFile => (
                "Read a text file in the worktree. Lines come numbered (`   12\\t...`); the numbers are not part \
                 of the file. Use `offset` (first line, from 1) and `limit` (line count) for large files.",
                object(
                    json!({
                        "path": {"type": "string", "description": "Path relative to the worktree."},
                        "offset": {"type": "integer", "minimum": 1},
                        "limit": {"type": "integer", "minimum": 1}
                    }),
                    &["path"],
                ),
            ),
            Tool::ListFiles => (
                "List files under a directory of the worktree (recursively, respecting .gitignore), optionally \
                 only those matching a glob such as `src/**/*.rs`.",
                object(
                    json!({
                        "path": {"type": "string", "description": "Directory; default the worktree root."},
                        "glob": {"type": "string"}
                    }),
                    &[],
                ),
            ),
            Tool::Grep => (
                "Search file contents with a regular expression (Rust regex syntax), respecting .gitignore. \
                 Returns `path:line: text` for each matching line.",
                object(
                    json!({
                        "pattern": {"type": "string"},
                        "path": {"type": "string", "description": "File or directory; default the worktree root."},
                        "glob": {"type": "string", "description": "Only files matching this glob."},
                        "case_insensitive": {"type": "boolean"}
                    }),
                    &["pattern"],
                ),
            ),
            Tool::EditFile => (
                "Replace an exact string in a file. `old_string` must match the file byte for byte (copy it \
                 from read_file without the line numbers) and occur exactly once, unless `replace_all` is set.",
                object(
                    json!({
                        "path": {"type": "string"},
                        "old_string": {"type": "string"},
                        "new_string": {"type": "string"},
                        "replace_all": {"type": "boolean"}
                    }),
                    &["path", "old_string", "new_string"],
                ),
            ),
            Tool::WriteFile => (
                "Create a file, or overwrite one, with the given content. Parent directories are created.",
                object(
                    json!({"path": {"type": "string"}, "content": {"type": "string"}}),
                    &["path", "content"],
                ),
            ),
            Tool::RunCommand => (
                "Run a program in the worktree without a shell: `argv` is the program and its arguments \
                 (no pipes, redirections or variable expansion). Returns the exit status and the tail of \
                 stdout and stderr.",
                object(
                    json!({
                        "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                        "cwd": {"type": "string", "description": "Directory relative to the worktree."},
                        "timeout_secs": {"type": "integer", "minimum": 1}
                    }),
                    &["argv"],
                ),
            ),
            Tool::SubmitTeachback => (
                "Send your teachback (your restatement of the task) for review. Returns `approved` or the \
                 corrections to address before resubmitting.",
                object(
                    json!({
                        "building": {"type": "string"},
                        "key_constraints": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                        "interfaces": {"type": "array", "items": {"type": "string"}},
                        "files": {"type": "array", "items": {"type": "string"}},
                        "approach": {"type": "string"},
                        "most_likely_wrong": {"type": "string"},
                        "least_confident": {"type": "string"},
                        "first_action": {"type": "string"}
                    }),
                    &[
                        "building",
                        "key_constraints",
                        "approach",
                        "most_likely_wrong",
                        "least_confident",
                    ],
                ),
            ),
            Tool::ReportResult => (
                "Report your result and stop. `status` is done, partial or blocked; `evidence` lists files \
                 (and optionally a line quoted from each); `output` is the structured output your tier asks for. \
                 An output that does not match your tier's schema comes back with every problem: fix them and \
                 report again.",
                object(
                    json!({
                        "status": {"type": "string", "enum": ["done", "partial", "blocked"]},
                        "summary": {"type": "string"},
                        "evidence": {
                            "type": "array",
                            "items": object(
                                json!({"path": {"type": "string"}, "quote": {"type": "string"}}),
                                &["path"],
                            )
                        },
                        "output": {}
                    }),
                    &["status", "summary"],
                ),
            ),
            Tool::RaiseSignal => (
                "Raise an algedonic signal and stop. HALT (category SECURITY, DATA or ETHICS) stops the \
                 whole run and tells a human; ALERT (QUALITY, SCOPE or META-BLOCK) blocks this brief at a \
                 human gate. Say what is wrong, what shows it, what it means if ignored and what you \
                 recommend.",
                object(
                    json!({
                        "level": {"type": "string", "enum": ["HALT", "ALERT"]},
                        "category": {
                            "type": "string",
                            "enum": ["SECURITY", "DATA", "ETHICS", "QUALITY", "SCOPE", "META-BLOCK"]
                        },
                        "issue": {"type": "string"},
                        "evidence": {"type": "string"},
                        "impact": {"type": "string"},
                        "recommended_action": {"type": "string"}
                    }),
                    &[
                        "level",
                        "category",
                        "issue",
                        "evidence",
                        "impact",
                        "recommended_action",
                    ],
                ),
            ),
            Tool::ProposePathAmendment => (
                "Propose a different tier path for your workstream when you find scope it was not planned \
                 for (an extra squad-lead pass: add_tiers [\"t3\"], insert_before \"t5\"), or a shallower \
                 path with its reason. It does not stop you: the tiers above are told, and a human approves or \
                 rejects it at the next gate. Carry on with your task afterwards.",
                object(
                    json!({
                        "reason": {"type": "string", "description": "Why the path should change."},
                        "workstream": {"type": "string", "description": "Default: your own workstream."},
                        "add_tiers": {"type": "array", "items": {"type": "string", "enum": ["t2", "t3", "t4"]}},
                        "insert_before": {"type": "string", "enum": ["t2", "t3", "t4", "t5"]},
                        "shallower_path": {"type": "array", "items": {"type": "string", "enum": ["t1", "t2", "t3", "t4", "t5"]}},
                        "shallower_path_reason": {"type": "string"}
                    }),
                    &["reason"],
                ),
            ),
        };
        ToolSpec {
            name: self.name().to_owned(),
            description: description.to_owned(),
            input_schema: schema,
        }
    }
}

impl Tool {
    /// Checks a call's arguments against the tool's schema before they are read: each missing required
    /// field, each field of the wrong type, and (when something is missing, as a hint at a misnamed field)
    /// the fields the tool does not take. The error names them and shows the expected shape, so a model
    /// can resend the call right the first time.
    pub fn check_arguments(self, input: &Value) -> Result<(), String> {
        let spec = self.spec();
        let schema = &spec.input_schema;
        let name = self.name();
        let expected = || format!("Expected arguments: {}", shape(schema));
        let Some(given) = input.as_object() else {
            return Err(format!(
                "invalid arguments for {name}: expected a JSON object, got {}. {}",
                kind_of(input),
                expected()
            ));
        };
        let properties = schema["properties"].as_object();
        let mut problems = Vec::new();
        let missing: Vec<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|field| !given.contains_key(*field))
            .collect();
        for field in &missing {
            problems.push(format!("missing required field `{field}`"));
        }
        for (field, value) in given {
            let Some(property) = properties.and_then(|p| p.get(field)) else {
                if !missing.is_empty() {
                    problems.push(format!("`{field}` is not one of {name}'s fields"));
                }
                continue;
            };
            if let Some(wanted) = mismatch(property, value) {
                problems.push(format!("`{field}` must be {wanted}, got {}", kind_of(value)));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "invalid arguments for {name}: {}. {}",
                problems.join("; "),
                expected()
            ))
        }
    }
}

/// What `value` should have been when it does not fit `property` (its type or enum), else `None`.
fn mismatch(property: &Value, value: &Value) -> Option<String> {
    if let Some(allowed) = property["enum"].as_array() {
        return (!allowed.contains(value)).then(|| {
            let names: Vec<String> = allowed.iter().map(Value::to_string).collect();
            format!("one of {}", names.join(", "))
        });
    }
    let fits = match property["type"].as_str()? {
        "string" => value.is_string(),
        "integer" => value.is_u64() || value.is_i64(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.as_array().is_some_and(|items| {
            items
                .iter()
                .all(|item| mismatch(&property["items"], item).is_none())
        }),
        _ => true,
    };
    (!fits).then(|| match property["type"].as_str() {
        Some("array") => format!("an array of {}", shape(&property["items"])),
        Some("integer") => "an integer".to_owned(),
        Some("object") => "an object".to_owned(),
        Some(other) => format!("a {other}"),
        None => "something else".to_owned(),
    })
}

/// How a JSON value reads in an error: its type, and the value itself when short.
fn kind_of(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".to_owned(),
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let text = value.to_string();
    if text.len() <= 40 {
        format!("{kind} {text}")
    } else {
        kind.to_owned()
    }
}

/// A schema as a compact example of the JSON it takes: `{"path": string, "offset"?: integer}` (a `?`
/// marks an optional field), `"done" | "partial"` for an enum, `[string]` for an array.
pub fn shape(schema: &Value) -> String {
    if let Some(allowed) = schema["enum"].as_array() {
        let names: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return names.join(" | ");
    }
    match schema["type"].as_str() {
        Some("object") => {
            let required: Vec<&str> = schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let properties = schema["properties"].as_object();
            // Required fields first, in the order the schema lists them; then the optional ones.
            let required_fields = required
                .iter()
                .filter_map(|field| Some((*field, properties?.get(*field)?, "")));
            let optional_fields = properties
                .into_iter()
                .flatten()
                .filter(|(field, _)| !required.contains(&field.as_str()))
                .map(|(field, property)| (field.as_str(), property, "?"));
            let fields: Vec<String> = required_fields
                .chain(optional_fields)
                .map(|(field, property, mark)| format!("\"{field}\"{mark}: {}", shape(property)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        Some("array") => format!("[{}]", shape(&schema["items"])),
        Some(other) => other.to_owned(),
        None => "any JSON".to_owned(),
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_access_offers_reading_reporting_and_signals() {
        let names: Vec<&str> = Tool::offered_for(Access::ReadOnly)
            .into_iter()
            .map(Tool::name)
            .collect();
        assert_eq!(
            names,
            [
                "read_file",
                "list_files",
                "grep",
                "report_result",
                "raise_signal",
                "propose_path_amendment"
            ]
        );
        assert_eq!(Tool::offered_for(Access::ReadWrite).len(), Tool::ALL.len());
        let teachback: Vec<&str> = Tool::offered_for(Toolset::Teachback)
            .into_iter()
            .map(Tool::name)
            .collect();
        assert_eq!(
            teachback,
            [
                "read_file",
                "list_files",
                "grep",
                "submit_teachback",
                "report_result",
                "raise_signal"
            ]
        );
        for tool in Tool::ALL {
            assert_eq!(Tool::from_name(tool.name()), Some(tool));
            assert_eq!(tool.spec().input_schema["type"], "object");
        }
    }

    #[test]
    fn a_missing_field_is_named_with_the_expected_shape() {
        let error = Tool::ReadFile
            .check_arguments(&json!({"file": "src/lib.rs"}))
            .unwrap_err();
        assert_eq!(
            error,
            "invalid arguments for read_file: missing required field `path`; `file` is not one of \
             read_file's fields. Expected arguments: {\"path\": string, \"limit\"?: integer, \"offset\"?: integer}"
        );
    }

    #[test]
    fn a_field_of_the_wrong_type_or_outside_its_enum_is_named() {
        let error = Tool::RunCommand
            .check_arguments(&json!({"argv": "cargo test"}))
            .unwrap_err();
        assert!(
            error.starts_with(
                "invalid arguments for run_command: `argv` must be an array of string, got string \"cargo test\"."
            ),
            "{error}"
        );
        let error = Tool::ReportResult
            .check_arguments(&json!({"status": "finished", "summary": "ok"}))
            .unwrap_err();
        assert!(
            error.contains(
                "`status` must be one of \"done\", \"partial\", \"blocked\", got string \"finished\""
            ),
            "{error}"
        );
        assert!(
            error.contains("\"status\": \"done\" | \"partial\" | \"blocked\""),
            "{error}"
        );
        let error = Tool::Grep.check_arguments(&json!(["fn main"])).unwrap_err();
        assert!(
            error.starts_with("invalid arguments for grep: expected a JSON object, got array [\"fn main\"]."),
            "{error}"
        );
    }

    #[test]
    fn well_formed_arguments_pass_and_extra_fields_alone_are_let_through() {
        Tool::EditFile
            .check_arguments(&json!({"path": "a", "old_string": "x", "new_string": "y", "replace_all": true}))
            .unwrap();
        Tool::ReadFile
            .check_arguments(&json!({"path": "a", "reason": "to see it"}))
            .unwrap();
        Tool::ReportResult
            .check_arguments(&json!({"status": "done", "summary": "s", "output": [1, 2]}))
            .unwrap();
    }
}

//! A path-aware reader for JSON documents written by models (plans, brief requests). Instead of stopping
//! at the first error like serde, it reads field by field and collects every [`Problem`] with its JSON path
//! (`workstreams[2].tier_path[0]`), so one retry of the model can fix them all.

use std::fmt;

use serde_json::{Map, Value};

use crate::contract::GoalContract;
use crate::tier::{Tier, UnknownTier};
use crate::variety::{DIMENSION_NAMES, Variety, validate_dimension};

/// One problem found in a JSON document: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// A JSON path like `workstreams[2].tier_path[0]`; empty for the document itself.
    pub path: String,
    /// What is wrong and, where it helps, what was expected.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Writes problems one per line.
pub(crate) fn write_problems(f: &mut fmt::Formatter<'_>, problems: &[Problem]) -> fmt::Result {
    for (i, problem) in problems.iter().enumerate() {
        if i > 0 {
            f.write_str("\n")?;
        }
        write!(f, "{problem}")?;
    }
    Ok(())
}

/// A JSON path one key deeper.
pub(crate) fn field_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// A JSON path one index deeper.
pub(crate) fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// A short description of a JSON value for "expected X, found Y" messages.
pub(crate) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) if s.chars().count() > 40 => {
            format!("a string (\"{}...\")", s.chars().take(40).collect::<String>())
        }
        Value::String(s) => format!("a string ({s:?})"),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// Reads a JSON document field by field, collecting every problem with its path instead of stopping at the
/// first. Each reader returns `None` when the value is unusable, after recording why.
#[derive(Debug, Default)]
pub(crate) struct Checker {
    pub(crate) problems: Vec<Problem>,
}

impl Checker {
    pub(crate) fn push(&mut self, path: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            path: path.to_string(),
            message: message.into(),
        });
    }

    fn expected(&mut self, path: &str, what: &str, value: &Value) {
        self.push(path, format!("expected {what}, found {}", describe(value)));
    }

    pub(crate) fn object<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        let object = value.as_object();
        if object.is_none() {
            self.expected(path, "an object", value);
        }
        object
    }

    pub(crate) fn required<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Option<&'v Value> {
        let value = obj.get(key);
        if value.is_none() {
            self.push(&field_path(path, key), "missing required field");
        }
        value
    }

    pub(crate) fn unknown_fields(&mut self, obj: &Map<String, Value>, path: &str, known: &[&str]) {
        for key in obj.keys().filter(|k| !known.contains(&k.as_str())) {
            self.push(
                &field_path(path, key),
                format!("unknown field (expected one of: {})", known.join(", ")),
            );
        }
    }

    pub(crate) fn string<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v str> {
        let s = value.as_str();
        if s.is_none() {
            self.expected(path, "a string", value);
        }
        s
    }

    /// A string with something in it: blank text is as good as missing.
    pub(crate) fn text<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v str> {
        let s = self.string(value, path)?;
        if s.trim().is_empty() {
            self.push(path, "must not be empty");
            return None;
        }
        Some(s)
    }

    pub(crate) fn array<'v>(&mut self, value: &'v Value, path: &str) -> Option<&'v Vec<Value>> {
        let items = value.as_array();
        if items.is_none() {
            self.expected(path, "an array", value);
        }
        items
    }

    /// An array of strings; `None` if any item is not one.
    pub(crate) fn string_list(&mut self, value: &Value, path: &str) -> Option<Vec<String>> {
        let items = self.array(value, path)?;
        let before = self.problems.len();
        let list: Vec<String> = items
            .iter()
            .enumerate()
            .filter_map(|(k, item)| self.string(item, &index_path(path, k)).map(str::to_string))
            .collect();
        (self.problems.len() == before).then_some(list)
    }

    /// An array of tier names written exactly as on the wire (`t3`); `None` if any is unknown.
    pub(crate) fn tier_list(&mut self, value: &Value, path: &str) -> Option<Vec<Tier>> {
        let items = self.array(value, path)?;
        let before = self.problems.len();
        let mut tiers = Vec::new();
        for (k, item) in items.iter().enumerate() {
            let item_path = index_path(path, k);
            if let Some(name) = self.string(item, &item_path) {
                match Tier::ALL.into_iter().find(|t| t.as_str() == name) {
                    Some(tier) => tiers.push(tier),
                    None => self.push(&item_path, UnknownTier(name.to_string()).to_string()),
                }
            }
        }
        (self.problems.len() == before).then_some(tiers)
    }

    /// A variety object: all four dimensions, each an integer 1-4 (never a boolean), no other keys. Every
    /// bad dimension is reported, each under its own path.
    pub(crate) fn variety(&mut self, value: &Value, path: &str) -> Option<Variety> {
        let Some(obj) = value.as_object() else {
            self.push(
                path,
                format!(
                    "expected an object {{\"novelty\": 1-4, \"scope\": 1-4, \"uncertainty\": 1-4, \"risk\": 1-4}}, \
                     found {}",
                    describe(value)
                ),
            );
            return None;
        };
        self.unknown_fields(obj, path, &DIMENSION_NAMES);
        let mut dims = [0u8; 4];
        let mut ok = true;
        for (slot, name) in dims.iter_mut().zip(DIMENSION_NAMES) {
            let dim_path = field_path(path, name);
            match obj.get(name).map(|v| validate_dimension(v, name)) {
                Some(Ok(d)) => *slot = d,
                Some(Err(e)) => {
                    self.push(&dim_path, e.to_string());
                    ok = false;
                }
                None => {
                    self.push(
                        &dim_path,
                        format!("missing variety dimension `{name}` (an integer from 1 to 4)"),
                    );
                    ok = false;
                }
            }
        }
        let [novelty, scope, uncertainty, risk] = dims.map(i64::from);
        if ok {
            Variety::new(novelty, scope, uncertainty, risk).ok()
        } else {
            None
        }
    }

    /// A goal contract: `done_when` (required text), `verify` (optional text), `failure_modes` and
    /// `may_edit` (optional lists of strings), no other keys.
    pub(crate) fn contract(&mut self, value: &Value, path: &str) -> Option<GoalContract> {
        let obj = self.object(value, path)?;
        let before = self.problems.len();
        self.unknown_fields(obj, path, &["done_when", "verify", "failure_modes", "may_edit"]);
        let done_when = self
            .required(obj, path, "done_when")
            .and_then(|v| self.text(v, &field_path(path, "done_when")));
        let verify = match obj.get("verify").filter(|v| !v.is_null()) {
            Some(v) => self.text(v, &field_path(path, "verify")).map(str::to_string),
            None => None,
        };
        let mut list = |key: &str| match obj.get(key) {
            Some(v) => self.string_list(v, &field_path(path, key)).unwrap_or_default(),
            None => Vec::new(),
        };
        let failure_modes = list("failure_modes");
        let may_edit = list("may_edit");
        let contract = GoalContract {
            done_when: done_when?.to_string(),
            verify,
            failure_modes,
            may_edit,
        };
        (self.problems.len() == before).then_some(contract)
    }
}

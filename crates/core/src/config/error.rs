//! What can be wrong with a `team.yaml`, said the way a user can act on it:
//! `team.yaml:14: visibility.inspection_gates.t2_synthesis: expected true or false, found "yes"`.
//!
//! Syntax and type errors come from serde-saphyr, which knows the line; the dotted path comes from
//! `serde_path_to_error`, which knows which field was being read. This module joins the two and rewrites
//! the deserializer's wording into what the user was expected to write.

use std::borrow::Cow;
use std::fmt;

use super::locate::{KeyLines, join};
use serde_saphyr::{DefaultMessageFormatter, Error as YamlError, MessageFormatter};

/// One thing wrong with a configuration, located as precisely as is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// Where the value came from: the file name (`team.yaml`) or an environment variable's name.
    pub origin: String,
    /// The 1-based line in `origin`, when known.
    pub line: Option<u64>,
    /// The dotted path of the offending key (`visibility.inspection_gates.t1_plan`); empty for the whole
    /// document or a bare environment value.
    pub path: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Everything wrong with a configuration, one problem per line; never empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    problems: Vec<ConfigProblem>,
}

impl ConfigError {
    /// Wraps problems found together; callers guarantee at least one.
    pub(crate) fn new(problems: Vec<ConfigProblem>) -> Self {
        ConfigError { problems }
    }

    /// Each problem, in file order where lines are known.
    pub fn problems(&self) -> &[ConfigProblem] {
        &self.problems
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

/// Keys that would put a secret in the file. A provider entry only ever names the variable holding it.
const SECRET_KEYS: [&str; 7] = [
    "api_key",
    "apikey",
    "key",
    "token",
    "api_token",
    "secret",
    "password",
];

/// Turns a deserialization failure into a located problem.
///
/// `serde_path` is `serde_path_to_error`'s rendering of where the deserializer was (`a.b[0].c`, `.` for the
/// root, `?` for a segment it could not name).
pub(crate) fn problem_from_yaml(
    err: &YamlError,
    serde_path: Option<&str>,
    text: &str,
    file_name: &str,
) -> ConfigProblem {
    let err = err.without_snippet();
    let location = err.location();
    let mut line = location.map(|l| l.line());
    // A bad scalar is shown whole, even across lines; a bad structure is shown from where it starts to the
    // end of its line (the span of a `[` or `{` token covers only the bracket).
    let found_scalar = || {
        location
            .and_then(|l| spanned_text(text, l.span()).or_else(|| scalar_at(text, l.line(), l.column())))
            .unwrap_or_else(|| "nothing".to_string())
    };
    let found_structure = || {
        location
            .and_then(|l| scalar_at(text, l.line(), l.column()))
            .unwrap_or_else(|| "nothing".to_string())
    };
    let mut path = known_prefix(serde_path.unwrap_or(""));
    let message = match err {
        YamlError::SerdeUnknownField { field, expected, .. } => {
            // Internally tagged enums (notifiers) are buffered before they are read, so the error has the
            // item's path and line, not the key's: find the key in the text.
            if path.rsplit('.').next() != Some(field.as_str()) {
                path = join(&path, field);
                line = KeyLines::index(text).exact_line(&path).or(line);
            }
            if path.starts_with("providers.") && SECRET_KEYS.contains(&field.as_str()) {
                "keys never live in team.yaml: export the key in an environment variable and set \
                 api_key_env to that variable's name"
                    .to_string()
            } else if expected.is_empty() {
                "unknown key; this section takes no keys".to_string()
            } else {
                format!("unknown key; expected one of {}", expected.join(", "))
            }
        }
        YamlError::SerdeUnknownVariant {
            variant, expected, ..
        } => format!(
            "expected one of {}, found {}",
            expected.join(", "),
            quote(variant)
        ),
        YamlError::SerdeMissingField { field, .. } => {
            path = join(&path, field);
            "required key is missing".to_string()
        }
        YamlError::SerdeInvalidType {
            unexpected, expected, ..
        }
        | YamlError::SerdeInvalidValue {
            unexpected, expected, ..
        } => format!("expected {expected}, found {unexpected}"),
        YamlError::SerdeInvalidLength { len, expected, .. } => {
            format!("expected {expected}, found {len} items")
        }
        YamlError::InvalidBooleanStrict { .. } => {
            format!("expected true or false, found {}", found_scalar())
        }
        YamlError::InvalidScalar { ty, .. } => {
            format!("expected {}, found {}", describe_scalar_type(ty), found_scalar())
        }
        YamlError::NullIntoString { .. } => "expected a string, found nothing".to_string(),
        YamlError::Unexpected { expected, .. } => {
            format!(
                "expected {}, found {}",
                describe_token(expected),
                found_structure()
            )
        }
        YamlError::DuplicateMappingKey { key, .. } => {
            if let Some(key) = key {
                path = join(&path, key);
            }
            "duplicate key; each key may appear once".to_string()
        }
        other => fallback_message(other),
    };
    ConfigProblem {
        origin: file_name.to_string(),
        line,
        path,
        message,
    }
}

/// The deserializer's own wording, without its location suffix, made safe for a terminal.
fn fallback_message(err: &YamlError) -> String {
    DefaultMessageFormatter
        .format_message(err)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The part of a `serde_path_to_error` path that names real keys: everything before the first `?`.
fn known_prefix(serde_path: &str) -> String {
    let known = serde_path.split('?').next().unwrap_or("");
    known.trim_matches('.').to_string()
}

/// A value as shown in a message: in double quotes, with quotes and control characters escaped.
pub(crate) fn quote(value: &str) -> String {
    format!("{value:?}")
}

/// The source text a span covers, on one line and quoted; `None` when the span has no byte range.
fn spanned_text(text: &str, span: serde_saphyr::Span) -> Option<String> {
    let start = usize::try_from(span.byte_offset()?).ok()?;
    let len = usize::try_from(span.byte_len()?).ok()?;
    let raw = text.get(start..start.checked_add(len)?)?;
    let raw = raw.trim();
    if raw.is_empty() || raw.starts_with(':') {
        return None;
    }
    let raw = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
        .unwrap_or(raw);
    Some(quote(&raw.split_whitespace().collect::<Vec<_>>().join(" ")))
}

/// The scalar written at a 1-based line and column, quoted, or `None` when nothing is there.
fn scalar_at(text: &str, line: u64, column: u64) -> Option<String> {
    let line_text = text.lines().nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    let start = usize::try_from(column).ok()?.checked_sub(1)?;
    let rest: String = line_text.chars().skip(start).collect();
    let rest = rest.trim();
    // Pointing at a key's colon means the value is missing.
    if rest.starts_with(':') {
        return None;
    }
    let raw = match rest.chars().next()? {
        quote_char @ ('"' | '\'') => {
            let body = &rest[1..];
            match body.find(quote_char) {
                Some(end) => &body[..end],
                None => body,
            }
        }
        _ => match rest.find(" #") {
            Some(end) => rest[..end].trim_end(),
            None => rest,
        },
    };
    Some(quote(raw))
}

/// What a Rust scalar type means to someone writing YAML.
fn describe_scalar_type(ty: &str) -> Cow<'static, str> {
    match ty {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number (0 or more)".into(),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "bool" => "true or false".into(),
        "char" => "a single character".into(),
        other => format!("a value of type {other}").into(),
    }
}

/// What a structural token the parser wanted means to someone writing YAML.
fn describe_token(expected: &str) -> Cow<'static, str> {
    match expected {
        "mapping start" => "a section of `key: value` lines".into(),
        "sequence start" => "a list".into(),
        "string scalar" => "a single value".into(),
        other => other.to_string().into(),
    }
}

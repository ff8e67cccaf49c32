//! Finds the line of each key in a YAML text, so that problems found after parsing (semantic checks) can
//! still point at a line.
//!
//! Paths are written like the error paths: `tiers.t3.capability`, `notifiers[1].url`.

use std::collections::HashMap;

use serde_saphyr::granit_parser::{Event, Parser};

/// Line numbers by dotted path, from one pass over the parser's events.
#[derive(Debug, Default)]
pub(crate) struct KeyLines {
    lines: HashMap<String, u64>,
}

/// A container being walked.
enum Frame {
    /// A mapping; `key` is `Some` while its value is awaited.
    Map { path: String, key: Option<String> },
    /// A sequence and the index of its next item.
    Seq { path: String, next: usize },
}

impl KeyLines {
    /// Indexes `text`; a syntax error stops the walk and leaves what was found so far.
    pub(crate) fn index(text: &str) -> Self {
        let mut lines = HashMap::new();
        let mut stack: Vec<Frame> = Vec::new();
        for item in Parser::new_from_str(text) {
            let Ok((event, span)) = item else { break };
            let line = span.start.line() as u64;
            match event {
                Event::Scalar(..) | Event::Alias(..) => {
                    let text = match &event {
                        Event::Scalar(value, ..) => value.to_string(),
                        _ => "*".to_string(),
                    };
                    match stack.last_mut() {
                        Some(Frame::Map {
                            path,
                            key: key @ None,
                        }) => {
                            lines.entry(join(path, &text)).or_insert(line);
                            *key = Some(text);
                        }
                        // The value of the pending key: the mapping expects a key again.
                        Some(Frame::Map { key, .. }) => *key = None,
                        Some(Frame::Seq { path, next }) => {
                            lines.entry(format!("{path}[{next}]")).or_insert(line);
                            *next += 1;
                        }
                        None => {}
                    }
                }
                Event::MappingStart(..) | Event::SequenceStart(..) => {
                    let path = match stack.last_mut() {
                        Some(Frame::Map { path, key }) => match key.take() {
                            Some(key) => join(path, &key),
                            None => {
                                // A complex key: its contents get no path, the value after it is `?`.
                                *key = Some("?".to_string());
                                "?".to_string()
                            }
                        },
                        Some(Frame::Seq { path, next }) => {
                            let item = format!("{path}[{next}]");
                            lines.entry(item.clone()).or_insert(line);
                            *next += 1;
                            item
                        }
                        None => String::new(),
                    };
                    stack.push(if matches!(event, Event::MappingStart(..)) {
                        Frame::Map { path, key: None }
                    } else {
                        Frame::Seq { path, next: 0 }
                    });
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                }
                _ => {}
            }
        }
        KeyLines { lines }
    }

    /// The line where `path` itself is written.
    pub(crate) fn exact_line(&self, path: &str) -> Option<u64> {
        self.lines.get(path).copied()
    }

    /// The line of `path`, or of its nearest written ancestor (a key left to its default has no line, its
    /// section does).
    pub(crate) fn line_of(&self, path: &str) -> Option<u64> {
        let mut path = path;
        loop {
            if let Some(line) = self.lines.get(path) {
                return Some(*line);
            }
            let cut = path.rfind(['.', '['])?;
            path = &path[..cut];
        }
    }
}

/// `parent.child`, or `child` at the root.
pub(crate) fn join(parent: &str, child: &str) -> String {
    if parent.is_empty() {
        child.to_string()
    } else {
        format!("{parent}.{child}")
    }
}

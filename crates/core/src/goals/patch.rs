//! Line-exact patches to plan.md: flip a status, tick a subtask, append a log line, add a goal. Each one edits
//! the few bytes it must (a status value, a checkbox mark) or inserts whole new lines, and returns the new
//! text; every other byte, line ending and the presence or absence of a final newline stays as it was. The
//! document is never re-rendered, so a human's or an agent's formatting and notes survive every write.
//!
//! A patch works on the [`PlanDoc`] it was parsed from; to apply two patches, parse the first one's result.

use std::fmt;
use std::ops::Range;

use chrono::{DateTime, Utc};

use super::model::{Goal, GoalStatus, PlanDoc};
use super::syntax::{self, LineEnding, SourceLine};

/// Why a patch could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// No goal carries this id.
    #[error("no goal with id \"{0}\" in plan.md")]
    UnknownGoal(String),
    /// The goal has no subtask matching the reference.
    #[error("goal \"{goal}\" has no subtask {wanted} (it has {count})")]
    UnknownSubtask {
        /// The goal's id.
        goal: String,
        /// The reference that matched nothing.
        wanted: SubtaskRef,
        /// How many subtasks the goal has.
        count: usize,
    },
    /// Several goals carry the id, so acting on "the" goal would pick one silently.
    #[error(
        "goal id \"{id}\" is ambiguous: the goals at lines {} carry it; give each its own `<!-- id: … -->`",
        join_lines(.headings)
    )]
    AmbiguousGoal {
        /// The shared id.
        id: String,
        /// The 1-based heading line of every goal carrying it.
        headings: Vec<usize>,
    },
    /// A text reference matched several subtasks.
    #[error("goal \"{goal}\": subtask {wanted} is ambiguous; it matches {candidates}")]
    AmbiguousSubtask {
        /// The goal's id.
        goal: String,
        /// The reference that matched more than one subtask.
        wanted: SubtaskRef,
        /// The matching subtasks' texts, quoted and comma-separated.
        candidates: String,
    },
    /// `add_goal` with an id another goal already has.
    #[error("a goal with id \"{0}\" already exists in plan.md")]
    DuplicateGoalId(String),
    /// A value that cannot be written as one plan.md line and read back unchanged.
    #[error("{field}: {problem}")]
    InvalidValue {
        /// The field concerned.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

/// `3, 12` or `3 and 12`: line numbers for a message.
fn join_lines(lines: &[usize]) -> String {
    let words: Vec<String> = lines.iter().map(usize::to_string).collect();
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => words.join(""),
    }
}

/// Which subtask of a goal to tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubtaskRef {
    /// By position, 0-based, in file order.
    Index(usize),
    /// By text: an exact match (ignoring case and runs of whitespace) wins; otherwise the one subtask whose
    /// text contains it. Wording drifts, so an exact-only match would break (the pi-goals lesson).
    Text(String),
}

impl fmt::Display for SubtaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubtaskRef::Index(i) => write!(f, "at index {i}"),
            SubtaskRef::Text(t) => write!(f, "{t:?}"),
        }
    }
}

/// A goal to append with [`PlanDoc::add_goal`], in the seed's format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewGoal {
    /// The stable id (see [`PlanDoc::suggest_goal_id`]).
    pub id: String,
    /// The heading title.
    pub title: String,
    /// The initial status.
    pub status: GoalStatus,
    /// The observable condition that makes it done.
    pub done_when: String,
    /// The stage-1 command, if any.
    pub verify: Option<String>,
    /// Ways it can look done while it is not.
    pub failure_modes: Vec<String>,
    /// Protected paths it may edit.
    pub may_edit: Vec<String>,
    /// Subtask texts, written unticked.
    pub subtasks: Vec<String>,
}

/// One change to the line list; everything a patch does is one of these.
#[derive(Debug)]
enum Edit {
    /// Rewrite a byte range inside one line's content.
    InLine {
        line: usize,
        bytes: Range<usize>,
        with: String,
    },
    /// Insert whole lines before line index `at` (`at == len` appends).
    Insert { at: usize, contents: Vec<String> },
}

impl PlanDoc {
    /// Sets a goal's status. Rewrites only the status value (keeping the key's spelling, spacing and any
    /// backticks); a goal without a `status:` line gets one under its id marker or heading. A goal already
    /// in that status comes back unchanged.
    pub fn set_status(&self, goal_id: &str, status: GoalStatus) -> Result<String, PatchError> {
        let goal = self.unique_goal(goal_id)?;
        if goal.status == Some(status) {
            // Already so: no write, not even a case change, so a repeated command leaves no diff.
            return Ok(self.text());
        }
        let edit = match (goal.lines.status, &goal.lines.status_value) {
            (Some(line), Some(value)) => {
                let content = &self.lines[line - 1].content;
                // `status:` with nothing after it: keep a space between key and value.
                let glue = value.is_empty() && !content[..value.start].ends_with([' ', '\t']);
                let with = if glue {
                    format!(" {status}")
                } else {
                    status.to_string()
                };
                Edit::InLine {
                    line: line - 1,
                    bytes: value.clone(),
                    with,
                }
            }
            _ => {
                let after = goal.lines.id.unwrap_or(goal.lines.heading);
                Edit::Insert {
                    at: after,
                    contents: vec![format!("status: {status}")],
                }
            }
        };
        Ok(self.apply(edit))
    }

    /// Ticks (`checked`) or unticks a subtask, rewriting the one byte between its brackets. Already in that
    /// state: the text comes back unchanged.
    pub fn tick_subtask(
        &self,
        goal_id: &str,
        subtask: &SubtaskRef,
        checked: bool,
    ) -> Result<String, PatchError> {
        let goal = self.unique_goal(goal_id)?;
        let found = find_subtask(goal, goal_id, subtask)?;
        if found.checked == checked {
            return Ok(self.text());
        }
        let with = if checked { "x" } else { " " };
        Ok(self.apply(Edit::InLine {
            line: found.line - 1,
            bytes: found.mark..found.mark + 1,
            with: with.to_string(),
        }))
    }

    /// Appends `- entry` to the `## Log` section, after its last entry; creates `## Log` at the end of the
    /// file when there is none. Line breaks in `entry` become spaces: one event, one line.
    pub fn append_log(&self, entry: &str) -> Result<String, PatchError> {
        let entry = entry.replace(['\r', '\n'], " ");
        let entry = entry.trim();
        if entry.is_empty() {
            return Err(PatchError::InvalidValue {
                field: "log",
                problem: "an empty log entry".to_string(),
            });
        }
        let bullet = format!("- {entry}");
        let edit = match &self.log {
            Some(log) => {
                let after = log.entries.last().map_or(log.heading, |e| e.line);
                Edit::Insert {
                    at: after,
                    contents: vec![bullet],
                }
            }
            None => {
                let mut contents = self.end_separator();
                contents.extend(["## Log".to_string(), bullet]);
                Edit::Insert {
                    at: self.lines.len(),
                    contents,
                }
            }
        };
        Ok(self.apply(edit))
    }

    /// Appends a goal block in the seed's format, before a trailing `## Log` section (so the log stays last)
    /// or at the end. The block is checked to read back exactly as given.
    pub fn add_goal(&self, new: &NewGoal) -> Result<String, PatchError> {
        if !syntax::valid_id(&new.id) {
            return Err(invalid(
                "id",
                format!("{:?} is not a single word usable in `<!-- id: … -->`", new.id),
            ));
        }
        if self.goal(&new.id).is_some() {
            return Err(PatchError::DuplicateGoalId(new.id.clone()));
        }
        let level = self.goals.first().map_or(2, |g| {
            syntax::heading(&self.lines[g.lines.heading - 1].content).map_or(2, |h| h.level)
        });
        let mut block = vec![
            format!("{} Goal: {}", "#".repeat(level), one_line("title", &new.title)?),
            format!("<!-- id: {} -->", new.id),
            format!("status: {}", new.status),
            format!("done_when: {}", one_line("done_when", &new.done_when)?),
        ];
        if let Some(verify) = &new.verify {
            block.push(format!("verify: {}", one_line("verify", verify)?));
        }
        for (field, items) in [("failure_modes", &new.failure_modes), ("may_edit", &new.may_edit)] {
            if !items.is_empty() {
                block.push(format!("{field}:"));
                for item in items {
                    block.push(format!("  - {}", one_line(field, item)?));
                }
            }
        }
        for subtask in &new.subtasks {
            block.push(format!("- [ ] {}", one_line("subtask", subtask)?));
        }

        // Keep the log last when it follows every goal; a log in the middle of the file stays put. Goals
        // under a closing `## Archive` (`agency goal archive`) do not count, and a new goal never goes
        // into the archive: it goes before the log, or else before the archive.
        let archive = self.archive_heading();
        let live = |line: usize| archive.is_none_or(|a| line < a);
        let before_log = self
            .log
            .as_ref()
            .map(|l| l.heading)
            .filter(|&heading| live(heading))
            .filter(|&heading| {
                self.goals
                    .iter()
                    .filter(|g| live(g.lines.heading))
                    .all(|g| g.lines.heading < heading)
            })
            .or(archive);
        let edit = match before_log {
            Some(heading) => {
                let at = heading - 1;
                let mut contents = Vec::new();
                if at > 0 && !self.lines[at - 1].content.trim().is_empty() {
                    contents.push(String::new());
                }
                contents.extend(block);
                contents.push(String::new());
                Edit::Insert { at, contents }
            }
            None => {
                let mut contents = self.end_separator();
                contents.extend(block);
                Edit::Insert {
                    at: self.lines.len(),
                    contents,
                }
            }
        };
        let text = self.apply(edit);
        self.check_read_back(&text, new)?;
        Ok(text)
    }

    /// The 1-based line of the `## Archive` heading (any level, case-insensitive) that `agency goal archive`
    /// moves finished goals under, if there is one.
    pub fn archive_heading(&self) -> Option<usize> {
        self.lines
            .iter()
            .position(|line| {
                syntax::heading(&line.content).is_some_and(|h| h.text.trim().eq_ignore_ascii_case("archive"))
            })
            .map(|index| index + 1)
    }

    /// A fresh id for a goal with this title: a slug of it plus the first free `-N` (`cache-layer-1`).
    pub fn suggest_goal_id(&self, title: &str) -> String {
        let mut slug = String::new();
        for c in title.chars() {
            if c.is_ascii_alphanumeric() {
                slug.push(c.to_ascii_lowercase());
            } else if !slug.is_empty() && !slug.ends_with('-') {
                slug.push('-');
            }
            if slug.len() >= 40 {
                break;
            }
        }
        let slug = slug.trim_end_matches('-');
        let slug = if slug.is_empty() { "goal" } else { slug };
        (1..)
            .map(|n| format!("{slug}-{n}"))
            .find(|id| self.goal(id).is_none())
            .unwrap_or_else(|| slug.to_string())
    }

    /// The one goal with this id: unknown and shared ids are errors, so a patch, a sign-off or a cancel never
    /// acts on whichever of two same-id goals happens to come first.
    pub fn unique_goal(&self, goal_id: &str) -> Result<&Goal, PatchError> {
        match self.goals_with_id(goal_id).as_slice() {
            [] => Err(PatchError::UnknownGoal(goal_id.to_string())),
            [goal] => Ok(goal),
            many => Err(PatchError::AmbiguousGoal {
                id: goal_id.to_string(),
                headings: many.iter().map(|g| g.lines.heading).collect(),
            }),
        }
    }

    /// What goes before content appended at the end: a closing fence if a code block was left open (or the
    /// new lines would read as code), then a blank line unless the file already ends in one.
    fn end_separator(&self) -> Vec<String> {
        if let Some(marker) = self.open_fence {
            return vec![marker.to_string(), String::new()];
        }
        match self.lines.last() {
            Some(last) if !last.content.trim().is_empty() => vec![String::new()],
            _ => Vec::new(),
        }
    }

    /// The line ending new lines get: the file's own (its first terminated line's), `\n` for a new file.
    fn ending(&self) -> LineEnding {
        self.lines
            .iter()
            .map(|l| l.ending)
            .find(|e| *e != LineEnding::Missing)
            .unwrap_or(LineEnding::Lf)
    }

    fn apply(&self, edit: Edit) -> String {
        let mut lines = self.lines.clone();
        match edit {
            Edit::InLine { line, bytes, with } => lines[line].content.replace_range(bytes, &with),
            Edit::Insert { at, contents } => {
                let ending = self.ending();
                let mut new: Vec<SourceLine> = contents
                    .into_iter()
                    .map(|content| SourceLine { content, ending })
                    .collect();
                // Appending after an unterminated last line: that line needs a terminator now, and the new
                // last line goes without one, so "no final newline" stays true of the file.
                if at == lines.len()
                    && let Some(last) = lines.last_mut()
                    && last.ending == LineEnding::Missing
                {
                    last.ending = ending;
                    if let Some(new_last) = new.last_mut() {
                        new_last.ending = LineEnding::Missing;
                    }
                }
                lines.splice(at..at, new);
            }
        }
        lines
            .iter()
            .map(|l| format!("{}{}", l.content, l.ending.as_str()))
            .collect()
    }

    fn check_read_back(&self, text: &str, new: &NewGoal) -> Result<(), PatchError> {
        let doc = PlanDoc::parse(text);
        let read = doc.goal(&new.id).map(|g| {
            (
                g.title.as_str(),
                g.status,
                g.contract(),
                g.subtasks
                    .iter()
                    .map(|s| (s.text.as_str(), s.checked))
                    .collect::<Vec<_>>(),
            )
        });
        let wanted = (
            new.title.trim(),
            Some(new.status),
            crate::contract::GoalContract {
                done_when: new.done_when.trim().to_string(),
                verify: new.verify.as_ref().map(|v| v.trim().to_string()),
                failure_modes: new.failure_modes.iter().map(|s| s.trim().to_string()).collect(),
                may_edit: new.may_edit.iter().map(|s| s.trim().to_string()).collect(),
            },
            new.subtasks.iter().map(|s| (s.trim(), false)).collect::<Vec<_>>(),
        );
        if read.as_ref() == Some(&wanted) {
            Ok(())
        } else {
            Err(invalid(
                "goal",
                "the values would not read back as given (markdown syntax in a value?)".to_string(),
            ))
        }
    }
}

fn find_subtask<'g>(
    goal: &'g Goal,
    goal_id: &str,
    wanted: &SubtaskRef,
) -> Result<&'g super::Subtask, PatchError> {
    let unknown = || PatchError::UnknownSubtask {
        goal: goal_id.to_string(),
        wanted: wanted.clone(),
        count: goal.subtasks.len(),
    };
    let needle = match wanted {
        SubtaskRef::Index(i) => return goal.subtasks.get(*i).ok_or_else(unknown),
        SubtaskRef::Text(text) => normalise(text),
    };
    if needle.is_empty() {
        return Err(unknown());
    }
    if let Some(exact) = goal.subtasks.iter().find(|s| normalise(&s.text) == needle) {
        return Ok(exact);
    }
    let partial: Vec<_> = goal
        .subtasks
        .iter()
        .filter(|s| normalise(&s.text).contains(&needle))
        .collect();
    match partial.as_slice() {
        [] => Err(unknown()),
        [one] => Ok(one),
        many => Err(PatchError::AmbiguousSubtask {
            goal: goal_id.to_string(),
            wanted: wanted.clone(),
            candidates: many
                .iter()
                .map(|s| format!("{:?}", s.text))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

fn normalise(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn one_line<'a>(field: &'static str, value: &'a str) -> Result<&'a str, PatchError> {
    let value = value.trim();
    if value.is_empty() {
        Err(invalid(field, "must not be empty".to_string()))
    } else if value.contains(['\n', '\r']) {
        Err(invalid(field, "must be a single line".to_string()))
    } else {
        Ok(value)
    }
}

fn invalid(field: &'static str, problem: String) -> PatchError {
    PatchError::InvalidValue { field, problem }
}

/// A log entry in the seed's shape, `2026-06-15 14:02  message`. The clock is the caller's, so tests and the
/// summary stay deterministic.
pub fn log_entry(at: DateTime<Utc>, message: &str) -> String {
    format!("{}  {}", at.format("%Y-%m-%d %H:%M"), message.trim())
}

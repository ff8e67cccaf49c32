//! The tolerant line scanner: one pass over the lines, a little state (which section, which list is open,
//! whether a code fence is open), and the recognisers from [`super::syntax`]. It never fails. A line it does
//! not understand is kept in the document and otherwise ignored; only a known field that is malformed, or a
//! required one that is missing, becomes a [`Diagnostic`].

use super::model::{
    Diagnostic, Goal, GoalLines, GoalStatus, ListLines, LogEntry, LogSection, PlanDoc, Subtask,
};
use super::syntax::{self, Checkbox, FieldKey, IdMarker};

const STATUS_EXPECTED: &str = "one of open, active, done, cancelled";
const CHECKBOX_EXPECTED: &str = "a checkbox `- [ ] text` or `- [x] text`";

impl PlanDoc {
    /// Reads plan.md. Never fails: see [`PlanDoc::diagnostics`] for what was malformed.
    pub fn parse(text: &str) -> PlanDoc {
        let lines = syntax::split_lines(text);
        let mut scanner = Scanner::default();
        for (index, line) in lines.iter().enumerate() {
            scanner.line(index + 1, &line.content);
        }
        scanner.close_section();
        let Scanner {
            objective,
            goals,
            log,
            mut diagnostics,
            fence,
            ..
        } = scanner;
        diagnostics.sort_by_key(|d| d.line);
        PlanDoc {
            lines,
            objective,
            goals,
            log,
            diagnostics,
            open_fence: fence,
        }
    }
}

#[derive(Debug, Default)]
enum Section {
    /// Before the first goal or log heading, or under an unrelated heading.
    #[default]
    Other,
    Goal(Box<OpenGoal>),
    Log {
        level: usize,
    },
}

/// A goal whose section is still being read.
#[derive(Debug)]
struct OpenGoal {
    goal: Goal,
    level: usize,
    /// The list field the next `- item` belongs to.
    list: Option<FieldKey>,
    /// The indentation of that list's `field:` header: an item indented deeper belongs to the list even
    /// when it looks like a checkbox (`  - [ ] cache bypassed` under `failure_modes:` is a failure mode).
    list_indent: usize,
    /// Whether the last line was an item of that list, so an indented line continues it.
    after_item: bool,
    /// Whether the last line was part of `done_when`, so an indented line continues it.
    in_done_when: bool,
    /// Whether anything but blank lines followed the heading; a bare `<!-- x -->` only counts before that.
    seen_content: bool,
}

#[derive(Debug, Default)]
struct Scanner {
    objective: Option<String>,
    goals: Vec<Goal>,
    log: Option<LogSection>,
    diagnostics: Vec<Diagnostic>,
    section: Section,
    fence: Option<&'static str>,
}

impl Scanner {
    fn line(&mut self, number: usize, content: &str) {
        // Any non-blank line inside a goal extends it, code and nested headings included; a heading that
        // ends the goal is not part of it.
        let ends_section = self.fence.is_none() && syntax::heading(content).is_some();
        if let Section::Goal(open) = &mut self.section
            && !ends_section
            && !content.trim().is_empty()
        {
            open.goal.lines.end = number;
        }
        if let Some(marker) = self.fence {
            if content.trim_start().starts_with(marker) {
                self.fence = None;
            }
            return;
        }
        if let Some(marker) = syntax::fence(content) {
            // Code in a plan (an example command, a snippet) is never read as fields.
            self.fence = Some(marker);
            self.end_lists();
            return;
        }
        if let Some(heading) = syntax::heading(content) {
            self.heading(number, heading);
            return;
        }
        match &mut self.section {
            Section::Goal(open) => {
                let diagnostics = &mut self.diagnostics;
                open.line(number, content, diagnostics);
            }
            Section::Log { .. } => {
                if let (Some(log), Some(text)) = (&mut self.log, syntax::bullet(content)) {
                    log.entries.push(LogEntry {
                        text: content[text].to_string(),
                        line: number,
                    });
                }
            }
            Section::Other => {}
        }
    }

    fn end_lists(&mut self) {
        if let Section::Goal(open) = &mut self.section {
            open.list = None;
            open.after_item = false;
            open.in_done_when = false;
        }
    }

    fn heading(&mut self, number: usize, heading: syntax::Heading<'_>) {
        if let Some(title) = syntax::goal_title(heading.text) {
            self.close_section();
            self.section = Section::Goal(Box::new(OpenGoal::new(number, heading.level, title)));
            return;
        }
        if syntax::is_log_heading(heading.text) {
            self.close_section();
            if self.log.is_some() {
                self.diagnostics.push(Diagnostic {
                    line: number,
                    field: "log",
                    expected: "a single `## Log` section (entries here are not read)".to_string(),
                    found: Some(heading.text.to_string()),
                });
            } else {
                self.log = Some(LogSection {
                    heading: number,
                    entries: Vec::new(),
                });
                self.section = Section::Log { level: heading.level };
            }
            return;
        }
        // A deeper heading (`### Notes`) stays inside the goal or log it belongs to.
        let nested = match &self.section {
            Section::Goal(open) => heading.level > open.level,
            Section::Log { level } => heading.level > *level,
            Section::Other => false,
        };
        if nested {
            self.end_lists();
            if let Section::Goal(open) = &mut self.section {
                open.goal.lines.end = number;
            }
            return;
        }
        self.close_section();
        if heading.level == 1 && self.objective.is_none() {
            self.objective = syntax::plan_objective(heading.text).map(str::to_string);
        }
    }

    fn close_section(&mut self) {
        if let Section::Goal(open) = std::mem::take(&mut self.section) {
            let goal = open.finish(&mut self.diagnostics);
            if let (Some(id), Some(line)) = (&goal.id, goal.lines.id)
                && let Some(first) = self.goals.iter().find(|g| g.id.as_ref() == Some(id))
            {
                self.diagnostics.push(Diagnostic {
                    line,
                    field: "id",
                    expected: format!(
                        "an id not used by another goal (\"{id}\" is used at line {})",
                        first.lines.heading
                    ),
                    found: Some(id.clone()),
                });
            }
            self.goals.push(goal);
        }
    }
}

impl OpenGoal {
    fn new(heading: usize, level: usize, title: &str) -> OpenGoal {
        OpenGoal {
            goal: Goal {
                id: None,
                title: title.to_string(),
                status: None,
                done_when: None,
                verify: None,
                failure_modes: Vec::new(),
                may_edit: Vec::new(),
                subtasks: Vec::new(),
                lines: GoalLines {
                    heading,
                    end: heading,
                    id: None,
                    status: None,
                    done_when: None,
                    verify: None,
                    failure_modes: None,
                    may_edit: None,
                    status_value: None,
                },
            },
            level,
            list: None,
            list_indent: 0,
            after_item: false,
            in_done_when: false,
            seen_content: false,
        }
    }

    fn line(&mut self, number: usize, content: &str, diagnostics: &mut Vec<Diagnostic>) {
        if content.trim().is_empty() {
            // A blank line ends a wrapped value but not a list: items are often spaced out.
            self.after_item = false;
            self.in_done_when = false;
            return;
        }
        let first_content = !self.seen_content;
        self.seen_content = true;

        if let Some(marker) = syntax::id_marker(content) {
            self.id_marker(number, marker, first_content, diagnostics);
            return;
        }
        let indent = content.len() - content.trim_start().len();
        // Indentation decides between a list item and a subtask: under `failure_modes:` an item indented
        // deeper than the header stays in the contract the judge checks, whatever its text looks like.
        if let (Some(list), Some(text)) = (self.list, syntax::bullet(content))
            && indent > self.list_indent
        {
            self.push_item(list, number, &content[text]);
            self.after_item = true;
            return;
        }
        if let Some(checkbox) = syntax::checkbox(content) {
            self.list = None;
            self.after_item = false;
            self.in_done_when = false;
            match checkbox {
                Checkbox::Valid { checked, mark, text } => self.goal.subtasks.push(Subtask {
                    text: content[text].to_string(),
                    checked,
                    line: number,
                    mark,
                }),
                Checkbox::Malformed => diagnostics.push(Diagnostic {
                    line: number,
                    field: "subtask",
                    expected: CHECKBOX_EXPECTED.to_string(),
                    found: Some(content.trim().to_string()),
                }),
            }
            return;
        }
        if let Some(field) = syntax::field_line(content) {
            self.list = None;
            self.after_item = false;
            self.in_done_when = false;
            self.list_indent = indent;
            self.field(
                number,
                field.key,
                &content[field.value.clone()],
                field.value,
                diagnostics,
            );
            return;
        }
        let indented = content.starts_with([' ', '\t']);
        if let (Some(list), Some(text)) = (self.list, syntax::bullet(content)) {
            self.push_item(list, number, &content[text]);
            self.after_item = true;
            return;
        }
        if indented && self.after_item {
            self.continue_item(content.trim());
            return;
        }
        if indented && self.in_done_when {
            let lines = &mut self.goal.lines;
            if let Some(range) = &lines.done_when {
                lines.done_when = Some(*range.start()..=number);
            }
            append_words(
                self.goal.done_when.get_or_insert_with(String::new),
                content.trim(),
            );
            return;
        }
        // Prose, notes, unknown fields: kept in the file, not part of the contract.
        self.list = None;
        self.after_item = false;
        self.in_done_when = false;
    }

    fn id_marker(
        &mut self,
        number: usize,
        marker: IdMarker<'_>,
        first_content: bool,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        let value = match marker {
            IdMarker::Explicit(value) => value,
            // A bare comment is an id only where the seed puts the marker, right under the heading;
            // elsewhere it is an ordinary note.
            IdMarker::Bare(value) if first_content && self.goal.lines.id.is_none() => value,
            IdMarker::Bare(_) => return,
        };
        if let Some(first) = self.goal.lines.id {
            diagnostics.push(Diagnostic {
                line: number,
                field: "id",
                expected: format!("one id marker per goal (the first is at line {first})"),
                found: Some(value.to_string()),
            });
            return;
        }
        self.goal.lines.id = Some(number);
        if syntax::valid_id(value) {
            self.goal.id = Some(value.to_string());
        } else {
            diagnostics.push(Diagnostic {
                line: number,
                field: "id",
                expected: "a single word id, as in `<!-- id: cache-layer-1 -->`".to_string(),
                found: (!value.is_empty()).then(|| value.to_string()),
            });
        }
    }

    fn field(
        &mut self,
        number: usize,
        key: FieldKey,
        value: &str,
        span: std::ops::Range<usize>,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        let lines = &mut self.goal.lines;
        let first = match key {
            FieldKey::Status => lines.status,
            FieldKey::DoneWhen => lines.done_when.as_ref().map(|r| *r.start()),
            FieldKey::Verify => lines.verify,
            FieldKey::FailureModes => lines.failure_modes.as_ref().map(|l| l.header),
            FieldKey::MayEdit => lines.may_edit.as_ref().map(|l| l.header),
        };
        if let Some(first) = first {
            // The first occurrence wins, so a patch and a reader agree on which line is the field.
            diagnostics.push(Diagnostic {
                line: number,
                field: key.name(),
                expected: format!(
                    "one `{}:` line per goal (the first is at line {first})",
                    key.name()
                ),
                found: Some(value.to_string()),
            });
            return;
        }
        match key {
            FieldKey::Status => {
                lines.status = Some(number);
                lines.status_value = Some(span);
                match value.parse::<GoalStatus>() {
                    Ok(status) => self.goal.status = Some(status),
                    Err(_) => diagnostics.push(Diagnostic {
                        line: number,
                        field: "status",
                        expected: STATUS_EXPECTED.to_string(),
                        found: (!value.is_empty()).then(|| value.to_string()),
                    }),
                }
            }
            FieldKey::DoneWhen => {
                lines.done_when = Some(number..=number);
                self.goal.done_when = Some(value.to_string());
                self.in_done_when = true;
            }
            FieldKey::Verify => {
                lines.verify = Some(number);
                self.goal.verify = Some(value.to_string());
            }
            FieldKey::FailureModes | FieldKey::MayEdit => {
                let list = ListLines {
                    header: number,
                    items: Vec::new(),
                };
                if key == FieldKey::FailureModes {
                    lines.failure_modes = Some(list);
                } else {
                    lines.may_edit = Some(list);
                }
                self.list = Some(key);
                self.inline_items(key, number, value);
            }
        }
    }

    /// `failure_modes: one mode` is one item; `may_edit: a, b` or `may_edit: [a, b]` are paths.
    fn inline_items(&mut self, key: FieldKey, number: usize, value: &str) {
        if value.is_empty() {
            return;
        }
        if key == FieldKey::FailureModes {
            self.push_item(key, number, value);
            return;
        }
        let inner = value
            .strip_prefix('[')
            .and_then(|v| v.strip_suffix(']'))
            .unwrap_or(value);
        for path in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            self.push_item(key, number, path);
        }
    }

    fn push_item(&mut self, key: FieldKey, number: usize, text: &str) {
        let (items, lines) = match key {
            FieldKey::FailureModes => (&mut self.goal.failure_modes, &mut self.goal.lines.failure_modes),
            _ => (&mut self.goal.may_edit, &mut self.goal.lines.may_edit),
        };
        let text = if key == FieldKey::MayEdit {
            strip_backticks(text)
        } else {
            text
        };
        // A bare `-` adds nothing; if the list ends up empty, `finish` reports it.
        if text.trim().is_empty() {
            return;
        }
        items.push(text.to_string());
        if let Some(lines) = lines {
            lines.items.push(number);
        }
    }

    fn continue_item(&mut self, text: &str) {
        let items = match self.list {
            Some(FieldKey::FailureModes) => &mut self.goal.failure_modes,
            Some(FieldKey::MayEdit) => &mut self.goal.may_edit,
            _ => return,
        };
        if let Some(last) = items.last_mut() {
            append_words(last, text);
        }
    }

    /// Ends the goal and reports the required fields it lacks or left empty.
    fn finish(self, diagnostics: &mut Vec<Diagnostic>) -> Goal {
        let goal = self.goal;
        let lines = &goal.lines;
        let mut report = |line: usize, field: &'static str, expected: &str| {
            diagnostics.push(Diagnostic {
                line,
                field,
                expected: expected.to_string(),
                found: None,
            });
        };
        if goal.title.is_empty() {
            report(lines.heading, "title", "a title after `Goal:`");
        }
        if lines.id.is_none() {
            report(lines.heading, "id", "an `<!-- id: … -->` line under the heading");
        }
        if lines.status.is_none() {
            report(
                lines.heading,
                "status",
                "a `status:` line (open, active, done or cancelled)",
            );
        }
        match (&goal.done_when, &lines.done_when) {
            (None, _) => report(lines.heading, "done_when", "a `done_when:` line"),
            (Some(text), Some(range)) if text.is_empty() => {
                report(
                    *range.start(),
                    "done_when",
                    "the condition that makes the goal done",
                );
            }
            _ => {}
        }
        if let (Some(text), Some(line)) = (&goal.verify, lines.verify)
            && text.is_empty()
        {
            report(line, "verify", "a command (or no `verify:` line at all)");
        }
        for (list, field) in [
            (&lines.failure_modes, "failure_modes"),
            (&lines.may_edit, "may_edit"),
        ] {
            if let Some(list) = list
                && list.items.is_empty()
            {
                report(list.header, field, "at least one `- item`");
            }
        }
        goal
    }
}

fn append_words(value: &mut String, more: &str) {
    if !value.is_empty() {
        value.push(' ');
    }
    value.push_str(more);
}

fn strip_backticks(text: &str) -> &str {
    text.strip_prefix('`')
        .and_then(|t| t.strip_suffix('`'))
        .unwrap_or(text)
}

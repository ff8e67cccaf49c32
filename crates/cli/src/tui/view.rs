//! Drawing the terminal `inspect`: the runs list, or a run's tree beside the selected item's text, with a
//! line for the gate that waits and one for keys, prompts and what just happened.
//!
//! Every string an agent wrote (titles, verify output, the judge's account, diffs) passes [`printable`]
//! first: an escape sequence in it would otherwise reach the terminal and could rewrite what the human sees.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap};

use agency_core::config::SANDBOX_OFF_BANNER;

use crate::tui::app::{App, Prompt, Screen};
use crate::tui::model::Item;

/// `text` safe to put on a terminal: an escape becomes `^[`, a tab four spaces, any other control character
/// or bidirectional override `�`.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\x1b' => out.push_str("^["),
            '\t' => out.push_str("    "),
            c if c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') => {
                out.push('\u{fffd}');
            }
            c => out.push(c),
        }
    }
    out
}

/// How many lines `text` takes when wrapped at word boundaries to `width` columns, as the banner's
/// paragraph wraps it (a word longer than a line is cut across lines).
fn wrapped_lines(text: &str, width: usize) -> usize {
    let width = width.max(1);
    let mut lines = 1;
    let mut used = 0;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        let needed = if used == 0 { len } else { used + 1 + len };
        if needed <= width {
            used = needed;
        } else {
            lines += usize::from(used > 0) + (len.saturating_sub(1)) / width;
            used = (len - 1) % width + 1;
        }
    }
    lines
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, app: &App) {
    // An unconfined run says so above everything else, on as many lines as the banner needs.
    let banner = match (&app.screen, &app.run) {
        (Screen::Run, Some(view)) if agency_core::config::sandbox_off_in(&view.run.config) => {
            u16::try_from(wrapped_lines(SANDBOX_OFF_BANNER, usize::from(frame.area().width)))
                .unwrap_or(u16::MAX)
        }
        _ => 0,
    };
    let [banner_area, header, body, footer] = Layout::vertical([
        Constraint::Length(banner),
        Constraint::Length(2),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    if banner > 0 {
        frame.render_widget(
            Paragraph::new(SANDBOX_OFF_BANNER)
                .style(
                    Style::new()
                        .fg(Color::White)
                        .bg(Color::Red)
                        .add_modifier(Modifier::BOLD),
                )
                .wrap(Wrap { trim: true }),
            banner_area,
        );
    }
    match app.screen {
        Screen::Runs => {
            frame.render_widget(
                Paragraph::new(vec![
                    Line::styled("agency inspect — runs", Style::new().add_modifier(Modifier::BOLD)),
                    Line::raw(""),
                ]),
                header,
            );
            draw_runs(frame, app, body);
        }
        Screen::Run => {
            draw_run_header(frame, app, header);
            draw_run(frame, app, body);
        }
    }
    draw_footer(frame, app, footer);
}

fn draw_runs(frame: &mut Frame<'_>, app: &App, area: Rect) {
    if app.runs.is_empty() {
        frame.render_widget(
            Paragraph::new("no runs yet; start one with `agency run \"<goal>\"`"),
            area,
        );
        return;
    }
    let items: Vec<ListItem<'_>> = app
        .runs
        .iter()
        .map(|r| {
            let line = printable(&format!(
                "{}  {:<30}  {}  {}",
                r.id.short(),
                r.status,
                r.created,
                r.goal
            ));
            if r.sandbox_off {
                ListItem::new(Line::from(vec![
                    Span::raw(line),
                    Span::styled(
                        "  SANDBOX OFF",
                        Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
                    ),
                ]))
            } else {
                ListItem::new(line)
            }
        })
        .collect();
    let mut state = ListState::default().with_selected(Some(app.runs_selected));
    frame.render_stateful_widget(
        List::new(items)
            .block(
                Block::new()
                    .borders(Borders::TOP)
                    .title(format!("{:<8}  {:<30}  {:<16}  GOAL", "RUN", "STATUS", "CREATED")),
            )
            .highlight_style(Style::new().add_modifier(Modifier::REVERSED)),
        area,
        &mut state,
    );
}

fn draw_run_header(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let Some(view) = &app.run else { return };
    let title = Line::from(vec![
        Span::styled(
            format!("Run {}", view.run.id.short()),
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Span::raw(printable(&format!(" — \"{}\"  ({})", view.run.goal, view.status))),
    ]);
    let gate = match &view.pending {
        Some(gate) => Line::styled(
            format!(
                "GATE {} waiting since {} — a approve · r reject",
                gate.kind,
                gate.opened_at.format("%H:%M:%S UTC")
            ),
            Style::new().fg(Color::Black).bg(Color::Yellow),
        ),
        None => Line::raw("no gate waits for a decision"),
    };
    frame.render_widget(Paragraph::new(vec![title, gate]), area);
}

fn draw_run(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let Some(view) = &app.run else { return };
    let text_area = if app.zoomed {
        area
    } else {
        let [tree, text] =
            Layout::horizontal([Constraint::Percentage(38), Constraint::Percentage(62)]).areas(area);
        let items: Vec<ListItem<'_>> = view
            .items
            .iter()
            .map(|item| {
                let style = match item {
                    Item::Workstream(_) | Item::Plan | Item::Cost => {
                        Style::new().add_modifier(Modifier::BOLD)
                    }
                    Item::Gate(_) => Style::new().fg(Color::Yellow),
                    Item::Brief(_) => Style::new(),
                    Item::Record(..) => Style::new().fg(Color::Cyan),
                };
                ListItem::new(Line::styled(printable(&item.label()), style))
            })
            .collect();
        let mut state = ListState::default().with_selected(Some(app.selected));
        frame.render_stateful_widget(
            List::new(items)
                .block(Block::new().borders(Borders::ALL).title("tree"))
                .highlight_style(Style::new().add_modifier(Modifier::REVERSED)),
            tree,
            &mut state,
        );
        text
    };
    let title = app
        .selected_item()
        .map(|i| printable(i.label().trim()))
        .unwrap_or_default();
    frame.render_widget(
        Paragraph::new(detail_text(&app.detail))
            .block(Block::new().borders(Borders::ALL).title(title))
            .wrap(Wrap { trim: false })
            .scroll((app.scroll, 0)),
        text_area,
    );
}

/// The selected item's text, with the diff's lines coloured as `git diff` colours them.
fn detail_text(detail: &str) -> Text<'static> {
    let mut in_diff = false;
    let lines: Vec<Line<'static>> = detail
        .lines()
        .map(|line| {
            let shown = printable(line);
            if line.starts_with("── ") {
                in_diff = line.starts_with("── Diff");
                return Line::styled(shown, Style::new().add_modifier(Modifier::BOLD));
            }
            let style = if !in_diff {
                Style::new()
            } else if line.starts_with("+++") || line.starts_with("---") {
                Style::new().add_modifier(Modifier::BOLD)
            } else if line.starts_with('+') {
                Style::new().fg(Color::Green)
            } else if line.starts_with('-') {
                Style::new().fg(Color::Red)
            } else if line.starts_with("@@") {
                Style::new().fg(Color::Cyan)
            } else {
                Style::new()
            };
            Line::styled(shown, style)
        })
        .collect();
    Text::from(lines)
}

fn draw_footer(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let line = match &app.prompt {
        Prompt::ConfirmApprove => Line::styled(
            match app.pending_gate() {
                Some(gate) => format!(
                    "approve gate {} as {}? y approves, any other key does not",
                    gate.kind,
                    crate::commands::decider()
                ),
                None => "approve? y approves, any other key does not".into(),
            },
            Style::new().fg(Color::Black).bg(Color::Yellow),
        ),
        Prompt::Reason(reason) => Line::styled(
            format!(
                "reject — why? {}▏ (Enter rejects, Esc does not)",
                printable(reason)
            ),
            Style::new().fg(Color::Black).bg(Color::Yellow),
        ),
        Prompt::None => match &app.message {
            Some(message) => Line::raw(printable(message)),
            None => Line::styled(
                match app.screen {
                    Screen::Runs => "↑↓ move · Enter open · q quit",
                    Screen::Run if app.zoomed => {
                        "↑↓ PgUp PgDn scroll · Esc back · a approve · r reject · q quit"
                    }
                    Screen::Run => {
                        "↑↓ move · Enter open · PgUp PgDn scroll · Esc runs · a approve · r reject · q quit"
                    }
                },
                Style::new().add_modifier(Modifier::DIM),
            ),
        },
    };
    frame.render_widget(Paragraph::new(line), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_lines_counts_as_a_word_wrap_does() {
        assert_eq!(wrapped_lines("aa bb cc", 5), 2);
        assert_eq!(wrapped_lines("aa bb", 5), 1);
        assert_eq!(wrapped_lines("aaaaaaaaaaaa", 5), 3);
        assert_eq!(wrapped_lines("a aaaaaaaaaa b", 5), 4);
        assert_eq!(wrapped_lines("", 5), 1);
    }
}

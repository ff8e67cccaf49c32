//! The generated half of docs/cli.md: the `--help` of every command and subcommand, rendered from the clap
//! definitions so the page cannot drift from the binary. The hand-written half (the overview table, the live
//! log, exit codes) stays above a marker line and is kept as it is; only what follows the marker is replaced.
//!
//! A test in `tests/cli/cli_doc.rs` fails when docs/cli.md is out of date and says how to regenerate it:
//! `AGENCY_UPDATE_CLI_DOC=1 cargo test -p agency-cli --test cli cli_doc`.

use std::fmt::Write as _;

use clap::CommandFactory;

use crate::Cli;

/// The line after which docs/cli.md is generated; everything before it is hand-written and kept.
pub const GENERATED_MARKER: &str =
    "<!-- generated from the clap definitions below this line: do not edit by hand -->";

/// Why a page could not be brought up to date.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CliDocError {
    /// The page has no marker line, so there is no telling the hand-written part from the generated one.
    #[error(
        "docs/cli.md has no line `{GENERATED_MARKER}`: expected it once, after the hand-written part \
         (add it at the end of the page and regenerate)"
    )]
    MissingMarker,
    /// The marker appears more than once.
    #[error("docs/cli.md has the line `{GENERATED_MARKER}` {0} times: expected it once")]
    RepeatedMarker(usize),
}

/// The reference section: a heading, then for `agency` and every visible subcommand (depth first, in the
/// order `agency --help` lists them) what `--help` prints, in a fenced block. The text comes from clap's
/// own `--help` path (a parse of `agency … --help`), so it is what the binary prints, layout included.
/// Options read from the environment show its name, never its value (`hide_env_values`), so the page does
/// not depend on the environment it was generated in.
pub fn reference_markdown() -> String {
    let mut out = String::new();
    out.push_str("## Every command's `--help`\n\n");
    out.push_str(
        "The text below is what `agency <command> --help` prints, generated from the same definitions \
         (regenerate with\n`AGENCY_UPDATE_CLI_DOC=1 cargo test -p agency-cli --test cli cli_doc`).\n",
    );
    let root = Cli::command();
    write_command(&mut out, &root, &mut vec!["agency".to_string()]);
    out
}

fn write_command(out: &mut String, command: &clap::Command, path: &mut Vec<String>) {
    let _ = write!(
        out,
        "\n### `{}`\n\n```text\n{}\n```\n",
        path.join(" "),
        help_text(path).trim_end()
    );
    for sub in command.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        path.push(sub.get_name().to_string());
        write_command(out, sub, path);
        path.pop();
    }
}

/// What `<path> --help` prints, from a fresh parser as the binary builds it.
fn help_text(path: &[String]) -> String {
    let argv = path.iter().map(String::as_str).chain(["--help"]);
    match Cli::command().try_get_matches_from(argv) {
        Err(err) if err.kind() == clap::error::ErrorKind::DisplayHelp => err.render().to_string(),
        Err(err) => format!("(`{} --help` failed: {err})", path.join(" ")),
        Ok(_) => format!("(`{} --help` printed no help)", path.join(" ")),
    }
}

/// `page` with everything after the marker line replaced by `generated`: the hand-written part, the marker,
/// a blank line, then the generated text ending in one newline.
pub fn splice(page: &str, generated: &str) -> Result<String, CliDocError> {
    let count = page.lines().filter(|line| *line == GENERATED_MARKER).count();
    match count {
        0 => return Err(CliDocError::MissingMarker),
        1 => {}
        n => return Err(CliDocError::RepeatedMarker(n)),
    }
    let mut kept = String::new();
    for line in page.lines() {
        kept.push_str(line);
        kept.push('\n');
        if line == GENERATED_MARKER {
            break;
        }
    }
    Ok(format!("{kept}\n{}\n", generated.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hand_written_part_is_kept_and_the_rest_replaced() {
        let page = format!("# Title\n\nprose\n{GENERATED_MARKER}\n\nold generated\n");
        let spliced = splice(&page, "new generated\n\n").unwrap();
        assert_eq!(
            spliced,
            format!("# Title\n\nprose\n{GENERATED_MARKER}\n\nnew generated\n")
        );
        assert_eq!(splice(&spliced, "new generated").unwrap(), spliced);
    }

    #[test]
    fn a_page_without_one_marker_is_an_error() {
        assert_eq!(splice("# Title\n", "x"), Err(CliDocError::MissingMarker));
        let twice = format!("{GENERATED_MARKER}\n{GENERATED_MARKER}\n");
        assert_eq!(splice(&twice, "x"), Err(CliDocError::RepeatedMarker(2)));
    }

    #[test]
    fn every_visible_subcommand_has_a_section() {
        let reference = reference_markdown();
        for path in [
            "agency",
            "agency run",
            "agency teachback submit",
            "agency goal",
            "agency hook",
        ] {
            assert!(
                reference.contains(&format!("\n### `{path}`\n")),
                "no section for `{path}`"
            );
        }
        assert!(!reference.contains("### `agency help`"));
        assert!(!reference.contains("--help` failed"), "{reference}");
        assert!(!reference.contains("printed no help"), "{reference}");
    }
}

//! docs/cli.md is generated below its marker line from the clap definitions: this fails when the page is out
//! of date (a flag, a command or a help line changed without the page), and rewrites it when
//! `AGENCY_UPDATE_CLI_DOC=1` is set.

use std::path::PathBuf;

use agency_cli::cli_doc;

use crate::support::Repo;

fn page_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md")
}

#[test]
fn cli_doc_is_up_to_date() {
    let path = page_path();
    let page = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
    let expected =
        cli_doc::splice(&page, &cli_doc::reference_markdown()).unwrap_or_else(|err| panic!("{err}"));
    if std::env::var("AGENCY_UPDATE_CLI_DOC").as_deref() == Ok("1") {
        std::fs::write(&path, &expected).unwrap_or_else(|err| panic!("write {}: {err}", path.display()));
        return;
    }
    if page != expected {
        let first_difference = page
            .lines()
            .zip(expected.lines())
            .enumerate()
            .find(|(_, (have, want))| have != want)
            .map(|(i, (have, want))| format!("line {}:\n  page:      {have}\n  generated: {want}", i + 1))
            .unwrap_or_else(|| "the page and the generated text differ in length".to_string());
        panic!(
            "docs/cli.md is out of date with the command line's definitions ({first_difference}).\n\
             Regenerate it: AGENCY_UPDATE_CLI_DOC=1 cargo test -p agency-cli --test cli cli_doc"
        );
    }
}

/// The generated text is what the binary prints: the same definitions, rendered the same way.
#[test]
fn cli_doc_matches_the_binarys_help() {
    let reference = cli_doc::reference_markdown();
    let repo = Repo::new();
    for path in [
        &["--help"][..],
        &["run", "--help"],
        &["teachback", "submit", "--help"],
        &["hook", "install", "--help"],
    ] {
        let run = repo.agency(path);
        assert_eq!(run.code(), Some(0), "{}", run.stderr());
        let name = path[..path.len() - 1].join(" ");
        let heading = if name.is_empty() {
            "### `agency`".to_string()
        } else {
            format!("### `agency {name}`")
        };
        let block = format!("{heading}\n\n```text\n{}\n```\n", run.stdout().trim_end());
        assert!(
            reference.contains(&block),
            "the generated section for `agency {name}` is not what `--help` prints:\n{}",
            run.stdout()
        );
    }
}

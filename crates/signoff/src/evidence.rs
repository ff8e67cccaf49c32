//! The mechanical evidence check: every file the evidence names must exist in the commit under review (read
//! from the clean checkout, so a log left uncommitted does not count), and every quoted line must be in
//! that file. A quote matches when each of its non-blank lines, trimmed, equals a trimmed line of the file,
//! consecutively (blank lines in between are skipped); case and inner spacing must be exact.

use std::path::{Component, Path};

use agency_exec::runtime::Evidence;

/// Largest evidence file read whole; a bigger one is still checked for existence, and quotes are looked
/// for in its first this-many bytes.
const MAX_EVIDENCE_BYTES: u64 = 8 * 1024 * 1024;

/// What is wrong with the evidence, one item per problem; empty when it holds.
pub fn check_evidence(checkout: &Path, evidence: &[Evidence]) -> Vec<String> {
    let mut problems = Vec::new();
    if evidence.is_empty() {
        problems.push(
            "no evidence: name at least one file in the commit (a saved log, a test, the changed code)"
                .to_string(),
        );
    }
    for item in evidence {
        if let Err(problem) = check_one(checkout, item) {
            problems.push(problem);
        }
    }
    problems
}

fn check_one(checkout: &Path, item: &Evidence) -> Result<(), String> {
    let path = item.path.trim();
    let relative = Path::new(path.trim_start_matches("./"));
    if path.is_empty()
        || relative.is_absolute()
        || relative.components().any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(format!(
            "evidence {path:?}: expected a path relative to the repository root, inside it"
        ));
    }
    let full = checkout.join(relative);
    // The file must be part of the commit: resolved inside the checkout (a symlink out of it is not), and
    // a regular file.
    let resolved = full
        .canonicalize()
        .map_err(|_| format!("evidence {path}: no such file in the commit under review"))?;
    let root = checkout
        .canonicalize()
        .map_err(|e| format!("reading the checkout: {e}"))?;
    if !resolved.starts_with(&root) || !resolved.is_file() {
        return Err(format!("evidence {path}: not a file in the commit under review"));
    }
    let Some(quote) = item.quote.as_deref().filter(|q| !q.trim().is_empty()) else {
        return Ok(());
    };
    let text = read_capped(&resolved).map_err(|e| format!("evidence {path}: cannot be read: {e}"))?;
    if quote_matches(&text, quote) {
        Ok(())
    } else {
        Err(format!(
            "evidence {path}: the quoted line {:?} is not in the file",
            quote.trim()
        ))
    }
}

fn read_capped(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_EVIDENCE_BYTES)
        .read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Whether the non-blank lines of `quote` appear, trimmed and in order, as consecutive non-blank lines of
/// `text`.
pub fn quote_matches(text: &str, quote: &str) -> bool {
    let wanted: Vec<&str> = quote.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if wanted.is_empty() {
        return true;
    }
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines
        .windows(wanted.len())
        .any(|window| window == wanted.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(path: &str, quote: Option<&str>) -> Evidence {
        Evidence {
            path: path.to_string(),
            quote: quote.map(str::to_string),
        }
    }

    #[test]
    fn quotes_match_whole_trimmed_lines_in_order() {
        let text = "Ran 1 test in 0.001s\n\n   OK  \nend\n";
        assert!(quote_matches(text, "OK"));
        assert!(quote_matches(text, "  Ran 1 test in 0.001s\nOK"));
        assert!(!quote_matches(text, "Ran 5 tests in 0.001s"));
        assert!(!quote_matches(text, "O"));
        assert!(!quote_matches(text, "OK\nRan 1 test in 0.001s"));
        assert!(!quote_matches(text, "ok"));
    }

    #[test]
    fn files_must_exist_inside_the_checkout_and_quotes_must_be_in_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        std::fs::write(dir.path().join("logs/run.log"), "Ran 1 test\nOK\n").unwrap();
        assert!(check_evidence(dir.path(), &[evidence("logs/run.log", Some("OK"))]).is_empty());
        assert!(check_evidence(dir.path(), &[evidence("./logs/run.log", None)]).is_empty());
        let problems = check_evidence(
            dir.path(),
            &[
                evidence("logs/missing.log", None),
                evidence("logs/run.log", Some("Ran 9 tests")),
                evidence("../etc/passwd", None),
                evidence("/etc/passwd", None),
                evidence("logs", None),
            ],
        );
        assert_eq!(problems.len(), 5, "{problems:#?}");
        assert!(problems[0].contains("no such file"));
        assert!(problems[1].contains("\"Ran 9 tests\" is not in the file"));
        assert!(check_evidence(dir.path(), &[])[0].starts_with("no evidence"));
    }
}

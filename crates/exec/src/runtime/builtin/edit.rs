//! `edit_file`: exact string replacement. The old text must occur exactly once (or `replace_all` is
//! set), and when it does not the error says why — not found, found N times and where — with a hint the
//! model can act on (a near match that differs only in whitespace or case, say), because "no match" alone
//! sends models into loops of blind retries.

use serde::Deserialize;

use super::confine::Confinement;
use super::files::{MAX_FILE_BYTES, ToolResult};

/// `edit_file` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// Replaces `old_string` by `new_string` in the file.
pub fn edit_file(confinement: &Confinement, args: EditArgs) -> ToolResult {
    let shown = args.path.as_str();
    if args.old_string.is_empty() {
        return Err(format!(
            "old_string is empty; to create `{shown}` or replace it whole use write_file"
        ));
    }
    if args.old_string == args.new_string {
        return Err("old_string and new_string are the same; nothing would change".to_owned());
    }
    let path = confinement.writable(shown).map_err(|e| e.0)?;
    if !path.is_file() {
        return Err(format!("`{shown}` does not exist; create it with write_file"));
    }
    let meta = std::fs::metadata(&path).map_err(|e| format!("`{shown}`: {e}"))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!("`{shown}` is too large to edit ({} bytes)", meta.len()));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("`{shown}`: {e}"))?;
    let updated = replace(&text, &args.old_string, &args.new_string, args.replace_all)
        .map_err(|why| format!("edit_file `{shown}`: {why}"))?;
    std::fs::write(&path, &updated.text).map_err(|e| format!("`{shown}`: {e}"))?;
    Ok(format!(
        "edited {}: {} replacement{} (line {})",
        confinement.relative(&path),
        updated.count,
        if updated.count == 1 { "" } else { "s" },
        updated.first_line
    ))
}

/// The result of a successful replacement.
#[derive(Debug, PartialEq, Eq)]
pub struct Replaced {
    /// The new file content.
    pub text: String,
    /// How many occurrences were replaced.
    pub count: usize,
    /// The line of the first replacement, from 1.
    pub first_line: usize,
}

/// Replaces in `text`, or says why it cannot.
pub fn replace(text: &str, old: &str, new: &str, all: bool) -> Result<Replaced, String> {
    let starts: Vec<usize> = text.match_indices(old).map(|(i, _)| i).collect();
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    match starts.as_slice() {
        [] => Err(not_found_hint(text, old)),
        [_, _, ..] if !all => {
            let lines: Vec<String> = starts.iter().take(10).map(|&s| line_of(s).to_string()).collect();
            Err(format!(
                "old_string was found {} times (at lines {}); it must be unique. Include more of the \
                 surrounding lines in old_string to pick one, or set replace_all to change every occurrence",
                starts.len(),
                lines.join(", ")
            ))
        }
        [first, ..] => Ok(Replaced {
            text: if all {
                text.replace(old, new)
            } else {
                text.replacen(old, new, 1)
            },
            count: starts.len(),
            first_line: line_of(*first),
        }),
    }
}

fn not_found_hint(text: &str, old: &str) -> String {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let base = "old_string was not found";
    if text.to_lowercase().contains(&old.to_lowercase()) {
        return format!("{base}; it does occur with different upper/lower case. Copy the text exactly");
    }
    if squash(text).contains(&squash(old)) {
        return format!(
            "{base}; a match exists that differs only in whitespace or line breaks (tabs vs spaces, \
             indentation, trailing spaces). Re-read the file and copy the text exactly, without the line \
             numbers read_file adds"
        );
    }
    if let Some(first) = old.lines().find(|l| !l.trim().is_empty())
        && let Some(line) = text.lines().position(|l| l.contains(first.trim()))
    {
        return format!(
            "{base}; its first line occurs at line {} but the lines after it differ. Re-read the file \
             around that line and copy the text exactly",
            line + 1
        );
    }
    format!("{base}; not even its first line occurs in the file. Re-read the file: it may have changed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_match_is_replaced() {
        let r = replace("a\nb\nc\n", "b", "B", false).unwrap();
        assert_eq!(
            r,
            Replaced {
                text: "a\nB\nc\n".into(),
                count: 1,
                first_line: 2
            }
        );
        let all = replace("x x x", "x", "y", true).unwrap();
        assert_eq!((all.text.as_str(), all.count), ("y y y", 3));
    }

    #[test]
    fn failures_say_why() {
        let dup = replace("x\ny\nx\n", "x", "z", false).unwrap_err();
        assert!(dup.contains("found 2 times (at lines 1, 3)"), "{dup}");
        let case = replace("Hello", "hello", "bye", false).unwrap_err();
        assert!(case.contains("upper/lower case"), "{case}");
        let space = replace(
            "fn a() {\n\treturn 1;\n}",
            "fn a() {\n    return 1;\n}",
            "",
            false,
        )
        .unwrap_err();
        assert!(space.contains("whitespace"), "{space}");
        let partial = replace("fn a() {\n  one\n}", "fn a() {\n  two\n}", "", false).unwrap_err();
        assert!(partial.contains("first line occurs at line 1"), "{partial}");
        let none = replace("abc", "zzz", "", false).unwrap_err();
        assert!(none.contains("not even its first line"), "{none}");
    }
}

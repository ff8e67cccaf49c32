//! A unified diff for review: a summary of the files it touches (added, deleted, renamed, lines in and out)
//! followed by the patch, coloured when the reader is a terminal.

use std::fmt::Write as _;

/// What a patch does to one file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileStat {
    /// The path after the change (before it, for a deleted file).
    pub path: String,
    /// `added`, `deleted`, `renamed` (from `from`) or `modified`.
    pub change: &'static str,
    /// The path before a rename.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// A binary file: no line counts.
    pub binary: bool,
}

/// The b/ path of a `diff --git a/X b/Y` header (paths with spaces are taken as git prints them).
fn header_path(header: &str) -> String {
    let rest = header.trim_start_matches("diff --git ");
    match rest.rsplit_once(" b/") {
        Some((_, b)) => b.to_string(),
        None => rest.to_string(),
    }
}

/// The files `patch` changes, in its order.
pub fn file_stats(patch: &str) -> Vec<FileStat> {
    let mut files: Vec<FileStat> = Vec::new();
    for line in patch.lines() {
        if line.starts_with("diff --git ") {
            files.push(FileStat {
                path: header_path(line),
                change: "modified",
                from: None,
                added: 0,
                removed: 0,
                binary: false,
            });
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if line.starts_with("new file mode") {
            file.change = "added";
        } else if line.starts_with("deleted file mode") {
            file.change = "deleted";
        } else if let Some(from) = line.strip_prefix("rename from ") {
            file.change = "renamed";
            file.from = Some(from.to_string());
        } else if line.starts_with("Binary files ") || line == "GIT binary patch" {
            file.binary = true;
        } else if line.starts_with("+++ ") || line.starts_with("--- ") {
            // The file names of the hunk header, not content.
        } else if line.starts_with('+') {
            file.added += 1;
        } else if line.starts_with('-') {
            file.removed += 1;
        }
    }
    files
}

/// "2 files changed, +3 −1" and one line per file.
pub fn render_summary(files: &[FileStat]) -> String {
    let mut out = String::new();
    let (added, removed) = files
        .iter()
        .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
    let _ = writeln!(
        out,
        "{} file{} changed, +{added} −{removed}",
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    );
    for file in files {
        let mark = match file.change {
            "added" => "A",
            "deleted" => "D",
            "renamed" => "R",
            _ => "M",
        };
        let counts = if file.binary {
            "binary".to_string()
        } else {
            format!("+{} −{}", file.added, file.removed)
        };
        let path = match &file.from {
            Some(from) => format!("{from} → {}", file.path),
            None => file.path.clone(),
        };
        let _ = writeln!(out, "  {mark} {path}  {counts}");
    }
    out
}

const RESET: &str = "\x1b[0m";

/// The patch, each line coloured by what it is when `colour` is set: additions green, removals red, hunk
/// headers cyan, file headers bold. Escape sequences inside the patch (an agent's file may hold any bytes)
/// are shown, not obeyed: ESC becomes `^[`.
pub fn render_patch(patch: &str, colour: bool) -> String {
    let mut out = String::with_capacity(patch.len());
    for line in patch.lines() {
        let line = line.replace('\x1b', "^[");
        let style = if !colour {
            None
        } else if line.starts_with("diff --git ") || line.starts_with("+++ ") || line.starts_with("--- ") {
            Some("\x1b[1m")
        } else if line.starts_with("@@") {
            Some("\x1b[36m")
        } else if line.starts_with('+') {
            Some("\x1b[32m")
        } else if line.starts_with('-') {
            Some("\x1b[31m")
        } else {
            None
        };
        match style {
            Some(style) => {
                let _ = writeln!(out, "{style}{line}{RESET}");
            }
            None => {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/add.sh b/add.sh
index 1111111..2222222 100644
--- a/add.sh
+++ b/add.sh
@@ -1 +1 @@
-echo $(($1 - $2))
+echo $(($1 + $2))
diff --git a/notes.md b/notes.md
new file mode 100644
--- /dev/null
+++ b/notes.md
@@ -0,0 +1,2 @@
+one
+two \x1b[2J
diff --git a/old.sh b/new.sh
similarity index 100%
rename from old.sh
rename to new.sh
";

    #[test]
    fn the_summary_counts_each_files_lines_and_names_what_happened_to_it() {
        let files = file_stats(PATCH);
        insta::assert_snapshot!(render_summary(&files), @r"
        3 files changed, +3 −1
          M add.sh  +1 −1
          A notes.md  +2 −0
          R old.sh → new.sh  +0 −0
        ");
    }

    #[test]
    fn colour_marks_additions_and_removals_and_never_passes_an_escape_through() {
        let plain = render_patch(PATCH, false);
        assert!(!plain.contains('\x1b'), "{plain}");
        assert!(plain.contains("+two ^[[2J"), "{plain}");
        let coloured = render_patch(PATCH, true);
        assert!(
            coloured.contains("\x1b[32m+echo $(($1 + $2))\x1b[0m"),
            "{coloured}"
        );
        assert!(
            coloured.contains("\x1b[31m-echo $(($1 - $2))\x1b[0m"),
            "{coloured}"
        );
        assert!(coloured.contains("\x1b[36m@@ -1 +1 @@\x1b[0m"), "{coloured}");
        assert!(coloured.contains("\x1b[32m+two ^[[2J\x1b[0m"), "{coloured}");
    }
}

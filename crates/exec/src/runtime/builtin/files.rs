//! The file tools that read: read a file (line ranges, a size cap), list files (recursively, a glob,
//! `.gitignore` respected) and grep (a regex over file contents, `.gitignore` respected), plus writing a
//! whole file. Every path goes through [`Confinement`] first; every answer is bounded so one call cannot
//! flood the model's context.

use std::fmt::Write as _;
use std::path::Path;

use globset::{Glob, GlobMatcher};
use ignore::WalkBuilder;
use regex::RegexBuilder;
use serde::Deserialize;

use super::confine::Confinement;

/// Files larger than this are not read whole or searched.
pub const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
/// The most lines one read returns.
pub const MAX_READ_LINES: usize = 2_000;
/// The most bytes one read returns.
pub const MAX_READ_BYTES: usize = 100 * 1024;
/// The most entries a listing returns.
pub const MAX_LIST_ENTRIES: usize = 1_000;
/// The most matching lines a grep returns.
pub const MAX_GREP_MATCHES: usize = 200;
/// Longer matching lines are cut.
const MAX_GREP_LINE: usize = 300;

/// A tool failure, phrased for the agent.
pub type ToolResult = Result<String, String>;

/// `read_file` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

/// Reads a file as numbered lines.
pub fn read_file(confinement: &Confinement, args: ReadArgs) -> ToolResult {
    let path = confinement.existing(&args.path).map_err(|e| e.0)?;
    if path.is_dir() {
        return Err(format!("`{}` is a directory; use list_files", args.path));
    }
    let text = read_text(&path, &args.path)?;
    let first = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(MAX_READ_LINES).min(MAX_READ_LINES);
    let total = text.lines().count();
    if total > 0 && first > total {
        return Err(format!(
            "`{}` has {total} lines; offset {first} is past the end",
            args.path
        ));
    }
    let mut out = String::new();
    let mut last = first.saturating_sub(1);
    for (n, line) in text.lines().enumerate().skip(first - 1).take(limit) {
        if out.len() + line.len() > MAX_READ_BYTES {
            break;
        }
        let _ = writeln!(out, "{:>6}\t{line}", n + 1);
        last = n + 1;
    }
    if last < total {
        let _ = write!(
            out,
            "[lines {first}-{last} of {total}; read on with offset {}]",
            last + 1
        );
    }
    if total == 0 {
        out.push_str("[empty file]");
    }
    Ok(out)
}

fn read_text(path: &Path, shown: &str) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("`{shown}`: {e}"))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "`{shown}` is {} bytes, more than the {MAX_FILE_BYTES}-byte limit; use grep to find what you need",
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("`{shown}`: {e}"))?;
    String::from_utf8(bytes).map_err(|_| format!("`{shown}` is not UTF-8 text"))
}

/// `list_files` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
}

/// Lists files (not directories) under a directory, sorted, relative to the worktree.
pub fn list_files(confinement: &Confinement, args: ListArgs) -> ToolResult {
    let dir = confinement
        .existing(args.path.as_deref().unwrap_or("."))
        .map_err(|e| e.0)?;
    let glob = args.glob.as_deref().map(matcher).transpose()?;
    let mut files = Vec::new();
    let mut more = false;
    for path in walk(confinement, &dir) {
        let rel = confinement.relative(&path);
        if glob.as_ref().is_some_and(|g| !g.is_match(&rel)) {
            continue;
        }
        if files.len() == MAX_LIST_ENTRIES {
            more = true;
            break;
        }
        files.push(rel);
    }
    files.sort();
    let mut out = files.join("\n");
    if files.is_empty() {
        out.push_str("[no files]");
    }
    if more {
        let _ = write!(
            out,
            "\n[first {MAX_LIST_ENTRIES} files only; narrow with path or glob]"
        );
    }
    Ok(out)
}

/// `grep` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
}

/// Lines matching a regex, as `path:line: text`.
pub fn grep(confinement: &Confinement, args: GrepArgs) -> ToolResult {
    let regex = RegexBuilder::new(&args.pattern)
        .case_insensitive(args.case_insensitive)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("invalid regex: {e}"))?;
    let start = confinement
        .existing(args.path.as_deref().unwrap_or("."))
        .map_err(|e| e.0)?;
    let glob = args.glob.as_deref().map(matcher).transpose()?;
    let mut paths: Vec<_> = walk(confinement, &start).collect();
    paths.sort();
    let mut out = String::new();
    let mut matches = 0;
    for path in paths {
        let rel = confinement.relative(&path);
        if glob.as_ref().is_some_and(|g| !g.is_match(&rel)) {
            continue;
        }
        // Binary, huge or unreadable files are skipped silently, as grep tools do.
        let Ok(text) = read_text(&path, &rel) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            if matches == MAX_GREP_MATCHES {
                let _ = write!(
                    out,
                    "[first {MAX_GREP_MATCHES} matches only; narrow the pattern, path or glob]"
                );
                return Ok(out);
            }
            let _ = writeln!(
                out,
                "{rel}:{}: {}",
                n + 1,
                crate::runtime::redact::truncate(line, MAX_GREP_LINE)
            );
            matches += 1;
        }
    }
    if matches == 0 {
        out.push_str("[no matches]");
    }
    Ok(out)
}

/// `write_file` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    path: String,
    content: String,
}

/// Creates or overwrites a file, creating parent directories.
pub fn write_file(confinement: &Confinement, args: WriteArgs) -> ToolResult {
    let path = confinement.writable(&args.path).map_err(|e| e.0)?;
    let existed = path.exists();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("`{}`: {e}", args.path))?;
    }
    std::fs::write(&path, &args.content).map_err(|e| format!("`{}`: {e}", args.path))?;
    Ok(format!(
        "{} {} ({} bytes)",
        if existed { "overwrote" } else { "created" },
        confinement.relative(&path),
        args.content.len()
    ))
}

fn matcher(glob: &str) -> Result<GlobMatcher, String> {
    Glob::new(glob)
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("invalid glob `{glob}`: {e}"))
}

/// Files under `start` (or `start` itself), skipping `.git` and what `.gitignore` excludes. Symlinks are
/// not followed, so a walk cannot leave the worktree; hidden files are included (`.github/`, `.env.example`).
fn walk<'a>(confinement: &'a Confinement, start: &Path) -> impl Iterator<Item = std::path::PathBuf> + 'a {
    WalkBuilder::new(start)
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path)
        .filter(move |path| path.starts_with(confinement.root()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Confinement) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("src/lib.rs"), "fn alpha() {}\nfn beta() {}\n").unwrap();
        std::fs::write(root.join("target/out.rs"), "fn alpha() {}\n").unwrap();
        std::fs::write(root.join("notes.md"), "Alpha notes\n").unwrap();
        let confinement = Confinement::new(root).unwrap();
        (dir, confinement)
    }

    fn read(c: &Confinement, path: &str, offset: Option<usize>, limit: Option<usize>) -> ToolResult {
        read_file(
            c,
            ReadArgs {
                path: path.into(),
                offset,
                limit,
            },
        )
    }

    #[test]
    fn reads_numbered_line_ranges() {
        let (_d, c) = setup();
        assert_eq!(
            read(&c, "src/lib.rs", None, None).unwrap(),
            "     1\tfn alpha() {}\n     2\tfn beta() {}\n"
        );
        assert_eq!(
            read(&c, "src/lib.rs", Some(1), Some(1)).unwrap(),
            "     1\tfn alpha() {}\n[lines 1-1 of 2; read on with offset 2]"
        );
        assert!(
            read(&c, "src/lib.rs", Some(9), None)
                .unwrap_err()
                .contains("past the end")
        );
        assert!(read(&c, "src", None, None).unwrap_err().contains("directory"));
    }

    #[test]
    fn listing_and_grep_respect_gitignore_and_globs() {
        let (_d, c) = setup();
        let all = list_files(
            &c,
            ListArgs {
                path: None,
                glob: None,
            },
        )
        .unwrap();
        assert_eq!(all, ".gitignore\nnotes.md\nsrc/lib.rs");
        let rs = list_files(
            &c,
            ListArgs {
                path: None,
                glob: Some("**/*.rs".into()),
            },
        )
        .unwrap();
        assert_eq!(rs, "src/lib.rs");
        let hits = grep(
            &c,
            GrepArgs {
                pattern: "alpha".into(),
                path: None,
                glob: None,
                case_insensitive: true,
            },
        )
        .unwrap();
        assert_eq!(hits, "notes.md:1: Alpha notes\nsrc/lib.rs:1: fn alpha() {}\n");
        assert!(
            grep(
                &c,
                GrepArgs {
                    pattern: "(".into(),
                    path: None,
                    glob: None,
                    case_insensitive: false
                }
            )
            .unwrap_err()
            .contains("invalid regex")
        );
    }

    #[test]
    fn writes_create_parents() {
        let (_d, c) = setup();
        assert_eq!(
            write_file(
                &c,
                WriteArgs {
                    path: "a/b/c.txt".into(),
                    content: "hi".into()
                }
            )
            .unwrap(),
            "created a/b/c.txt (2 bytes)"
        );
        assert_eq!(std::fs::read_to_string(c.root().join("a/b/c.txt")).unwrap(), "hi");
    }
}

//! A branch's commit read from the ref files, without starting git.
//!
//! git's default ref store (the "files" backend, `gitrepository-layout(5)`) keeps a branch it has written
//! as the file `refs/heads/<name>` in the common git directory, holding the commit id and a newline; it
//! writes that file whole (a lock file renamed over it) on every update. `git pack-refs` (which `git gc`
//! runs) moves loose refs into `packed-refs`, one `<id> <name>` line per ref, sorted by name; a loose file
//! wins over a packed line, and git writes `packed-refs` before it deletes the loose files, so reading the
//! loose file first, then `packed-refs`, is git's own order and never misses a ref that exists.
//!
//! The runner resolves a slice's own branch and its workstream branch when the slice is committed, signed
//! off and merged; reading a small file instead of starting `rev-parse` is most of that cost. Once a long run
//! has made enough objects for `git gc --auto` to pack its refs, most of them are only in `packed-refs`:
//! that file is searched in place (a binary search of its sorted lines with positioned reads, so nothing of
//! it is held however many branches the run has). Anything else — the reftable backend, an unsorted
//! `packed-refs`, a symbolic ref, a name that is not plainly a branch — is left to git
//! ([`Repo::rev_parse_all`]).

use std::cmp::Ordering;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::Repo;

/// How much of `packed-refs` one positioned read takes: a line is an id and a ref name.
const READ_WINDOW: usize = 256;

impl Repo {
    /// The commit id of the full branch name `rev` (`refs/heads/…`) from its loose ref file, or else from
    /// `packed-refs`; `None` when git must be asked.
    pub(super) fn branch_from_files(&self, rev: &str) -> Option<String> {
        let name = rev.strip_prefix("refs/heads/")?;
        let common = self.common_dir();
        // A probe knows no git directory; with reftable, `refs/heads` is a placeholder file.
        if common.as_os_str().is_empty() || !is_plain_branch_name(name) || common.join("reftable").exists() {
            return None;
        }
        match std::fs::read(common.join("refs/heads").join(name)) {
            Ok(text) => {
                let id = text.strip_suffix(b"\n")?;
                is_object_id(id).then(|| String::from_utf8_lossy(id).into_owned())
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => packed_ref(common, rev),
            Err(_) => None,
        }
    }
}

/// The id `full_name` has in `common/packed-refs`, found by a binary search of its lines; `None` when the
/// file is missing, not marked sorted, or has no such ref.
fn packed_ref(common: &Path, full_name: &str) -> Option<String> {
    let file = File::open(common.join("packed-refs")).ok()?;
    let len = file.metadata().ok()?.len();
    let header = line_at(&file, 0, len)?;
    // git has written the `sorted` trait since 2.14; a file without it may be in any order.
    let sorted = header
        .strip_prefix(b"# pack-refs with:")
        .is_some_and(|traits| traits.split(|b| *b == b' ').any(|t| t == b"sorted"));
    if !sorted {
        return None;
    }
    let target = full_name.as_bytes();
    // Invariant: if the ref's line exists, it starts in [lo, hi); lo is always the start of a line.
    let (mut lo, mut hi) = (header.len() as u64 + 1, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let Some((start, line)) = record_from(&file, lo, mid, hi, len)? else {
            // No ref line starts in [mid, hi).
            hi = mid;
            continue;
        };
        let (id, name) = split_record(&line)?;
        match name.cmp(target) {
            Ordering::Equal => return is_object_id(id).then(|| String::from_utf8_lossy(id).into_owned()),
            Ordering::Less => lo = start + line.len() as u64 + 1,
            // Nothing starts in [mid, start), so the ref's line, if any, starts before mid.
            Ordering::Greater => hi = mid,
        }
    }
    None
}

/// The first ref line (not a `^` peeled line) starting at or after `at` and before `hi`, whole (it may end
/// past `hi`; the file is `len` long), with its start; `Some(None)` when there is none. `lo` (at or before
/// `at`) is the start of a line.
fn record_from(file: &File, lo: u64, at: u64, hi: u64, len: u64) -> Option<Option<(u64, Vec<u8>)>> {
    let mut start = if at == lo {
        at
    } else {
        // The line holding byte `at - 1` ends somewhere at or after it; the next line starts after that.
        let before = line_at(file, at - 1, len)?;
        at + before.len() as u64
    };
    while start < hi {
        let line = line_at(file, start, len)?;
        if !line.starts_with(b"^") {
            return Some(Some((start, line)));
        }
        start += line.len() as u64 + 1;
    }
    Some(None)
}

/// The bytes from `at` up to (not including) the next newline, or up to `end`.
fn line_at(file: &File, at: u64, end: u64) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    let mut buf = [0u8; READ_WINDOW];
    let mut pos = at;
    while pos < end {
        let want = usize::try_from((end - pos).min(READ_WINDOW as u64)).ok()?;
        let read = file.read_at(&mut buf[..want], pos).ok()?;
        if read == 0 {
            break;
        }
        if let Some(newline) = buf[..read].iter().position(|b| *b == b'\n') {
            line.extend_from_slice(&buf[..newline]);
            return Some(line);
        }
        line.extend_from_slice(&buf[..read]);
        pos += read as u64;
    }
    Some(line)
}

/// `<id> <name>` split in two.
fn split_record(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let space = line.iter().position(|b| *b == b' ')?;
    Some((&line[..space], &line[space + 1..]))
}

/// Whether `name` is a branch name git would accept whose file stays inside `refs/heads` (no empty, dotted
/// or `.lock` component, none of the characters git refuses in a ref name). A name git would refuse is
/// left to git, which says why.
fn is_plain_branch_name(name: &str) -> bool {
    name.split('/').all(|component| {
        !component.is_empty() && !component.starts_with('.') && !component.ends_with(".lock")
    }) && !name.contains("..")
        && !name.contains("@{")
        && !name
            .chars()
            .any(|c| c.is_ascii_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
}

/// A full SHA-1 or SHA-256 object id in git's lower-case hex.
fn is_object_id(id: &[u8]) -> bool {
    matches!(id.len(), 40 | 64) && id.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GitOptions;

    /// A repository with three commits and `n` branches spread over them, every ref packed.
    fn packed_repository(dir: &Path, n: usize) -> (Repo, Vec<(String, String)>) {
        let repo = Repo::init(dir, "main", GitOptions::default()).unwrap();
        let mut ids = Vec::new();
        for i in 0..3 {
            std::fs::write(dir.join("f"), format!("{i}\n")).unwrap();
            repo.commit_all(&format!("c{i}")).unwrap();
            ids.push(repo.head_rev().unwrap());
        }
        repo.run_git(&["tag", "-a", "-m", "annotated", "v1", "HEAD~1"])
            .unwrap();
        let heads = repo.common_dir().join("refs/heads");
        for i in 0..n {
            // Names sharing prefixes and of different lengths, as a run's are, and one longer than a read.
            let name = match i {
                0 => format!("long{}", format!("/{}", "y".repeat(100)).repeat(READ_WINDOW / 50)),
                _ => format!("agency/0123abcd/ws-{:05}/{}{i}", i % 7, "x".repeat(i % 5 + 1)),
            };
            std::fs::create_dir_all(heads.join(&name).parent().unwrap()).unwrap();
            std::fs::write(heads.join(&name), format!("{}\n", ids[i % 3])).unwrap();
        }
        repo.run_git(&["pack-refs", "--all"]).unwrap();
        let listed = repo
            .run_git(&["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"])
            .unwrap();
        let refs = listed
            .stdout
            .text()
            .lines()
            .map(|l| {
                let (name, id) = l.split_once(' ').unwrap();
                (name.to_string(), id.to_string())
            })
            .collect();
        (repo, refs)
    }

    /// After `git pack-refs`, every branch is still read without git, and reads what git reads.
    #[test]
    fn packed_branches_are_found_by_their_sorted_lines() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, refs) = packed_repository(dir.path(), 300);
        assert_eq!(refs.len(), 301);
        assert!(
            !repo.common_dir().join("refs/heads/main").exists(),
            "packed, not loose"
        );
        for (name, id) in &refs {
            assert_eq!(
                repo.branch_from_files(name).as_deref(),
                Some(id.as_str()),
                "{name}"
            );
        }
        for missing in [
            "refs/heads/agency",
            "refs/heads/agency/0123abcd/ws-00001/x",
            "refs/heads/zzz",
            "refs/heads/a",
        ] {
            assert_eq!(repo.branch_from_files(missing), None, "{missing}");
        }
        // A tag's peeled line is not a branch, and is stepped over.
        let packed = std::fs::read_to_string(repo.common_dir().join("packed-refs")).unwrap();
        assert!(packed.lines().any(|l| l.starts_with('^')), "{packed}");
    }

    /// A branch updated after packing has a loose file again, which wins over its stale packed line.
    #[test]
    fn a_loose_ref_wins_over_its_packed_line() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, _) = packed_repository(dir.path(), 10);
        let first = repo.rev_parse("main~2").unwrap();
        repo.run_git(&["update-ref", "refs/heads/main", &first]).unwrap();
        assert_eq!(repo.branch_from_files("refs/heads/main"), Some(first));
    }

    /// A `packed-refs` not marked sorted may be in any order: git is asked instead.
    #[test]
    fn an_unsorted_packed_refs_is_left_to_git() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, refs) = packed_repository(dir.path(), 10);
        let path = repo.common_dir().join("packed-refs");
        let text = std::fs::read_to_string(&path).unwrap();
        let (_, body) = text.split_once('\n').unwrap();
        std::fs::write(&path, format!("# pack-refs with: peeled\n{body}")).unwrap();
        assert_eq!(repo.branch_from_files(&refs[0].0), None);
        assert_eq!(
            repo.rev_parse_all(&[&refs[0].0]).unwrap(),
            vec![refs[0].1.clone()]
        );
    }

    #[test]
    fn only_plain_branch_names_and_full_ids_are_read() {
        for name in ["main", "agency/0123abcd/ws-arith/work", "a.b/c_d-e"] {
            assert!(is_plain_branch_name(name), "{name}");
        }
        for name in [
            "",
            "a//b",
            "../x",
            "a/../../b",
            ".hidden",
            "a/.b",
            "x.lock",
            "a..b",
            "a@{1}",
            "a b",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[",
            "a\\b",
            "a\nb",
            "/a",
            "a/",
        ] {
            assert!(!is_plain_branch_name(name), "{name:?}");
        }
        assert!(is_object_id(&[b'a'; 40]));
        assert!(is_object_id(&[b'0'; 64]));
        assert!(!is_object_id(&[b'A'; 40]));
        assert!(!is_object_id(&[b'a'; 41]));
        assert!(!is_object_id(b"ref: refs/heads/main"));
    }
}

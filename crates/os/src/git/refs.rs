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
//! that file is searched through a sparse index of its sorted lines made once per version of the file
//! ([`PackedIndex`]). Anything else — the reftable backend, an unsorted
//! `packed-refs`, a symbolic ref, a name that is not plainly a branch — is left to git
//! ([`Repo::rev_parse_all`]).

use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::Repo;

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

/// Every how many ref lines of `packed-refs` [`PackedIndex`] keeps one: a lookup reads at most this many
/// lines (some 12 KiB) after a binary search in memory.
const INDEX_EVERY: usize = 128;

/// How many repositories' `packed-refs` indexes are kept (a runner has one repository).
const INDEXES_KEPT: usize = 8;

/// The id `full_name` has in `common/packed-refs`; `None` when the file is missing, not marked sorted, or
/// has no such ref.
fn packed_ref(common: &Path, full_name: &str) -> Option<String> {
    let path = common.join("packed-refs");
    let file = File::open(&path).ok()?;
    let version = FileVersion::of(&file.metadata().ok()?);
    let index = match kept_index(&path, version) {
        Some(index) => index,
        None => {
            let built = Arc::new(PackedIndex::build(&file, version)?);
            keep_index(path, Arc::clone(&built));
            built
        }
    };
    index.find(&file, full_name.as_bytes())
}

/// Which version of a file an index was made from: git rewrites `packed-refs` whole (a new file renamed over
/// the old), so a rewrite changes at least its inode and its change time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileVersion {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileVersion {
    fn of(meta: &std::fs::Metadata) -> Self {
        FileVersion {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// A sparse index of one version of a `packed-refs` file: every [`INDEX_EVERY`]th ref line's name and
/// where the line starts. A long run's `packed-refs` holds a line per branch it made (tens of thousands);
/// a binary search of the file itself took some thirty system calls per lookup, this takes one read. It
/// is made once per version of the file (each `git pack-refs`), reading it through once, and holds a
/// hundred-and-twenty-eighth of its names.
#[derive(Debug)]
struct PackedIndex {
    version: FileVersion,
    /// git has written the `sorted` trait since 2.14; a file without it may be in any order, and is left to
    /// git.
    sorted: bool,
    marks: Vec<(Box<[u8]>, u64)>,
}

impl PackedIndex {
    /// Reads `file` (a `packed-refs` at `version`) through once; `None` when reading fails.
    fn build(file: &File, version: FileVersion) -> Option<Self> {
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        let mut line = Vec::new();
        let mut at = 0u64;
        let mut sorted = false;
        let mut marks = Vec::new();
        let mut refs = 0usize;
        loop {
            line.clear();
            let read = reader.read_until(b'\n', &mut line).ok()?;
            if read == 0 {
                break;
            }
            let start = at;
            at += read as u64;
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            if start == 0
                && let Some(traits) = text.strip_prefix(b"# pack-refs with:")
            {
                sorted = traits.split(|b| *b == b' ').any(|t| t == b"sorted");
                continue;
            }
            if !sorted {
                break;
            }
            if text.starts_with(b"^") {
                continue;
            }
            if refs.is_multiple_of(INDEX_EVERY) {
                let (_, name) = split_record(text)?;
                marks.push((Box::from(name), start));
            }
            refs += 1;
        }
        Some(PackedIndex {
            version,
            sorted,
            marks,
        })
    }

    /// The id of `target` read from `file` (the version indexed): the window of lines between the two
    /// marks around it, read at once and scanned.
    fn find(&self, file: &File, target: &[u8]) -> Option<String> {
        if !self.sorted {
            return None;
        }
        // The last mark at or before the ref's name; none means the name sorts before every ref.
        let after = self.marks.partition_point(|(name, _)| name.as_ref() <= target);
        let start = self.marks.get(after.checked_sub(1)?)?.1;
        let end = self.marks.get(after).map_or(self.version.len, |(_, at)| *at);
        let mut window = vec![0; usize::try_from(end.checked_sub(start)?).ok()?];
        file.read_exact_at(&mut window, start).ok()?;
        for line in window.split(|b| *b == b'\n') {
            if line.is_empty() || line.starts_with(b"^") {
                continue;
            }
            let (id, name) = split_record(line)?;
            match name.cmp(target) {
                Ordering::Less => {}
                Ordering::Equal => return is_object_id(id).then(|| String::from_utf8_lossy(id).into_owned()),
                Ordering::Greater => return None,
            }
        }
        None
    }
}

/// The `packed-refs` indexes made so far, by path.
fn indexes() -> MutexGuard<'static, Vec<(PathBuf, Arc<PackedIndex>)>> {
    static INDEXES: Mutex<Vec<(PathBuf, Arc<PackedIndex>)>> = Mutex::new(Vec::new());
    INDEXES.lock().unwrap_or_else(PoisonError::into_inner)
}

fn kept_index(path: &Path, version: FileVersion) -> Option<Arc<PackedIndex>> {
    indexes()
        .iter()
        .find(|(kept, index)| kept == path && index.version == version)
        .map(|(_, index)| Arc::clone(index))
}

/// Keeps `index` as the one of `path`, in place of an older version's; the oldest repository's goes when
/// [`INDEXES_KEPT`] are kept.
fn keep_index(path: PathBuf, index: Arc<PackedIndex>) {
    let mut kept = indexes();
    kept.retain(|(other, _)| *other != path);
    if kept.len() >= INDEXES_KEPT {
        kept.remove(0);
    }
    kept.push((path, index));
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
                0 => format!("long{}", format!("/{}", "y".repeat(100)).repeat(5)),
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

    /// A `packed-refs` rewritten by another `git pack-refs` is indexed afresh: nothing read from the
    /// version before it is answered.
    #[test]
    fn a_repacked_file_is_indexed_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, refs) = packed_repository(dir.path(), 400);
        let (name, old) = &refs[200];
        assert_eq!(repo.branch_from_files(name).as_ref(), Some(old));
        let new = refs.iter().map(|(_, id)| id).find(|id| *id != old).unwrap();
        repo.run_git(&["update-ref", name, new]).unwrap();
        repo.run_git(&["update-ref", "refs/heads/zz-added-later", new])
            .unwrap();
        repo.run_git(&["pack-refs", "--all"]).unwrap();
        assert!(!repo.common_dir().join(name).exists(), "packed again");
        assert_eq!(repo.branch_from_files(name).as_ref(), Some(new));
        assert_eq!(
            repo.branch_from_files("refs/heads/zz-added-later").as_ref(),
            Some(new)
        );
        for (other, id) in refs.iter().filter(|(other, _)| other != name) {
            assert_eq!(repo.branch_from_files(other).as_ref(), Some(id), "{other}");
        }
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

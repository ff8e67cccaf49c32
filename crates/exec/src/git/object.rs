//! A merge commit written into the object database without starting `git commit-tree`.
//!
//! A run merges every slice, and after `merge-tree --write-tree` has made the merged tree, the commit
//! object is a few hundred bytes whose every byte is known: the tree, the two parents, agency's identity,
//! the time and the message. It is written here as git writes a loose object (`gitformat-loose(5)`): the
//! header `commit <size>\0` and the body, named by the SHA-1 of both, zlib-compressed into
//! `objects/<2 hex>/<38 hex>` through a temporary file in that directory, hard-linked into place (an
//! existing object is never replaced) — byte for byte what `git commit-tree --no-gpg-sign -p A -p B -m
//! MESSAGE TREE` writes at the same second. Moving the branch stays with `git update-ref` (packed refs,
//! reftable and reflogs are git's business), and it refuses a commit that is not in the database.
//!
//! Whatever would make git write something else is left to `git commit-tree` ([`Repo::write_merge_commit`]
//! answers `None`): a SHA-256 repository or one with a second object format, a commit encoding other than
//! UTF-8, a shared repository (other permissions), loose objects to `fsync`, an identity git would clean
//! up, an empty message, a `TZ` in this process's environment (git runs without it), or any failure to
//! write the object.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use sha1::{Digest, Sha1};

use super::{Identity, Repo};

/// The configuration that changes what `git commit-tree` writes, or how: asked of git once per repository
/// and process, as `git config --get-regexp` of these names.
const CONFIG_THAT_MATTERS: &str = "^(extensions\\.objectformat|extensions\\.compatobjectformat|\
                                   i18n\\.commitencoding|core\\.sharedrepository|core\\.fsync|\
                                   core\\.fsyncobjectfiles)$";

/// The zlib level of a loose object: git's default (`core.looseCompression` unset: 1, `Z_BEST_SPEED`). The
/// level changes the bytes in the file, never the object or its name.
const LOOSE_COMPRESSION: u8 = 1;

impl Repo {
    /// Writes the commit of `tree` with the parents `parents` (the target's tip, then the merged branch's)
    /// and `message` into the object database, and returns its id; `None` when `git commit-tree` must
    /// write it instead (see the module's documentation).
    pub(super) fn write_merge_commit(&self, tree: &str, parents: [&str; 2], message: &str) -> Option<String> {
        if std::env::var_os("TZ").is_some()
            || !self.objects_written_here()
            || ![tree, parents[0], parents[1]].iter().all(|id| is_sha1_hex(id))
        {
            return None;
        }
        let seconds = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
        let offset = local_offset_minutes(seconds)?;
        let body = commit_body(tree, &parents, &self.options().identity, seconds, offset, message)?;
        write_loose_object(&self.common_dir().join("objects"), "commit", &body).ok()
    }

    /// Whether this repository's configuration lets this process write the commit object as git would.
    /// Asked of git (all its configuration files, includes and all) once per repository and process.
    fn objects_written_here(&self) -> bool {
        static KNOWN: OnceLock<Mutex<HashMap<PathBuf, bool>>> = OnceLock::new();
        let known = KNOWN.get_or_init(Mutex::default);
        let key = self.common_dir().to_path_buf();
        if let Some(&here) = known.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return here;
        }
        let here = match self.run(&["config", "--get-regexp", CONFIG_THAT_MATTERS]) {
            // Exit 1: none of them is set.
            Ok(output) if output.exit_code == Some(1) && output.stdout.tail.is_empty() => true,
            Ok(output) if output.success() => config_allows_writing_here(&output.stdout.text()),
            _ => false,
        };
        known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, here);
        here
    }
}

/// Whether `git config --get-regexp` lines (`name value`, names lower-cased by git) leave the commit object
/// to be written as this module writes it.
fn config_allows_writing_here(lines: &str) -> bool {
    lines.lines().all(|line| {
        let (name, value) = line.split_once(' ').unwrap_or((line, ""));
        let value = value.to_ascii_lowercase();
        match name {
            "extensions.objectformat" => value == "sha1",
            "i18n.commitencoding" => matches!(value.as_str(), "utf-8" | "utf8"),
            // A second object format, other permissions, or loose objects to fsync: git's to write.
            _ => false,
        }
    })
}

/// The local time zone's offset from UTC at `seconds`, in minutes, as git computes it: the system's zone
/// (git runs without `TZ`, and the caller has made sure there is none here either).
fn local_offset_minutes(seconds: u64) -> Option<i32> {
    use chrono::{Local, Offset, TimeZone};
    let local = Local.timestamp_opt(i64::try_from(seconds).ok()?, 0).single()?;
    Some(local.offset().fix().local_minus_utc() / 60)
}

/// git's `+hhmm` / `-hhmm` for an offset in minutes.
fn format_offset(minutes: i32) -> String {
    let sign = if minutes < 0 { '-' } else { '+' };
    let minutes = minutes.unsigned_abs();
    format!("{sign}{:02}{:02}", minutes / 60, minutes % 60)
}

/// The body of the commit `git commit-tree -p P1 -p P2 -m message tree` writes with `identity` as author
/// and committer at `seconds` (`offset` minutes from UTC); `None` for what git would write differently.
fn commit_body(
    tree: &str,
    parents: &[&str],
    identity: &Identity,
    seconds: u64,
    offset: i32,
    message: &str,
) -> Option<Vec<u8>> {
    // git strips "crud" from an identity's ends and drops `<`, `>` and newlines inside; only a name and
    // email it would keep as they are are written here. `-m ""` makes git read the message from its input.
    if !is_plain_ident(&identity.name) || !is_plain_ident(&identity.email) || message.is_empty() {
        return None;
    }
    let person = format!(
        "{} <{}> {seconds} {}",
        identity.name,
        identity.email,
        format_offset(offset)
    );
    let mut body = format!("tree {tree}\n");
    for parent in parents {
        body.push_str(&format!("parent {parent}\n"));
    }
    body.push_str(&format!("author {person}\ncommitter {person}\n\n{message}"));
    // `-m` completes the message's last line.
    if !message.ends_with('\n') {
        body.push('\n');
    }
    Some(body.into_bytes())
}

/// Whether git writes `value` into an identity line unchanged: not empty, no character git trims from the
/// ends (the widest set any git version trims), and no `<`, `>` or newline anywhere.
fn is_plain_ident(value: &str) -> bool {
    let crud = |c: char| c <= ' ' || matches!(c, '.' | ',' | ':' | ';' | '<' | '>' | '"' | '\\' | '\'');
    match (value.chars().next(), value.chars().last()) {
        (Some(first), Some(last)) => !crud(first) && !crud(last) && !value.contains(['<', '>', '\n']),
        _ => false,
    }
}

/// A full SHA-1 object id in git's lower-case hex.
fn is_sha1_hex(id: &str) -> bool {
    id.len() == 40 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Writes the object `<kind> <size>\0<body>` into the loose object directory `objects` as git does and
/// returns its SHA-1 id. An object already there is left as it is and only freshened (its time set to now,
/// so `git gc` counts it as recent), as git does.
fn write_loose_object(objects: &Path, kind: &str, body: &[u8]) -> std::io::Result<String> {
    let mut object = format!("{kind} {}\0", body.len()).into_bytes();
    object.extend_from_slice(body);
    let id: String = Sha1::digest(&object).iter().map(|b| format!("{b:02x}")).collect();
    let (dir_name, file_name) = id.split_at(2);
    let dir = objects.join(dir_name);
    let path = dir.join(file_name);
    if path.exists() {
        std::fs::File::open(&path)?.set_modified(SystemTime::now())?;
        return Ok(id);
    }
    let compressed = miniz_oxide::deflate::compress_to_vec_zlib(&object, LOOSE_COMPRESSION);
    let (tmp, mut file) = match create_temporary(&dir) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            // The fan-out directory is made on first use, as git makes it.
            match std::fs::create_dir(&dir) {
                Err(err) if err.kind() != std::io::ErrorKind::AlreadyExists => return Err(err),
                _ => create_temporary(&dir)?,
            }
        }
        other => other?,
    };
    let written = file.write_all(&compressed).and_then(|()| file.flush());
    drop(file);
    let placed = written.and_then(|()| place(&tmp, &path));
    // Linked into place or not, the temporary name goes (after a rename it is already gone).
    let _ = std::fs::remove_file(&tmp);
    placed.map(|()| id)
}

/// A new read-only file `tmp_obj_…` in `dir`: git's name for an object being written, which `git gc`
/// removes when a crash leaves one behind.
fn create_temporary(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!("tmp_obj_{}_{n}_{nanos}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o444)
            .open(&tmp)
        {
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            opened => return opened.map(|file| (tmp, file)),
        }
    }
}

/// Puts the written temporary file at `path` as git does: a hard link, so an object already there (written
/// meanwhile by someone else, with the same content) is never replaced; a rename where links fail.
fn place(tmp: &Path, path: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(tmp, path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(_) => std::fs::rename(tmp, path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_written_as_git_writes_them() {
        assert_eq!(format_offset(0), "+0000");
        assert_eq!(format_offset(60), "+0100");
        assert_eq!(format_offset(330), "+0530");
        assert_eq!(format_offset(-210), "-0330");
        assert_eq!(format_offset(-600), "-1000");
    }

    #[test]
    fn only_identities_git_keeps_unchanged_are_written_here() {
        for plain in ["agency", "agency@localhost", "Jane Q. Doe", "a"] {
            assert!(is_plain_ident(plain), "{plain}");
        }
        for cleaned in [
            "", " agency", "agency ", "agency.", "'q'", "a<b", "a>b", "a\nb", "\"x\"", ",",
        ] {
            assert!(!is_plain_ident(cleaned), "{cleaned:?}");
        }
    }

    #[test]
    fn the_body_is_gits_commit_layout_and_completes_the_last_line() {
        let identity = Identity {
            name: "agency".into(),
            email: "agency@localhost".into(),
        };
        let (tree, a, b) = ("t".repeat(40), "a".repeat(40), "b".repeat(40));
        let body = commit_body(&tree, &[&a, &b], &identity, 1_700_000_000, -90, "merge x").unwrap();
        let expected = format!(
            "tree {tree}\nparent {a}\nparent {b}\n\
             author agency <agency@localhost> 1700000000 -0130\n\
             committer agency <agency@localhost> 1700000000 -0130\n\nmerge x\n"
        );
        assert_eq!(String::from_utf8(body).unwrap(), expected);
        let ended = commit_body(&tree, &[&a, &b], &identity, 1, 0, "two\n\nlines\n").unwrap();
        assert!(String::from_utf8(ended).unwrap().ends_with("\n\ntwo\n\nlines\n"));
        assert_eq!(commit_body(&tree, &[&a], &identity, 1, 0, ""), None);
    }

    #[test]
    fn config_that_changes_the_object_leaves_it_to_git() {
        assert!(config_allows_writing_here(""));
        assert!(config_allows_writing_here(
            "extensions.objectformat sha1\ni18n.commitencoding UTF-8\n"
        ));
        for line in [
            "extensions.objectformat sha256",
            "extensions.compatobjectformat sha256",
            "i18n.commitencoding ISO-8859-1",
            "core.sharedrepository group",
            "core.fsync loose-object",
            "core.fsyncobjectfiles true",
        ] {
            assert!(!config_allows_writing_here(line), "{line}");
        }
    }

    #[test]
    fn a_loose_object_is_named_by_its_sha1_and_an_unwritable_database_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let objects = dir.path().join("objects");
        std::fs::create_dir(&objects).unwrap();
        // `git hash-object --stdin` of "hello\n" (a blob).
        let id = write_loose_object(&objects, "blob", b"hello\n").unwrap();
        assert_eq!(id, "ce013625030ba8dba906f756967f9e9ca394464a");
        let path = objects.join("ce/013625030ba8dba906f756967f9e9ca394464a");
        let stored = std::fs::read(&path).unwrap();
        let inflated = miniz_oxide::inflate::decompress_to_vec_zlib(&stored).unwrap();
        assert_eq!(inflated, b"blob 6\0hello\n");
        // Written again: the same object, left in place.
        assert_eq!(write_loose_object(&objects, "blob", b"hello\n").unwrap(), id);
        let leftovers: Vec<_> = std::fs::read_dir(objects.join("ce")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left");

        let not_a_directory = dir.path().join("file");
        std::fs::write(&not_a_directory, "").unwrap();
        assert!(write_loose_object(&not_a_directory, "blob", b"x").is_err());
    }
}

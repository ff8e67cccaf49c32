//! The driver lease on SQLite: an exclusive lock (`flock`) on a small file per run beside the database,
//! `<db>.drivers/<run id>.lock`. The kernel drops the lock when the holder's file is closed, which a dying
//! process does. The file records who holds it, so the runner kept out can say who is driving.
//!
//! Lock files are never deleted: unlinking a lock file another process may be opening lets two holders
//! lock two different files. One small file per run driven is the price.
//!
//! A lock is let go a moment after its holder closes the file, not always at once: a child process the
//! holder's process was starting at that instant got a copy of every descriptor, this one included, and
//! keeps the lock until it has replaced itself with its program (where close-on-exec drops the copy) — on
//! a loaded machine that can take milliseconds. So a lock found taken is tried again for
//! [`RELEASE_GRACE`] before the holder is named.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agency_core::RunId;

use crate::driver::{DriverLease, describe_holder};
use crate::error::{Result, StoreError};

/// How long a lock found taken is tried again before its holder is reported: long enough for a lock just
/// let go to be free (see the module's notes), short enough that being kept out by a live driver is said
/// at once.
const RELEASE_GRACE: Duration = Duration::from_millis(500);

/// Where the lock of `run` lives for the database at `db`.
pub(super) fn lock_path(db: &Path, run: RunId) -> PathBuf {
    let mut dir = db.as_os_str().to_owned();
    dir.push(".drivers");
    PathBuf::from(dir).join(format!("{}.lock", run.whole()))
}

/// Takes the lease of `run` for the database at `db`, or says who holds it.
pub(super) fn lock(db: &Path, run: RunId, holder: &str) -> Result<DriverLease> {
    let path = lock_path(db, run);
    let io_error = |source: std::io::Error| StoreError::Open {
        path: path.clone(),
        source: source.into(),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_error)?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_error)?;
    let deadline = Instant::now() + RELEASE_GRACE;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::Driven {
                    run: run.short(),
                    holder: read_holder(&mut file),
                });
            }
            Err(TryLockError::Error(error)) => return Err(io_error(error)),
        }
    }
    record_holder(&mut file, holder).map_err(io_error)?;
    Ok(DriverLease::new(file))
}

fn record_holder(file: &mut File, holder: &str) -> std::io::Result<()> {
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(describe_holder(holder).as_bytes())?;
    file.flush()
}

/// What the holder wrote, if anything yet (it writes just after locking).
fn read_holder(file: &mut File) -> Option<String> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.take(4096).read_to_string(&mut text).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_let_go_within_the_grace_is_taken_and_one_held_on_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("agency.db");
        let run = RunId::new();
        let held = lock(&db, run, "first").unwrap();
        let letting_go = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        let taken = lock(&db, run, "second").unwrap();
        letting_go.join().unwrap();
        match lock(&db, run, "third") {
            Err(StoreError::Driven { holder, .. }) => {
                assert!(holder.unwrap_or_default().starts_with("second"));
            }
            other => panic!("a second driver was let in: {other:?}"),
        }
        drop(taken);
    }
}

//! A reader that goes away early (`agency watch <run> | head -1`) ends the command quietly with status 0:
//! both through the printing macros (`runs`) and through a writer that returns the error (`watch`).

use std::io::Read;
use std::process::{Command, Stdio};

use agency_core::event::{EventKind, NewEvent};
use agency_store::{Blackboard, NewRun, SqliteBlackboard};
use serde_json::json;

use crate::support::Repo;

/// Runs `agency <args>` in `repo`, reads its first bytes, closes the pipe and returns (status, stderr).
fn head_of(repo: &Repo, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agency"))
        .args(args)
        .current_dir(repo.path())
        .env_remove("AGENCY_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.as_mut().unwrap().read_exact(&mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn runs_piped_into_head_exits_zero_and_says_nothing() {
    let repo = Repo::initialised();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    // More than a pipe holds (64 KiB), so the command is still writing when the reader leaves.
    for i in 0..1000 {
        store
            .create_run(NewRun::new(
                format!("goal {i}"),
                repo.path().display().to_string(),
            ))
            .unwrap();
    }
    let (code, stderr) = head_of(&repo, &["runs"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn the_log_piped_into_head_exits_zero_and_says_nothing() {
    let repo = Repo::initialised();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let run = store
        .create_run(NewRun::new("a long log", repo.path().display().to_string()))
        .unwrap()
        .id;
    for i in 0..2000 {
        store
            .append_event(NewEvent::new(
                run,
                EventKind::Log,
                json!({ "level": "normal", "tag": "NOTE", "message": format!("line {i} of a log longer than a pipe holds") }),
            ))
            .unwrap();
    }
    let (code, stderr) = head_of(&repo, &["watch", &run.short()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn only_a_broken_pipe_counts_as_a_closed_reader() {
    use agency_cli::error::CommandError;
    use agency_cli::stdout::is_closed_pipe;
    use std::io;
    assert!(is_closed_pipe(&io::Error::from(io::ErrorKind::BrokenPipe)));
    assert!(!is_closed_pipe(&io::Error::from(io::ErrorKind::StorageFull)));
    // Found by its kind, never by its message.
    assert!(!is_closed_pipe(&io::Error::other("Broken pipe")));
    let closed: CommandError = io::Error::from(io::ErrorKind::BrokenPipe).into();
    assert!(closed.is_closed_pipe());
    let other: CommandError = io::Error::from(io::ErrorKind::PermissionDenied).into();
    assert!(!other.is_closed_pipe());
    assert!(!CommandError::internal("Broken pipe").is_closed_pipe());
}

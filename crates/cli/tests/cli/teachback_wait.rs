//! `agency teachback submit` as an agent a runner started runs it (`AGENCY_BRIEF` set): the teachback
//! given as one flag per field, then a bounded wait for the review, whose message it prints.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agency_core::TeachbackState;
use agency_store::{Blackboard, SqliteBlackboard};

use crate::hook_support::start_brief;
use crate::support::{Repo, decider};

/// A complete teachback, one flag per field.
const FIELDS: [&str; 12] = [
    "--building",
    "hello.txt containing hi",
    "--constraint",
    "one file",
    "--constraint",
    "no other changes",
    "--approach",
    "one Write call",
    "--most-likely-wrong",
    "the path",
    "--least-confident",
    "the content",
];

/// Starts `agency teachback submit` with the fields and `extra` arguments as an agent for `brief`.
fn submit_as_agent(repo: &Repo, brief: &str, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_agency"))
        .args(["teachback", "submit"])
        .args(FIELDS)
        .args(extra)
        .current_dir(repo.path())
        .env_remove("AGENCY_CONFIG")
        .env("AGENCY_BRIEF", brief)
        .env("AGENCY_DB", repo.db())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_for_state(repo: &Repo, brief: &str, state: TeachbackState) {
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let id = store.resolve_brief(brief).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while store.get_brief(id).unwrap().teachback != state {
        assert!(Instant::now() < deadline, "the brief never became {state}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_agent_waits_for_its_review_and_reads_it() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let agent = submit_as_agent(&repo, &brief, &[]);
    wait_for_state(&repo, &brief, TeachbackState::UnderReview);
    repo.agency(&[
        "teachback",
        "correct",
        &brief,
        "--item",
        "name the file's encoding",
    ])
    .success();
    let out = agent.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("now under_review"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "Teachback corrections requested by {}: 1. name the file's encoding",
            decider()
        )),
        "{stdout}"
    );

    // Resubmitted and approved: the message says to go on.
    let agent = submit_as_agent(&repo, &brief, &[]);
    wait_for_state(&repo, &brief, TeachbackState::UnderReview);
    repo.agency(&["teachback", "approve", &brief, "--note", "fine"])
        .success();
    let out = agent.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "Teachback approved by {}: go on with the work",
            decider()
        )) && stdout.contains("Note: fine"),
        "{stdout}"
    );
}

#[test]
fn the_wait_is_bounded_and_says_where_to_look() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let started = Instant::now();
    let out = submit_as_agent(&repo, &brief, &["--wait", "1"])
        .wait_with_output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(stdout.contains("No review yet after 1 s"), "{stdout}");
    assert!(stdout.contains("agency teachback show"), "{stdout}");
}

#[test]
fn a_human_submitting_by_hand_does_not_wait_and_fields_are_checked() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let mut args = vec!["teachback", "submit", "--brief", &brief];
    args.extend(FIELDS);
    let out = repo.agency(&args).success();
    assert!(out.stdout().contains("wait for the reviewer"), "{}", out.stdout());
    // A field left out is refused by the command line, before anything is recorded.
    repo.agency(&["teachback", "approve", &brief]).success();
    let brief = start_brief(&repo, "2,2,2,2");
    let out = repo
        .agency(&[
            "teachback",
            "submit",
            "--brief",
            &brief,
            "--building",
            "x",
            "--constraint",
            "y",
            "--approach",
            "z",
            "--most-likely-wrong",
            "w",
        ])
        .fails_with(2);
    assert!(out.stderr().contains("--least-confident"), "{}", out.stderr());
    let out = repo
        .agency(&[
            "teachback",
            "submit",
            "--brief",
            &brief,
            "--building",
            "x",
            "--constraint",
            " ",
            "--approach",
            "z",
            "--most-likely-wrong",
            "w",
            "--least-confident",
            "v",
        ])
        .fails_with(3);
    assert!(
        out.stderr().contains("key_constraints must not be empty"),
        "{}",
        out.stderr()
    );
}

/// `--touches` (repeatable) restates the files the agent will touch: recorded with the teachback, where the
/// runner's T3→T4 agreement check reads them.
#[test]
fn the_files_an_agent_will_touch_are_recorded_with_its_teachback() {
    let repo = Repo::initialised();
    let brief = start_brief(&repo, "2,2,2,2");
    let mut args = vec!["teachback", "submit", "--brief", &brief];
    args.extend(FIELDS);
    args.extend(["--touches", "hello.txt", "--touches", "docs/"]);
    repo.agency(&args).success();
    let store = SqliteBlackboard::open(repo.db()).unwrap();
    let id = store.resolve_brief(&brief).unwrap();
    let run = store.get_brief(id).unwrap().run;
    let submitted = store
        .events_of_kinds_after(run, &[agency_core::event::EventKind::TeachbackSubmitted], 0, 10)
        .unwrap();
    let teachback = match submitted.last().map(|e| e.typed()) {
        Some(Ok(agency_core::event::EventPayload::TeachbackSubmitted(sent))) => {
            serde_json::from_value::<agency_core::Teachback>(sent.teachback).unwrap()
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(teachback.files, ["hello.txt", "docs/"]);
}

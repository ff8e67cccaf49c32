//! A human decision wakes a waiting runner at once ([`EngineOptions::wake`], notified by the gate service
//! when `agency approve` and the like poke it): with a poll interval of a minute, the next agent still
//! starts within moments of the approval.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agency_core::event::EventKind;
use agency_core::gate::GateKind;
use agency_store::Blackboard;

use crate::support::{Background, GOAL, Project, approve, wait_for};

#[test]
fn an_approval_with_a_poke_spawns_the_next_agent_long_before_the_poll_interval() {
    let mut project = Project::new();
    let wake = Arc::new(tokio::sync::Notify::new());
    let (_, engine) = waiting_runner(&mut project, &wake);
    let run = engine.start(GOAL).unwrap();
    let driving = Background::drive(engine, run.id);
    let store = project.store.clone();
    let gate = wait_for("the t1_plan gate", || {
        store.pending_gates(Some(run.id)).unwrap().pop()
    });
    assert_eq!(gate.kind, GateKind::T1Plan);
    let spawns = || project.events_of(run.id, EventKind::Spawned).len();
    let before = spawns();
    // Let the runner settle into its wait.
    std::thread::sleep(Duration::from_millis(300));
    let approved = Instant::now();
    approve(store.as_ref(), gate.id);
    wake.notify_one();
    while spawns() == before {
        assert!(
            approved.elapsed() < Duration::from_secs(10),
            "no agent started within 10 s of the poked approval (the poll interval is 60 s)"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let took = approved.elapsed();
    let events = project.events(run.id);
    let at = |kind: EventKind| events.iter().rev().find(|e| e.kind == kind).map(|e| e.ts);
    if let (Some(approved_at), Some(spawned_at)) = (at(EventKind::GateApproved), at(EventKind::Spawned)) {
        eprintln!(
            "gate_approved -> spawned: {} ms (the test saw it after {took:?})",
            (spawned_at - approved_at).num_milliseconds()
        );
    }
    assert!(took < Duration::from_secs(5), "{took:?}");
    stop_poking(driving, &wake);
}

/// The worktrees made ahead under the project's worktree directory (`<run8>/spare-…`) that are still there,
/// on disk or in git's list.
fn spares(project: &Project) -> Vec<std::path::PathBuf> {
    let is_spare = |path: &std::path::Path| {
        path.file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("spare-"))
    };
    let mut found: Vec<std::path::PathBuf> = project
        .linked_worktrees()
        .into_iter()
        .filter(|p| is_spare(p))
        .collect();
    if let Ok(runs) = std::fs::read_dir(project.dir.path().join("worktrees")) {
        for run in runs.flatten() {
            for entry in std::fs::read_dir(run.path()).into_iter().flatten().flatten() {
                if is_spare(&entry.path()) {
                    found.push(entry.path());
                }
            }
        }
    }
    found
}

/// A runner waiting at the plan gate with a one-minute poll, woken by `wake`, running git through the
/// project's logging script.
fn waiting_runner(
    project: &mut Project,
    wake: &Arc<tokio::sync::Notify>,
) -> (std::path::PathBuf, agency_engine::Engine) {
    let git_calls = project.log_git_calls();
    let waker = wake.clone();
    let engine = project
        .runner_for(include_str!("../scripts/simple.yaml"))
        .options(move |options| {
            options.poll = Duration::from_secs(60);
            options.wake = Some(waker);
        })
        .engine();
    (git_calls, engine)
}

/// Cancels a drive that waits with a long poll: keeps poking until it has stopped.
fn stop_poking(driving: Background, wake: &Arc<tokio::sync::Notify>) {
    let done = Arc::new(AtomicBool::new(false));
    let poker = {
        let (done, wake) = (done.clone(), wake.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                wake.notify_one();
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    driving.stop();
    done.store(true, Ordering::SeqCst);
    poker.join().unwrap();
}

#[test]
fn the_agent_an_approval_starts_gets_a_worktree_made_while_the_gate_waited() {
    let mut project = Project::new();
    let wake = Arc::new(tokio::sync::Notify::new());
    let (git_calls, engine) = waiting_runner(&mut project, &wake);
    let run = engine.start(GOAL).unwrap();
    let driving = Background::drive(engine, run.id);
    let store = project.store.clone();
    let gate = wait_for("the t1_plan gate", || {
        store.pending_gates(Some(run.id)).unwrap().pop()
    });
    assert_eq!(gate.kind, GateKind::T1Plan);
    wait_for("a worktree made ahead", || {
        (!spares(&project).is_empty()).then_some(())
    });
    // Let the runner finish making them and settle into its wait, then log only what the approval costs.
    std::thread::sleep(Duration::from_millis(300));
    // A directory renamed keeps its inode: the brief's worktree is one of these if a spare was adopted.
    let spare_inodes: Vec<u64> = spares(&project)
        .iter()
        .map(|p| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap()))
        .collect();
    assert!(!spare_inodes.is_empty());
    std::fs::write(&git_calls, "").unwrap();
    approve(store.as_ref(), gate.id);
    wake.notify_one();
    let spawned = wait_for("the implementer's start", || {
        project
            .events_of(run.id, EventKind::Spawned)
            .into_iter()
            .find(|e| e.tier == Some(agency_core::Tier::T4))
    });
    let calls = std::fs::read_to_string(&git_calls).unwrap();
    assert!(
        !calls.lines().any(|call| call == "worktree"),
        "no worktree is made between the approval and the spawn: git was asked {calls:?}"
    );
    let implementer = store.get_brief(spawned.brief.unwrap()).unwrap();
    let path = std::path::PathBuf::from(implementer.worktree.clone().unwrap());
    assert!(
        spare_inodes.contains(&std::os::unix::fs::MetadataExt::ino(
            &std::fs::metadata(&path).unwrap()
        )),
        "the brief's worktree {} is a spare moved there",
        path.display()
    );
    let worktree = project.repo.open_other(&path).unwrap();
    assert_eq!(
        worktree.current_branch().unwrap(),
        implementer.branch.clone(),
        "the writer works on its own branch"
    );
    assert!(
        path.join("add.sh").exists(),
        "with the project's files checked out"
    );
    stop_poking(driving, &wake);
    assert_eq!(
        spares(&project),
        Vec::<std::path::PathBuf>::new(),
        "no worktree made ahead outlives the drive"
    );
}

#[test]
fn a_runner_stopped_at_a_gate_leaves_no_worktree_made_ahead() {
    let mut project = Project::new();
    let wake = Arc::new(tokio::sync::Notify::new());
    let (_, engine) = waiting_runner(&mut project, &wake);
    let run = engine.start(GOAL).unwrap();
    let driving = Background::drive(engine, run.id);
    let store = project.store.clone();
    wait_for("the t1_plan gate", || {
        store.pending_gates(Some(run.id)).unwrap().pop()
    });
    wait_for("a worktree made ahead", || {
        (!spares(&project).is_empty()).then_some(())
    });
    stop_poking(driving, &wake);
    assert_eq!(spares(&project), Vec::<std::path::PathBuf>::new());
}

//! A human decision wakes a waiting runner at once ([`EngineOptions::wake`], notified by the gate service
//! when `agency approve` and the like poke it): with a poll interval of a minute, the next agent still
//! starts within moments of the approval.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agency_core::event::EventKind;
use agency_core::gate::GateKind;
use agency_store::Blackboard;

use crate::support::{Background, GOAL, Project, approve, config, wait_for};

#[test]
fn an_approval_with_a_poke_spawns_the_next_agent_long_before_the_poll_interval() {
    let project = Project::new();
    let wake = Arc::new(tokio::sync::Notify::new());
    let waker = wake.clone();
    let engine = project.runner_with(
        include_str!("../scripts/simple.yaml"),
        config(),
        false,
        "test-runner",
        |_, builtin| builtin,
        move |options| {
            options.poll = Duration::from_secs(60);
            options.wake = Some(waker);
        },
    );
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
    // Stopping: keep poking so that the runner notices the cancel without waiting out its poll.
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

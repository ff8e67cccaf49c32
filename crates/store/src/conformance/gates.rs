//! Properties of gates: opening, deciding once, pauses, and decisions across handles.

use super::*;

/// A gate opens pending with `gate_pending`, is listed, is approved with `gate_approved`, and a second
/// decision is refused with `GateAlreadyDecided` (naming who decided) and writes nothing. Rejection too.
pub fn gates_open_decide_and_refuse_a_second_decision(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "task");
    bb.insert_brief(&brief).unwrap();
    let summary = json!({ "produced": "plan", "next": "spawn T2" });
    let gate = bb
        .open_gate(
            NewGate::new(run, GateKind::T1Plan, summary.clone())
                .tier(Tier::T1)
                .brief(brief.id),
        )
        .unwrap();
    assert_eq!(gate.status, GateStatus::Pending);
    assert_eq!(bb.get_gate(gate.id).unwrap(), gate);
    assert_eq!(bb.pending_gates(Some(run)).unwrap(), vec![gate.clone()]);
    assert_eq!(bb.pending_gates(None).unwrap(), vec![gate.clone()]);
    let opened = bb.events_after(Some(run), 0, 100).unwrap().pop().unwrap();
    assert_eq!(opened.kind, EventKind::GatePending);
    assert_eq!(opened.tier, Some(Tier::T1));
    assert_eq!(opened.brief, Some(brief.id));
    let agency_core::event::EventPayload::GatePending(opened) = super::typed(&opened) else {
        panic!("not a gate's opening: {opened:?}");
    };
    assert_eq!(opened.kind, Some(GateKind::T1Plan));

    let decided = bb.decide_gate(gate.id, approve("cli:ana")).unwrap();
    assert_eq!(decided.status, GateStatus::Approved);
    assert_eq!(decided.decided_by.as_deref(), Some("cli:ana"));
    assert_eq!(decided.note.as_deref(), Some("looks right"));
    assert!(decided.decided_at.is_some());
    assert_eq!(bb.get_gate(gate.id).unwrap(), decided);
    assert!(bb.pending_gates(Some(run)).unwrap().is_empty());
    assert_eq!(kinds(bb.as_ref(), run).last(), Some(&EventKind::GateApproved));

    let seq = bb.last_seq(None).unwrap();
    match bb.decide_gate(gate.id, reject("dashboard")) {
        Err(StoreError::GateAlreadyDecided {
            status, decided_by, ..
        }) => {
            assert_eq!(status, GateStatus::Approved);
            assert_eq!(decided_by.as_deref(), Some("cli:ana"));
        }
        other => panic!("expected GateAlreadyDecided, got {other:?}"),
    }
    assert_eq!(bb.last_seq(None).unwrap(), seq);

    let second = bb
        .open_gate(NewGate::new(run, GateKind::T3Plan, json!({})))
        .unwrap();
    let rejected = bb.decide_gate(second.id, reject("cli:bo")).unwrap();
    assert_eq!(rejected.status, GateStatus::Rejected);
    assert_eq!(rejected.note.as_deref(), Some("split the API work"));
    let event = bb.events_after(Some(run), 0, 100).unwrap().pop().unwrap();
    assert_eq!(event.kind, EventKind::GateRejected);
    let agency_core::event::EventPayload::GateRejected(decided) = super::typed(&event) else {
        panic!("not a gate's rejection: {event:?}");
    };
    assert_eq!(decided.reason.as_deref(), Some("split the API work"));
    assert_eq!(bb.list_gates(run).unwrap().len(), 2);
    assert!(matches!(
        bb.decide_gate(GateId::new(), approve("x")),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        bb.open_gate(NewGate::new(RunId::new(), GateKind::Budget, json!({}))),
        Err(StoreError::NotFound { what: "run", .. })
    ));
}

/// A run's gates of one kind are listed oldest first, decided or not, without the other kinds or another
/// run's.
pub fn gates_are_listed_by_kind(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let (run, other_run) = (new_run(bb.as_ref()), new_run(bb.as_ref()));
    let open = |run, kind| bb.open_gate(NewGate::new(run, kind, json!({}))).unwrap();
    let first = open(run, GateKind::Budget);
    open(run, GateKind::T1Plan);
    open(other_run, GateKind::Budget);
    let second = open(run, GateKind::Budget);
    let first = bb.decide_gate(first.id, approve("cli:ana")).unwrap();
    assert_eq!(
        bb.list_gates_of_kind(run, GateKind::Budget).unwrap(),
        vec![first, second]
    );
    assert!(
        bb.list_gates_of_kind(run, GateKind::Escalation)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        bb.list_gates_of_kind(other_run, GateKind::Budget).unwrap().len(),
        1
    );
}

/// A pause gate opens with `gate_paused` and approving it writes `gate_resumed`.
pub fn pause_gates_pause_and_resume(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let pause = bb
        .open_gate(NewGate::new(run, GateKind::Pause, json!({ "by": "cli" })))
        .unwrap();
    assert_eq!(kinds(bb.as_ref(), run).last(), Some(&EventKind::GatePaused));
    bb.decide_gate(pause.id, approve("cli:ana")).unwrap();
    assert_eq!(kinds(bb.as_ref(), run).last(), Some(&EventKind::GateResumed));
}

/// `decide_pending_gate` decides the oldest pending gate of the run; with none it fails `NoPendingGate`.
pub fn decide_pending_gate_takes_the_oldest(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let other = new_run(bb.as_ref());
    assert!(matches!(
        bb.decide_pending_gate(run, approve("cli")),
        Err(StoreError::NoPendingGate { run: r }) if r == run
    ));
    bb.open_gate(NewGate::new(other, GateKind::T1Plan, json!({})))
        .unwrap();
    let first = bb
        .open_gate(NewGate::new(run, GateKind::T1Plan, json!({})))
        .unwrap();
    let second = bb
        .open_gate(NewGate::new(run, GateKind::T2Lead, json!({})))
        .unwrap();
    assert_eq!(bb.decide_pending_gate(run, approve("cli")).unwrap().id, first.id);
    assert_eq!(bb.decide_pending_gate(run, reject("cli")).unwrap().id, second.id);
    assert!(matches!(
        bb.decide_pending_gate(run, approve("cli")),
        Err(StoreError::NoPendingGate { .. })
    ));
    assert_eq!(
        bb.pending_gates(None).unwrap().len(),
        1,
        "the other run's gate is untouched"
    );
}

/// A gate opened through one handle is seen pending through another, approved there, and the first handle
/// sees the approval (and is refused a second decision).
pub fn a_gate_decided_through_one_handle_is_seen_by_another(factory: Factory<'_>) {
    let fx = factory();
    let runner = fx.handle();
    let cli = fx.handle();
    let run = new_run(runner.as_ref());
    let gate = runner
        .open_gate(NewGate::new(run, GateKind::T1Plan, json!({})))
        .unwrap();
    let resolved = cli.resolve_gate(&gate.id.short()).unwrap();
    assert_eq!(cli.pending_gates(Some(run)).unwrap().len(), 1);
    cli.decide_gate(resolved, approve("cli:ana")).unwrap();
    assert_eq!(runner.get_gate(gate.id).unwrap().status, GateStatus::Approved);
    assert!(runner.pending_gates(Some(run)).unwrap().is_empty());
    assert_eq!(kinds(runner.as_ref(), run).last(), Some(&EventKind::GateApproved));
    assert!(matches!(
        runner.decide_gate(gate.id, reject("timeout")),
        Err(StoreError::GateAlreadyDecided { .. })
    ));
}

/// Two handles deciding the same gate at once: exactly one succeeds, one decision event is written.
pub fn concurrent_gate_decisions_have_one_winner(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    for _ in 0..10 {
        let gate = bb
            .open_gate(NewGate::new(run, GateKind::T5Verdict, json!({})))
            .unwrap();
        let results: Vec<_> = std::thread::scope(|scope| {
            let deciders: Vec<_> = (0..3)
                .map(|n| {
                    let handle = fx.handle();
                    scope.spawn(move || handle.decide_gate(gate.id, approve(&format!("human-{n}"))))
                })
                .collect();
            deciders.into_iter().map(|d| d.join().unwrap()).collect()
        });
        let wins = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(wins, 1, "{results:?}");
        assert!(
            results
                .iter()
                .all(|r| r.is_ok() || matches!(r, Err(StoreError::GateAlreadyDecided { .. })))
        );
    }
    let approvals = kinds(bb.as_ref(), run)
        .into_iter()
        .filter(|k| *k == EventKind::GateApproved)
        .count();
    assert_eq!(approvals, 10);
}

//! Properties of runs, resolving typed ids, the event log, and durability across handles.

use super::*;

// --- runs -------------------------------------------------------------------------------------------------

/// A created run reads back equal, starts `planning`, writes `run_created`; `list_runs` is newest first;
/// a duplicate id is refused.
pub fn runs_round_trip_newest_first(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let mut new = NewRun::new("ship the queue", "/src/app");
    new.base_rev = Some("abc123".into());
    new.config = json!({ "strict_mode": true });
    new.budgets = json!({ "usd": 5.0 });
    let first = bb.create_run(new.clone()).unwrap();
    assert_eq!(first.status, RunStatus::Planning);
    assert_eq!(first.goal, "ship the queue");
    assert_eq!(bb.get_run(first.id).unwrap(), first);
    let second = new_run(bb.as_ref());

    let listed: Vec<RunId> = bb.list_runs().unwrap().iter().map(|r| r.id).collect();
    assert_eq!(listed, vec![second, first.id]);

    let events = bb.events_after(Some(first.id), 0, 10).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::RunCreated);
    let agency_core::event::EventPayload::RunCreated(created) = super::typed(&events[0]) else {
        panic!("not a run's creation: {:?}", events[0]);
    };
    assert_eq!(created.goal, "ship the queue");

    assert!(matches!(
        bb.create_run(new),
        Err(StoreError::AlreadyExists { what: "run", .. })
    ));
    assert!(matches!(
        bb.get_run(RunId::new()),
        Err(StoreError::NotFound { what: "run", .. })
    ));
}

/// A run has one driver: while a lease on it is held (through one handle), another handle — another
/// process, as far as the store can tell — is refused with `Driven`, naming the holder; another run is not
/// affected, and the run is free again once the lease is dropped.
pub fn one_driver_lease_per_run(factory: Factory<'_>) {
    let fx = factory();
    let (first, second) = (fx.handle(), fx.handle());
    let run = new_run(first.as_ref());
    let other = new_run(first.as_ref());
    let lease = first.lock_driver(run, "runner-one").unwrap();
    match second.lock_driver(run, "runner-two") {
        Err(StoreError::Driven { run: refused, holder }) => {
            assert_eq!(refused, run.short());
            let holder = holder.expect("the holder is named");
            assert!(holder.starts_with("runner-one"), "{holder}");
        }
        other => panic!("a second driver was let in: {other:?}"),
    }
    let elsewhere = second.lock_driver(other, "runner-two").unwrap();
    drop(lease);
    let taken_over = second.lock_driver(run, "runner-two").unwrap();
    assert!(matches!(
        first.lock_driver(run, "runner-one"),
        Err(StoreError::Driven { .. })
    ));
    drop((taken_over, elsewhere));
}

/// `set_run_status` writes `run_status` with `from`/`to`; with a stale `expected` it fails with `Conflict`
/// and writes nothing. `run_status` reads what `get_run` does, through another handle too.
pub fn run_status_is_compare_and_set_with_event(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let updated = bb
        .set_run_status(run, Some(RunStatus::Planning), RunStatus::AwaitingGate)
        .unwrap();
    assert_eq!(updated.status, RunStatus::AwaitingGate);
    assert_eq!(bb.get_run(run).unwrap().status, RunStatus::AwaitingGate);
    assert_eq!(bb.run_status(run).unwrap(), RunStatus::AwaitingGate);
    assert_eq!(fx.handle().run_status(run).unwrap(), RunStatus::AwaitingGate);
    let last = bb.events_after(Some(run), 0, 10).unwrap().pop().unwrap();
    assert_eq!(last.kind, EventKind::RunStatus);
    assert_eq!(last.payload, json!({ "from": "planning", "to": "awaiting_gate" }));

    let seq = bb.last_seq(Some(run)).unwrap();
    let err = bb
        .set_run_status(run, Some(RunStatus::Planning), RunStatus::Running)
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    assert_eq!(
        bb.last_seq(Some(run)).unwrap(),
        seq,
        "a failed compare-and-set writes no event"
    );
    assert_eq!(bb.get_run(run).unwrap().status, RunStatus::AwaitingGate);

    bb.set_run_status(run, None, RunStatus::Cancelled).unwrap();
    assert_eq!(bb.get_run(run).unwrap().status, RunStatus::Cancelled);
    assert_eq!(bb.run_status(run).unwrap(), RunStatus::Cancelled);
    assert!(matches!(
        bb.run_status(RunId::new()),
        Err(StoreError::NotFound { what: "run", .. })
    ));
    assert!(matches!(
        bb.set_run_status(RunId::new(), None, RunStatus::Running),
        Err(StoreError::NotFound { .. })
    ));
}

/// Ids resolve from their full form (with or without dashes, any case), their short form (the end), or any
/// unique run of hex digits at either end; an ambiguous part names its candidates; unknown and non-hex input
/// are their own errors. Briefs and gates alike.
pub fn id_parts_resolve_unique_ambiguous_unknown_and_invalid(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let ids = [
        Uuid::from_u128(0xaaaa_1111_0000_7000_8000_0000_0000_0001),
        Uuid::from_u128(0xaaaa_2222_0000_7000_8000_0000_0000_0002),
        Uuid::from_u128(0xbbbb_3333_0000_7000_8000_0000_0000_0003),
    ];
    for id in ids {
        let mut new = NewRun::new("goal", "/repo");
        new.id = RunId(id);
        bb.create_run(new).unwrap();
    }
    let a1 = RunId(ids[0]);
    assert_eq!(bb.resolve_run(&a1.to_string()).unwrap(), a1);
    assert_eq!(bb.resolve_run(&a1.0.simple().to_string()).unwrap(), a1);
    assert_eq!(bb.resolve_run(&a1.to_string().to_uppercase()).unwrap(), a1);
    assert_eq!(bb.resolve_run("aaaa1").unwrap(), a1);
    assert_eq!(bb.resolve_run("aaaa-1").unwrap(), a1);
    assert_eq!(bb.resolve_run("b").unwrap(), RunId(ids[2]));
    assert_eq!(bb.resolve_run(&RunId(ids[1]).short()).unwrap(), RunId(ids[1]));
    assert_eq!(bb.resolve_run("0003").unwrap(), RunId(ids[2]));
    assert_eq!(
        bb.resolve_run("1").unwrap(),
        a1,
        "the end, since no id starts with 1"
    );

    match bb.resolve_run("aaaa") {
        Err(StoreError::AmbiguousId {
            what,
            typed,
            candidates,
            total,
        }) => {
            assert_eq!(what, "run");
            assert_eq!(typed, "aaaa");
            assert_eq!(total, 2);
            assert_eq!(candidates, vec![ids[0].to_string(), ids[1].to_string()]);
        }
        other => panic!("expected AmbiguousId, got {other:?}"),
    }
    assert!(matches!(
        bb.resolve_run("c"),
        Err(StoreError::NotFound { what: "run", .. })
    ));
    assert!(matches!(
        bb.resolve_run(&format!("{}0", ids[0].simple())),
        Err(StoreError::NotFound { .. })
    ));
    // More matches than an error names: it names the oldest ten and counts them all.
    let many: Vec<Uuid> = (0..12u128)
        .map(|i| Uuid::from_u128(0xdddd_0000_0000_7000_8000_0000_0000_0000 + i))
        .collect();
    for id in &many {
        let mut new = NewRun::new("goal", "/repo");
        new.id = RunId(*id);
        bb.create_run(new).unwrap();
    }
    match bb.resolve_run("dddd") {
        Err(StoreError::AmbiguousId {
            candidates, total, ..
        }) => {
            assert_eq!(total, 12);
            let named: Vec<String> = many[..10].iter().map(Uuid::to_string).collect();
            assert_eq!(candidates, named);
        }
        other => panic!("expected AmbiguousId, got {other:?}"),
    }
    for bad in ["xyz", "", "-", "aa%", "a*", "a_b"] {
        assert!(
            matches!(
                bb.resolve_run(bad),
                Err(StoreError::InvalidId { what: "run", .. })
            ),
            "{bad:?}"
        );
    }

    let mut brief = sample_brief(a1, "one");
    brief.id = BriefId(Uuid::from_u128(0xcccc_0000_0000_7000_8000_0000_0000_0001));
    bb.insert_brief(&brief).unwrap();
    assert_eq!(bb.resolve_brief("cccc").unwrap(), brief.id);
    assert!(matches!(
        bb.resolve_brief("aaaa"),
        Err(StoreError::NotFound { what: "brief", .. })
    ));
    let gate = bb
        .open_gate(NewGate::new(a1, GateKind::T1Plan, json!({})))
        .unwrap();
    assert_eq!(bb.resolve_gate(&gate.id.short()).unwrap(), gate.id);
    assert!(matches!(
        bb.resolve_gate("zz"),
        Err(StoreError::InvalidId { what: "gate", .. })
    ));
}

// --- events -----------------------------------------------------------------------------------------------

/// `events_after` returns events in `seq` order, filtered by run, in pages; `last_seq` matches.
pub fn events_after_orders_filters_and_pages(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    assert_eq!(bb.last_seq(None).unwrap(), 0);
    let a = new_run(bb.as_ref());
    let b = new_run(bb.as_ref());
    for i in 0..25 {
        let run = if i % 2 == 0 { a } else { b };
        let event = NewEvent::log(run, "info", format!("line {i}")).tier(Tier::T3);
        let stored = bb.append_event(event.clone()).unwrap();
        assert_eq!(stored.kind, EventKind::Log);
        assert_eq!(stored.ts, event.ts);
        assert_eq!(stored.tier, Some(Tier::T3));
    }
    let all = bb.events_after(None, 0, 1000).unwrap();
    assert_eq!(all.len(), 27, "two run_created and 25 log lines");
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(bb.last_seq(None).unwrap(), all.last().unwrap().seq);

    let mut paged = Vec::new();
    let mut after = 0;
    loop {
        let page = bb.events_after(Some(a), after, 5).unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 5);
        after = page.last().unwrap().seq;
        paged.extend(page);
    }
    let expected: Vec<_> = all.iter().filter(|e| e.run == a).cloned().collect();
    assert_eq!(paged, expected);
    assert_eq!(paged.len(), 14);
    assert_eq!(paged[1].payload, json!({ "level": "info", "message": "line 0" }));
    assert_eq!(bb.last_seq(Some(a)).unwrap(), expected.last().unwrap().seq);
    assert!(
        bb.events_after(None, bb.last_seq(None).unwrap(), 10)
            .unwrap()
            .is_empty()
    );
}

/// `events_of_kinds_after` gives a run's events of the kinds asked, oldest first, paged, and no other.
pub fn events_of_kinds_are_filtered_and_paged(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let (a, b) = (new_run(bb.as_ref()), new_run(bb.as_ref()));
    for i in 0..12 {
        let kind = [EventKind::Log, EventKind::Verdict, EventKind::Artifact][i % 3];
        bb.append_event(NewEvent::new(a, kind, json!({ "i": i })))
            .unwrap();
        bb.append_event(NewEvent::new(b, kind, json!({ "i": i })))
            .unwrap();
    }
    let kinds = [EventKind::Verdict, EventKind::RunCreated];
    let expected: Vec<_> = bb
        .events_after(Some(a), 0, 1000)
        .unwrap()
        .into_iter()
        .filter(|e| kinds.contains(&e.kind))
        .collect();
    assert_eq!(expected.len(), 5, "run_created and four verdicts");
    let (mut paged, mut after) = (Vec::new(), 0);
    loop {
        let page = bb.events_of_kinds_after(a, &kinds, after, 2).unwrap();
        let Some(last) = page.last() else { break };
        assert!(page.len() <= 2);
        after = last.seq;
        paged.extend(page);
    }
    assert_eq!(paged, expected);
    assert!(bb.events_of_kinds_after(a, &[], 0, 10).unwrap().is_empty());
}

/// `briefs_in_events_after` names each brief a run's later events name, once, and no other.
pub fn briefs_in_events_after_name_each_brief_once(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let (a, b) = (new_run(bb.as_ref()), new_run(bb.as_ref()));
    let (x, y, z) = (sample_brief(a, "x"), sample_brief(a, "y"), sample_brief(b, "z"));
    bb.insert_briefs(&[x.clone(), y.clone()]).unwrap();
    bb.insert_brief(&z).unwrap();
    let sorted = |mut ids: Vec<BriefId>| {
        ids.sort_by_key(|id| id.0);
        ids
    };
    assert_eq!(
        sorted(bb.briefs_in_events_after(a, 0).unwrap()),
        sorted(vec![x.id, y.id]),
        "brief_created names them"
    );
    let since = bb.last_seq(Some(a)).unwrap();
    assert!(bb.briefs_in_events_after(a, since).unwrap().is_empty());
    for (brief, kind) in [
        (&x, EventKind::Spawned),
        (&x, EventKind::Completed),
        (&z, EventKind::Spawned),
    ] {
        bb.append_event(NewEvent::new(brief.run, kind, json!({})).brief(brief.id))
            .unwrap();
    }
    bb.append_event(NewEvent::log(a, "info", "names no brief"))
        .unwrap();
    assert_eq!(bb.briefs_in_events_after(a, since).unwrap(), vec![x.id]);
    assert_eq!(bb.briefs_in_events_after(b, since).unwrap(), vec![z.id]);
}

/// `workstreams_in_events_after` names the workstream of each brief a run's later events name, once, and
/// no other: not those of briefs only earlier events name, nor another run's.
pub fn workstreams_in_events_after_name_each_once(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let (a, b) = (new_run(bb.as_ref()), new_run(bb.as_ref()));
    let in_ws = |run, title: &str, ws: &str| Brief {
        workstream: ws.into(),
        ..sample_brief(run, title)
    };
    let (x, y, z, w) = (
        in_ws(a, "x", "ws-a"),
        in_ws(a, "y", "ws-a"),
        in_ws(a, "z", "ws-b"),
        in_ws(b, "w", "ws-c"),
    );
    bb.insert_briefs(&[x.clone(), y.clone(), z.clone()]).unwrap();
    bb.insert_brief(&w).unwrap();
    let sorted = |mut names: Vec<String>| {
        names.sort();
        names
    };
    assert_eq!(
        sorted(bb.workstreams_in_events_after(a, 0).unwrap()),
        vec!["ws-a", "ws-b"],
        "brief_created names them, ws-a once for its two briefs"
    );
    let since = bb.last_seq(Some(a)).unwrap();
    assert!(bb.workstreams_in_events_after(a, since).unwrap().is_empty());
    for brief in [&x, &y, &w] {
        bb.append_event(NewEvent::new(brief.run, EventKind::Spawned, json!({})).brief(brief.id))
            .unwrap();
    }
    bb.append_event(NewEvent::log(a, "info", "names no brief"))
        .unwrap();
    assert_eq!(bb.workstreams_in_events_after(a, since).unwrap(), vec!["ws-a"]);
    assert_eq!(bb.workstreams_in_events_after(b, since).unwrap(), vec!["ws-c"]);
}

/// Appending an event for an unknown run is refused.
pub fn events_need_an_existing_run(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let err = bb
        .append_event(NewEvent::log(RunId::new(), "info", "orphan"))
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { what: "run", .. }), "{err}");
    assert_eq!(bb.last_seq(None).unwrap(), 0);
}

// --- durability -------------------------------------------------------------------------------------------

/// What one handle wrote is all there through a handle opened after it was dropped.
pub fn data_persists_across_handles(factory: Factory<'_>) {
    let fx = factory();
    let (run, brief, gate, artifact, seq) = {
        let bb = fx.handle();
        let run = new_run(bb.as_ref());
        let brief = sample_brief(run, "task");
        bb.insert_brief(&brief).unwrap();
        let gate = bb
            .open_gate(NewGate::new(run, GateKind::T1Plan, json!({ "n": 1 })))
            .unwrap();
        let artifact = bb
            .put_artifact(NewArtifact::new(run, "plan", "text/plain", b"plan".to_vec()))
            .unwrap();
        (run, brief, gate, artifact, bb.last_seq(None).unwrap())
    };
    let bb = fx.handle();
    assert_eq!(bb.get_run(run).unwrap().id, run);
    assert_eq!(bb.get_brief(brief.id).unwrap(), brief);
    assert_eq!(bb.get_gate(gate.id).unwrap(), gate);
    assert_eq!(bb.get_artifact(artifact.id).unwrap().bytes, b"plan");
    assert_eq!(bb.last_seq(None).unwrap(), seq);
}

/// Opening the same store again and again (each open migrates) changes nothing and keeps it usable.
pub fn reopening_is_idempotent(factory: Factory<'_>) {
    let fx = factory();
    let run = new_run(fx.handle().as_ref());
    for _ in 0..3 {
        let bb = fx.handle();
        assert_eq!(bb.list_runs().unwrap().len(), 1);
        assert_eq!(bb.get_run(run).unwrap().status, RunStatus::Planning);
    }
    let bb = fx.handle();
    bb.insert_brief(&sample_brief(run, "after-reopen")).unwrap();
    assert_eq!(bb.list_briefs(run).unwrap().len(), 1);
}

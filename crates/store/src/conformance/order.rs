//! Properties of order: "oldest first" is insertion order when records share a timestamp. Ids are random,
//! so a backend that breaks ties by id would shuffle what one process wrote within one clock tick.

use super::*;

/// A clock that never advances: every record it stamps shares one instant.
fn frozen() -> Arc<dyn Clock> {
    Arc::new(SteppingClock::new(Utc::now(), chrono::Duration::zero()))
}

/// 50 briefs created in one instant (the caller's `created_at` and the handle's clock alike) are listed
/// and claimed in the order they were inserted, one by one or in a batch.
pub fn briefs_stamped_in_one_instant_keep_insertion_order(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle_with_clock(frozen());
    let run = new_run(bb.as_ref());
    let instant = Utc::now();
    let briefs: Vec<Brief> = (0..50)
        .map(|i| Brief {
            created_at: instant,
            ..sample_brief(run, &format!("task-{i}"))
        })
        .collect();
    for brief in &briefs[..25] {
        bb.insert_brief(brief).unwrap();
    }
    bb.insert_briefs(&briefs[25..]).unwrap();
    let ids: Vec<BriefId> = briefs.iter().map(|b| b.id).collect();

    let listed: Vec<BriefId> = bb.list_briefs(run).unwrap().iter().map(|b| b.id).collect();
    assert_eq!(listed, ids, "list_briefs is insertion order");
    let claimed: Vec<BriefId> =
        std::iter::from_fn(|| bb.claim_next_brief(Some(run), "w", DEFAULT_CLAIM_LEASE).unwrap())
            .map(|b| b.id)
            .collect();
    assert_eq!(claimed, ids, "claims take briefs in insertion order");
}

/// Runs, gates and artifacts stamped in one instant keep insertion order too: runs newest first, gates
/// oldest first (and the oldest is the one `decide_pending_gate` decides), artifacts oldest first with
/// the last one written the latest.
pub fn records_stamped_in_one_instant_keep_insertion_order(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle_with_clock(frozen());
    let runs: Vec<RunId> = (0..20).map(|_| new_run(bb.as_ref())).collect();
    let listed: Vec<RunId> = bb.list_runs().unwrap().iter().map(|r| r.id).collect();
    assert_eq!(
        listed,
        runs.iter().rev().copied().collect::<Vec<_>>(),
        "runs newest first"
    );

    let run = runs[0];
    let gates: Vec<GateId> = (0..20)
        .map(|i| {
            bb.open_gate(NewGate::new(run, GateKind::T1Plan, json!({ "n": i })))
                .unwrap()
                .id
        })
        .collect();
    let pending: Vec<GateId> = bb
        .pending_gates(Some(run))
        .unwrap()
        .iter()
        .map(|g| g.id)
        .collect();
    assert_eq!(pending, gates);
    let all: Vec<GateId> = bb.list_gates(run).unwrap().iter().map(|g| g.id).collect();
    assert_eq!(all, gates);
    assert_eq!(bb.decide_pending_gate(run, approve("ann")).unwrap().id, gates[0]);

    let artifacts: Vec<_> = (0..20)
        .map(|i| {
            let artifact = NewArtifact::new(run, "plan", "text/plain", format!("v{i}"));
            bb.put_artifact(artifact).unwrap().id
        })
        .collect();
    let listed: Vec<_> = bb
        .list_artifacts(run, None)
        .unwrap()
        .iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(listed, artifacts);
    let latest = bb.latest_artifact(run, "plan").unwrap().unwrap();
    assert_eq!(latest.meta.id, artifacts[19]);
    assert_eq!(latest.bytes, b"v19");
}

/// Log lines appended with `append_event_soon` are written by the handle's next write or `flush_events`
/// at the latest, in the order they were made and before that write's own event, where another handle
/// (another process) sees them.
pub fn log_lines_appended_soon_keep_their_place(factory: Factory<'_>) {
    let fx = factory();
    let (bb, other) = (fx.handle(), fx.handle());
    let run = new_run(bb.as_ref());
    let line = |n: u32| NewEvent::log(run, "info", n.to_string());
    bb.append_event_soon(line(1)).unwrap();
    bb.append_event_soon(line(2)).unwrap();
    bb.append_event(line(3)).unwrap();
    bb.append_event_soon(line(4)).unwrap();
    bb.flush_events().unwrap();
    bb.flush_events().unwrap();
    let seen: Vec<u64> = other
        .events_after(Some(run), 0, 100)
        .unwrap()
        .iter()
        .filter(|e| e.kind == EventKind::Log)
        .filter_map(|e| super::log_line(e).message.parse::<u64>().ok())
        .collect();
    assert_eq!(seen, [1, 2, 3, 4]);
}

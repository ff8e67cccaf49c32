//! Properties of claiming: dependency order, and exclusivity under concurrent claimers.

use super::*;
use crate::WriteBatch;

/// A claim takes the oldest pending brief whose dependencies are all done, of the given run; it sets
/// `running` and `claimed_by` and writes `brief_status`. Going back to pending clears the claim.
pub fn claiming_respects_dependencies_and_runs(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let other = new_run(bb.as_ref());
    assert_eq!(
        bb.claim_next_brief(Some(run), "w", DEFAULT_CLAIM_LEASE).unwrap(),
        None
    );

    let first = sample_brief(run, "first");
    bb.insert_brief(&first).unwrap();
    let mut second = sample_brief(run, "second");
    second.depends_on = vec![first.id];
    bb.insert_brief(&second).unwrap();
    let elsewhere = sample_brief(other, "elsewhere");
    bb.insert_brief(&elsewhere).unwrap();

    let claimed = bb
        .claim_next_brief(Some(run), "worker-1", DEFAULT_CLAIM_LEASE)
        .unwrap()
        .unwrap();
    assert_eq!(claimed.id, first.id);
    assert_eq!(claimed.status, BriefStatus::Running);
    assert_eq!(claimed.claimed_by.as_deref(), Some("worker-1"));
    assert_eq!(bb.get_brief(first.id).unwrap(), claimed);
    let event = bb.events_after(Some(run), 0, 100).unwrap().pop().unwrap();
    assert_eq!(event.kind, EventKind::BriefStatus);
    assert_eq!(event.brief, Some(first.id));
    assert_eq!(super::brief_move(&event).claimed_by.as_deref(), Some("worker-1"));

    assert_eq!(
        bb.claim_next_brief(Some(run), "worker-2", DEFAULT_CLAIM_LEASE)
            .unwrap(),
        None,
        "second waits for first"
    );
    let done = NewEvent::new(run, EventKind::Completed, json!({}));
    bb.update_brief_status(first.id, BriefStatus::Running, BriefStatus::Done, done)
        .unwrap();
    assert_eq!(
        bb.claim_next_brief(Some(run), "worker-2", DEFAULT_CLAIM_LEASE)
            .unwrap()
            .unwrap()
            .id,
        second.id
    );
    assert_eq!(
        bb.claim_next_brief(Some(run), "worker-2", DEFAULT_CLAIM_LEASE)
            .unwrap(),
        None
    );

    let requeue = NewEvent::new(other, EventKind::Retried, json!({}));
    assert_eq!(
        bb.claim_next_brief(None, "worker-3", DEFAULT_CLAIM_LEASE)
            .unwrap()
            .unwrap()
            .id,
        elsewhere.id
    );
    let requeued = bb
        .update_brief_status(elsewhere.id, BriefStatus::Running, BriefStatus::Pending, requeue)
        .unwrap();
    assert_eq!(requeued.claimed_by, None);
    assert_eq!(
        bb.claim_next_brief(None, "worker-4", DEFAULT_CLAIM_LEASE)
            .unwrap()
            .unwrap()
            .claimed_by
            .as_deref(),
        Some("worker-4")
    );
    assert_eq!(
        bb.claim_next_brief(None, "worker-4", DEFAULT_CLAIM_LEASE)
            .unwrap(),
        None
    );
}

fn claim_all_in_threads(bbs: Vec<Arc<dyn Blackboard>>, run: RunId) -> HashMap<BriefId, Vec<String>> {
    let claims = std::thread::scope(|scope| {
        let workers: Vec<_> = bbs
            .into_iter()
            .enumerate()
            .map(|(n, bb)| {
                scope.spawn(move || {
                    let name = format!("worker-{n}");
                    let mut mine = Vec::new();
                    while let Some(brief) = bb
                        .claim_next_brief(Some(run), &name, DEFAULT_CLAIM_LEASE)
                        .unwrap()
                    {
                        assert_eq!(brief.claimed_by.as_deref(), Some(name.as_str()));
                        mine.push((brief.id, name.clone()));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect::<Vec<_>>()
    });
    let mut by_brief: HashMap<BriefId, Vec<String>> = HashMap::new();
    for (id, who) in claims {
        by_brief.entry(id).or_default().push(who);
    }
    by_brief
}

fn insert_many(bb: &dyn Blackboard, run: RunId, count: usize) -> Vec<BriefId> {
    (0..count)
        .map(|i| {
            let brief = sample_brief(run, &format!("task-{i}"));
            bb.insert_brief(&brief).unwrap();
            brief.id
        })
        .collect()
}

fn assert_each_claimed_once(bb: &dyn Blackboard, ids: &[BriefId], claims: &HashMap<BriefId, Vec<String>>) {
    assert_eq!(claims.len(), ids.len(), "every brief is claimed");
    for id in ids {
        let who = &claims[id];
        assert_eq!(who.len(), 1, "brief {id} claimed by {who:?}");
        assert_eq!(bb.get_brief(*id).unwrap().claimed_by.as_ref(), Some(&who[0]));
    }
}

/// 200 briefs, 4 threads each with its own handle (as separate processes would): each brief is claimed
/// exactly once, by the claimer the row names.
pub fn concurrent_claims_across_handles_are_exclusive(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let ids = insert_many(bb.as_ref(), run, 200);
    let handles: Vec<Arc<dyn Blackboard>> = (0..4).map(|_| Arc::from(fx.handle())).collect();
    let claims = claim_all_in_threads(handles, run);
    assert_each_claimed_once(bb.as_ref(), &ids, &claims);
}

/// The same with 4 threads sharing one handle.
pub fn concurrent_claims_on_one_shared_handle_are_exclusive(factory: Factory<'_>) {
    let fx = factory();
    let bb: Arc<dyn Blackboard> = Arc::from(fx.handle());
    let run = new_run(bb.as_ref());
    let ids = insert_many(bb.as_ref(), run, 100);
    let claims = claim_all_in_threads(vec![bb.clone(), bb.clone(), bb.clone(), bb.clone()], run);
    assert_each_claimed_once(bb.as_ref(), &ids, &claims);
}

/// A claim holds for the lease its claimer asked for, from when it was taken or last renewed; only its
/// claimer may renew it. `reclaim_expired` returns briefs whose lease ended to `pending`, unclaimed, with a
/// `brief_status` event naming the claimer that lost it; they can be claimed again. A reclaim scoped to
/// another run leaves them alone.
pub fn expired_claims_are_reclaimed_with_an_event(factory: Factory<'_>) {
    let fx = factory();
    let t0 = Utc::now();
    // Not the default: the lease is the claimer's.
    let lease = chrono::Duration::minutes(3);
    let minutes = chrono::Duration::minutes;
    let at = |t| fx.handle_with_clock(Arc::new(crate::SteppingClock::new(t, chrono::Duration::zero())));
    let bb = at(t0);
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "long-task");
    let idle = sample_brief(run, "unclaimed");
    bb.insert_briefs(&[brief.clone(), idle.clone()]).unwrap();
    assert_eq!(
        bb.claim_next_brief(Some(run), "w1", lease).unwrap().unwrap().id,
        brief.id
    );

    assert!(
        bb.reclaim_expired(None, t0 + lease - minutes(1))
            .unwrap()
            .is_empty(),
        "lease holds"
    );
    let renewed = at(t0 + minutes(2)).renew_claim(brief.id, "w1", lease).unwrap();
    assert_eq!(renewed.claimed_by.as_deref(), Some("w1"));
    assert!(matches!(
        bb.renew_claim(brief.id, "w2", lease),
        Err(StoreError::Conflict { .. })
    ));
    assert!(matches!(
        bb.renew_claim(idle.id, "w1", lease),
        Err(StoreError::Conflict { .. })
    ));
    let seq = bb.last_seq(Some(run)).unwrap();
    assert!(
        bb.reclaim_expired(None, t0 + lease + minutes(1))
            .unwrap()
            .is_empty(),
        "the renewal extended the lease"
    );
    let other = new_run(bb.as_ref());
    assert!(
        bb.reclaim_expired(Some(other), t0 + minutes(10_000))
            .unwrap()
            .is_empty(),
        "a reclaim of another run"
    );
    assert_eq!(
        bb.last_seq(Some(run)).unwrap(),
        seq,
        "renewing and finding nothing write no event"
    );

    let reclaimed = bb
        .reclaim_expired(Some(run), t0 + minutes(2) + lease + minutes(1))
        .unwrap();
    assert_eq!(reclaimed.len(), 1);
    assert_eq!(reclaimed[0].id, brief.id);
    assert_eq!(reclaimed[0].status, BriefStatus::Pending);
    assert_eq!(reclaimed[0].claimed_by, None);
    assert_eq!(bb.get_brief(brief.id).unwrap(), reclaimed[0]);
    let event = bb.events_after(Some(run), seq, 10).unwrap();
    assert_eq!(event.len(), 1);
    assert_eq!(event[0].kind, EventKind::BriefStatus);
    assert_eq!(event[0].brief, Some(brief.id));
    let moved = super::brief_move(&event[0]);
    assert_eq!((moved.from.as_str(), moved.to.as_str()), ("running", "pending"));
    assert_eq!(moved.claimed_by.as_deref(), Some("w1"));
    assert_eq!(moved.reason.as_deref(), Some("lease_expired"));
    assert!(matches!(
        bb.renew_claim(brief.id, "w1", lease),
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(
        bb.claim_next_brief(Some(run), "w2", DEFAULT_CLAIM_LEASE)
            .unwrap()
            .unwrap()
            .id,
        brief.id
    );

    // A brief that left `running` has no lease left to expire.
    let done = NewEvent::new(run, EventKind::Completed, json!({}));
    bb.update_brief_status(brief.id, BriefStatus::Running, BriefStatus::Done, done)
        .unwrap();
    assert!(bb.reclaim_expired(None, t0 + minutes(10_000)).unwrap().is_empty());
}

/// 50 claims whose lease ended, 4 handles reclaiming at once (as the runners of several machines do): each
/// brief is reclaimed by exactly one of them, with exactly one event.
pub fn concurrent_reclaims_take_each_expired_claim_once(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let ids = insert_many(bb.as_ref(), run, 50);
    let lease = chrono::Duration::seconds(1);
    while bb.claim_next_brief(Some(run), "gone", lease).unwrap().is_some() {}
    let seq = bb.last_seq(Some(run)).unwrap();
    let later = Utc::now() + chrono::Duration::minutes(1);
    let handles: Vec<Box<dyn Blackboard>> = (0..4).map(|_| fx.handle()).collect();
    let reclaimed: Vec<BriefId> = std::thread::scope(|scope| {
        let workers: Vec<_> = handles
            .iter()
            .map(|h| scope.spawn(move || h.reclaim_expired(Some(run), later).unwrap()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .map(|b| b.id)
            .collect()
    });
    let mut sorted = reclaimed.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), reclaimed.len(), "a brief reclaimed twice");
    assert_eq!(reclaimed.len(), ids.len(), "every expired claim reclaimed");
    let events = bb.events_after(Some(run), seq, 1000).unwrap();
    assert_eq!(events.len(), ids.len(), "one event per reclaimed brief");
    assert!(
        events
            .iter()
            .all(|e| super::brief_move(e).reason.as_deref() == Some("lease_expired"))
    );
}

/// Fenced writes. Every claim of a brief takes the next generation. A holder's writes for its brief that
/// name its claim (a batch led by `HoldsClaim`, `append_event_holding`, anything through a
/// [`FencedBlackboard`](crate::FencedBlackboard)) are made while the claim holds — through moves of the
/// brief out of `running` — and refused with `ClaimLost`, writing nothing at all, once the brief was taken
/// back: by a reclaim, and still after the same holder claimed it anew (a new generation).
pub fn claim_holders_writes_are_fenced_by_the_claims_generation(factory: Factory<'_>) {
    let fx = factory();
    let bb: Arc<dyn Blackboard> = Arc::from(fx.handle());
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "fenced");
    bb.insert_brief(&brief).unwrap();
    let lease = DEFAULT_CLAIM_LEASE;

    let first = bb
        .claim_briefs(Some(run), "runner-a", lease, 1)
        .unwrap()
        .remove(0)
        .claim;
    assert_eq!(first.brief, brief.id);
    assert_eq!(first.holder, "runner-a");
    assert_eq!(first.generation, 1);
    let holder = crate::FencedBlackboard::new(bb.clone(), first.clone());
    // While the claim holds, the holder's writes are made.
    holder
        .append_event(NewEvent::new(run, EventKind::Log, json!({"n": 1})).brief(brief.id))
        .unwrap();
    holder
        .put_artifact(NewArtifact::new(run, "judge/fenced", "text/plain", b"one".to_vec()).brief(brief.id))
        .unwrap();

    // Its lease runs out; the brief is taken back, then claimed again by the same holder.
    let later = Utc::now() + lease + chrono::Duration::minutes(1);
    assert_eq!(bb.reclaim_expired(Some(run), later).unwrap().len(), 1);
    let before = bb.last_seq(Some(run)).unwrap();
    let lost = |result: Result<()>| match result {
        Err(StoreError::ClaimLost {
            holder,
            generation,
            found,
            ..
        }) => {
            assert_eq!(holder, "runner-a");
            assert_eq!(generation, 1);
            found
        }
        other => panic!("expected ClaimLost, got {other:?}"),
    };
    let found = lost(
        holder
            .append_event(NewEvent::new(run, EventKind::SignoffAccepted, json!({})).brief(brief.id))
            .map(drop),
    );
    assert!(found.contains("pending"), "{found}");
    let second = bb
        .claim_briefs(Some(run), "runner-a", lease, 1)
        .unwrap()
        .remove(0)
        .claim;
    assert_eq!(second.generation, 2, "a new claim, a new generation");
    let before_second = bb.last_seq(Some(run)).unwrap();
    assert!(before_second > before, "the claim wrote its brief_status");

    // The old claim's writes, each way a holder writes, are refused and write nothing.
    let event = || NewEvent::new(run, EventKind::SignoffAccepted, json!({})).brief(brief.id);
    let found = lost(holder.append_event(event()).map(drop));
    assert!(found.contains("runner-a in generation 2"), "{found}");
    lost(
        bb.append_event_holding(&crate::Fence::Holds(first.clone()), event())
            .map(drop),
    );
    lost(
        holder
            .put_artifact(
                NewArtifact::new(run, "judge/fenced", "text/plain", b"stale".to_vec()).brief(brief.id),
            )
            .map(drop),
    );
    let mut batch = WriteBatch::new();
    batch
        .append_event(event())
        .move_brief(brief.id, BriefStatus::Running, BriefStatus::Verifying, event());
    lost(holder.apply(batch.clone()));
    lost(
        holder
            .update_brief_status(brief.id, BriefStatus::Running, BriefStatus::Done, event())
            .map(drop),
    );
    lost(holder.renew_claim(brief.id, "runner-a", lease).map(drop));
    // Held back (where a backend holds writes back), a fenced batch is dropped whole when it is written and
    // the write it rides with is made; written at once, it is refused.
    match holder.apply_soon(batch) {
        Ok(()) | Err(StoreError::ClaimLost { .. }) => {}
        other => panic!("expected the held batch dropped or refused, got {other:?}"),
    }
    bb.append_event(NewEvent::log(run, "info", "rides")).unwrap();
    let since: Vec<_> = bb.events_after(Some(run), before_second, 100).unwrap();
    assert_eq!(since.len(), 1, "only the unfenced line: {since:?}");
    assert_eq!(super::log_line(&since[0]).message, "rides");
    assert_eq!(bb.get_brief(brief.id).unwrap().status, BriefStatus::Running);
    let judged: Vec<_> = bb
        .list_artifacts(run, Some(brief.id))
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(
        judged,
        vec!["judge/fenced".to_string()],
        "the stale artifact was not stored"
    );

    // The new claim's holder writes, through its own moves out of running.
    let current = crate::FencedBlackboard::new(bb.clone(), second);
    current.append_event(event()).unwrap();
    let mut done = WriteBatch::new();
    done.move_brief(brief.id, BriefStatus::Running, BriefStatus::Verifying, event())
        .put_artifact(NewArtifact::new(run, "report", "text/plain", b"ok".to_vec()).brief(brief.id));
    current.apply(done).unwrap();
    current
        .update_brief_status(brief.id, BriefStatus::Verifying, BriefStatus::Done, event())
        .unwrap();
    assert_eq!(bb.get_brief(brief.id).unwrap().status, BriefStatus::Done);
    // Writes for other briefs and the run are not the fence's business.
    let other = sample_brief(run, "other");
    holder.insert_brief(&other).unwrap();
    holder
        .append_event(NewEvent::new(run, EventKind::Log, json!({})))
        .unwrap();
}

/// The two fences a claim holder's last writes meet. Opening a gate for its brief checks its claim in the
/// same transaction (`open_gate_holding`): once the claim was taken back, no gate opens. And once the
/// holder gave its brief back itself (moved it to `pending`), its later writes for the brief are made
/// only while nobody has claimed it since: after another claim, each is refused with `ClaimLost` and
/// writes nothing.
pub fn a_holders_gate_is_fenced_and_so_are_its_writes_after_giving_its_brief_up(factory: Factory<'_>) {
    let fx = factory();
    let bb: Arc<dyn Blackboard> = Arc::from(fx.handle());
    let run = new_run(bb.as_ref());
    let lease = DEFAULT_CLAIM_LEASE;
    let lost = |result: Result<()>| match result {
        Err(StoreError::ClaimLost { holder, .. }) => assert_eq!(holder, "runner-a"),
        other => panic!("expected ClaimLost, got {other:?}"),
    };
    let gate = |run: RunId, brief: BriefId| {
        NewGate::new(run, GateKind::Teachback, json!({"message": "a holder's gate"})).brief(brief)
    };

    // A gate: opened while the claim holds; refused, and not opened, once it was taken back.
    let gated = sample_brief(run, "gated");
    bb.insert_brief(&gated).unwrap();
    let claim = bb
        .claim_briefs(Some(run), "runner-a", lease, 1)
        .unwrap()
        .remove(0)
        .claim;
    let holder = crate::FencedBlackboard::new(bb.clone(), claim.clone());
    let opened = holder.open_gate(gate(run, gated.id)).unwrap();
    bb.decide_gate(
        opened.id,
        GateDecision::Approve {
            by: "tester".into(),
            note: None,
        },
    )
    .unwrap();
    let later = Utc::now() + lease + chrono::Duration::minutes(1);
    assert_eq!(bb.reclaim_expired(Some(run), later).unwrap().len(), 1);
    let gates_before = bb.list_gates(run).unwrap().len();
    lost(holder.open_gate(gate(run, gated.id)).map(drop));
    lost(
        bb.open_gate_holding(&crate::Fence::Holds(claim), gate(run, gated.id))
            .map(drop),
    );
    assert_eq!(
        bb.list_gates(run).unwrap().len(),
        gates_before,
        "a gate opened for a lost claim"
    );
    assert!(bb.pending_gates(Some(run)).unwrap().is_empty());

    // Giving up (in a run of its own, so the brief reclaimed above is not claimed instead): the holder
    // moves its brief back to pending (an outage, say).
    let run = new_run(bb.as_ref());
    let given = sample_brief(run, "given up");
    bb.insert_brief(&given).unwrap();
    let claim = bb
        .claim_briefs(Some(run), "runner-a", lease, 1)
        .unwrap()
        .remove(0)
        .claim;
    assert_eq!(claim.brief, given.id);
    let holder = crate::FencedBlackboard::new(bb.clone(), claim.clone());
    let event = || NewEvent::new(run, EventKind::Log, json!({"last": "words"})).brief(given.id);
    holder
        .update_brief_status(given.id, BriefStatus::Running, BriefStatus::Pending, event())
        .unwrap();
    // Its last words, while nobody has claimed the brief since, are written.
    holder.append_event(event()).unwrap();
    // Another runner claims it; from then on the old holder writes nothing for it.
    let next = bb
        .claim_briefs(Some(run), "runner-b", lease, 1)
        .unwrap()
        .remove(0)
        .claim;
    assert_eq!((next.brief, next.generation), (given.id, claim.generation + 1));
    let before = bb.last_seq(Some(run)).unwrap();
    lost(holder.append_event(event()).map(drop));
    lost(
        holder
            .put_artifact(NewArtifact::new(run, "stale", "text/plain", b"x".to_vec()).brief(given.id))
            .map(drop),
    );
    lost(holder.open_gate(gate(run, given.id)).map(drop));
    lost(
        holder
            .update_brief_status(given.id, BriefStatus::Running, BriefStatus::Failed, event())
            .map(drop),
    );
    let mut batch = WriteBatch::new();
    batch.append_event(event());
    lost(holder.apply(batch));
    lost(
        bb.append_event_holding(&crate::Fence::GaveUp(claim), event())
            .map(drop),
    );
    assert_eq!(bb.last_seq(Some(run)).unwrap(), before, "a stale write was made");
    assert!(bb.list_artifacts(run, Some(given.id)).unwrap().is_empty());
    assert!(bb.pending_gates(Some(run)).unwrap().is_empty());
    let now = bb.get_brief(given.id).unwrap();
    assert_eq!(
        (now.status, now.claimed_by.as_deref()),
        (BriefStatus::Running, Some("runner-b"))
    );
    // The new holder's writes are its own.
    crate::FencedBlackboard::new(bb.clone(), next)
        .append_event(event())
        .unwrap();
}

//! Properties of write batches ([`Blackboard::apply`]) and of claiming several briefs at once.

use super::*;
use crate::{Change, WriteBatch};

fn status_event(run: RunId, kind: EventKind) -> NewEvent {
    NewEvent::new(run, kind, json!({ "note": "from a batch" }))
}

/// Everything one step writes, in one batch: every change lands, each with the event its own operation
/// writes, in the batch's order; a brief inserted earlier in the batch can be moved later in it.
pub fn write_batches_apply_every_change_in_order(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let parent = sample_brief(run, "implementer");
    bb.insert_brief(&parent).unwrap();
    bb.update_brief_status(
        parent.id,
        BriefStatus::Pending,
        BriefStatus::Running,
        status_event(run, EventKind::BriefStatus),
    )
    .unwrap();
    let mut child = sample_brief(run, "verifier");
    child.parent = Some(parent.id);
    child.tier = Tier::T5;
    let before = bb.last_seq(Some(run)).unwrap();

    let output =
        NewArtifact::new(run, "output/implementer", "application/json", b"{}".to_vec()).brief(parent.id);
    let mut batch = WriteBatch::new();
    batch
        .set_workspace(parent.id, Some("agency/impl".into()), Some("/tmp/wt/impl".into()))
        .put_artifact(output.clone())
        .append_event(
            NewEvent::new(run, EventKind::Spawned, json!({ "title": "implementer" })).brief(parent.id),
        )
        .insert_brief(child.clone())
        .move_brief(
            parent.id,
            BriefStatus::Running,
            BriefStatus::Verifying,
            status_event(run, EventKind::Completed),
        )
        .move_brief(
            child.id,
            BriefStatus::Pending,
            BriefStatus::Cancelled,
            status_event(run, EventKind::BriefStatus),
        )
        .move_teachback(
            parent.id,
            TeachbackState::Pending,
            TeachbackState::UnderReview,
            NewEvent::new(
                run,
                EventKind::TeachbackSubmitted,
                json!({ "title": "implementer" }),
            ),
        );
    assert_eq!(batch.len(), 7);
    bb.apply(batch).unwrap();

    let moved = bb.get_brief(parent.id).unwrap();
    assert_eq!(moved.status, BriefStatus::Verifying);
    assert_eq!(moved.branch.as_deref(), Some("agency/impl"));
    assert_eq!(moved.worktree.as_deref(), Some("/tmp/wt/impl"));
    assert_eq!(moved.teachback, TeachbackState::UnderReview);
    assert_eq!(bb.get_brief(child.id).unwrap().status, BriefStatus::Cancelled);
    assert_eq!(bb.get_artifact(output.id).unwrap().bytes, b"{}");
    let events = bb.events_after(Some(run), before, 100).unwrap();
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        vec![
            EventKind::Artifact,
            EventKind::Spawned,
            EventKind::BriefCreated,
            EventKind::Completed,
            EventKind::BriefStatus,
            EventKind::TeachbackSubmitted,
        ]
    );
    // The caller's events of a move are filled in with the brief and its tier, as update_brief_status does.
    assert_eq!(events[3].brief, Some(parent.id));
    assert_eq!(events[3].tier, Some(Tier::T4));
    assert_eq!(events[4].brief, Some(child.id));
    assert_eq!(events[4].tier, Some(Tier::T5));
    assert_eq!(events[5].brief, Some(parent.id));
    assert_eq!(events[5].tier, Some(Tier::T4));

    // An empty batch is nothing to write.
    let seq = bb.last_seq(Some(run)).unwrap();
    bb.apply(WriteBatch::new()).unwrap();
    assert_eq!(bb.last_seq(Some(run)).unwrap(), seq);
}

/// A batch is all or nothing: when any change fails — a status compare-and-set that does not match, even
/// after other moves succeeded; a brief that does not exist; an artifact id already taken — the batch fails
/// with that change's error and nothing of it is written, not even the changes before the failing one.
pub fn a_failing_write_batch_writes_nothing(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let first = sample_brief(run, "first");
    let second = sample_brief(run, "second");
    bb.insert_briefs(&[first.clone(), second.clone()]).unwrap();
    let taken = bb
        .put_artifact(NewArtifact::new(run, "taken", "text/plain", b"old".to_vec()))
        .unwrap();

    // Everything before the failing change: an artifact, an event, a workspace, a new brief, a move that
    // matches.
    let prefix = |batch: &mut WriteBatch| {
        batch
            .put_artifact(NewArtifact::new(run, "report", "text/plain", b"new".to_vec()).brief(first.id))
            .append_event(NewEvent::new(run, EventKind::Spawned, json!({})).brief(first.id))
            .set_workspace(first.id, Some("agency/first".into()), Some("/tmp/first".into()))
            .insert_brief(sample_brief(run, "third"))
            .move_brief(
                first.id,
                BriefStatus::Pending,
                BriefStatus::Running,
                status_event(run, EventKind::BriefStatus),
            );
    };
    let mut taken_id = NewArtifact::new(run, "again", "text/plain", b"x".to_vec());
    taken_id.id = taken.id;
    type Expected = fn(&StoreError) -> bool;
    let failing: Vec<(&str, Change, Expected)> = vec![
        (
            "a stale status move",
            Change::MoveBrief {
                id: second.id,
                from: BriefStatus::Running,
                to: BriefStatus::Verifying,
                event: status_event(run, EventKind::Completed),
            },
            |e| matches!(e, StoreError::Conflict { expected, found, .. } if expected == "running" && found == "pending"),
        ),
        (
            "a stale teachback move",
            Change::MoveTeachback {
                id: second.id,
                from: TeachbackState::UnderReview,
                to: TeachbackState::Active,
                event: status_event(run, EventKind::TeachbackApproved),
            },
            |e| matches!(e, StoreError::Conflict { expected, found, .. } if expected == "under_review" && found == "pending"),
        ),
        (
            "a missing brief",
            Change::SetWorkspace {
                id: BriefId::new(),
                branch: None,
                worktree: Some("/tmp/nowhere".into()),
            },
            |e| matches!(e, StoreError::NotFound { .. }),
        ),
        ("a taken artifact id", Change::PutArtifact(taken_id), |e| {
            matches!(e, StoreError::AlreadyExists { .. })
        }),
        (
            "an event of another run",
            Change::MoveBrief {
                id: second.id,
                from: BriefStatus::Pending,
                to: BriefStatus::Running,
                event: status_event(RunId::new(), EventKind::BriefStatus),
            },
            |e| matches!(e, StoreError::Invalid(_)),
        ),
    ];

    let seq = bb.last_seq(None).unwrap();
    for (what, change, expected) in failing {
        let mut batch = WriteBatch::new();
        prefix(&mut batch);
        batch.push(change);
        let error = bb.apply(batch).expect_err(what);
        assert!(expected(&error), "{what}: {error:?}");
        assert_eq!(bb.last_seq(None).unwrap(), seq, "{what}: no event written");
        assert_eq!(bb.get_brief(first.id).unwrap(), first, "{what}: first untouched");
        assert_eq!(
            bb.get_brief(second.id).unwrap(),
            second,
            "{what}: second untouched"
        );
        assert_eq!(bb.list_briefs(run).unwrap().len(), 2, "{what}: no brief inserted");
        assert_eq!(
            bb.list_artifacts(run, None).unwrap().len(),
            1,
            "{what}: no artifact stored"
        );
        assert_eq!(bb.latest_artifact(run, "taken").unwrap().unwrap().bytes, b"old");
    }

    // The same prefix on its own goes through: the failures above were the failing change's alone.
    let mut batch = WriteBatch::new();
    prefix(&mut batch);
    bb.apply(batch).unwrap();
    assert_eq!(bb.get_brief(first.id).unwrap().status, BriefStatus::Running);
    assert_eq!(bb.list_briefs(run).unwrap().len(), 3);
}

/// `claim_briefs` takes up to its limit of the oldest claimable briefs in order — what as many
/// `claim_next_brief` calls would take — each with its `brief_status` naming the claimer; a brief whose
/// dependency is not done is not among them; a limit of 0 claims nothing.
pub fn claiming_several_briefs_at_once(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let other = new_run(bb.as_ref());
    assert!(
        bb.claim_briefs(Some(run), "w", DEFAULT_CLAIM_LEASE, 4)
            .unwrap()
            .is_empty()
    );

    let first = sample_brief(run, "first");
    let mut blocked = sample_brief(run, "blocked");
    blocked.depends_on = vec![first.id];
    let third = sample_brief(run, "third");
    let fourth = sample_brief(run, "fourth");
    let elsewhere = sample_brief(other, "elsewhere");
    bb.insert_briefs(&[first.clone(), blocked.clone(), third.clone(), fourth.clone()])
        .unwrap();
    bb.insert_brief(&elsewhere).unwrap();

    let seq = bb.last_seq(Some(run)).unwrap();
    assert!(
        bb.claim_briefs(Some(run), "w", DEFAULT_CLAIM_LEASE, 0)
            .unwrap()
            .is_empty()
    );
    assert_eq!(bb.last_seq(Some(run)).unwrap(), seq);

    let claimed: Vec<Brief> = bb
        .claim_briefs(Some(run), "w1", DEFAULT_CLAIM_LEASE, 2)
        .unwrap()
        .into_iter()
        .map(|c| c.brief)
        .collect();
    let ids: Vec<BriefId> = claimed.iter().map(|b| b.id).collect();
    assert_eq!(ids, vec![first.id, third.id]);
    for brief in &claimed {
        assert_eq!(brief.status, BriefStatus::Running);
        assert_eq!(brief.claimed_by.as_deref(), Some("w1"));
        assert_eq!(&bb.get_brief(brief.id).unwrap(), brief);
    }
    let events = bb.events_after(Some(run), seq, 100).unwrap();
    assert_eq!(events.len(), 2);
    for (event, id) in events.iter().zip(&ids) {
        assert_eq!(event.kind, EventKind::BriefStatus);
        assert_eq!(event.brief, Some(*id));
        assert_eq!(super::brief_move(event).claimed_by.as_deref(), Some("w1"));
    }

    // More room than briefs: what is claimable (not `blocked`, whose dependency is running), no more.
    let rest = bb.claim_briefs(Some(run), "w2", DEFAULT_CLAIM_LEASE, 10).unwrap();
    assert_eq!(
        rest.iter().map(|c| c.brief.id).collect::<Vec<_>>(),
        vec![fourth.id]
    );
    assert_eq!(bb.get_brief(elsewhere.id).unwrap().status, BriefStatus::Pending);
    let all = bb.claim_briefs(None, "w3", DEFAULT_CLAIM_LEASE, 10).unwrap();
    assert_eq!(
        all.iter().map(|c| c.brief.id).collect::<Vec<_>>(),
        vec![elsewhere.id]
    );
}

/// Claimers taking several briefs at a time, 4 threads each with its own handle: each brief is claimed
/// exactly once.
pub fn concurrent_batch_claims_are_exclusive(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let ids: Vec<BriefId> = (0..120)
        .map(|i| {
            let brief = sample_brief(run, &format!("task-{i}"));
            bb.insert_brief(&brief).unwrap();
            brief.id
        })
        .collect();
    let claims: Vec<(BriefId, String)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|n| {
                let handle = fx.handle();
                scope.spawn(move || {
                    let name = format!("worker-{n}");
                    let mut mine = Vec::new();
                    loop {
                        let claimed = handle
                            .claim_briefs(Some(run), &name, DEFAULT_CLAIM_LEASE, 1 + n)
                            .unwrap();
                        if claimed.is_empty() {
                            return mine;
                        }
                        assert!(claimed.len() <= 1 + n);
                        mine.extend(claimed.into_iter().map(|c| (c.brief.id, name.clone())));
                    }
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    let mut by_brief: HashMap<BriefId, Vec<String>> = HashMap::new();
    for (id, who) in claims {
        by_brief.entry(id).or_default().push(who);
    }
    assert_eq!(by_brief.len(), ids.len(), "every brief is claimed");
    for id in &ids {
        let who = &by_brief[id];
        assert_eq!(who.len(), 1, "brief {id} claimed by {who:?}");
        assert_eq!(bb.get_brief(*id).unwrap().claimed_by.as_ref(), Some(&who[0]));
    }
}

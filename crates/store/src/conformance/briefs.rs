//! Properties of briefs: round trips, references, batches, and compare-and-set of status and teachback.

use super::*;

/// A brief with every field set reads back equal; `list_briefs` is oldest first; `brief_created` written.
pub fn briefs_round_trip_every_field(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let parent = sample_brief(run, "lead");
    bb.insert_brief(&parent).unwrap();
    let mut brief = sample_brief(run, "queue-client");
    brief.parent = Some(parent.id);
    brief.personality = Some("backend-engineer".into());
    brief.inputs = vec!["architecture".into(), "boundaries".into()];
    brief.variety = Some(Variety::new(2, 3, 2, 4).unwrap());
    brief.contract = Some(GoalContract {
        done_when: "cargo test passes".into(),
        verify: Some("cargo test".into()),
        failure_modes: vec!["tests deleted".into()],
        may_edit: vec!["tests/queue.rs".into()],
    });
    brief.retry_budget = 3;
    brief.attempt = 1;
    brief.depends_on = vec![parent.id];
    brief.branch = Some("agency/queue-client".into());
    brief.worktree = Some("/tmp/wt/queue-client".into());
    brief.teachback = TeachbackState::UnderReview;
    brief.claimed_by = Some("runner-1".into());
    brief.status = BriefStatus::Verifying;
    bb.insert_brief(&brief).unwrap();

    assert_eq!(bb.get_brief(brief.id).unwrap(), brief);
    assert_eq!(bb.list_briefs(run).unwrap(), vec![parent.clone(), brief.clone()]);
    assert!(bb.list_briefs(new_run(bb.as_ref())).unwrap().is_empty());
    let created: Vec<_> = bb
        .events_after(Some(run), 0, 100)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EventKind::BriefCreated)
        .collect();
    assert_eq!(created.len(), 2);
    assert_eq!(created[1].brief, Some(brief.id));
    assert_eq!(created[1].tier, Some(Tier::T4));
    assert_eq!(created[1].payload["title"], "queue-client");
    assert!(matches!(
        bb.get_brief(BriefId::new()),
        Err(StoreError::NotFound { what: "brief", .. })
    ));
}

/// A brief's run, parent and dependencies must exist (in its run); a duplicate id is refused; a refused
/// brief writes no event.
pub fn insert_brief_checks_references(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let other_run = new_run(bb.as_ref());
    let seq = bb.last_seq(None).unwrap();

    let orphan = sample_brief(RunId::new(), "orphan");
    assert!(matches!(
        bb.insert_brief(&orphan),
        Err(StoreError::NotFound { what: "run", .. })
    ));
    let mut dangling = sample_brief(run, "dangling");
    dangling.depends_on = vec![BriefId::new()];
    assert!(matches!(
        bb.insert_brief(&dangling),
        Err(StoreError::NotFound { .. })
    ));
    let mut no_parent = sample_brief(run, "no-parent");
    no_parent.parent = Some(BriefId::new());
    assert!(matches!(
        bb.insert_brief(&no_parent),
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(bb.last_seq(None).unwrap(), seq);

    let foreign = sample_brief(other_run, "foreign");
    bb.insert_brief(&foreign).unwrap();
    let mut cross = sample_brief(run, "cross");
    cross.depends_on = vec![foreign.id];
    assert!(matches!(bb.insert_brief(&cross), Err(StoreError::Invalid(_))));
    assert!(matches!(
        bb.insert_brief(&foreign),
        Err(StoreError::AlreadyExists { what: "brief", .. })
    ));
}

/// A batch of briefs is written whole (later ones may depend on earlier ones), or not at all.
pub fn insert_briefs_is_all_or_nothing(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let first = sample_brief(run, "first");
    let mut second = sample_brief(run, "second");
    second.depends_on = vec![first.id];
    bb.insert_briefs(&[first.clone(), second.clone()]).unwrap();
    assert_eq!(bb.list_briefs(run).unwrap(), vec![first.clone(), second]);

    let seq = bb.last_seq(None).unwrap();
    let third = sample_brief(run, "third");
    let mut broken = sample_brief(run, "broken");
    broken.depends_on = vec![BriefId::new()];
    assert!(matches!(
        bb.insert_briefs(&[third.clone(), broken]),
        Err(StoreError::NotFound { .. })
    ));
    assert!(
        matches!(bb.get_brief(third.id), Err(StoreError::NotFound { .. })),
        "nothing of the batch"
    );
    assert_eq!(bb.last_seq(None).unwrap(), seq, "and no event");
    bb.insert_briefs(&[]).unwrap();
}

/// `update_brief_status` is compare-and-set: it writes the new status and the caller's event together, or
/// on a stale `from` (or an event for another run) fails and writes neither.
pub fn brief_status_cas_writes_event_or_nothing(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "task");
    bb.insert_brief(&brief).unwrap();

    let spawned = NewEvent::new(run, EventKind::Spawned, json!({ "runtime": "builtin" }));
    let updated = bb
        .update_brief_status(brief.id, BriefStatus::Pending, BriefStatus::Running, spawned)
        .unwrap();
    assert_eq!(updated.status, BriefStatus::Running);
    let last = bb.events_after(Some(run), 0, 100).unwrap().pop().unwrap();
    assert_eq!(last.kind, EventKind::Spawned);
    assert_eq!(last.brief, Some(brief.id), "the brief is filled in");
    assert_eq!(last.tier, Some(Tier::T4), "and its tier");

    let seq = bb.last_seq(None).unwrap();
    let stale = NewEvent::new(run, EventKind::Completed, json!({}));
    match bb.update_brief_status(brief.id, BriefStatus::Pending, BriefStatus::Done, stale) {
        Err(StoreError::Conflict { expected, found, .. }) => {
            assert_eq!(expected, "pending");
            assert_eq!(found, "running");
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert_eq!(
        bb.last_seq(None).unwrap(),
        seq,
        "a failed compare-and-set writes no event"
    );
    assert_eq!(bb.get_brief(brief.id).unwrap().status, BriefStatus::Running);

    let elsewhere = NewEvent::new(new_run(bb.as_ref()), EventKind::Completed, json!({}));
    let seq = bb.last_seq(None).unwrap();
    assert!(matches!(
        bb.update_brief_status(brief.id, BriefStatus::Running, BriefStatus::Done, elsewhere),
        Err(StoreError::Invalid(_))
    ));
    assert_eq!(bb.last_seq(None).unwrap(), seq);
    assert_eq!(bb.get_brief(brief.id).unwrap().status, BriefStatus::Running);

    let missing = NewEvent::new(run, EventKind::Failed, json!({}));
    assert!(matches!(
        bb.update_brief_status(BriefId::new(), BriefStatus::Running, BriefStatus::Failed, missing),
        Err(StoreError::NotFound { .. })
    ));
}

/// `set_teachback_state` is compare-and-set with its event, like the status.
pub fn teachback_cas_writes_event_or_nothing(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "task");
    bb.insert_brief(&brief).unwrap();
    let submitted = NewEvent::new(run, EventKind::TeachbackSubmitted, json!({ "building": "x" }));
    let updated = bb
        .set_teachback_state(
            brief.id,
            TeachbackState::Pending,
            TeachbackState::UnderReview,
            submitted,
        )
        .unwrap();
    assert_eq!(updated.teachback, TeachbackState::UnderReview);
    assert_eq!(
        kinds(bb.as_ref(), run).last(),
        Some(&EventKind::TeachbackSubmitted)
    );

    let seq = bb.last_seq(None).unwrap();
    let approved = NewEvent::new(run, EventKind::TeachbackApproved, json!({}));
    let err = bb
        .set_teachback_state(
            brief.id,
            TeachbackState::Correcting,
            TeachbackState::Active,
            approved,
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    assert_eq!(bb.last_seq(None).unwrap(), seq);
    assert_eq!(
        bb.get_brief(brief.id).unwrap().teachback,
        TeachbackState::UnderReview
    );
}

/// Branch and worktree are recorded and cleared, without an event.
pub fn brief_workspace_is_recorded(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "task");
    bb.insert_brief(&brief).unwrap();
    let seq = bb.last_seq(None).unwrap();
    let updated = bb
        .set_brief_workspace(brief.id, Some("agency/task"), Some("/wt/task"))
        .unwrap();
    assert_eq!(updated.branch.as_deref(), Some("agency/task"));
    assert_eq!(
        bb.get_brief(brief.id).unwrap().worktree.as_deref(),
        Some("/wt/task")
    );
    assert_eq!(bb.set_brief_workspace(brief.id, None, None).unwrap().branch, None);
    assert_eq!(bb.last_seq(None).unwrap(), seq);
    assert!(matches!(
        bb.set_brief_workspace(BriefId::new(), None, None),
        Err(StoreError::NotFound { .. })
    ));
}

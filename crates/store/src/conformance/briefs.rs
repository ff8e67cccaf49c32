//! Properties of briefs: round trips, references, batches, and compare-and-set of status and teachback.

use super::*;
use crate::BriefState;

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
    let agency_core::event::EventPayload::BriefCreated(written) = super::typed(&created[1]) else {
        panic!("not a brief's creation: {:?}", created[1]);
    };
    assert_eq!(written.title, "queue-client");
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
    let mut own_parent = sample_brief(run, "own-parent");
    own_parent.parent = Some(own_parent.id);
    assert!(matches!(
        bb.insert_brief(&own_parent),
        Err(StoreError::NotFound { .. })
    ));
    let mut own_dependency = sample_brief(run, "own-dependency");
    own_dependency.depends_on = vec![own_dependency.id];
    assert!(matches!(
        bb.insert_brief(&own_dependency),
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
    assert_eq!(bb.brief_status(brief.id).unwrap(), BriefStatus::Running);
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
    assert!(matches!(
        bb.brief_status(BriefId::new()),
        Err(StoreError::NotFound { what: "brief", .. })
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

/// `list_briefs_by_status`, `list_children` and `list_workstream_briefs` answer exactly what a filter over
/// `list_briefs` would, in the same order (oldest first), and follow status changes (`list_children_states`
/// the children's states); `count_briefs` counts a workstream's briefs and `count_children` a parent's, by
/// tier and status.
pub fn briefs_by_status_by_parent_and_counted_by_workstream(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let other = new_run(bb.as_ref());
    let t0 = Utc::now();
    let mut parent = sample_brief(run, "squad");
    parent.tier = Tier::T3;
    parent.created_at = t0;
    let mut all = vec![parent.clone()];
    for i in 0..6 {
        let mut child = sample_brief(run, &format!("task-{i}"));
        child.parent = Some(parent.id);
        // Same timestamp for some: insertion order breaks the tie.
        child.created_at = t0 + chrono::Duration::milliseconds(i64::from(i / 2));
        if i % 3 == 0 {
            child.workstream = "ws-other".into();
        }
        all.push(child);
    }
    bb.insert_briefs(&all).unwrap();
    let mut elsewhere = sample_brief(other, "elsewhere");
    elsewhere.status = BriefStatus::Pending;
    bb.insert_brief(&elsewhere).unwrap();
    let moved = |id: BriefId, from: BriefStatus, to: BriefStatus| {
        let event = NewEvent::new(run, EventKind::BriefStatus, json!({}));
        bb.update_brief_status(id, from, to, event).unwrap();
    };
    moved(all[2].id, BriefStatus::Pending, BriefStatus::Verifying);
    moved(all[5].id, BriefStatus::Pending, BriefStatus::Verifying);
    moved(all[3].id, BriefStatus::Pending, BriefStatus::Done);

    let ids = |briefs: Vec<Brief>| briefs.into_iter().map(|b| b.id).collect::<Vec<_>>();
    let listed = bb.list_briefs(run).unwrap();
    for status in [
        BriefStatus::Pending,
        BriefStatus::Verifying,
        BriefStatus::Done,
        BriefStatus::Failed,
    ] {
        let expected: Vec<BriefId> = listed
            .iter()
            .filter(|b| b.status == status)
            .map(|b| b.id)
            .collect();
        assert_eq!(
            ids(bb.list_briefs_by_status(run, status).unwrap()),
            expected,
            "{status:?}"
        );
    }
    assert_eq!(
        bb.list_briefs_by_status(run, BriefStatus::Verifying).unwrap()[0],
        bb.get_brief(all[2].id).unwrap(),
        "whole briefs"
    );
    let children: Vec<BriefId> = listed
        .iter()
        .filter(|b| b.parent == Some(parent.id))
        .map(|b| b.id)
        .collect();
    assert_eq!(children.len(), 6);
    assert_eq!(ids(bb.list_children(parent.id).unwrap()), children);
    assert!(bb.list_children(all[1].id).unwrap().is_empty());
    let states: Vec<BriefState> = bb
        .list_children(parent.id)
        .unwrap()
        .iter()
        .map(BriefState::from)
        .collect();
    assert_eq!(bb.list_children_states(parent.id).unwrap(), states);
    assert!(bb.list_children_states(all[1].id).unwrap().is_empty());
    for workstream in ["ws-core", "ws-other", "ws-none"] {
        let expected: Vec<BriefId> = listed
            .iter()
            .filter(|b| b.workstream == workstream)
            .map(|b| b.id)
            .collect();
        assert_eq!(
            ids(bb.list_workstream_briefs(run, workstream).unwrap()),
            expected,
            "{workstream}"
        );
    }
    assert!(bb.list_workstream_briefs(other, "ws-other").unwrap().is_empty());

    let open = [BriefStatus::Pending, BriefStatus::Running, BriefStatus::Verifying];
    // ws-core: the squad (pending), task-1 and task-4 (verifying), task-2 (done), task-5 (pending);
    // ws-other: task-0 and task-3 (pending).
    assert_eq!(bb.count_briefs(run, "ws-core", None, &[]).unwrap(), 5);
    assert_eq!(bb.count_briefs(run, "ws-core", None, &open).unwrap(), 4);
    assert_eq!(bb.count_briefs(run, "ws-core", Some(Tier::T4), &open).unwrap(), 3);
    assert_eq!(
        bb.count_briefs(run, "ws-core", Some(Tier::T4), &[BriefStatus::Verifying])
            .unwrap(),
        2
    );
    assert_eq!(bb.count_briefs(run, "ws-other", None, &open).unwrap(), 2);
    assert_eq!(bb.count_briefs(run, "ws-other", Some(Tier::T5), &[]).unwrap(), 0);
    assert_eq!(bb.count_briefs(other, "ws-core", None, &[]).unwrap(), 1);
    assert_eq!(bb.count_briefs(run, "ws-none", None, &[]).unwrap(), 0);
    // The squad's children by workstream: in ws-core task-1 and task-4 (verifying), task-2 (done) and task-5
    // (pending); in ws-other task-0 and task-3 (pending).
    assert_eq!(bb.count_children(parent.id, "ws-core", None, &[]).unwrap(), 4);
    assert_eq!(
        bb.count_children(parent.id, "ws-core", Some(Tier::T4), &open)
            .unwrap(),
        3
    );
    assert_eq!(
        bb.count_children(parent.id, "ws-core", None, &[BriefStatus::Done])
            .unwrap(),
        1
    );
    assert_eq!(bb.count_children(parent.id, "ws-other", None, &open).unwrap(), 2);
    assert_eq!(
        bb.count_children(parent.id, "ws-core", Some(Tier::T5), &[])
            .unwrap(),
        0
    );
    assert_eq!(bb.count_children(all[1].id, "ws-core", None, &[]).unwrap(), 0);
}

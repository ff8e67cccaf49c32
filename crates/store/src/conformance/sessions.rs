//! Session bindings: a session or one sub-agent in it is bound to a brief, the sub-agent's own binding
//! wins, rebinding replaces, and every binding is an event; a session's tasks each name their brief.

use super::*;

/// Binds, looks up with the sub-agent falling back to its session, rebinds, and refuses unknown briefs.
pub fn sessions_bind_to_briefs_with_agents_falling_back(factory: Factory<'_>) {
    let fixture = factory();
    let bb = fixture.handle();
    let run = new_run(&*bb);
    let first = sample_brief(run, "first");
    let second = sample_brief(run, "second");
    bb.insert_briefs(&[first.clone(), second.clone()]).unwrap();

    assert_eq!(bb.session_brief("s1", None).unwrap(), None);
    assert_eq!(bb.session_brief("s1", Some("a1")).unwrap(), None);

    bb.bind_session("s1", None, first.id).unwrap();
    assert_eq!(bb.session_brief("s1", None).unwrap(), Some(first.id));
    assert_eq!(
        bb.session_brief("s1", Some("a1")).unwrap(),
        Some(first.id),
        "falls back to the session"
    );
    assert_eq!(bb.session_brief("s2", None).unwrap(), None);

    bb.bind_session("s1", Some("a1"), second.id).unwrap();
    assert_eq!(bb.session_brief("s1", Some("a1")).unwrap(), Some(second.id));
    assert_eq!(bb.session_brief("s1", Some("a2")).unwrap(), Some(first.id));
    assert_eq!(bb.session_brief("s1", None).unwrap(), Some(first.id));

    bb.bind_session("s1", None, second.id).unwrap();
    assert_eq!(
        bb.session_brief("s1", Some("a2")).unwrap(),
        Some(second.id),
        "a rebinding replaces"
    );
    // Seen through another handle, as the hook (another process) sees it.
    assert_eq!(
        fixture.handle().session_brief("s1", None).unwrap(),
        Some(second.id)
    );

    let unknown = BriefId::new();
    assert!(matches!(
        bb.bind_session("s3", None, unknown),
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(bb.session_brief("s3", None).unwrap(), None);

    let bindings: Vec<_> = bb
        .events_after(Some(run), 0, 100)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EventKind::Log && super::log_line(e).session.is_some())
        .collect();
    assert_eq!(bindings.len(), 3);
    assert_eq!(bindings[1].brief, Some(second.id));
    let bound = super::log_line(&bindings[1]);
    assert_eq!(bound.agent.as_deref(), Some("a1"));
    assert_eq!(bound.message, "agent a1 of session s1 bound to this brief");
}

/// Records a session's tasks, keeps sessions apart, replaces a re-recorded task, lists them in order, writes
/// one event each, and refuses unknown briefs.
pub fn session_tasks_record_their_briefs(factory: Factory<'_>) {
    let fixture = factory();
    let bb = fixture.handle();
    let run = new_run(&*bb);
    let first = sample_brief(run, "first");
    let second = sample_brief(run, "second");
    bb.insert_briefs(&[first.clone(), second.clone()]).unwrap();

    assert_eq!(bb.task_brief("s1", "1").unwrap(), None);
    assert!(bb.session_tasks("s1").unwrap().is_empty());

    bb.bind_task("s1", "1", first.id).unwrap();
    bb.bind_task("s1", "2", second.id).unwrap();
    bb.bind_task("s2", "1", second.id).unwrap();
    assert_eq!(bb.task_brief("s1", "1").unwrap(), Some(first.id));
    assert_eq!(bb.task_brief("s1", "2").unwrap(), Some(second.id));
    assert_eq!(bb.task_brief("s2", "1").unwrap(), Some(second.id));
    assert_eq!(bb.task_brief("s2", "2").unwrap(), None);
    assert_eq!(
        bb.session_tasks("s1").unwrap(),
        vec![("1".to_string(), first.id), ("2".to_string(), second.id)]
    );
    // A task is not a session binding: nobody is bound to a brief by creating a task.
    assert_eq!(bb.session_brief("s1", None).unwrap(), None);

    bb.bind_task("s1", "1", second.id).unwrap();
    assert_eq!(
        fixture.handle().task_brief("s1", "1").unwrap(),
        Some(second.id),
        "re-recording replaces, as another handle sees"
    );

    assert!(matches!(
        bb.bind_task("s3", "1", BriefId::new()),
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(bb.task_brief("s3", "1").unwrap(), None);

    let records: Vec<_> = bb
        .events_after(Some(run), 0, 100)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EventKind::Log && super::log_line(e).task.is_some())
        .collect();
    assert_eq!(records.len(), 4);
    assert_eq!(records[0].brief, Some(first.id));
    let bound = super::log_line(&records[0]);
    assert_eq!(bound.session.as_deref(), Some("s1"));
    assert_eq!(bound.message, "task 1 of session s1 is this brief");
}

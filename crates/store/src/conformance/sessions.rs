//! Session bindings: a session or one sub-agent in it is bound to a brief, the sub-agent's own binding
//! wins, rebinding replaces, and every binding is an event.

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
        .filter(|e| e.kind == EventKind::Log && e.payload.get("session").is_some())
        .collect();
    assert_eq!(bindings.len(), 3);
    assert_eq!(bindings[1].brief, Some(second.id));
    assert_eq!(bindings[1].payload["agent"], "a1");
    assert_eq!(
        bindings[1].payload["message"],
        "agent a1 of session s1 bound to this brief"
    );
}

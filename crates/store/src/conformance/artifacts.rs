//! Properties of artifacts.

use super::*;

/// Artifacts (binary content included) read back equal, list by run and brief, and the newest of a name
/// wins; each writes an `artifact` event.
pub fn artifacts_round_trip(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let brief = sample_brief(run, "task");
    bb.insert_brief(&brief).unwrap();

    let plan = bb
        .put_artifact(NewArtifact::new(
            run,
            "plan",
            "application/json",
            b"{\"a\":1}".to_vec(),
        ))
        .unwrap();
    let binary: Vec<u8> = (0..=255).collect();
    let blob = bb
        .put_artifact(
            NewArtifact::new(run, "transcript", "application/octet-stream", binary.clone()).brief(brief.id),
        )
        .unwrap();
    assert_eq!(blob.size, 256);
    let newer_plan = bb
        .put_artifact(NewArtifact::new(
            run,
            "plan",
            "application/json",
            b"{\"a\":2}".to_vec(),
        ))
        .unwrap();

    let got = bb.get_artifact(blob.id).unwrap();
    assert_eq!(got.meta, blob);
    assert_eq!(got.bytes, binary);
    assert_eq!(bb.get_artifact(plan.id).unwrap().bytes, b"{\"a\":1}");
    assert_eq!(bb.latest_artifact(run, "plan").unwrap().unwrap().meta, newer_plan);
    assert_eq!(bb.latest_artifact(run, "nope").unwrap(), None);
    assert_eq!(
        bb.list_artifacts(run, None).unwrap(),
        vec![plan.clone(), blob.clone(), newer_plan]
    );
    assert_eq!(
        bb.list_artifacts(run, Some(brief.id)).unwrap(),
        vec![blob.clone()]
    );

    let events: Vec<_> = bb
        .events_after(Some(run), 0, 100)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EventKind::Artifact)
        .collect();
    assert_eq!(events.len(), 3);
    assert_eq!(events[1].brief, Some(brief.id));
    let agency_core::event::EventPayload::Artifact(stored) = super::typed(&events[1]) else {
        panic!("not an artifact's record: {:?}", events[1]);
    };
    assert_eq!((stored.name.as_str(), stored.size), ("transcript", 256));
    assert!(matches!(
        bb.get_artifact(crate::ArtifactId::new()),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        bb.put_artifact(NewArtifact::new(RunId::new(), "x", "text/plain", Vec::new())),
        Err(StoreError::NotFound { what: "run", .. })
    ));
    assert!(matches!(
        bb.put_artifact(NewArtifact::new(run, "x", "text/plain", Vec::new()).brief(BriefId::new())),
        Err(StoreError::NotFound { what: "brief", .. })
    ));
    let mut again = NewArtifact::new(run, "plan", "application/json", Vec::new());
    again.id = plan.id;
    assert!(matches!(
        bb.put_artifact(again),
        Err(StoreError::AlreadyExists { what: "artifact", .. })
    ));
    // None of the refused ones was stored, nor its event written.
    assert_eq!(bb.list_artifacts(run, None).unwrap().len(), 3);
}

//! Properties of placement: a claim takes only the briefs its offer may take (the rule of
//! `agency_flow::placement`, whose cases these mirror), label needs are recorded per run, and runners'
//! offers are recorded with when they were last seen.

use std::collections::BTreeSet;

use agency_core::placement::{LabelNeed, Offer};

use super::*;

/// The titles `offer` claims of `run`, all it may take.
fn claim_titles(bb: &dyn Blackboard, run: RunId, claimer: &str, offer: &Offer) -> BTreeSet<String> {
    bb.claim_offered(Some(run), claimer, DEFAULT_CLAIM_LEASE, 100, offer)
        .unwrap()
        .into_iter()
        .map(|c| c.brief.title)
        .collect()
}

fn titles(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_string()).collect()
}

/// A claim takes a brief only when the offer has its tier (or every tier) and every label its workstream
/// needs (its own, and those of `*`); a claim without an offer (`claim_briefs`) takes none that needs a
/// label. Needs are per run.
pub fn claims_take_only_briefs_their_offer_may_take(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let other = new_run(bb.as_ref());
    let brief = |run: RunId, title: &str, tier: Tier, workstream: &str| {
        let mut b = sample_brief(run, title);
        b.tier = tier;
        b.workstream = workstream.into();
        bb.insert_brief(&b).unwrap();
    };
    brief(run, "ml-t4", Tier::T4, "ws-ml");
    brief(run, "ml-t5", Tier::T5, "ws-ml");
    brief(run, "web-t4", Tier::T4, "ws-web");
    brief(run, "web-t5", Tier::T5, "ws-web");
    // Another run's ws-ml needs nothing.
    brief(other, "other-ml", Tier::T4, "ws-ml");
    bb.set_label_needs(
        run,
        &[LabelNeed::new("ws-ml", "gpu"), LabelNeed::new("ws-ml", "linux")],
    )
    .unwrap();
    assert_eq!(
        bb.label_needs(run).unwrap(),
        [LabelNeed::new("ws-ml", "gpu"), LabelNeed::new("ws-ml", "linux")]
    );
    assert!(bb.label_needs(other).unwrap().is_empty());

    // No offer: only what needs no label.
    let plain = bb
        .claim_briefs(Some(run), "plain", DEFAULT_CLAIM_LEASE, 100)
        .unwrap();
    assert_eq!(
        plain
            .iter()
            .map(|c| c.brief.title.as_str())
            .collect::<BTreeSet<_>>(),
        ["web-t4", "web-t5"].into_iter().collect()
    );
    for claimed in plain {
        bb.update_brief_status(
            claimed.brief.id,
            BriefStatus::Running,
            BriefStatus::Pending,
            NewEvent::new(run, EventKind::Retried, json!({})),
        )
        .unwrap();
    }
    // One of the two labels is not enough; more labels than needed are fine; tiers narrow it.
    assert_eq!(
        claim_titles(bb.as_ref(), run, "half", &Offer::new(Some(&[Tier::T4]), &["gpu"])),
        titles(&["web-t4"])
    );
    assert_eq!(
        claim_titles(
            bb.as_ref(),
            run,
            "gpu-t5",
            &Offer::new(Some(&[Tier::T5]), &["gpu", "linux", "big-tests"])
        ),
        titles(&["ml-t5", "web-t5"])
    );
    assert_eq!(
        claim_titles(
            bb.as_ref(),
            run,
            "no-tier",
            &Offer::new(Some(&[]), &["gpu", "linux"])
        ),
        titles(&[])
    );
    assert_eq!(
        claim_titles(bb.as_ref(), run, "gpu-any", &Offer::new(None, &["gpu", "linux"])),
        titles(&["ml-t4"])
    );
    // The other run's ws-ml needs nothing of anyone.
    assert_eq!(
        claim_titles(bb.as_ref(), other, "plain", &Offer::default()),
        titles(&["other-ml"])
    );

    // `*` stands for every workstream of the run; replacing the needs replaces them all.
    brief(run, "web-late", Tier::T4, "ws-web");
    bb.set_label_needs(run, &[LabelNeed::new("*", "big-tests")])
        .unwrap();
    assert_eq!(bb.label_needs(run).unwrap(), [LabelNeed::new("*", "big-tests")]);
    assert_eq!(
        claim_titles(bb.as_ref(), run, "gpu", &Offer::new(None, &["gpu", "linux"])),
        titles(&[])
    );
    assert_eq!(
        claim_titles(bb.as_ref(), run, "big", &Offer::new(None, &["big-tests"])),
        titles(&["web-late"])
    );
}

/// Needs and offers with a label that is not 1 to 64 of letters, digits, `-`, `_`, `.` are refused with
/// nothing written; so are needs of an unknown run.
pub fn placement_labels_are_checked(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    bb.set_label_needs(run, &[LabelNeed::new("ws-a", "gpu")]).unwrap();
    for bad in ["", "has space", "semi;colon", &"x".repeat(65)] {
        assert!(
            matches!(
                bb.set_label_needs(run, &[LabelNeed::new("ws-a", "ok"), LabelNeed::new("ws-a", bad)]),
                Err(StoreError::Invalid(_))
            ),
            "{bad:?}"
        );
        assert!(matches!(
            bb.record_offer(run, "w", &Offer::new(None, &[bad])),
            Err(StoreError::Invalid(_))
        ));
    }
    assert_eq!(bb.label_needs(run).unwrap(), [LabelNeed::new("ws-a", "gpu")]);
    assert!(bb.runner_offers(run).unwrap().is_empty());
    assert!(matches!(
        bb.set_label_needs(RunId::new(), &[LabelNeed::new("ws-a", "gpu")]),
        Err(StoreError::NotFound { .. })
    ));
}

/// A runner's offer is recorded with the time it was last seen, replaced when recorded again, and
/// forgotten on request; offers are per run.
pub fn runner_offers_are_recorded_and_forgotten(factory: Factory<'_>) {
    let fx = factory();
    let bb = fx.handle();
    let run = new_run(bb.as_ref());
    let other = new_run(bb.as_ref());
    bb.record_offer(run, "worker-b", &Offer::new(Some(&[Tier::T4]), &["gpu"]))
        .unwrap();
    bb.record_offer(run, "runner-a", &Offer::default()).unwrap();
    let first = bb.runner_offers(run).unwrap();
    assert_eq!(
        first.iter().map(|o| o.runner.as_str()).collect::<Vec<_>>(),
        ["runner-a", "worker-b"]
    );
    assert_eq!(first[1].offer, Offer::new(Some(&[Tier::T4]), &["gpu"]));
    assert!(bb.runner_offers(other).unwrap().is_empty());
    std::thread::sleep(std::time::Duration::from_millis(5));
    bb.record_offer(run, "worker-b", &Offer::new(None, &["gpu", "big-tests"]))
        .unwrap();
    let again = bb.runner_offers(run).unwrap();
    assert_eq!(again[1].offer, Offer::new(None, &["gpu", "big-tests"]));
    assert!(again[1].seen_at > first[1].seen_at);
    bb.forget_offer(run, "worker-b").unwrap();
    bb.forget_offer(run, "never-was").unwrap();
    assert_eq!(
        bb.runner_offers(run)
            .unwrap()
            .iter()
            .map(|o| o.runner.as_str())
            .collect::<Vec<_>>(),
        ["runner-a"]
    );
}

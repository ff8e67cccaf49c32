use std::collections::BTreeMap;

use super::*;

const ARCHITECT: &str = "---\nname: Software Architect\ndescription: Designs systems.\ncolor: indigo\nemoji: 🏛️\nvibe: calm\ntools: Read, Write\n---\n\n# Software Architect\n\nYou design.\n";

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let full = dir.path().join("agents").join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }
    dir
}

fn config(registry: &[(Tier, &str, &str)]) -> PersonalitiesConfig {
    let mut map: BTreeMap<Tier, BTreeMap<String, String>> = BTreeMap::new();
    for (tier, domain, slug) in registry {
        map.entry(*tier)
            .or_default()
            .insert((*domain).into(), (*slug).into());
    }
    PersonalitiesConfig {
        dir: Some("agents".into()),
        registry: map,
    }
}

#[test]
fn the_defaults_parse_and_cover_every_tier() {
    let pool = Personalities::defaults();
    for tier in [Tier::T1, Tier::T2, Tier::T3, Tier::T4, Tier::T5] {
        let p = pool.tier_default(tier).unwrap();
        assert!(!p.prompt.is_empty() && !p.description.is_empty(), "{tier}");
        assert!(!p.prompt.starts_with("---"), "{tier}");
    }
    assert_eq!(pool.slugs().count(), 5);
    // Without a directory the registry (agency-agents names) is not used: the tier default is.
    let pool =
        Personalities::from_config(&PersonalitiesConfig::default(), Path::new("/nonexistent")).unwrap();
    let p = pool.for_brief(Tier::T4, "backend", None).unwrap().unwrap();
    assert_eq!(p.slug, "agency-implementer");
}

#[test]
fn a_directory_is_loaded_recursively_by_slug() {
    let dir = dir_with(&[
        ("engineering/engineering-software-architect.md", ARCHITECT),
        ("README.md", "# agency-agents\nNo front matter here.\n"),
    ]);
    let cfg = config(&[(Tier::T2, "backend", "engineering-software-architect")]);
    let pool = Personalities::from_config(&cfg, dir.path()).unwrap();
    let p = pool.get("engineering-software-architect").unwrap();
    assert_eq!(
        (
            p.name.as_str(),
            p.color.as_str(),
            p.emoji.as_deref(),
            p.prompt.as_str()
        ),
        (
            "Software Architect",
            "indigo",
            Some("🏛️"),
            "# Software Architect\n\nYou design."
        )
    );
    assert_eq!(p.tools, Some(serde_json::json!("Read, Write")));
    assert_eq!(
        pool.for_brief(Tier::T2, "Backend", None).unwrap().unwrap().slug,
        "engineering-software-architect"
    );
    assert_eq!(
        pool.for_brief(Tier::T2, "infra", None).unwrap().unwrap().slug,
        "agency-architect"
    );
    assert!(pool.get("README").is_none());
    // The domain matters for the tier the registry names, and for no other.
    assert!(pool.reads_domain(Tier::T2));
    assert!(!pool.reads_domain(Tier::T4));
}

#[test]
fn without_a_directory_no_tier_reads_the_domain() {
    // A registry in team.yaml with no directory is not used (see the defaults' test): the domain is not
    // needed, so the runner does not read the plan for it.
    let cfg = PersonalitiesConfig {
        dir: None,
        ..config(&[(Tier::T4, "backend", "engineering-software-architect")])
    };
    let pool = Personalities::from_config(&cfg, Path::new("/nonexistent")).unwrap();
    for tier in [Tier::T1, Tier::T2, Tier::T3, Tier::T4, Tier::T5] {
        assert!(!pool.reads_domain(tier), "{tier}");
        assert_eq!(
            pool.for_brief(tier, "backend", None).unwrap().map(|p| &p.slug),
            pool.for_brief(tier, "anything", None).unwrap().map(|p| &p.slug),
        );
    }
}

#[test]
fn unknown_registry_names_list_the_closest_existing_ones() {
    let dir = dir_with(&[("engineering/engineering-software-architect.md", ARCHITECT)]);
    let cfg = config(&[(Tier::T2, "backend", "engineering-sofware-architect")]);
    let err = Personalities::from_config(&cfg, dir.path()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "personalities.registry.t2.backend: unknown personality `engineering-sofware-architect` \
         (closest: engineering-software-architect)"
    );
    let pool = Personalities::defaults();
    let err = pool
        .for_brief(Tier::T4, "x", Some("agency-implementor"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "brief: unknown personality `agency-implementor` (closest: agency-implementer)"
    );
}

#[test]
fn missing_required_fields_and_duplicates_are_errors_naming_the_file() {
    let no_color = "---\nname: X\ndescription: y\n---\nbody\n";
    let dir = dir_with(&[("a/x.md", no_color)]);
    let err = Personalities::from_config(&config(&[]), dir.path()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("a/x.md: front matter:") && text.contains("color"),
        "{text}"
    );

    let dir = dir_with(&[("a/x.md", ARCHITECT), ("b/x.md", ARCHITECT)]);
    let err = Personalities::from_config(&config(&[]), dir.path()).unwrap_err();
    assert!(
        matches!(err, PersonalityError::Duplicate { ref slug, .. } if slug == "x"),
        "{err}"
    );

    let err = Personalities::from_config(&config(&[]), Path::new("/nonexistent")).unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot read the personalities directory"),
        "{err}"
    );
}

#[test]
fn edit_distance_counts_single_character_edits() {
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("", "abc"), 3);
    assert_eq!(edit_distance("same", "same"), 0);
    let names = ["sre", "senior-developer", "security-engineer"];
    assert_eq!(
        closest("securty-engineer", names.into_iter(), 3),
        ["security-engineer"]
    );
}

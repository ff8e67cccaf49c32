//! `agency config check` and `explain`: the default file passes; bad files fail with file, line and key path.

use crate::support::Repo;

#[test]
fn the_default_configuration_checks() {
    let repo = Repo::initialised();
    let out = repo.agency(&["config", "check"]).success();
    let dir = repo.path().to_str().unwrap();
    insta::assert_snapshot!(
        "config_check_default",
        crate::demo::normalise_run(&out.stdout(), dir)
    );
}

#[test]
fn a_wrong_type_names_file_line_and_path() {
    let repo = Repo::initialised();
    std::fs::write(
        repo.path().join(".agency/team.yaml"),
        "visibility:\n  strict_mode: false\n  inspection_gates:\n    t2_synthesis: \"yes\"\n",
    )
    .unwrap();
    let out = repo.agency(&["config", "check"]).fails_with(3);
    let err = out.stderr();
    assert!(err.contains("team.yaml:4"), "{err}");
    assert!(err.contains("t2_synthesis"), "{err}");
}

#[test]
fn an_unknown_key_is_an_error() {
    let repo = Repo::initialised();
    std::fs::write(
        repo.path().join(".agency/team.yaml"),
        "visibility:\n  strict_mod: true\n",
    )
    .unwrap();
    let out = repo.agency(&["config", "check"]).fails_with(3);
    let err = out.stderr();
    assert!(err.contains("team.yaml:2"), "{err}");
    assert!(err.contains("strict_mod"), "{err}");
}

#[test]
fn strict_mode_turns_every_gate_on() {
    let repo = Repo::initialised();
    std::fs::write(
        repo.path().join(".agency/team.yaml"),
        "visibility:\n  strict_mode: true\n",
    )
    .unwrap();
    let out = repo.agency(&["config", "check"]).success();
    for gate in ["t1_plan", "t2_lead", "t2_synthesis", "t3_plan", "t5_verdict"] {
        assert!(
            out.stdout().contains(gate),
            "{gate} missing from {}",
            out.stdout()
        );
    }
}

#[test]
fn a_config_flag_overrides_the_location() {
    let repo = Repo::initialised();
    let other = repo.path().join("other.yaml");
    std::fs::write(&other, "visibility:\n  log_level: loud\n").unwrap();
    let out = repo
        .agency(&["--config", other.to_str().unwrap(), "config", "check"])
        .fails_with(3);
    assert!(out.stderr().contains("other.yaml:2"), "{}", out.stderr());
}

#[test]
fn explain_names_every_tiers_model_and_key_variable() {
    let repo = Repo::initialised();
    let out = repo.agency(&["config", "explain"]).success();
    // Not a snapshot: the runtime column says where `claude` was found on this machine, and the key column
    // whether this environment sets the key.
    let text = out.stdout();
    for who in ["t1 ", "t2 ", "t3 ", "t4 ", "t5 ", "judge "] {
        assert!(
            text.lines().any(|l| l.starts_with(who)),
            "no row for {who}: {text}"
        );
    }
    assert!(text.contains("claude-opus-4-8"), "{text}");
    assert!(text.contains("ANTHROPIC_API_KEY ("), "{text}");
}

/// A folder in the agency-agents layout: division folders of personalities, and a README without front
/// matter (not a personality).
fn personality_fixture(repo: &Repo) {
    let dir = repo.path().join("agents/engineering");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("engineering-backend-architect.md"),
        "---\nname: Backend Architect\ndescription: Designs services\ncolor: blue\n---\nYou design services.\n",
    )
    .unwrap();
    std::fs::write(repo.path().join("agents/README.md"), "# agency-agents\n").unwrap();
}

#[test]
fn a_misspelled_personality_slug_is_refused_with_the_closest_names() {
    let repo = Repo::initialised();
    personality_fixture(&repo);
    std::fs::write(
        repo.path().join(".agency/team.yaml"),
        "personalities:\n  dir: agents\n  registry:\n    t4:\n      backend: engineering-backend-architek\n",
    )
    .unwrap();
    let err = repo.agency(&["config", "check"]).fails_with(3).stderr();
    assert!(
        err.contains("personalities.registry.t4.backend: unknown personality `engineering-backend-architek`"),
        "{err}"
    );
    assert!(err.contains("closest: engineering-backend-architect"), "{err}");
}

#[test]
fn a_registry_without_a_personalities_dir_is_refused() {
    let repo = Repo::initialised();
    std::fs::write(
        repo.path().join(".agency/team.yaml"),
        "personalities:\n  registry:\n    t4:\n      backend: engineering-backend-architek\n",
    )
    .unwrap();
    let err = repo.agency(&["config", "check"]).fails_with(3).stderr();
    assert!(err.contains("personalities.dir is not set"), "{err}");
    // agency run refuses it too, before anything is recorded.
    repo.commit("start");
    let run = repo
        .agency(&["run", "x", "--script", "/dev/null"])
        .fails_with(3)
        .stderr();
    assert!(run.contains("personalities.dir is not set"), "{run}");
}

#[test]
fn a_missing_personalities_dir_is_refused_with_the_fix() {
    let repo = Repo::initialised();
    std::fs::write(
        repo.path().join(".agency/team.yaml"),
        "personalities:\n  dir: no-such-folder\n",
    )
    .unwrap();
    let out = repo.agency(&["config", "check"]).fails_with(3);
    let err = out.stderr();
    assert!(err.contains("no-such-folder"), "{err}");
    assert!(err.contains("cannot read the personalities directory"), "{err}");
}

#[test]
fn a_valid_personality_folder_checks() {
    let repo = Repo::initialised();
    personality_fixture(&repo);
    std::fs::write(
        repo.path().join(".agency/team.yaml"),
        "personalities:\n  dir: agents\n  registry:\n    t4:\n      backend: engineering-backend-architect\n",
    )
    .unwrap();
    let out = repo.agency(&["config", "check"]).success();
    assert!(out.stdout().contains("personalities: 1 in"), "{}", out.stdout());
}

//! Personalities reach the agents: a run whose team.yaml points at a folder in the agency-agents layout
//! gives its implementer the registry's personality for the workstream's domain, after agency's rules.

use crate::support::{Repo, demo_dir};

#[test]
fn the_registrys_personality_for_the_domain_reaches_the_implementers_system_prompt() {
    let repo = Repo::new();
    for name in ["pagination.py", "test_pagination.py", ".gitignore"] {
        std::fs::copy(demo_dir().join("repo").join(name), repo.path().join(name)).unwrap();
    }
    // The default registry names `engineering-backend-architect` for t4 and the domain `backend`, the
    // demo plan's workstream domain.
    let division = repo.path().join("agents/engineering");
    std::fs::create_dir_all(&division).unwrap();
    // Every slug the default registry names exists (the run checks them all), each in its own voice.
    for slug in agency_core::config::PersonalitiesConfig::default()
        .registry
        .values()
        .flat_map(|domains| domains.values())
    {
        std::fs::write(
            division.join(format!("{slug}.md")),
            format!("---\nname: {slug}\ndescription: a fixture\ncolor: grey\n---\nYou are {slug}.\n"),
        )
        .unwrap();
    }
    std::fs::write(
        division.join("engineering-backend-architect.md"),
        "---\nname: Backend Architect\ndescription: Designs services\ncolor: blue\n---\n\
         You are the FIXTURE-VOICE backend architect.\n",
    )
    .unwrap();
    repo.commit("start");
    repo.agency(&["init"]).success();
    repo.edit_team(&[("  # dir: agents ", "  dir: agents ")]);
    repo.agency(&["config", "check"]).success();
    // The implementer's replies answer only a request whose system prompt carries the personality.
    let script = std::fs::read_to_string(demo_dir().join("script.yaml"))
        .unwrap()
        .replacen(
            "  - role: implementer\n",
            "  - role: implementer\n    contains: \"You are the FIXTURE-VOICE backend architect.\"\n",
            1,
        );
    let script = repo.write_script(&script);
    let out = repo
        .agency(&[
            "run",
            "Fix the pagination bug",
            "--script",
            script.to_str().unwrap(),
            "--auto-approve",
        ])
        .success();
    assert!(
        out.stdout().contains("STATUS        succeeded"),
        "{}",
        out.stdout()
    );
}

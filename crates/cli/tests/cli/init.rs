//! `agency init` and workspace discovery.

use crate::support::Repo;

#[test]
fn init_writes_config_and_blackboard() {
    let repo = Repo::new();
    let run = repo.agency(&["init"]).success();
    assert!(repo.path().join(".agency/team.yaml").is_file());
    assert!(repo.db().is_file());
    assert!(run.stdout().contains("wrote"), "{}", run.stdout());
    let yaml = std::fs::read_to_string(repo.path().join(".agency/team.yaml")).unwrap();
    assert!(yaml.contains("visibility:"), "{yaml}");
}

#[test]
fn init_keeps_an_existing_config_unless_forced() {
    let repo = Repo::initialised();
    let config = repo.path().join(".agency/team.yaml");
    std::fs::write(&config, "# mine\n").unwrap();
    repo.agency(&["init"]).success();
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "# mine\n");
    repo.agency(&["init", "--force"]).success();
    assert!(std::fs::read_to_string(&config).unwrap().contains("visibility:"));
}

#[test]
fn init_outside_a_git_repository_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repo::new();
    let run = repo.agency_in(dir.path(), &["init"]).fails_with(6);
    assert!(
        run.stderr().contains("not inside a git repository"),
        "{}",
        run.stderr()
    );
}

#[test]
fn commands_find_the_workspace_from_a_subdirectory() {
    let repo = Repo::initialised();
    let sub = repo.path().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let run = repo.agency_in(&sub, &["runs"]).success();
    assert!(run.stdout().contains("no runs yet"), "{}", run.stdout());
}

#[test]
fn commands_without_a_workspace_say_how_to_make_one() {
    let repo = Repo::new();
    let run = repo.agency(&["runs"]).fails_with(6);
    assert!(run.stderr().contains("agency init"), "{}", run.stderr());
}

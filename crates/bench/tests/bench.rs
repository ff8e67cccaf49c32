//! The bench as its users run it: a small whole run, its one line of figures, and what `--keep` leaves.

use std::collections::BTreeMap;
use std::process::Command;

fn figures(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_small_run_succeeds_prints_its_figures_and_keep_leaves_the_blackboard() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept");
    let output = Command::new(env!("CARGO_BIN_EXE_agency-bench"))
        .args(["--briefs", "8", "--squad", "2", "--keep"])
        .arg(&kept)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let figures = figures(&stdout);
    assert_eq!(figures["status"], "succeeded", "{stdout}");
    // Two workstreams of two slices: a plan, two squad leads, four implementers and their verifiers, the
    // acceptance.
    assert_eq!(figures["briefs"], "12", "{stdout}");
    for key in [
        "runner_us_per_brief",
        "process_us_per_brief",
        "processes_per_brief",
        "writes_per_brief",
        "peak_rss_mb",
    ] {
        let value: f64 = figures[key].parse().unwrap();
        assert!(value > 0.0, "{key}={value}");
    }
    assert!(kept.join("agency.db").is_file(), "the blackboard is left");
    assert!(kept.join("repo/.git").exists(), "the repository is left");

    let again = Command::new(env!("CARGO_BIN_EXE_agency-bench"))
        .args(["--briefs", "8", "--squad", "2", "--keep"])
        .arg(&kept)
        .output()
        .unwrap();
    assert!(!again.status.success(), "an existing directory is refused");
    assert!(String::from_utf8_lossy(&again.stderr).contains("--keep"));
}

//! The whole matrix: every tool kind × teachback state × teachback mode × rollout mode, against a table
//! written out independently of `decide`.

use serde_json::json;

use super::*;

const TEACHBACK: &str = "Teachback:\n- Building: b\n- Key constraints: k\n- Approach: a\n\
    - Most likely wrong: w\n- Least confident: l";
const ROTE: &str = "Teachback: understood, proceeding";

/// What enforce does with a call on a blocking brief in a waiting state.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Allow,
    Block,
    /// Allowed and submitted when the state accepts a submission, blocked otherwise.
    SubmitOrBlock,
    /// Refused as incomplete when the state accepts a submission, blocked otherwise.
    Incomplete,
}

/// Every representative call, Claude Code and Codex names, with what a pending blocking brief gets.
fn calls() -> Vec<(&'static str, serde_json::Value, Expect)> {
    vec![
        ("Read", json!({"file_path": "/x"}), Expect::Allow),
        ("Glob", json!({"pattern": "*"}), Expect::Allow),
        ("Grep", json!({"pattern": "x"}), Expect::Allow),
        ("LS", json!({}), Expect::Allow),
        ("TaskGet", json!({"taskId": "1"}), Expect::Allow),
        ("TaskList", json!({}), Expect::Allow),
        ("read_file", json!({}), Expect::Allow),
        ("list_dir", json!({}), Expect::Allow),
        ("grep_files", json!({}), Expect::Allow),
        ("Bash", json!({"command": "git status"}), Expect::Allow),
        ("Bash", json!({"command": "ls -la src"}), Expect::Allow),
        ("exec_command", json!({"cmd": "git diff --stat"}), Expect::Allow),
        ("shell", json!({"command": ["cat", "README.md"]}), Expect::Allow),
        (
            "Bash",
            json!({"command": "agency teachback submit --file tb.md"}),
            Expect::Allow,
        ),
        (
            "Bash",
            json!({"command": "/usr/bin/agency teachback show"}),
            Expect::Allow,
        ),
        (
            "Bash",
            json!({"command": "agency teachback approve x"}),
            Expect::Block,
        ),
        (
            "Bash",
            json!({"command": "./agency teachback submit x"}),
            Expect::Block,
        ),
        (
            "Bash",
            json!({"command": "agency teachback submit; rm -rf ."}),
            Expect::Block,
        ),
        ("Bash", json!({"command": "cat a > b"}), Expect::Block),
        (
            "Bash",
            json!({"command": "git log --output=.agency/team.yaml"}),
            Expect::Block,
        ),
        ("Bash", json!({"command": "rg --pre sh x"}), Expect::Block),
        ("Bash", json!({"command": "find . -delete"}), Expect::Block),
        // An argv is checked word for word: joined plainly, these quotes would hide `--output`.
        (
            "shell",
            json!({"command": ["git", "log", "'", "--output=x", "'"]}),
            Expect::Block,
        ),
        (
            "shell",
            json!({"command": ["bash", "-lc", "git log --oneline -5"]}),
            Expect::Allow,
        ),
        ("Bash", json!({"command": "rm -rf ."}), Expect::Block),
        ("Bash", json!({}), Expect::Block),
        ("Edit", json!({}), Expect::Block),
        ("Write", json!({"file_path": "/x", "content": "y"}), Expect::Block),
        ("MultiEdit", json!({}), Expect::Block),
        ("NotebookEdit", json!({}), Expect::Block),
        (
            "apply_patch",
            json!({"command": "*** Begin Patch"}),
            Expect::Block,
        ),
        ("Agent", json!({"prompt": "p"}), Expect::Block),
        ("Task", json!({"prompt": "p"}), Expect::Block),
        ("spawn_agent", json!({}), Expect::Block),
        (
            "SendMessage",
            json!({"to": "lead", "message": "hi"}),
            Expect::Block,
        ),
        (
            "SendMessage",
            json!({"to": "lead", "message": {"type": "x"}}),
            Expect::Block,
        ),
        (
            "SendMessage",
            json!({"to": "lead", "message": TEACHBACK}),
            Expect::SubmitOrBlock,
        ),
        (
            "SendMessage",
            json!({"to": "lead", "message": ROTE}),
            Expect::Incomplete,
        ),
        ("TaskCreate", json!({"subject": "s"}), Expect::Block),
        ("TaskUpdate", json!({}), Expect::Block),
        ("WebFetch", json!({}), Expect::Block),
        ("SomeFutureTool", json!({}), Expect::Block),
    ]
}

const MODES: [TeachbackMode; 2] = [TeachbackMode::Blocking, TeachbackMode::Advisory];

#[test]
fn the_whole_matrix() {
    let config = TeachbackConfig::default();
    let corrections = vec!["retries are per message".to_string()];
    let mut cases = 0;
    for (tool, input, expect) in calls() {
        let kind = classify(tool, &input);
        for state in TeachbackState::ALL {
            for mode in MODES {
                for rollout in RolloutMode::ALL {
                    let gate = GateState { state, mode, rollout };
                    let got = decide(&kind, gate, &config, &corrections);
                    let label = format!("{tool} {input} {state} {mode:?} {rollout}");
                    let may_submit = matches!(state, TeachbackState::Pending | TeachbackState::Correcting);
                    let gated = mode == TeachbackMode::Blocking && state != TeachbackState::Active;
                    // The teachback itself is submitted in any mode, from the states that accept it.
                    if expect == Expect::SubmitOrBlock && may_submit {
                        assert!(matches!(got, ToolGateDecision::Submit(_)), "{label}: {got:?}");
                        cases += 1;
                        continue;
                    }
                    let blocked = match expect {
                        Expect::Allow => false,
                        Expect::Block | Expect::SubmitOrBlock => gated,
                        // A rote teachback is refused on blocking briefs even when nothing else would be.
                        Expect::Incomplete => gated || (mode == TeachbackMode::Blocking && may_submit),
                    };
                    match (blocked, rollout, &got) {
                        (false, _, ToolGateDecision::Allow) => {}
                        (true, RolloutMode::Enforce, ToolGateDecision::Deny { reason }) => {
                            assert!(reason.starts_with("teachback gate: "), "{label}: {reason}");
                        }
                        (true, r, ToolGateDecision::WouldDeny { rollout, reason }) if r == *rollout => {
                            assert_ne!(r, RolloutMode::Enforce);
                            assert!(reason.starts_with("teachback gate: "), "{label}: {reason}");
                        }
                        _ => panic!("{label}: expected blocked={blocked}, got {got:?}"),
                    }
                    assert_eq!(
                        got.runs(),
                        !(blocked && rollout == RolloutMode::Enforce),
                        "{label}"
                    );
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, calls().len() * 4 * 2 * 3);
}

#[test]
fn allowed_regardless_means_allowed_under_every_config_and_rollout() {
    let configs = [
        TeachbackConfig::default(),
        TeachbackConfig {
            readonly_bash: Vec::new(),
            ..TeachbackConfig::default()
        },
    ];
    let mut fast = 0;
    for (tool, input, _) in calls() {
        let kind = classify(tool, &input);
        for state in TeachbackState::ALL {
            for mode in MODES {
                if !allowed_regardless(&kind, state, mode) {
                    continue;
                }
                fast += 1;
                for config in &configs {
                    for rollout in RolloutMode::ALL {
                        let gate = GateState { state, mode, rollout };
                        assert_eq!(
                            decide(&kind, gate, config, &[]),
                            ToolGateDecision::Allow,
                            "{tool} {state} {mode:?}"
                        );
                    }
                }
            }
        }
    }
    assert!(fast > 100, "{fast}");
}

#[test]
fn reasons_say_what_to_do_next() {
    let config = TeachbackConfig::default();
    let write = classify("Write", &json!({}));
    let reason_in = |state, corrections: &[String]| {
        let gate = GateState {
            state,
            mode: TeachbackMode::Blocking,
            rollout: RolloutMode::Enforce,
        };
        match decide(&write, gate, &config, corrections) {
            ToolGateDecision::Deny { reason } => reason,
            other => panic!("{other:?}"),
        }
    };
    let pending = reason_in(TeachbackState::Pending, &[]);
    assert!(
        pending.contains("file changes are not allowed while the teachback is pending"),
        "{pending}"
    );
    assert!(pending.contains("agency teachback submit"), "{pending}");
    assert!(pending.contains("Most likely wrong"), "{pending}");
    let review = reason_in(TeachbackState::UnderReview, &[]);
    assert!(review.contains("under review: wait"), "{review}");
    let items = ["per message".to_string(), "no new deps".to_string()];
    let correcting = reason_in(TeachbackState::Correcting, &items);
    assert!(
        correcting.contains("1. per message 2. no new deps"),
        "{correcting}"
    );
}

#[test]
fn codex_names_classify_like_claude_code_names() {
    assert_eq!(classify("apply_patch", &json!({})), classify("Write", &json!({})));
    assert_eq!(classify("read_file", &json!({})), classify("Read", &json!({})));
    assert_eq!(
        classify("exec_command", &json!({"cmd": "ls"})),
        classify("Bash", &json!({"command": "ls"}))
    );
}

mod never_panics {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn any_message_text(text in ".{0,300}") {
            let _ = teachback_text::parse(&text);
            let _ = teachback_text::parse(&format!("Teachback:\n{text}"));
        }

        #[test]
        fn any_tool_call(name in "[A-Za-z_]{0,12}", command in ".{0,60}", message in ".{0,80}") {
            let config = TeachbackConfig::default();
            let input = json!({"command": command, "message": message});
            let kind = classify(&name, &input);
            for state in TeachbackState::ALL {
                for mode in MODES {
                    for rollout in RolloutMode::ALL {
                        let _ = decide(&kind, GateState { state, mode, rollout }, &config, &[]);
                    }
                }
            }
            let _ = task_create::validate(&input);
        }
    }
}

#[test]
fn a_refused_shell_command_is_told_why() {
    let gate = GateState {
        state: TeachbackState::Pending,
        mode: TeachbackMode::Blocking,
        rollout: RolloutMode::Enforce,
    };
    let bash = classify("Bash", &json!({"command": "git log --output=x"}));
    match decide(&bash, gate, &TeachbackConfig::default(), &[]) {
        ToolGateDecision::Deny { reason } => assert!(
            reason.starts_with(
                "teachback gate: this command is not read-only (git log: `--output` is not an option agency \
                 knows to be read-only), and shell commands other than read-only ones are not allowed while \
                 the teachback is pending."
            ),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn deciding_under_enforce_then_softening_equals_deciding_under_the_rollout() {
    let configs = [TeachbackConfig::default()];
    let mut cases = 0;
    for (tool, input, _) in calls() {
        let kind = classify(tool, &input);
        for state in TeachbackState::ALL {
            for mode in MODES {
                for rollout in RolloutMode::ALL {
                    let enforce = GateState {
                        state,
                        mode,
                        rollout: RolloutMode::Enforce,
                    };
                    let actual = GateState { rollout, ..enforce };
                    assert_eq!(
                        decide(&kind, enforce, &configs[0], &[]).under(rollout),
                        decide(&kind, actual, &configs[0], &[]),
                        "{tool} {state} {mode:?} {rollout}"
                    );
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, calls().len() * 4 * 2 * 3);
}

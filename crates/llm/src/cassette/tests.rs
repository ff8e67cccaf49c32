//! Recording and replaying through the scripted provider, and the pieces in between.

use std::sync::Arc;

use agency_core::redact::Redactor;

use super::compare::normalise;
use super::*;
use crate::message::{Block, StopReason, Usage};
use crate::provider::complete;
use crate::scripted::{Script, ScriptedProvider};
use agency_core::{BriefId, RunId};

const SCRIPT: &str = "replies:\n  - role: implementer\n    replies:\n      - tool_calls: [{name: read_file, input: {path: a.txt}}]\n      - text: done\n  - role: judge\n    reply: {error: {kind: overloaded, message: busy}}\n";

fn request(run: RunId, brief: BriefId, role: &str, messages: Vec<Message>) -> Request {
    Request {
        system: vec!["You are careful.".into(), "Brief: fix a.txt".into()],
        messages,
        max_tokens: 1000,
        meta: CallMeta {
            run: Some(run),
            brief_id: Some(brief),
            brief: Some("ws-a/t4/Fix a".into()),
            role: Some(role.into()),
            ..CallMeta::default()
        },
        ..Request::default()
    }
}

fn recorded_run(root: &Path, secret: &str) -> (RunId, Vec<Request>) {
    let redactor = Redactor::new([("MY_TOKEN".to_string(), secret.to_string())]);
    let recorder = Recorder::new(root.join("cassettes"), redactor);
    let provider = recorder.wrap(Arc::new(ScriptedProvider::new(
        Script::from_yaml(SCRIPT).unwrap(),
    )));
    let (run, brief) = (RunId::new(), BriefId::new());
    let first = request(
        run,
        brief,
        "implementer",
        vec![Message::user(format!(
            "start; the token is {secret}; at {}",
            root.display()
        ))],
    );
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let answer = rt.block_on(complete(provider.as_ref(), &first)).unwrap();
    let mut second = first.clone();
    second.messages.push(Message::assistant(answer.content.clone()));
    second
        .messages
        .push(Message::tool_results(vec![Block::tool_result("t1", "a", false)]));
    rt.block_on(complete(provider.as_ref(), &second)).unwrap();
    let judge = request(run, brief, "judge", vec![Message::user("judge it")]);
    let err = rt.block_on(complete(provider.as_ref(), &judge)).unwrap_err();
    assert!(matches!(err, LlmError::Overloaded { .. }), "{err}");
    Manifest {
        format: FORMAT,
        run: run.to_string(),
        goal: "fix a".into(),
        root: root.display().to_string(),
        auto_approve: true,
    }
    .write(&root.join("cassettes").join(run.to_string()))
    .unwrap();
    (run, vec![first, second, judge])
}

#[test]
fn a_recording_is_one_redacted_file_per_call_keyed_by_brief_attempt_role_and_turn() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "s3cr3t-value-of-the-token";
    let (run, _) = recorded_run(dir.path(), secret);
    let cassette = dir.path().join("cassettes").join(run.to_string());
    let calls = load_calls(&cassette).unwrap();
    let keys: Vec<String> = calls.iter().map(|(_, c)| c.key.to_string()).collect();
    assert_eq!(
        keys,
        [
            "brief ws-a/t4/Fix a, attempt 0, role implementer, turn 1",
            "brief ws-a/t4/Fix a, attempt 0, role implementer, turn 2",
            "brief ws-a/t4/Fix a, attempt 0, role judge, turn 1",
        ]
    );
    let file = calls[0].0.strip_prefix(&cassette).unwrap().to_path_buf();
    assert_eq!(
        file,
        PathBuf::from(brief_dir("ws-a/t4/Fix a")).join("a0-implementer-t001.json")
    );
    assert!(file.to_str().unwrap().starts_with("ws-a-t4-fix-a-"));
    for (path, _) in &calls {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(!text.contains(secret), "{text}");
    }
    assert!(
        std::fs::read_to_string(&calls[0].0)
            .unwrap()
            .contains("[redacted:MY_TOKEN]")
    );
    assert!(matches!(calls[2].1.outcome, Outcome::Error(ref e) if e.kind == "overloaded"));
}

#[test]
fn a_replay_answers_from_the_cassette_and_reports_the_first_difference() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "s3cr3t-value-of-the-token";
    let (run, requests) = recorded_run(dir.path(), secret);
    let cassette = dir.path().join("cassettes").join(run.to_string());
    let redactor = || Redactor::new([("MY_TOKEN".to_string(), secret.to_string())]);
    // Another run in another place: ids and roots differ, which the comparison ignores.
    let other_root = dir.path().join("elsewhere");
    let replayer = Replayer::open(&cassette, &other_root, redactor()).unwrap();
    assert_eq!(replayer.len(), 3);
    let provider = replayer.provider("scripted");
    let (run2, brief2) = (RunId::new(), BriefId::new());
    let relocate = |r: &Request| {
        let mut r = r.clone();
        r.meta.run = Some(run2);
        r.meta.brief_id = Some(brief2);
        for m in &mut r.messages {
            for b in &mut m.content {
                if let Block::Text { text } = b {
                    *text = text.replace(
                        &dir.path().display().to_string(),
                        &other_root.display().to_string(),
                    );
                }
            }
        }
        r
    };
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let first = rt
        .block_on(complete(provider.as_ref(), &relocate(&requests[0])))
        .unwrap();
    assert_eq!(first.tool_calls().next().map(|c| c.1), Some("read_file"));
    let second = rt
        .block_on(complete(provider.as_ref(), &relocate(&requests[1])))
        .unwrap();
    assert_eq!(second.text(), "done");
    assert_eq!(second.stop_reason, StopReason::EndTurn);
    assert_ne!(second.usage, Usage::default());
    let err = rt
        .block_on(complete(provider.as_ref(), &relocate(&requests[2])))
        .unwrap_err();
    assert!(matches!(err, LlmError::Overloaded { .. }), "{err}");
    assert!(replayer.divergence().is_none());
    assert!(replayer.unused().is_empty());

    // A changed system prompt: the replay stops there and says where and what.
    let replayer = Replayer::open(&cassette, &other_root, redactor()).unwrap();
    let provider = replayer.provider("scripted");
    let mut changed = relocate(&requests[0]);
    changed.system[1] = "Brief: fix b.txt".into();
    let err = rt.block_on(complete(provider.as_ref(), &changed)).unwrap_err();
    let message = replayer.divergence().unwrap();
    assert_eq!(err, LlmError::Cassette(message.clone()));
    assert!(
        message.starts_with("replay diverged at brief ws-a/t4/Fix a, attempt 0, role implementer, turn 1"),
        "{message}"
    );
    assert!(message.contains("request.system[1], line 1:"), "{message}");
    assert!(message.contains("- recorded: Brief: fix a.txt"), "{message}");
    assert!(message.contains("+ now:      Brief: fix b.txt"), "{message}");
    assert!(replayer.stop_token().is_cancelled());

    // A call the recording never made.
    let replayer = Replayer::open(&cassette, &other_root, redactor()).unwrap();
    let provider = replayer.provider("scripted");
    let mut unknown = relocate(&requests[0]);
    unknown.meta.role = Some("planner".into());
    rt.block_on(complete(provider.as_ref(), &unknown)).unwrap_err();
    let message = replayer.divergence().unwrap();
    assert!(
        message.contains("made no call for brief ws-a/t4/Fix a, attempt 0, role planner, turn 1"),
        "{message}"
    );
}

#[test]
fn a_retry_is_the_next_attempt_and_a_second_review_a_repeat() {
    let mut counter = KeyCounter::default();
    let meta = |attempt: u32| CallMeta {
        brief_id: Some(BriefId::new()),
        brief: Some("ws/t4/x".into()),
        role: Some("teachback-reviewer".into()),
        attempt,
        ..CallMeta::default()
    };
    assert_eq!(counter.key(&meta(0), 1).attempt, 0);
    let again = counter.key(&meta(0), 1);
    assert_eq!((again.attempt, again.repeat), (0, 1));
    assert!(
        again
            .file()
            .to_str()
            .unwrap()
            .ends_with("a0-teachback-reviewer-t001-r1.json")
    );
    // The attempt is the brief's word, not a count of the brief ids seen: a retry recorded after a
    // resume keys on its own attempt.
    let retried = counter.key(&meta(2), 1);
    assert_eq!((retried.attempt, retried.repeat), (2, 0));
    assert!(retried.to_string().contains("attempt 2"), "{retried}");
    let unnamed = counter.key(&CallMeta::default(), 1);
    assert_eq!((unnamed.brief.as_str(), unnamed.attempt), ("run", 0));
}

#[test]
fn normalising_ignores_ids_hashes_and_times_only() {
    let subs = vec![("/tmp/work".to_string(), "<root>")];
    let mut value = serde_json::json!([
        "at /tmp/work/src, commit 0123456789abcdef0123456789abcdef01234567",
        "brief 4a7e1c52-0a4b-4c7e-9d3e-1f2a3b4c5d6e at 2026-11-26T23:18:00Z",
        "keep 1234 and deadbeef",
        "exit 0 in 1.0s (250ms)",
    ]);
    normalise(&mut value, &subs);
    assert_eq!(
        value,
        serde_json::json!([
            "at <root>/src, commit <sha>",
            "brief <uuid> at <time>",
            "keep 1234 and deadbeef",
            "exit 0 in <duration> (<duration>)",
        ])
    );
}

#[test]
fn a_malformed_cassette_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let err = Replayer::open(dir.path(), dir.path(), Redactor::shapes_only()).unwrap_err();
    assert!(err.to_string().contains("cassette.json"), "{err}");
    Manifest {
        format: FORMAT,
        run: "r".into(),
        goal: "g".into(),
        root: "/".into(),
        auto_approve: false,
    }
    .write(dir.path())
    .unwrap();
    std::fs::create_dir_all(dir.path().join("b")).unwrap();
    std::fs::write(dir.path().join("b/a0-x-t001.json"), "{\"key\": 1}").unwrap();
    let err = Replayer::open(dir.path(), dir.path(), Redactor::shapes_only()).unwrap_err();
    let err = err.to_string();
    assert!(err.contains("a0-x-t001.json: not a recorded call"), "{err}");
}

/// A call file as the first recorder wrote it (with the `brief_id` it counted attempts by) still loads and
/// answers, and the request written today is the same JSON as then.
#[test]
fn a_cassette_written_before_the_split_still_replays() {
    let dir = tempfile::tempdir().unwrap();
    Manifest {
        format: FORMAT,
        run: "4a7e1c52-0a4b-4c7e-9d3e-1f2a3b4c5d6e".into(),
        goal: "fix a".into(),
        root: "/old/root".into(),
        auto_approve: true,
    }
    .write(dir.path())
    .unwrap();
    let key = CallKey {
        brief: "ws-a/t4/Fix a".into(),
        attempt: 1,
        role: "implementer".into(),
        turn: 1,
        repeat: 0,
    };
    let old = serde_json::json!({
        "key": {"brief": "ws-a/t4/Fix a", "attempt": 1, "role": "implementer", "turn": 1, "repeat": 0},
        "brief_id": "0b7e1c52-0a4b-4c7e-9d3e-1f2a3b4c5d6e",
        "provider": "anthropic",
        "request": {
            "model": "claude-x",
            "system": ["You are careful."],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "fix /old/root/a.txt"}]}],
            "tools": [],
            "max_tokens": 1000
        },
        "outcome": {"response": {
            "content": [{"type": "text", "text": "done"}],
            "stop_reason": "end_turn",
            "usage": {"input": 12, "output": 3, "cache_read": 0, "cache_write": 0},
            "model": "claude-x"
        }}
    });
    let path = dir.path().join(key.file());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_vec_pretty(&old).unwrap()).unwrap();

    let live_root = dir.path().join("new-root");
    let replayer = Replayer::open(dir.path(), &live_root, Redactor::shapes_only()).unwrap();
    let provider = replayer.provider("claude-x");
    let request = Request {
        system: vec!["You are careful.".into()],
        // A cache hint is not part of what is compared.
        shared_system_blocks: 1,
        messages: vec![Message::user(format!("fix {}/a.txt", live_root.display()))],
        max_tokens: 1000,
        meta: CallMeta {
            brief: Some("ws-a/t4/Fix a".into()),
            role: Some("implementer".into()),
            attempt: 1,
            ..CallMeta::default()
        },
        ..Request::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let answer = rt.block_on(complete(provider.as_ref(), &request)).unwrap();
    assert_eq!(answer.text(), "done");
    assert!(replayer.divergence().is_none(), "{:?}", replayer.divergence());
    assert!(replayer.unused().is_empty());
    // What a recording writes for the same request is the recorded JSON (roots aside).
    let mut sent = SentRequest::of("claude-x", &request).to_json().unwrap();
    normalise(&mut sent, &[(live_root.display().to_string(), "/old/root")]);
    assert_eq!(sent, old["request"]);
}

//! `agency models check` against a fake OpenAI-compatible server on 127.0.0.1: one row per level and the
//! judge, exit 0 when all answer, non-zero with the provider's message when one does not.

use agency_testkit::FakeHttp;
use agency_testkit::http::Response;

use crate::support::Repo;

/// Serves chat completions: model `broken` gets a 404 error body, any other a streamed "ok". Kept alive
/// by the returned server; the string is the provider's `base_url`.
fn fake_openai() -> (FakeHttp, String) {
    let server = FakeHttp::start(|request| {
        let model = request.body["model"].as_str().unwrap_or("");
        if model == "broken" {
            return Response::new(
                404,
                "application/json",
                r#"{"error":{"message":"The model `broken` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#,
            );
        }
        let chunk = |delta: &str, finish: &str| {
            format!(
                "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"{model}\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
            )
        };
        let mut sse = chunk(r#"{"role":"assistant","content":"ok"}"#, "null");
        sse.push_str(&chunk("{}", "\"stop\""));
        sse.push_str("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,\"total_tokens\":10}}\n\n");
        sse.push_str("data: [DONE]\n\n");
        Response::sse(sse)
    })
    .unwrap();
    let base = format!("{}/v1", server.base_url());
    (server, base)
}

fn team_yaml(base: &str, capable_model: &str) -> String {
    format!(
        "providers:\n  local:\n    kind: openai\n    base_url: {base}\n\
         models:\n  reasoning-heavy: {{provider: local, model: big}}\n  capable: {{provider: local, model: {capable_model}}}\n  fast-cheap: {{provider: local, model: small}}\n"
    )
}

#[test]
fn every_level_and_the_judge_answer() {
    let repo = Repo::initialised();
    let (_server, base) = fake_openai();
    std::fs::write(repo.path().join(".agency/team.yaml"), team_yaml(&base, "mid")).unwrap();
    let out = repo.agency(&["models", "check"]).success().stdout();
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), 5, "{out}");
    assert!(rows[0].starts_with("LEVEL"), "{out}");
    for (row, (level, model)) in rows[1..].iter().zip([
        ("reasoning-heavy", "big"),
        ("capable", "mid"),
        ("fast-cheap", "small"),
        ("judge", "big"),
    ]) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[0], level, "{out}");
        assert_eq!(cells[1], "local", "{out}");
        assert_eq!(cells[2], model, "{out}");
        assert!(cells[3].ends_with('s'), "{out}");
        assert_eq!(&cells[4..], ["ok:", "ok"], "{out}");
    }
}

#[test]
fn a_model_that_does_not_answer_fails_the_check_with_the_providers_message() {
    let repo = Repo::initialised();
    let (_server, base) = fake_openai();
    std::fs::write(repo.path().join(".agency/team.yaml"), team_yaml(&base, "broken")).unwrap();
    let run = repo.agency(&["models", "check"]).fails_with(3);
    let out = run.stdout();
    let capable = out.lines().find(|l| l.starts_with("capable")).unwrap();
    assert!(capable.contains("error:"), "{out}");
    assert!(capable.contains("The model `broken` does not exist"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("fast-cheap") && l.contains("ok: ok")),
        "{out}"
    );
    assert!(
        run.stderr().contains("1 of 4 model checks failed"),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_missing_key_is_a_row_naming_the_variable() {
    let repo = Repo::initialised();
    let (_server, base) = fake_openai();
    let yaml = team_yaml(&base, "mid").replace(
        "    base_url:",
        "    api_key_env: AGENCY_TEST_KEY_NEVER_SET\n    base_url:",
    );
    std::fs::write(repo.path().join(".agency/team.yaml"), yaml).unwrap();
    let out = repo.agency(&["models", "check"]).fails_with(3).stdout();
    assert!(out.contains("AGENCY_TEST_KEY_NEVER_SET"), "{out}");
}

//! The OpenAI-compatible client against chat-completions chunk streams as OpenAI, vLLM and Ollama send them.

use std::time::Duration;

use agency_llm::{
    ApiKey, Block, LlmError, Message, OpenAiClient, OpenAiConfig, Request, Retrying, StopReason, StreamEvent,
    Timeouts, ToolSpec, Usage,
};
use serde_json::{Value, json};

use crate::support::{FakeServer, Reply, call, data, json_response, recording_policy, sse, sse_cut};

fn client(server: &FakeServer, key: Option<&str>) -> OpenAiClient {
    let mut config = OpenAiConfig::new(
        format!("{}/v1", server.base_url()),
        "qwen2.5-coder",
        key.map(ApiKey::new),
    );
    config.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        read: Duration::from_secs(5),
        request: Duration::from_secs(8),
    };
    OpenAiClient::new(config).unwrap()
}

fn request() -> Request {
    Request {
        system: vec!["You are an implementer.".into()],
        messages: vec![Message::user("write two files")],
        tools: vec![ToolSpec {
            name: "write_file".into(),
            description: "Write a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_tokens: 512,
        temperature: Some(0.2),
        ..Request::default()
    }
}

fn chunk(delta: Value, finish_reason: Option<&str>) -> String {
    data(
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "qwen2.5-coder:7b",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}),
    )
}

/// Text, then two tool calls whose arguments are split over many chunks, then the usage chunk and [DONE].
fn tool_call_stream() -> Vec<String> {
    let mut events = vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Writing "}), None),
        chunk(json!({"content": "both."}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
            "function": {"name": "write_file", "arguments": ""}}]}),
            None,
        ),
    ];
    for piece in ["{\"pa", "th\": \"a", ".txt\", \"co", "ntent\": \"A\"}"] {
        events.push(chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            None,
        ));
    }
    events.push(chunk(
        json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
            "function": {"name": "write_file", "arguments": "{\"path\":"}}]}),
        None,
    ));
    events.push(chunk(
        json!({"tool_calls": [{"index": 1, "function": {"arguments": " \"b.txt\"}"}}]}),
        None,
    ));
    events.push(chunk(json!({}), Some("tool_calls")));
    events.push(data(
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "qwen2.5-coder:7b",
        "choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 100}}}),
    ));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

fn text_stream(text: &str) -> Vec<String> {
    vec![
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
}

#[tokio::test]
async fn assembles_index_keyed_tool_call_deltas_and_the_final_usage_chunk() {
    let server = FakeServer::canned(vec![Reply::Bytes(sse(&tool_call_stream()))]).unwrap();
    let (result, events) = call(&client(&server, Some("sk-test")), &request()).await;
    let response = result.unwrap();
    assert_eq!(
        response.content,
        vec![
            Block::text("Writing both."),
            Block::ToolUse {
                id: "call_a".into(),
                name: "write_file".into(),
                input: json!({"path": "a.txt", "content": "A"})
            },
            Block::ToolUse {
                id: "call_b".into(),
                name: "write_file".into(),
                input: json!({"path": "b.txt"})
            },
        ]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage {
            input: 20,
            output: 30,
            cache_read: 100,
            cache_write: 0
        }
    );
    assert_eq!(response.model, "qwen2.5-coder:7b");
    let fragments: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolUseInputDelta { id, partial_json } if id == "call_a" => {
                Some(partial_json.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(fragments.concat(), r#"{"path": "a.txt", "content": "A"}"#);
    assert_eq!(events.last(), Some(&StreamEvent::Stop(StopReason::ToolUse)));

    let seen = server.requests();
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-test"));
    let body = seen[0].body.clone();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["model"], "qwen2.5-coder");
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are an implementer."})
    );
}

#[tokio::test]
async fn local_servers_need_no_key_and_get_mid_conversation_system_messages() {
    let server = FakeServer::canned(vec![Reply::Bytes(sse(&text_stream("ok")))]).unwrap();
    let mut request = request();
    request.messages.push(Message::assistant(vec![Block::ToolUse {
        id: "call_1".into(),
        name: "write_file".into(),
        input: json!({"path": "a"}),
    }]));
    request
        .messages
        .push(Message::system("Reminder: stay in your worktree."));
    request
        .messages
        .push(Message::tool_results(vec![Block::tool_result(
            "call_1", "written", false,
        )]));
    let (result, _) = call(&client(&server, None), &request).await;
    let response = result.unwrap();
    assert_eq!(
        (response.text(), response.stop_reason),
        ("ok".into(), StopReason::EndTurn)
    );
    assert_eq!(
        response.usage,
        Usage::default(),
        "a server that sends no usage reports zero"
    );
    let seen = &server.requests()[0];
    assert_eq!(seen.header("authorization"), None);
    let roles: Vec<String> = seen.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "system", "tool"]);
}

#[tokio::test]
async fn an_error_body_is_typed_and_not_retried() {
    let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let server = FakeServer::canned(vec![Reply::Bytes(json_response(401, &[], body))]).unwrap();
    let provider = Retrying::new(client(&server, Some("bad")), recording_policy(4).0);
    let (result, _) = call(&provider, &request()).await;
    assert_eq!(
        result.unwrap_err(),
        LlmError::Auth {
            status: 401,
            message: "invalid_request_error: Incorrect API key provided".into()
        }
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_429_then_a_503_then_success() {
    let server = FakeServer::canned(vec![
        Reply::Bytes(json_response(
            429,
            &[("retry-after-ms", "250")],
            r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#,
        )),
        Reply::Bytes(json_response(503, &[], "upstream unavailable")),
        Reply::Bytes(sse(&text_stream("ok"))),
    ])
    .unwrap();
    let (policy, slept) = recording_policy(4);
    let provider = Retrying::new(client(&server, Some("k")), policy);
    let (result, _) = call(&provider, &request()).await;
    assert_eq!(result.unwrap().text(), "ok");
    assert_eq!(server.requests().len(), 3);
    assert_eq!(slept.lock().unwrap()[0], Duration::from_millis(250));
}

#[tokio::test]
async fn a_stream_dropped_before_the_finish_reason_is_reported() {
    let server = FakeServer::canned(vec![Reply::Bytes(sse_cut(&tool_call_stream(), 6))]).unwrap();
    let (result, _) = call(&client(&server, None), &request()).await;
    assert!(matches!(result.unwrap_err(), LlmError::StreamDropped(_)));
}

#[tokio::test]
async fn an_error_chunk_inside_the_stream_is_typed() {
    let events = vec![
        chunk(json!({"content": "par"}), None),
        data(json!({"error": {"message": "rate limited upstream", "type": "rate_limit_exceeded"}})),
    ];
    let server = FakeServer::canned(vec![Reply::Bytes(sse(&events))]).unwrap();
    let (result, _) = call(&client(&server, None), &request()).await;
    assert!(matches!(result.unwrap_err(), LlmError::RateLimited { .. }));
}

#[tokio::test]
async fn tool_calls_without_index_and_with_stop_are_still_tool_use() {
    // Some local servers send each call whole, without `index`, and finish with `stop`.
    let events = vec![
        chunk(
            json!({"tool_calls": [{"id": "c1", "function": {"name": "write_file", "arguments": "{\"path\":\"x\"}"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"id": "c2", "function": {"name": "write_file", "arguments": "{\"path\":\"y\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("stop")),
    ];
    let server = FakeServer::canned(vec![Reply::Bytes(sse(&events))]).unwrap();
    let (result, _) = call(&client(&server, None), &request()).await;
    let response = result.unwrap();
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    let ids: Vec<&str> = response.tool_calls().map(|(id, _, _)| id).collect();
    assert_eq!(ids, ["c1", "c2"]);
}

#[tokio::test]
async fn two_turns_share_a_byte_identical_prefix() {
    let server = FakeServer::canned(vec![
        Reply::Bytes(sse(&text_stream("one"))),
        Reply::Bytes(sse(&text_stream("two"))),
    ])
    .unwrap();
    let client = client(&server, None);
    let mut request = request();
    let (first, _) = call(&client, &request).await;
    request.messages.push(Message::assistant(first.unwrap().content));
    request.messages.push(Message::user("next"));
    call(&client, &request).await.0.unwrap();
    let seen = server.requests();
    let (a, b) = (&seen[0].raw_body, &seen[1].raw_body);
    // Everything but the closing `]}` of the first body is a prefix of the second.
    assert_eq!(
        String::from_utf8_lossy(&a[..a.len() - 2]),
        String::from_utf8_lossy(&b[..a.len() - 2])
    );
}

#[tokio::test]
async fn a_non_streamed_chat_completion_is_accepted() {
    let completion = json!({"id": "chatcmpl-9", "object": "chat.completion", "model": "llama3.1",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_x", "type": "function",
                "function": {"name": "write_file", "arguments": "{\"path\":\"z\"}"}}]}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48}});
    let server = FakeServer::canned(vec![Reply::Bytes(json_response(
        200,
        &[],
        &completion.to_string(),
    ))])
    .unwrap();
    let (result, _) = call(&client(&server, None), &request()).await;
    let response = result.unwrap();
    assert_eq!(
        response.content,
        vec![Block::ToolUse {
            id: "call_x".into(),
            name: "write_file".into(),
            input: json!({"path": "z"})
        }]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage {
            input: 40,
            output: 8,
            ..Usage::default()
        }
    );
}

#[tokio::test]
async fn a_stream_dropped_before_anything_arrived_is_retried() {
    let server = FakeServer::canned(vec![
        Reply::Bytes(sse_cut(&tool_call_stream(), 0)),
        Reply::Bytes(sse(&text_stream("second try"))),
    ])
    .unwrap();
    let provider = Retrying::new(client(&server, None), recording_policy(3).0);
    let (result, events) = call(&provider, &request()).await;
    assert_eq!(result.unwrap().text(), "second try");
    assert_eq!(server.requests().len(), 2);
    assert!(matches!(events[0], StreamEvent::Retrying { attempt: 1, .. }));
}

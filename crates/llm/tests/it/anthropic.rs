//! The Anthropic client against recorded-shape Messages streams.

use std::time::{Duration, Instant};

use agency_llm::{
    AnthropicClient, AnthropicConfig, ApiKey, Block, CallMeta, CancelToken, LlmError, Message, Provider,
    Request, Retrying, StopReason, StreamEvent, Timeouts, ToolSpec, Usage,
};
use serde_json::{Value, json};

use crate::support::{FakeServer, Reply, call, json_response, named, recording_policy, sse, sse_cut};

fn client(server: &FakeServer) -> AnthropicClient {
    let mut config = AnthropicConfig::new("claude-test", ApiKey::new("sk-ant-test"));
    config.base_url = server.base_url();
    config.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        read: Duration::from_secs(5),
        request: Duration::from_secs(8),
    };
    AnthropicClient::new(config).unwrap()
}

fn tools() -> Vec<ToolSpec> {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    vec![
        ToolSpec {
            name: "Write".into(),
            description: "Write a file".into(),
            input_schema: schema.clone(),
        },
        ToolSpec {
            name: "Read".into(),
            description: "Read a file".into(),
            input_schema: schema,
        },
    ]
}

fn request() -> Request {
    Request {
        system: vec!["You are an implementer.".into(), "Brief: write hello.txt".into()],
        messages: vec![Message::user("go")],
        tools: tools(),
        max_tokens: 1024,
        meta: CallMeta {
            role: Some("implementer".into()),
            brief: Some("ws1".into()),
            ..CallMeta::default()
        },
        ..Request::default()
    }
}

fn message_start(usage: Value) -> String {
    named(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-test-20991231", "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
    )
}

fn block_start(index: usize, block: Value) -> String {
    named(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn delta(index: usize, delta: Value) -> String {
    named(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_stop(index: usize) -> String {
    named(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

fn message_end(stop_reason: &str, output_tokens: u64) -> Vec<String> {
    vec![
        named(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": output_tokens}}),
        ),
        named("message_stop", json!({"type": "message_stop"})),
    ]
}

fn text_reply(text: &str) -> Vec<String> {
    let mut events = vec![
        message_start(json!({"input_tokens": 10, "output_tokens": 1})),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": text})),
        block_stop(0),
    ];
    events.extend(message_end("end_turn", 3));
    events
}

/// Thinking, text, a tool call split over many deltas, more text, and a tool call with no arguments.
fn interleaved_tool_stream() -> Vec<String> {
    let mut events = vec![
        message_start(json!({"input_tokens": 12, "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 2000, "output_tokens": 1})),
        ": keep-alive comment\n\n".to_owned(),
        named("ping", json!({"type": "ping"})),
        block_start(0, json!({"type": "thinking", "thinking": ""})),
        delta(0, json!({"type": "thinking_delta", "thinking": "Let me "})),
        delta(0, json!({"type": "thinking_delta", "thinking": "think."})),
        delta(0, json!({"type": "signature_delta", "signature": "c2lnbmF0dXJl"})),
        block_stop(0),
        block_start(1, json!({"type": "text", "text": ""})),
        delta(1, json!({"type": "text_delta", "text": "I'll "})),
        delta(1, json!({"type": "text_delta", "text": "write it."})),
        block_stop(1),
        block_start(
            2,
            json!({"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}),
        ),
    ];
    let args = r#"{"path": "hello.txt", "content": "hi\n", "mode": 420}"#;
    let pieces: Vec<String> = args
        .as_bytes()
        .chunks(5)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    events.push(delta(2, json!({"type": "input_json_delta", "partial_json": ""})));
    for piece in &pieces {
        events.push(delta(
            2,
            json!({"type": "input_json_delta", "partial_json": piece}),
        ));
    }
    events.extend([
        block_stop(2),
        block_start(3, json!({"type": "text", "text": ""})),
        delta(3, json!({"type": "text_delta", "text": "Then read."})),
        block_stop(3),
        block_start(
            4,
            json!({"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {}}),
        ),
        block_stop(4),
    ]);
    events.extend(message_end("tool_use", 42));
    events
}

#[tokio::test]
async fn streams_interleaved_thinking_text_and_tool_calls_with_usage() {
    let server = FakeServer::canned(vec![Reply::Bytes(sse(&interleaved_tool_stream()))]).unwrap();
    let (result, events) = call(&client(&server), &request()).await;
    let response = result.unwrap();
    assert_eq!(
        response.content,
        vec![
            Block::Thinking {
                thinking: "Let me think.".into(),
                signature: Some("c2lnbmF0dXJl".into())
            },
            Block::text("I'll write it."),
            Block::ToolUse {
                id: "toolu_1".into(),
                name: "Write".into(),
                input: json!({"path": "hello.txt", "content": "hi\n", "mode": 420}),
            },
            Block::text("Then read."),
            Block::ToolUse {
                id: "toolu_2".into(),
                name: "Read".into(),
                input: json!({})
            },
        ]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.model, "claude-test-20991231");
    assert_eq!(
        response.usage,
        Usage {
            input: 12,
            output: 42,
            cache_read: 2000,
            cache_write: 100
        }
    );

    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["I'll ", "write it.", "Then read."]);
    let fragments = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolUseInputDelta { .. }))
        .count();
    assert!(
        fragments > 10,
        "arguments should arrive in many fragments, got {fragments}"
    );
    assert!(events.contains(&StreamEvent::ToolUseStart {
        id: "toolu_1".into(),
        name: "Write".into()
    }));
    assert!(events.contains(&StreamEvent::ToolUse {
        id: "toolu_2".into(),
        name: "Read".into(),
        input: json!({})
    }));
    assert_eq!(events.last(), Some(&StreamEvent::Stop(StopReason::ToolUse)));

    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(seen[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(seen[0].header("content-type"), Some("application/json"));
    let body = seen[0].body.clone();
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["stream"], true);
    assert_eq!(body["tools"][1]["cache_control"], json!({"type": "ephemeral"}));
}

#[tokio::test]
async fn mid_conversation_system_messages_reach_the_server_as_user_text() {
    let server = FakeServer::canned(vec![Reply::Bytes(sse(&text_reply("ok")))]).unwrap();
    let mut request = request();
    request.messages = vec![
        Message::user("go"),
        Message::system("Reminder: teachback first."),
        Message::assistant(vec![Block::ToolUse {
            id: "toolu_9".into(),
            name: "Read".into(),
            input: json!({"path": "a"}),
        }]),
        Message::tool_results(vec![Block::tool_result("toolu_9", "contents", false)]),
        Message::system("Budget: 10% left."),
    ];
    let (result, _) = call(&client(&server), &request).await;
    assert_eq!(result.unwrap().text(), "ok");
    let body = server.requests()[0].body.clone();
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(
        body["messages"][0]["content"][1]["text"],
        "<system-reminder>\nReminder: teachback first.\n</system-reminder>"
    );
    assert_eq!(body["messages"][2]["content"][0]["type"], "tool_result");
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "toolu_9");
    assert_eq!(
        body["messages"][2]["content"][1]["text"],
        "<system-reminder>\nBudget: 10% left.\n</system-reminder>"
    );
}

#[tokio::test]
async fn two_turns_of_one_brief_share_a_byte_identical_prefix() {
    let server = FakeServer::canned(vec![
        Reply::Bytes(sse(&text_reply("first"))),
        Reply::Bytes(sse(&text_reply("second"))),
    ])
    .unwrap();
    let client = client(&server);
    let mut request = request();
    let (first, _) = call(&client, &request).await;
    request.messages.push(Message::assistant(first.unwrap().content));
    request.messages.push(Message::user("continue"));
    let (second, _) = call(&client, &request).await;
    assert_eq!(second.unwrap().text(), "second");

    let seen = server.requests();
    let (a, b) = (&seen[0].raw_body, &seen[1].raw_body);
    let marker = b"\"messages\":[";
    let cut = a.windows(marker.len()).position(|w| w == marker).unwrap() + marker.len();
    assert!(cut > 300, "the stable prefix holds tools and system");
    assert_eq!(
        String::from_utf8_lossy(&a[..cut]),
        String::from_utf8_lossy(&b[..cut])
    );
    // The turns sent before are sent again unchanged; only the moving cache breakpoint differs.
    let strip = |body: &[u8]| -> Vec<Value> {
        let mut v: Value = serde_json::from_slice(body).unwrap();
        let messages = v["messages"].as_array_mut().unwrap();
        for m in messages.iter_mut() {
            for block in m["content"].as_array_mut().unwrap() {
                block.as_object_mut().unwrap().remove("cache_control");
            }
        }
        messages.clone()
    };
    let (ma, mb) = (strip(a), strip(b));
    assert_eq!(ma[..], mb[..ma.len()]);
    assert_eq!(
        seen[1].body["messages"][2]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[tokio::test]
async fn an_error_body_is_typed_and_a_400_is_not_retried() {
    let body =
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 999999 > 64000"}}"#;
    let server = FakeServer::canned(vec![Reply::Bytes(json_response(400, &[], body))]).unwrap();
    let (policy, slept) = recording_policy(5);
    let provider = Retrying::new(client(&server), policy);
    let (result, events) = call(&provider, &request()).await;
    assert_eq!(
        result.unwrap_err(),
        LlmError::BadRequest {
            status: 400,
            message: "invalid_request_error: max_tokens: 999999 > 64000".into()
        }
    );
    assert!(events.is_empty());
    assert_eq!(server.requests().len(), 1);
    assert!(slept.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_401_is_reported_with_the_providers_message_and_not_retried() {
    let body = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    let server = FakeServer::canned(vec![Reply::Bytes(json_response(401, &[], body))]).unwrap();
    let provider = Retrying::new(client(&server), recording_policy(5).0);
    let (result, _) = call(&provider, &request()).await;
    let err = result.unwrap_err();
    assert_eq!(
        err,
        LlmError::Auth {
            status: 401,
            message: "authentication_error: invalid x-api-key".into()
        }
    );
    assert!(err.to_string().contains("invalid x-api-key"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_after_that_delay() {
    let limited = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
    let server = FakeServer::canned(vec![
        Reply::Bytes(json_response(429, &[("retry-after", "3")], limited)),
        Reply::Bytes(json_response(
            529,
            &[],
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )),
        Reply::Bytes(sse(&text_reply("finally"))),
    ])
    .unwrap();
    let (policy, slept) = recording_policy(5);
    let provider = Retrying::new(client(&server), policy);
    let (result, events) = call(&provider, &request()).await;
    assert_eq!(result.unwrap().text(), "finally");
    assert_eq!(server.requests().len(), 3);
    let slept = slept.lock().unwrap().clone();
    assert!(matches!(
        &events[0],
        StreamEvent::Retrying { attempt: 1, delay, error, .. } if *delay == Duration::from_secs(3) && error.contains("slow down")
    ));
    assert_eq!(slept[0], Duration::from_secs(3), "retry-after is honoured");
    assert!(
        slept[1] >= Duration::from_millis(1000) && slept[1] <= Duration::from_millis(2000),
        "{slept:?}"
    );
}

#[tokio::test]
async fn retries_are_bounded() {
    let server = FakeServer::canned(vec![Reply::Bytes(json_response(
        500,
        &[],
        r#"{"type":"error","error":{"type":"api_error","message":"boom"}}"#,
    ))])
    .unwrap();
    let provider = Retrying::new(client(&server), recording_policy(3).0);
    let (result, _) = call(&provider, &request()).await;
    assert!(matches!(
        result.unwrap_err(),
        LlmError::Server { status: 500, .. }
    ));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_connection_dropped_mid_stream_is_reported_not_hung_and_not_repeated() {
    let events = interleaved_tool_stream();
    let server = FakeServer::canned(vec![Reply::Bytes(sse_cut(&events, 10))]).unwrap();
    let provider = Retrying::new(client(&server), recording_policy(5).0);
    let (result, streamed) = call(&provider, &request()).await;
    assert!(matches!(result.unwrap_err(), LlmError::StreamDropped(_)));
    assert!(!streamed.is_empty());
    assert_eq!(
        server.requests().len(),
        1,
        "a call that already streamed is not repeated"
    );
}

#[tokio::test]
async fn an_error_event_inside_the_stream_is_typed() {
    let mut events = text_reply("partial");
    events.truncate(3);
    events.push(named(
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ));
    let server = FakeServer::canned(vec![Reply::Bytes(sse(&events))]).unwrap();
    let (result, _) = call(&client(&server), &request()).await;
    assert!(matches!(result.unwrap_err(), LlmError::Overloaded { .. }));
}

#[tokio::test]
async fn a_silent_stream_times_out() {
    let server = FakeServer::canned(vec![Reply::Stall(sse_cut(&text_reply("x"), 2))]).unwrap();
    let mut config = AnthropicConfig::new("claude-test", ApiKey::new("k"));
    config.base_url = server.base_url();
    config.timeouts = Timeouts {
        connect: Duration::from_secs(2),
        read: Duration::from_millis(300),
        request: Duration::from_secs(8),
    };
    let (result, _) = call(&AnthropicClient::new(config).unwrap(), &request()).await;
    assert!(matches!(result.unwrap_err(), LlmError::Timeout(_)));
}

#[tokio::test]
async fn cancelling_aborts_an_in_flight_call() {
    let server = FakeServer::canned(vec![Reply::Stall(sse_cut(&text_reply("x"), 3))]).unwrap();
    let client = client(&server);
    let cancel = CancelToken::new();
    let trigger = cancel.child();
    let run = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        run.cancel();
    });
    let started = Instant::now();
    let request = request();
    let result = client.complete(&request, &mut |_| {}, &trigger).await;
    assert_eq!(result.unwrap_err(), LlmError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn an_unreachable_server_is_a_connection_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let mut config = AnthropicConfig::new("claude-test", ApiKey::new("k"));
    config.base_url = url;
    let (result, _) = call(&AnthropicClient::new(config).unwrap(), &request()).await;
    assert!(matches!(result.unwrap_err(), LlmError::Connection(_)));
}

#[tokio::test]
async fn a_non_streamed_json_message_is_accepted() {
    let message = json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig"},
            {"type": "text", "text": "Writing."},
            {"type": "tool_use", "id": "toolu_7", "name": "Write", "input": {"path": "a.txt"}}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 5, "output_tokens": 9, "cache_read_input_tokens": 50}});
    let server =
        FakeServer::canned(vec![Reply::Bytes(json_response(200, &[], &message.to_string()))]).unwrap();
    let (result, events) = call(&client(&server), &request()).await;
    let response = result.unwrap();
    assert_eq!(
        response.content,
        vec![
            Block::Thinking {
                thinking: "hm".into(),
                signature: Some("sig".into())
            },
            Block::text("Writing."),
            Block::ToolUse {
                id: "toolu_7".into(),
                name: "Write".into(),
                input: json!({"path": "a.txt"})
            },
        ]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage {
            input: 5,
            output: 9,
            cache_read: 50,
            cache_write: 0
        }
    );
    assert!(events.contains(&StreamEvent::TextDelta("Writing.".into())));
}

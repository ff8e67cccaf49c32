// The extension's own unit tests: how it reads agency's answers and puts pi's events to agency. Node's
// built-in runner, no dependencies: `node --test integrations/pi/test/` (run by .ci/run and by the Rust
// suite, crates/cli/tests/cli/pi.rs).

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  PLAN_ACTIONS,
  PLAN_MODE_TOOLS,
  addedGoalId,
  agencyText,
  draftArgs,
  planPrompt,
  claudeInput,
  gateToolName,
  gateVerdict,
  goalCommand,
  goalHookText,
  judgeCommand,
  lastAssistantText,
  loopReport,
  loopVerdict,
  planActions,
  planModelCommand,
  readPlanModel,
  planWidget,
  sessionModelArgs,
  subgoalCommand,
} from "../lib/agency.mjs";

const ran = (fields) => ({ code: 0, stdout: "", stderr: "", ...fields });

test("pi's tools get Claude Code's names; others keep theirs", () => {
  assert.equal(gateToolName("write"), "Write");
  assert.equal(gateToolName("find"), "Glob");
  assert.equal(gateToolName("CompleteGoal"), "CompleteGoal");
  // Not a lookup through the prototype.
  assert.equal(gateToolName("toString"), "toString");
});

test("a tool's path is also given as file_path, never over one it has", () => {
  assert.deepEqual(claudeInput({ path: "a.txt", content: "x" }), { path: "a.txt", content: "x", file_path: "a.txt" });
  assert.deepEqual(claudeInput({ path: "a.txt", file_path: "b.txt" }), { path: "a.txt", file_path: "b.txt" });
  assert.deepEqual(claudeInput(undefined), {});
});

test("the gate blocks on a deny, with agency's reason", () => {
  const deny = JSON.stringify({
    hookSpecificOutput: { permissionDecision: "deny", permissionDecisionReason: "teach back first" },
  });
  assert.deepEqual(gateVerdict(ran({ stdout: deny })), { block: true, reason: "teach back first" });
  assert.deepEqual(gateVerdict(ran({ code: 2, stderr: "blocked: no\n" })), { block: true, reason: "blocked: no" });
});

test("the gate lets an allow or an empty answer through, with any notice", () => {
  assert.deepEqual(gateVerdict(ran({ stdout: "" })), { block: false });
  const allow = JSON.stringify({
    systemMessage: "gate open",
    hookSpecificOutput: { permissionDecision: "allow", additionalContext: "unbound session" },
  });
  assert.deepEqual(gateVerdict(ran({ stdout: allow })), { block: false, notice: "gate open\nunbound session" });
});

test("the gate fails closed on anything but a clear answer", () => {
  const cases = [
    ran({ code: null, failure: "cannot run agency: ENOENT" }),
    ran({ code: 1, stderr: "panicked" }),
    ran({ stdout: "not json" }),
    ran({ stdout: "[1, 2]" }),
    ran({ stdout: "null" }),
    ran({ stdout: JSON.stringify({ hookSpecificOutput: { permissionDecision: "ask" } }) }),
  ];
  for (const answer of cases) {
    const verdict = gateVerdict(answer);
    assert.equal(verdict.block, true, JSON.stringify(answer));
    assert.match(verdict.reason, /could not decide .* the gate fails closed/);
  }
});

test("goal hooks fail open and carry the loop judge's prompt when agency sends one", () => {
  assert.deepEqual(goalHookText(ran({ code: 1, stdout: "{}" })), {});
  assert.deepEqual(goalHookText(ran({ stdout: "garbage" })), {});
  assert.deepEqual(goalHookText(ran({ failure: "timed out" })), {});
  assert.deepEqual(
    goalHookText(ran({ stdout: JSON.stringify({ hookSpecificOutput: { additionalContext: "Active goals" } }) })),
    { context: "Active goals" },
  );
  assert.deepEqual(goalHookText(ran({ stdout: JSON.stringify({ decision: "block", reason: "keep going" }) })), {
    keepWorking: "keep going",
  });
  assert.deepEqual(
    goalHookText(
      ran({ stdout: JSON.stringify({ decision: "block", reason: "keep going", loopJudge: { prompt: "judge this" } }) }),
    ),
    { keepWorking: "keep going", judgePrompt: "judge this" },
  );
});

test("agency's output is shown with its exit code when it failed", () => {
  assert.equal(agencyText(ran({ stdout: "ok\n" })), "ok");
  assert.equal(agencyText(ran({ code: 3, stdout: "rejected\n", stderr: "error: no\n" })), "rejected\nerror: no\n(agency exited with 3)");
  assert.equal(agencyText(ran({ code: null, failure: "not found" })), "not found\n(agency exited with no exit code)");
});

test("the loop judge reads the last assistant message's text", () => {
  const messages = [
    { role: "user", content: "fix it" },
    { role: "assistant", content: [{ type: "text", text: "first" }] },
    { role: "toolResult", content: [{ type: "text", text: "tool output" }] },
    { role: "assistant", content: [{ type: "thinking", thinking: "hmm" }, { type: "text", text: "Which file?" }] },
  ];
  assert.equal(lastAssistantText(messages), "Which file?");
  assert.equal(lastAssistantText([]), "");
  assert.equal(lastAssistantText(undefined), "");
});

test("/goal and /judge arguments map to agency's verbs", () => {
  assert.equal(goalCommand(""), "start");
  assert.equal(goalCommand(undefined), "start");
  for (const word of ["pause", "resume", "clear", "status", "log"]) assert.equal(goalCommand(` ${word} `), word);
  assert.equal(goalCommand("stop"), undefined);
  assert.equal(goalCommand("pause now"), undefined);

  assert.deepEqual(judgeCommand(""), []);
  assert.deepEqual(judgeCommand("model openai/gpt-5"), ["openai/gpt-5"]);
  assert.deepEqual(judgeCommand("model reset"), ["--reset"]);
  assert.equal(judgeCommand("model"), undefined);
  assert.equal(judgeCommand("openai/gpt-5"), undefined);
  assert.equal(judgeCommand("model a b"), undefined);
});

test("the loop's state is shown, with the continuation to send", () => {
  const state = {
    loop: "on",
    continuations_used: 1,
    budget: 8,
    open_goals: ["fix-1"],
    paused_because: null,
    judge_model: null,
    continuation: "keep working",
  };
  assert.deepEqual(loopReport(ran({ stdout: JSON.stringify(state) })), {
    ok: true,
    text: "goal loop on: 1 of 8 continuations used this turn\nopen goals: fix-1\nsign-off judge: the session's model",
    continuation: "keep working",
  });
  const paused = { ...state, loop: "paused", open_goals: [], paused_because: "paused by the user", continuation: null };
  const report = loopReport(ran({ stdout: JSON.stringify(paused) }));
  assert.equal(report.continuation, undefined);
  assert.match(report.text, /open goals: none\npaused: paused by the user/);
  assert.equal(loopReport(ran({ code: 3, stderr: "error: no session" })).ok, false);
  assert.equal(loopReport(ran({ stdout: "{" })).ok, false);
});

test("the loop judge's verdict pauses only when agency says so, and fails open", () => {
  const verdict = (action) => ran({ stdout: JSON.stringify({ loop: "paused", verdict: { action, reason: "asks" } }) });
  assert.deepEqual(loopVerdict(verdict("pause")), { pause: true, reason: "asks" });
  assert.deepEqual(loopVerdict(verdict("continue")), { pause: false });
  assert.deepEqual(loopVerdict(ran({ code: 1, stdout: "" })), { pause: false });
  assert.deepEqual(loopVerdict(ran({ failure: "timed out", code: null })), { pause: false });
  assert.deepEqual(loopVerdict(ran({ stdout: "not json" })), { pause: false });
});

test("/subgoal takes a text and an optional @goal", () => {
  assert.deepEqual(subgoalCommand("add the load test"), ["goal", "subgoal", "add the load test"]);
  assert.deepEqual(subgoalCommand("@cache-1  add the load test "), ["goal", "subgoal", "add the load test", "--goal", "cache-1"]);
  assert.equal(subgoalCommand(""), undefined);
  assert.equal(subgoalCommand("@cache-1"), undefined);
  assert.equal(subgoalCommand("@cache-1   "), undefined);
});

test("the task list shows open work, hides signed-off and cancelled goals, and flags an unsigned done", () => {
  const list = {
    plan: "plan.md",
    goals: [
      { id: "cache-1", title: "Cache", status: "active", signed: false, label: "last sign-off rejected",
        subtasks: [{ text: "client", checked: true }, { text: "eviction", checked: false }] },
      { id: "docs-1", title: "Docs", status: "open", signed: false, label: "", subtasks: [] },
      { id: "old-1", title: "Old", status: "done", signed: true, label: "signed off", subtasks: [] },
      { id: "hand-1", title: "Hand-ticked", status: "done", signed: false, label: "UNSIGNED", subtasks: [] },
      { id: "drop-1", title: "Dropped", status: "cancelled", signed: false, label: "", subtasks: [] },
    ],
  };
  assert.deepEqual(planWidget(list), [
    "plan.md: 1 active, 1 open, 2 done, 1 cancelled · 1 done hidden, 1 cancelled hidden",
    "● [cache-1] Cache (active, last sign-off rejected)",
    "    ☑ client",
    "    ☐ eviction",
    "○ [docs-1] Docs (open)",
    "! [hand-1] Hand-ticked: done WITHOUT a sign-off (UNSIGNED)",
  ]);
  assert.deepEqual(planWidget({ plan: "plan.md", goals: [] }), ["plan.md: no goals"]);
  assert.deepEqual(planWidget(undefined), ["plan.md: no goals"]);
});

test("plan mode reads, drafts open goals through agency goal add, and names the contract's parts", () => {
  assert.deepEqual(PLAN_MODE_TOOLS, ["read", "grep", "find", "ls", "DraftGoal"]);
  const prompt = planPrompt("make the cache fast");
  assert.match(prompt, /Objective: make the cache fast/);
  for (const part of ["done_when", "verify", "failure_modes", "subtasks", "DraftGoal"]) assert.match(prompt, new RegExp(part));
  assert.deepEqual(
    draftArgs({ title: "Cache", done_when: "p95 < 50ms", verify: "pytest -q", failure_modes: ["bypassed"], subtasks: ["client", "eviction"] }),
    ["goal", "add", "Cache", "--done-when", "p95 < 50ms", "--status", "open", "--verify", "pytest -q",
      "--failure-mode", "bypassed", "--subtask", "client", "--subtask", "eviction"],
  );
  assert.deepEqual(draftArgs({ title: "T", done_when: "d", verify: " " }), ["goal", "add", "T", "--done-when", "d", "--status", "open"]);
  assert.equal(addedGoalId("added      cache-1 to plan.md\nnote       commit plan.md now"), "cache-1");
  assert.equal(addedGoalId("error: no"), undefined);
});

test("the session's model goes to agency goal complete, its key only in the environment", () => {
  const model = { id: "claude-x", api: "anthropic-messages", baseUrl: "http://127.0.0.1:9" };
  const { args, env } = sessionModelArgs(model, "sk-secret");
  assert.deepEqual(args, [
    "--session-model", "claude-x", "--session-model-api", "anthropic-messages", "--session-model-url", "http://127.0.0.1:9",
  ]);
  assert.deepEqual(env, { AGENCY_SESSION_MODEL_KEY: "sk-secret" });
  assert.ok(!args.includes("sk-secret"));
  assert.deepEqual(sessionModelArgs(model, undefined).env, {});
  for (const missing of [undefined, {}, { ...model, baseUrl: "" }, { ...model, api: undefined }]) {
    assert.deepEqual(sessionModelArgs(missing, "k"), { args: [], env: {} });
  }
});

test("/plan offers archive only for finished goals outside the archive, and cancel only for open work", () => {
  const list = {
    plan: "plan.md",
    goals: [
      { id: "a-1", title: "A", status: "active", signed: false },
      { id: "c-1", title: "C", status: "cancelled", signed: false },
      { id: "d-1", title: "D", status: "done", signed: true },
      { id: "h-1", title: "H", status: "done", signed: false },
      { id: "old-1", title: "Old", status: "done", signed: true, archived: true },
    ],
  };
  const { options, cancellable } = planActions(list);
  assert.deepEqual(options, ["Close", "Archive completed (2)", "Cancel a goal"]);
  assert.deepEqual(cancellable, { "[a-1] A": "a-1" });
  assert.deepEqual(planActions({ goals: [] }).options, [PLAN_ACTIONS.close]);
  assert.deepEqual(
    planWidget(list),
    [
      "plan.md: 1 active, 2 done, 1 cancelled · 1 done hidden, 1 cancelled hidden, 1 archived",
      "● [a-1] A (active)",
      "! [h-1] H: done WITHOUT a sign-off (UNSIGNED)",
    ],
  );
});

test("/plan-model takes provider/model, reset, or nothing; the sticky file is read defensively", () => {
  assert.deepEqual(planModelCommand(""), { show: true });
  assert.deepEqual(planModelCommand(" reset "), { reset: true });
  assert.deepEqual(planModelCommand("openrouter/anthropic/claude-x"), { provider: "openrouter", id: "anthropic/claude-x" });
  for (const bad of ["claude", "/x", "x/", "a/b c"]) assert.equal(planModelCommand(bad), undefined, bad);
  assert.equal(readPlanModel('{"planModel": "fake/fake-planner"}'), "fake/fake-planner");
  for (const bad of ["", "{", '{"planModel": 3}', '{"planModel": "nope"}', "null"]) assert.equal(readPlanModel(bad), undefined, bad);
});

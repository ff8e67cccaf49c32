/**
 * agency inside pi. A thin front end: every decision is made by the `agency` binary, so pi and Claude Code
 * cannot drift apart.
 *
 * - `tool_call`: the teachback gate. Each call is sent to `agency hook` as the PreToolUse event Claude Code
 *   would send (pi's tool names mapped to Claude Code's); a deny blocks the call with agency's reason. When
 *   agency cannot answer (not installed, crashed, timed out, unreadable answer) the call is BLOCKED: the gate
 *   fails closed and says why.
 * - `CompleteGoal` / `CancelGoal`: `agency goal complete` (verify, mechanical checks, read-only judge) and
 *   `agency goal cancel`, with agency's output returned to the model.
 * - `before_agent_start`: the goal summary from `agency hook` (SessionStart), injected as a message only when
 *   it changed, and in full again after session start and compaction, so the prompt cache keeps hitting.
 * - `tool_result` of write/edit: `agency hook` (PostToolUse) counts file changes and returns the fixed
 *   reminder when plan.md went stale.
 * - `agent_end`: `agency hook` (Stop) decides whether an open goal keeps the session working, under
 *   agency's stop budget and the session's loop state; before its reason is sent back as the next user
 *   message, the cheap loop judge (the session's own model, prompt and verdict from agency, fail-open) may
 *   pause the loop. In plan mode the drafts are reviewed instead.
 * - Commands: `/plan <objective>` (plan mode: read-only tools and `DraftGoal`, then Ready / Edit / Edit by hand / Cancel and
 *   the compact offer, on the sticky plan-phase model `/plan-model` chose), `/plan` (the task-list widget, then
 *   archive completed / cancel a goal), `/goal` and `/goal pause | resume | clear | status`
 *   (`agency goal loop`), `/goal log`, `/subgoal [@id] <text>`, `/judge model <provider/model>`.
 *
 * The pure part (reading agency's answers, the widget, argument parsing) is `../lib/agency.mjs`, tested with
 * node's own runner (`node --test integrations/pi/test/`).
 *
 * `AGENCY_BIN` names the agency binary (default: `agency` on PATH). `AGENCY_PI_GATE_ONLY=1` (set by
 * `agency run` for its pi agents) keeps only the gate: a run's agent has no plan.md goals of its own, and
 * the runner, not a Stop hook, decides when it is finished.
 */

import { spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { complete } from "@mariozechner/pi-ai";
import { getAgentDir, type ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import {
  PLAN_ACTIONS,
  PLAN_MODE_TOOLS,
  addedGoalId,
  agencyText,
  draftArgs,
  claudeInput,
  goalCommand,
  judgeCommand,
  loopReport,
  loopVerdict,
  planPrompt,
  planActions,
  planModelCommand,
  planWidget,
  readPlanModel,
  sessionModelArgs,
  subgoalCommand,
  gateToolName,
  gateVerdict,
  goalHookText,
  lastAssistantText,
} from "../lib/agency.mjs";

const AGENCY = process.env.AGENCY_BIN || "agency";
/** The gate is a local SQLite read; a blocking teachback wait happens in `agency teachback submit`, not here. */
const HOOK_TIMEOUT_MS = 30_000;
/** A sign-off runs verify and a judge. */
const SIGNOFF_TIMEOUT_MS = 30 * 60_000;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why agency gave no answer at all: not started, killed at the time limit. */
  failure?: string;
}

/**
 * Runs agency without a shell, `input` on its stdin, `env` added to its environment. Never rejects: a
 * failure is in `failure`.
 */
function runAgency(
  args: string[],
  input: string,
  cwd: string,
  timeoutMs: number,
  env: Record<string, string> = {},
): Promise<Ran> {
  return new Promise((resolve) => {
    let stdout = "";
    let stderr = "";
    let settled = false;
    const settle = (code: number | null, failure?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ code, stdout, stderr, failure });
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(AGENCY, args, { cwd, env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    } catch (err) {
      resolve({ code: null, stdout, stderr, failure: `cannot start ${AGENCY}: ${String(err)}` });
      return;
    }
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      settle(null, `${AGENCY} ${args[0]} did not answer within ${timeoutMs / 1000} s`);
    }, timeoutMs);
    child.stdout?.on("data", (chunk) => (stdout += chunk));
    child.stderr?.on("data", (chunk) => (stderr += chunk));
    child.on("error", (err) => settle(null, `cannot run ${AGENCY}: ${err.message}`));
    child.on("close", (code) => settle(code));
    child.stdin?.on("error", () => {});
    child.stdin?.end(input);
  });
}

/** The plan review's hand edit ($EDITOR). */
const EDIT_BY_HAND = "Edit by hand";

/** How long the loop judge's one model call may take before the loop goes on without it. */
const LOOP_JUDGE_TIMEOUT_MS = 60_000;

/** Asks the session's current model `prompt` (the loop judge, seed D10); "" when it cannot answer. */
async function askMainModel(prompt: string, ctx: any): Promise<string> {
  try {
    const model = ctx.model;
    if (!model) return "";
    const auth = await ctx.modelRegistry.getApiKeyAndHeaders(model);
    if (!auth?.ok || !auth.apiKey) return "";
    const response = await complete(
      model,
      { messages: [{ role: "user", content: [{ type: "text", text: prompt }], timestamp: Date.now() }] },
      { apiKey: auth.apiKey, headers: auth.headers, signal: AbortSignal.timeout(LOOP_JUDGE_TIMEOUT_MS) },
    );
    return response.content
      .filter((block: any) => block.type === "text")
      .map((block: any) => block.text)
      .join("");
  } catch {
    return "";
  }
}

/**
 * The session's current model for `agency goal complete` (the default sign-off judge, seed 002 D11):
 * `--session-model …` arguments and its key in AGENCY_SESSION_MODEL_KEY. Nothing when pi runs no model.
 */
async function sessionModel(ctx: any): Promise<{ args: string[]; env: Record<string, string> }> {
  const model = ctx.model;
  let key: string | undefined;
  try {
    const auth = model ? await ctx.modelRegistry.getApiKeyAndHeaders(model) : undefined;
    if (auth?.ok && auth.apiKey) key = auth.apiKey;
  } catch {
    key = undefined;
  }
  return sessionModelArgs(model, key);
}

/** Where the extension keeps its sticky choices (the plan-phase model): agency.json in pi's agent directory. */
const SETTINGS_FILE = () => join(getAgentDir(), "agency.json");

function readSettings(): string {
  try {
    return readFileSync(SETTINGS_FILE(), "utf8");
  } catch {
    return "";
  }
}

function writeSettings(changes: Record<string, unknown>) {
  let settings: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(readSettings());
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) settings = parsed;
  } catch {
    settings = {};
  }
  const next = { ...settings, ...changes };
  mkdirSync(getAgentDir(), { recursive: true });
  writeFileSync(SETTINGS_FILE(), `${JSON.stringify(next, null, 2)}\n`);
}

function sessionId(ctx: any): string | undefined {
  try {
    return ctx.sessionManager?.getSessionId?.();
  } catch {
    return undefined;
  }
}

function textResult(ran: Ran) {
  return {
    content: [{ type: "text" as const, text: agencyText(ran) }],
    details: { exitCode: ran.code },
  };
}

export default function agency(pi: ExtensionAPI) {
  const gateOnly = process.env.AGENCY_PI_GATE_ONLY === "1";
  /** The goal summary last injected; `undefined` after start or compaction, so it is sent in full again. */
  let injected: string | undefined;
  /** Whether the running turn was started by the Stop hook (Claude Code's `stop_hook_active`). */
  let continuing = false;
  /**
   * Plan mode (`/plan <objective>`): the goals drafted so far, the tools to give back afterwards, and the
   * session's model when plan mode switched to the plan-phase model (given back too).
   */
  let planning: { objective: string; drafted: string[]; tools: string[]; model?: any } | undefined;

  const hook = (event: Record<string, unknown>, ctx: any) =>
    runAgency(
      ["hook"],
      JSON.stringify({ session_id: sessionId(ctx), cwd: ctx.cwd, ...event }),
      ctx.cwd,
      HOOK_TIMEOUT_MS,
    );

  pi.on("tool_call", async (event, ctx) => {
    const toolName = gateToolName(event.toolName);
    const ran = await hook(
      {
        hook_event_name: "PreToolUse",
        tool_name: toolName,
        tool_input: claudeInput(event.input as Record<string, unknown>),
        tool_use_id: event.toolCallId,
      },
      ctx,
    );
    const verdict = gateVerdict(ran);
    if (verdict.block) return { block: true, reason: verdict.reason };
    if (verdict.notice && ctx.hasUI) ctx.ui.notify(verdict.notice, "warning");
    return undefined;
  });

  if (gateOnly) return;

  pi.on("session_start", async () => {
    injected = undefined;
    // DraftGoal is for plan mode only: not offered to the model until `/plan <objective>`.
    if (planning === undefined) pi.setActiveTools(pi.getActiveTools().filter((name: string) => name !== "DraftGoal"));
  });
  pi.on("session_compact", async () => {
    injected = undefined;
  });

  pi.on("before_agent_start", async (_event, ctx) => {
    const source = injected === undefined ? "startup" : "resume";
    const { context } = goalHookText(await hook({ hook_event_name: "SessionStart", source }, ctx));
    if (context === undefined || context === injected) return undefined;
    injected = context;
    return { message: { customType: "agency-goals", content: context, display: false } };
  });

  pi.on("tool_result", async (event, ctx) => {
    const toolName = gateToolName(event.toolName);
    if (toolName !== "Write" && toolName !== "Edit") return undefined;
    const { context } = goalHookText(
      await hook(
        { hook_event_name: "PostToolUse", tool_name: toolName, tool_input: claudeInput(event.input), tool_response: {} },
        ctx,
      ),
    );
    if (context !== undefined) {
      pi.sendMessage({ customType: "agency-reminder", content: context, display: false }, { deliverAs: "steer" });
    }
    return undefined;
  });

  /** Ends plan mode: the tools, and the model, as they were before it. */
  const leavePlanMode = async () => {
    const plan = planning;
    planning = undefined;
    if (plan === undefined) return;
    pi.setActiveTools(plan.tools);
    if (plan.model !== undefined) await pi.setModel(plan.model);
  };

  /** Cancels the drafted goals (logged in plan.md), for Edit (they are drafted again) and Cancel. */
  const dropDrafts = async (ids: string[], reason: string, cwd: string) => {
    for (const id of ids) await runAgency(["goal", "cancel", id, "--reason", reason], "", cwd, HOOK_TIMEOUT_MS);
  };

  /**
   * The review's hand edit (seed 002 §3a, `$EDITOR`): plan.md opens in `$VISUAL` or `$EDITOR` when one is set
   * and pi runs in a terminal; otherwise, said so, in pi's own multi-line editor. Afterwards the drafts are
   * those still in plan.md as `open` goals.
   */
  const editPlanByHand = async (ctx: any) => {
    const plan = planning;
    if (plan === undefined) return;
    const ran = await runAgency(["goal", "list", "--json"], "", ctx.cwd, HOOK_TIMEOUT_MS);
    let path: string | undefined;
    try {
      path = ran.code === 0 ? JSON.parse(ran.stdout).path : undefined;
    } catch {
      path = undefined;
    }
    if (typeof path !== "string") {
      ctx.ui.notify(`agency plan mode: cannot find plan.md: ${agencyText(ran)}`, "error");
      return;
    }
    const editor = process.env.VISUAL || process.env.EDITOR;
    if (editor && process.stdin.isTTY && process.stdout.isTTY) {
      const ok = await ctx.ui.custom((tui: any, _theme: any, _keys: any, done: (ok: boolean) => void) => {
        setImmediate(() => {
          let status: number | null = null;
          try {
            tui.stop();
            const [command, ...args] = editor.split(" ");
            status = spawnSync(command, [...args, path as string], { stdio: "inherit" }).status;
          } finally {
            tui.start();
            tui.requestRender(true);
            done(status === 0);
          }
        });
        return { render: () => [], invalidate: () => {} };
      });
      if (!ok) ctx.ui.notify(`agency plan mode: ${editor} did not exit cleanly; plan.md is as it left it`, "warning");
    } else {
      ctx.ui.notify(
        editor
          ? "agency plan mode: pi has no terminal to run $EDITOR in, so plan.md is edited here"
          : "agency plan mode: neither $VISUAL nor $EDITOR is set, so plan.md is edited here",
        "info",
      );
      let before: string;
      try {
        before = readFileSync(path, "utf8");
      } catch (err) {
        ctx.ui.notify(`agency plan mode: cannot read ${path}: ${String(err)}`, "error");
        return;
      }
      const after = await ctx.ui.editor("plan.md (the drafts are the goals with status: open)", before);
      if (typeof after !== "string" || after === before) return;
      writeFileSync(path, after.endsWith("\n") ? after : `${after}\n`);
    }
    const listed = await runAgency(["goal", "list", "--json"], "", ctx.cwd, HOOK_TIMEOUT_MS);
    try {
      const open = new Set(
        JSON.parse(listed.stdout)
          .goals.filter((g: any) => g.status === "open")
          .map((g: any) => g.id),
      );
      plan.drafted = plan.drafted.filter((id) => open.has(id));
    } catch {
      ctx.ui.notify(`agency plan mode: plan.md cannot be read after the edit: ${agencyText(listed)}`, "error");
    }
  };

  /** The review after a plan-mode run (seed 002 §3a): Ready / Edit / Edit by hand / Cancel, then the compact offer. */
  const reviewPlan = async (ctx: any) => {
    const plan = planning;
    if (plan === undefined) return;
    if (plan.drafted.length === 0) {
      ctx.ui.notify("agency plan mode: no goal was drafted; plan mode ended", "warning");
      await leavePlanMode();
      return;
    }
    const choice = await ctx.ui.select(
      `agency plan: ${plan.drafted.length} goal(s) drafted in plan.md (${plan.drafted.join(", ")}). Agree them?`,
      ["Ready", "Edit", EDIT_BY_HAND, "Cancel"],
    );
    if (choice === EDIT_BY_HAND) {
      await editPlanByHand(ctx);
      return reviewPlan(ctx);
    }
    if (choice === "Edit") {
      const change = await ctx.ui.input("What should change in the drafted goals?", "");
      // Nothing said: back to the review.
      if (typeof change !== "string" || change.trim() === "") return reviewPlan(ctx);
      await dropDrafts(plan.drafted, "redrafted in plan mode", ctx.cwd);
      plan.drafted = [];
      pi.sendUserMessage(
        `Your drafts were withdrawn. Draft the goals again with DraftGoal, changed as your user asks: ${change.trim()}`,
        { deliverAs: "followUp" },
      );
      return;
    }
    if (choice !== "Ready") {
      await dropDrafts(plan.drafted, "plan not agreed", ctx.cwd);
      await leavePlanMode();
      ctx.ui.notify("agency plan mode: cancelled; the drafted goals are cancelled in plan.md", "info");
      return;
    }
    const agreed = await runAgency(["goal", "agree", ...plan.drafted], "", ctx.cwd, HOOK_TIMEOUT_MS);
    await leavePlanMode();
    if (agreed.code !== 0) {
      ctx.ui.notify(agencyText(agreed), "error");
      return;
    }
    const session = sessionId(ctx);
    const start = async () => {
      if (session === undefined) return;
      const loop = loopReport(
        await runAgency(["goal", "loop", "start", "--session", session, "--json"], "", ctx.cwd, HOOK_TIMEOUT_MS),
      );
      if (loop.continuation !== undefined) pi.sendUserMessage(loop.continuation, { deliverAs: "followUp" });
    };
    const compact = await ctx.ui.confirm(
      "Compact the context?",
      "The agreed plan.md goals are injected again after compaction. Start the work in a compacted context?",
    );
    if (compact) {
      ctx.compact({ onComplete: () => void start(), onError: () => void start() });
    } else {
      await start();
    }
  };

  pi.on("agent_end", async (event, ctx) => {
    if (planning !== undefined) {
      // Plan mode: no Stop check (the drafts are not agreed yet); the user reviews them.
      continuing = false;
      return reviewPlan(ctx);
    }
    const { keepWorking, judgePrompt } = goalHookText(
      await hook(
        {
          hook_event_name: "Stop",
          stop_hook_active: continuing,
          loop_judge: true,
          last_assistant_message: lastAssistantText(event.messages),
        },
        ctx,
      ),
    );
    const session = sessionId(ctx);
    if (keepWorking !== undefined && judgePrompt !== undefined && session !== undefined) {
      // The cheap loop judge (seed D5/D10): the session's own model reads the last response; agency reads
      // its answer. An answer that cannot be had is "" and agency continues: the judge fails open.
      const answer = await askMainModel(judgePrompt, ctx);
      const verdict = loopVerdict(
        await runAgency(["goal", "loop", "verdict", "--session", session, "--json"], answer, ctx.cwd, HOOK_TIMEOUT_MS),
      );
      if (verdict.pause) {
        continuing = false;
        if (ctx.hasUI) ctx.ui.notify(`agency: goal loop paused by the loop judge: ${verdict.reason}`, "info");
        return;
      }
    }
    continuing = keepWorking !== undefined;
    if (keepWorking !== undefined) pi.sendUserMessage(keepWorking, { deliverAs: "followUp" });
  });

  pi.registerTool({
    name: "CompleteGoal",
    label: "Complete goal",
    description:
      "Sign a plan.md goal off: agency runs its verify command in a clean checkout of the committed work, then a " +
      "read-only judge checks the evidence against done_when and the failure modes. Commit the work first. On " +
      "reject, the goal stays active and the missing items are returned.",
    promptSnippet: "Sign off a plan.md goal through agency's two-stage check",
    promptGuidelines: [
      "Use CompleteGoal to mark a plan.md goal done; never set `status: done` by hand.",
    ],
    parameters: Type.Object({
      id: Type.String({ description: "The goal's id, from its `<!-- id: … -->` line" }),
      evidence: Type.String({ description: "What you claim, in a sentence, pointing at committed files" }),
      paths: Type.Array(Type.String(), { description: "Committed files the judge should read as evidence" }),
    }),
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      const args = ["goal", "complete", params.id, "--evidence", params.evidence];
      for (const path of params.paths ?? []) args.push("--path", path);
      // The session's judge, when `/judge model` chose one.
      const session = sessionId(ctx);
      if (session !== undefined) args.push("--session", session);
      // Otherwise the session's current model judges (seed 002, D11): its id, protocol and endpoint as
      // arguments, its key in the environment (never on a command line other processes can read).
      const { args: modelArgs, env } = await sessionModel(ctx);
      args.push(...modelArgs);
      return textResult(await runAgency(args, "", ctx.cwd, SIGNOFF_TIMEOUT_MS, env));
    },
  });

  pi.registerTool({
    name: "CancelGoal",
    label: "Cancel goal",
    description: "Cancel a plan.md goal (not a sign-off); agency records the reason in the plan's log.",
    parameters: Type.Object({
      id: Type.String({ description: "The goal's id" }),
      reason: Type.String({ description: "Why the goal is dropped" }),
    }),
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      return textResult(
        await runAgency(["goal", "cancel", params.id, "--reason", params.reason], "", ctx.cwd, HOOK_TIMEOUT_MS),
      );
    },
  });

  pi.registerTool({
    name: "DraftGoal",
    label: "Draft goal",
    description:
      "Plan mode only: draft one goal into plan.md (status open) for your user to review: its done_when, an " +
      "optional verify command, the ways it could look done while it is not, and its subtasks.",
    parameters: Type.Object({
      title: Type.String({ description: "The goal, in a few words" }),
      done_when: Type.String({ description: "The observable condition that makes it done" }),
      verify: Type.Optional(Type.String({ description: "A command that checks it, run without a shell" })),
      failure_modes: Type.Array(Type.String(), { description: "Ways it could look done while it is not" }),
      subtasks: Type.Array(Type.String(), { description: "The steps" }),
    }),
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      if (planning === undefined) {
        throw new Error("DraftGoal is for plan mode (/plan <objective>); outside it, goals are added with agency goal add");
      }
      const ran = await runAgency(draftArgs(params), "", ctx.cwd, HOOK_TIMEOUT_MS);
      const id = addedGoalId(ran.stdout);
      if (ran.code === 0 && id !== undefined) planning.drafted.push(id);
      return textResult(ran);
    },
  });

  const show = async (args: string[], ctx: any) => {
    const ran = await runAgency(args, "", ctx.cwd, HOOK_TIMEOUT_MS);
    ctx.ui.notify(agencyText(ran) || "(nothing)", ran.code === 0 ? "info" : "error");
  };

  /** Shows the task-list widget; returns `agency goal list --json`'s answer, or undefined when it failed. */
  const showPlan = async (ctx: any): Promise<any> => {
    const ran = await runAgency(["goal", "list", "--json"], "", ctx.cwd, HOOK_TIMEOUT_MS);
    let list: any;
    let lines: string[];
    try {
      list = ran.code === 0 ? JSON.parse(ran.stdout) : undefined;
      lines = list !== undefined ? planWidget(list) : [agencyText(ran)];
    } catch {
      lines = [`agency goal list: unreadable answer: ${ran.stdout.trim().slice(0, 200)}`];
    }
    if (list === undefined) {
      ctx.ui.notify(lines.join("\n"), "error");
      return undefined;
    }
    // Above the editor until the next /plan; the same text as a notice where there is no widget area.
    ctx.ui.setWidget("agency-plan", lines);
    ctx.ui.notify(lines.join("\n"), "info");
    return list;
  };

  pi.registerCommand("plan", {
    description:
      "/plan: the task list (goals with status and subtasks, signed-off ones hidden, unsigned done flagged), then " +
      "archive completed or cancel a goal; /plan <objective>: plan mode",
    handler: async (args, ctx) => {
      const objective = (args ?? "").trim();
      if (objective !== "") {
        if (planning !== undefined) {
          ctx.ui.notify("agency plan mode is already on", "error");
          return;
        }
        planning = { objective, drafted: [], tools: pi.getActiveTools() };
        pi.setActiveTools([...PLAN_MODE_TOOLS]);
        // The plan-phase model (seed 002 D12), when one is set: for this phase only.
        const chosen = readPlanModel(readSettings());
        let on = "the session's model";
        if (chosen !== undefined) {
          const { provider, id } = planModelCommand(chosen);
          const model = ctx.modelRegistry.find(provider, id);
          const before = ctx.model;
          if (model !== undefined && (await pi.setModel(model))) {
            planning.model = before;
            on = `the plan-phase model ${chosen}`;
          } else {
            ctx.ui.notify(`agency plan mode: the plan-phase model ${chosen} is not available (no such model, or no key); planning on the session's model`, "warning");
          }
        }
        ctx.ui.notify(`agency plan mode: read-only, on ${on}; the agent drafts goals for your review`, "info");
        if (ctx.isIdle()) pi.sendUserMessage(planPrompt(objective));
        else pi.sendUserMessage(planPrompt(objective), { deliverAs: "followUp" });
        return;
      }
      const list = await showPlan(ctx);
      if (list === undefined || !ctx.hasUI) return;
      // The widget's actions (seed 002 §7): archive the finished goals, cancel one.
      const { options, cancellable } = planActions(list);
      if (options.length === 1) return;
      const choice = await ctx.ui.select("agency plan", options);
      if (typeof choice !== "string" || choice === PLAN_ACTIONS.close) return;
      if (choice.startsWith(PLAN_ACTIONS.archive)) {
        await show(["goal", "archive"], ctx);
      } else if (choice === PLAN_ACTIONS.cancel) {
        const label = await ctx.ui.select("Cancel which goal?", Object.keys(cancellable));
        const id = typeof label === "string" ? cancellable[label] : undefined;
        if (id === undefined) return;
        const reason = await ctx.ui.input(`Why is ${id} cancelled?`, "");
        if (typeof reason !== "string" || reason.trim() === "") {
          ctx.ui.notify(`${id} not cancelled: a cancellation needs a reason for the log`, "warning");
          return;
        }
        await show(["goal", "cancel", id, "--reason", reason.trim()], ctx);
      }
      await showPlan(ctx);
    },
  });

  pi.registerCommand("plan-model", {
    description: "/plan-model <provider/model>: the model plan mode runs on, kept for later sessions; /plan-model reset",
    handler: async (args, ctx) => {
      const command = planModelCommand(args);
      if (command === undefined) {
        ctx.ui.notify("usage: /plan-model, /plan-model <provider/model>, /plan-model reset", "error");
        return;
      }
      if (command.provider !== undefined) {
        if (ctx.modelRegistry.find(command.provider, command.id) === undefined) {
          ctx.ui.notify(`/plan-model: pi knows no model ${command.provider}/${command.id} (see pi --list-models)`, "error");
          return;
        }
        writeSettings({ planModel: `${command.provider}/${command.id}` });
      } else if (command.reset) {
        writeSettings({ planModel: undefined });
      }
      const chosen = readPlanModel(readSettings());
      ctx.ui.notify(`agency plan mode runs on ${chosen ?? "the session's model"} (${SETTINGS_FILE()})`, "info");
    },
  });

  pi.registerCommand("subgoal", {
    description: "/subgoal [@goal-id] <text>: add a subtask to the active goal (agency goal subgoal)",
    handler: async (args, ctx) => {
      const command = subgoalCommand(args);
      if (command === undefined) {
        ctx.ui.notify("usage: /subgoal <text>, or /subgoal @<goal id> <text> when several goals are active", "error");
        return;
      }
      return show(command, ctx);
    },
  });

  pi.registerCommand("goal", {
    description: "The goal loop: /goal (re)starts it; /goal pause | resume | clear | status; /goal log",
    handler: async (args, ctx) => {
      const action = goalCommand(args);
      if (action === undefined) {
        ctx.ui.notify(`/goal ${(args ?? "").trim()}: unknown; use /goal, /goal pause | resume | clear | status, /goal log`, "error");
        return;
      }
      if (action === "log") return show(["goal", "log"], ctx);
      const session = sessionId(ctx);
      if (session === undefined) {
        ctx.ui.notify("agency: this pi session has no id, so its goal loop cannot be kept", "error");
        return;
      }
      const loop = loopReport(
        await runAgency(["goal", "loop", action, "--session", session, "--json"], "", ctx.cwd, HOOK_TIMEOUT_MS),
      );
      ctx.ui.notify(loop.text, loop.ok ? "info" : "error");
      if (loop.continuation !== undefined) {
        continuing = false;
        if (ctx.isIdle()) pi.sendUserMessage(loop.continuation);
        else pi.sendUserMessage(loop.continuation, { deliverAs: "followUp" });
      }
    },
  });

  pi.registerCommand("judge", {
    description: "/judge model <provider/model>: the sign-off judge of CompleteGoal in this session; /judge: show it",
    handler: async (args, ctx) => {
      const words = judgeCommand(args);
      if (words === undefined) {
        ctx.ui.notify("usage: /judge, /judge model <provider/model>, /judge model reset", "error");
        return;
      }
      const session = sessionId(ctx);
      if (session === undefined) {
        ctx.ui.notify("agency: this pi session has no id, so its judge cannot be kept", "error");
        return;
      }
      return show(["goal", "judge", ...words, "--session", session], ctx);
    },
  });
}

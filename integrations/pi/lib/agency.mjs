// The pure part of agency's pi extension: how agency's answers are read and how pi's events are put to
// agency. Plain JavaScript (no build step), so node's own test runner checks it (`node --test
// integrations/pi/test`) and pi's loader imports it from the extension as it is. Nothing here decides a
// goal or a gate: it only translates between pi and the `agency` binary.

/** pi's built-in tools under the names agency's gate knows them by (Claude Code's). */
export const CLAUDE_TOOL_NAMES = Object.freeze({
  read: "Read",
  write: "Write",
  edit: "Edit",
  bash: "Bash",
  grep: "Grep",
  find: "Glob",
  ls: "LS",
});

/** The gate's name for a pi tool: Claude Code's for the built-in ones, its own for the rest. */
export function gateToolName(piName) {
  return Object.hasOwn(CLAUDE_TOOL_NAMES, piName) ? CLAUDE_TOOL_NAMES[piName] : piName;
}

/** The tool's input as Claude Code names its fields (`file_path`), pi's own fields kept. */
export function claudeInput(input) {
  const mapped = { ...(input ?? {}) };
  if (typeof mapped.path === "string" && mapped.file_path === undefined) mapped.file_path = mapped.path;
  return mapped;
}

/**
 * Reads `agency hook`'s answer to a PreToolUse event (`ran`: `{code, stdout, stderr, failure?}`).
 * Anything but a clear answer blocks: `{block: true, reason}` or `{block: false, notice?}`.
 */
export function gateVerdict(ran) {
  const closed = (why) => ({
    block: true,
    reason: `agency: the teachback gate could not decide (${why}), so this call is blocked: the gate fails closed.`,
  });
  if (ran.failure) return closed(ran.failure);
  if (ran.code === 2) return { block: true, reason: ran.stderr.trim() || "agency hook blocked the call" };
  if (ran.code !== 0) return closed(`agency hook exited with ${ran.code}: ${ran.stderr.trim().slice(0, 500)}`);
  const text = ran.stdout.trim();
  if (text === "") return { block: false };
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    return closed(`unreadable answer: ${text.slice(0, 200)}`);
  }
  if (answer === null || typeof answer !== "object" || Array.isArray(answer)) {
    return closed(`unreadable answer: ${text.slice(0, 200)}`);
  }
  const specific = answer.hookSpecificOutput;
  const decision = specific?.permissionDecision;
  if (decision === "deny") {
    return { block: true, reason: String(specific.permissionDecisionReason ?? "denied by agency's teachback gate") };
  }
  if (decision !== undefined && decision !== "allow") return closed(`unknown decision ${JSON.stringify(decision)}`);
  const notice = [answer.systemMessage, specific?.additionalContext].filter((t) => typeof t === "string");
  return notice.length > 0 ? { block: false, notice: notice.join("\n") } : { block: false };
}

/**
 * `additionalContext`, or a Stop hook's block reason (with the loop judge's prompt when agency sent one), from
 * a goal hook's answer. Goal hooks fail open: no
 * answer, a failure or an unreadable answer is `{}`.
 */
export function goalHookText(ran) {
  if (ran.failure || ran.code !== 0 || ran.stdout.trim() === "") return {};
  try {
    const answer = JSON.parse(ran.stdout);
    if (answer?.decision === "block" && typeof answer.reason === "string") {
      const prompt = answer.loopJudge?.prompt;
      return typeof prompt === "string" ? { keepWorking: answer.reason, judgePrompt: prompt } : { keepWorking: answer.reason };
    }
    const context = answer?.hookSpecificOutput?.additionalContext;
    return typeof context === "string" ? { context } : {};
  } catch {
    return {};
  }
}

/** What agency printed (and its exit code when not 0), as the text a tool or command shows. */
export function agencyText(ran) {
  const output = [ran.stdout.trim(), ran.stderr.trim(), ran.failure ?? ""].filter((t) => t !== "").join("\n");
  const outcome = ran.code === 0 ? "" : `\n(agency exited with ${ran.code ?? "no exit code"})`;
  return `${output}${outcome}`;
}

/** The text of the last assistant message in pi's `agent_end` messages (what the loop judge reads). */
export function lastAssistantText(messages) {
  for (const message of [...(messages ?? [])].reverse()) {
    if (message?.role !== "assistant") continue;
    const content = message.content;
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
      return content
        .filter((block) => block?.type === "text" && typeof block.text === "string")
        .map((block) => block.text)
        .join("");
    }
    return "";
  }
  return "";
}

/** `/goal ARGS` as the `agency goal loop` action it runs (`log`: `agency goal log`); `undefined` if unknown. */
export function goalCommand(args) {
  const word = (args ?? "").trim();
  if (word === "") return "start";
  if (["pause", "resume", "clear", "status", "log"].includes(word)) return word;
  return undefined;
}

/** `/judge ARGS` as the arguments of `agency goal judge`; `undefined` if it is not `/judge [model REF|reset]`. */
export function judgeCommand(args) {
  const words = (args ?? "").trim().split(/\s+/).filter((w) => w !== "");
  if (words.length === 0) return [];
  if (words[0] !== "model" || words.length !== 2) return undefined;
  return words[1] === "reset" ? ["--reset"] : [words[1]];
}

/**
 * What `agency goal loop … --json` said, for the user: `{ok, text, continuation?}`. The continuation is the
 * message to send when the loop was (re)started on open goals.
 */
export function loopReport(ran) {
  if (ran.failure || ran.code !== 0) return { ok: false, text: agencyText(ran) || "agency goal loop failed" };
  let state;
  try {
    state = JSON.parse(ran.stdout);
  } catch {
    return { ok: false, text: `agency goal loop: unreadable answer: ${ran.stdout.trim().slice(0, 200)}` };
  }
  const open = Array.isArray(state.open_goals) && state.open_goals.length > 0 ? state.open_goals.join(", ") : "none";
  const lines = [
    `goal loop ${state.loop}: ${state.continuations_used} of ${state.budget} continuations used this turn`,
    `open goals: ${open}`,
  ];
  if (state.paused_because) lines.push(`paused: ${state.paused_because}`);
  lines.push(`sign-off judge: ${state.judge_model ?? "the session's model"}`);
  const report = { ok: true, text: lines.join("\n") };
  if (typeof state.continuation === "string") report.continuation = state.continuation;
  return report;
}

/**
 * What `agency goal loop verdict --json` decided: `{pause: true, reason}` or `{pause: false}`. The loop judge
 * fails open: any failure continues the loop.
 */
export function loopVerdict(ran) {
  if (ran.failure || ran.code !== 0) return { pause: false };
  try {
    const verdict = JSON.parse(ran.stdout).verdict;
    return verdict?.action === "pause" ? { pause: true, reason: String(verdict.reason ?? "") } : { pause: false };
  } catch {
    return { pause: false };
  }
}

/** `/subgoal ARGS` as the arguments of `agency goal subgoal`: `[@ID] TEXT`; `undefined` without a text. */
export function subgoalCommand(args) {
  let text = (args ?? "").trim();
  let goal;
  const named = /^@(\S+)\s+(.*)$/s.exec(text);
  if (named) {
    goal = named[1];
    text = named[2].trim();
  }
  if (text === "" || text.startsWith("@")) return undefined;
  return goal === undefined ? ["goal", "subgoal", text] : ["goal", "subgoal", text, "--goal", goal];
}

/**
 * The task-list widget's lines from `agency goal list --json` (seed 002 §7): each goal not finished with its
 * status and subtask checkboxes; goals done with a sign-off, and cancelled ones, counted as hidden, archived
 * ones (under `## Archive`) as archived; a goal done without a sign-off flagged, never hidden.
 */
export function planWidget(list) {
  const goals = Array.isArray(list?.goals) ? list.goals : [];
  if (goals.length === 0) return [`${list?.plan ?? "plan.md"}: no goals`];
  const lines = [];
  let doneHidden = 0;
  let cancelledHidden = 0;
  let archived = 0;
  const counts = {};
  for (const goal of goals) {
    const status = goal.status ?? "?";
    const name = `[${goal.id ?? "no id"}] ${goal.title}`;
    // Archived goals are counted apart; one done without a sign-off is flagged even there.
    if (goal.archived && !(status === "done" && !goal.signed)) {
      archived += 1;
      continue;
    }
    counts[status] = (counts[status] ?? 0) + 1;
    if (status === "done" && goal.signed) {
      doneHidden += 1;
      continue;
    }
    if (status === "cancelled") {
      cancelledHidden += 1;
      continue;
    }
    if (status === "done") {
      lines.push(`! ${name}: done WITHOUT a sign-off (${goal.label || "UNSIGNED"})`);
      continue;
    }
    const label = goal.label ? `, ${goal.label}` : "";
    lines.push(`${status === "active" ? "●" : "○"} ${name} (${status}${label})`);
    for (const subtask of goal.subtasks ?? []) lines.push(`    ${subtask.checked ? "☑" : "☐"} ${subtask.text}`);
  }
  const summary = ["active", "open", "done", "cancelled"]
    .filter((status) => counts[status])
    .map((status) => `${counts[status]} ${status}`);
  const hidden = [];
  if (doneHidden > 0) hidden.push(`${doneHidden} done hidden`);
  if (cancelledHidden > 0) hidden.push(`${cancelledHidden} cancelled hidden`);
  if (archived > 0) hidden.push(`${archived} archived`);
  return [`${list.plan ?? "plan.md"}: ${summary.join(", ")}${hidden.length > 0 ? ` · ${hidden.join(", ")}` : ""}`, ...lines];
}

/** pi's tools in plan mode: reading, and drafting goals (seed 002 §3a: explore read-only, draft the contract). */
export const PLAN_MODE_TOOLS = Object.freeze(["read", "grep", "find", "ls", "DraftGoal"]);

/** What the agent is asked in plan mode (seed 002 §10, planDrafting). */
export function planPrompt(objective) {
  return [
    `Plan mode (agency). Objective: ${objective}`,
    "",
    "Explore the repository read-only (read, grep, find, ls), then draft the goals that reach the objective,",
    "one DraftGoal call each. Change no file: your user reviews the drafts and agrees them before any work.",
    "For each goal give:",
    "- done_when: one observable condition that makes it done, and what would show it is wrong;",
    "- verify: a command that checks it, run without a shell (optional, but name one when a test can);",
    "- failure_modes: two or three ways it could look done while it is not; when there is a verify, one of",
    "  them says how verify could pass while the goal is still not reached;",
    "- subtasks: the steps, small enough to tick one by one.",
    "Then end with a short summary of the plan.",
  ].join("\n");
}

/** DraftGoal's parameters as `agency goal add` arguments: a drafted goal is `open` until it is agreed. */
export function draftArgs(params) {
  const args = ["goal", "add", String(params.title), "--done-when", String(params.done_when), "--status", "open"];
  if (typeof params.verify === "string" && params.verify.trim() !== "") args.push("--verify", params.verify);
  for (const mode of params.failure_modes ?? []) args.push("--failure-mode", String(mode));
  for (const subtask of params.subtasks ?? []) args.push("--subtask", String(subtask));
  return args;
}

/** The id `agency goal add` printed (`added      ID to plan.md`), if any. */
export function addedGoalId(stdout) {
  const match = /^added\s+(\S+) to /m.exec(stdout ?? "");
  return match ? match[1] : undefined;
}

/**
 * pi's current model (`{id, api, baseUrl}`) and its key as `agency goal complete`'s session-model arguments
 * and environment: the judge by default (seed 002, D11). The key goes in the environment only. No model, or
 * one without an id, protocol or endpoint: nothing, and agency uses team.yaml's judge.
 */
export function sessionModelArgs(model, key) {
  const id = model?.id;
  const api = model?.api;
  const url = model?.baseUrl;
  if (![id, api, url].every((v) => typeof v === "string" && v !== "")) return { args: [], env: {} };
  const args = ["--session-model", id, "--session-model-api", api, "--session-model-url", url];
  return { args, env: typeof key === "string" && key !== "" ? { AGENCY_SESSION_MODEL_KEY: key } : {} };
}

/** The `/plan` widget's actions (seed 002 §7): close, archive the finished goals, cancel one. */
export const PLAN_ACTIONS = Object.freeze({ close: "Close", archive: "Archive completed", cancel: "Cancel a goal" });

/**
 * What `/plan` offers after the widget, from `agency goal list --json`: `{options, cancellable}`. "Archive
 * completed" only when a signed-off or cancelled goal is outside the archive, "Cancel a goal" only when a
 * goal is open or active; `cancellable` maps each choice's label to its goal id.
 */
export function planActions(list) {
  const goals = Array.isArray(list?.goals) ? list.goals : [];
  const finished = goals.filter(
    (g) => !g.archived && (g.status === "cancelled" || (g.status === "done" && g.signed)),
  ).length;
  const cancellable = {};
  for (const goal of goals) {
    if ((goal.status === "open" || goal.status === "active") && typeof goal.id === "string") {
      cancellable[`[${goal.id}] ${goal.title}`] = goal.id;
    }
  }
  const options = [PLAN_ACTIONS.close];
  if (finished > 0) options.push(`${PLAN_ACTIONS.archive} (${finished})`);
  if (Object.keys(cancellable).length > 0) options.push(PLAN_ACTIONS.cancel);
  return { options, cancellable };
}

/**
 * `/plan-model ARGS`: `{show: true}` (no argument), `{reset: true}`, or `{provider, id}` for
 * `<provider>/<model id>` (the model id may itself contain `/`); `undefined` for anything else.
 */
export function planModelCommand(args) {
  const words = (args ?? "").trim().split(/\s+/).filter((w) => w !== "");
  if (words.length === 0) return { show: true };
  if (words.length !== 1) return undefined;
  if (words[0] === "reset") return { reset: true };
  const slash = words[0].indexOf("/");
  if (slash <= 0 || slash === words[0].length - 1) return undefined;
  return { provider: words[0].slice(0, slash), id: words[0].slice(slash + 1) };
}

/** The sticky plan-phase model (seed 002 D12) from the settings file's text: `provider/id`, or undefined. */
export function readPlanModel(text) {
  try {
    const value = JSON.parse(text ?? "")?.planModel;
    return typeof value === "string" && planModelCommand(value)?.provider !== undefined ? value : undefined;
  } catch {
    return undefined;
  }
}

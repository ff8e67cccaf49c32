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
 * `additionalContext`, or a Stop hook's block reason, from a goal hook's answer. Goal hooks fail open: no
 * answer, a failure or an unreadable answer is `{}`.
 */
export function goalHookText(ran) {
  if (ran.failure || ran.code !== 0 || ran.stdout.trim() === "") return {};
  try {
    const answer = JSON.parse(ran.stdout);
    if (answer?.decision === "block" && typeof answer.reason === "string") return { keepWorking: answer.reason };
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

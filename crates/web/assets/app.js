// The dashboard's page. Every request carries the token as a bearer header; the token comes from the URL's
// fragment (`#token=...`, never sent to a server), is kept in this tab's sessionStorage and removed from the
// address bar. Text from the blackboard is only ever set with textContent: agents write it. Geometry (the
// timeline's bars, the cost chart) is set through the CSSOM and SVG attributes, which the CSP allows.
"use strict";

const state = { token: null, run: null, stream: null, review: null, brief: null, decided: new Set() };
const SVG = "http://www.w3.org/2000/svg";

function takeToken(fragment) {
  const fromUrl = fragment.get("token");
  if (fromUrl) {
    sessionStorage.setItem("agency-token", fromUrl);
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem("agency-token");
}

function say(text) {
  document.getElementById("status").textContent = text;
}

async function api(path, options = {}) {
  const headers = Object.assign({ Authorization: "Bearer " + state.token }, options.headers || {});
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (!response.ok) {
    let message = response.status + " " + response.statusText;
    try { message = (await response.json()).error || message; } catch (_) { /* not JSON */ }
    throw new Error(message);
  }
  return response;
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  if (className) node.className = className;
  return node;
}

// A label/value row of a definition list; `value` is text or a node.
function field(list, label, value) {
  list.append(element("dt", label));
  const dd = element("dd");
  if (value instanceof Node) dd.append(value); else dd.textContent = value;
  list.append(dd);
}

function bullets(items, none) {
  if (!items || items.length === 0) return element("span", none, "none");
  const ul = element("ul");
  for (const item of items) ul.append(element("li", item));
  return ul;
}

function when(rfc3339) {
  return rfc3339 ? new Date(rfc3339).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "";
}

async function loadRuns() {
  const runs = await (await api("/api/runs")).json();
  const list = document.getElementById("runs");
  list.replaceChildren();
  for (const run of runs) {
    const item = element("li");
    const status = run.status + (run.no_runner ? " (no runner attached)" : "");
    const link = element("a", run.short + "  " + status + (run.pending_gates ? "  · " + run.pending_gates + " gate(s) waiting" : ""));
    link.href = "#run=" + run.id;
    link.addEventListener("click", (e) => { e.preventDefault(); openRun(run.id); });
    item.append(link, element("div", run.goal, "goal"));
    list.append(item);
  }
}

async function openRun(id) {
  if (state.stream) state.stream.abort();
  state.run = id;
  state.brief = null;
  document.getElementById("run-panel").hidden = false;
  document.getElementById("review").hidden = true;
  document.getElementById("log").replaceChildren();
  await loadRun();
  follow(id);
}

async function loadRun() {
  // The run first, then its review: a run read as ended has every event its review reads already written.
  const detail = await (await api("/api/runs/" + state.run)).json();
  const review = await (await api("/api/runs/" + state.run + "/review")).json();
  state.review = review;
  document.getElementById("run-title").textContent = "Run " + detail.run.short + " — " + detail.run.goal;
  document.getElementById("run-meta").textContent = detail.run.status +
    (detail.run.no_runner ? " (no runner attached: `agency run --resume " + detail.run.short + "` resumes it, `agency cancel " + detail.run.short + "` ends it)" : "") +
    " · " + detail.run.repo;
  renderOutcome(detail.run, review.outcome);
  const gates = document.getElementById("gates");
  gates.replaceChildren();
  // A gate this page just decided may still read as pending in a response that was on its way.
  const pending = detail.gates.filter((g) => g.status === "pending" && !state.decided.has(g.id));
  if (pending.length === 0) gates.append(element("p", "None."));
  for (const gate of pending) gates.append(gateCard(gate, review, detail.run.sandbox_off));
  renderAmendments(detail.amendments || []);
  const planPanel = document.getElementById("plan-panel");
  const planBox = document.getElementById("plan");
  planBox.replaceChildren();
  if (review.plan) planBox.append(renderPlan(review.plan));
  else if (review.plan_problem) planBox.append(element("p", "The plan does not validate: " + review.plan_problem));
  planPanel.hidden = !(review.plan || review.plan_problem);
  renderViews(review.views);
  renderTimeline(review.timeline);
  const body = document.querySelector("#briefs tbody");
  body.replaceChildren();
  for (const brief of detail.briefs) {
    const row = element("tr");
    const title = element("a", brief.title);
    title.href = "#";
    title.addEventListener("click", (e) => { e.preventDefault(); openBrief(brief.id); });
    const cells = [brief.tier, brief.workstream, title, brief.status, brief.teachback, String(brief.attempt)];
    for (const cell of cells) {
      const td = element("td");
      if (cell instanceof Node) td.append(cell); else td.textContent = cell;
      row.append(td);
    }
    body.append(row);
  }
  renderCost(review.cost);
  if (state.brief) openBrief(state.brief);
}

// Path amendments as `agency amendment list` says them: what, why, who proposed, and who decided it how.
function renderAmendments(amendments) {
  const list = document.getElementById("amendments");
  list.replaceChildren();
  document.getElementById("amendments-panel").hidden = amendments.length === 0;
  for (const a of amendments) {
    const change = (a.workstream ? a.workstream + ": " : "") + (a.change ? a.change + " — " : "");
    let decided = "proposed, undecided (agency amendment approve|reject " + state.run + " " + a.seq + ")";
    if (a.status === "approved") decided = "approved by " + a.decided_by + (a.path_after ? ": path " + a.path_after : "");
    if (a.status === "rejected") decided = "rejected by " + a.decided_by + ": " + (a.note || "no reason given");
    list.append(element("li", "#" + a.seq + " " + change + a.reason + " (by " + a.proposed_by + ") — " + decided, "amendment-" + a.status));
  }
}

function renderOutcome(run, outcome) {
  const box = document.getElementById("outcome");
  box.hidden = run.status !== "succeeded";
  if (box.hidden) return;
  document.getElementById("outcome-branch").textContent = outcome.branch || "(not recorded)";
  const pr = document.getElementById("outcome-pr");
  pr.replaceChildren();
  if (outcome.pull_request && outcome.pull_request.startsWith("https://")) {
    const link = element("a", outcome.pull_request);
    link.href = outcome.pull_request;
    link.rel = "noreferrer noopener";
    pr.append(link);
  } else {
    pr.textContent = outcome.pull_request || "none opened (no forge configured): merge the branch yourself";
  }
  document.getElementById("outcome-summary").textContent = outcome.summary || "(T1 recorded no summary)";
}

// The plan as `agency show <run> plan` prints it: the order of the groups, then each workstream's contract.
function renderPlan(view) {
  const plan = view.plan;
  const box = element("div", undefined, "plan");
  box.append(element("p", "Complexity " + plan.complexity + ", retry budget ×" + plan.retry_budget_multiplier + " · plan brief " + view.brief));
  box.append(element("p", "Goal: " + plan.goal_anchor, "plan-goal"));
  const sequence = (plan.parallelism && plan.parallelism.sequence) || [];
  const groups = (plan.parallelism && plan.parallelism.groups) || {};
  box.append(element("p", "Sequence: " + sequence.join(" → ") + " (each group starts when the one before it is done; a group's workstreams run in parallel)"));
  const order = element("ul");
  for (const group of sequence) order.append(element("li", group + ": " + (groups[group] || []).join(", ")));
  box.append(order);
  const scores = {};
  for (const s of view.scores || []) scores[s.id] = s;
  for (const ws of plan.workstreams) {
    const card = element("div", undefined, "workstream");
    card.append(element("h5", ws.id + " — " + ws.name + "  [" + ws.domain + ", group " + ws.parallel_group + "]"));
    const list = element("dl");
    field(list, "tier path", ws.tier_path.join(" → "));
    if (ws.shallower_path_reason) field(list, "shallower", ws.shallower_path_reason);
    const v = ws.variety;
    const s = scores[ws.id] || {};
    field(list, "variety", s.score + " (novelty " + v.novelty + ", scope " + v.scope + ", uncertainty " + v.uncertainty + ", risk " + v.risk + ") → " + s.route);
    if (ws.specialist) field(list, "specialist", ws.specialist);
    field(list, "done when", ws.contract.done_when);
    const verify = element("code", ws.contract.verify || "none — stage 1 has no command; only the judge signs off", "verify-command");
    field(list, "verify", verify);
    field(list, "failure modes", bullets(ws.contract.failure_modes, "none named"));
    field(list, "may edit", bullets(ws.contract.may_edit, "nothing protected"));
    if (ws.notes && ws.notes.trim()) field(list, "notes", element("pre", ws.notes));
    const diff = element("button", "Diff of this workstream's branch");
    diff.type = "button";
    diff.addEventListener("click", () => openDiff(ws.id));
    card.append(list, diff);
    box.append(card);
  }
  if (plan.self_critique_summary && plan.self_critique_summary.trim()) {
    box.append(element("p", "Self-critique: " + plan.self_critique_summary));
  }
  const integration = element("button", "Diff of the integration branch");
  integration.type = "button";
  integration.addEventListener("click", () => openDiff("integration"));
  box.append(integration);
  return box;
}

// T2's `[view …]` records of each workstream, as the server rendered them (the text `agency show <run>
// boundaries <ws>` prints), one collapsible block each.
function renderViews(views) {
  const box = document.getElementById("views");
  box.replaceChildren();
  document.getElementById("views-panel").hidden = !views || views.length === 0;
  for (const v of views || []) {
    const details = element("details", undefined, "view view-" + v.view);
    details.append(element("summary", v.workstream + " " + v.label), element("pre", v.text));
    box.append(details);
  }
}

function gateCard(gate, review, sandboxOff) {
  const card = document.getElementById("gate-template").content.firstElementChild.cloneNode(true);
  card.querySelector(".gate-title").textContent = gate.kind + (gate.tier ? " (" + gate.tier + ")" : "");
  // The run's agents were not confined: said on every gate, above its message.
  if (sandboxOff) card.querySelector(".gate-title").after(element("p", sandboxOff, "sandbox-off"));
  card.querySelector(".gate-message").textContent = (gate.summary && gate.summary.message) || "";
  if (gate.kind === "t1_plan") {
    const slot = card.querySelector(".gate-plan");
    if (review.plan && review.plan.gate && review.plan.gate.id === gate.id) slot.append(renderPlan(review.plan));
    else if (review.plan_problem) slot.append(element("p", "The plan does not validate: " + review.plan_problem));
    else slot.append(element("p", "No valid plan is recorded for this gate."));
  }
  card.querySelector(".gate-summary").textContent = JSON.stringify(gate.summary, null, 2);
  const text = card.querySelector(".gate-text");
  const buttons = card.querySelectorAll("button.approve, button.reject");
  // One decision per card: the buttons stay disabled until the card is redrawn.
  const once = (verb, body) => {
    for (const b of buttons) b.disabled = true;
    state.decided.add(gate.id);
    decide(gate.id, verb, body);
  };
  card.querySelector(".approve").addEventListener("click", () =>
    once("approve", text.value ? { note: text.value } : {}));
  card.querySelector(".reject").addEventListener("click", () => {
    if (!text.value.trim()) { say("A rejection needs a reason: the tier is re-invoked with it."); return; }
    once("reject", { reason: text.value });
  });
  return card;
}

// A Gantt-like picture: one bar per brief from its first event to its last, retries and gates marked.
function renderTimeline(spans) {
  const box = document.getElementById("timeline");
  box.replaceChildren();
  if (!spans || spans.length === 0) { box.append(element("p", "No brief has started.")); return; }
  const times = spans.flatMap((s) => [Date.parse(s.start), Date.parse(s.end)]);
  const t0 = Math.min(...times);
  const range = Math.max(Math.max(...times) - t0, 1);
  const at = (t) => ((Date.parse(t) - t0) / range) * 100;
  for (const span of spans) {
    const row = element("div", undefined, "lane");
    const label = element("span", span.tier.toUpperCase() + " " + span.workstream + "/" + span.title + (span.attempt ? " #" + (span.attempt + 1) : ""), "lane-label");
    const track = element("div", undefined, "track");
    const bar = element("div", undefined, "bar status-" + span.status);
    bar.style.left = at(span.start) + "%";
    bar.style.width = Math.max(at(span.end) - at(span.start), 0.5) + "%";
    bar.title = span.status + ": " + when(span.start) + " → " + when(span.end);
    track.append(bar);
    for (const mark of span.marks) {
      const tick = element("div", undefined, "mark mark-" + mark.kind);
      tick.style.left = at(mark.at) + "%";
      tick.title = mark.kind + " " + when(mark.at);
      track.append(tick);
    }
    row.append(label, track);
    box.append(row);
  }
  box.append(element("p", "Bars: first to last event of each brief. Marks: red failed/retried/escalated, amber a gate.", "hint"));
}

function renderCost(cost) {
  const box = document.getElementById("cost");
  box.replaceChildren();
  if (cost.total.spend.calls === 0) { box.append(element("p", "No model calls recorded.")); return; }
  const table = element("table", undefined, "cost");
  const head = element("tr");
  for (const h of ["", "calls", "in", "out", "cache", "USD"]) head.append(element("th", h));
  table.append(head);
  const add = (row, className) => {
    const tr = element("tr", undefined, className);
    const s = row.spend;
    for (const cell of [row.label, s.calls, s.input_tokens, s.output_tokens, s.cache_tokens, row.usd]) tr.append(element("td", String(cell)));
    table.append(tr);
  };
  for (const row of cost.tiers) add(row, "tier");
  for (const row of cost.briefs) add(row, "brief");
  add(cost.total, "total");
  // Tokens per tier as horizontal bars.
  const tokens = (s) => s.input_tokens + s.output_tokens + s.cache_tokens;
  const most = Math.max(...cost.tiers.map((r) => tokens(r.spend)), 1);
  const chart = document.createElementNS(SVG, "svg");
  chart.setAttribute("class", "chart");
  chart.setAttribute("width", "640");
  chart.setAttribute("height", String(cost.tiers.length * 22 + 4));
  cost.tiers.forEach((row, i) => {
    const y = i * 22 + 2;
    const name = document.createElementNS(SVG, "text");
    name.setAttribute("x", "0");
    name.setAttribute("y", String(y + 14));
    name.textContent = row.label;
    const bar = document.createElementNS(SVG, "rect");
    bar.setAttribute("x", "40");
    bar.setAttribute("y", String(y));
    bar.setAttribute("height", "18");
    bar.setAttribute("width", String(Math.max((tokens(row.spend) / most) * 280, 1)));
    const figure = document.createElementNS(SVG, "text");
    figure.setAttribute("x", String(44 + Math.max((tokens(row.spend) / most) * 280, 1)));
    figure.setAttribute("y", String(y + 14));
    figure.textContent = tokens(row.spend) + " tok · " + row.usd;
    chart.append(name, bar, figure);
  });
  box.append(chart, table);
}

function renderPatch(patch) {
  const pre = element("pre", undefined, "patch");
  for (const line of patch.split("\n")) {
    let kind = "ctx";
    if (line.startsWith("diff --git ") || line.startsWith("+++ ") || line.startsWith("--- ")) kind = "file";
    else if (line.startsWith("@@")) kind = "hunk";
    else if (line.startsWith("+")) kind = "add";
    else if (line.startsWith("-")) kind = "del";
    pre.append(element("span", line + "\n", kind));
  }
  return pre;
}

function renderDiff(diff) {
  const box = element("div", undefined, "diff");
  const added = diff.files.reduce((n, f) => n + f.added, 0);
  const removed = diff.files.reduce((n, f) => n + f.removed, 0);
  box.append(element("p", diff.of + " — " + diff.files.length + " file(s) changed, +" + added + " −" + removed, "diff-of"));
  const files = element("ul", undefined, "files");
  for (const f of diff.files) {
    const mark = { added: "A", deleted: "D", renamed: "R" }[f.change] || "M";
    files.append(element("li", mark + " " + (f.from ? f.from + " → " : "") + f.path + "  " + (f.binary ? "binary" : "+" + f.added + " −" + f.removed)));
  }
  box.append(files);
  if (diff.patch) box.append(renderPatch(diff.patch));
  return box;
}

function showReview(title, ...nodes) {
  document.getElementById("review").hidden = false;
  document.getElementById("review-title").textContent = title;
  document.getElementById("review-body").replaceChildren(...nodes);
}

async function openDiff(target) {
  try {
    const diff = await (await api("/api/runs/" + state.run + "/diff/" + encodeURIComponent(target))).json();
    state.brief = null;
    showReview("Diff: " + (target === "integration" ? "the integration branch" : "workstream " + target), renderDiff(diff));
  } catch (err) {
    showReview("Diff: " + target, element("p", "No diff: " + err.message));
  }
}

function renderVerify(run) {
  const p = run.event.payload;
  const ending = p.timed_out ? "timed out" : (p.exit_code !== undefined && p.exit_code !== null ? "exit " + p.exit_code : "did not run");
  const box = element("div", undefined, "verify " + (p.passed ? "passed" : "failed"));
  box.append(element("p", (p.passed ? "✓ " : "✗ ") + "`" + (p.command || "?") + "` " + (p.passed ? "passed" : "failed") + " (" + ending + ")"));
  const output = run.output || p.tail || "";
  box.append(element("pre", output.trim() ? output : "(no output)", "output"));
  return box;
}

function renderJudgement(j) {
  const p = j.event.payload;
  const box = element("div", undefined, "judgement " + j.event.kind);
  const audit = "auditor " + (p.verdict || "?") + (p.agrees ? " (agrees with the judge)" : ": DISAGREES with the judge (" + (p.judge || "?") + ")");
  const verdict = { signoff_accepted: "✓ accepted", signoff_rejected: "✗ rejected by " + (p.by || "?"), signoff_inconclusive: "? inconclusive", signoff_audit: audit }[j.event.kind];
  box.append(element("p", verdict + " — " + (p.subject || "?")));
  if (p.missing && p.missing.length) { box.append(element("p", "Missing:")); box.append(bullets(p.missing)); }
  if (p.reason) box.append(element("p", "Reason: " + p.reason));
  if (p.summary) { box.append(element("p", j.event.kind === "signoff_audit" ? "The auditor's account:" : "The judge's account:")); box.append(element("pre", p.summary)); }
  if (j.transcript) {
    const details = element("details");
    details.append(element("summary", "Transcript"), element("pre", j.transcript));
    box.append(details);
  }
  return box;
}

function renderTeachback(events) {
  const box = element("div", undefined, "teachback");
  if (events.length === 0) { box.append(element("p", "No teachback sent.")); return box; }
  for (const e of events) {
    const p = e.payload;
    const at = when(e.ts);
    if (e.kind === "teachback_submitted") {
      // The hook records the text; a runner's own agent records the document alone.
      const sent = p.text || (p.teachback ? JSON.stringify(p.teachback, null, 2) : "(empty)");
      box.append(element("p", "Sent " + at + ":"));
      box.append(element("pre", sent));
    }
    else if (e.kind === "teachback_approved") box.append(element("p", "Approved by " + (p.reviewer || "?") + " " + at + (p.note ? " — " + p.note : "")));
    else if (e.kind === "teachback_corrected") {
      box.append(element("p", "Corrections asked by " + (p.reviewer || "?") + " " + at + ":"));
      box.append(bullets((p.verdict && p.verdict.corrections) || []));
    } else if (e.kind === "teachback_denied") {
      box.append(element("p", (p.tool || "a tool call") + (p.blocked ? " denied before approval " : " would have been denied before approval ") + at));
    }
  }
  return box;
}

async function openBrief(id) {
  let r;
  try {
    r = await (await api("/api/runs/" + state.run + "/briefs/" + id)).json();
  } catch (err) {
    showReview("Brief " + id, element("p", "Could not load it: " + err.message));
    return;
  }
  state.brief = id;
  const b = r.brief;
  const about = element("dl");
  field(about, "status", b.status + " — attempt " + (b.attempt + 1) + " of " + (b.retry_budget + 1));
  field(about, "teachback", r.teachback);
  if (b.branch) field(about, "branch", b.branch);
  field(about, "instructions", element("pre", b.instructions));
  if (b.contract) {
    field(about, "done when", b.contract.done_when);
    field(about, "verify", element("code", b.contract.verify || "none"));
    field(about, "failure modes", bullets(b.contract.failure_modes, "none named"));
  }
  if (r.feedback) field(about, "started from", element("pre", r.feedback));
  for (const f of r.failures) field(about, f.kind + " " + when(f.ts), element("pre", f.payload.reason || "no reason recorded"));
  const side = element("div", undefined, "side-by-side");
  const left = element("div");
  left.append(element("h4", "Diff"), r.diff ? renderDiff(r.diff) : element("p", "No slice diff: only an implementer whose commit passed its verify command has one."));
  const right = element("div");
  right.append(element("h4", "Verify (stage 1)"));
  if (r.verify.length === 0) right.append(element("p", "No verify run recorded."));
  for (const v of r.verify) right.append(renderVerify(v));
  right.append(element("h4", "The judge (stage 2)"));
  if (r.judgements.length === 0) right.append(element("p", "No sign-off recorded."));
  for (const j of r.judgements) right.append(renderJudgement(j));
  side.append(left, right);
  const teach = element("div");
  teach.append(element("h4", "Teachback and its reviews"), renderTeachback(r.teachback_history));
  showReview(b.tier.toUpperCase() + " " + b.workstream + "/" + b.title + " [" + id + "]", about, side, teach);
}

async function decide(gate, verb, body) {
  try {
    await api("/api/gates/" + gate + "/" + verb, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    say("Gate " + gate.slice(-8) + " " + (verb === "approve" ? "approved" : "rejected") + ".");
  } catch (err) {
    state.decided.delete(gate);
    say("Could not " + verb + ": " + err.message);
  }
  await loadRun();
  await loadRuns();
}

// Appends a live-log line, keeping the box scrolled to its end unless the reader scrolled up.
function logLine(log, node) {
  const following = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  log.append(node);
  if (following) log.scrollTop = log.scrollHeight;
}

// Reads the server-sent events with fetch (EventSource cannot send the token header).
async function follow(id) {
  const controller = new AbortController();
  state.stream = controller;
  const log = document.getElementById("log");
  try {
    const response = await api("/api/runs/" + id + "/stream", { signal: controller.signal });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const message = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const kind = (message.match(/^event: (.*)$/m) || [])[1];
        const data = message.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
        if (kind === "agency") {
          const row = JSON.parse(data);
          if (row.line) {
            const line = element("div", row.line);
            line.dataset.seq = String(row.seq);
            logLine(log, line);
          }
          if (row.kind && (row.kind.startsWith("gate_") || row.kind === "run_status")) { loadRun(); loadRuns(); }
        } else if (kind === "end") {
          logLine(log, element("div", "— " + data + " —", "end"));
          loadRun();
        } else if (kind === "error") {
          say("Live log stopped: " + data);
        }
      }
    }
  } catch (err) {
    if (err.name !== "AbortError") say("Live log stopped: " + err.message);
  }
}

async function start() {
  // Read once: taking the token clears the fragment (`#token=…&run=…`) from the address bar.
  const fragment = new URLSearchParams(location.hash.slice(1));
  state.token = takeToken(fragment);
  if (!state.token) {
    say("No token: open the URL `agency dashboard` printed (it ends with #token=…).");
    return;
  }
  try {
    await loadRuns();
    say("");
    const wanted = fragment.get("run");
    if (wanted) openRun(wanted);
    setInterval(() => loadRuns().catch((err) => say(err.message)), 5000);
  } catch (err) {
    say(err.message);
  }
}

start();

// The dashboard's page. Every request carries the token as a bearer header; the token comes from the URL's
// fragment (`#token=...`, never sent to a server), is kept in this tab's sessionStorage and removed from the
// address bar. Text from the blackboard is only ever set with textContent: agents write it.
"use strict";

const state = { token: null, run: null, stream: null };

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
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
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
    link.title = run.goal;
    link.addEventListener("click", (e) => { e.preventDefault(); openRun(run.id); });
    item.append(link, element("span", " " + run.goal, "goal"));
    list.append(item);
  }
}

async function openRun(id) {
  if (state.stream) state.stream.abort();
  state.run = id;
  document.getElementById("run-panel").hidden = false;
  document.getElementById("log").replaceChildren();
  await loadRun();
  follow(id);
}

async function loadRun() {
  const detail = await (await api("/api/runs/" + state.run)).json();
  document.getElementById("run-title").textContent = "Run " + detail.run.short + " — " + detail.run.goal;
  document.getElementById("run-meta").textContent = detail.run.status +
    (detail.run.no_runner ? " (no runner attached: `agency run --resume " + detail.run.short + "` resumes it, `agency cancel " + detail.run.short + "` ends it)" : "") +
    " · " + detail.run.repo;
  const gates = document.getElementById("gates");
  gates.replaceChildren();
  const pending = detail.gates.filter((g) => g.status === "pending");
  if (pending.length === 0) gates.append(element("p", "None."));
  for (const gate of pending) gates.append(gateCard(gate));
  const body = document.querySelector("#briefs tbody");
  body.replaceChildren();
  for (const brief of detail.briefs) {
    const row = element("tr");
    for (const cell of [brief.tier, brief.workstream, brief.title, brief.status, brief.teachback, String(brief.attempt)]) {
      row.append(element("td", cell));
    }
    body.append(row);
  }
}

function gateCard(gate) {
  const card = document.getElementById("gate-template").content.firstElementChild.cloneNode(true);
  card.querySelector(".gate-title").textContent = gate.kind + (gate.tier ? " (" + gate.tier + ")" : "");
  card.querySelector(".gate-message").textContent = (gate.summary && gate.summary.message) || "";
  card.querySelector(".gate-summary").textContent = JSON.stringify(gate.summary, null, 2);
  const text = card.querySelector(".gate-text");
  card.querySelector(".approve").addEventListener("click", () =>
    decide(gate.id, "approve", text.value ? { note: text.value } : {}));
  card.querySelector(".reject").addEventListener("click", () => {
    if (!text.value.trim()) { say("A rejection needs a reason: the tier is re-invoked with it."); return; }
    decide(gate.id, "reject", { reason: text.value });
  });
  return card;
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
    say("Could not " + verb + ": " + err.message);
  }
  await loadRun();
  await loadRuns();
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
          if (row.line) log.append(element("div", row.line));
          if (row.kind && row.kind.startsWith("gate_")) { loadRun(); loadRuns(); }
        } else if (kind === "end") {
          log.append(element("div", "— " + data + " —", "end"));
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

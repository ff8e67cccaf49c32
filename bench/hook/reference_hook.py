#!/usr/bin/env python3
"""Reference PreToolUse hook in Python, doing the same work as `agency hook` on its fast path: read the event
on stdin, open the blackboard read-only, look the brief up by AGENCY_BRIEF, derive blocking/advisory from its
variety, and answer allow or deny as Claude Code expects. Used only by bench/hook/run.sh for comparison
(PACT's own hooks are Python and cost ~110 ms per tool call)."""
import json
import os
import sqlite3
import sys

READ_ONLY = {"Read", "Glob", "Grep", "LS", "TaskGet", "TaskList"}


def answer(decision, reason):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                             "permissionDecision": decision,
                                             "permissionDecisionReason": reason}}))


def main():
    event = json.load(sys.stdin)
    if event.get("hook_event_name") != "PreToolUse":
        return
    brief = os.environ["AGENCY_BRIEF"].replace("-", "")
    db = sqlite3.connect(f"file:{os.environ['AGENCY_DB']}?mode=ro", uri=True)
    row = db.execute("SELECT teachback, variety FROM briefs WHERE id = ?", (brief,)).fetchone()
    if row is None:
        return answer("deny", "unknown brief")
    state, variety = row
    score = sum(json.loads(variety).values()) if variety else 0
    blocking = score >= 7
    if not blocking or state == "active" or event.get("tool_name") in READ_ONLY:
        return answer("allow", "teachback gate open")
    answer("deny", f"teachback gate: not allowed while the teachback is {state}")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# The teachback gate's PreToolUse decision, end to end (process start to answer), against a blackboard
# holding 10,000 briefs, next to a reference Python hook doing the same lookup.
#
#   bench/hook/run.sh [RUNS]        (default 500 runs each)
#
# Needs python3 and hyperfine >= 1.16 (for --input): `cargo install hyperfine --version 1.20.0 --locked`
# (Debian's 1.15 has no --input; 2.x needs a newer rustc than the workspace's). HYPERFINE=/path overrides
# which one is used; AGENCY=/path/to/agency measures that binary instead of building this checkout's (to
# compare before and after).
#
# It measures `agency hook` and the slim `agency-hook` built beside it (the same decisions, linking only the
# tool gate); AGENCY_HOOK=/path overrides the slim one. With `perf` installed it also counts each case's
# user-space instructions per call (`perf stat -e instructions:u`), a figure the machine's load does not move.
#
# Every command runs without a shell (`hyperfine -N`), its stdin read from the event file (`--input`), with
# the hook's environment exported to hyperfine itself: a shell in between would cost more than the hook, and
# hyperfine cannot subtract it reliably below 5 ms. Prints median and p99 of each case, the CPU time per
# call, the speed-up, and the load average before and after. Targets (issue 4): median <= 2 ms,
# p99 <= 5 ms, >= 30x faster than the Python hook.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
runs="${1:-500}"
target="${CARGO_TARGET_DIR:-$root/target}"
hyperfine="${HYPERFINE:-hyperfine}"

command -v "$hyperfine" >/dev/null || {
  echo "hyperfine is missing: cargo install hyperfine --version 1.20.0 --locked" >&2
  exit 1
}
"$hyperfine" --help | grep -q -- '--input' || {
  echo "$("$hyperfine" --version) has no --input: cargo install hyperfine --version 1.20.0 --locked" >&2
  exit 1
}

if [ -n "${AGENCY:-}" ]; then
  agency="$AGENCY"
else
  echo "== building agency (release)"
  cargo build --release --quiet -p agency-cli --bins --manifest-path "$root/Cargo.toml"
  agency="$target/release/agency"
fi
slim="${AGENCY_HOOK:-$(dirname "$agency")/agency-hook}"
[ -x "$slim" ] || { echo "no agency-hook at $slim (AGENCY_HOOK=/path, or build with --bins)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q
"$agency" init >/dev/null
brief="$("$agency" teachback start --title "bench brief" --variety 2,2,2,2 | awk '/^brief/ {print $2}')"
echo "== seeding 10,000 briefs"
python3 "$here/seed.py" "$work/.agency/agency.db" "$brief" 10000 >/dev/null
# The briefs under test are copies deep in the table, not the first row: one approved (its Write is
# allowed: the decision every edit of a working agent goes through), one still pending (its Write is denied,
# which also reads team.yaml and records the denial).
pick() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT id FROM briefs ORDER BY id LIMIT 1 OFFSET ' + sys.argv[2]).fetchone()[0])" "$work/.agency/agency.db" "$1"; }
open_brief="$(pick 6789)"
pending_brief="$(pick 4321)"
export AGENCY_DB="$work/.agency/agency.db"
"$agency" teachback submit --brief "$open_brief" "Teachback:
- Building: x
- Key constraints: y
- Approach: z
- Most likely wrong: w
- Least confident: v" >/dev/null
"$agency" teachback approve "$open_brief" >/dev/null

# A plain session's pending brief (bound to a session, no AGENCY_BRIEF): its denial reads the rollout mode
# from the team.yaml committed at HEAD, which costs a git process.
git add .agency/team.yaml
git -c user.name=bench -c user.email=bench@example.com commit -q -m team
"$agency" teachback start --title "plain session brief" --variety 2,2,2,2 --session bench-plain >/dev/null
# A plain session whose brief is approved: the allow path of a Claude Code session outside a run. No
# AGENCY_BRIEF and no AGENCY_DB: the hook finds .agency/ from the working directory and the brief from the
# session's binding, as it does there.
plain_open_brief="$("$agency" teachback start --title "plain approved brief" --variety 2,2,2,2 \
  --session bench-plain-open | awk '/^brief/ {print $2}')"
"$agency" teachback submit --brief "$plain_open_brief" "Teachback:
- Building: x
- Key constraints: y
- Approach: z
- Most likely wrong: w
- Least confident: v" >/dev/null
"$agency" teachback approve "$plain_open_brief" >/dev/null

cat > event.json <<JSON
{"session_id":"bench","transcript_path":"/dev/null","cwd":"$work","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"$work/x.txt","content":"hi"},"tool_use_id":"toolu_1"}
JSON
sed 's/"session_id":"bench"/"session_id":"bench-plain"/' event.json > plain-event.json
sed 's/"session_id":"bench"/"session_id":"bench-plain-open"/' event.json > plain-open-event.json
# Both hooks must give the same answers before they are timed.
AGENCY_BRIEF="$open_brief" "$agency" hook < event.json | grep -q '"allow"'
AGENCY_BRIEF="$open_brief" python3 "$here/reference_hook.py" < event.json | grep -q '"allow"'
AGENCY_BRIEF="$pending_brief" "$agency" hook < event.json | grep -q '"deny"'
AGENCY_BRIEF="$pending_brief" python3 "$here/reference_hook.py" < event.json | grep -q '"deny"'
AGENCY_BRIEF= "$agency" hook < plain-event.json | grep -q '"deny"'
env -u AGENCY_DB AGENCY_BRIEF= "$agency" hook < plain-open-event.json | grep -q '"allow"'
AGENCY_BRIEF="$open_brief" "$slim" < event.json | grep -q '"allow"'
env -u AGENCY_DB AGENCY_BRIEF= "$slim" < plain-open-event.json | grep -q '"allow"'

# One hyperfine per environment: -N runs each command directly, so the variables are exported to it.
bench() { # NAME BRIEF COMMAND...
  local name="$1" brief="$2" input=event.json
  shift 2
  [ -n "$brief" ] || input=plain-event.json
  AGENCY_BRIEF="$brief" "$hyperfine" -N --warmup 20 --runs "$runs" --style none --input "$input" \
    --export-json "$work/$name.json" -n "$name" "$*"
}
echo "== $("$hyperfine" --version): $runs runs each, -N, stdin from the event file; $(nproc) cores"
echo "   load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
bench allow "$open_brief" "$agency" hook
bench python "$open_brief" python3 "$here/reference_hook.py"
bench deny "$pending_brief" "$agency" hook
bench plain "" "$agency" hook
AGENCY_BRIEF= env -u AGENCY_DB "$hyperfine" -N --warmup 20 --runs "$runs" --style none \
  --input plain-open-event.json --export-json "$work/plain_allow.json" -n plain_allow "$agency hook"
bench slim_allow "$open_brief" "$slim"
AGENCY_BRIEF= env -u AGENCY_DB "$hyperfine" -N --warmup 20 --runs "$runs" --style none \
  --input plain-open-event.json --export-json "$work/slim_plain_allow.json" -n slim_plain_allow "$slim"
echo "   load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work" <<'PY'
import json, statistics, sys
def stats(name):
    result = json.load(open(f"{sys.argv[1]}/{name}.json"))["results"][0]
    times = sorted(t * 1000 for t in result["times"])
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    cpu = (result["user"] + result["system"]) * 1000
    return statistics.median(times), p99, cpu
labels = {
    "allow": "agency hook (allow)",
    "python": "python hook (allow)",
    "deny": "agency hook (deny, recorded)",
    "plain": "plain session (deny, recorded)",
    "plain_allow": "plain session (allow)",
    "slim_allow": "agency-hook (allow)",
    "slim_plain_allow": "agency-hook, plain (allow)",
}
rows = {name: stats(name) for name in labels}
for name, (median, p99, cpu) in rows.items():
    print(f"{labels[name]:<30} median {median:7.2f} ms   p99 {p99:7.2f} ms   cpu {cpu:6.2f} ms")
print(f"speed-up (median, allow) {rows['python'][0] / rows['allow'][0]:6.1f}x")
PY

# Per call from `perf stat` (median of 30 single runs, one each since each needs the event on a fresh stdin):
# user-space instructions, which the load does not change (`n/a` on a machine whose PMU perf cannot reach,
# such as many VMs), CPU time (task-clock, ms) and page faults.
if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
  count() { # EVENT INPUT COMMAND...
    local event="$1" input="$2"
    shift 2
    for _ in $(seq 30); do
      perf stat -x, -e "$event" "$@" < "$input" 2>&1 >/dev/null | awk -F, -v e="$event" '$3 == e {print $1}'
    done | sort -g | awk '{v[NR] = $1} END {x = v[int((NR + 1) / 2)]; print (x ~ /^[0-9.]+$/ ? x : "n/a")}'
  }
  export -f count
  echo "== per call, perf stat (median of 30): instructions:u / task-clock ms / page-faults"
  for case in "agency hook|$agency hook" "agency-hook|$slim"; do
    name="${case%%|*}" cmd="${case#*|}"
    row=""
    for event in instructions:u task-clock page-faults; do
      row+="$(AGENCY_BRIEF="$open_brief" bash -c "count $event event.json $cmd") "
    done
    plain=""
    for event in instructions:u task-clock page-faults; do
      plain+="$(AGENCY_BRIEF= env -u AGENCY_DB bash -c "count $event plain-open-event.json $cmd") "
    done
    printf '%-12s allow in a run: %-28s allow in a plain session: %s\n' "$name" "$row" "$plain"
  done
fi

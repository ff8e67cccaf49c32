#!/usr/bin/env bash
# The teachback gate's PreToolUse decision, end to end (process start to answer), against a blackboard
# holding 10,000 briefs, next to a reference Python hook doing the same lookup. Needs hyperfine and python3.
#
#   bench/hook/run.sh [RUNS]        (default 500 runs each)
#
# Prints median and p99 for both and the speed-up. Targets (issue 4): median <= 2 ms, p99 <= 5 ms, >= 30x.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
runs="${1:-500}"
target="${CARGO_TARGET_DIR:-$root/target}"

command -v hyperfine >/dev/null || { echo "hyperfine is missing: apt-get install -y hyperfine" >&2; exit 1; }

echo "== building agency (release)"
cargo build --release --quiet -p agency-cli --manifest-path "$root/Cargo.toml"
agency="$target/release/agency"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q
"$agency" init >/dev/null
brief="$("$agency" teachback start --title "bench brief" --variety 2,2,2,2 | awk '/^brief/ {print $2}')"
echo "== seeding 10,000 briefs"
python3 "$here/seed.py" "$work/.agency/agency.db" "$brief" 10000
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

cat > event.json <<JSON
{"session_id":"bench","transcript_path":"/dev/null","cwd":"$work","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"$work/x.txt","content":"hi"},"tool_use_id":"toolu_1"}
JSON
# Both hooks must give the same answers before they are timed.
AGENCY_BRIEF="$open_brief" "$agency" hook < event.json | grep -q '"allow"'
AGENCY_BRIEF="$open_brief" python3 "$here/reference_hook.py" < event.json | grep -q '"allow"'
AGENCY_BRIEF="$pending_brief" "$agency" hook < event.json | grep -q '"deny"'
AGENCY_BRIEF="$pending_brief" python3 "$here/reference_hook.py" < event.json | grep -q '"deny"'

echo "== hyperfine: $runs runs each (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
hyperfine --warmup 20 --runs "$runs" --style basic --export-json "$work/result.json" \
  -n "agency hook (allow)" "AGENCY_BRIEF=$open_brief $agency hook < event.json" \
  -n "python hook (allow)" "AGENCY_BRIEF=$open_brief python3 $here/reference_hook.py < event.json" \
  -n "agency hook (deny, recorded)" "AGENCY_BRIEF=$pending_brief $agency hook < event.json"

python3 - "$work/result.json" <<'PY'
import json, statistics, sys
results = json.load(open(sys.argv[1]))["results"]
def stats(times):
    times = sorted(t * 1000 for t in times)
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    return statistics.median(times), p99
rows = {r["command"]: stats(r["times"]) for r in results}
for name, (median, p99) in rows.items():
    print(f"{name:<30} median {median:7.2f} ms   p99 {p99:7.2f} ms")
(am, ap), (pm, pp) = rows["agency hook (allow)"], rows["python hook (allow)"]
print(f"speed-up (median, allow) {pm / am:6.1f}x")
PY

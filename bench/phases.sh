#!/usr/bin/env bash
# Where in a run the runner's cost per brief moves: runs `agency-bench --briefs N` (release build) and every
# INTERVAL seconds prints the runner's CPU since the last line (user + system of the bench process, every
# thread, no children) and how many briefs reached `done` meanwhile, read from the kept blackboard. A cost
# per brief that rises through the implementers' phase says something grows with the backlog of slices
# waiting for their sign-off. See docs/performance.md.
#
#   bench/phases.sh 10000        # every 5 seconds
#   INTERVAL=10 bench/phases.sh 20000
#   AGENCY_BENCH=/tmp/agency-bench-old bench/phases.sh 10000   # a binary built aside, not built here
#
# Needs the sqlite3 command-line shell. Extra flags for the run go in BENCH_ARGS, as for bench/runner.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
briefs="${1:?usage: bench/phases.sh BRIEFS}"
interval="${INTERVAL:-5}"
command -v sqlite3 >/dev/null || { echo "bench/phases.sh: needs the sqlite3 shell on PATH" >&2; exit 2; }
# shellcheck source=bench/bench_binary.sh
source bench/bench_binary.sh
bin="$(bench_binary)"
keep="$(mktemp -d)/run"
trap 'rm -rf "$(dirname "$keep")"' EXIT
# shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
"$bin" --briefs "$briefs" --keep "$keep" ${BENCH_ARGS:-} &
pid=$!
ticks="$(getconf CLK_TCK)"
cpu_of() { awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0; }
done_briefs() {
  sqlite3 -readonly "$keep/agency.db" "SELECT count(*) FROM briefs WHERE status = 'done'" 2>/dev/null || echo 0
}
printf '%6s %10s %8s %12s %9s\n' at_s cpu_s done "us/brief" rss_mb
start=$(date +%s)
last_cpu=$(cpu_of)
last_done=0
while kill -0 "$pid" 2>/dev/null; do
  sleep "$interval"
  kill -0 "$pid" 2>/dev/null || break
  cpu=$(cpu_of)
  finished=$(done_briefs)
  rss=$(awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status" 2>/dev/null || echo -)
  awk -v at=$(($(date +%s) - start)) -v c=$((cpu - last_cpu)) -v d=$((finished - last_done)) -v t="$ticks" \
    -v rss="$rss" 'BEGIN { printf "%6d %10.2f %8d %12s %9s\n", at, c / t, d, (d > 0 ? sprintf("%.0f", c / t * 1e6 / d) : "-"), rss }'
  last_cpu=$cpu
  last_done=$finished
done
wait "$pid"

#!/usr/bin/env bash
# Two builds of the runner benchmark compared fairly on a noisy machine: runs `A --briefs N` and
# `B --briefs N` in turn, RUNS times each (3 by default), and prints every run's runner CPU per brief, then
# each build's mean and spread and B's difference from A. Runs in turn, because this machine's speed drifts
# over minutes: one run of each, an hour apart, says nothing (docs/performance.md, *Figures*).
#
# It also prints B's difference in the runner's CPU divided by git's (the CPU of the git processes the run
# started, which both builds start alike): the machine's drift moves both, so the ratio of one run spreads
# about a sixth as much as the runner's CPU alone (±1.3 % against ±8 % over six runs at 10,000 briefs on
# 2026-11-28). It compares builds that start the same git commands; it is not a figure to quote alone.
#
#   bench/ab.sh /work/bench-before /work/bench-after 1000
#   RUNS=2 bench/ab.sh old/agency-bench new/agency-bench 10000
#
# Build each binary in a target directory of its own (see docs/performance.md); extra flags for every run
# go in BENCH_ARGS, as for bench/runner.sh.
set -euo pipefail
a="${1:?usage: bench/ab.sh BENCH_A BENCH_B BRIEFS}"
b="${2:?usage: bench/ab.sh BENCH_A BENCH_B BRIEFS}"
briefs="${3:?usage: bench/ab.sh BENCH_A BENCH_B BRIEFS}"
runs="${RUNS:-3}"
for bin in "$a" "$b"; do
  [ -x "$bin" ] || { echo "bench/ab.sh: $bin is not an executable" >&2; exit 2; }
done
echo "# $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $runs runs of each at $briefs briefs"
results="$(mktemp)"
trap 'rm -f "$results"' EXIT
field() { tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { print $2 }'; }
for run in $(seq 1 "$runs"); do
  for side in A B; do
    bin="$a"
    [ "$side" = B ] && bin="$b"
    # shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
    line=$("$bin" --briefs "$briefs" ${BENCH_ARGS:-})
    status=$(echo "$line" | field status)
    us=$(echo "$line" | field runner_us_per_brief)
    printf '%s run %d: %6s us/brief (user %s, kernel %s)  processes/brief %s  writes/brief %s  peak %s MB  wall %s s  git CPU %s s  %s\n' \
      "$side" "$run" "$us" "$(echo "$line" | field user_us_per_brief)" "$(echo "$line" | field system_us_per_brief)" \
      "$(echo "$line" | field processes_per_brief)" "$(echo "$line" | field writes_per_brief)" \
      "$(echo "$line" | field peak_rss_mb)" "$(echo "$line" | field wall_s)" "$(echo "$line" | field child_cpu_s)" \
      "$status"
    [ "$status" = succeeded ] || { echo "bench/ab.sh: run $run of $side ended $status" >&2; exit 1; }
    # The runner's CPU over git's: both move with the machine's speed, their ratio much less (see below).
    ratio=$(awk -v r="$(echo "$line" | field runner_cpu_s)" -v g="$(echo "$line" | field child_cpu_s)" \
      'BEGIN { if (g > 0) printf "%.5f", r / g; else print 0 }')
    echo "$side $us $ratio" >> "$results"
  done
done
awk '
  { n[$1]++; sum[$1] += $2; ratio[$1] += $3
    if (!($1 in lo) || $2 < lo[$1]) lo[$1] = $2; if ($2 > hi[$1]) hi[$1] = $2 }
  END {
    split("A B", sides, " ")
    for (i = 1; i <= 2; i++) {
      side = sides[i]
      if (n[side]) printf "%s: mean %.0f us/brief (%d to %d)\n", side, sum[side] / n[side], lo[side], hi[side]
    }
    if (n["A"] && n["B"]) {
      a = sum["A"] / n["A"]; b = sum["B"] / n["B"]
      printf "B - A: %+.0f us/brief (%+.1f%%)\n", b - a, 100 * (b - a) / a
      ra = ratio["A"] / n["A"]; rb = ratio["B"] / n["B"]
      if (ra > 0) printf "B - A against git'"'"'s CPU: runner/git %.4f and %.4f (%+.1f%%)\n", ra, rb, 100 * (rb - ra) / ra
    }
  }' "$results"
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

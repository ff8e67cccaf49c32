#!/usr/bin/env bash
# The runner benchmark: builds `agency-bench` in release and runs a whole run at each size given (briefs;
# default 1000 10000 100000), then prints one row per size. Extra flags for every run go in BENCH_ARGS
# (for example BENCH_ARGS="--squad 50 --concurrency 8 --verify true"); AGENCY_BENCH=path runs a binary built
# aside instead of building one. See docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/bench_binary.sh
source bench/bench_binary.sh
bin="$(bench_binary)"
sizes=("$@")
if [ ${#sizes[@]} -eq 0 ]; then
  sizes=(1000 10000 100000)
fi
echo "# $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%8s %7s %8s %9s %12s %14s %11s %11s %9s %10s %10s %7s\n' \
  briefs events wall_s runner_s "us/brief" "us/brief(git)" agent_cpu_s child_cpu_s peak_mb procs/brief \
  writes/brief status
for n in "${sizes[@]}"; do
  # shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
  line=$("$bin" --briefs "$n" ${BENCH_ARGS:-})
  echo "$line" | tr ' ' '\n' | awk -F= '{ v[$1] = $2 } END {
    printf "%8s %7s %8s %9s %12s %14s %11s %11s %9s %10s %10s %7s\n", v["briefs"], v["events"], v["wall_s"],
      v["runner_cpu_s"], v["runner_us_per_brief"], v["process_us_per_brief"], v["agent_cpu_s"], v["child_cpu_s"],
      v["peak_rss_mb"], v["processes_per_brief"], v["writes_per_brief"], v["status"] }'
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
# What one git process costs the runner (start, supervise, reap), the floor under processes/brief.
"$bin" --spawn-cost 1000

#!/usr/bin/env bash
# What the runner writes to disk per brief, counted rather than timed: runs `agency-bench --briefs N` under
# `strace` (only `pwrite64`, filtered in the kernel) and prints, per brief, the pages SQLite appended to the
# WAL (one frame each: every page a commit changed), the pages checkpoints copied into the database, and
# writes to any other file (a statement journal that spilled to a temporary file, say). Unlike CPU time these
# counts do not move with the machine's load, so two builds compare in one run each. See
# docs/performance.md, *Pages per commit* and *Fewer pages per brief*.
#
#   bench/pages.sh 1000
#   AGENCY_BENCH=/tmp/agency-bench-old bench/pages.sh 1000   # a binary built aside, not built here
#
# Needs strace. The runner's CPU figure it prints is strace's, not the runner's: ignore it.
set -euo pipefail
cd "$(dirname "$0")/.."
briefs="${1:?usage: bench/pages.sh BRIEFS}"
command -v strace >/dev/null || { echo "bench/pages.sh: needs strace on PATH" >&2; exit 2; }
# shellcheck source=bench/bench_binary.sh
source bench/bench_binary.sh
bin="$(bench_binary)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
strace -f --seccomp-bpf -e trace=pwrite64 -y -o "$work/trace" "$bin" --briefs "$briefs" ${BENCH_ARGS:-} \
  > "$work/result"
done_briefs=$(sed -n 's/.* briefs=\([0-9]*\) .*/\1/p' "$work/result")
[ -n "$done_briefs" ] || { echo "bench/pages.sh: the bench printed no result" >&2; cat "$work/result" >&2; exit 1; }
# A line: `PID pwrite64(FD</path/to/file>, "..."..., SIZE, OFFSET) = SIZE`. The file is between the first
# `<` and `>`; the size is the second-to-last argument.
awk -v briefs="$done_briefs" '
  /pwrite64\(/ {
    file = $0; sub(/^[^<]*</, "", file); sub(/>.*/, "", file)
    n = split($0, parts, ", "); size = parts[n - 1] + 0
    if (file ~ /agency\.db-wal$/) { if (size >= 512) wal++ }
    else if (file ~ /agency\.db$/) db++
    else if (file !~ /agency\.db-(shm|journal)$/) other++
  }
  END {
    printf "briefs %d\n", briefs
    printf "WAL frames per brief          %6.2f\n", wal / briefs
    printf "database pages per brief      %6.2f  (checkpoints)\n", db / briefs
    printf "writes to other files         %6.2f  (temporary files: spilled statement journals)\n", other / briefs
  }' "$work/trace"

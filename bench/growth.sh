#!/usr/bin/env bash
# Where the runner's cost per brief goes, and how it moves through a run: runs `agency-bench --briefs N`
# (release build, or AGENCY_BENCH=path for a binary built aside), and at each of the given seconds into the
# run records the runner thread alone with `perf` for WINDOW seconds (DWARF call graphs: the release build
# needs line tables, see below). Each window's samples are divided by the briefs that reached `done` in it
# (read from the kept blackboard), so windows of different rates compare. Prints, per window, the runner's
# CPU per brief by where it went (SQLite, the allocator, process creation, scheduling, interrupts, the
# rest), then agency's functions with the most CPU per brief, each with what it called: comparing two windows
# (or two runs' windows) function by function is how a cost that grows with the run is found. See
# docs/performance.md, *Where the growth goes, measured* and *Growth with the run's size*.
#
#   bench/growth.sh 10000 10 60          # windows at 10 s and 60 s, 22 s each
#   WINDOW=10 bench/growth.sh 1000 3
#   THREADS=all bench/growth.sh 100000 900   # every thread of the runner, not its busiest alone
#
# The runner's thread is not all of the runner: a slice's sign-off runs its mechanical checks (its clean
# checkout, its diff) on a blocking thread, which at 100,000 briefs cost half as much again as the runner's
# thread did (docs/performance.md, *One merge per squad*). THREADS=all records those too.
#
# Needs perf (allowed to record: kernel.perf_event_paranoid <= 1, or root), sqlite3 and python3. For
# readable frames, build the bench with symbols:
#   CARGO_PROFILE_RELEASE_STRIP=none CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
#     cargo build --release -p agency-bench
set -euo pipefail
cd "$(dirname "$0")/.."
briefs="${1:?usage: bench/growth.sh BRIEFS SECONDS...}"
shift
[ $# -gt 0 ] || { echo "bench/growth.sh: give at least one time (seconds into the run) to record at" >&2; exit 2; }
window="${WINDOW:-22}"
freq="${FREQ:-1999}"
for tool in perf sqlite3 python3; do
  command -v "$tool" >/dev/null || { echo "bench/growth.sh: needs $tool on PATH" >&2; exit 2; }
done
# shellcheck source=bench/bench_binary.sh
source bench/bench_binary.sh
bin="$(bench_binary)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
keep="$work/run"
"$bin" --briefs "$briefs" --keep "$keep" > "$work/result" &
pid=$!
start=$(date +%s)
done_briefs() {
  sqlite3 -readonly "$keep/agency.db" "SELECT count(*) FROM briefs WHERE status = 'done'" 2>/dev/null || echo 0
}
windows=()
for at in "$@"; do
  while [ $(($(date +%s) - start)) -lt "$at" ]; do
    kill -0 "$pid" 2>/dev/null || break 2
    sleep 0.5
  done
  if [ "${THREADS:-runner}" = all ]; then
    # Every thread the runner has now (the sign-offs' blocking threads too), none of its children.
    target=(-p "$pid")
  else
    # The runner's thread: the one with the most CPU so far (it drives the run; the others wait on it).
    target=(-t "$(for task in /proc/"$pid"/task/*; do awk '{ print $14 + $15, $1 }' "$task/stat"; done | sort -rn | head -1 | cut -d' ' -f2)")
  fi
  before=$(done_briefs)
  perf record -q --no-inherit "${target[@]}" --call-graph dwarf,16384 -F "$freq" -e cpu-clock \
    -o "$work/at$at.data" -- sleep "$window" 2>"$work/perf.err" || cat "$work/perf.err" >&2
  after=$(done_briefs)
  windows+=("$at:$((after - before))")
done
wait "$pid"
cat "$work/result"
# Sorts one window's samples (perf script's stacks, on stdin) by where they went.
analysis=$(cat <<'PY'
import collections, re, sys
at, done, freq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# First match wins, so the more specific places come first.
PLACES = [
    ("interrupts", re.compile(r"asm_common_interrupt|asm_sysvec|handle_softirqs")),
    ("process creation", re.compile(r"clone3|kernel_clone")),
    ("sqlite", re.compile(r"sqlite3")),
    ("allocator", re.compile(r"_int_malloc|_int_free|malloc_consolidate|tcache_|__libc_malloc|__GI___libc_free|__libc_calloc|realloc")),
    ("scheduling", re.compile(r"finish_task_switch|__schedule")),
]
counts, total, stack = {}, 0, []
# Inclusive samples per function of agency's own (a crate `agency_*`), past the frames every sample shares
# (the drive loop and above): what finds a cost that grows with the run, function by function.
TOP = 25
inclusive = collections.Counter()
SHARED = re.compile(r"drive|block_on|agency_bench::main|advance::pass")
def tally(frames):
    global total
    if not frames:
        return
    total += 1
    names = {re.sub(r"\+0x[0-9a-f]+$", "", f.split(None, 1)[-1]) for f in frames}
    for name in names:
        if name.startswith(("agency_", "<agency_")) and not SHARED.search(name):
            inclusive[name] += 1
    for name, pattern in PLACES:
        if any(pattern.search(f) for f in frames):
            counts[name] = counts.get(name, 0) + 1
            return
    counts["the rest"] = counts.get("the rest", 0) + 1
for line in sys.stdin:
    line = line.strip()
    if not line:
        tally(stack)
        stack = []
    else:
        stack.append(line)
tally(stack)
us_per_sample = 1e6 / freq
per_brief = lambda n: n * us_per_sample / max(done, 1)
print(f"\n# window at {at} s: {done} briefs done, {total} samples, {per_brief(total):.0f} us per brief")
for name, _ in PLACES + [("the rest", None)]:
    print(f"{name:>18} {per_brief(counts.get(name, 0)):8.0f} us/brief")
print(f"# the {TOP} functions of agency's with the most samples, each with everything it called")
for name, n in inclusive.most_common(TOP):
    print(f"{per_brief(n):8.1f} us/brief  {name[:150]}")
PY
)
for entry in "${windows[@]}"; do
  at="${entry%%:*}"
  briefs_done="${entry#*:}"
  perf script -i "$work/at$at.data" -F ip,sym 2>"$work/script.err" |
    python3 -c "$analysis" "$at" "$briefs_done" "$freq"
done

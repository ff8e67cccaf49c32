#!/usr/bin/env bash
# What the terminal `agency inspect`'s once-a-second refresh costs on a big run (issue 27): a SQLite
# blackboard of BRIEFS briefs (default 1,000) with EVENTS_PER_BRIEF events each (default 10, so 10,000
# events), the inspector open on the run's cost. Prints the median and slowest of ROUNDS (20) timings of a
# whole read and render (what each refresh did before it was incremental), a refresh with nothing new, and a
# refresh after 10 new events. See docs/performance.md, *The terminal inspector's refresh*.
#
#   bench/tui/run.sh [BRIEFS] [EVENTS_PER_BRIEF] [ROUNDS]
#
# Built in release without LTO; PROFILE=dev measures a debug build instead (quicker to build, slower to run).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
profile="${PROFILE:-release}"
echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg)"
CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  cargo run --quiet --profile "$profile" -p agency-cli --example tui_refresh \
  --manifest-path "$root/Cargo.toml" -- "${1:-1000}" "${2:-10}" "${3:-20}"
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"

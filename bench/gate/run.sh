#!/usr/bin/env bash
# The gate service's decision latency (issue 24): AGENTS clients at once (default 8), each asking the
# runner's gate service for CALLS PreToolUse decisions (default 2,000) over its unix socket, one connection
# per call as `agency hook` makes them. Prints p50, p99 and max of the round trip. Targets: p50 <= 0.5 ms,
# p99 <= 2 ms at 8 agents.
#
#   bench/gate/run.sh [AGENTS] [CALLS]
#
# Built in release without LTO (the measured path has no cross-crate hot loop LTO would change; a fat-LTO
# build of the whole stack takes long on a small machine). PROFILE=dev measures a debug build instead.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
profile="${PROFILE:-release}"
echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg)"
CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  cargo run --quiet --profile "$profile" -p agency-cli --example gate_bench \
  --manifest-path "$root/Cargo.toml" -- "${1:-8}" "${2:-2000}"
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"

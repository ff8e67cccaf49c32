#!/usr/bin/env bash
# Approve -> next spawn (issue 24; target <= 20 ms from the `gate_approved` event to `spawned`): N approvals
# (default 50) of a waiting runner's plan gate, each a fresh run, poked as `agency approve` pokes it. Prints
# p50/p99 of gate_approved -> spawned and -> the agent running, with the split (pass, claim, prepare, start)
# and the load average before and after. Extra flags go to `agency-bench --approve` (for example
# `--workstreams 4`).
#
#   bench/approve/run.sh [N] [--workstreams W] [--concurrency C]
#
# Built in release without LTO, like bench/gate.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
n="${1:-50}"
shift || true
CARGO_PROFILE_RELEASE_LTO=false cargo build --quiet --release -p agency-bench --manifest-path "$root/Cargo.toml"
target="${CARGO_TARGET_DIR:-$root/target}"
"$target/release/agency-bench" --approve "$n" "$@"

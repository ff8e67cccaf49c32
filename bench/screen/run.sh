#!/usr/bin/env bash
# Event → screen latency of the dashboard (issue 27): the time from an event's write to the blackboard until
# the dashboard's page, open in headless Chromium, shows its live-log line. Runs the browser test
# `dashboard_browser::an_event_written_to_the_blackboard_reaches_the_screen_quickly` with SAMPLES probe
# events (default 200, 37 ms apart, so they land at every point of the server's 50 ms poll) and prints p50,
# p95, p99 and max. Target: p50 <= 100 ms. Needs Chromium (`chromium` on PATH or $AGENCY_CHROMIUM).
# See docs/performance.md, *Dashboard: event → screen latency*.
#
#   bench/screen/run.sh [SAMPLES]
#
# The test binary is a debug build (the server's work per event is one indexed read and one line rendered;
# the figure is dominated by the poll interval and the browser).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
samples="${1:-200}"
if [ -z "${AGENCY_CHROMIUM:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  echo "bench/screen/run.sh: needs Chromium (apt-get install chromium, or set AGENCY_CHROMIUM)" >&2
  exit 2
fi
echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg)"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
AGENCY_SCREEN_SAMPLES="$samples" AGENCY_REQUIRE_E2E=1 \
  cargo test --quiet --manifest-path "$root/Cargo.toml" -p agency-cli --test cli \
  dashboard_browser::an_event_written_to_the_blackboard_reaches_the_screen_quickly >"$out" 2>&1 || {
  cat "$out" >&2
  exit 1
}
grep -F "event → screen:" "$out" || { echo "bench/screen/run.sh: the test printed no figure" >&2; cat "$out" >&2; exit 1; }
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Sourced by the bench scripts (not run): prints the agency-bench binary to run. AGENCY_BENCH when it is set
# (a binary built aside, say from another commit, to compare builds run for run); otherwise a release build
# made here, cargo's output on stderr.
bench_binary() {
  if [ -n "${AGENCY_BENCH:-}" ]; then
    printf '%s\n' "$AGENCY_BENCH"
  else
    cargo build --release -p agency-bench >&2
    printf '%s\n' "${CARGO_TARGET_DIR:-target}/release/agency-bench"
  fi
}

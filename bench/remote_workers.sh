#!/usr/bin/env bash
# One run across "machines" on this one, with 0..N `agency worker --repo` processes beside the driver: a bare
# repository as the git remote, a clone per worker, one PostgreSQL database. The scripted run has K slices
# whose agents each work S seconds (a `sleep`) and then write a file of their own. Prints, per worker count,
# the wall time from start to the run's end, slices merged per minute, and each process's CPU (user+system,
# its git children included, from /usr/bin/time).
#
#   AGENCY_TEST_POSTGRES_URL='host=127.0.0.1 user=postgres password=... dbname=postgres' \
#     bench/remote_workers.sh [target/debug/agency] [K=12] [S=2] [WORKER_COUNTS="0 1 2 3"]
set -euo pipefail
agency="$(realpath "${1:-target/debug/agency}")"
slices="${2:-12}"
seconds="${3:-2}"
counts="${WORKER_COUNTS:-0 1 2 3}"
: "${AGENCY_TEST_POSTGRES_URL:?set AGENCY_TEST_POSTGRES_URL to an admin connection string}"

script() {
  cat <<EOF
model: scripted-remote-bench
replies:
  - role: judge
    reply: { text: "every check passes\nVERDICT: accept\nmissing: none" }
  - role: planner
    reply:
      tool_calls:
        - name: report_result
          input:
            status: done
            summary: "One workstream."
            output:
              run_id: "00000000-0000-4000-8000-000000000000"
              goal_anchor: "(filled in by agency)"
              complexity: medium
              retry_budget_multiplier: 1
              workstreams:
                - id: ws
                  name: slices
                  domain: backend
                  tier_path: [t3, t4, t5]
                  parallel_group: A
                  notes: "independent files"
                  variety: { novelty: 1, scope: 1, uncertainty: 1, risk: 1 }
                  contract: { done_when: "every file exists", verify: "true" }
              parallelism: { groups: { A: [ws] }, sequence: [A] }
              self_critique_summary: "independent"
  - role: squad-lead
    reply:
      tool_calls:
        - name: report_result
          input:
            status: done
            summary: "independent tasks"
            output:
              tasks:
EOF
  for i in $(seq 1 "$slices"); do
    cat <<EOF
                - title: slice-$i
                  instructions: "Write slice-$i.txt."
                  variety: { novelty: 1, scope: 1, uncertainty: 1, risk: 1 }
                  contract: { done_when: "slice-$i.txt exists", verify: "true" }
EOF
  done
  for i in $(seq 1 "$slices"); do
    cat <<EOF
  - role: implementer
    brief: ws/t4/slice-$i
    reply:
      tool_calls:
        - { name: run_command, input: { argv: [sleep, "$seconds"] } }
        - { name: write_file, input: { path: slice-$i.txt, content: "slice $i\n" } }
        - { name: report_result, input: { status: done, summary: "written", evidence: [{ path: slice-$i.txt }] } }
EOF
  done
}

psql_admin() { psql "$AGENCY_TEST_POSTGRES_URL" -q -v ON_ERROR_STOP=1 -c "$1" >/dev/null; }

printf '%-8s %-8s %-10s %-14s %-12s %s\n' workers slices wall_s merged_per_min driver_cpu_s worker_cpu_s
for n in $counts; do
  dir="$(mktemp -d)"
  db="agency_bench_remote_$$_$n"
  psql_admin "CREATE DATABASE $db"
  url="$AGENCY_TEST_POSTGRES_URL dbname=$db"
  (
    cd "$dir"
    git init -q --bare -b main remote.git
    mkdir driver && cd driver
    git init -q -b main
    echo "bench" >README
    AGENCY_DB="$url" "$agency" init >/dev/null
    sed -i 's/^  concurrency: [0-9]* /  concurrency: 1 /' .agency/team.yaml
    git add -A && git -c user.name=b -c user.email=b@b commit -qm start
    git remote add origin ../remote.git && git push -q origin HEAD:refs/heads/main
    script >"$dir/script.yaml"
  )
  start=$(date +%s.%N)
  (cd "$dir/driver" && AGENCY_DB="$url" /usr/bin/time -f "%U %S" -o "$dir/driver.cpu" \
    "$agency" run "Write the slices" --auto-approve --script "$dir/script.yaml" --remote origin \
    >"$dir/driver.log" 2>&1) &
  driver=$!
  run=""
  until [ -n "$run" ]; do
    sleep 0.1
    run=$(AGENCY_DB="$url" "$agency" runs 2>/dev/null | awk 'NR>1 {print $1; exit}')
  done
  pids=()
  for w in $(seq 1 "$n"); do
    mkdir "$dir/m$w"
    (cd "$dir/m$w" && AGENCY_DB="$url" /usr/bin/time -f "%U %S" -o "$dir/w$w.cpu" \
      "$agency" worker "$run" --repo "$dir/remote.git" --dir clone --concurrency 1 --script "$dir/script.yaml" \
      >"$dir/w$w.log" 2>&1) &
    pids+=("$!")
  done
  wait "$driver"
  end=$(date +%s.%N)
  for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid" || true; done
  cpu() { awk '{printf "%.2f", $1 + $2}' "$1"; }
  workers_cpu=""
  for w in $(seq 1 "$n"); do workers_cpu+="$(cpu "$dir/w$w.cpu") "; done
  wall=$(echo "$end - $start" | bc -l)
  printf '%-8s %-8s %-10.1f %-14.1f %-12s %s\n' "$n" "$slices" "$wall" "$(echo "$slices * 60 / $wall" | bc -l)" \
    "$(cpu "$dir/driver.cpu")" "${workers_cpu:--}"
  grep -q succeeded "$dir/driver.log" || { echo "the run did not succeed: $dir/driver.log" >&2; tail -5 "$dir/driver.log" >&2; }
  psql_admin "DROP DATABASE $db WITH (FORCE)"
  rm -rf "$dir"
done

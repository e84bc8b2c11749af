#!/usr/bin/env bash
# Runs every test: Rust (format, lint, unit), Python (lint), Java (format, unit), then the engine,
# the Java engine bindings and the Connect plugin against a real Kafka 4.4 broker and Connect
# worker started by tests/harness/cluster.py. Logs: build/cluster/logs/.
#
#   scripts/test.sh                 every stage, in order
#   scripts/test.sh STAGE [STAGE..] only those (stages: scripts/test.sh --list)
#   scripts/test.sh --kafka VERSION the core end-to-end scenarios (FileStream every record once,
#                                   poison records with errors.tolerance=all and a DLQ,
#                                   pause/resume, migration from the classic runtime, a topic
#                                   written in transactions: isolation levels and transaction
#                                   markers acknowledged with their records) on a broker
#                                   and worker of that Kafka release (4.2.x, 4.3.x: the broker's
#                                   DLQ is missing there, share.version 1, and sharesink falls
#                                   back to Connect's own DLQ records)
#
# Each stage prints its time; the table at the end is also written to build/test-timings.txt.
source "$(dirname "$0")/lib.sh"
ensure_prerequisites
started=$(date +%s)
cluster() { python3 tests/harness/cluster.py "$@"; }

# The tests' brokers compile with C1 alone: not our code, and they live minutes, restarted often,
# so C2's compiles cost more CPU than they save. The engine's broker tests took the same 90 s
# either way, with 16 instead of 26-29 s of the broker's CPU (3 instead of 6 s to start). The
# benchmarks keep the JVM's default (they measure the brokers' CPU).
export SHARESINK_BROKER_JVM_OPTS="${SHARESINK_BROKER_JVM_OPTS--XX:TieredStopAtLevel=1}"

STAGES=(rust java broker e2e cluster3 older)
# Seconds each stage may take (docs/test-profile.md has the measured ones); together the 45
# minutes of TOTAL_BUDGET, half of CI's limit, so that a run has room to grow.
declare -A STAGE_BUDGET=([rust]=150 [java]=420 [broker]=330 [e2e]=1200 [cluster3]=420 [older]=180)
TOTAL_BUDGET=2700
# The e2e tests mostly wait (on lock timers, outages, workers starting): the stage runs them in
# lanes, pytest-xdist workers with a cluster each (broker, workers, PostgreSQL: a test that
# restarts one disturbs only its lane; tests/e2e/conftest.py), whole modules at a time. The tests
# judged against the machine's load (marked `alone`) then run by themselves, on lane 0's cluster.
E2E_LANES="${SHARESINK_E2E_LANES:-2}"

declare -A STAGE_DOC=(
  [rust]="Rust: format, lint (clippy -D warnings), unit tests"
  [java]="Python lint (ruff); Java: native libraries for every platform, plugin jar and archive, Spotless, unit tests; native library (each loaded on its platform), bench, ops and harness unit tests; the release archives"
  [broker]="one broker (PLAINTEXT + SASL_SSL): the engine's and the Java bindings' broker tests"
  [e2e]="end to end on the same broker: Connect workers, real sinks; the release archives installed"
  [cluster3]="three brokers (replication 3, min ISR 2): engine fault tests, Connect end to end"
  [older]="the core end-to-end scenarios on an older Kafka (SHARESINK_OLDER_KAFKA, default 4.3.1)"
)

CORE_SCENARIOS=(
  "tests/e2e/test_share_01_filestream.py"
  "tests/e2e/test_share_04_poison.py::test_poison_records_go_to_the_dlq_with_tolerance_all[auto-no-topic]"
  "tests/e2e/test_share_04_poison.py::test_poison_records_go_to_the_dlq_with_tolerance_all[connect]"
  "tests/e2e/test_share_06_pause_scale.py::test_pause_stops_writes_and_resume_continues"
  "tests/e2e/test_wiring.py::test_migration_from_the_classic_runtime"
  "tests/e2e/test_share_30_transactions.py::test_each_form_writes_exactly_what_its_isolation_level_reads"
)

# The plugin archive the e2e stages install; built when a stage that needs it runs alone.
ensure_plugin_archive() {
  ls java/target/sharesink-*-plugin.zip >/dev/null 2>&1 || mvn -B -q -DskipTests package
}

# The machine's load while a stage runs: tests/harness/machine.py samples /proc/loadavg and
# /proc/stat every 5 s, and the stage's row in the table sums it up (the 1-minute load's mean and
# maximum, the 1/5/15-minute loads at its end, the CPU the machine used), so a slow run says why.
STAGE=""
STAGE_T0=0
LOAD_PID=""
stage_load_start() {
  STAGE="$1"
  STAGE_T0=$(date +%s)
  rm -f "build/load-$1.samples"
  python3 tests/harness/machine.py record "build/load-$1.samples" &
  LOAD_PID=$!
}
# Stage $1's row of the table ($2: a note, e.g. FAILED), with its budget: a stage over it gets a
# WARN in its row (the run goes on; CI's limit is 90 minutes, the budget half of it).
stage_row() {
  if [[ -n "$LOAD_PID" ]]; then
    kill "$LOAD_PID" 2>/dev/null || true
    wait "$LOAD_PID" 2>/dev/null || true
    LOAD_PID=""
  fi
  local took=$(( $(date +%s) - STAGE_T0 )) budget="${STAGE_BUDGET[$1]:-0}" over=""
  ((budget == 0 || took <= budget)) || over=" WARN over budget"
  printf '%-9s %5d s of %4d s%s%s  %s\n' "$1" "$took" "$budget" "$over" "$2" \
    "$(python3 tests/harness/machine.py summary "build/load-$1.samples")" | tee -a "$timings"
  STAGE=""
}

# What the script started, stopped however it ends: the one-broker cluster of the broker and
# e2e stages (the cluster3 and older stages stop their own); a stage that failed still gets its
# row, with the load it ran under.
on_exit() {
  if [[ -n "$STAGE" ]]; then stage_row "$STAGE" " FAILED"; fi
  if ((ONE_BROKER_UP == 1)); then cluster down >/dev/null 2>&1 || true; fi
  e2e_lanes_down
}

# The one-broker cluster of the broker and e2e stages: started once, reused by the next stage.
ONE_BROKER_UP=0
one_broker_cluster() {
  if ((ONE_BROKER_UP == 0)); then
    log "Local cluster: Kafka 4.4.0 broker (PLAINTEXT + SASL_SSL)"
    trap on_exit EXIT
    cluster up --sasl-ssl
    ONE_BROKER_UP=1
  fi
  # shellcheck disable=SC1091
  source build/cluster/env
  export SHARESINK_BOOTSTRAP="$BOOTSTRAP"
  export SHARESINK_SASL_SSL_BOOTSTRAP="$SASL_SSL_BOOTSTRAP"
  export SHARESINK_CLIENT_PROPERTIES="$ROOT/build/cluster/tls/client-sasl-ssl.properties"
  export SHARESINK_BROKER_RESTART_CMD="cd '$ROOT/tests' && python3 -c 'from harness.cluster import Cluster; Cluster().restart_broker()'"
  export SHARESINK_TRUSTSTORE_JKS="$TRUSTSTORE_JKS" SHARESINK_TRUSTSTORE_P12="$TRUSTSTORE_P12"
  export SHARESINK_TRUSTSTORE_PASSWORD="$TRUSTSTORE_PASSWORD"
  export SHARESINK_SCRAM_USER="$SCRAM_USER" SHARESINK_SCRAM_PASSWORD="$SCRAM_PASSWORD"
  export SHARESINK_KAFKA_CLASSPATH="$KAFKA_CLASSPATH"
  export SHARESINK_PROXIED_BOOTSTRAP="$PROXIED_BOOTSTRAP" SHARESINK_PROXY_CONTROL_PORT="$PROXY_CONTROL_PORT"
  export SHARESINK_HARNESS_DIR="$ROOT/tests"
  # Broker tests fail, never skip, when what they need is missing.
  export SHARESINK_REQUIRE_BROKER=1
}

one_broker_down() {
  if ((ONE_BROKER_UP == 1)); then
    cluster down
    ONE_BROKER_UP=0
  fi
}

stage_rust() {
  cargo fmt --all --check
  cargo clippy --workspace --all-targets --features sharesink-engine/broker-tests -- -D warnings
  cargo test --workspace
}

stage_java() {
  python3 -m ruff check .
  mvn -B -q verify -Dnative.all
  python3 -m pytest -q -s tests/native tests/bench tests/ops tests/unit
  log "Release archives from that build (scripts/release.sh --no-build)"
  bash scripts/release.sh "$(project_version)" --no-build
}

project_version() { sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1; }

# The release archives the e2e stage installs (the java stage makes them).
ensure_release_archives() {
  local v
  v="$(project_version)"
  if [[ ! -f "build/release/$v/sharesink-sharesink-connect-$v.zip" ]]; then
    bash scripts/release.sh "$v"
  fi
}

# The engine's test binaries with the broker tests, built once (`engine_test_bins`), then run
# straight from rust/engine as cargo test runs them (`run_engine_test NAME ARGS`), several side by
# side. Each reports through libtest's JSON events (an unstable libtest format, hence
# RUSTC_BOOTSTRAP=1 for the test binary alone; nothing is compiled with it), which
# scripts/libtest_json.py prints as cargo test would, with each test's time, and appends to
# build/test-times/engine.jsonl for the test profile (scripts/test_profile.py).
ENGINE_TEST_BINS=""
engine_test_bins() {
  ENGINE_TEST_BINS="$(cargo test -p sharesink-engine --features broker-tests --no-run \
    --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["target"]["name"], m["executable"])')"
}
run_engine_test() {
  local name="$1" bin
  shift
  bin="$(awk -v n="$name" '$1 == n {print $2}' <<<"$ENGINE_TEST_BINS")"
  if [[ ! -x "$bin" ]]; then
    echo "no engine test binary '$name' (engine_test_bins first)" >&2
    return 1
  fi
  mkdir -p "$ROOT/build/test-times"
  (cd "$ROOT/rust/engine" && RUSTC_BOOTSTRAP=1 "$bin" --format json -Z unstable-options --report-time "$@") |
    python3 "$ROOT/scripts/libtest_json.py" "$name" "$ROOT/build/test-times/engine.jsonl"
}

stage_broker() {
  ensure_plugin_archive
  one_broker_cluster
  engine_test_bins
  # Every broker test mostly waits on the broker and on lock timers. The Java bindings' broker
  # tests (three JVMs, a test class at a time each: the longest class is a third of them) and
  # the engine's binaries (all but broker_restart, which restarts the broker under everyone)
  # run side by side, the engine's 28 plain tests six at a time, its memory-bound tests one at a
  # time in their own process; each writes its own log, shown at the end.
  log "Broker tests side by side: Java bindings (3 JVMs) and the engine's binaries (logs in build/broker-*.log)"
  mvn -B -q -pl java -Dnative.skip surefire:test -Dgroups=broker -DforkCount=3 -DreuseForks=true \
    -DSHARESINK_BOOTSTRAP="$BOOTSTRAP" -DSHARESINK_REQUIRE_BROKER=1 >build/broker-java.log 2>&1 &
  local pids=($!) names=(java)
  run_engine_test broker --test-threads=6 >build/broker-engine.log 2>&1 &
  pids+=($!) && names+=(engine)
  for t in broker_java broker_sasl_ssl broker_blackhole; do
    run_engine_test "$t" >"build/broker-$t.log" 2>&1 &
    pids+=($!) && names+=("$t")
  done
  run_engine_test broker_memory --test-threads=1 >build/broker-broker_memory.log 2>&1 &
  pids+=($!) && names+=(broker_memory)
  local failed=() i
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed+=("${names[$i]}")
  done
  for i in "${!names[@]}"; do
    local f="build/broker-${names[$i]}.log"
    log "broker tests: ${names[$i]} ($f)"
    tail -n 40 "$f"
  done
  if ((${#failed[@]})); then
    echo "broker tests failed: ${failed[*]} (build/broker-*.log)" >&2
    exit 1
  fi
  log "Engine across a broker restart"
  run_engine_test broker_restart
}

# One cluster stage at a time. Measured alone on this 2-core machine (build/test-timings.txt's
# load columns): the e2e stage keeps 2/3 of a core busy on average, in bursts up to both; the
# three-broker stage nearly both cores (1-minute load 9 on average, up to 15); the older Kafka's
# core scenarios 1.5 cores. Beside the e2e tests either starved them (a CI run with all three at
# once saw a 15-minute load of 14 and failed in both stages), so the stages run one after another.
OLDER_KAFKA="${SHARESINK_OLDER_KAFKA:-4.3.1}"

# Stops the clusters of lanes 1.. (lane 0's is the stage's own, stopped with it).
e2e_lanes_down() {
  local k
  for ((k = 1; k < E2E_LANES; k++)); do
    SHARESINK_CLUSTER_DIR="${SHARESINK_CLUSTER_DIR:-$ROOT/build/cluster}-lane$k" cluster down >/dev/null 2>&1 || true
  done
}

stage_e2e() {
  ensure_plugin_archive
  ensure_release_archives
  one_broker_cluster
  log "End to end in $E2E_LANES lanes, each with its own broker and workers"
  local rc=0
  SHARESINK_REUSE_CLUSTER=1 SHARESINK_KEEP_CLUSTER=1 SHARESINK_PROFILE_STAGE=e2e \
    python3 -m pytest -q -p harness.profile_plugin -n "$E2E_LANES" --dist loadfile \
    -m "not alone" --durations=20 tests/e2e || rc=$?
  e2e_lanes_down
  ((rc == 0)) || exit "$rc"
  log "End to end, the tests judged against the machine's load, alone"
  SHARESINK_REUSE_CLUSTER=1 SHARESINK_KEEP_CLUSTER=1 SHARESINK_PROFILE_STAGE=e2e-alone \
    python3 -m pytest -q -p harness.profile_plugin -m alone tests/e2e
  log "The release archives, installed as their installers install them"
  SHARESINK_REUSE_CLUSTER=1 SHARESINK_PROFILE_STAGE=release \
    python3 -m pytest -q -p harness.profile_plugin tests/release
}

stage_cluster3() {
  ensure_plugin_archive
  one_broker_down
  (
    export SHARESINK_CLUSTER_DIR="$ROOT/build/cluster3"
    trap 'cluster down >/dev/null 2>&1 || true' EXIT
    cluster up --brokers 3
    # shellcheck disable=SC1091
    source build/cluster3/env
    # What the engine's fault tests need besides the bootstrap (the broker stage exports these
    # for its own cluster; this stage may run alone): Kafka's client jars for the Java peer and
    # the harness that kills and restarts brokers.
    export SHARESINK_KAFKA_CLASSPATH="$KAFKA_CLASSPATH" SHARESINK_HARNESS_DIR="$ROOT/tests"
    engine_test_bins
    SHARESINK_BOOTSTRAP="$BOOTSTRAP" run_engine_test broker_cluster --test-threads=1 --nocapture
    SHARESINK_REUSE_CLUSTER=1 SHARESINK_PROFILE_STAGE=cluster3 python3 -m pytest -q -s \
      -p harness.profile_plugin tests/e2e_cluster
    cluster down
  )
}

stage_older() {
  one_broker_down
  bash scripts/test.sh --kafka "$OLDER_KAFKA"
}

if [[ "${1:-}" == "--list" ]]; then
  for s in "${STAGES[@]}"; do printf '%-9s %s\n' "$s" "${STAGE_DOC[$s]}"; done
  exit 0
fi

if [[ "${1:-}" == "--kafka" ]]; then
  version="${2:?usage: scripts/test.sh --kafka VERSION (e.g. 4.3.1)}"
  log "Core scenarios on Kafka $version (broker, tools and worker)"
  export SHARESINK_KAFKA_VERSION="$version" SHARESINK_CLUSTER_DIR="$ROOT/build/cluster-kafka-$version"
  ensure_plugin_archive
  trap 'cluster down >/dev/null 2>&1 || true' EXIT
  cluster up --sasl-ssl
  SHARESINK_REUSE_CLUSTER=1 SHARESINK_PROFILE_STAGE="kafka-$version" \
    python3 -m pytest -q -p harness.profile_plugin "${CORE_SCENARIOS[@]}"
  log "core scenarios on Kafka $version passed in $(( $(date +%s) - started )) s"
  exit 0
fi

selected=("$@")
if ((${#selected[@]} == 0)); then
  selected=("${STAGES[@]}")
fi
for s in "${selected[@]}"; do
  if [[ -z "${STAGE_DOC[$s]:-}" ]]; then
    echo "unknown stage '$s'; stages: ${STAGES[*]}" >&2
    exit 2
  fi
done

mkdir -p build
timings="${SHARESINK_TEST_TIMINGS:-build/test-timings.txt}"
: >"$timings"
# Per-test times of this run only (scripts/test_profile.py)
rm -rf build/test-profile build/test-times
trap on_exit EXIT
for s in "${selected[@]}"; do
  log "stage $s: ${STAGE_DOC[$s]}"
  stage_load_start "$s"
  "stage_$s"
  stage_row "$s" ""
done
one_broker_down

total=$(( $(date +%s) - started ))
printf '%-9s %5d s of %4d s%s\n' total "$total" "$TOTAL_BUDGET" \
  "$( ((total <= TOTAL_BUDGET)) || echo ' WARN over budget')" >>"$timings"
log "stage times"
cat "$timings"
log "all tests passed in $total s (budget $TOTAL_BUDGET s)"

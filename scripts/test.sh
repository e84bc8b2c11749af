#!/usr/bin/env bash
# Runs every test: Rust (format, lint, unit), Java (format, unit), then the engine, the Java
# engine bindings and the Connect plugin against a real Kafka 4.4 broker and Connect worker
# started by tests/harness/cluster.py. Logs: build/cluster/logs/.
#
# scripts/test.sh --kafka VERSION runs the core end-to-end scenarios (FileStream every record
# once, poison records with errors.tolerance=all and a DLQ, pause/resume, migration from the
# classic runtime) on a broker and worker of that Kafka release (4.2.x, 4.3.x: the broker's DLQ
# is missing there, share.version 1, and sharesink falls back to Connect's own DLQ records).
source "$(dirname "$0")/lib.sh"
ensure_prerequisites
started=$(date +%s)
cluster() { python3 tests/harness/cluster.py "$@"; }

CORE_SCENARIOS=(
  "tests/e2e/test_share_01_filestream.py"
  "tests/e2e/test_share_04_poison.py::test_poison_records_go_to_the_dlq_with_tolerance_all[auto-no-topic]"
  "tests/e2e/test_share_04_poison.py::test_poison_records_go_to_the_dlq_with_tolerance_all[connect]"
  "tests/e2e/test_share_06_pause_scale.py::test_pause_stops_writes_and_resume_continues"
  "tests/e2e/test_wiring.py::test_migration_from_the_classic_runtime"
)

if [[ "${1:-}" == "--kafka" ]]; then
  version="${2:?usage: scripts/test.sh --kafka VERSION (e.g. 4.3.1)}"
  log "Core scenarios on Kafka $version (broker, tools and worker)"
  export SHARESINK_KAFKA_VERSION="$version" SHARESINK_CLUSTER_DIR="$ROOT/build/cluster-kafka-$version"
  ls java/target/sharesink-*-plugin.zip >/dev/null 2>&1 || mvn -B -q -DskipTests package
  trap 'cluster down >/dev/null 2>&1 || true' EXIT
  cluster up --sasl-ssl
  SHARESINK_REUSE_CLUSTER=1 python3 -m pytest -q "${CORE_SCENARIOS[@]}"
  log "core scenarios on Kafka $version passed in $(( $(date +%s) - started )) s"
  exit 0
fi

log "Rust: format, lint, unit tests"
cargo fmt --all --check
cargo clippy --workspace --all-targets --features sharesink-engine/broker-tests -- -D warnings
cargo test --workspace

log "Java: native libraries (release; x86_64 and aarch64, glibc 2.17 and musl), plugin jar and archive, format check, unit tests"
mvn -B -q verify -Dnative.all
python3 -m pytest -q -s tests/native tests/bench

log "Local cluster: Kafka 4.4.0 broker (PLAINTEXT + SASL_SSL)"
trap 'cluster down >/dev/null 2>&1 || true' EXIT
cluster up --sasl-ssl
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

log "Engine against the broker (plain, mixed with Java members, SASL_SSL, broker restart, blackhole)"
cargo test -p sharesink-engine --features broker-tests --test broker --test broker_java --test broker_sasl_ssl --test broker_restart --test broker_blackhole

log "Java: engine bindings and sink driver against the broker"
mvn -B -q -pl java -Dnative.skip surefire:test -Dgroups=broker -DSHARESINK_BOOTSTRAP="$BOOTSTRAP" -DSHARESINK_REQUIRE_BROKER=1

log "End to end: Connect workers, real sinks"
SHARESINK_REUSE_CLUSTER=1 python3 -m pytest -q tests/e2e

log "Three brokers (replication 3, min ISR 2): engine fault tests, Connect end to end"
cluster down
export SHARESINK_CLUSTER_DIR="$ROOT/build/cluster3"
cluster up --brokers 3
# shellcheck disable=SC1091
source build/cluster3/env
SHARESINK_BOOTSTRAP="$BOOTSTRAP" cargo test -p sharesink-engine --features broker-tests \
  --test broker_cluster -- --test-threads=1 --nocapture
python3 -m pytest -q -s tests/e2e_cluster
cluster down

# One older release's core scenarios (the full suite runs on 4.4.0 above).
unset SHARESINK_CLUSTER_DIR
bash scripts/test.sh --kafka "${SHARESINK_OLDER_KAFKA:-4.3.1}"

log "all tests passed in $(( $(date +%s) - started )) s"

#!/usr/bin/env bash
# The sharesink demo: Debezium's JDBC sink, unmodified, on a Kafka share group with 12 tasks on
# a 3-partition topic; 1 M records into PostgreSQL with a progress display, then throughput and
# a completeness check. The cluster (build/cluster) is left running; `scripts/demo.sh --down`
# stops it. Other options go to tests/demo.py (--records N, --tasks N, --partitions N, --stop).
source "$(dirname "$0")/lib.sh"

if [[ "${1:-}" == "--down" ]]; then
  python3 tests/harness/cluster.py down
  echo "demo cluster stopped"
  exit 0
fi

ensure_prerequisites
if ! ls java/target/sharesink-*-plugin.zip >/dev/null 2>&1; then
  log "building the sharesink plugin archive (mvn -q -DskipTests package)"
  mvn -B -q -DskipTests package
fi
exec python3 tests/demo.py "$@"

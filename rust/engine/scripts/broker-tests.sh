#!/usr/bin/env bash
# Runs the engine's broker tests against a throw-away local cluster started by the harness:
# the plain broker tests, the SASL_SSL tests, the broker-restart fault test and the tests that
# drive Kafka's Java clients next to the engine (javac/java on the PATH).
#
#   rust/engine/scripts/broker-tests.sh            # all four groups
#   rust/engine/scripts/broker-tests.sh broker     # one group: broker | sasl | restart | java
#
# Ports and state are kept apart from the default cluster (SHARESINK_PORT_BASE 42000,
# SHARESINK_CLUSTER_DIR /tmp/engine-broker-tests unless set); the cluster is stopped on exit.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../../.." && pwd)
export SHARESINK_PORT_BASE=${SHARESINK_PORT_BASE:-42000}
export SHARESINK_CLUSTER_DIR=${SHARESINK_CLUSTER_DIR:-/tmp/engine-broker-tests}
groups=${*:-broker sasl restart java}

cd "$repo"
python3 tests/harness/cluster.py up --sasl-ssl
trap 'python3 tests/harness/cluster.py down' EXIT

export SHARESINK_BOOTSTRAP=127.0.0.1:$((SHARESINK_PORT_BASE + 92))
export SHARESINK_SASL_SSL_BOOTSTRAP=127.0.0.1:$((SHARESINK_PORT_BASE + 94))
export SHARESINK_CLIENT_PROPERTIES=$SHARESINK_CLUSTER_DIR/tls/client-sasl-ssl.properties
# kafka-clients for the Java share consumers (the harness's Kafka lib directory).
SHARESINK_KAFKA_CLASSPATH=$(. "$SHARESINK_CLUSTER_DIR/env" && echo "$KAFKA_CLASSPATH")
export SHARESINK_KAFKA_CLASSPATH
export SHARESINK_BROKER_RESTART_CMD="cd '$repo/tests' && python3 -c 'from harness.cluster import Cluster; Cluster().restart_broker()'"

for group in $groups; do
  case $group in
    broker)  cargo test -p sharesink-engine --features broker-tests --test broker ;;
    sasl)    cargo test -p sharesink-engine --features broker-tests --test broker_sasl_ssl ;;
    restart) cargo test -p sharesink-engine --features broker-tests --test broker_restart ;;
    java)    cargo test -p sharesink-engine --features broker-tests --test broker_java ;;
    *) echo "unknown test group $group (broker | sasl | restart | java)" >&2; exit 2 ;;
  esac
done

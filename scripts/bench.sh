#!/usr/bin/env bash
# sharesink benchmarks, side by side on one local broker in one run (bench/README.md):
#   1. share consumers: the engine's sharesink-bench vs Java KafkaShareConsumer
#      (ShareConsumerPerformance) vs krafka's ShareConsumer vs franz-go's share consumer vs the
#      classic consumer (ceiling);
#   2. the JNI path (NativeEngineBench) vs the engine alone;
#   3. Connect end to end: sharesink vs the classic sink runtime with the same legacy sinks.
# Writes docs/benchmarks/RESULTS.md + results.png and target/bench/results.json.
#
#   scripts/bench.sh [--quick] [--parts consumers,jni,connect] [--scenarios a,b,c,d] [--brokers N] [--keep-cluster]
#
# Cluster: SHARESINK_CLUSTER_DIR (default build/bench-cluster), SHARESINK_PORT_BASE (default
# 29500); stopped at the end unless --keep-cluster.
source "$(dirname "$0")/lib.sh"
ensure_prerequisites

OUT="$ROOT/target/bench"
mkdir -p "$OUT"

log "building the engine's bench (release) and the krafka peer (bench/peers/krafka)"
cargo build --release -q -p sharesink-testkit --bin sharesink-bench
cargo build --release -q --manifest-path bench/peers/krafka/Cargo.toml

# The franz-go peer (bench/peers/franz, its own Go module) next to the krafka binary. Optional:
# without Go, or when the build fails, the run goes on and reports the franz keys as null.
FRANZ_BIN="$ROOT/rust/target/release/bench-franz-members"
rm -f "$FRANZ_BIN"   # never measure a stale binary
unset BENCH_FRANZ_MISSING
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
if [[ ! -x "$GO" ]]; then
  export BENCH_FRANZ_MISSING="no go toolchain (PATH or /usr/local/go/bin/go) to build bench/peers/franz"
  echo "$BENCH_FRANZ_MISSING" >&2
else
  log "building the franz-go peer (bench/peers/franz) with $("$GO" version)"
  if ! "$GO" -C bench/peers/franz build -buildvcs=false -o "$FRANZ_BIN" . 2>"$OUT/franz-build.log"; then
    export BENCH_FRANZ_MISSING="bench/peers/franz did not build (target/bench/franz-build.log): $(head -c 300 "$OUT/franz-build.log" | tr '\n' ' ')"
    echo "$BENCH_FRANZ_MISSING" >&2
  fi
fi

# Always built (cargo and Maven redo only what changed, seconds): an archive left in java/target
# by an earlier build carried an older native library and driver into two full runs.
if [[ -z "${SHARESINK_PLUGIN_ARCHIVE:-}" ]]; then
  log "building the sharesink plugin archive (mvn -q package)"
  mvn -B -q -DskipTests package
fi
ARCHIVE="${SHARESINK_PLUGIN_ARCHIVE:-$(ls -t java/target/sharesink-*-plugin.zip | head -1)}"
# a private copy: a rebuild by someone else during the run must not change what the worker loads
cp "$ARCHIVE" "$OUT/sharesink-plugin.zip"
ARCHIVE="$OUT/sharesink-plugin.zip"
export SHARESINK_PLUGIN_ARCHIVE="$ARCHIVE"

log "resolving the Kafka 4.4.0 jars and the connector plugins (harness cache)"
RESOLVED="$(python3 tests/harness/cluster.py resolve)"
KAFKA_LIB="${RESOLVED%%$'\n'*}"

# The JNI bench: the JNI engineer's NativeEngineBench (java/src/test), compiled here against the
# plugin jar (which carries the native library) and the Kafka jars, into target/bench/jni.
log "compiling the JNI bench (NativeEngineBench) against $ARCHIVE"
JNI_DIR="$OUT/jni"
rm -rf "$JNI_DIR" && mkdir -p "$JNI_DIR/plugin" "$JNI_DIR/classes"
unzip -q -o "$ARCHIVE" -d "$JNI_DIR/plugin"
PLUGIN_JARS="$(find "$JNI_DIR/plugin" -name '*.jar' | tr '\n' ':')"
JUNIT_JARS="$(find "$HOME/.m2/repository/org/junit/jupiter/junit-jupiter-api" \
  "$HOME/.m2/repository/org/opentest4j/opentest4j" \
  "$HOME/.m2/repository/org/apiguardian/apiguardian-api" \
  "$HOME/.m2/repository/org/junit/platform/junit-platform-commons" -name '*.jar' 2>/dev/null | sort | tr '\n' ':')"
BENCH_SRC="java/src/test/java/io/sharesink/engine/NativeEngineBench.java"
SUPPORT_SRC="java/src/test/java/io/sharesink/engine/kafka/BrokerTestSupport.java"
unset BENCH_JNI_CLASSPATH
if [[ -f "$BENCH_SRC" && -f "$SUPPORT_SRC" ]]; then
  CP="${PLUGIN_JARS}${JUNIT_JARS}${KAFKA_LIB}/*"
  if javac -nowarn -d "$JNI_DIR/classes" -cp "$CP" "$BENCH_SRC" "$SUPPORT_SRC" 2>"$JNI_DIR/javac.log"; then
    export BENCH_JNI_CLASSPATH="$JNI_DIR/classes:$CP"
  else
    export BENCH_JNI_MISSING="NativeEngineBench did not compile (target/bench/jni/javac.log): $(head -c 300 "$JNI_DIR/javac.log" | tr '\n' ' ')"
    echo "$BENCH_JNI_MISSING" >&2
  fi
else
  export BENCH_JNI_MISSING="no $BENCH_SRC in this tree"
fi

python3 -c 'import matplotlib' 2>/dev/null || python3 -m pip install -q matplotlib ||
  echo "matplotlib unavailable: the chart falls back to plain bars" >&2

log "running the benchmarks"
exec python3 bench/run.py "$@"

package io.sharesink.connect.sink;

import io.sharesink.engine.EngineMetrics;
import io.sharesink.engine.ShareConsumerEngine;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.PluginMetrics;

/**
 * The share-consumer engine's own counters as task metrics (JMX): what the member asks of the
 * broker (fetch and acknowledgement round trips, their latency) and how its share session fares. An
 * operator reads from these whether a task waits on the broker or on its sink. Each read takes one
 * snapshot of the engine; once the engine is closed the last snapshot is kept.
 */
final class EngineGauges {

  private final ShareConsumerEngine engine;
  private volatile EngineMetrics last;

  private EngineGauges(ShareConsumerEngine engine) {
    this.engine = engine;
  }

  /**
   * Registers the gauges of {@code engine} under this task's plugin metrics; returns their names.
   */
  static List<MetricName> register(
      ShareConsumerEngine engine, PluginMetrics pluginMetrics, Map<String, String> tags) {
    EngineGauges engineGauges = new EngineGauges(engine);
    Map<String, ToDoubleFunction<EngineMetrics>> values = new LinkedHashMap<>();
    values.put("share-engine-records-fetched-total", EngineMetrics::recordsFetched);
    values.put("share-engine-bytes-fetched-total", EngineMetrics::bytesFetched);
    values.put("share-engine-fetch-requests-total", EngineMetrics::fetchRequests);
    values.put("share-engine-fetch-requests-empty-total", EngineMetrics::emptyFetches);
    values.put("share-engine-fetch-latency-avg-ms", EngineMetrics::fetchLatencyAvgMs);
    // The engine keeps lifetime averages; average x count is the total time, from which
    // Prometheus computes the average of any range (rate of the total / rate of the count).
    values.put("share-engine-fetch-time-ms-total", m -> m.fetchLatencyAvgMs() * m.fetchRequests());
    values.put("share-engine-ack-requests-total", EngineMetrics::ackRequests);
    values.put("share-engine-ack-latency-avg-ms", EngineMetrics::ackLatencyAvgMs);
    values.put("share-engine-ack-time-ms-total", m -> m.ackLatencyAvgMs() * m.ackRequests());
    values.put("share-engine-ack-errors-total", EngineMetrics::ackErrors);
    values.put("share-engine-records-buffered", EngineMetrics::recordsBuffered);
    values.put("share-engine-memory-bytes", EngineMetrics::memoryBytes);
    values.put(
        "share-engine-records-released-memory-total", EngineMetrics::recordsReleasedForMemory);
    values.put("share-engine-session-resets-total", EngineMetrics::sessionResets);
    values.put("share-engine-rejoins-total", EngineMetrics::rejoins);
    Map<String, Supplier<Number>> gauges = new LinkedHashMap<>();
    values.forEach(
        (name, value) ->
            gauges.put(
                name,
                () -> {
                  EngineMetrics m = engineGauges.snapshot();
                  return m == null ? 0.0 : value.applyAsDouble(m);
                }));
    List<MetricName> names = SinkDriverMetrics.addGauges(pluginMetrics, gauges, tags);
    if (engine.offHeapBytes().isPresent()) {
      MetricName offHeap =
          pluginMetrics.metricName(
              "share-engine-off-heap-bytes",
              "bytes the share-consumer engine holds outside the Java heap, all tasks of this"
                  + " worker together",
              new LinkedHashMap<>(tags));
      pluginMetrics.addMetric(offHeap, (Gauge<Long>) (cfg, now) -> engine.offHeapBytes().orElse(0));
      names.add(offHeap);
    }
    return names;
  }

  private EngineMetrics snapshot() {
    try {
      last = engine.metrics();
    } catch (RuntimeException closed) {
      // A closed engine refuses; its final figures stay readable until the task's metrics go.
    }
    return last;
  }
}

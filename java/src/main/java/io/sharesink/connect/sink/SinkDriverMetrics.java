package io.sharesink.connect.sink;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.PluginMetrics;

/**
 * Counters of one driver, safe to read from any thread (metrics reporters). Latencies are kept as
 * count, total and max; averages are derived.
 */
public final class SinkDriverMetrics {

  /** A point-in-time copy. */
  public record Snapshot(
      long recordsPolled,
      long recordsPut,
      long recordsAccepted,
      long recordsReleased,
      long recordsRejected,
      long recordsRenewed,
      long redeliveries,
      long duplicatesIgnored,
      long putRetries,
      long taskRestarts,
      long puts,
      double putLatencyAvgMs,
      double putLatencyMaxMs,
      long commitCycles,
      double commitLatencyAvgMs,
      double commitLatencyMaxMs,
      long recordsInFlight,
      long recordsLockExpired,
      long recordsReleasedStuck,
      long partitionReopens) {

    /** The totals of a task's life in one line, for the log at stop: where its time went. */
    public String totals() {
      return recordsPolled
          + " records polled, "
          + recordsPut
          + " put in "
          + puts
          + " puts (avg "
          + String.format("%.2f", putLatencyAvgMs)
          + " ms), "
          + commitCycles
          + " commit cycles (avg "
          + String.format("%.2f", commitLatencyAvgMs)
          + " ms), "
          + recordsAccepted
          + " accepted, "
          + recordsReleased
          + " released, "
          + recordsRejected
          + " rejected";
    }
  }

  final AtomicLong recordsPolled = new AtomicLong();
  final AtomicLong recordsPut = new AtomicLong();
  final AtomicLong recordsAccepted = new AtomicLong();
  final AtomicLong recordsReleased = new AtomicLong();
  final AtomicLong recordsRejected = new AtomicLong();
  final AtomicLong recordsRenewed = new AtomicLong();

  /** Held records forgotten because their lock ran out before they could be acknowledged. */
  final AtomicLong recordsLockExpired = new AtomicLong();

  /**
   * Held records released because the task was stuck (one call, or one failing put, longer than
   * share.task.stuck.timeout.ms).
   */
  final AtomicLong recordsReleasedStuck = new AtomicLong();

  /** Partitions closed and reopened to put redelivered records below what the task was given. */
  final AtomicLong partitionReopens = new AtomicLong();

  final AtomicLong redeliveries = new AtomicLong();
  final AtomicLong duplicatesIgnored = new AtomicLong();
  final AtomicLong putRetries = new AtomicLong();

  /** New legacy task instances started in place of a failed one (share.task.restart.*). */
  final AtomicLong taskRestarts = new AtomicLong();

  final AtomicLong recordsInFlight = new AtomicLong();
  private final Latency put = new Latency();
  private final Latency commit = new Latency();

  private static final class Latency {
    final AtomicLong count = new AtomicLong();
    final AtomicLong totalNanos = new AtomicLong();
    final AtomicLong maxNanos = new AtomicLong();

    void record(long nanos) {
      count.incrementAndGet();
      totalNanos.addAndGet(nanos);
      maxNanos.accumulateAndGet(nanos, Math::max);
    }

    double avgMs() {
      long n = count.get();
      return n == 0 ? 0 : totalNanos.get() / 1e6 / n;
    }

    double maxMs() {
      return maxNanos.get() / 1e6;
    }
  }

  void recordPut(long nanos) {
    put.record(nanos);
  }

  void recordCommit(long nanos) {
    commit.record(nanos);
  }

  /**
   * Publishes these counters as gauges through the host context's {@code pluginMetrics()}
   * (KIP-877): a source-hosted task has no sink-task metrics of its own. Names are kebab-case,
   * tagged with {@code tags} (the worker adds connector and task tags itself).
   */
  public List<MetricName> registerWith(PluginMetrics pluginMetrics, Map<String, String> tags) {
    Map<String, Supplier<Number>> gauges = new LinkedHashMap<>();
    gauges.put("share-records-polled-total", recordsPolled::get);
    gauges.put("share-records-put-total", recordsPut::get);
    gauges.put("share-records-accepted-total", recordsAccepted::get);
    gauges.put("share-records-released-total", recordsReleased::get);
    gauges.put("share-records-rejected-total", recordsRejected::get);
    gauges.put("share-records-renewed-total", recordsRenewed::get);
    gauges.put("share-records-lock-expired-total", recordsLockExpired::get);
    gauges.put("share-records-released-stuck-total", recordsReleasedStuck::get);
    gauges.put("share-partition-reopens-total", partitionReopens::get);
    gauges.put("share-redeliveries-total", redeliveries::get);
    gauges.put("share-put-retries-total", putRetries::get);
    gauges.put("share-task-restarts-total", taskRestarts::get);
    gauges.put("share-records-in-flight", recordsInFlight::get);
    gauges.put("share-put-latency-avg-ms", put::avgMs);
    gauges.put("share-put-latency-max-ms", put::maxMs);
    gauges.put("share-commit-latency-avg-ms", commit::avgMs);
    gauges.put("share-commit-latency-max-ms", commit::maxMs);
    return addGauges(pluginMetrics, gauges, tags);
  }

  /** Registers each named gauge (description: its name in words); returns their names. */
  static List<MetricName> addGauges(
      PluginMetrics pluginMetrics, Map<String, Supplier<Number>> gauges, Map<String, String> tags) {
    LinkedHashMap<String, String> metricTags = new LinkedHashMap<>(tags);
    List<MetricName> names = new ArrayList<>();
    gauges.forEach(
        (name, value) -> {
          MetricName metricName =
              pluginMetrics.metricName(name, name.replace('-', ' '), metricTags);
          pluginMetrics.addMetric(metricName, (Gauge<Number>) (config, now) -> value.get());
          names.add(metricName);
        });
    return names;
  }

  public Snapshot snapshot() {
    return new Snapshot(
        recordsPolled.get(),
        recordsPut.get(),
        recordsAccepted.get(),
        recordsReleased.get(),
        recordsRejected.get(),
        recordsRenewed.get(),
        redeliveries.get(),
        duplicatesIgnored.get(),
        putRetries.get(),
        taskRestarts.get(),
        put.count.get(),
        put.avgMs(),
        put.maxMs(),
        commit.count.get(),
        commit.avgMs(),
        commit.maxMs(),
        recordsInFlight.get(),
        recordsLockExpired.get(),
        recordsReleasedStuck.get(),
        partitionReopens.get());
  }
}

package io.sharesink.connect.sink;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Avg;
import org.apache.kafka.common.metrics.stats.CumulativeCount;
import org.apache.kafka.common.metrics.stats.CumulativeSum;
import org.apache.kafka.common.metrics.stats.Max;
import org.apache.kafka.common.utils.Time;

/**
 * Counters of one driver, safe to read from any thread (metrics reporters). A latency is published
 * twice: as the average and maximum of a sliding window (Kafka's sampled stats, 2 samples of 30 s,
 * on the task's clock), so a regression shows within a minute and a spike ages out; and as a total
 * time and a count ({@code share-put-time-ms-total}, {@code share-puts-total}), from which
 * Prometheus computes the average over any range. The same figures also go to Connect's sink-task
 * metrics ({@link ConnectSinkTaskMetrics}) once {@link #publishSinkTaskMetrics} is called.
 */
public final class SinkDriverMetrics implements AutoCloseable {

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
          + " puts (recent avg "
          + String.format("%.2f", putLatencyAvgMs)
          + " ms), "
          + commitCycles
          + " commit cycles (recent avg "
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
  private final Time time;
  private final Latency put;
  private final Latency commit;
  private volatile ConnectSinkTaskMetrics sinkTask;

  public SinkDriverMetrics() {
    this(Time.SYSTEM);
  }

  public SinkDriverMetrics(Time time) {
    this.time = time;
    // Holds only the windows (no reporter, no thread): the gauges below read them.
    Metrics windows = new Metrics(new MetricConfig(), List.of(), time);
    this.put = new Latency(windows, "put");
    this.commit = new Latency(windows, "commit");
  }

  /** One latency: windowed average and max, lifetime total and count; all in ms. */
  private static final class Latency {
    private final Sensor sensor;
    private final Metrics windows;
    private final MetricName avg;
    private final MetricName max;
    private final MetricName total;
    private final MetricName count;

    Latency(Metrics windows, String what) {
      this.windows = windows;
      sensor = windows.sensor(what);
      avg = windows.metricName(what + "-avg", "window");
      max = windows.metricName(what + "-max", "window");
      total = windows.metricName(what + "-total", "window");
      count = windows.metricName(what + "-count", "window");
      sensor.add(avg, new Avg());
      sensor.add(max, new Max());
      sensor.add(total, new CumulativeSum());
      sensor.add(count, new CumulativeCount());
    }

    void record(double ms, long nowMs) {
      sensor.record(ms, nowMs);
    }

    private double read(MetricName name) {
      double v = (Double) windows.metric(name).metricValue();
      return Double.isNaN(v) || Double.isInfinite(v) ? 0 : v;
    }

    /** Average of the window; 0 when nothing happened in it. */
    double avgMs() {
      return read(avg);
    }

    /** Longest of the window; 0 when nothing happened in it. */
    double maxMs() {
      return read(max);
    }

    double totalMs() {
      return read(total);
    }

    long count() {
      return (long) read(count);
    }
  }

  void recordPut(long nanos) {
    double ms = nanos / 1e6;
    put.record(ms, time.milliseconds());
    ConnectSinkTaskMetrics group = sinkTask;
    if (group != null) {
      group.putTook(ms);
    }
  }

  /**
   * One commit cycle took {@code nanos}; {@code completed}: its preCommit returned (else it threw).
   */
  void recordCommit(long nanos, boolean completed) {
    commit.record(nanos / 1e6, time.milliseconds());
    ConnectSinkTaskMetrics group = sinkTask;
    if (group != null) {
      group.committed(commit.count(), completed);
    }
  }

  /** Records polled from the share group. */
  void polled(long records) {
    recordsPolled.addAndGet(records);
    ConnectSinkTaskMetrics group = sinkTask;
    if (group != null) {
      group.read(records);
    }
  }

  /** Records a put handed to the legacy task (and that it took). */
  void put(long records) {
    recordsPut.addAndGet(records);
    ConnectSinkTaskMetrics group = sinkTask;
    if (group != null) {
      group.sent(records);
    }
  }

  /** Records held now. */
  void inFlight(long records) {
    recordsInFlight.set(records);
    ConnectSinkTaskMetrics group = sinkTask;
    if (group != null) {
      group.held(records);
    }
  }

  /** Partitions open in the legacy task now. */
  void partitions(int count) {
    ConnectSinkTaskMetrics group = sinkTask;
    if (group != null) {
      group.partitions(count);
    }
  }

  /**
   * Also publishes these figures as Connect's sink-task metrics of {@code connector} task {@code
   * task}; false when that MBean is taken ({@link ConnectSinkTaskMetrics#publish}).
   */
  public boolean publishSinkTaskMetrics(String connector, int task) {
    Optional<ConnectSinkTaskMetrics> group = ConnectSinkTaskMetrics.publish(connector, task, time);
    group.ifPresent(g -> sinkTask = g);
    return group.isPresent();
  }

  /** Connect's sink-task metrics of this driver, when published; for tests. */
  ConnectSinkTaskMetrics sinkTaskMetrics() {
    return sinkTask;
  }

  /** Unregisters the sink-task metrics; the plugin metrics stay readable until the task's go. */
  @Override
  public void close() {
    ConnectSinkTaskMetrics group = sinkTask;
    sinkTask = null;
    if (group != null) {
      group.close();
    }
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
    gauges.put("share-put-time-ms-total", put::totalMs);
    gauges.put("share-puts-total", put::count);
    gauges.put("share-commit-latency-avg-ms", commit::avgMs);
    gauges.put("share-commit-latency-max-ms", commit::maxMs);
    gauges.put("share-commit-time-ms-total", commit::totalMs);
    gauges.put("share-commit-cycles-total", commit::count);
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
        put.count(),
        put.avgMs(),
        put.maxMs(),
        commit.count(),
        commit.avgMs(),
        commit.maxMs(),
        recordsInFlight.get(),
        recordsLockExpired.get(),
        recordsReleasedStuck.get(),
        partitionReopens.get());
  }
}

package io.sharesink.connect.sink;

import java.lang.management.ManagementFactory;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Avg;
import org.apache.kafka.common.metrics.stats.CumulativeSum;
import org.apache.kafka.common.metrics.stats.Max;
import org.apache.kafka.common.metrics.stats.Rate;
import org.apache.kafka.common.metrics.stats.Value;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The metrics a classic sink task has, under the names and MBean a Connect 4.x worker gives them
 * ({@code kafka.connect:type=sink-task-metrics,connector=<c>,task=<t>}, the stats of Connect's
 * {@code WorkerSinkTask.SinkTaskMetricsGroup}), so dashboards and alerts written for sink tasks see
 * a share-mode task too. The runtime runs our task as a source task: it registers {@code
 * source-task-metrics}, never {@code sink-task-metrics}, for it.
 *
 * <p>Published through a JMX reporter of our own (the worker's {@code metric.reporters} are not
 * reachable from a plugin): never over an MBean someone else registered (a classic sink task of the
 * same name and id in this JVM), and at most one instance per connector and task (a task started
 * again before the old instance closed keeps none until then). Windows are Kafka's defaults (2
 * samples of 30 s, as {@code metrics.sample.window.ms} and {@code metrics.num.samples}), on the
 * task's clock.
 *
 * <p>What each means here: read = records polled from the share group; send = records put to the
 * legacy task; active = records held (polled, not yet acknowledged); partition-count = partitions
 * opened in the legacy task; offset-commit-seq-no = commit cycles run; completion = commit cycles
 * whose preCommit returned; skip = late completions Connect ignores, never so here (commits are
 * synchronous), so it stays 0.
 */
final class ConnectSinkTaskMetrics implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ConnectSinkTaskMetrics.class);

  static final String DOMAIN = "kafka.connect";
  static final String GROUP = "sink-task-metrics";

  /** Live instances by MBean name: one per connector and task in this JVM. */
  private static final ConcurrentMap<String, ConnectSinkTaskMetrics> LIVE =
      new ConcurrentHashMap<>();

  private final String mbean;
  private final Metrics metrics;
  private final Sensor read;
  private final Sensor send;
  private final Sensor active;
  private final Sensor partitions;
  private final Sensor commitSeq;
  private final Sensor commitCompleted;
  private final Sensor putBatch;

  private ConnectSinkTaskMetrics(String mbean, String connector, int task, Time time) {
    this.mbean = mbean;
    JmxReporter reporter = new JmxReporter();
    reporter.configure(Map.of(JmxReporter.INCLUDE_CONFIG, java.util.regex.Pattern.quote(mbean)));
    this.metrics =
        new Metrics(new MetricConfig(), List.of(reporter), time, new KafkaMetricsContext(DOMAIN));
    Map<String, String> tags = new LinkedHashMap<>();
    tags.put("connector", connector);
    tags.put("task", Integer.toString(task));
    read = metrics.sensor("sink-record-read");
    read.add(name("sink-record-read-rate", "records read per second", tags), new Rate());
    read.add(name("sink-record-read-total", "records read", tags), new CumulativeSum());
    send = metrics.sensor("sink-record-send");
    send.add(
        name("sink-record-send-rate", "records sent to the task per second", tags), new Rate());
    send.add(name("sink-record-send-total", "records sent to the task", tags), new CumulativeSum());
    active = metrics.sensor("sink-record-active-count");
    active.add(
        name("sink-record-active-count", "records held, not yet committed", tags), new Value());
    active.add(name("sink-record-active-count-max", "most records held", tags), new Max());
    active.add(name("sink-record-active-count-avg", "average records held", tags), new Avg());
    partitions = metrics.sensor("partition-count");
    partitions.add(name("partition-count", "partitions opened in the task", tags), new Value());
    commitSeq = metrics.sensor("offset-commit-seq-no");
    commitSeq.add(name("offset-commit-seq-no", "commit cycles run", tags), new Value());
    commitCompleted = metrics.sensor("offset-commit-completion");
    commitCompleted.add(
        name("offset-commit-completion-rate", "completed commits per second", tags), new Rate());
    commitCompleted.add(
        name("offset-commit-completion-total", "completed commits", tags), new CumulativeSum());
    Sensor skip = metrics.sensor("offset-commit-skip");
    skip.add(name("offset-commit-skip-rate", "skipped commits per second", tags), new Rate());
    skip.add(name("offset-commit-skip-total", "skipped commits", tags), new CumulativeSum());
    putBatch = metrics.sensor("put-batch-time");
    putBatch.add(name("put-batch-max-time-ms", "longest put", tags), new Max());
    putBatch.add(name("put-batch-avg-time-ms", "average put", tags), new Avg());
  }

  private MetricName name(String name, String description, Map<String, String> tags) {
    return metrics.metricName(name, GROUP, description, tags);
  }

  /** The MBean name a Connect worker gives a sink task's metrics. */
  static String mbeanName(String connector, int task) {
    return DOMAIN + ":type=" + GROUP + ",connector=" + jmxValue(connector) + ",task=" + task;
  }

  /** A value as Kafka's JMX reporter writes it into an MBean name: quoted when it must be. */
  static String jmxValue(String value) {
    return value.matches("[\\w-%\\. \t]*") ? value : ObjectName.quote(value);
  }

  /**
   * Registers the group for {@code connector} task {@code task}, or empty when its MBean is taken
   * (by another registrant, or by a live instance of ours).
   */
  static Optional<ConnectSinkTaskMetrics> publish(String connector, int task, Time time) {
    String mbean = mbeanName(connector, task);
    try {
      if (ManagementFactory.getPlatformMBeanServer().isRegistered(new ObjectName(mbean))
          && !LIVE.containsKey(mbean)) {
        log.warn(
            "{} is registered by someone else (a classic sink task of the same name?): sharesink"
                + " does not publish its sink-task metrics there",
            mbean);
        return Optional.empty();
      }
    } catch (MalformedObjectNameException e) {
      log.warn("cannot publish sink-task metrics as {}: {}", mbean, e.getMessage());
      return Optional.empty();
    }
    ConnectSinkTaskMetrics[] made = new ConnectSinkTaskMetrics[1];
    LIVE.computeIfAbsent(
        mbean, k -> made[0] = new ConnectSinkTaskMetrics(mbean, connector, task, time));
    if (made[0] == null) {
      log.info("{} is still published by a previous instance of the task: not again", mbean);
      return Optional.empty();
    }
    return Optional.of(made[0]);
  }

  void read(long records) {
    read.record(records);
  }

  void sent(long records) {
    send.record(records);
  }

  void held(long records) {
    active.record(records);
  }

  void partitions(int count) {
    partitions.record(count);
  }

  void putTook(double ms) {
    putBatch.record(ms);
  }

  void committed(long cycles, boolean completed) {
    commitSeq.record(cycles);
    if (completed) {
      commitCompleted.record(1);
    }
  }

  /** A metric's value, for tests. */
  Object value(String name) {
    return metrics.metrics().entrySet().stream()
        .filter(e -> e.getKey().name().equals(name))
        .map(e -> e.getValue().metricValue())
        .findFirst()
        .orElse(null);
  }

  @Override
  public void close() {
    if (LIVE.remove(mbean, this)) {
      metrics.close();
    }
  }
}

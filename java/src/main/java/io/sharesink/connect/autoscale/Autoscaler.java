package io.sharesink.connect.autoscale;

import io.sharesink.connect.admin.ShareGroupAdmin;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.connector.ConnectorContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs {@link AutoscalePolicy} for one connector: every sampling interval, on a daemon thread of
 * its own, it reads the share group's lag and the end offsets of its partitions, and asks Connect
 * for new task configs ({@link ConnectorContext#requestTaskReconfiguration()}) when the policy
 * changes the count; the connector's {@code taskConfigs} then returns {@link #tasks(int)} configs.
 * Each change is logged at INFO with the figures it was decided on; the decided count is the
 * connector-level gauge {@code autoscale-tasks}.
 */
public final class Autoscaler implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Autoscaler.class);

  private final String connector;
  private final AutoscalePolicy policy;
  private final Supplier<GroupReading> readings;
  private final ConnectorContext context;
  private final ScheduledExecutorService thread;
  private String lastHold = "";

  Autoscaler(
      String connector,
      AutoscalePolicy policy,
      Supplier<GroupReading> readings,
      ConnectorContext context,
      boolean startThread,
      long intervalMs) {
    this.connector = connector;
    this.policy = policy;
    this.readings = readings;
    this.context = context;
    if (!startThread) {
      thread = null;
      return;
    }
    thread =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "sharesink-autoscale-" + connector);
              t.setDaemon(true);
              return t;
            });
    thread.scheduleWithFixedDelay(this::tick, 0, intervalMs, TimeUnit.MILLISECONDS);
  }

  /**
   * The autoscaler of a connector whose configuration is {@code props}, when {@value
   * TaskAutoscale#ENABLE_CONFIG} is true; empty otherwise (then nothing is read, started or
   * changed). It starts with the share group's members, within the bounds (so a connector that
   * restarts while its tasks run does not reconfigure them), else with the minimum. {@code
   * readCommitted}: the group reads committed records only, so its lags and ends count to the last
   * stable offsets (a transaction still open is no backlog).
   */
  public static Optional<Autoscaler> startIfEnabled(
      Map<String, String> props,
      ShareGroupAdmin admin,
      String groupId,
      boolean readCommitted,
      ConnectorContext context,
      PluginMetrics metrics) {
    if (!TaskAutoscale.enabled(props)) {
      return Optional.empty();
    }
    String name = props.get("name");
    TaskAutoscale.Settings settings = TaskAutoscale.Settings.of(props);
    if (TaskAutoscale.problems(props)
        .containsKey(TaskAutoscale.RECONFIGURE_MIN_INTERVAL_MS_CONFIG)) {
      // stored before the floor existed: validation refuses it now
      log.warn(
          "Connector {}: {}={} is below the floor of {} ms (every change rebalances the Connect"
              + " cluster); the autoscaler changes the tasks at most once per {} ms",
          name,
          TaskAutoscale.RECONFIGURE_MIN_INTERVAL_MS_CONFIG,
          props.get(TaskAutoscale.RECONFIGURE_MIN_INTERVAL_MS_CONFIG),
          TaskAutoscale.RECONFIGURE_MIN_INTERVAL_MS_FLOOR,
          settings.reconfigureMinIntervalMs());
    }
    int maxTasks = maxTasks(props);
    int members = 0;
    try {
      members = admin.shareGroupMemberCount(groupId);
    } catch (RuntimeException e) {
      log.debug("Share group {}: members not read: {}", groupId, e.getMessage());
    }
    AutoscalePolicy policy =
        new AutoscalePolicy(settings, maxTasks, members > 0 ? members : 1, Time.SYSTEM);
    log.info(
        "Connector {}: autoscaling its tasks between {} and {} (tasks.max); starting with {} (the"
            + " share group has {} members)",
        name,
        Math.min(settings.minTasks(), maxTasks),
        maxTasks,
        policy.tasks(),
        members);
    Autoscaler autoscaler =
        new Autoscaler(
            name,
            policy,
            () -> read(admin, groupId, readCommitted),
            context,
            true,
            settings.intervalMs());
    autoscaler.register(metrics);
    return Optional.of(autoscaler);
  }

  static int maxTasks(Map<String, String> props) {
    try {
      return Math.max(1, Integer.parseInt(props.getOrDefault(TaskAutoscale.TASKS_MAX_CONFIG, "1")));
    } catch (NumberFormatException e) {
      return 1;
    }
  }

  /**
   * The group's lag and its partitions' end offsets (both to the last stable offsets when {@code
   * readCommitted}); null when either cannot be read.
   */
  static GroupReading read(ShareGroupAdmin admin, String groupId, boolean readCommitted) {
    Map<TopicPartition, SharePartitionOffsetInfo> offsets =
        admin.shareGroupOffsets(groupId, readCommitted);
    Map<TopicPartition, Long> lags = new HashMap<>();
    offsets.forEach((tp, info) -> info.lag().ifPresent(lag -> lags.put(tp, lag)));
    if (lags.isEmpty()) {
      return null;
    }
    Map<TopicPartition, Long> ends = admin.endOffsets(lags.keySet(), readCommitted);
    Map<TopicPartition, GroupReading.Load> loads = new HashMap<>();
    lags.forEach(
        (tp, lag) -> {
          Long end = ends.get(tp);
          if (end != null) {
            loads.put(tp, new GroupReading.Load(end, lag));
          }
        });
    return new GroupReading(loads);
  }

  private void register(PluginMetrics metrics) {
    if (metrics == null) {
      return;
    }
    try {
      metrics.addMetric(
          metrics.metricName(
              "autoscale-tasks",
              "The task count the autoscaler decided (what taskConfigs returns)",
              new LinkedHashMap<>()),
          (Gauge<Integer>) (config, now) -> policy.tasks());
    } catch (RuntimeException e) {
      log.debug("Connector {}: cannot register autoscale-tasks: {}", connector, e.toString());
    }
  }

  /** One reading and decision; on a change, asks Connect for new task configs. */
  void tick() {
    GroupReading reading;
    try {
      reading = readings.get();
    } catch (RuntimeException e) {
      log.debug("Connector {}: autoscaler reading failed: {}", connector, e.getMessage());
      reading = null;
    }
    AutoscalePolicy.Decision d;
    try {
      d = policy.observe(reading);
    } catch (RuntimeException e) {
      log.warn("Connector {}: autoscaler decision failed", connector, e);
      return;
    }
    if (d.changed()) {
      log.info(
          "Connector {}: autoscaling to {} tasks: {} ({}); one task's rate {}",
          connector,
          d.tasks(),
          d.reason(),
          d.window(),
          Double.isNaN(policy.perTaskRate())
              ? "not measured yet"
              : String.format(java.util.Locale.ROOT, "%.1f/s", policy.perTaskRate()));
      lastHold = "";
      context.requestTaskReconfiguration();
    } else if (log.isDebugEnabled()) {
      log.debug("Connector {}: {} tasks: {} ({})", connector, d.tasks(), d.reason(), d.window());
    } else if (d.reason().contains("limit is not the tasks") && !d.reason().equals(lastHold)) {
      lastHold = d.reason();
      log.warn("Connector {}: {}", connector, d.reason());
    }
  }

  /** The task configs to return for Connect's {@code maxTasks}: the decided count, at most it. */
  public int tasks(int maxTasks) {
    return Math.max(1, Math.min(maxTasks, policy.tasks()));
  }

  @Override
  public void close() {
    if (thread != null) {
      thread.shutdownNow();
    }
  }
}

package io.sharesink.connect;

import io.sharesink.connect.admin.ShareGroupAdmin;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The share group's lag per partition (records not yet acknowledged past the start offset, as the
 * broker reports it through ListShareGroupOffsets), published as connector-level gauges {@code
 * share-group-lag} tagged with topic and partition. One admin call per refresh interval on a daemon
 * thread, never on the metrics reporter's thread; owns (and closes) the admin client.
 *
 * <p>A lag is only ever what the last refresh read: a partition the broker no longer lists (its
 * topic deleted, the group's state gone) loses its gauge, and a refresh that fails removes every
 * lag gauge, so a scaler or an alert never acts on an old figure. The refresh's health is published
 * beside them: {@code share-group-lag-refresh-failures-total} and {@code
 * share-group-lag-refreshed-at-ms} (epoch ms of the last successful refresh, 0 before it).
 */
final class ShareGroupLag implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ShareGroupLag.class);

  static final long REFRESH_SECONDS = 30;

  static final String LAG = "share-group-lag";
  static final String FAILURES = "share-group-lag-refresh-failures-total";
  static final String REFRESHED_AT = "share-group-lag-refreshed-at-ms";

  /** Where the lags come from: the admin client, or a test's figures. */
  interface Source extends AutoCloseable {
    Map<TopicPartition, SharePartitionOffsetInfo> read(String groupId);

    @Override
    void close();
  }

  private final Source source;
  private final String groupId;
  private final PluginMetrics metrics;
  private final Time time;
  private final Map<TopicPartition, Long> lags = new ConcurrentHashMap<>();
  private final Map<TopicPartition, MetricName> gauges = new ConcurrentHashMap<>();
  private final AtomicLong failures = new AtomicLong();
  private volatile long refreshedAtMs;
  private boolean failing;
  private final ScheduledExecutorService refresher;

  /**
   * {@code readCommitted}: the group reads committed records only, and each lag counts to the
   * partition's last stable offset ({@link ShareGroupAdmin#shareGroupOffsets(String, boolean)}).
   */
  ShareGroupLag(
      ShareGroupAdmin admin, String groupId, boolean readCommitted, PluginMetrics metrics) {
    this(
        new Source() {
          @Override
          public Map<TopicPartition, SharePartitionOffsetInfo> read(String group) {
            return admin.shareGroupOffsets(group, readCommitted);
          }

          @Override
          public void close() {
            admin.close();
          }
        },
        groupId,
        metrics,
        Time.SYSTEM,
        true);
  }

  /**
   * {@code schedule}: refresh on a thread of its own (else only when {@link #refresh} is called).
   */
  ShareGroupLag(Source source, String groupId, PluginMetrics metrics, Time time, boolean schedule) {
    this.source = source;
    this.groupId = groupId;
    this.metrics = metrics;
    this.time = time;
    if (metrics == null) {
      refresher = null;
      return;
    }
    register(FAILURES, "Lag refreshes that failed", (Gauge<Long>) (c, now) -> failures.get());
    register(
        REFRESHED_AT,
        "When the lag was last read (epoch ms; 0: never)",
        (Gauge<Long>) (c, now) -> refreshedAtMs);
    if (!schedule) {
      refresher = null;
      return;
    }
    refresher =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "sharesink-lag-" + groupId);
              t.setDaemon(true);
              return t;
            });
    refresher.scheduleWithFixedDelay(this::refresh, 5, REFRESH_SECONDS, TimeUnit.SECONDS);
  }

  synchronized void refresh() {
    Map<TopicPartition, SharePartitionOffsetInfo> offsets;
    try {
      offsets = source.read(groupId);
    } catch (RuntimeException e) {
      failures.incrementAndGet();
      // No figure is better than an old one: a scaler or an alert would act on it.
      Set.copyOf(gauges.keySet()).forEach(this::unregister);
      if (!failing) {
        failing = true;
        log.warn(
            "Share group {}: lag not refreshed ({}); its lag gauges are removed until a refresh"
                + " succeeds",
            groupId,
            e.getMessage());
      } else {
        log.debug("Share group {}: lag not refreshed again: {}", groupId, e.getMessage());
      }
      return;
    }
    if (failing) {
      failing = false;
      log.info("Share group {}: lag refreshed again", groupId);
    }
    Set<TopicPartition> listed = new HashSet<>();
    offsets.forEach(
        (tp, info) -> {
          if (info.lag().isEmpty()) {
            return;
          }
          listed.add(tp);
          lags.put(tp, info.lag().get());
          if (metrics != null && !gauges.containsKey(tp)) {
            registerLag(tp);
          }
        });
    Set.copyOf(gauges.keySet()).stream()
        .filter(tp -> !listed.contains(tp))
        .forEach(this::unregister);
    lags.keySet().retainAll(listed);
    refreshedAtMs = time.milliseconds();
  }

  private void register(String name, String description, Gauge<Long> gauge) {
    try {
      metrics.addMetric(metrics.metricName(name, description, new LinkedHashMap<>()), gauge);
    } catch (RuntimeException e) {
      log.debug("Share group {}: cannot register {}: {}", groupId, name, e.toString());
    }
  }

  private void registerLag(TopicPartition tp) {
    LinkedHashMap<String, String> tags = new LinkedHashMap<>();
    tags.put("topic", tp.topic());
    tags.put("partition", Integer.toString(tp.partition()));
    try {
      MetricName name =
          metrics.metricName(
              LAG, "Records of this partition the share group has not acknowledged yet", tags);
      metrics.addMetric(name, (Gauge<Long>) (config, now) -> lags.getOrDefault(tp, 0L));
      gauges.put(tp, name);
    } catch (RuntimeException e) {
      log.debug("Share group {}: cannot register the lag of {}: {}", groupId, tp, e.toString());
    }
  }

  private void unregister(TopicPartition tp) {
    MetricName name = gauges.remove(tp);
    lags.remove(tp);
    if (name != null) {
      try {
        metrics.removeMetric(name);
      } catch (RuntimeException e) {
        log.debug("Share group {}: cannot remove the lag of {}: {}", groupId, tp, e.toString());
      }
    }
  }

  @Override
  public void close() {
    if (refresher != null) {
      refresher.shutdownNow();
    }
    source.close();
  }
}

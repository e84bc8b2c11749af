package io.sharesink.connect;

import io.sharesink.connect.admin.ShareGroupAdmin;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The share group's lag per partition (records not yet acknowledged past the start offset, as the
 * broker reports it through ListShareGroupOffsets), published as connector-level gauges {@code
 * share-group-lag} tagged with topic and partition. One admin call per refresh interval on a daemon
 * thread, never on the metrics reporter's thread; owns (and closes) the admin client.
 */
final class ShareGroupLag implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ShareGroupLag.class);

  static final long REFRESH_SECONDS = 30;

  private final ShareGroupAdmin admin;
  private final String groupId;
  private final PluginMetrics metrics;
  private final Map<TopicPartition, Long> lags = new ConcurrentHashMap<>();
  private final ScheduledExecutorService refresher;

  ShareGroupLag(ShareGroupAdmin admin, String groupId, PluginMetrics metrics) {
    this.admin = admin;
    this.groupId = groupId;
    this.metrics = metrics;
    if (metrics == null) {
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

  void refresh() {
    Map<TopicPartition, SharePartitionOffsetInfo> offsets;
    try {
      offsets = admin.shareGroupOffsets(groupId);
    } catch (RuntimeException e) {
      log.debug("Share group {}: lag not refreshed: {}", groupId, e.getMessage());
      return;
    }
    offsets.forEach(
        (tp, info) -> {
          if (info.lag().isEmpty()) {
            return;
          }
          if (lags.put(tp, info.lag().get()) == null) {
            register(tp);
          }
        });
  }

  private void register(TopicPartition tp) {
    LinkedHashMap<String, String> tags = new LinkedHashMap<>();
    tags.put("topic", tp.topic());
    tags.put("partition", Integer.toString(tp.partition()));
    try {
      metrics.addMetric(
          metrics.metricName(
              "share-group-lag",
              "Records of this partition the share group has not acknowledged yet",
              tags),
          (Gauge<Long>) (config, now) -> lags.getOrDefault(tp, 0L));
    } catch (RuntimeException e) {
      log.debug("Share group {}: cannot register the lag of {}: {}", groupId, tp, e.toString());
    }
  }

  /** The last lag read per partition; for tests. */
  Map<TopicPartition, Long> lags() {
    return Map.copyOf(lags);
  }

  @Override
  public void close() {
    if (refresher != null) {
      refresher.shutdownNow();
    }
    admin.close();
  }
}

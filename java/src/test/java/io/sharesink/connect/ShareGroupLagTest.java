package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.utils.MockTime;
import org.junit.jupiter.api.Test;

/** The lag gauges show only what the last refresh read, and the refresh's health beside them. */
class ShareGroupLagTest {

  private final MockTime time = new MockTime(0, 1_700_000_000_000L, 0);
  private final AtomicReference<Object> answer = new AtomicReference<>();

  private final ShareGroupLag.Source source =
      new ShareGroupLag.Source() {
        @Override
        @SuppressWarnings("unchecked")
        public Map<TopicPartition, SharePartitionOffsetInfo> read(String groupId) {
          Object a = answer.get();
          if (a instanceof RuntimeException e) {
            throw e;
          }
          return (Map<TopicPartition, SharePartitionOffsetInfo>) a;
        }

        @Override
        public void close() {}
      };

  private static SharePartitionOffsetInfo lag(long lag) {
    return new SharePartitionOffsetInfo(0, Optional.empty(), Optional.of(lag));
  }

  /** name{topic/partition} -> value of every metric the lag registered. */
  private static Map<String, Double> read(Metrics metrics) {
    Map<String, Double> out = new TreeMap<>();
    for (Map.Entry<MetricName, KafkaMetric> e : metrics.metrics().entrySet()) {
      MetricName n = e.getKey();
      if (!n.name().startsWith("share-group-lag")) {
        continue;
      }
      String key =
          n.name() + (n.tags().containsKey("partition") ? "/" + n.tags().get("partition") : "");
      out.put(key, ((Number) e.getValue().metricValue()).doubleValue());
    }
    return out;
  }

  @Test
  void aFailedRefreshRemovesTheLagAndCountsAndADeletedPartitionLosesItsGauge() throws Exception {
    TopicPartition p0 = new TopicPartition("orders", 0);
    TopicPartition p1 = new TopicPartition("orders", 1);
    try (Metrics metrics = new Metrics();
        PluginMetricsImpl plugin = new PluginMetricsImpl(metrics, Map.of("connector", "c"));
        ShareGroupLag lag = new ShareGroupLag(source, "g", plugin, time, false)) {
      assertEquals(
          Map.of(
              "share-group-lag-refresh-failures-total", 0.0,
              "share-group-lag-refreshed-at-ms", 0.0),
          read(metrics));

      answer.set(Map.of(p0, lag(5), p1, lag(7)));
      lag.refresh();
      double at = time.milliseconds();
      assertEquals(
          Map.of(
              "share-group-lag/0", 5.0,
              "share-group-lag/1", 7.0,
              "share-group-lag-refresh-failures-total", 0.0,
              "share-group-lag-refreshed-at-ms", at),
          read(metrics));

      // The broker no longer lists partition 1 (topic recreated smaller, state deleted).
      time.sleep(30_000);
      answer.set(Map.of(p0, lag(3)));
      lag.refresh();
      assertEquals(
          Map.of(
              "share-group-lag/0", 3.0,
              "share-group-lag-refresh-failures-total", 0.0,
              "share-group-lag-refreshed-at-ms", at + 30_000),
          read(metrics));

      // A refresh fails: no old figure stays, the failure is counted, the time is not moved.
      time.sleep(30_000);
      answer.set(new TimeoutException("listing the start offsets timed out"));
      lag.refresh();
      lag.refresh();
      assertEquals(
          Map.of(
              "share-group-lag-refresh-failures-total",
              2.0,
              "share-group-lag-refreshed-at-ms",
              at + 30_000),
          read(metrics));

      time.sleep(30_000);
      answer.set(Map.of(p0, lag(0), p1, lag(1)));
      lag.refresh();
      assertEquals(
          Map.of(
              "share-group-lag/0", 0.0,
              "share-group-lag/1", 1.0,
              "share-group-lag-refresh-failures-total", 2.0,
              "share-group-lag-refreshed-at-ms", at + 90_000),
          read(metrics));
    }
  }
}

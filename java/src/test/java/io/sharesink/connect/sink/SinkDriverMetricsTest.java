package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.StandardMBean;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.utils.MockTime;
import org.junit.jupiter.api.Test;

/** Windowed latencies on the task's clock, and Connect's sink-task metrics in JMX. */
class SinkDriverMetricsTest {

  private final MockTime time = new MockTime(0, 1_000_000, 0);
  private final MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();

  private static double read(Metrics metrics, List<MetricName> names, String name) {
    MetricName n = names.stream().filter(m -> m.name().equals(name)).findFirst().orElseThrow();
    return ((Number) metrics.metric(n).metricValue()).doubleValue();
  }

  @Test
  void latenciesComeDownOnceTheWindowPassesWhileTheTotalsKeepCounting() throws Exception {
    SinkDriverMetrics driverMetrics = new SinkDriverMetrics(time);
    try (Metrics metrics = new Metrics();
        PluginMetricsImpl plugin = new PluginMetricsImpl(metrics, Map.of("plugin", "x"))) {
      List<MetricName> names = driverMetrics.registerWith(plugin, new LinkedHashMap<>());
      driverMetrics.recordPut(TimeUnit.MILLISECONDS.toNanos(900));
      driverMetrics.recordPut(TimeUnit.MILLISECONDS.toNanos(100));
      assertEquals(500, read(metrics, names, "share-put-latency-avg-ms"), 1e-9);
      assertEquals(900, read(metrics, names, "share-put-latency-max-ms"), 1e-9);

      // Two samples of 30 s: a minute later the slow puts are out of the window.
      time.sleep(61_000);
      assertEquals(0, read(metrics, names, "share-put-latency-avg-ms"), 1e-9);
      assertEquals(0, read(metrics, names, "share-put-latency-max-ms"), 1e-9);
      driverMetrics.recordPut(TimeUnit.MILLISECONDS.toNanos(20));
      assertEquals(20, read(metrics, names, "share-put-latency-max-ms"), 1e-9, "max came down");
      assertEquals(20, read(metrics, names, "share-put-latency-avg-ms"), 1e-9);

      // Sum and count for Prometheus: never reset by the window.
      assertEquals(1020, read(metrics, names, "share-put-time-ms-total"), 1e-9);
      assertEquals(3, read(metrics, names, "share-puts-total"), 1e-9);

      driverMetrics.recordCommit(TimeUnit.MILLISECONDS.toNanos(40), true);
      time.sleep(61_000);
      driverMetrics.recordCommit(TimeUnit.MILLISECONDS.toNanos(10), false);
      assertEquals(10, read(metrics, names, "share-commit-latency-max-ms"), 1e-9);
      assertEquals(50, read(metrics, names, "share-commit-time-ms-total"), 1e-9);
      assertEquals(2, read(metrics, names, "share-commit-cycles-total"), 1e-9);
    }
  }

  @Test
  void sinkTaskMetricsAreInJmxUnderConnectsNamesWhileTheDriverLives() throws Exception {
    String connector = "orders-to-pg-" + System.nanoTime();
    ObjectName mbean =
        new ObjectName("kafka.connect:type=sink-task-metrics,connector=" + connector + ",task=3");
    SinkDriverMetrics driverMetrics = new SinkDriverMetrics(time);
    assertTrue(driverMetrics.publishSinkTaskMetrics(connector, 3));
    try {
      assertTrue(jmx.isRegistered(mbean));
      driverMetrics.polled(7);
      driverMetrics.put(5);
      driverMetrics.inFlight(7);
      driverMetrics.inFlight(2);
      driverMetrics.partitions(3);
      driverMetrics.recordPut(TimeUnit.MILLISECONDS.toNanos(30));
      driverMetrics.recordCommit(TimeUnit.MILLISECONDS.toNanos(4), true);
      driverMetrics.recordCommit(TimeUnit.MILLISECONDS.toNanos(4), false);
      assertEquals(7.0, jmx.getAttribute(mbean, "sink-record-read-total"));
      assertEquals(5.0, jmx.getAttribute(mbean, "sink-record-send-total"));
      assertEquals(2.0, jmx.getAttribute(mbean, "sink-record-active-count"));
      assertEquals(7.0, jmx.getAttribute(mbean, "sink-record-active-count-max"));
      assertEquals(3.0, jmx.getAttribute(mbean, "partition-count"));
      assertEquals(30.0, jmx.getAttribute(mbean, "put-batch-max-time-ms"));
      assertEquals(30.0, jmx.getAttribute(mbean, "put-batch-avg-time-ms"));
      assertEquals(2.0, jmx.getAttribute(mbean, "offset-commit-seq-no"));
      assertEquals(1.0, jmx.getAttribute(mbean, "offset-commit-completion-total"));
      assertEquals(0.0, jmx.getAttribute(mbean, "offset-commit-skip-total"));
      for (String rate :
          List.of(
              "sink-record-read-rate",
              "sink-record-send-rate",
              "offset-commit-completion-rate",
              "offset-commit-skip-rate",
              "sink-record-active-count-avg")) {
        assertNotNull(jmx.getAttribute(mbean, rate), rate);
      }
      // Another instance of the same task (started before the first closed) does not take it.
      SinkDriverMetrics second = new SinkDriverMetrics(time);
      assertFalse(second.publishSinkTaskMetrics(connector, 3));
      second.close();
      assertTrue(jmx.isRegistered(mbean), "the live instance keeps its MBean");
    } finally {
      driverMetrics.close();
    }
    assertFalse(jmx.isRegistered(mbean));
    SinkDriverMetrics again = new SinkDriverMetrics(time);
    assertTrue(again.publishSinkTaskMetrics(connector, 3), "free again once closed");
    again.close();
  }

  /** The MBean of the worker's own sink-task metrics; only its name matters here. */
  public interface Probe {
    int getValue();
  }

  @Test
  void anMbeanSomeoneElseRegisteredIsNeitherReplacedNorRemoved() throws Exception {
    String connector = "classic-" + System.nanoTime();
    ObjectName mbean =
        new ObjectName("kafka.connect:type=sink-task-metrics,connector=" + connector + ",task=0");
    Probe probe = () -> 42;
    jmx.registerMBean(new StandardMBean(probe, Probe.class), mbean);
    try {
      SinkDriverMetrics driverMetrics = new SinkDriverMetrics(time);
      assertFalse(driverMetrics.publishSinkTaskMetrics(connector, 0));
      assertNull(driverMetrics.sinkTaskMetrics());
      driverMetrics.polled(1);
      driverMetrics.close();
      assertEquals(42, jmx.getAttribute(mbean, "Value"));
    } finally {
      jmx.unregisterMBean(mbean);
    }
  }
}

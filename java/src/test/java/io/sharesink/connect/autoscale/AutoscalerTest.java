package io.sharesink.connect.autoscale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.ShareSinkConfig;
import io.sharesink.connect.sink.SinkDriverConfig;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.connect.connector.ConnectorContext;
import org.junit.jupiter.api.Test;

class AutoscalerTest {

  static final TopicPartition TP = new TopicPartition("t", 0);

  static final class CountingContext implements ConnectorContext {
    int reconfigurations;

    @Override
    public void requestTaskReconfiguration() {
      reconfigurations++;
    }

    @Override
    public void raiseError(Exception e) {}

    @Override
    public PluginMetrics pluginMetrics() {
      return null;
    }
  }

  @Test
  void disabledItStartsNothingAndReadsNothing() {
    Map<String, String> props = new HashMap<>(Map.of("name", "c", "tasks.max", "12"));
    CountingContext context = new CountingContext();
    // A null admin client: any read would throw.
    assertTrue(Autoscaler.startIfEnabled(props, null, "g", false, context, null).isEmpty());
    props.put(TaskAutoscale.ENABLE_CONFIG, "false");
    assertTrue(Autoscaler.startIfEnabled(props, null, "g", false, context, null).isEmpty());
    assertEquals(0, context.reconfigurations);
    assertEquals(
        false,
        ShareSinkConfig.CONFIG_DEF.configKeys().get(TaskAutoscale.ENABLE_CONFIG).defaultValue);
  }

  @Test
  void aChangeAsksConnectForNewTaskConfigsOnceAndTaskConfigsFollowIt() {
    MockTime time = new MockTime(0, 1_000_000, 0);
    TaskAutoscale.Settings settings =
        new TaskAutoscale.Settings(2, 5_000, 30_000, 60_000, 60_000, 1, 1_000);
    AutoscalePolicy policy = new AutoscalePolicy(settings, 12, 0, time);
    Deque<GroupReading> readings =
        new ArrayDeque<>(
            List.of(
                reading(1_000, 0),
                reading(31_000, 29_800), // a burst; two tasks consumed 200 in 5 s
                reading(31_000, 29_600),
                reading(31_000, 29_400)));
    CountingContext context = new CountingContext();
    Autoscaler autoscaler =
        new Autoscaler("c", policy, readings::poll, context, false, settings.intervalMs());
    assertEquals(2, autoscaler.tasks(12), "starts at the minimum");
    autoscaler.tick();
    time.sleep(5_000);
    autoscaler.tick();
    assertEquals(1, context.reconfigurations);
    assertEquals(12, autoscaler.tasks(12));
    assertEquals(8, autoscaler.tasks(8), "never more than Connect's maxTasks");
    time.sleep(5_000);
    autoscaler.tick();
    time.sleep(5_000);
    autoscaler.tick();
    assertEquals(1, context.reconfigurations, "at tasks.max: nothing more to change");
    time.sleep(5_000);
    autoscaler.tick(); // a failed read: nothing changes
    assertEquals(1, context.reconfigurations);
  }

  @Test
  void aMinimumAboveTasksMaxIsAValidationErrorOnTheMinimum() {
    Map<String, String> props =
        new HashMap<>(Map.of(TaskAutoscale.ENABLE_CONFIG, "true", "tasks.max", "3"));
    props.put(TaskAutoscale.MIN_CONFIG, "4");
    Map<String, List<String>> problems = TaskAutoscale.problems(props);
    assertEquals(List.of(TaskAutoscale.MIN_CONFIG), List.copyOf(problems.keySet()));
    assertTrue(problems.get(TaskAutoscale.MIN_CONFIG).get(0).contains("tasks.max=3"));
    props.put(TaskAutoscale.MIN_CONFIG, "3");
    assertTrue(TaskAutoscale.problems(props).isEmpty());
    props.put(TaskAutoscale.MIN_CONFIG, "4");
    props.put(TaskAutoscale.ENABLE_CONFIG, "false");
    assertTrue(TaskAutoscale.problems(props).isEmpty(), "off: the minimum means nothing");
  }

  @Test
  void theKeysAreInTheirOwnGroupWithTheirDefaults() {
    ConfigDef def = ShareSinkConfig.CONFIG_DEF;
    for (String key :
        List.of(
            TaskAutoscale.ENABLE_CONFIG,
            TaskAutoscale.MIN_CONFIG,
            TaskAutoscale.INTERVAL_MS_CONFIG,
            TaskAutoscale.RECONFIGURE_MIN_INTERVAL_MS_CONFIG,
            TaskAutoscale.SCALE_DOWN_WINDOW_MS_CONFIG,
            TaskAutoscale.DRAIN_TARGET_MS_CONFIG)) {
      assertEquals(TaskAutoscale.GROUP, def.configKeys().get(key).group, key);
    }
    TaskAutoscale.Settings s = TaskAutoscale.Settings.of(Map.of());
    assertEquals(new TaskAutoscale.Settings(1, 5_000, 60_000, 60_000, 60_000, 500, 5_000), s);
  }

  @Test
  void theSettingsReadTheKeysTheConnectorDefines() {
    // The share consumer's max.poll.records and the commit interval are defined elsewhere; the
    // autoscaler must read them under the same names.
    String maxPollRecords =
        ShareSinkConfig.CONSUMER_PREFIX + ConsumerConfig.MAX_POLL_RECORDS_CONFIG;
    assertTrue(
        ShareSinkConfig.CONFIG_DEF.names().contains(SinkDriverConfig.COMMIT_INTERVAL_MS_CONFIG));
    TaskAutoscale.Settings s =
        TaskAutoscale.Settings.of(
            Map.of(maxPollRecords, "7", SinkDriverConfig.COMMIT_INTERVAL_MS_CONFIG, "1234"));
    assertEquals(7, s.maxPollRecords());
    assertEquals(1234, s.commitIntervalMs());
    assertEquals(
        ShareSinkConfig.CONFIG_DEF.defaultValues().get(SinkDriverConfig.COMMIT_INTERVAL_MS_CONFIG),
        TaskAutoscale.Settings.of(Map.of()).commitIntervalMs());
  }

  static GroupReading reading(long end, long lag) {
    return new GroupReading(Map.of(TP, new GroupReading.Load(end, lag)));
  }
}

package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.SinkDriverConfig;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

/** The validators of the connector's keys, through its ConfigDef, and the check across keys. */
class ConfigValidatorsTest {

  @Test
  void rejectsAClassThatIsNotASinkConnector() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put(
        ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG,
        "org.apache.kafka.connect.file.FileStreamSourceConnector");
    String error =
        ShareSinkConfigTest.errors(props).get(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG).get(0);
    assertTrue(error.contains("not a SinkConnector"), error);
  }

  @Test
  void rejectsAClassTheWorkerCannotLoad() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, "com.example.NoSuchSinkConnector");
    String error =
        ShareSinkConfigTest.errors(props).get(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG).get(0);
    assertTrue(error.contains("plugin.path"), error);
  }

  @Test
  void rejectsAnEmptyTopicListWithoutAPattern() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put(ShareSinkConfig.TOPICS_CONFIG, "");
    assertEquals(
        List.of(ShareSinkConfig.TOPICS_CONFIG),
        List.copyOf(ConfigValidators.topicChoiceProblems(props).keySet()));
    props.put(ShareSinkConfig.TOPICS_CONFIG, "a,,b");
    assertTrue(ShareSinkConfigTest.errors(props).containsKey(ShareSinkConfig.TOPICS_CONFIG));
  }

  @Test
  void takesExactlyOneOfTopicsAndAValidPattern() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put(ShareSinkConfig.TOPICS_REGEX_CONFIG, "orders-.*");
    assertEquals(
        List.of(ShareSinkConfig.TOPICS_REGEX_CONFIG),
        List.copyOf(ConfigValidators.topicChoiceProblems(props).keySet()));
    props.remove(ShareSinkConfig.TOPICS_CONFIG);
    assertEquals(Map.of(), ConfigValidators.topicChoiceProblems(props));
    assertEquals(Map.of(), ShareSinkConfigTest.errors(props));
    assertEquals("orders-.*", new ShareSinkConfig(props).topicsRegex().orElseThrow().pattern());

    props.put(ShareSinkConfig.TOPICS_REGEX_CONFIG, "orders-(");
    String error =
        ShareSinkConfigTest.errors(props).get(ShareSinkConfig.TOPICS_REGEX_CONFIG).get(0);
    assertTrue(error.contains("not a valid regular expression"), error);
  }

  @Test
  void thePatternMayNotMatchTheDlqTopic() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.remove(ShareSinkConfig.TOPICS_CONFIG);
    props.put(ShareSinkConfig.TOPICS_REGEX_CONFIG, "orders.*");
    props.put(SinkDriverConfig.DLQ_TOPIC_CONFIG, "orders-dlq");
    assertTrue(
        ConfigValidators.topicChoiceProblems(props)
            .get(ShareSinkConfig.TOPICS_REGEX_CONFIG)
            .contains("DLQ"));
    props.put(SinkDriverConfig.DLQ_TOPIC_CONFIG, "dlq.orders");
    assertEquals(Map.of(), ConfigValidators.topicChoiceProblems(props));
  }

  @Test
  void acceptsEveryAutoOffsetResetForm() {
    for (String value : List.of("earliest", "latest", "by_duration:PT1H", "BY_DURATION:P1D")) {
      Map<String, String> props = ShareSinkConfigTest.validConfig();
      props.put(ShareSinkConfig.AUTO_OFFSET_RESET_CONFIG, value);
      assertEquals(Map.of(), ShareSinkConfigTest.errors(props), value);
    }
  }

  @Test
  void theRemovedWorkerConfigKeyIsRefusedNamingWhatReplacedIt() {
    Map<String, String> props = ShareSinkConfigTest.validConfig();
    props.put(ShareSinkConfig.WORKER_CONFIG_CONFIG, "/dev/null");
    List<String> messages =
        ShareSinkConfigTest.errors(props).get(ShareSinkConfig.WORKER_CONFIG_CONFIG);
    assertEquals(1, messages.size(), String.valueOf(messages));
    assertTrue(messages.get(0).contains("was removed"), messages.get(0));
    assertTrue(messages.get(0).contains("worker process"), messages.get(0));
    ConfigException e = assertThrows(ConfigException.class, () -> new ShareSinkConfig(props));
    assertTrue(e.getMessage().contains(ShareSinkConfig.WORKER_CONFIG_CONFIG), e.getMessage());
  }
}

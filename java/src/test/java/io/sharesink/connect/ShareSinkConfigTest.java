package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.common.config.ConfigValue;
import org.junit.jupiter.api.Test;

class ShareSinkConfigTest {

  static Map<String, String> validConfig() {
    Map<String, String> props = new HashMap<>();
    props.put("connector.class", ShareSinkConnector.class.getName());
    props.put("name", "files");
    props.put(
        ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG,
        "org.apache.kafka.connect.file.FileStreamSinkConnector");
    props.put(ShareSinkConfig.TOPICS_CONFIG, "orders, refunds");
    props.put(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
    props.put("file", "/tmp/out.txt");
    return props;
  }

  private static Map<String, List<String>> errors(Map<String, String> props) {
    return ShareSinkConfig.CONFIG_DEF.validate(props).stream()
        .filter(v -> !v.errorMessages().isEmpty())
        .collect(Collectors.toMap(ConfigValue::name, ConfigValue::errorMessages));
  }

  @Test
  void acceptsAValidConfigAndParsesIt() {
    assertEquals(Map.of(), errors(validConfig()));
    ShareSinkConfig config = new ShareSinkConfig(validConfig());
    assertEquals(
        "org.apache.kafka.connect.file.FileStreamSinkConnector", config.sinkConnectorClass());
    assertEquals(List.of("orders", "refunds"), config.topics());
    assertEquals("localhost:9092", config.bootstrapServers());
    assertEquals(15_000L, config.probeTimeoutMs());
  }

  @Test
  void requiresTheShareKeys() {
    Map<String, String> props = validConfig();
    props.remove(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG);
    props.remove(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG);
    props.remove(ShareSinkConfig.TOPICS_CONFIG);
    Map<String, List<String>> errors = errors(props);
    assertTrue(errors.containsKey(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG), errors::toString);
    assertTrue(errors.containsKey(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG), errors::toString);
    assertTrue(errors.containsKey(ShareSinkConfig.TOPICS_CONFIG), errors::toString);
  }

  @Test
  void rejectsAClassThatIsNotASinkConnector() {
    Map<String, String> props = validConfig();
    props.put(
        ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG,
        "org.apache.kafka.connect.file.FileStreamSourceConnector");
    String error = errors(props).get(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG).get(0);
    assertTrue(error.contains("not a SinkConnector"), error);
  }

  @Test
  void rejectsAClassTheWorkerCannotLoad() {
    Map<String, String> props = validConfig();
    props.put(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, "com.example.NoSuchSinkConnector");
    String error = errors(props).get(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG).get(0);
    assertTrue(error.contains("plugin.path"), error);
  }

  @Test
  void rejectsAnEmptyTopicList() {
    Map<String, String> props = validConfig();
    props.put(ShareSinkConfig.TOPICS_CONFIG, "");
    assertTrue(errors(props).containsKey(ShareSinkConfig.TOPICS_CONFIG));
  }

  @Test
  void documentsEveryKey() {
    ShareSinkConfig.CONFIG_DEF
        .configKeys()
        .values()
        .forEach(
            key -> {
              assertTrue(key.documentation != null && !key.documentation.isBlank(), key.name);
              assertTrue(key.group != null && key.displayName != null, key.name);
            });
  }
}

package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.SinkDriverConfig;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Type;
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

  static Map<String, List<String>> errors(Map<String, String> props) {
    return ShareSinkConfig.CONFIG_DEF.validate(props).stream()
        .filter(v -> !v.errorMessages().isEmpty())
        .collect(Collectors.toMap(ConfigValue::name, ConfigValue::errorMessages));
  }

  @Test
  void everyKeyHasAPlaceOfItsOwnInASectionNamedOnce() {
    java.util.Set<String> used = new java.util.HashSet<>();
    for (ConfigDef def : List.of(ShareSinkConfig.CONFIG_DEF, SinkDriverConfig.CONFIG_DEF)) {
      Map<String, List<Integer>> orders = new HashMap<>();
      for (ConfigDef.ConfigKey key : def.configKeys().values()) {
        if (!key.internalConfig) {
          orders.computeIfAbsent(key.group, g -> new java.util.ArrayList<>()).add(key.orderInGroup);
        }
      }
      used.addAll(orders.keySet());
      orders.forEach(
          (section, numbers) -> {
            List<Integer> sorted = numbers.stream().sorted().toList();
            List<Integer> expected =
                java.util.stream.IntStream.rangeClosed(1, numbers.size()).boxed().toList();
            assertEquals(expected, sorted, section + ": 1.." + numbers.size() + ", none twice");
          });
    }
    java.util.Set<String> named = new java.util.HashSet<>();
    for (java.lang.reflect.Field f : io.sharesink.connect.config.ConfigSections.class.getFields()) {
      try {
        named.add((String) f.get(null));
      } catch (IllegalAccessException e) {
        throw new AssertionError(e);
      }
    }
    assertEquals(named, used, "every section ConfigSections names is used, and only those");
  }

  @Test
  void acceptsAValidConfigAndParsesItWithDefaults() {
    assertEquals(Map.of(), errors(validConfig()));
    ShareSinkConfig config = new ShareSinkConfig(validConfig());
    assertEquals(
        "org.apache.kafka.connect.file.FileStreamSinkConnector", config.sinkConnectorClass());
    assertEquals(List.of("orders", "refunds"), config.topics());
    assertEquals("connect-share-files", config.groupId("files"));
    assertEquals("auto", config.engine());
    assertEquals(5_000L, config.commitIntervalMs());
    assertEquals(1_000L, config.pollTimeoutMs());
    assertEquals("earliest", config.autoOffsetReset());
    assertNull(config.lockDurationMs());
    assertNull(config.deliveryCountLimit());
    assertEquals("auto", config.dlqMode());
    assertTrue(config.migrationEnabled());
    assertEquals("", config.dlqTopic());
  }

  @Test
  void anExplicitGroupIdWins() {
    Map<String, String> props = validConfig();
    props.put(ShareSinkConfig.GROUP_ID_CONFIG, "orders-share");
    assertEquals("orders-share", new ShareSinkConfig(props).groupId("files"));
  }

  @Test
  void requiresTheSinkClassAndTopicsButNotBootstrap() {
    Map<String, String> props = validConfig();
    props.remove(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG);
    props.remove(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG);
    props.remove(ShareSinkConfig.TOPICS_CONFIG);
    Map<String, List<String>> errors = errors(props);
    assertTrue(errors.containsKey(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG), errors::toString);
    // topics or topics.regex: a rule across two keys, checked as Connect's SinkConnectorConfig
    // does.
    assertTrue(!errors.containsKey(ShareSinkConfig.TOPICS_CONFIG), errors::toString);
    assertTrue(
        ConfigValidators.topicChoiceProblems(props).containsKey(ShareSinkConfig.TOPICS_CONFIG));
    // It may come from the worker file: checked by the connector's validate(), not the ConfigDef.
    assertTrue(!errors.containsKey(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG), errors::toString);
  }

  @Test
  void validatesEachShareKey() {
    Map<String, String> bad = new HashMap<>();
    bad.put(ShareSinkConfig.ENGINE_CONFIG, "rust");
    bad.put(ShareSinkConfig.POLL_TIMEOUT_MS_CONFIG, "5001");
    bad.put(ShareSinkConfig.AUTO_OFFSET_RESET_CONFIG, "by_duration:yesterday");
    bad.put(ShareSinkConfig.LOCK_DURATION_MS_CONFIG, "500");
    bad.put(ShareSinkConfig.DELIVERY_COUNT_LIMIT_CONFIG, "1");
    bad.put(ShareSinkConfig.DLQ_MODE_CONFIG, "kafka");
    bad.put(SinkDriverConfig.COMMIT_INTERVAL_MS_CONFIG, "1");
    bad.put(SinkDriverConfig.EMPTY_PRECOMMIT_CONFIG, "maybe");
    bad.put(ShareSinkConfig.SECURITY_PROTOCOL_CONFIG, "TLS");
    bad.put(ShareSinkConfig.GROUP_ID_CONFIG, " ");
    bad.put(ShareSinkConfig.MIGRATION_ENABLE_CONFIG, "perhaps");
    Map<String, String> props = validConfig();
    props.putAll(bad);
    Map<String, List<String>> errors = errors(props);
    assertEquals(bad.keySet(), errors.keySet(), errors::toString);
  }

  @Test
  void theConsumersPasswordsAreHiddenAsTheWorkerHidesPasswords() {
    for (String key :
        List.of(
            "ssl.keystore.password",
            "ssl.key.password",
            "ssl.truststore.password",
            "sasl.jaas.config")) {
      ConfigDef.ConfigKey def =
          ShareSinkConfig.CONFIG_DEF.configKeys().get(ShareSinkConfig.CONSUMER_PREFIX + key);
      assertEquals(ConfigDef.Type.PASSWORD, def == null ? null : def.type, key);
    }
    Map<String, String> props = validConfig();
    props.put("share.consumer.ssl.keystore.password", "hunter2");
    ConfigValue value =
        ShareSinkConfig.CONFIG_DEF.validate(props).stream()
            .filter(v -> v.name().equals("share.consumer.ssl.keystore.password"))
            .findFirst()
            .orElseThrow();
    assertFalse(String.valueOf(value.value()).contains("hunter2"), value.toString());
  }

  @Test
  void theDeliveryCountHeaderIsOffByDefaultAndANameAsWritten() {
    assertEquals(Map.of(), errors(validConfig()));
    Map<String, String> props = validConfig();
    props.put(SinkDriverConfig.DELIVERY_COUNT_HEADER_CONFIG, "x-delivery-count");
    assertEquals(Map.of(), errors(props));
    props.put(SinkDriverConfig.DELIVERY_COUNT_HEADER_CONFIG, "x-delivery\u0007count");
    assertTrue(errors(props).containsKey(SinkDriverConfig.DELIVERY_COUNT_HEADER_CONFIG));
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
              assertTrue(key.orderInGroup > 0 && key.width != null, key.name);
              if (key.name.startsWith("share.")
                  && key.type != Type.BOOLEAN
                  && key.type != Type.PASSWORD) {
                assertTrue(key.validator != null, key.name + " has a validator");
              }
            });
  }
}

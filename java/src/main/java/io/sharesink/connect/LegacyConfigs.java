package io.sharesink.connect;

import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/** Builds the configurations the legacy connector and its tasks see. */
final class LegacyConfigs {

  /** The runtime's own key naming a connector's class (ConnectorConfig.CONNECTOR_CLASS_CONFIG). */
  static final String CONNECTOR_CLASS = "connector.class";

  /** The runtime's key naming a task's class (TaskConfig.TASK_CLASS_CONFIG). */
  static final String TASK_CLASS = "task.class";

  private LegacyConfigs() {}

  /**
   * Our connector config without sharesink's keys, naming the legacy class as its {@code
   * connector.class}, as if the runtime had started the legacy connector itself. {@code name},
   * {@code topics}, converters and the legacy sink's own settings pass through unchanged.
   */
  static Map<String, String> forConnector(Map<String, String> ourProps, String legacyClass) {
    Map<String, String> legacy = withoutShareKeys(ourProps);
    legacy.put(CONNECTOR_CLASS, legacyClass);
    return legacy;
  }

  /**
   * A task config as the runtime gave it to our task (the legacy task's config plus our keys plus
   * the runtime's {@code task.class} and {@code topics}), turned back into what the legacy task
   * would have received from the runtime: {@code task.class} naming the legacy class, without our
   * keys or the connector-level keys our connector copied in ({@link
   * ShareSinkConfig#ADDED_KEYS_CONFIG}).
   */
  static Map<String, String> forTask(Map<String, String> ourTaskProps, String legacyTaskClass) {
    Map<String, String> legacy = withoutShareKeys(ourTaskProps);
    legacy.put(TASK_CLASS, legacyTaskClass);
    for (String added : addedKeys(ourTaskProps)) {
      legacy.remove(added);
    }
    return legacy;
  }

  /**
   * Where converters and transforms are read from: the connector-level settings, with the worker's
   * converter (class and its prefixed settings) for each converter whose class the connector does
   * not set, as the runtime falls back to the worker's converters. Then none of the connector's own
   * settings of that converter apply, as Kafka builds it ({@code Plugins.newConverter} returns null
   * without the class, and the worker's converter is configured from the worker's settings alone):
   * a connector's {@code value.converter.*} must not configure the worker's converter, which may
   * carry the worker's credentials (a schema registry's URL the connector chose, with the worker's
   * {@code basic.auth.user.info}).
   */
  static Map<String, String> forPlugins(Map<String, String> ourTaskProps, WorkerDefaults worker) {
    Map<String, String> plugin = withoutShareKeys(ourTaskProps);
    for (String converter : WorkerDefaults.CONVERTER_KEYS) {
      if (!plugin.containsKey(converter)) {
        String prefix = converter + ".";
        plugin.keySet().removeIf(key -> key.startsWith(prefix));
        plugin.putAll(worker.converter(converter));
      }
    }
    return plugin;
  }

  private static Set<String> addedKeys(Map<String, String> props) {
    String list = props.get(ShareSinkConfig.ADDED_KEYS_CONFIG);
    Set<String> keys = new HashSet<>();
    if (list != null && !list.isBlank()) {
      Arrays.stream(list.split(",")).map(String::trim).filter(s -> !s.isEmpty()).forEach(keys::add);
    }
    return keys;
  }

  /** Only sharesink's keys (they are added to every task config the legacy connector makes). */
  static Map<String, String> shareKeys(Map<String, String> props) {
    Map<String, String> share = new HashMap<>();
    props.forEach(
        (key, value) -> {
          if (key.startsWith(ShareSinkConfig.SHARE_PREFIX)) {
            share.put(key, value);
          }
        });
    return share;
  }

  private static Map<String, String> withoutShareKeys(Map<String, String> props) {
    Map<String, String> rest = new HashMap<>();
    props.forEach(
        (key, value) -> {
          if (!key.startsWith(ShareSinkConfig.SHARE_PREFIX)) {
            rest.put(key, value);
          }
        });
    return rest;
  }
}

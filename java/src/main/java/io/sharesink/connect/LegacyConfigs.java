package io.sharesink.connect;

import java.util.HashMap;
import java.util.Map;

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
   * would have received from the runtime.
   */
  static Map<String, String> forTask(Map<String, String> ourTaskProps, String legacyTaskClass) {
    Map<String, String> legacy = withoutShareKeys(ourTaskProps);
    legacy.put(TASK_CLASS, legacyTaskClass);
    return legacy;
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

package io.sharesink.connect;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * Connector settings Connect's runtime reads only for source connectors ({@code
 * SourceConnectorConfig} in Kafka 4.2–4.4), refused on a share-mode connector. To the runtime a
 * share-mode connector is a source connector, so it would act on them: with {@code
 * offsets.storage.topic} the worker creates that topic, as its own admin principal and with no
 * client override asked, and reads it whole into its heap at every task start; {@code
 * exactly.once.support}, {@code transaction.boundary*} and {@code topic.creation.*} shape the
 * tasks' producers and topics. A classic sink connector has none of them, so share mode must not
 * either. Validation refuses them naming the key; the connector's and each task's start refuse a
 * configuration stored before this check (the runtime has already acted on it by then: see
 * docs/security.md for the clean-up).
 */
final class SourceOnlyKeys {

  /** The exact keys (SourceConnectorConfig's constants). */
  static final List<String> KEYS =
      List.of(
          "offsets.storage.topic",
          "exactly.once.support",
          "transaction.boundary",
          "transaction.boundary.interval.ms");

  /** The prefix of topic creation's keys: {@code topic.creation.groups} and every group's. */
  static final String TOPIC_CREATION_PREFIX = "topic.creation.";

  private SourceOnlyKeys() {}

  /** Each source-only key {@code props} sets, in order, with the reason it is refused. */
  static SortedMap<String, String> problems(Map<String, String> props) {
    SortedMap<String, String> problems = new TreeMap<>();
    for (String key : props.keySet()) {
      if (isSourceOnly(key)) {
        problems.put(key, message(key));
      }
    }
    return problems;
  }

  /** Throws, naming every source-only key {@code props} sets. */
  static void ensureAbsent(Map<String, String> props) {
    SortedMap<String, String> problems = problems(props);
    if (problems.isEmpty()) {
      return;
    }
    List<String> messages = new ArrayList<>();
    problems.forEach((key, message) -> messages.add(key + ": " + message));
    throw new ConnectException(
        "sharesink will not run connector "
            + props.get("name")
            + " in share mode: "
            + String.join("; ", messages));
  }

  static boolean isSourceOnly(String key) {
    return KEYS.contains(key) || key.startsWith(TOPIC_CREATION_PREFIX);
  }

  private static String message(String key) {
    String what =
        "offsets.storage.topic".equals(key)
            ? " (the worker would create that topic and read it whole at every task start)"
            : "";
    return key
        + " is a source connector setting; a sink connector has none, and Connect's runtime,"
        + " which runs a share-mode connector as a source connector, would act on it"
        + what
        + ". Remove it.";
  }
}

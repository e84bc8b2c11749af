package io.sharesink.connect.admin;

import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * What the cluster says about share groups, read once with the admin client: the finalized {@code
 * share.version}, the broker's bounds for group settings and DLQ prefix, and the group's effective
 * configs. A value the cluster did not report is absent; callers fall back to the documented
 * defaults and say so.
 *
 * @param shareVersion finalized {@code share.version}, absent when not reported
 * @param brokerConfigs the configs of one broker (name to value)
 * @param groupConfigs the share group's effective configs (explicit or broker default)
 * @param dlqTopicConfigs the configs of the DLQ topic; empty when it does not exist (or no DLQ
 *     topic is configured)
 */
public record ClusterFacts(
    OptionalInt shareVersion,
    Map<String, String> brokerConfigs,
    Map<String, String> groupConfigs,
    Optional<Map<String, String>> dlqTopicConfigs) {

  /** Broker default of {@code errors.deadletterqueue.topic.name.prefix} (Kafka 4.4). */
  public static final String DEFAULT_DLQ_PREFIX = "dlq.";

  public static final String DLQ_PREFIX = "errors.deadletterqueue.topic.name.prefix";
  public static final String MIN_LOCK = "group.share.min.record.lock.duration.ms";
  public static final String MAX_LOCK = "group.share.max.record.lock.duration.ms";
  public static final String BROKER_LOCK = "group.share.record.lock.duration.ms";
  public static final String MIN_DELIVERY = "group.share.min.delivery.count.limit";
  public static final String MAX_DELIVERY = "group.share.max.delivery.count.limit";
  public static final String MIN_RECORD_LOCKS = "group.share.min.partition.max.record.locks";
  public static final String MAX_RECORD_LOCKS = "group.share.max.partition.max.record.locks";
  public static final String BROKER_RECORD_LOCKS = "group.share.partition.max.record.locks";

  public ClusterFacts {
    brokerConfigs = Map.copyOf(brokerConfigs);
    groupConfigs = Map.copyOf(groupConfigs);
  }

  /** Facts without a DLQ topic to look at. */
  public ClusterFacts(
      OptionalInt shareVersion,
      Map<String, String> brokerConfigs,
      Map<String, String> groupConfigs) {
    this(shareVersion, brokerConfigs, groupConfigs, Optional.empty());
  }

  public static final String DLQ_AUTO_CREATE = "errors.deadletterqueue.auto.create.topics.enable";
  public static final String DLQ_GROUP_ENABLE = "errors.deadletterqueue.group.enable";

  /**
   * Why the broker could not write to {@code topic}, or empty when it can: the topic must exist
   * with {@code errors.deadletterqueue.group.enable=true}, or the broker must create it.
   */
  public Optional<String> brokerDlqTopicProblem(String topic) {
    if (dlqTopicConfigs.isEmpty()) {
      if ("true".equalsIgnoreCase(brokerConfigs.get(DLQ_AUTO_CREATE))) {
        return Optional.empty();
      }
      return Optional.of(
          "topic "
              + topic
              + " does not exist and the broker does not create DLQ topics ("
              + DLQ_AUTO_CREATE
              + "=false): create it with "
              + DLQ_GROUP_ENABLE
              + "=true");
    }
    if (!"true".equalsIgnoreCase(dlqTopicConfigs.get().get(DLQ_GROUP_ENABLE))) {
      return Optional.of(
          "topic "
              + topic
              + " does not accept share-group dead letters: set its "
              + DLQ_GROUP_ENABLE
              + "=true");
    }
    return Optional.empty();
  }

  /** The DLQ topic prefix the broker requires ("" = none). */
  public String dlqPrefix() {
    String prefix = brokerConfigs.get(DLQ_PREFIX);
    return prefix == null ? DEFAULT_DLQ_PREFIX : prefix;
  }

  /** Whether the broker can write a share group's DLQ (KIP-1191 needs share.version 2). */
  public boolean brokerDlqAvailable() {
    return shareVersion.isPresent() && shareVersion.getAsInt() >= 2;
  }

  public Optional<Long> brokerLong(String name) {
    return parse(brokerConfigs.get(name));
  }

  /** A numeric config of the group, absent when not reported. */
  public Optional<Long> groupLong(String name) {
    return parse(groupConfigs.get(name));
  }

  /** The lock duration the group runs with: its own setting, else the broker's default. */
  public Optional<Long> effectiveLockDurationMs() {
    Optional<Long> group = parse(groupConfigs.get("share.record.lock.duration.ms"));
    return group.isPresent() ? group : brokerLong(BROKER_LOCK);
  }

  /**
   * The record-lock window (in-flight records per share-partition) the group runs with: its own
   * {@code share.partition.max.record.locks}, else the broker's default.
   */
  public Optional<Long> effectiveRecordLocks() {
    Optional<Long> group = parse(groupConfigs.get("share.partition.max.record.locks"));
    return group.isPresent() ? group : brokerLong(BROKER_RECORD_LOCKS);
  }

  private static Optional<Long> parse(String value) {
    if (value == null || value.isBlank()) {
      return Optional.empty();
    }
    try {
      return Optional.of(Long.parseLong(value.trim()));
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }
}

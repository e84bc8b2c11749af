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
 */
public record ClusterFacts(
    OptionalInt shareVersion, Map<String, String> brokerConfigs, Map<String, String> groupConfigs) {

  /** Broker default of {@code errors.deadletterqueue.topic.name.prefix} (Kafka 4.4). */
  public static final String DEFAULT_DLQ_PREFIX = "dlq.";

  public static final String DLQ_PREFIX = "errors.deadletterqueue.topic.name.prefix";
  public static final String MIN_LOCK = "group.share.min.record.lock.duration.ms";
  public static final String MAX_LOCK = "group.share.max.record.lock.duration.ms";
  public static final String BROKER_LOCK = "group.share.record.lock.duration.ms";
  public static final String MIN_DELIVERY = "group.share.min.delivery.count.limit";
  public static final String MAX_DELIVERY = "group.share.max.delivery.count.limit";
  public static final String BROKER_DELIVERY = "group.share.delivery.count.limit";

  public ClusterFacts {
    brokerConfigs = Map.copyOf(brokerConfigs);
    groupConfigs = Map.copyOf(groupConfigs);
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

  /** The lock duration the group runs with: its own setting, else the broker's default. */
  public Optional<Long> effectiveLockDurationMs() {
    Optional<Long> group = parse(groupConfigs.get("share.record.lock.duration.ms"));
    return group.isPresent() ? group : brokerLong(BROKER_LOCK);
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

package io.sharesink.connect.admin;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the connector does to its share group before the first member joins, once per connector
 * start (not per task): check the settings against the broker's bounds, set the group configs, and
 * on the group's first start seed its start offsets from the classic sink runtime's consumer group.
 */
public final class ShareGroupSetup {

  private static final Logger log = LoggerFactory.getLogger(ShareGroupSetup.class);

  /**
   * What the setup did, for the tasks and for logs; {@code recordLocks} is the record-lock window
   * (in-flight records per share-partition) the group now runs with, {@code readCommitted} whether
   * it reads committed records only (its lag then counts to the last stable offset).
   */
  public record Result(
      String dlqMode,
      Map<String, String> applied,
      Map<TopicPartition, Long> seeded,
      long recordLocks,
      boolean readCommitted) {}

  private ShareGroupSetup() {}

  /**
   * @param migrateFrom the classic consumer group to seed from, or null for no migration
   * @throws ConnectException naming the key and the broker's bound when a setting is out of range,
   *     or when the cluster cannot be reached
   */
  public static Result apply(
      ShareGroupAdmin admin,
      String groupId,
      GroupSettings settings,
      List<String> topics,
      String migrateFrom) {
    ClusterFacts facts = admin.facts(groupId, settings.dlqTopic());
    Map<String, List<String>> problems = settings.problems(facts);
    if (!problems.isEmpty()) {
      throw new ConnectException(
          "cannot configure share group "
              + groupId
              + ": "
              + problems.entrySet().stream()
                  .map(e -> e.getKey() + ": " + String.join("; ", e.getValue()))
                  .collect(Collectors.joining(". ")));
    }
    String dlqMode = settings.resolveDlqMode(facts);
    if (GroupSettings.CONNECT.equals(dlqMode)
        && !settings.dlqTopic().isEmpty()
        && !GroupSettings.CONNECT.equals(settings.dlqMode())) {
      log.info(
          "Share group {}: the tasks write DLQ {} themselves; the broker cannot ({})",
          groupId,
          settings.dlqTopic(),
          whyNotBroker(settings.dlqTopic(), facts));
    }
    Map<String, String> configs = settings.groupConfigs(dlqMode, facts);
    logIsolationChange(groupId, settings.isolation(), facts, configs);
    admin.alterGroupConfigs(groupId, configs);
    log.info(
        "Share group {}: group configs {} (DLQ written by {}; share.version {})",
        groupId,
        configs,
        settings.dlqTopic().isEmpty() ? "nobody, none configured" : dlqMode,
        facts.shareVersion().isPresent() ? facts.shareVersion().getAsInt() : "unknown");

    Map<TopicPartition, Long> seeded = Map.of();
    if (migrateFrom != null) {
      seeded = migrate(admin, groupId, topics, migrateFrom);
    }
    return new Result(
        dlqMode,
        configs,
        seeded,
        settings.effectiveRecordLocks(facts),
        GroupSettings.readsCommitted(configs, facts));
  }

  /**
   * Says when the group's {@code share.isolation.level} changes: which records the sink gets
   * changes with it.
   */
  private static void logIsolationChange(
      String groupId,
      GroupSettings.Isolation asked,
      ClusterFacts facts,
      Map<String, String> configs) {
    if (asked == GroupSettings.Isolation.UNKNOWN) {
      log.warn(
          "Share group {}: {} left as it is ({}): the worker's configuration cannot be seen, so"
              + " whether its consumer.isolation.level asks for one is unknown",
          groupId,
          GroupSettings.ISOLATION_LEVEL,
          facts.groupConfigs().getOrDefault(GroupSettings.ISOLATION_LEVEL, "unknown"));
      return;
    }
    if (!configs.containsKey(GroupSettings.ISOLATION_LEVEL)) {
      return;
    }
    String was =
        facts
            .groupConfigs()
            .getOrDefault(GroupSettings.ISOLATION_LEVEL, GroupSettings.READ_UNCOMMITTED);
    if (asked == null) {
      log.warn(
          "Share group {}: removing {}={}, which this connector's settings do not ask for: it reads"
              + " every record now, aborted transactions' too, as a classic sink with these settings"
              + " would. To read committed records only, set consumer.override.isolation.level"
              + "=read_committed (or the worker's consumer.isolation.level)",
          groupId,
          GroupSettings.ISOLATION_LEVEL,
          was);
    } else if (!was.equals(asked.level())) {
      log.info(
          "Share group {}: {} {} -> {} ({})",
          groupId,
          GroupSettings.ISOLATION_LEVEL,
          was,
          asked.level(),
          asked.origin());
    }
  }

  private static String whyNotBroker(String topic, ClusterFacts facts) {
    if (!facts.brokerDlqAvailable()) {
      return "share.version below 2";
    }
    if (!topic.startsWith(facts.dlqPrefix())) {
      return "the name lacks the broker's prefix '" + facts.dlqPrefix() + "'";
    }
    return facts.brokerDlqTopicProblem(topic).orElse("unknown");
  }

  /**
   * On the share group's first start (no partition state yet), sets its start offsets to the
   * classic group's committed offsets for our topics. Partitions the classic group never committed
   * start per {@code share.auto.offset.reset}.
   */
  static Map<TopicPartition, Long> migrate(
      ShareGroupAdmin admin, String groupId, List<String> topics, String classicGroup) {
    Map<TopicPartition, ?> existing = admin.shareGroupOffsets(groupId);
    if (!existing.isEmpty()) {
      log.debug(
          "Share group {} already has state for {}: no migration", groupId, existing.keySet());
      return Map.of();
    }
    Map<TopicPartition, Long> committed = admin.consumerGroupOffsets(classicGroup);
    Map<TopicPartition, Long> seed = new HashMap<>();
    committed.forEach(
        (tp, offset) -> {
          if (topics.contains(tp.topic())) {
            seed.put(tp, offset);
          }
        });
    if (seed.isEmpty()) {
      log.info(
          "Share group {} starts fresh: consumer group {} has no committed offsets for {}",
          groupId,
          classicGroup,
          topics);
      return Map.of();
    }
    admin.alterShareGroupOffsets(groupId, seed);
    log.info(
        "Share group {} starts where consumer group {} stopped: {}", groupId, classicGroup, seed);
    return seed;
  }
}

package io.sharesink.connect.admin;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The group configs sharesink sets on its share group, and the checks against the broker's bounds.
 * Pure logic over {@link ClusterFacts}, so it serves both {@code validate()} (errors on keys) and
 * the connector's {@code start()} (a {@code ConnectException} naming key and bound).
 *
 * @param autoOffsetReset {@code share.auto.offset.reset} (always set)
 * @param lockDurationMs {@code share.record.lock.duration.ms}, or null to keep the broker's
 * @param deliveryCountLimit {@code share.delivery.count.limit}, or null to keep the broker's
 * @param dlqMode {@code auto}, {@code broker} or {@code connect}
 * @param dlqTopic Connect's {@code errors.deadletterqueue.topic.name}, "" for none
 * @param commitIntervalMs {@code share.commit.interval.ms}
 * @param partitionMaxRecordLocks {@code share.partition.max.record.locks}, or null for the default
 *     of {@link #recordLocksToSet}
 * @param isolation the {@code isolation.level} the connector's consumer settings ask for, or null
 *     when nobody sets one (see {@link #groupConfigs})
 * @param members how many members the connector may run in the group ({@code tasks.max}: one share
 *     consumer per task), or 0 when not checked
 */
public record GroupSettings(
    String autoOffsetReset,
    Integer lockDurationMs,
    Integer deliveryCountLimit,
    String dlqMode,
    String dlqTopic,
    long commitIntervalMs,
    Integer partitionMaxRecordLocks,
    Isolation isolation,
    int members) {

  /** Settings whose member count is not checked. */
  public GroupSettings(
      String autoOffsetReset,
      Integer lockDurationMs,
      Integer deliveryCountLimit,
      String dlqMode,
      String dlqTopic,
      long commitIntervalMs,
      Integer partitionMaxRecordLocks,
      Isolation isolation) {
    this(
        autoOffsetReset,
        lockDurationMs,
        deliveryCountLimit,
        dlqMode,
        dlqTopic,
        commitIntervalMs,
        partitionMaxRecordLocks,
        isolation,
        0);
  }

  /**
   * An {@code isolation.level} asked for, and the key that asked ({@code
   * consumer.override.isolation.level}, {@code share.consumer.isolation.level}, or {@code worker
   * consumer.isolation.level} for the worker's setting); {@link #UNKNOWN} when what the worker asks
   * cannot be known.
   */
  public record Isolation(String level, String origin) {

    /**
     * The worker's configuration cannot be seen (docs/security.md), so whether its {@code
     * consumer.isolation.level} asks for one is unknown: the group's level is left as it is
     * (removing a {@code read_committed} the worker asks for would write aborted records).
     */
    public static final Isolation UNKNOWN =
        new Isolation(null, "the worker's consumer.isolation.level, which cannot be seen");

    /** Whether a level is asked for (false for {@link #UNKNOWN}). */
    public boolean asked() {
      return level != null;
    }
  }

  /** Settings without an isolation level asked for. */
  public GroupSettings(
      String autoOffsetReset,
      Integer lockDurationMs,
      Integer deliveryCountLimit,
      String dlqMode,
      String dlqTopic,
      long commitIntervalMs,
      Integer partitionMaxRecordLocks) {
    this(
        autoOffsetReset,
        lockDurationMs,
        deliveryCountLimit,
        dlqMode,
        dlqTopic,
        commitIntervalMs,
        partitionMaxRecordLocks,
        null);
  }

  /** Settings without a record-lock window of their own (see {@link #recordLocksToSet}). */
  public GroupSettings(
      String autoOffsetReset,
      Integer lockDurationMs,
      Integer deliveryCountLimit,
      String dlqMode,
      String dlqTopic,
      long commitIntervalMs) {
    this(
        autoOffsetReset,
        lockDurationMs,
        deliveryCountLimit,
        dlqMode,
        dlqTopic,
        commitIntervalMs,
        null);
  }

  public static final String AUTO_OFFSET_RESET = "share.auto.offset.reset";
  public static final String LOCK_DURATION = "share.record.lock.duration.ms";
  public static final String DELIVERY_COUNT_LIMIT = "share.delivery.count.limit";
  public static final String PARTITION_MAX_RECORD_LOCKS = "share.partition.max.record.locks";
  public static final String ISOLATION_LEVEL = "share.isolation.level";
  public static final String READ_COMMITTED = "read_committed";
  public static final String READ_UNCOMMITTED = "read_uncommitted";

  /** Where a worker's setting is reported: the connector key that would override it. */
  static final String ISOLATION_OVERRIDE_KEY = "consumer.override.isolation.level";

  public static final String DLQ_TOPIC = "errors.deadletterqueue.topic.name";
  public static final String DLQ_COPY_RECORD = "errors.deadletterqueue.copy.record.enable";

  /** Our keys the checks report on. */
  public static final String COMMIT_INTERVAL_KEY = "share.commit.interval.ms";

  public static final String DLQ_MODE_KEY = "share.dlq.mode";

  /** Where a cluster without share groups is reported: the key every validation shows. */
  public static final String GROUP_ID_KEY = "share.group.id";

  public static final String BROKER = "broker";

  /** How problems of the broker DLQ mode start: "with share.dlq.mode=broker". */
  private static final String IN_BROKER_MODE = "with " + DLQ_MODE_KEY + "=" + BROKER;

  public static final String CONNECT = "connect";

  /** Kafka 4.4 broker defaults, used when the broker does not report a bound. */
  static final long DEFAULT_MIN_LOCK = 15_000;

  static final long DEFAULT_MAX_LOCK = 60_000;
  static final long DEFAULT_MIN_DELIVERY = 2;
  static final long DEFAULT_MAX_DELIVERY = 10;
  static final long DEFAULT_MIN_RECORD_LOCKS = 100;
  static final long DEFAULT_MAX_RECORD_LOCKS = 4_000;

  /** The broker's bound on a share group's members, and Kafka 4.4's default of it. */
  public static final String BROKER_MAX_SIZE = "group.share.max.size";

  static final long DEFAULT_MAX_SIZE = 200;

  /** Where a member count beyond the broker's bound is reported. */
  public static final String TASKS_MAX_KEY = "tasks.max";

  /** Kafka's broker default of {@code group.share.partition.max.record.locks}. */
  public static final long DEFAULT_RECORD_LOCKS = 2_000;

  /** These settings with {@code isolation} asked for (null: nobody asks). */
  public GroupSettings withIsolation(Isolation isolation) {
    return with(isolation, members);
  }

  /** These settings for a connector of at most {@code members} tasks. */
  public GroupSettings withMembers(int members) {
    return with(isolation, members);
  }

  private GroupSettings with(Isolation isolation, int members) {
    return new GroupSettings(
        autoOffsetReset,
        lockDurationMs,
        deliveryCountLimit,
        dlqMode,
        dlqTopic,
        commitIntervalMs,
        partitionMaxRecordLocks,
        isolation,
        members);
  }

  /**
   * Whether the group reads committed records only once these settings are applied: only when asked
   * for, since {@link #groupConfigs} removes a {@code read_committed} nobody asks for.
   */
  public boolean readCommitted() {
    return isolation != null && READ_COMMITTED.equals(isolation.level());
  }

  /**
   * Whether the group reads committed records only once {@code applied} (from {@link
   * #groupConfigs}) is set on a group whose configs were {@code facts}: what was set, else what the
   * group had.
   */
  public static boolean readsCommitted(Map<String, String> applied, ClusterFacts facts) {
    if (applied.containsKey(ISOLATION_LEVEL)) {
      return READ_COMMITTED.equals(applied.get(ISOLATION_LEVEL));
    }
    return facts != null && READ_COMMITTED.equals(facts.groupConfigs().get(ISOLATION_LEVEL));
  }

  /**
   * Who writes the DLQ: {@code broker} or {@code connect}. {@code auto} picks the broker when the
   * cluster has share.version 2, the topic carries the broker's required prefix, and the broker can
   * write to it (it exists with errors.deadletterqueue.group.enable=true, or the broker creates DLQ
   * topics).
   */
  public String resolveDlqMode(ClusterFacts facts) {
    if (BROKER.equals(dlqMode) || CONNECT.equals(dlqMode)) {
      return dlqMode;
    }
    if (!dlqTopic.isEmpty()
        && facts != null
        && facts.brokerDlqAvailable()
        && dlqTopic.startsWith(facts.dlqPrefix())
        && facts.brokerDlqTopicProblem(dlqTopic).isEmpty()) {
      return BROKER;
    }
    return CONNECT;
  }

  /**
   * The group configs to apply: key to value, null meaning delete. {@code share.auto.offset.reset}
   * is always set (it only affects partitions the group has no state for); the broker DLQ is set in
   * broker mode and removed otherwise, so switching to connect mode never writes a record twice.
   *
   * <p>{@code share.isolation.level} follows the connector's consumer settings as a classic
   * consumer's {@code isolation.level} does: set to the level asked for, and when nobody asks, a
   * {@code read_committed} on the group is removed, so the group reads at Kafka's default ({@code
   * read_uncommitted}) as the classic runtime's consumer would. A group config does not say who set
   * it; the group is the connector's (its share group, as for the broker DLQ keys). When what the
   * worker asks cannot be known ({@link Isolation#UNKNOWN}) the group's level is left alone.
   */
  public Map<String, String> groupConfigs(String resolvedDlqMode, ClusterFacts facts) {
    Map<String, String> configs = new LinkedHashMap<>();
    configs.put(AUTO_OFFSET_RESET, autoOffsetReset);
    if (isolation != null && isolation.asked()) {
      configs.put(ISOLATION_LEVEL, isolation.level());
    } else if (isolation == null
        && facts != null
        && READ_COMMITTED.equals(facts.groupConfigs().get(ISOLATION_LEVEL))) {
      configs.put(ISOLATION_LEVEL, null);
    }
    if (lockDurationMs != null) {
      configs.put(LOCK_DURATION, lockDurationMs.toString());
    }
    if (deliveryCountLimit != null) {
      configs.put(DELIVERY_COUNT_LIMIT, deliveryCountLimit.toString());
    }
    Long recordLocks = recordLocksToSet(facts);
    if (recordLocks != null) {
      configs.put(PARTITION_MAX_RECORD_LOCKS, recordLocks.toString());
    }
    if (BROKER.equals(resolvedDlqMode) && !dlqTopic.isEmpty()) {
      configs.put(DLQ_TOPIC, dlqTopic);
      configs.put(DLQ_COPY_RECORD, "true");
    } else if (facts != null && !facts.groupConfigs().getOrDefault(DLQ_TOPIC, "").isEmpty()) {
      configs.put(DLQ_TOPIC, null);
      configs.put(DLQ_COPY_RECORD, null);
    }
    return configs;
  }

  /**
   * Problems with these settings on this cluster, by the key to report them on. With {@code facts}
   * null (cluster unreachable) only what needs no cluster is checked, against Kafka's defaults.
   */
  public Map<String, List<String>> problems(ClusterFacts facts) {
    Map<String, List<String>> problems = new LinkedHashMap<>();
    if (facts != null && facts.shareVersion().isPresent() && facts.shareVersion().getAsInt() < 1) {
      add(
          problems,
          GROUP_ID_KEY,
          "the cluster has share.version "
              + facts.shareVersion().getAsInt()
              + ": share groups are off (a cluster upgraded to Kafka 4.2+ keeps them off until"
              + " the feature is enabled): enable them with kafka-features.sh --bootstrap-server"
              + " <broker> upgrade --feature share.version=1");
    }
    if (isolation != null
        && isolation.asked()
        && !READ_COMMITTED.equals(isolation.level())
        && !READ_UNCOMMITTED.equals(isolation.level())) {
      boolean fromWorker = isolation.origin() == null || isolation.origin().startsWith("worker ");
      add(
          problems,
          fromWorker ? ISOLATION_OVERRIDE_KEY : isolation.origin(),
          (fromWorker ? "the worker's consumer.isolation.level " : "")
              + "'"
              + isolation.level()
              + "' is not an isolation level: use "
              + READ_COMMITTED
              + " (records of committed transactions only) or "
              + READ_UNCOMMITTED
              + " (every record, as Kafka's default)");
    }
    checkBounds(
        problems,
        facts,
        LOCK_DURATION,
        lockDurationMs,
        ClusterFacts.MIN_LOCK,
        DEFAULT_MIN_LOCK,
        ClusterFacts.MAX_LOCK,
        DEFAULT_MAX_LOCK);
    checkBounds(
        problems,
        facts,
        DELIVERY_COUNT_LIMIT,
        deliveryCountLimit,
        ClusterFacts.MIN_DELIVERY,
        DEFAULT_MIN_DELIVERY,
        ClusterFacts.MAX_DELIVERY,
        DEFAULT_MAX_DELIVERY);
    checkBounds(
        problems,
        facts,
        PARTITION_MAX_RECORD_LOCKS,
        partitionMaxRecordLocks,
        ClusterFacts.MIN_RECORD_LOCKS,
        DEFAULT_MIN_RECORD_LOCKS,
        ClusterFacts.MAX_RECORD_LOCKS,
        DEFAULT_MAX_RECORD_LOCKS);
    // The lock the group will run with: ours, else the group's or broker's, when known.
    Long lock = lockDurationMs != null ? Long.valueOf(lockDurationMs) : null;
    String lockSource = LOCK_DURATION;
    if (lock == null && facts != null && facts.effectiveLockDurationMs().isPresent()) {
      lock = facts.effectiveLockDurationMs().get();
      lockSource = "the group's effective " + LOCK_DURATION;
    }
    if (lock != null && commitIntervalMs > lock / 2) {
      add(
          problems,
          COMMIT_INTERVAL_KEY,
          commitIntervalMs
              + " ms is not well below the acquisition lock ("
              + lockSource
              + " = "
              + lock
              + " ms): it must be at most half of it, or records the sink buffers between"
              + " commits need constant renewal and a crashed task's records wait that long");
    }
    if (BROKER.equals(dlqMode)) {
      if (facts != null && !facts.brokerDlqAvailable()) {
        add(
            problems,
            DLQ_MODE_KEY,
            "the broker writes share-group DLQs only with share.version 2 or more; the cluster"
                + " has share.version "
                + (facts.shareVersion().isPresent() ? facts.shareVersion().getAsInt() : "unknown")
                + ": use "
                + CONNECT
                + " or "
                + "auto, or upgrade the feature (kafka-features.sh upgrade --feature"
                + " share.version=2)");
      }
      String prefix = facts != null ? facts.dlqPrefix() : ClusterFacts.DEFAULT_DLQ_PREFIX;
      if (!dlqTopic.isEmpty() && facts != null && dlqTopic.startsWith(prefix)) {
        facts
            .brokerDlqTopicProblem(dlqTopic)
            .ifPresent(
                problem ->
                    add(
                        problems,
                        DLQ_TOPIC,
                        IN_BROKER_MODE + " the broker writes the DLQ, but " + problem));
      }
      if (!dlqTopic.isEmpty() && !dlqTopic.startsWith(prefix)) {
        add(
            problems,
            DLQ_TOPIC,
            IN_BROKER_MODE
                + " the DLQ topic must start with the broker's "
                + ClusterFacts.DLQ_PREFIX
                + " '"
                + prefix
                + "'"
                + (facts != null ? "" : " (Kafka's default; the cluster could not be reached)")
                + ": rename the topic, or use "
                + DLQ_MODE_KEY
                + "="
                + CONNECT);
      }
    }
    long maxSize = bound(facts, BROKER_MAX_SIZE, DEFAULT_MAX_SIZE);
    if (members > maxSize) {
      add(
          problems,
          TASKS_MAX_KEY,
          "tasks.max="
              + members
              + " runs a share consumer per task, and a share group holds at most "
              + maxSize
              + " members ("
              + BROKER_MAX_SIZE
              + boundSource(facts)
              + "): the tasks beyond it would fail to join (GROUP_MAX_SIZE_REACHED). Lower"
              + " tasks.max, or raise "
              + BROKER_MAX_SIZE
              + " on the brokers");
    }
    return problems;
  }

  /**
   * The record-lock window (in-flight records per share-partition) the group runs with once these
   * settings are applied: what {@link #recordLocksToSet} sets, else the group's own {@code
   * share.partition.max.record.locks}, else the broker's {@code
   * group.share.partition.max.record.locks}, else Kafka's default (2000).
   */
  public long effectiveRecordLocks(ClusterFacts facts) {
    Long toSet = recordLocksToSet(facts);
    if (toSet != null) {
      return toSet;
    }
    return facts == null
        ? DEFAULT_RECORD_LOCKS
        : facts.effectiveRecordLocks().orElse(DEFAULT_RECORD_LOCKS);
  }

  /**
   * The record-lock window to set on the group, or null to leave the group's as it is. Ours when
   * given. Unset, the broker's maximum ({@code group.share.max.partition.max.record.locks}, 4000 by
   * default) while the group still runs with the broker's default window: a partition delivers
   * about one window per fetch-commit-acknowledge cycle, and with Kafka's default window of 2000 a
   * fast sink ran at 0.9 of the classic runtime, with 4000 at 1.15 (docs/benchmarks, row (d)). A
   * group whose window someone set keeps it, and a broker that reports no maximum (4.2, which has
   * no such group config) is left alone.
   */
  Long recordLocksToSet(ClusterFacts facts) {
    if (partitionMaxRecordLocks != null) {
      return partitionMaxRecordLocks.longValue();
    }
    if (facts == null) {
      return null;
    }
    Optional<Long> max = facts.brokerLong(ClusterFacts.MAX_RECORD_LOCKS);
    long brokerDefault =
        facts.brokerLong(ClusterFacts.BROKER_RECORD_LOCKS).orElse(DEFAULT_RECORD_LOCKS);
    Optional<Long> group = facts.groupLong(PARTITION_MAX_RECORD_LOCKS);
    if (max.isEmpty() || max.get() <= brokerDefault) {
      return null;
    }
    if (group.isPresent() && group.get() != brokerDefault) {
      return null;
    }
    return max.get();
  }

  /** A group setting outside the broker's bounds for it is a problem on its key. */
  private static void checkBounds(
      Map<String, List<String>> problems,
      ClusterFacts facts,
      String key,
      Number value,
      String minName,
      long defaultMin,
      String maxName,
      long defaultMax) {
    if (value == null) {
      return;
    }
    long min = bound(facts, minName, defaultMin);
    long max = bound(facts, maxName, defaultMax);
    long v = value.longValue();
    if (v < min || v > max) {
      add(
          problems,
          key,
          v
              + " is outside the broker's bounds ["
              + min
              + ", "
              + max
              + "] ("
              + minName
              + ", "
              + maxName
              + boundSource(facts)
              + ")");
    }
  }

  private static long bound(ClusterFacts facts, String name, long fallback) {
    return facts == null ? fallback : facts.brokerLong(name).orElse(fallback);
  }

  private static String boundSource(ClusterFacts facts) {
    return facts == null ? "; Kafka's defaults, the cluster could not be reached" : "";
  }

  private static void add(Map<String, List<String>> problems, String key, String message) {
    problems.computeIfAbsent(key, k -> new ArrayList<>()).add(message);
  }
}

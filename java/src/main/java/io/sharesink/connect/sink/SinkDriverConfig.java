package io.sharesink.connect.sink;

import io.sharesink.connect.config.ConfigSections;
import io.sharesink.connect.config.OrderedConfigDef;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.Width;

/**
 * The settings the sink driver reads: sharesink's commit cadence and policy, plus Connect's own
 * {@code errors.*} keys with the runtime's names and defaults, so a legacy sink's configuration
 * means what it meant under the sink runtime. Unknown keys are ignored (the same map carries the
 * legacy connector's settings).
 *
 * <p>Keys only, in ShareSinkConfig's convention ({@code X_CONFIG}, {@code X_DEFAULT}, {@code
 * X_DOC}, {@code X_DISPLAY}); validators in {@link DriverConfigValidators}. The connector's
 * ConfigDef includes the {@code share.*} keys it documents as they are defined here, group and
 * order included.
 */
public final class SinkDriverConfig extends AbstractConfig {

  public static final String DELIVERY_COUNT_HEADER_CONFIG = "share.delivery.count.header";
  public static final String DELIVERY_COUNT_HEADER_DEFAULT = "";
  private static final String DELIVERY_COUNT_HEADER_DOC =
      "Name of a header to add to every record the sink gets, carrying how many times the "
          + "share group has delivered the record (an INT32: 1 on the first delivery, 2 "
          + "after one redelivery, up to the group's share.delivery.count.limit). Empty "
          + "(default): no header. A redelivery happens when a lock runs out, a task "
          + "fails or stops, or another member releases the record, so a sink or SMT can "
          + "use it to de-duplicate, or to route records delivered many times elsewhere "
          + "(a predicate on the header, for instance). The header is added after the "
          + "header converter and before the connector's transforms, so transforms and "
          + "predicates see it; a header of the same name on the record is replaced.";
  private static final String DELIVERY_COUNT_HEADER_DISPLAY = "Delivery count header";

  public static final String COMMIT_INTERVAL_MS_CONFIG = "share.commit.interval.ms";
  public static final long COMMIT_INTERVAL_MS_DEFAULT = 5_000;
  private static final String COMMIT_INTERVAL_MS_DOC =
      "How often the legacy task's preCommit (hence flush) runs and the records it "
          + "reports flushed are ACCEPTed. Must be well below the group's "
          + "share.record.lock.duration.ms (30 s by default): records still buffered by the "
          + "sink are RENEWed meanwhile, but a shorter interval means fewer renewals and "
          + "less work redelivered after a crash.";
  private static final String COMMIT_INTERVAL_MS_DISPLAY = "Commit interval (ms)";

  public static final String COMMIT_MAX_RECORDS_CONFIG = "share.commit.max.records";
  public static final int COMMIT_MAX_RECORDS_DEFAULT = 1_000;
  private static final String COMMIT_MAX_RECORDS_DOC =
      "Besides every share.commit.interval.ms, a commit cycle (preCommit, then ACCEPT of "
          + "what it covers) runs as soon as this many records have been put since the "
          + "last one, and also when a poll returns nothing while records put since the "
          + "last commit are held (the topic is drained, or the broker's in-flight window "
          + "is used up; such a poll waits at most 50 ms, so a full window is freed "
          + "within that). The broker lends each share-partition only "
          + "share.partition.max.record.locks records (2000 by default) until they are "
          + "acknowledged, so a sink that waited for the interval would sit idle most of "
          + "it. Unset, the connector sets it to half the window the group actually has "
          + "(its share.partition.max.record.locks, else the broker's "
          + "group.share.partition.max.record.locks; 1000 for Kafka's default 2000) and "
          + "logs the value: even a task holding a single partition commits, and a later "
          + "put confirms, before its window runs out. A value above the window leaves "
          + "only the empty-poll trigger and is much slower. 0 disables both on-demand "
          + "triggers (commits at the interval only). Records are still ACCEPTed only once "
          + "a later put has returned.";
  private static final String COMMIT_MAX_RECORDS_DISPLAY = "Commit after records";

  public static final String COMMIT_MIN_INTERVAL_MS_CONFIG = "share.commit.min.interval.ms";
  public static final long COMMIT_MIN_INTERVAL_MS_DEFAULT = 10;
  private static final String COMMIT_MIN_INTERVAL_MS_DOC =
      "The shortest time between an on-demand commit cycle (see "
          + "share.commit.max.records) and the previous commit cycle. Each cycle calls the "
          + "task's preCommit, hence usually its flush, so this bounds the flushes a fast "
          + "stream costs to one per this many milliseconds. An on-demand cycle covers at "
          + "least share.commit.max.records records, or runs because the broker's "
          + "in-flight window is used up (or the topic is drained), so a longer spacing "
          + "cannot put more records into one flush: it only leaves the task idle. Raise "
          + "it only for a sink whose flush costs much more than this regardless of size.";
  private static final String COMMIT_MIN_INTERVAL_MS_DISPLAY = "Minimum commit spacing (ms)";

  public static final String EMPTY_PRECOMMIT_CONFIG = "share.commit.empty.precommit";
  public static final String EMPTY_PRECOMMIT_ACCEPT = "accept";
  public static final String EMPTY_PRECOMMIT_HOLD = "hold";
  public static final String EMPTY_PRECOMMIT_DEFAULT = EMPTY_PRECOMMIT_HOLD;
  private static final String EMPTY_PRECOMMIT_DOC =
      "What an empty (or null) map from preCommit means. Under the sink runtime it "
          + "commits nothing: sinks that write files (S3, GCS, HDFS) return one while they "
          + "buffer records they have not written yet. 'hold' (default): ACCEPT nothing; "
          + "the records stay held, their locks renewed, until a preCommit returns offsets "
          + "covering them. A task that keeps returning empty maps stalls once the "
          + "broker's in-flight window (share.partition.max.record.locks) is full; that is "
          + "logged once per task as a warning naming this setting, and once it has "
          + "returned only empty maps for share.task.stuck.timeout.ms (15 minutes by "
          + "default) while records waited and none was put meanwhile, the task fails with "
          + "a message naming the sink's own offset management instead of holding its "
          + "records for ever (a sink that commits its own offsets, as Apache Iceberg's "
          + "does, cannot run in share mode). 'accept': treat an "
          + "empty map as covering every record put before the call (once a later put has "
          + "returned), for tasks that write every record inside put and manage their own "
          + "offsets; a task that buffers would lose what it buffered in a crash.";
  private static final String EMPTY_PRECOMMIT_DISPLAY = "Empty preCommit policy";

  public static final String TASK_STUCK_TIMEOUT_MS_CONFIG = "share.task.stuck.timeout.ms";
  public static final long TASK_STUCK_TIMEOUT_MS_DEFAULT = 15 * 60_000;

  /**
   * One day: the records a stuck task holds (and the native engine's buffer behind it) are held no
   * longer, whatever a connector asks.
   */
  public static final long TASK_STUCK_TIMEOUT_MS_MAX = 24 * 60 * 60_000L;

  private static final String TASK_STUCK_TIMEOUT_MS_DOC =
      "How long the records a task holds stay renewed while the task makes no progress: "
          + "while one call into the legacy task (put, preCommit/flush, open, close, "
          + "start of a restarted instance, a converter retrying under "
          + "errors.retry.timeout) keeps running, or while one put keeps failing with "
          + "RetriableException. Meanwhile every held record's acquisition lock is renewed "
          + "from a thread of its own, so a downstream outage (a database down, a sink "
          + "retrying inside put) burns no delivery attempt and loses nothing, however "
          + "short the group's share.record.lock.duration.ms. Past this bound the records "
          + "are RELEASEd so that other members deliver them (each release costs one "
          + "delivery attempt), and a stuck task no longer holds them. The default (15 "
          + "minutes) rides out a 10-minute outage without a single redelivery. The same "
          + "bound fails a task whose preCommit keeps returning empty maps while records "
          + "wait and none is put (see share.commit.empty.precommit). At most one day "
          + "(86400000). It also sets how long the share consumer holds fetched records the "
          + "task has not polled (share.buffer.hold.max.ms), so the worker's "
          + "connector.client.config.override.policy is asked about it as that consumer "
          + "setting: policies None and Principal refuse it, as they refuse every consumer "
          + "override but the principal.";
  private static final String TASK_STUCK_TIMEOUT_MS_DISPLAY = "Stuck task timeout (ms)";

  public static final String TASK_RESTART_MAX_ATTEMPTS_CONFIG = "share.task.restart.max.attempts";
  public static final int TASK_RESTART_MAX_ATTEMPTS_DEFAULT = 10;
  private static final String TASK_RESTART_MAX_ATTEMPTS_DOC =
      "When the legacy task throws from put, preCommit or flush an exception that is not "
          + "a RetriableException (the sink runtime would fail the task: a database "
          + "refusing connections, say), sharesink restarts the legacy task in place "
          + "instead, up to this many times in a row: it stops the failed instance "
          + "(close, then stop), keeps every record it holds (renewing their locks, so the "
          + "broker neither redelivers them nor counts another delivery), waits the "
          + "backoff, then starts a new instance (initialize, start, open) and puts again "
          + "every held record not yet ACCEPTed. A restarted instance whose start fails "
          + "uses another attempt. The count resets once a restarted instance has taken "
          + "its first put and a later put has returned. When a failure finds no attempt "
          + "left, the Connect task fails and releases what it holds, as with 0, which "
          + "turns restarts off. Conversion and transformation failures follow errors.* "
          + "and are never restarted, nor is a put failing because the task reported a "
          + "record as errant under errors.tolerance=none. A record the sink itself can "
          + "never write (not a converter failure) fails the task only once the restarts "
          + "are used up. With the defaults (waits of 1, 2, 4, 8, 16, then 30 s) the "
          + "restarts ride out an outage of about three minutes before the task fails.";
  private static final String TASK_RESTART_MAX_ATTEMPTS_DISPLAY = "Restart attempts";

  public static final String TASK_RESTART_BACKOFF_MS_CONFIG = "share.task.restart.backoff.ms";
  public static final long TASK_RESTART_BACKOFF_MS_DEFAULT = 1_000;
  private static final String TASK_RESTART_BACKOFF_MS_DOC =
      "How long the first restart of a failed legacy task waits (see "
          + "share.task.restart.max.attempts); each further attempt in a row waits twice "
          + "as long as the previous one, up to share.task.restart.backoff.max.ms.";
  private static final String TASK_RESTART_BACKOFF_MS_DISPLAY = "Restart backoff (ms)";

  public static final String TASK_RESTART_BACKOFF_MAX_MS_CONFIG =
      "share.task.restart.backoff.max.ms";
  public static final long TASK_RESTART_BACKOFF_MAX_MS_DEFAULT = 30_000;
  private static final String TASK_RESTART_BACKOFF_MAX_MS_DOC =
      "The longest wait before a restart of a failed legacy task.";
  private static final String TASK_RESTART_BACKOFF_MAX_MS_DISPLAY = "Maximum restart backoff (ms)";

  public static final String ERRORS_RETRY_TIMEOUT_CONFIG = "errors.retry.timeout";
  public static final long ERRORS_RETRY_TIMEOUT_DEFAULT = 0L;
  private static final String ERRORS_RETRY_TIMEOUT_DOC =
      "As in Connect: how long a retriable converter, header converter or transformation "
          + "failure is retried (0 = no retries, -1 = forever). Not used for put().";
  private static final String ERRORS_RETRY_TIMEOUT_DISPLAY = "Retry timeout for errors";

  public static final String ERRORS_RETRY_MAX_DELAY_CONFIG = "errors.retry.delay.max.ms";
  public static final long ERRORS_RETRY_MAX_DELAY_DEFAULT = 60_000L;
  private static final String ERRORS_RETRY_MAX_DELAY_DOC =
      "As in Connect: the largest delay between two retries of a failed operation.";
  private static final String ERRORS_RETRY_MAX_DELAY_DISPLAY = "Maximum delay between retries";

  public static final String ERRORS_TOLERANCE_CONFIG = "errors.tolerance";
  public static final String ERRORS_TOLERANCE_DEFAULT = "none";
  private static final String ERRORS_TOLERANCE_DOC =
      "As in Connect: 'none' fails the task at the first conversion or transformation "
          + "error (the record is RELEASEd for another attempt), 'all' REJECTs the record "
          + "(after writing it to the dead letter queue when one is set) and goes on.";
  private static final String ERRORS_TOLERANCE_DISPLAY = "Error tolerance";

  public static final String ERRORS_LOG_ENABLE_CONFIG = "errors.log.enable";
  public static final boolean ERRORS_LOG_ENABLE_DEFAULT = false;
  private static final String ERRORS_LOG_ENABLE_DOC =
      "As in Connect: log each failed operation and record. Also makes an errant record "
          + "reporter available to the task.";
  private static final String ERRORS_LOG_ENABLE_DISPLAY = "Log errors";

  public static final String ERRORS_LOG_INCLUDE_MESSAGES_CONFIG = "errors.log.include.messages";
  public static final boolean ERRORS_LOG_INCLUDE_MESSAGES_DEFAULT = false;
  private static final String ERRORS_LOG_INCLUDE_MESSAGES_DOC =
      "As in Connect: include the failed record's topic, partition, offset and timestamp "
          + "in the error log.";
  private static final String ERRORS_LOG_INCLUDE_MESSAGES_DISPLAY = "Log error context";

  public static final String DLQ_TOPIC_CONFIG = "errors.deadletterqueue.topic.name";
  public static final String DLQ_TOPIC_DEFAULT = "";
  private static final String DLQ_TOPIC_DOC =
      "As in Connect: the topic failed records are written to (raw original bytes) before "
          + "they are REJECTed. Also makes an errant record reporter available.";
  private static final String DLQ_TOPIC_DISPLAY = "Dead letter queue topic name";

  public static final String DLQ_CONTEXT_HEADERS_CONFIG =
      "errors.deadletterqueue.context.headers.enable";
  public static final boolean DLQ_CONTEXT_HEADERS_DEFAULT = false;
  private static final String DLQ_CONTEXT_HEADERS_DOC =
      "As in Connect: add __connect.errors.* headers describing the failure to each "
          + "dead letter queue record.";
  private static final String DLQ_CONTEXT_HEADERS_DISPLAY = "Enable error context headers";

  public static final String DLQ_TOPIC_REPLICATION_FACTOR_CONFIG =
      "errors.deadletterqueue.topic.replication.factor";
  public static final short DLQ_TOPIC_REPLICATION_FACTOR_DEFAULT = 3;
  private static final String DLQ_TOPIC_REPLICATION_FACTOR_DOC =
      "As in Connect: the replication factor of the dead letter queue topic when it does "
          + "not exist and sharesink's own producer writes it (share.dlq.mode connect): "
          + "a task creates it at start with one partition and this many replicas, "
          + "and fails with this key in its error when the broker refuses (more replicas "
          + "than brokers). -1: the broker's default.";
  private static final String DLQ_TOPIC_REPLICATION_FACTOR_DISPLAY =
      "Dead letter queue topic replication factor";

  private static final String SHARE_GROUP = ConfigSections.SHARE_COMMIT;
  private static final String RECORD_GROUP = ConfigSections.LEGACY_SINK;
  private static final String ERROR_GROUP = ConfigSections.ERROR_HANDLING;
  private static final String RESTART_GROUP = ConfigSections.LEGACY_TASK_RESTARTS;

  public static final ConfigDef CONFIG_DEF =
      new OrderedConfigDef()
          .define(
              DELIVERY_COUNT_HEADER_CONFIG,
              Type.STRING,
              DELIVERY_COUNT_HEADER_DEFAULT,
              new DriverConfigValidators.HeaderName(),
              Importance.LOW,
              DELIVERY_COUNT_HEADER_DOC,
              RECORD_GROUP,
              Width.MEDIUM,
              DELIVERY_COUNT_HEADER_DISPLAY)
          .define(
              COMMIT_INTERVAL_MS_CONFIG,
              Type.LONG,
              COMMIT_INTERVAL_MS_DEFAULT,
              ConfigDef.Range.atLeast(10),
              Importance.MEDIUM,
              COMMIT_INTERVAL_MS_DOC,
              SHARE_GROUP,
              Width.SHORT,
              COMMIT_INTERVAL_MS_DISPLAY)
          .define(
              COMMIT_MAX_RECORDS_CONFIG,
              Type.INT,
              COMMIT_MAX_RECORDS_DEFAULT,
              ConfigDef.Range.atLeast(0),
              Importance.MEDIUM,
              COMMIT_MAX_RECORDS_DOC,
              SHARE_GROUP,
              Width.SHORT,
              COMMIT_MAX_RECORDS_DISPLAY)
          .define(
              COMMIT_MIN_INTERVAL_MS_CONFIG,
              Type.LONG,
              COMMIT_MIN_INTERVAL_MS_DEFAULT,
              ConfigDef.Range.atLeast(0),
              Importance.LOW,
              COMMIT_MIN_INTERVAL_MS_DOC,
              SHARE_GROUP,
              Width.SHORT,
              COMMIT_MIN_INTERVAL_MS_DISPLAY)
          .define(
              EMPTY_PRECOMMIT_CONFIG,
              Type.STRING,
              EMPTY_PRECOMMIT_DEFAULT,
              ConfigDef.CaseInsensitiveValidString.in(EMPTY_PRECOMMIT_HOLD, EMPTY_PRECOMMIT_ACCEPT),
              Importance.MEDIUM,
              EMPTY_PRECOMMIT_DOC,
              SHARE_GROUP,
              Width.SHORT,
              EMPTY_PRECOMMIT_DISPLAY)
          .define(
              TASK_STUCK_TIMEOUT_MS_CONFIG,
              Type.LONG,
              TASK_STUCK_TIMEOUT_MS_DEFAULT,
              ConfigDef.Range.between(1_000, TASK_STUCK_TIMEOUT_MS_MAX),
              Importance.MEDIUM,
              TASK_STUCK_TIMEOUT_MS_DOC,
              SHARE_GROUP,
              Width.SHORT,
              TASK_STUCK_TIMEOUT_MS_DISPLAY)
          .define(
              TASK_RESTART_MAX_ATTEMPTS_CONFIG,
              Type.INT,
              TASK_RESTART_MAX_ATTEMPTS_DEFAULT,
              ConfigDef.Range.atLeast(0),
              Importance.MEDIUM,
              TASK_RESTART_MAX_ATTEMPTS_DOC,
              RESTART_GROUP,
              Width.SHORT,
              TASK_RESTART_MAX_ATTEMPTS_DISPLAY)
          .define(
              TASK_RESTART_BACKOFF_MS_CONFIG,
              Type.LONG,
              TASK_RESTART_BACKOFF_MS_DEFAULT,
              ConfigDef.Range.atLeast(0),
              Importance.LOW,
              TASK_RESTART_BACKOFF_MS_DOC,
              RESTART_GROUP,
              Width.SHORT,
              TASK_RESTART_BACKOFF_MS_DISPLAY)
          .define(
              TASK_RESTART_BACKOFF_MAX_MS_CONFIG,
              Type.LONG,
              TASK_RESTART_BACKOFF_MAX_MS_DEFAULT,
              ConfigDef.Range.atLeast(0),
              Importance.LOW,
              TASK_RESTART_BACKOFF_MAX_MS_DOC,
              RESTART_GROUP,
              Width.SHORT,
              TASK_RESTART_BACKOFF_MAX_MS_DISPLAY)
          .define(
              ERRORS_RETRY_TIMEOUT_CONFIG,
              Type.LONG,
              ERRORS_RETRY_TIMEOUT_DEFAULT,
              Importance.MEDIUM,
              ERRORS_RETRY_TIMEOUT_DOC,
              ERROR_GROUP,
              Width.MEDIUM,
              ERRORS_RETRY_TIMEOUT_DISPLAY)
          .define(
              ERRORS_RETRY_MAX_DELAY_CONFIG,
              Type.LONG,
              ERRORS_RETRY_MAX_DELAY_DEFAULT,
              ConfigDef.Range.atLeast(1),
              Importance.MEDIUM,
              ERRORS_RETRY_MAX_DELAY_DOC,
              ERROR_GROUP,
              Width.MEDIUM,
              ERRORS_RETRY_MAX_DELAY_DISPLAY)
          .define(
              ERRORS_TOLERANCE_CONFIG,
              Type.STRING,
              ERRORS_TOLERANCE_DEFAULT,
              ConfigDef.CaseInsensitiveValidString.in("none", "all"),
              Importance.MEDIUM,
              ERRORS_TOLERANCE_DOC,
              ERROR_GROUP,
              Width.SHORT,
              ERRORS_TOLERANCE_DISPLAY)
          .define(
              ERRORS_LOG_ENABLE_CONFIG,
              Type.BOOLEAN,
              ERRORS_LOG_ENABLE_DEFAULT,
              Importance.MEDIUM,
              ERRORS_LOG_ENABLE_DOC,
              ERROR_GROUP,
              Width.SHORT,
              ERRORS_LOG_ENABLE_DISPLAY)
          .define(
              ERRORS_LOG_INCLUDE_MESSAGES_CONFIG,
              Type.BOOLEAN,
              ERRORS_LOG_INCLUDE_MESSAGES_DEFAULT,
              Importance.MEDIUM,
              ERRORS_LOG_INCLUDE_MESSAGES_DOC,
              ERROR_GROUP,
              Width.SHORT,
              ERRORS_LOG_INCLUDE_MESSAGES_DISPLAY)
          .define(
              DLQ_TOPIC_CONFIG,
              Type.STRING,
              DLQ_TOPIC_DEFAULT,
              Importance.MEDIUM,
              DLQ_TOPIC_DOC,
              ERROR_GROUP,
              Width.MEDIUM,
              DLQ_TOPIC_DISPLAY)
          .define(
              DLQ_CONTEXT_HEADERS_CONFIG,
              Type.BOOLEAN,
              DLQ_CONTEXT_HEADERS_DEFAULT,
              Importance.MEDIUM,
              DLQ_CONTEXT_HEADERS_DOC,
              ERROR_GROUP,
              Width.SHORT,
              DLQ_CONTEXT_HEADERS_DISPLAY)
          .define(
              DLQ_TOPIC_REPLICATION_FACTOR_CONFIG,
              Type.SHORT,
              DLQ_TOPIC_REPLICATION_FACTOR_DEFAULT,
              new DriverConfigValidators.ReplicationFactor(),
              Importance.MEDIUM,
              DLQ_TOPIC_REPLICATION_FACTOR_DOC,
              ERROR_GROUP,
              Width.SHORT,
              DLQ_TOPIC_REPLICATION_FACTOR_DISPLAY)
          .configDef();

  public SinkDriverConfig(Map<?, ?> props) {
    super(CONFIG_DEF, props, false);
  }

  public long commitIntervalMs() {
    return getLong(COMMIT_INTERVAL_MS_CONFIG);
  }

  /** Records put since the last commit that trigger one; 0 = interval commits only. */
  public int commitMaxRecords() {
    return getInt(COMMIT_MAX_RECORDS_CONFIG);
  }

  public long commitMinIntervalMs() {
    return getLong(COMMIT_MIN_INTERVAL_MS_CONFIG);
  }

  /** True when an empty preCommit result ACCEPTs everything confirmed. */
  public boolean acceptOnEmptyPreCommit() {
    return EMPTY_PRECOMMIT_ACCEPT.equals(
        getString(EMPTY_PRECOMMIT_CONFIG).toLowerCase(Locale.ROOT));
  }

  /** The delivery count header's name, or null when none is added. */
  public String deliveryCountHeader() {
    String name = getString(DELIVERY_COUNT_HEADER_CONFIG).trim();
    return name.isEmpty() ? null : name;
  }

  /** How long a stuck call or a failing put keeps its records renewed before they are released. */
  public long taskStuckTimeoutMs() {
    return getLong(TASK_STUCK_TIMEOUT_MS_CONFIG);
  }

  /** Restarts in a row of a failed legacy task before the Connect task fails; 0 = none. */
  public int taskRestartMaxAttempts() {
    return getInt(TASK_RESTART_MAX_ATTEMPTS_CONFIG);
  }

  public long taskRestartBackoffMs() {
    return getLong(TASK_RESTART_BACKOFF_MS_CONFIG);
  }

  public long taskRestartBackoffMaxMs() {
    return getLong(TASK_RESTART_BACKOFF_MAX_MS_CONFIG);
  }

  public boolean toleranceAll() {
    return "all".equals(getString(ERRORS_TOLERANCE_CONFIG).toLowerCase(Locale.ROOT));
  }

  public long retryTimeoutMs() {
    return getLong(ERRORS_RETRY_TIMEOUT_CONFIG);
  }

  public long retryMaxDelayMs() {
    return getLong(ERRORS_RETRY_MAX_DELAY_CONFIG);
  }

  public boolean logErrors() {
    return getBoolean(ERRORS_LOG_ENABLE_CONFIG);
  }

  public boolean logIncludeMessages() {
    return getBoolean(ERRORS_LOG_INCLUDE_MESSAGES_CONFIG);
  }

  /** The DLQ topic, or the empty string. */
  public String dlqTopic() {
    return getString(DLQ_TOPIC_CONFIG).trim();
  }

  public boolean dlqContextHeaders() {
    return getBoolean(DLQ_CONTEXT_HEADERS_CONFIG);
  }

  /** Replicas of a DLQ topic sharesink creates; -1 for the broker's default. */
  public short dlqTopicReplicationFactor() {
    return getShort(DLQ_TOPIC_REPLICATION_FACTOR_CONFIG);
  }

  /**
   * Whether the task gets an errant record reporter: as in the runtime, when a DLQ topic is set or
   * error logging is on; {@code errors.tolerance=all} alone gives none.
   */
  public boolean offersErrantRecordReporter() {
    return !dlqTopic().isEmpty() || logErrors();
  }
}

package io.sharesink.connect.sink;

import java.util.Locale;
import java.util.Map;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.Width;
import org.apache.kafka.common.config.ConfigException;

/**
 * The settings the sink driver reads: sharesink's commit cadence and policy, plus Connect's own
 * {@code errors.*} keys with the runtime's names and defaults, so a legacy sink's configuration
 * means what it meant under the sink runtime. Unknown keys are ignored (the same map carries the
 * legacy connector's settings).
 */
public final class SinkDriverConfig extends AbstractConfig {

  public static final String COMMIT_INTERVAL_MS = "share.commit.interval.ms";
  public static final long COMMIT_INTERVAL_MS_DEFAULT = 5_000;

  public static final String COMMIT_MAX_RECORDS = "share.commit.max.records";
  public static final int COMMIT_MAX_RECORDS_DEFAULT = 1_000;

  public static final String COMMIT_MIN_INTERVAL_MS = "share.commit.min.interval.ms";
  public static final long COMMIT_MIN_INTERVAL_MS_DEFAULT = 10;

  public static final String EMPTY_PRECOMMIT = "share.commit.empty.precommit";
  public static final String EMPTY_PRECOMMIT_ACCEPT = "accept";
  public static final String EMPTY_PRECOMMIT_HOLD = "hold";

  public static final String TASK_STUCK_TIMEOUT_MS = "share.task.stuck.timeout.ms";
  public static final long TASK_STUCK_TIMEOUT_MS_DEFAULT = 15 * 60_000;

  public static final String TASK_RESTART_MAX_ATTEMPTS = "share.task.restart.max.attempts";
  public static final int TASK_RESTART_MAX_ATTEMPTS_DEFAULT = 10;

  public static final String TASK_RESTART_BACKOFF_MS = "share.task.restart.backoff.ms";
  public static final long TASK_RESTART_BACKOFF_MS_DEFAULT = 1_000;

  public static final String TASK_RESTART_BACKOFF_MAX_MS = "share.task.restart.backoff.max.ms";
  public static final long TASK_RESTART_BACKOFF_MAX_MS_DEFAULT = 30_000;

  public static final String DELIVERY_COUNT_HEADER = "share.delivery.count.header";

  public static final String ERRORS_TOLERANCE = "errors.tolerance";
  public static final String ERRORS_RETRY_TIMEOUT = "errors.retry.timeout";
  public static final String ERRORS_RETRY_MAX_DELAY = "errors.retry.delay.max.ms";
  public static final String ERRORS_LOG_ENABLE = "errors.log.enable";
  public static final String ERRORS_LOG_INCLUDE_MESSAGES = "errors.log.include.messages";
  public static final String DLQ_TOPIC = "errors.deadletterqueue.topic.name";
  public static final String DLQ_CONTEXT_HEADERS = "errors.deadletterqueue.context.headers.enable";
  public static final String DLQ_TOPIC_REPLICATION_FACTOR =
      "errors.deadletterqueue.topic.replication.factor";

  private static final String SHARE_GROUP = "Share commit";
  private static final String RECORD_GROUP = "Legacy sink";
  private static final String ERROR_GROUP = "Error Handling";
  private static final String RESTART_GROUP = "Legacy task restarts";

  public static final ConfigDef CONFIG_DEF =
      new ConfigDef()
          .define(
              DELIVERY_COUNT_HEADER,
              Type.STRING,
              "",
              new HeaderName(),
              Importance.LOW,
              "Name of a header to add to every record the sink gets, carrying how many times the "
                  + "share group has delivered the record (an INT32: 1 on the first delivery, 2 "
                  + "after one redelivery, up to the group's share.delivery.count.limit). Empty "
                  + "(default): no header. A redelivery happens when a lock runs out, a task "
                  + "fails or stops, or another member releases the record, so a sink or SMT can "
                  + "use it to de-duplicate, or to route records delivered many times elsewhere "
                  + "(a predicate on the header, for instance). The header is added after the "
                  + "header converter and before the connector's transforms, so transforms and "
                  + "predicates see it; a header of the same name on the record is replaced.",
              RECORD_GROUP,
              3,
              Width.MEDIUM,
              "Delivery count header")
          .define(
              COMMIT_INTERVAL_MS,
              Type.LONG,
              COMMIT_INTERVAL_MS_DEFAULT,
              ConfigDef.Range.atLeast(10),
              Importance.MEDIUM,
              "How often the legacy task's preCommit (hence flush) runs and the records it "
                  + "reports flushed are ACCEPTed. Must be well below the group's "
                  + "share.record.lock.duration.ms (30 s by default): records still buffered by the "
                  + "sink are RENEWed meanwhile, but a shorter interval means fewer renewals and "
                  + "less work redelivered after a crash.",
              SHARE_GROUP,
              1,
              Width.SHORT,
              "Commit interval (ms)")
          .define(
              COMMIT_MAX_RECORDS,
              Type.INT,
              COMMIT_MAX_RECORDS_DEFAULT,
              ConfigDef.Range.atLeast(0),
              Importance.MEDIUM,
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
                  + "a later put has returned.",
              SHARE_GROUP,
              2,
              Width.SHORT,
              "Commit after records")
          .define(
              COMMIT_MIN_INTERVAL_MS,
              Type.LONG,
              COMMIT_MIN_INTERVAL_MS_DEFAULT,
              ConfigDef.Range.atLeast(0),
              Importance.LOW,
              "The shortest time between an on-demand commit cycle (see "
                  + "share.commit.max.records) and the previous commit cycle. Each cycle calls the "
                  + "task's preCommit, hence usually its flush, so this bounds the flushes a fast "
                  + "stream costs to one per this many milliseconds. An on-demand cycle covers at "
                  + "least share.commit.max.records records, or runs because the broker's "
                  + "in-flight window is used up (or the topic is drained), so a longer spacing "
                  + "cannot put more records into one flush: it only leaves the task idle. Raise "
                  + "it only for a sink whose flush costs much more than this regardless of size.",
              SHARE_GROUP,
              3,
              Width.SHORT,
              "Minimum commit spacing (ms)")
          .define(
              EMPTY_PRECOMMIT,
              Type.STRING,
              EMPTY_PRECOMMIT_HOLD,
              ConfigDef.CaseInsensitiveValidString.in(EMPTY_PRECOMMIT_HOLD, EMPTY_PRECOMMIT_ACCEPT),
              Importance.MEDIUM,
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
                  + "offsets; a task that buffers would lose what it buffered in a crash.",
              SHARE_GROUP,
              4,
              Width.SHORT,
              "Empty preCommit policy")
          .define(
              TASK_STUCK_TIMEOUT_MS,
              Type.LONG,
              TASK_STUCK_TIMEOUT_MS_DEFAULT,
              ConfigDef.Range.atLeast(1_000),
              Importance.MEDIUM,
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
                  + "wait and none is put (see share.commit.empty.precommit).",
              SHARE_GROUP,
              5,
              Width.SHORT,
              "Stuck task timeout (ms)")
          .define(
              TASK_RESTART_MAX_ATTEMPTS,
              Type.INT,
              TASK_RESTART_MAX_ATTEMPTS_DEFAULT,
              ConfigDef.Range.atLeast(0),
              Importance.MEDIUM,
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
                  + "restarts ride out an outage of about three minutes before the task fails.",
              RESTART_GROUP,
              1,
              Width.SHORT,
              "Restart attempts")
          .define(
              TASK_RESTART_BACKOFF_MS,
              Type.LONG,
              TASK_RESTART_BACKOFF_MS_DEFAULT,
              ConfigDef.Range.atLeast(0),
              Importance.LOW,
              "How long the first restart of a failed legacy task waits (see "
                  + "share.task.restart.max.attempts); each further attempt in a row waits twice "
                  + "as long as the previous one, up to share.task.restart.backoff.max.ms.",
              RESTART_GROUP,
              2,
              Width.SHORT,
              "Restart backoff (ms)")
          .define(
              TASK_RESTART_BACKOFF_MAX_MS,
              Type.LONG,
              TASK_RESTART_BACKOFF_MAX_MS_DEFAULT,
              ConfigDef.Range.atLeast(0),
              Importance.LOW,
              "The longest wait before a restart of a failed legacy task.",
              RESTART_GROUP,
              3,
              Width.SHORT,
              "Maximum restart backoff (ms)")
          .define(
              ERRORS_RETRY_TIMEOUT,
              Type.LONG,
              0L,
              Importance.MEDIUM,
              "As in Connect: how long a retriable converter, header converter or transformation "
                  + "failure is retried (0 = no retries, -1 = forever). Not used for put().",
              ERROR_GROUP,
              1,
              Width.MEDIUM,
              "Retry timeout for errors")
          .define(
              ERRORS_RETRY_MAX_DELAY,
              Type.LONG,
              60_000L,
              ConfigDef.Range.atLeast(1),
              Importance.MEDIUM,
              "As in Connect: the largest delay between two retries of a failed operation.",
              ERROR_GROUP,
              2,
              Width.MEDIUM,
              "Maximum delay between retries")
          .define(
              ERRORS_TOLERANCE,
              Type.STRING,
              "none",
              ConfigDef.CaseInsensitiveValidString.in("none", "all"),
              Importance.MEDIUM,
              "As in Connect: 'none' fails the task at the first conversion or transformation "
                  + "error (the record is RELEASEd for another attempt), 'all' REJECTs the record "
                  + "(after writing it to the dead letter queue when one is set) and goes on.",
              ERROR_GROUP,
              3,
              Width.SHORT,
              "Error tolerance")
          .define(
              ERRORS_LOG_ENABLE,
              Type.BOOLEAN,
              false,
              Importance.MEDIUM,
              "As in Connect: log each failed operation and record. Also makes an errant record "
                  + "reporter available to the task.",
              ERROR_GROUP,
              4,
              Width.SHORT,
              "Log errors")
          .define(
              ERRORS_LOG_INCLUDE_MESSAGES,
              Type.BOOLEAN,
              false,
              Importance.MEDIUM,
              "As in Connect: include the failed record's topic, partition, offset and timestamp "
                  + "in the error log.",
              ERROR_GROUP,
              5,
              Width.SHORT,
              "Log error context")
          .define(
              DLQ_TOPIC,
              Type.STRING,
              "",
              Importance.MEDIUM,
              "As in Connect: the topic failed records are written to (raw original bytes) before "
                  + "they are REJECTed. Also makes an errant record reporter available.",
              ERROR_GROUP,
              6,
              Width.MEDIUM,
              "Dead letter queue topic name")
          .define(
              DLQ_CONTEXT_HEADERS,
              Type.BOOLEAN,
              false,
              Importance.MEDIUM,
              "As in Connect: add __connect.errors.* headers describing the failure to each "
                  + "dead letter queue record.",
              ERROR_GROUP,
              7,
              Width.SHORT,
              "Enable error context headers")
          .define(
              DLQ_TOPIC_REPLICATION_FACTOR,
              Type.SHORT,
              (short) 3,
              (name, value) -> {
                if (value != null && (Short) value != -1 && (Short) value < 1) {
                  throw new ConfigException(
                      name, value, "must be -1 (the broker's default) or at least 1");
                }
              },
              Importance.MEDIUM,
              "As in Connect: the replication factor of the dead letter queue topic when it does "
                  + "not exist and sharesink's own producer writes it (share.dlq.mode connect): "
                  + "a task creates it at start with one partition and this many replicas, "
                  + "and fails with this key in its error when the broker refuses (more replicas "
                  + "than brokers). -1: the broker's default.",
              ERROR_GROUP,
              8,
              Width.SHORT,
              "Dead letter queue topic replication factor");

  public SinkDriverConfig(Map<?, ?> props) {
    super(CONFIG_DEF, props, false);
  }

  public long commitIntervalMs() {
    return getLong(COMMIT_INTERVAL_MS);
  }

  /** Records put since the last commit that trigger one; 0 = interval commits only. */
  public int commitMaxRecords() {
    return getInt(COMMIT_MAX_RECORDS);
  }

  public long commitMinIntervalMs() {
    return getLong(COMMIT_MIN_INTERVAL_MS);
  }

  /** True when an empty preCommit result ACCEPTs everything confirmed. */
  public boolean acceptOnEmptyPreCommit() {
    return EMPTY_PRECOMMIT_ACCEPT.equals(getString(EMPTY_PRECOMMIT).toLowerCase(Locale.ROOT));
  }

  /** The delivery count header's name, or null when none is added. */
  public String deliveryCountHeader() {
    String name = getString(DELIVERY_COUNT_HEADER).trim();
    return name.isEmpty() ? null : name;
  }

  /** How long a stuck call or a failing put keeps its records renewed before they are released. */
  public long taskStuckTimeoutMs() {
    return getLong(TASK_STUCK_TIMEOUT_MS);
  }

  /** Restarts in a row of a failed legacy task before the Connect task fails; 0 = none. */
  public int taskRestartMaxAttempts() {
    return getInt(TASK_RESTART_MAX_ATTEMPTS);
  }

  public long taskRestartBackoffMs() {
    return getLong(TASK_RESTART_BACKOFF_MS);
  }

  public long taskRestartBackoffMaxMs() {
    return getLong(TASK_RESTART_BACKOFF_MAX_MS);
  }

  public boolean toleranceAll() {
    return "all".equals(getString(ERRORS_TOLERANCE).toLowerCase(Locale.ROOT));
  }

  public long retryTimeoutMs() {
    return getLong(ERRORS_RETRY_TIMEOUT);
  }

  public long retryMaxDelayMs() {
    return getLong(ERRORS_RETRY_MAX_DELAY);
  }

  public boolean logErrors() {
    return getBoolean(ERRORS_LOG_ENABLE);
  }

  public boolean logIncludeMessages() {
    return getBoolean(ERRORS_LOG_INCLUDE_MESSAGES);
  }

  /** The DLQ topic, or the empty string. */
  public String dlqTopic() {
    return getString(DLQ_TOPIC).trim();
  }

  public boolean dlqContextHeaders() {
    return getBoolean(DLQ_CONTEXT_HEADERS);
  }

  /** Replicas of a DLQ topic sharesink creates; -1 for the broker's default. */
  public short dlqTopicReplicationFactor() {
    return getShort(DLQ_TOPIC_REPLICATION_FACTOR);
  }

  /**
   * Whether the task gets an errant record reporter: as in the runtime, when a DLQ topic is set or
   * error logging is on; {@code errors.tolerance=all} alone gives none.
   */
  public boolean offersErrantRecordReporter() {
    return !dlqTopic().isEmpty() || logErrors();
  }

  /** Empty (no header), or a header name a sink or SMT can match as written. */
  static final class HeaderName implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
      // ConfigDef has already trimmed it.
      String text = value == null ? "" : value.toString();
      if (text.chars().anyMatch(Character::isISOControl)) {
        throw new ConfigException(name, value, "a header name has no control characters");
      }
    }

    @Override
    public String toString() {
      return "empty (no header), or a header name";
    }
  }

  public static void main(String[] args) {
    System.out.println(CONFIG_DEF.toEnrichedRst());
  }
}

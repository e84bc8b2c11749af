package io.sharesink.connect;

import io.sharesink.connect.admin.GroupSettings;
import io.sharesink.connect.autoscale.TaskAutoscale;
import io.sharesink.connect.config.ConfigSections;
import io.sharesink.connect.config.OrderedConfigDef;
import io.sharesink.connect.sink.SinkDriverConfig;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.Width;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.security.auth.SecurityProtocol;

/**
 * The configuration of a {@link ShareSinkConnector}. Keys starting with {@value #SHARE_PREFIX}
 * belong to sharesink; every other key is handed to the legacy sink connector and its tasks.
 *
 * <p>Keys only, in one convention (Confluent's JdbcSinkConfig's): each key is {@code X_CONFIG} with
 * its {@code X_DEFAULT} (when it has one), {@code X_DOC} and {@code X_DISPLAY}, defined in {@link
 * #CONFIG_DEF} with its group, order and width. Their validators are in {@link ConfigValidators};
 * the keys the sink driver reads ({@code share.delivery.count.header}, {@code share.commit.*},
 * {@code share.task.restart.*}) are defined once, the same way, in {@link SinkDriverConfig}, and
 * included here as defined there. What the client settings are is {@link ConnectorClients}'.
 */
public class ShareSinkConfig extends AbstractConfig {

  /** Prefix of the keys sharesink owns; they are never passed to the legacy sink. */
  public static final String SHARE_PREFIX = "share.";

  // ---- legacy sink

  public static final String SINK_CONNECTOR_CLASS_CONFIG = "share.sink.connector.class";
  private static final String SINK_CONNECTOR_CLASS_DOC =
      "Class (or alias) of the unmodified sink connector to run on a share group, e.g."
          + " org.apache.kafka.connect.file.FileStreamSinkConnector. It may live in its own"
          + " plugin.path directory; it is loaded through the worker's plugin class loaders and"
          + " must be a SinkConnector. Every setting without the 'share.' prefix is handed to it.";
  private static final String SINK_CONNECTOR_CLASS_DISPLAY = "Legacy sink connector class";

  public static final String TOPICS_CONFIG = "topics";
  public static final String TOPICS_DEFAULT = "";
  private static final String TOPICS_DOC =
      "Topics the share group consumes. Also passed to the legacy connector and its tasks as"
          + " their 'topics'. Set this or topics.regex, not both. A topic that does not exist"
          + " is not a validation error, since it may be created after the connector and a share"
          + " group gets its partitions once it is (Connect's validation has no warnings, and an"
          + " error would refuse the connector): validation and the connector's start log a WARN"
          + " naming the topic and the connector, the connector looks again every 15 s, repeats"
          + " the WARN every 10 minutes, and logs once when the topic exists.";
  private static final String TOPICS_DISPLAY = "Topics";

  public static final String TOPICS_REGEX_CONFIG = "topics.regex";
  public static final String TOPICS_REGEX_DEFAULT = "";
  private static final String TOPICS_REGEX_DOC =
      "A Java regular expression: the share group consumes every topic whose whole name matches it."
          + " Share groups subscribe by name, so each task lists the topics its share"
          + " consumer may see (with the consumer's servers and credentials, as a classic"
          + " consumer's pattern subscription sees them) and re-checks every metadata.max.age.ms (share.consumer.metadata.max.age.ms, default"
          + " 300000): a new matching topic is consumed, a deleted one dropped, within that bound."
          + " Internal topics (names starting with '__'), the worker's config, offset and status"
          + " topics and the connector's DLQ topic never match. While nothing matches, a task"
          + " waits outside the group. Set this or topics, not both.";
  private static final String TOPICS_REGEX_DISPLAY = "Topics regex";

  // ---- order (io.sharesink.connect.ordering checks it)

  public static final String ORDERING_CONFIG = "share.ordering";

  /** Default: known order-sensitive configurations are refused. */
  public static final String ORDERING_CHECK = "check";

  /** The operator accepts that each key's records reach the sink in any order. */
  public static final String ORDERING_UNORDERED = "unordered";

  /** The sink's target keeps each key's newest version by the record's partition and offset. */
  public static final String ORDERING_OFFSET_GUARDED = "offset-guarded";

  public static final String ORDERING_DEFAULT = ORDERING_CHECK;
  private static final String ORDERING_DOC =
      "How the connector stands to order. A share group hands the records of one partition to"
          + " many tasks at once, so the versions of one key reach the sink in no fixed order, and"
          + " a record delivered again (a lock that ran out, a task that failed) comes after"
          + " later ones. 'check' (default): a configuration of a sink sharesink knows to depend"
          + " on that order (Debezium's and Confluent's JDBC sinks with insert.mode upsert or"
          + " update, delete.enabled=true or truncate.enabled=true; see the table of known sinks)"
          + " is a validation error on the setting that makes it so, naming the choices. '"
          + ORDERING_UNORDERED
          + "': run it anyway; each key's versions may be written in any order, so an upsert may"
          + " leave a row on an older version and a delete may be undone by an older version (right"
          + " when each key is written once, or a stale row does no harm). '"
          + ORDERING_OFFSET_GUARDED
          + "': the sink's target keeps each key's newest version by the record's Kafka partition"
          + " and offset (for PostgreSQL, the trigger of the reference's recipe); validation then"
          + " requires the transforms to carry both into the value (InsertField$Value with"
          + " offset.field and partition.field) and refuses hard deletes, which no such guard can"
          + " order. Sinks that commit their own offsets (Apache Iceberg's) are refused whatever"
          + " this says: sharesink ACCEPTs a record only once preCommit reports it written.";
  private static final String ORDERING_DISPLAY = "Order of writes";

  // ---- share group

  public static final String GROUP_ID_CONFIG = "share.group.id";
  private static final String GROUP_ID_DOC =
      "The share group the tasks join. Default: connect-share-<connector name>. Under the sink"
          + " runtime the consumer group was connect-<connector name>; see"
          + " share.migration.enable. Setting it is a consumer group.id override: allowed only"
          + " where the worker's connector.client.config.override.policy allows"
          + " consumer.override.group.id (the policies None and Principal do not).";
  private static final String GROUP_ID_DISPLAY = "Share group id";
  public static final String GROUP_ID_PREFIX = "connect-share-";

  public static final String AUTO_OFFSET_RESET_CONFIG = "share.auto.offset.reset";
  public static final String AUTO_OFFSET_RESET_DEFAULT = "earliest";
  private static final String AUTO_OFFSET_RESET_DOC =
      "Group config share.auto.offset.reset, set on the share group when the connector starts:"
          + " where the group starts on a partition it has no state for yet. 'earliest' (default,"
          + " as Connect's sink runtime), 'latest', or 'by_duration:<ISO-8601 duration>' (e.g."
          + " by_duration:PT1H). It never moves a partition the group has already started on; use"
          + " kafka-share-groups.sh --reset-offsets for that.";
  private static final String AUTO_OFFSET_RESET_DISPLAY = "Start position of a new group";

  public static final String LOCK_DURATION_MS_CONFIG = "share.record.lock.duration.ms";
  private static final String LOCK_DURATION_MS_DOC =
      "Group config share.record.lock.duration.ms, set on the share group when given: how long a"
          + " task holds a record before it goes to another task. Must lie within the broker's"
          + " group.share.min/max.record.lock.duration.ms. Unset: the broker's default (30 s)."
          + " Held records are renewed, so this bounds how long a crashed task's records wait.";
  private static final String LOCK_DURATION_MS_DISPLAY = "Record lock duration (ms)";

  public static final String DELIVERY_COUNT_LIMIT_CONFIG = "share.delivery.count.limit";
  private static final String DELIVERY_COUNT_LIMIT_DOC =
      "Group config share.delivery.count.limit, set on the share group when given: after this"
          + " many deliveries a record is archived (or written to the broker's DLQ). Must lie within"
          + " the broker's group.share.min/max.delivery.count.limit. Unset: the broker's default"
          + " (5).";
  private static final String DELIVERY_COUNT_LIMIT_DISPLAY = "Delivery count limit";

  public static final String PARTITION_MAX_RECORD_LOCKS_CONFIG = "share.partition.max.record.locks";
  private static final String PARTITION_MAX_RECORD_LOCKS_DOC =
      "Group config share.partition.max.record.locks (Kafka 4.3+), set on the share group when"
          + " given: how many records of one partition the group may have in flight (delivered,"
          + " not yet acknowledged). A partition delivers about this many records per"
          + " fetch-commit-acknowledge cycle, so with a fast sink it bounds throughput. Must lie"
          + " within the broker's group.share.min/max.partition.max.record.locks (100 and 4000 by"
          + " default). Unset: when the group still runs with the broker's default window"
          + " (group.share.partition.max.record.locks, 2000), the connector sets the broker's"
          + " maximum (group.share.max.partition.max.record.locks, 4000 by default), because the"
          + " default window held a fast sink below the classic runtime's throughput; a window"
          + " set on the group by other means is kept, and a broker without the maximum (Kafka"
          + " 4.2) is left alone. share.commit.max.records, when not set, follows this window.";
  private static final String PARTITION_MAX_RECORD_LOCKS_DISPLAY = "Record locks per partition";

  public static final String DLQ_MODE_CONFIG = "share.dlq.mode";
  public static final String DLQ_MODE_AUTO = "auto";
  public static final String DLQ_MODE_BROKER = "broker";
  public static final String DLQ_MODE_CONNECT = "connect";
  public static final String DLQ_MODE_DEFAULT = DLQ_MODE_AUTO;
  private static final String DLQ_MODE_DOC =
      "Who writes records to Connect's errors.deadletterqueue.topic.name. 'broker': the share"
          + " group's own DLQ (KIP-1191, share.version 2): the group gets"
          + " errors.deadletterqueue.topic.name and errors.deadletterqueue.copy.record.enable=true,"
          + " the task only REJECTs; the topic must start with the broker's"
          + " errors.deadletterqueue.topic.name.prefix (default 'dlq.'), and the broker also"
          + " dead-letters records whose delivery count limit is reached; its headers are"
          + " __dlq.errors.*. 'connect': the task produces the record itself, with Connect's"
          + " __connect.errors.* headers when errors.deadletterqueue.context.headers.enable is"
          + " true, then REJECTs it. 'auto' (default): 'broker' when the cluster has share.version"
          + " 2 or more, the topic name has the required prefix and the broker can write to the"
          + " topic (it exists with errors.deadletterqueue.group.enable=true, or the broker"
          + " creates DLQ topics), else 'connect'.";
  private static final String DLQ_MODE_DISPLAY = "Dead letter queue writer";

  public static final String MIGRATION_ENABLE_CONFIG = "share.migration.enable";
  public static final boolean MIGRATION_ENABLE_DEFAULT = true;
  private static final String MIGRATION_ENABLE_DOC =
      "On the first start of the share group (no share-group state yet), start it where the"
          + " classic sink runtime's consumer group connect-<connector name> stopped, when that"
          + " group has committed offsets for the topics: nothing is skipped or replayed.";
  private static final String MIGRATION_ENABLE_DISPLAY = "Start from the classic group's offsets";

  // ---- share consumer

  public static final String ENGINE_CONFIG = "share.engine";
  public static final String ENGINE_NATIVE = "native";
  public static final String ENGINE_JAVA = "java";
  public static final String ENGINE_AUTO = "auto";
  public static final String ENGINE_DEFAULT = ENGINE_AUTO;
  private static final String ENGINE_DOC =
      "The share consumer each task uses. 'auto' (default): sharesink's Rust engine through"
          + " JNI when its library loads on this worker and the security settings are ones it"
          + " speaks (PLAINTEXT, SSL, SASL PLAIN and SCRAM), else the worker's own"
          + " KafkaShareConsumer, logged at WARN with the reason (OAUTHBEARER, GSSAPI, login or"
          + " callback handler classes need the Java client). 'native' forces the Rust engine (a"
          + " library that does not load fails the connector with the loader's error). 'java'"
          + " forces the KafkaShareConsumer (Kafka 4.2+ worker); it renews every held record on"
          + " each poll.";
  private static final String ENGINE_DISPLAY = "Share consumer engine";

  public static final String POLL_TIMEOUT_MS_CONFIG = "share.poll.timeout.ms";
  public static final long POLL_TIMEOUT_MS_DEFAULT = 1_000L;
  public static final long POLL_TIMEOUT_MS_MAX = 5_000L;
  private static final String POLL_TIMEOUT_MS_DOC =
      "Longest time one poll() of the task waits for records. At most 5000: the worker gives a"
          + " stopping task 5 s (task.shutdown.graceful.timeout.ms) to return from poll().";
  private static final String POLL_TIMEOUT_MS_DISPLAY = "Poll timeout (ms)";

  public static final String CONSUMER_PREFIX = "share.consumer.";

  public static final String BOOTSTRAP_SERVERS_CONFIG = "share.consumer.bootstrap.servers";
  private static final String BOOTSTRAP_SERVERS_DOC =
      "host:port pairs of the Kafka cluster holding the share group, for the share consumer."
          + " Default: the worker's consumer.bootstrap.servers, else its bootstrap.servers, as a"
          + " classic sink task's consumer. Any other consumer setting can be given the same way"
          + " (share.consumer.<setting>: security.protocol, sasl.*, ssl.*, max.poll.records, ...),"
          + " exactly as consumer.override.<setting>: on top of the worker's consumer.* settings,"
          + " and only where the worker's connector.client.config.override.policy allows that"
          + " override (the policy None allows none). It configures the share consumer only: the"
          + " admin client that sets the group's configs and start offsets takes"
          + " admin.override.*, the DLQ producer producer.override.*, as under the classic"
          + " runtime; a consumer pointed at other servers than the admin client is a validation"
          + " error naming admin.override.bootstrap.servers. Validation (and the connector's and"
          + " each task's start) refuses a value that is not a comma-separated list of host:port,"
          + " or that names a host DNS cannot resolve; a host that resolves but does not answer is"
          + " not refused (the cluster may be down for now).";
  private static final String BOOTSTRAP_SERVERS_DISPLAY = "Bootstrap servers";

  public static final String SECURITY_PROTOCOL_CONFIG = "share.consumer.security.protocol";
  private static final String SECURITY_PROTOCOL_DOC =
      "The share consumer's security.protocol. Default: the worker's consumer.security.protocol."
          + " An override, as share.consumer.bootstrap.servers.";
  private static final String SECURITY_PROTOCOL_DISPLAY = "Security protocol";

  public static final String SASL_MECHANISM_CONFIG = "share.consumer.sasl.mechanism";
  private static final String SASL_MECHANISM_DOC =
      "The share consumer's sasl.mechanism (the native engine speaks PLAIN, SCRAM-SHA-256 and"
          + " SCRAM-SHA-512). Default: the worker's consumer.sasl.mechanism. An override, as"
          + " share.consumer.bootstrap.servers.";
  private static final String SASL_MECHANISM_DISPLAY = "SASL mechanism";

  public static final String SASL_JAAS_CONFIG = "share.consumer.sasl.jaas.config";
  private static final String SASL_JAAS_DOC =
      "The share consumer's sasl.jaas.config. Default: the worker's consumer.sasl.jaas.config. An"
          + " override, as share.consumer.bootstrap.servers.";
  private static final String SASL_JAAS_DISPLAY = "SASL JAAS configuration";

  public static final String MEMORY_MAX_BYTES_CONFIG = "share.consumer.share.memory.max.bytes";
  public static final int MEMORY_MAX_BYTES_MIN = 1 << 20;
  private static final String MEMORY_MAX_BYTES_DOC =
      "The most memory (bytes) one task's native share consumer may hold for records: the fetch"
          + " response it decodes, the records it buffers and those polled and not yet handed to"
          + " the sink, counted as decoded (decompressed, with the engine's own cost per record and"
          + " per header). One record batch may take half of it: a batch that needs more (a"
          + " compression bomb, a flood of headers) fails the task naming its topic, partition and"
          + " offset, and its records go back to the share group, which archives them after"
          + " share.delivery.count.limit deliveries. At most a quarter of the worker's bound (the"
          + " JVM property sharesink.engine.memory.max.bytes, default half the worker's heap)"
          + " applies. Default: 4 x the larger of share.consumer.fetch.max.bytes and"
          + " share.consumer.share.buffer.max.bytes, at least 64 MiB (fetch.max.bytes is 2 MiB"
          + " in the native engine, not Kafka's 50 MiB). Each task also reserves room"
          + " for one fetch of its own in the worker's bound (fetch.max.bytes, at most half of"
          + " this bound and an eighth of the worker's), which no other task can take: a task"
          + " whose put stalls fills at most its own bound, never another task's reservation. A"
          + " task the worker cannot reserve that room for fails at start, naming the bounds. An"
          + " override, as share.consumer.bootstrap.servers.";
  private static final String MEMORY_MAX_BYTES_DISPLAY = "Memory bound of a task's consumer";

  /**
   * The consumer's settings of type PASSWORD ({@code ssl.keystore.password}, ...): defined under
   * {@value #CONSUMER_PREFIX} too, so the worker shows and logs them as {@code [hidden]}.
   */
  static final List<String> CONSUMER_PASSWORD_KEYS =
      ConsumerConfig.configDef().configKeys().values().stream()
          .filter(k -> k.type == Type.PASSWORD && !k.name.equals("sasl.jaas.config"))
          .map(k -> k.name)
          .sorted()
          .toList();

  /**
   * Removed: where sharesink reads the worker's configuration is the worker's business (its REST
   * extension, or the file on its command line), never a connector's. Still defined, so that a
   * config that sets it is a validation error naming it, not silently ignored.
   */
  public static final String WORKER_CONFIG_CONFIG = "share.worker.config";

  private static final String WORKER_CONFIG_DOC =
      "Removed. It named a file that worker settings were read from, which let a connector choose"
          + " the override policy and the credentials its clients start from. sharesink reads the"
          + " worker's configuration only from the worker process: the configuration the worker"
          + " hands sharesink's REST extension, else the file named on the worker's command line."
          + " A config that sets this key is refused.";
  private static final String WORKER_CONFIG_DISPLAY = "Worker configuration file (removed)";

  // ---- internal keys the connector adds to task configs (not user settings)

  /** The legacy task class, as the legacy connector reported it. */
  public static final String SINK_TASK_CLASS_CONFIG = "share.sink.task.class";

  /** The connector's name (task configs have no name of their own). */
  public static final String CONNECTOR_NAME_CONFIG = "share.internal.connector.name";

  /** The task's id: its index in the list taskConfigs() returned, as the runtime numbers them. */
  public static final String TASK_ID_CONFIG = "share.internal.task.id";

  /** The DLQ mode the connector resolved ('broker' or 'connect'), for the tasks. */
  public static final String DLQ_RESOLVED_CONFIG = "share.internal.dlq.mode";

  /**
   * Connector-level keys (converters, transforms, errors.*) the connector copied into a task config
   * the legacy connector returned without them; stripped again before the legacy task sees them.
   */
  public static final String ADDED_KEYS_CONFIG = "share.internal.added.keys";

  /**
   * Set by sharesink's REST extension on a connector it stored in the {@link ShareSinkConnector}
   * form for an operator who wrote the KIP's form (the legacy sink's own {@code connector.class},
   * share mode switched on with {@code consumer.override.group.protocol=share} or the worker-wide
   * default): its value says which, and responses show the operator's form again. See {@link
   * ShareModeForm}.
   */
  public static final String FORM_CONFIG = "share.internal.form";

  /**
   * The operator's {@code consumer.override.group.protocol} value, as written, on a connector
   * stored from the flag form: the switch itself is not kept under its own key, because the runtime
   * hands {@code consumer.override.*} to a source connector's offsets consumer (exactly-once source
   * support, or a connector-specific offsets topic), whose {@code ConsumerConfig} refuses {@code
   * group.protocol=share}.
   */
  public static final String FORM_FLAG_VALUE_CONFIG = "share.internal.form.flag";

  // The reference's sections, in this order; the driver's keys are in "Legacy sink", "Share
  // commit" and "Legacy task restarts" (groups SinkDriverConfig gives them).
  private static final String GROUP_LEGACY_SINK = ConfigSections.LEGACY_SINK;
  private static final String GROUP_ORDER = ConfigSections.ORDER;
  private static final String GROUP_SHARE_GROUP = ConfigSections.SHARE_GROUP;
  private static final String GROUP_SHARE_CONSUMER = ConfigSections.SHARE_CONSUMER;

  public static final ConfigDef CONFIG_DEF = configDef();

  public ShareSinkConfig(Map<String, String> props) {
    super(CONFIG_DEF, props, false);
  }

  private static ConfigDef configDef() {
    OrderedConfigDef def = new OrderedConfigDef();
    def.define(
        SINK_CONNECTOR_CLASS_CONFIG,
        Type.STRING,
        ConfigDef.NO_DEFAULT_VALUE,
        new ConfigValidators.SinkConnectorClassValidator(),
        Importance.HIGH,
        SINK_CONNECTOR_CLASS_DOC,
        GROUP_LEGACY_SINK,
        Width.LONG,
        SINK_CONNECTOR_CLASS_DISPLAY);
    def.define(
        TOPICS_CONFIG,
        Type.LIST,
        TOPICS_DEFAULT,
        new ConfigValidators.TopicNamesValidator(),
        Importance.HIGH,
        TOPICS_DOC,
        GROUP_LEGACY_SINK,
        Width.LONG,
        TOPICS_DISPLAY);
    def.define(
        TOPICS_REGEX_CONFIG,
        Type.STRING,
        TOPICS_REGEX_DEFAULT,
        new ConfigValidators.RegexValidator(),
        Importance.HIGH,
        TOPICS_REGEX_DOC,
        GROUP_LEGACY_SINK,
        Width.LONG,
        TOPICS_REGEX_DISPLAY);
    def.include(SinkDriverConfig.CONFIG_DEF, SinkDriverConfig.DELIVERY_COUNT_HEADER_CONFIG);

    def.define(
        ORDERING_CONFIG,
        Type.STRING,
        ORDERING_DEFAULT,
        ConfigDef.CaseInsensitiveValidString.in(
            ORDERING_CHECK, ORDERING_UNORDERED, ORDERING_OFFSET_GUARDED),
        Importance.HIGH,
        ORDERING_DOC,
        GROUP_ORDER,
        Width.SHORT,
        ORDERING_DISPLAY);

    // ---- autoscale (io.sharesink.connect.autoscale): share.tasks.autoscale*, a group of its own
    TaskAutoscale.define(def);

    def.define(
        GROUP_ID_CONFIG,
        Type.STRING,
        null,
        new ConfigValidators.OptionalNonEmptyString(),
        Importance.HIGH,
        GROUP_ID_DOC,
        GROUP_SHARE_GROUP,
        Width.MEDIUM,
        GROUP_ID_DISPLAY);
    def.define(
        AUTO_OFFSET_RESET_CONFIG,
        Type.STRING,
        AUTO_OFFSET_RESET_DEFAULT,
        new ConfigValidators.AutoOffsetResetValidator(),
        Importance.MEDIUM,
        AUTO_OFFSET_RESET_DOC,
        GROUP_SHARE_GROUP,
        Width.MEDIUM,
        AUTO_OFFSET_RESET_DISPLAY);
    def.define(
        LOCK_DURATION_MS_CONFIG,
        Type.INT,
        null,
        new ConfigValidators.OptionalAtLeast(1_000),
        Importance.MEDIUM,
        LOCK_DURATION_MS_DOC,
        GROUP_SHARE_GROUP,
        Width.SHORT,
        LOCK_DURATION_MS_DISPLAY);
    def.define(
        DELIVERY_COUNT_LIMIT_CONFIG,
        Type.INT,
        null,
        new ConfigValidators.OptionalAtLeast(2),
        Importance.MEDIUM,
        DELIVERY_COUNT_LIMIT_DOC,
        GROUP_SHARE_GROUP,
        Width.SHORT,
        DELIVERY_COUNT_LIMIT_DISPLAY);
    def.define(
        PARTITION_MAX_RECORD_LOCKS_CONFIG,
        Type.INT,
        null,
        new ConfigValidators.OptionalAtLeast(100, "the broker's maximum, see the description"),
        Importance.MEDIUM,
        PARTITION_MAX_RECORD_LOCKS_DOC,
        GROUP_SHARE_GROUP,
        Width.SHORT,
        PARTITION_MAX_RECORD_LOCKS_DISPLAY);
    def.define(
        DLQ_MODE_CONFIG,
        Type.STRING,
        DLQ_MODE_DEFAULT,
        ConfigDef.CaseInsensitiveValidString.in(DLQ_MODE_AUTO, DLQ_MODE_BROKER, DLQ_MODE_CONNECT),
        Importance.MEDIUM,
        DLQ_MODE_DOC,
        GROUP_SHARE_GROUP,
        Width.SHORT,
        DLQ_MODE_DISPLAY);
    def.define(
        MIGRATION_ENABLE_CONFIG,
        Type.BOOLEAN,
        MIGRATION_ENABLE_DEFAULT,
        Importance.MEDIUM,
        MIGRATION_ENABLE_DOC,
        GROUP_SHARE_GROUP,
        Width.SHORT,
        MIGRATION_ENABLE_DISPLAY);

    def.define(
        ENGINE_CONFIG,
        Type.STRING,
        ENGINE_DEFAULT,
        ConfigDef.CaseInsensitiveValidString.in(ENGINE_AUTO, ENGINE_NATIVE, ENGINE_JAVA),
        Importance.LOW,
        ENGINE_DOC,
        GROUP_SHARE_CONSUMER,
        Width.SHORT,
        ENGINE_DISPLAY);
    def.define(
        BOOTSTRAP_SERVERS_CONFIG,
        Type.STRING,
        null,
        new ConfigValidators.OptionalNonEmptyString(),
        Importance.HIGH,
        BOOTSTRAP_SERVERS_DOC,
        GROUP_SHARE_CONSUMER,
        Width.LONG,
        BOOTSTRAP_SERVERS_DISPLAY);
    def.define(
        SECURITY_PROTOCOL_CONFIG,
        Type.STRING,
        null,
        new ConfigValidators.OptionalCaseInsensitive(SecurityProtocol.names()),
        Importance.MEDIUM,
        SECURITY_PROTOCOL_DOC,
        GROUP_SHARE_CONSUMER,
        Width.MEDIUM,
        SECURITY_PROTOCOL_DISPLAY);
    def.define(
        SASL_MECHANISM_CONFIG,
        Type.STRING,
        null,
        new ConfigValidators.OptionalNonEmptyString(),
        Importance.MEDIUM,
        SASL_MECHANISM_DOC,
        GROUP_SHARE_CONSUMER,
        Width.MEDIUM,
        SASL_MECHANISM_DISPLAY);
    def.define(
        SASL_JAAS_CONFIG,
        Type.PASSWORD,
        null,
        Importance.MEDIUM,
        SASL_JAAS_DOC,
        GROUP_SHARE_CONSUMER,
        Width.LONG,
        SASL_JAAS_DISPLAY);
    def.define(
        MEMORY_MAX_BYTES_CONFIG,
        Type.LONG,
        null,
        new ConfigValidators.OptionalAtLeast(MEMORY_MAX_BYTES_MIN, "see the description"),
        Importance.LOW,
        MEMORY_MAX_BYTES_DOC,
        GROUP_SHARE_CONSUMER,
        Width.MEDIUM,
        MEMORY_MAX_BYTES_DISPLAY);
    for (String key : CONSUMER_PASSWORD_KEYS) {
      def.define(
          CONSUMER_PREFIX + key,
          Type.PASSWORD,
          null,
          Importance.LOW,
          "The share consumer's " + key + ". An override, as share.consumer.bootstrap.servers.",
          GROUP_SHARE_CONSUMER,
          Width.LONG,
          "Consumer " + key);
    }
    def.define(
        WORKER_CONFIG_CONFIG,
        Type.STRING,
        null,
        new ConfigValidators.RemovedSetting(),
        Importance.LOW,
        WORKER_CONFIG_DOC,
        GROUP_SHARE_CONSUMER,
        Width.LONG,
        WORKER_CONFIG_DISPLAY);
    def.define(
        POLL_TIMEOUT_MS_CONFIG,
        Type.LONG,
        POLL_TIMEOUT_MS_DEFAULT,
        ConfigDef.Range.between(10L, POLL_TIMEOUT_MS_MAX),
        Importance.LOW,
        POLL_TIMEOUT_MS_DOC,
        GROUP_SHARE_CONSUMER,
        Width.SHORT,
        POLL_TIMEOUT_MS_DISPLAY);
    // The driver's commit and restart keys, as SinkDriverConfig defines them.
    def.include(
        SinkDriverConfig.CONFIG_DEF,
        SinkDriverConfig.COMMIT_INTERVAL_MS_CONFIG,
        SinkDriverConfig.COMMIT_MAX_RECORDS_CONFIG,
        SinkDriverConfig.COMMIT_MIN_INTERVAL_MS_CONFIG,
        SinkDriverConfig.EMPTY_PRECOMMIT_CONFIG,
        SinkDriverConfig.TASK_STUCK_TIMEOUT_MS_CONFIG);
    def.include(
        SinkDriverConfig.CONFIG_DEF,
        SinkDriverConfig.TASK_RESTART_MAX_ATTEMPTS_CONFIG,
        SinkDriverConfig.TASK_RESTART_BACKOFF_MS_CONFIG,
        SinkDriverConfig.TASK_RESTART_BACKOFF_MAX_MS_CONFIG);
    return def.configDef();
  }

  public String sinkConnectorClass() {
    return getString(SINK_CONNECTOR_CLASS_CONFIG).trim();
  }

  public List<String> topics() {
    return getList(TOPICS_CONFIG);
  }

  /** {@value #TOPICS_REGEX_CONFIG}, when set. */
  public Optional<Pattern> topicsRegex() {
    String regex = getString(TOPICS_REGEX_CONFIG);
    return regex == null || regex.isBlank()
        ? Optional.empty()
        : Optional.of(Pattern.compile(regex));
  }

  /** {@code share.group.id}, or {@code connect-share-<connectorName>}. */
  public String groupId(String connectorName) {
    String explicit = getString(GROUP_ID_CONFIG);
    if (explicit != null && !explicit.isBlank()) {
      return explicit.trim();
    }
    if (connectorName == null || connectorName.isBlank()) {
      throw new ConfigException(
          GROUP_ID_CONFIG, null, "no connector name to derive the default group id from");
    }
    return GROUP_ID_PREFIX + connectorName;
  }

  /** The classic sink runtime's consumer group for this connector. */
  public static String classicGroupId(String connectorName) {
    return "connect-" + connectorName;
  }

  public String autoOffsetReset() {
    return getString(AUTO_OFFSET_RESET_CONFIG).trim();
  }

  /** The group settings the connector applies, for {@link io.sharesink.connect.admin}. */
  public GroupSettings groupSettings() {
    return new GroupSettings(
        autoOffsetReset(),
        lockDurationMs(),
        deliveryCountLimit(),
        dlqMode(),
        dlqTopic(),
        commitIntervalMs(),
        partitionMaxRecordLocks());
  }

  public Integer partitionMaxRecordLocks() {
    return getInt(PARTITION_MAX_RECORD_LOCKS_CONFIG);
  }

  public Integer lockDurationMs() {
    return getInt(LOCK_DURATION_MS_CONFIG);
  }

  public Integer deliveryCountLimit() {
    return getInt(DELIVERY_COUNT_LIMIT_CONFIG);
  }

  public String dlqMode() {
    return getString(DLQ_MODE_CONFIG).trim().toLowerCase(Locale.ROOT);
  }

  public boolean migrationEnabled() {
    return getBoolean(MIGRATION_ENABLE_CONFIG);
  }

  public String engine() {
    return getString(ENGINE_CONFIG).trim().toLowerCase(Locale.ROOT);
  }

  public long pollTimeoutMs() {
    return getLong(POLL_TIMEOUT_MS_CONFIG);
  }

  public long commitIntervalMs() {
    return getLong(SinkDriverConfig.COMMIT_INTERVAL_MS_CONFIG);
  }

  /** Connect's {@code errors.deadletterqueue.topic.name}, or the empty string. */
  public String dlqTopic() {
    Object topic = originals().get(SinkDriverConfig.DLQ_TOPIC_CONFIG);
    return topic == null ? "" : topic.toString().trim();
  }

  /**
   * Prints the configuration reference: Markdown by default (what docs/configuration.md holds
   * between its generated markers), reStructuredText with {@code --rst}.
   */
  public static void main(String[] args) {
    if (args.length > 0 && args[0].equals("--rst")) {
      System.out.println(CONFIG_DEF.toEnrichedRst());
    } else {
      System.out.print(ConfigReference.markdown(CONFIG_DEF));
    }
  }
}

package io.sharesink.connect.ordering;

import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The sinks sharesink knows to go wrong in share mode, as data: one row per sink, rendered into
 * docs/configuration.md ({@link OrderingReference}, checked by a unit test) and read by {@link
 * ShareOrdering} at validation and connector start. A share group hands the records of one
 * partition to many tasks at once, so the versions of one key reach the sink in no fixed order; a
 * sink whose writes keep "the last one to arrive" then keeps an older version, with nothing
 * failing. To add a sink, add a row: its connector classes, and either the settings that make it
 * order-sensitive or why it can never run on a share group.
 */
public final class KnownSinks {

  private KnownSinks() {}

  /** What share mode does to a sink of the table. */
  public enum Kind {
    /**
     * Correct only when each key's records are written in offset order, under the settings of its
     * {@link Sink#triggers}: refused at validation unless the operator chose with {@value
     * io.sharesink.connect.ShareSinkConfig#ORDERING_CONFIG}.
     */
    ORDER_SENSITIVE,
    /**
     * Commits its own offsets outside {@code preCommit}: sharesink's commit rule can never make it
     * safe, so it is refused whatever {@value io.sharesink.connect.ShareSinkConfig#ORDERING_CONFIG}
     * says.
     */
    SELF_COMMITTING,
    /**
     * Checked and safe in share mode as it is (its writes do not depend on order, or its target
     * keeps the newest version by itself); listed with what share mode changes, never refused.
     */
    SAFE
  }

  /**
   * A setting of the sink that makes its writes depend on order (or, for a {@link
   * Kind#SELF_COMMITTING} sink, makes it commit its own offsets): {@code key} set to one of {@code
   * values} (ignoring case and surrounding blanks), or to a value in which {@code pattern} is found
   * (case-insensitive); with a null {@code key}, whatever the configuration.
   *
   * @param effect what goes wrong when the records arrive out of order, as a clause following the
   *     sink's name and the setting ("writes ...")
   * @param guardable whether a write guard on each record's partition and offset ({@value
   *     io.sharesink.connect.ShareSinkConfig#ORDERING_OFFSET_GUARDED}) can keep the newest version:
   *     not for hard deletes, which remove the row that carried the offset, nor for targets without
   *     a conditional write
   * @param sinkDefault the value the sink takes when the connector does not set {@code key} (from
   *     the sink's own config definition, cited beside its row), or null when unset never sets it
   *     off: a default that sets it off is checked like a value the operator typed
   */
  public record Trigger(
      String key,
      List<String> values,
      String pattern,
      String effect,
      boolean guardable,
      String sinkDefault) {

    public Trigger(String key, List<String> values, String effect, boolean guardable) {
      this(key, values, null, effect, guardable, null);
    }

    /** {@code key} set to a value in which the regular expression {@code pattern} is found. */
    public static Trigger matching(String key, String pattern, String effect, boolean guardable) {
      return new Trigger(key, List.of(), pattern, effect, guardable, null);
    }

    /** The sink whatever its configuration. */
    public static Trigger always(String effect, boolean guardable) {
      return new Trigger(null, List.of(), null, effect, guardable, null);
    }

    /** This trigger, for a sink that takes {@code value} when {@code key} is not set. */
    public Trigger whenUnset(String value) {
      return new Trigger(key, values, pattern, effect, guardable, value);
    }

    /** The value the sink runs with: the connector's setting, else the sink's default. */
    public String effective(String value) {
      return value != null ? value : sinkDefault;
    }

    /** Whether the trigger holds whatever the configuration. */
    public boolean always() {
      return key == null;
    }

    /**
     * Whether {@code value} (the connector's setting of {@link #key}, or null when it sets none,
     * which means the sink's default) sets it off.
     */
    public boolean matches(String value) {
      if (always()) {
        return true;
      }
      String effective = effective(value);
      if (effective == null) {
        return false;
      }
      String v = effective.trim();
      if (pattern != null) {
        return Pattern.compile(pattern, Pattern.CASE_INSENSITIVE | Pattern.DOTALL)
            .matcher(v)
            .find();
      }
      return values.stream().anyMatch(x -> x.equalsIgnoreCase(v));
    }
  }

  /**
   * One sink of the table.
   *
   * @param name how the sink is called in messages and the docs
   * @param classes its connector classes (fully qualified; a subclass matches too)
   * @param triggers for {@link Kind#ORDER_SENSITIVE}: the settings that make it so
   * @param why for {@link Kind#SELF_COMMITTING}: why it cannot run on a share group, a clause
   *     following the sink's name ("commits ..."); for {@link Kind#SAFE}: why it is safe
   * @param guard how its target keeps each key's newest version (the safe way for order-sensitive
   *     writes), or null when it has none
   * @param perTopicKeys how the sink names a setting for one topic, as a regular expression with
   *     {@code %s} where the setting's key goes (MongoDB's {@code topic.override.<topic>.<key>}):
   *     each such key is checked as the key itself is
   */
  public record Sink(
      String name,
      List<String> classes,
      Kind kind,
      List<Trigger> triggers,
      String why,
      String guard,
      List<String> perTopicKeys) {

    public Sink(String name, List<String> classes, Kind kind, List<Trigger> triggers, String why) {
      this(name, classes, kind, triggers, why, null, List.of());
    }

    public Sink(
        String name,
        List<String> classes,
        Kind kind,
        List<Trigger> triggers,
        String why,
        String guard) {
      this(name, classes, kind, triggers, why, guard, List.of());
    }

    /** This sink, which also reads its settings per topic under {@code patterns}. */
    public Sink perTopic(String... patterns) {
      return new Sink(name, classes, kind, triggers, why, guard, List.of(patterns));
    }

    /** Whether {@code connectorKey} is {@code key} set for one topic, as this sink reads it. */
    public boolean readsPerTopic(String connectorKey, String key) {
      return perTopicKeys.stream()
          .anyMatch(p -> connectorKey.matches(String.format(p, Pattern.quote(key))));
    }
  }

  private static final String UPSERT_EFFECT =
      "writes whichever version of a key reaches it last, so a row can end on an older version";
  private static final String DELETE_EFFECT =
      "deletes the row of a tombstone's key, and an older version of the key that reaches it later"
          + " writes the row back";

  private static final String REPLACE_EFFECT =
      "replaces the document of a key with whichever version reaches it last, so a document can"
          + " end on an older version";
  private static final String MERGE_EFFECT =
      "merges each record into the document of its key without a version, so a document can end"
          + " on an older version";
  private static final String KEY_VALUE_EFFECT =
      "sets each key to whichever record reaches it last, so a key can end on an older value";
  private static final String SQL_GUARD =
      "a WHERE on the row's stored partition and offset in the statement, or the trigger shown"
          + " below";

  // The JDBC sinks of Debezium, Confluent and Aiven take these two settings alike.
  private static final Trigger JDBC_UPSERT =
      new Trigger("insert.mode", List.of("upsert", "update"), UPSERT_EFFECT, true);
  private static final Trigger JDBC_DELETE =
      new Trigger("delete.enabled", List.of("true"), DELETE_EFFECT, false);

  /**
   * The table. Each row cites, in a comment, where its settings and behaviour were read; a sink's
   * class is matched with its superclasses (the Camel 4.x per-component connectors extend {@code
   * CamelSinkConnector}).
   */
  public static final List<Sink> SINKS =
      List.of(
          // debezium/debezium: debezium-connector-jdbc/src/main/java/io/debezium/connector/jdbc/
          // JdbcSinkConnectorConfig.java (insert.mode, delete.enabled, truncate.enabled).
          new Sink(
              "Debezium JDBC sink",
              List.of("io.debezium.connector.jdbc.JdbcSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  JDBC_UPSERT,
                  JDBC_DELETE,
                  new Trigger(
                      "truncate.enabled",
                      List.of("true"),
                      "empties the table on a truncate event, and rows written before it that reach"
                          + " it later stay",
                      false)),
              null,
              SQL_GUARD),
          // https://docs.confluent.io/kafka-connectors/jdbc/current/sink-connector/sink_config_options.html
          // (insert.mode insert/upsert/update, delete.enabled).
          new Sink(
              "Confluent JDBC sink",
              List.of("io.confluent.connect.jdbc.JdbcSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(JDBC_UPSERT, JDBC_DELETE),
              null,
              SQL_GUARD),
          // Aiven-Open/jdbc-connector-for-apache-kafka: docs/sink-connector-config-options.rst
          // (insert.mode insert/multi/upsert/update, delete.enabled).
          new Sink(
              "Aiven JDBC sink",
              List.of("io.aiven.connect.jdbc.JdbcSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(JDBC_UPSERT, JDBC_DELETE),
              null,
              SQL_GUARD),
          // apache/camel-kafka-connector, tag camel-kafka-connector-0.11.0:
          // core/src/main/java/org/apache/camel/kafkaconnector/CamelSinkConnectorConfig.java
          // (camel.sink.url: any Camel endpoint); Camel's sql and spring-redis components.
          new Sink(
              "Camel sink (generic, camel.sink.url)",
              List.of("org.apache.camel.kafkaconnector.CamelSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  Trigger.matching(
                      "camel.sink.url",
                      "^(sql|jdbc|spring-jdbc):.*\\b(update|delete|merge|replace|on\\s+conflict"
                          + "|on\\s+duplicate\\s+key)\\b",
                      "runs an SQL statement that overwrites or deletes by key, so a row can end on"
                          + " an older version (or come back after its delete)",
                      true),
                  Trigger.matching(
                      "camel.sink.url", "^(spring-redis|redis):", KEY_VALUE_EFFECT, false)),
              null,
              SQL_GUARD),
          // https://camel.apache.org/camel-kafka-connector/latest/reference/connectors/
          // camel-postgresql-sink-kafka-sink-connector.html, camel-mariadb-sink-...,
          // camel-mysql-sink-... (camel.kamelet.<name>-sink.query).
          new Sink(
              "Camel SQL kamelet sinks (PostgreSQL, MariaDB, MySQL)",
              List.of(
                  "org.apache.camel.kafkaconnector.postgresqlsink.CamelPostgresqlsinkSinkConnector",
                  "org.apache.camel.kafkaconnector.mariadbsink.CamelMariadbsinkSinkConnector",
                  "org.apache.camel.kafkaconnector.mysqlsink.CamelMysqlsinkSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  Trigger.matching(
                      "camel.kamelet.postgresql-sink.query",
                      "\\b(update|delete|merge|on\\s+conflict)\\b",
                      UPSERT_EFFECT,
                      true),
                  Trigger.matching(
                      "camel.kamelet.mariadb-sink.query",
                      "\\b(update|delete|replace|on\\s+duplicate\\s+key)\\b",
                      UPSERT_EFFECT,
                      true),
                  Trigger.matching(
                      "camel.kamelet.mysql-sink.query",
                      "\\b(update|delete|replace|on\\s+duplicate\\s+key)\\b",
                      UPSERT_EFFECT,
                      true)),
              null,
              SQL_GUARD),
          // https://camel.apache.org/camel-kafka-connector/latest/reference/connectors/
          // camel-redis-sink-kafka-sink-connector.html (camel.kamelet.redis-sink.command).
          new Sink(
              "Camel Redis kamelet sink",
              List.of("org.apache.camel.kafkaconnector.redissink.CamelRedissinkSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  new Trigger(
                      "camel.kamelet.redis-sink.command",
                      List.of("SET", "SETEX", "SETNX", "GETSET", "MSET", "HSET", "HMSET", "DEL"),
                      KEY_VALUE_EFFECT,
                      false)),
              null),
          // jaredpetersen/kafka-connect-redis: src/main/java/io/github/jaredpetersen/
          // kafkaconnectredis/sink/RedisSinkTask.java (the record is a Redis command: SET, SADD,
          // GEOADD, EXPIRE, ...).
          new Sink(
              "Redis sink (jaredpetersen)",
              List.of("io.github.jaredpetersen.kafkaconnectredis.sink.RedisSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  Trigger.always(
                      "runs each record's command (SET, EXPIRE, ...) in the order they reach it, so"
                          + " a key can end on an older value",
                      false)),
              null),
          // jcustenborder/kafka-connect-redis README: "This connector supports deletes. If the
          // record stored in Kafka has a null value, this connector will send a delete".
          new Sink(
              "Redis sink (jcustenborder, Confluent Hub)",
              List.of("com.github.jcustenborder.kafka.connect.redis.RedisSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  Trigger.always(
                      KEY_VALUE_EFFECT
                          + ", and a delete (null value) overtaken by an older value"
                          + " brings the key back",
                      false)),
              null),
          // https://redis.github.io/redis-kafka-connect/ (sink: redis.type STREAM appends, HASH,
          // STRING, JSON, SET, ZSET keyed by the record key; deletes on null values).
          new Sink(
              "Redis Kafka Connect sink (Redis Inc.)",
              List.of(
                  "com.redis.kafka.connect.RedisSinkConnector",
                  "com.redislabs.kafkaconnect.RedisEnterpriseSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  new Trigger(
                      "redis.type",
                      List.of("HASH", "STRING", "JSON", "TIMESERIES"),
                      KEY_VALUE_EFFECT,
                      false),
                  new Trigger(
                      "redis.command",
                      List.of("HSET", "SET", "JSONSET", "DEL"),
                      KEY_VALUE_EFFECT,
                      false)),
              null),
          // mongodb/mongo-kafka: docs of the sink, https://www.mongodb.com/docs/kafka-connector/
          // current/sink-connector/configuration-properties/ (document.id.strategy,
          // delete.on.null.values, writemodel.strategy, change.data.capture.handler); the
          // default strategies (BsonOidStrategy, ReplaceOneDefaultStrategy) write one new
          // document per record.
          new Sink(
                  "MongoDB sink",
                  List.of("com.mongodb.kafka.connect.MongoSinkConnector"),
                  Kind.ORDER_SENSITIVE,
                  List.of(
                      Trigger.matching(
                          "document.id.strategy",
                          "(ProvidedIn(Key|Value)|Partial(Key|Value)|FullKey)Strategy$",
                          REPLACE_EFFECT,
                          false),
                      new Trigger("delete.on.null.values", List.of("true"), DELETE_EFFECT, false),
                      Trigger.matching(
                          "writemodel.strategy",
                          "(BusinessKey|UpdateOne|DeleteOne)",
                          REPLACE_EFFECT,
                          false),
                      Trigger.matching(
                          "change.data.capture.handler",
                          "\\S",
                          "replays change events (inserts, updates, deletes) in the order they reach"
                              + " it, so a document can end on an older version or come back after"
                              + " its delete",
                          false)),
                  null)
              // topic.override.<topic>.<setting>: the same settings for one topic.
              .perTopic("topic\\.override\\..+\\.%s"),
          // debezium/debezium: debezium-connector-mongodb/src/main/java/io/debezium/connector/
          // mongodb/sink/MongoDbChangeEventSink.java (replaces by the record key with upsert,
          // deletes on tombstones).
          new Sink(
              "Debezium MongoDB sink",
              List.of("io.debezium.connector.mongodb.MongoDbSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(Trigger.always(REPLACE_EFFECT + "; deletes on tombstones", false)),
              null),
          // https://docs.confluent.io/kafka-connectors/elasticsearch/current/overview.html
          // (key.ignore=false: key as document id "with external versioning from Kafka
          // offsets"); configuration_options.html (write.method, behavior.on.null.values).
          new Sink(
              "Elasticsearch sink (Confluent)",
              List.of("io.confluent.connect.elasticsearch.ElasticsearchSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  new Trigger("write.method", List.of("upsert"), MERGE_EFFECT, false),
                  new Trigger(
                      "behavior.on.null.values",
                      List.of("delete"),
                      DELETE_EFFECT
                          + " once Elasticsearch has forgotten the delete's version"
                          + " (index.gc_deletes, 60 s)",
                      false)),
              null,
              "built in: with key.ignore=false and write.method=insert it indexes with"
                  + " version_type=external and the record's offset as version, so Elasticsearch"
                  + " keeps the newest version of a key whatever the arrival order"),
          // Aiven-Open/opensearch-connector-for-apache-kafka: docs/opensearch-sink-connector-
          // config-options.rst (key.ignore, index.write.method insert/upsert,
          // behavior.on.null.values); forked from Confluent's sink, same versioning.
          new Sink(
              "OpenSearch sink (Aiven)",
              // Renamed OpenSearchSinkConnector in the 3.x releases; both names ship.
              List.of(
                  "io.aiven.kafka.connect.opensearch.OpenSearchSinkConnector",
                  "io.aiven.kafka.connect.opensearch.OpensearchSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  new Trigger("index.write.method", List.of("upsert"), MERGE_EFFECT, false),
                  new Trigger(
                      "behavior.on.null.values",
                      List.of("delete"),
                      DELETE_EFFECT
                          + " once OpenSearch has forgotten the delete's version"
                          + " (index.gc_deletes, 60 s)",
                      false)),
              null,
              "built in: with key.ignore=false and index.write.method=insert it indexes with"
                  + " external versions taken from the record's offset"),
          // https://docs.datastax.com/en/kafka/doc/kafka/kafkaAboutInstance.html ("To ensure
          // proper ordering, all records are written using the Kafka record timestamp");
          // kafkaColumnWritetimeTimestamp.html (__timestamp mapping).
          new Sink(
              "Cassandra sink (DataStax)",
              List.of("com.datastax.oss.kafka.sink.CassandraSinkConnector"),
              Kind.SAFE,
              List.of(),
              "writes every row with its record's timestamp as Cassandra's write time, so the"
                  + " newest version of a key by timestamp wins whatever the arrival order (map"
                  + " __timestamp to the offset field for a strict per-partition order)"),
          // ClickHouse/clickhouse-kafka-connect: ProxySinkTask.java (records grouped by topic
          // and partition unless exactlyOnce=false with ignorePartitionsWhenBatching=true;
          // InMemoryState without exactlyOnce, KeeperStateProvider with it) and
          // processing/Processing.java (doLogic: a batch whose offset range the partition's
          // last range CONTAINS, or that is the SAME, is skipped without an insert; records
          // below the last range's start are dropped; only the ignorePartitionsWhenBatching
          // path inserts every batch). ClickHouseSinkConfig: both default to false.
          new Sink(
              "ClickHouse sink",
              List.of("com.clickhouse.kafka.connect.ClickHouseSinkConnector"),
              Kind.SELF_COMMITTING,
              List.of(
                  new Trigger(
                          "exactlyOnce",
                          List.of("true"),
                          "keeps each partition's last written offset range in KeeperMap and"
                              + " skips or rejects batches by comparing offset ranges",
                          false)
                      .whenUnset("false"),
                  new Trigger(
                          "ignorePartitionsWhenBatching",
                          List.of("false"),
                          "keeps each partition's last offset range in memory and skips records"
                              + " inside or below it",
                          false)
                      .whenUnset("false")),
              "keeps each partition's last offset range (in memory, or in KeeperMap with"
                  + " exactlyOnce=true) and skips the records of a put that fall inside or below"
                  + " it, assuming one task per partition receiving it in order: in share mode a"
                  + " task is handed such records (another member's releases, redeliveries), and"
                  + " sharesink would ACCEPT them unwritten. Set ignorePartitionsWhenBatching=true"
                  + " with exactlyOnce=false (every batch inserted, at least once) to run in share"
                  + " mode"),
          // confluentinc/kafka-connect-bigquery (formerly wepay): BigQuerySinkConfig.java
          // (upsertEnabled, deleteEnabled: batches MERGEd from an intermediate table, the latest
          // by the order the connector received them).
          new Sink(
              "BigQuery sink (WePay/Confluent)",
              List.of("com.wepay.kafka.connect.bigquery.BigQuerySinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  new Trigger("upsertEnabled", List.of("true"), UPSERT_EFFECT, false),
                  new Trigger("deleteEnabled", List.of("true"), DELETE_EFFECT, false)),
              null),
          // snowflakedb/snowflake-kafka-connector: SnowflakeSinkTask.java (one channel or
          // pipe per topic partition; on open it fetches the partition's committed offset
          // token from Snowflake and resumes from it with context.offset).
          new Sink(
              "Snowflake sink",
              List.of("com.snowflake.kafka.connector.SnowflakeSinkConnector"),
              Kind.SELF_COMMITTING,
              List.of(),
              "commits its own offsets: each topic partition has one Snowpipe Streaming channel"
                  + " (or pipe) whose offset token in Snowflake is the truth, reopened by whichever"
                  + " task opens the partition; several tasks on one partition invalidate each"
                  + " other's channel, and the rewind it asks on open cannot happen on a share"
                  + " group"),
          // https://docs.confluent.io/kafka-connectors/hdfs/current/overview.html ("uses a
          // write-ahead log ... recovers offsets from HDFS"); TopicPartitionWriter.recover().
          new Sink(
              "HDFS sinks (Confluent)",
              List.of(
                  "io.confluent.connect.hdfs.HdfsSinkConnector",
                  "io.confluent.connect.hdfs3.Hdfs3SinkConnector"),
              Kind.SELF_COMMITTING,
              List.of(),
              "commits its own offsets: each partition has one write-ahead log and its offsets are"
                  + " recovered from the committed file names, with a rewind (context.offset) that"
                  + " a share group cannot do; two tasks writing one partition contend for its"
                  + " log"),
          // https://docs.confluent.io/kafka-connectors/s3-sink/current/overview.html (files
          // named topic+partition+start offset, exactly once only with one writer per partition
          // and deterministic rotation); same for the GCS and Azure Blob sinks.
          new Sink(
              "Object storage sinks (Confluent S3, GCS, Azure Blob)",
              List.of(
                  "io.confluent.connect.s3.S3SinkConnector",
                  "io.confluent.connect.gcs.GcsSinkConnector",
                  "io.confluent.connect.azure.blob.AzureBlobStorageSinkConnector"),
              Kind.SAFE,
              List.of(),
              "append files; preCommit reports the files committed, so sharesink ACCEPTs a"
                  + " record only once its file is written. Exactly once becomes at least once:"
                  + " after a redelivery a record can be in two files"),
          // Aiven-Open/cloud-storage-connectors-for-apache-kafka: s3-sink-connector/README.md
          // ("file.name.template ... {{key}}: the file holds the latest record of the key").
          new Sink(
              "Aiven S3 and GCS sinks",
              List.of(
                  "io.aiven.kafka.connect.s3.AivenKafkaConnectS3SinkConnector",
                  "io.aiven.kafka.connect.gcs.GcsSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  Trigger.matching(
                      "file.name.template",
                      "\\{\\{\\s*key\\s*\\}\\}",
                      "writes one file per key holding the last record to reach it, so a file can"
                          + " end on an older version",
                      false)),
              null),
          // https://docs.confluent.io/kafka-connectors/http/current/connector_config.html
          // (request.method POST/PUT/PATCH/DELETE; ${key} in http.api.url).
          new Sink(
              "HTTP sink (Confluent)",
              List.of("io.confluent.connect.http.HttpSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  new Trigger(
                      "request.method",
                      List.of("PUT", "PATCH", "DELETE"),
                      "sends each key's PUT, PATCH or DELETE in the order the records reach it, so"
                          + " the resource can end on an older version",
                      false)),
              null),
          // apache/iceberg: kafka-connect/kafka-connect/src/main/java/org/apache/iceberg/connect/
          // channel/Coordinator.java (commits data files and offsets through its control topic).
          new Sink(
              "Apache Iceberg sink",
              List.of(
                  "org.apache.iceberg.connect.IcebergSinkConnector",
                  "io.tabular.iceberg.connect.IcebergSinkConnector"),
              Kind.SELF_COMMITTING,
              List.of(),
              "commits its own offsets: its preCommit returns {} and its coordinator commits the"
                  + " data files together with the consumer offsets through its control topic."
                  + " sharesink ACCEPTs a record only once preCommit reports it written, so with"
                  + " share.commit.empty.precommit=hold the task stalls once the record-lock"
                  + " window is full, and with accept a crash loses what it had not committed"));

  /** The sink of the table {@code connectorClass} or one of its superclasses is, if any. */
  public static Optional<Sink> of(Class<?> connectorClass) {
    for (Class<?> c = connectorClass; c != null && c != Object.class; c = c.getSuperclass()) {
      Optional<Sink> sink = of(c.getName());
      if (sink.isPresent()) {
        return sink;
      }
    }
    return Optional.empty();
  }

  /** The sink of the table with the fully qualified class name {@code className}, if any. */
  public static Optional<Sink> of(String className) {
    if (className == null) {
      return Optional.empty();
    }
    String name = className.trim();
    return SINKS.stream().filter(s -> s.classes().contains(name)).findFirst();
  }
}

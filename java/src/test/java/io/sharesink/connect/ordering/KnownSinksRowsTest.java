package io.sharesink.connect.ordering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

/** The decisions of the table's rows beyond the JDBC sinks and Iceberg (ShareOrderingTest). */
class KnownSinksRowsTest {

  private static final Function<String, Class<?>> NOT_INSTALLED =
      name -> {
        throw new ConfigException("share.sink.connector.class", name, "not installed");
      };

  private static Map<String, List<String>> problems(String sinkClass, String... keyValues) {
    Map<String, String> props = new HashMap<>();
    props.put("name", "c");
    props.put("share.sink.connector.class", sinkClass);
    props.put("topics", "t");
    for (int i = 0; i < keyValues.length; i += 2) {
      props.put(keyValues[i], keyValues[i + 1]);
    }
    return ShareOrdering.problems(props, NOT_INSTALLED);
  }

  private static String only(Map<String, List<String>> problems, String key) {
    assertEquals(Set.of(key), problems.keySet(), problems.toString());
    return problems.get(key).get(0);
  }

  static final String MONGO = "com.mongodb.kafka.connect.MongoSinkConnector";
  static final String CAMEL = "org.apache.camel.kafkaconnector.CamelSinkConnector";
  static final String ES = "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector";
  static final String REDIS_JP =
      "io.github.jaredpetersen.kafkaconnectredis.sink.RedisSinkConnector";

  @Test
  void mongoDbIsOrderSensitiveOnlyWithIdsFromTheRecordDeletesOrCdc() {
    assertEquals(Map.of(), problems(MONGO), "generated ids: one document per record");
    assertEquals(
        Map.of(),
        problems(
            MONGO,
            "document.id.strategy",
            "com.mongodb.kafka.connect.sink.processor.id.strategy.KafkaMetaDataStrategy"));
    String m =
        only(
            problems(
                MONGO,
                "document.id.strategy",
                "com.mongodb.kafka.connect.sink.processor.id.strategy.ProvidedInKeyStrategy"),
            "document.id.strategy");
    assertTrue(m.contains("older version") && m.contains("share.ordering=unordered"), m);
    assertTrue(!m.contains("offset-guarded"), "MongoDB's sink has no write guard: " + m);
    only(problems(MONGO, "delete.on.null.values", "true"), "delete.on.null.values");
    only(
        problems(
            MONGO,
            "change.data.capture.handler",
            "com.mongodb.kafka.connect.sink.cdc.debezium.rdbms.RdbmsHandler"),
        "change.data.capture.handler");
    assertEquals(Map.of(), problems(MONGO, "change.data.capture.handler", ""));
    assertEquals(
        Map.of(), problems(MONGO, "delete.on.null.values", "true", "share.ordering", "unordered"));
  }

  @Test
  void mongoDbSettingsForOneTopicAreCheckedAsTheTopLevelOnes() {
    String key = "topic.override.orders.v2.document.id.strategy";
    String m =
        only(
            problems(
                MONGO,
                key,
                "com.mongodb.kafka.connect.sink.processor.id.strategy.ProvidedInValueStrategy"),
            key);
    assertTrue(m.startsWith(key + "=com.mongodb"), m);
    only(
        problems(MONGO, "topic.override.orders.delete.on.null.values", "true"),
        "topic.override.orders.delete.on.null.values");
    assertEquals(
        Map.of(),
        problems(
            MONGO,
            "topic.override.orders.document.id.strategy",
            "com.mongodb.kafka.connect.sink.processor.id.strategy.BsonOidStrategy"));
    // Another sink's keys of the same shape are that sink's business.
    assertEquals(Map.of(), problems(ES, "topic.override.orders.write.method", "upsert"));
  }

  @Test
  void camelGenericSinkIsCheckedByItsEndpoint() {
    assertEquals(
        Map.of(), problems(CAMEL, "camel.sink.url", "sql:INSERT INTO t (id) VALUES (:#id)"));
    assertEquals(Map.of(), problems(CAMEL, "camel.sink.url", "paho:t?brokerUrl=tcp://h:1883"));
    String m =
        only(
            problems(
                CAMEL,
                "camel.sink.url",
                "sql:INSERT INTO t (id, v) VALUES (:#id, :#v) ON DUPLICATE KEY UPDATE v = :#v"),
            "camel.sink.url");
    assertTrue(m.contains("share.ordering=offset-guarded"), m);
    only(
        problems(CAMEL, "camel.sink.url", "sql:update t set v = :#v where id = :#id"),
        "camel.sink.url");
    String redis =
        only(
            problems(CAMEL, "camel.sink.url", "spring-redis://h:6379?command=SET"),
            "camel.sink.url");
    assertTrue(!redis.contains("offset-guarded"), redis);
  }

  @Test
  void elasticsearchIsSafeWithItsOffsetVersionsAndNotWithUpserts() {
    assertEquals(Map.of(), problems(ES, "key.ignore", "false"));
    String m = only(problems(ES, "write.method", "upsert"), "write.method");
    assertTrue(m.contains("without a version"), m);
    only(problems(ES, "behavior.on.null.values", "DELETE"), "behavior.on.null.values");
  }

  @Test
  void aSinkThatIsAlwaysOrderSensitiveIsReportedOnItsClass() {
    String m = only(problems(REDIS_JP), "share.sink.connector.class");
    assertTrue(m.startsWith("any configuration: "), m);
    assertTrue(m.contains("share.ordering=unordered"), m);
    assertEquals(Map.of(), problems(REDIS_JP, "share.ordering", "unordered"));
    String guarded =
        only(
            problems(
                REDIS_JP,
                "share.ordering",
                "offset-guarded",
                "transforms",
                "c",
                "transforms.c.type",
                "org.apache.kafka.connect.transforms.InsertField$Value",
                "transforms.c.offset.field",
                "o",
                "transforms.c.partition.field",
                "p"),
            "share.sink.connector.class");
    assertTrue(guarded.contains("cannot order it"), guarded);
  }

  @Test
  void selfCommittingSinksAreRefusedWhateverTheChoice() {
    for (String sink :
        List.of(
            "com.snowflake.kafka.connector.SnowflakeSinkConnector",
            "io.confluent.connect.hdfs.HdfsSinkConnector",
            "io.confluent.connect.hdfs3.Hdfs3SinkConnector")) {
      String m = only(problems(sink, "share.ordering", "unordered"), "share.sink.connector.class");
      assertTrue(m.contains("cannot run in share mode"), m);
    }
  }

  @Test
  void clickHouseRunsOnlyWhenItInsertsEveryBatchWhichIsNotItsDefault() {
    String click = "com.clickhouse.kafka.connect.ClickHouseSinkConnector";
    // Its defaults (exactlyOnce=false, ignorePartitionsWhenBatching=false) keep each
    // partition's last offset range in memory and skip what falls inside it: lost in share mode.
    String m = only(problems(click), "ignorePartitionsWhenBatching");
    assertTrue(m.contains("ignorePartitionsWhenBatching=false (its default)"), m);
    assertTrue(m.contains("cannot run in share mode"), m);
    assertTrue(m.contains("Set ignorePartitionsWhenBatching=true with exactlyOnce=false"), m);
    only(
        problems(click, "ignorePartitionsWhenBatching", "false", "share.ordering", "unordered"),
        "ignorePartitionsWhenBatching");
    only(
        problems(click, "exactlyOnce", "true", "ignorePartitionsWhenBatching", "true"),
        "exactlyOnce");
    assertEquals(Map.of(), problems(click, "ignorePartitionsWhenBatching", "true"));
    assertEquals(
        Map.of(),
        problems(click, "ignorePartitionsWhenBatching", " TRUE ", "exactlyOnce", "false"));
  }

  @Test
  void aivenOpenSearchIsCheckedUnderBothOfItsClassNames() {
    for (String aiven :
        List.of(
            "io.aiven.kafka.connect.opensearch.OpenSearchSinkConnector",
            "io.aiven.kafka.connect.opensearch.OpensearchSinkConnector")) {
      only(problems(aiven, "index.write.method", "upsert"), "index.write.method");
      assertEquals(Map.of(), problems(aiven, "key.ignore", "false"), aiven);
    }
  }

  @Test
  void safeSinksAreNeverRefused() {
    for (String sink :
        List.of(
            "com.datastax.oss.kafka.sink.CassandraSinkConnector",
            "io.confluent.connect.s3.S3SinkConnector",
            "io.confluent.connect.gcs.GcsSinkConnector")) {
      assertEquals(Map.of(), problems(sink, "insert.mode", "upsert"), sink);
    }
  }

  @Test
  void keyedFileNamesAndKeyedHttpMethodsAreOrderSensitive() {
    only(
        problems(
            "io.aiven.kafka.connect.s3.AivenKafkaConnectS3SinkConnector",
            "file.name.template",
            "{{topic}}/{{ key }}.gz"),
        "file.name.template");
    assertEquals(
        Map.of(),
        problems(
            "io.aiven.kafka.connect.gcs.GcsSinkConnector",
            "file.name.template",
            "{{topic}}-{{partition}}-{{start_offset}}"));
    only(
        problems("io.confluent.connect.http.HttpSinkConnector", "request.method", "put"),
        "request.method");
    assertEquals(
        Map.of(),
        problems("io.confluent.connect.http.HttpSinkConnector", "request.method", "POST"));
  }

  @Test
  void redisSinksWithKeyedWritesAreRefusedAndStreamsPass() {
    only(
        problems("com.redis.kafka.connect.RedisSinkConnector", "redis.type", "HASH"), "redis.type");
    assertEquals(
        Map.of(), problems("com.redis.kafka.connect.RedisSinkConnector", "redis.type", "STREAM"));
    only(
        problems(
            "org.apache.camel.kafkaconnector.redissink.CamelRedissinkSinkConnector",
            "camel.kamelet.redis-sink.command",
            "SET"),
        "camel.kamelet.redis-sink.command");
    only(
        problems("com.github.jcustenborder.kafka.connect.redis.RedisSinkConnector"),
        "share.sink.connector.class");
    only(
        problems("io.debezium.connector.mongodb.MongoDbSinkConnector"),
        "share.sink.connector.class");
  }
}

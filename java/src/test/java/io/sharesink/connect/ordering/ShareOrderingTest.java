package io.sharesink.connect.ordering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.ShareSinkConnector;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.file.FileStreamSinkConnector;
import org.junit.jupiter.api.Test;

class ShareOrderingTest {

  static final String DEBEZIUM = "io.debezium.connector.jdbc.JdbcSinkConnector";
  static final String CONFLUENT = "io.confluent.connect.jdbc.JdbcSinkConnector";
  static final String ICEBERG = "org.apache.iceberg.connect.IcebergSinkConnector";
  static final String TABULAR = "io.tabular.iceberg.connect.IcebergSinkConnector";

  /** The sinks of the table are not on the test class path: the name is matched as written. */
  private static final Function<String, Class<?>> NOT_INSTALLED =
      name -> {
        throw new ConfigException("share.sink.connector.class", name, "not installed");
      };

  private static Map<String, String> config(String sinkClass, String... keyValues) {
    Map<String, String> props = new HashMap<>();
    props.put("name", "orders");
    props.put("connector.class", ShareSinkConnector.class.getName());
    props.put("share.sink.connector.class", sinkClass);
    props.put("topics", "orders");
    for (int i = 0; i < keyValues.length; i += 2) {
      props.put(keyValues[i], keyValues[i + 1]);
    }
    return props;
  }

  private static Map<String, List<String>> problems(Map<String, String> props) {
    return ShareOrdering.problems(props, NOT_INSTALLED);
  }

  private static String only(Map<String, List<String>> problems, String key) {
    assertEquals(Set.of(key), problems.keySet(), problems.toString());
    assertEquals(1, problems.get(key).size(), problems.toString());
    return problems.get(key).get(0);
  }

  @Test
  void anUpsertWithoutAChoiceIsAnErrorOnInsertModeNamingTheChoices() {
    for (String sink : List.of(DEBEZIUM, CONFLUENT)) {
      for (String mode : List.of("upsert", "update", "UPSERT", " upsert ")) {
        String message = only(problems(config(sink, "insert.mode", mode)), "insert.mode");
        assertTrue(message.startsWith("insert.mode=" + mode.trim() + ": "), message);
        assertTrue(message.contains("no fixed order"), message);
        assertTrue(message.contains("older version"), message);
        assertTrue(message.contains("classic runtime (connector.class=" + sink), message);
        assertTrue(message.contains("share.ordering=offset-guarded"), message);
        assertTrue(message.contains("share.ordering=unordered"), message);
        assertTrue(message.contains(ShareOrdering.DOCS), message);
      }
    }
  }

  @Test
  void theClassicRuntimeIsNamedInTheFormTheOperatorWrote() {
    Map<String, String> flag =
        config(
            DEBEZIUM,
            "insert.mode",
            "upsert",
            "share.internal.form",
            "flag",
            "share.internal.form.flag",
            "share");
    assertTrue(
        only(problems(flag), "insert.mode")
            .contains("classic runtime (remove consumer.override.group.protocol=share)"));
    Map<String, String> byDefault =
        config(DEBEZIUM, "insert.mode", "upsert", "share.internal.form", "worker-default");
    assertTrue(
        only(problems(byDefault), "insert.mode")
            .contains("classic runtime (set consumer.override.group.protocol=classic on it)"));
  }

  @Test
  void deletesAndTruncatesAreOrderSensitiveToo() {
    String delete = only(problems(config(DEBEZIUM, "delete.enabled", "true")), "delete.enabled");
    assertTrue(delete.contains("writes the row back"), delete);
    assertTrue(!delete.contains("offset-guarded"), "a guard cannot order a hard delete: " + delete);
    only(problems(config(CONFLUENT, "delete.enabled", "TRUE")), "delete.enabled");
    only(problems(config(DEBEZIUM, "truncate.enabled", "true")), "truncate.enabled");
    Map<String, List<String>> both =
        problems(config(DEBEZIUM, "insert.mode", "upsert", "delete.enabled", "true"));
    assertEquals(Set.of("insert.mode", "delete.enabled"), both.keySet(), both.toString());
  }

  @Test
  void orderIndependentSettingsPass() {
    assertEquals(Map.of(), problems(config(DEBEZIUM)));
    assertEquals(Map.of(), problems(config(DEBEZIUM, "insert.mode", "insert")));
    assertEquals(
        Map.of(), problems(config(CONFLUENT, "insert.mode", "insert", "delete.enabled", "false")));
    assertEquals(
        Map.of(),
        problems(config(FileStreamSinkConnector.class.getName(), "insert.mode", "upsert")),
        "a sink not in the table is not checked");
  }

  @Test
  void anExplicitChoiceLiftsTheError() {
    assertEquals(
        Map.of(),
        problems(
            config(
                DEBEZIUM,
                "insert.mode",
                "upsert",
                "delete.enabled",
                "true",
                "share.ordering",
                "unordered")));
    assertEquals(
        Map.of(),
        problems(config(CONFLUENT, "insert.mode", "update", "share.ordering", "Unordered")));
  }

  @Test
  void checkIsTheDefault() {
    assertEquals(
        problems(config(DEBEZIUM, "insert.mode", "upsert")),
        problems(config(DEBEZIUM, "insert.mode", "upsert", "share.ordering", "CHECK")));
  }

  static Map<String, String> guarded(String sink, String... more) {
    Map<String, String> props =
        config(
            sink,
            "insert.mode",
            "upsert",
            "share.ordering",
            "offset-guarded",
            "transforms",
            "unwrap, coords",
            "transforms.unwrap.type",
            "io.debezium.transforms.ExtractNewRecordState",
            "transforms.coords.type",
            "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.coords.offset.field",
            "kafka_offset",
            "transforms.coords.partition.field",
            "kafka_partition");
    for (int i = 0; i < more.length; i += 2) {
      props.put(more[i], more[i + 1]);
    }
    return props;
  }

  @Test
  void offsetGuardedNeedsThePartitionAndOffsetInTheValue() {
    assertEquals(Map.of(), problems(guarded(DEBEZIUM)));
    for (String[] broken :
        new String[][] {
          {"transforms.coords.offset.field", ""},
          {"transforms.coords.partition.field", " "},
          {"transforms.coords.type", "org.apache.kafka.connect.transforms.InsertField$Key"},
          {"transforms", "unwrap"},
        }) {
      String message = only(problems(guarded(DEBEZIUM, broken)), "share.ordering");
      assertTrue(message.contains("InsertField$Value"), message);
      assertTrue(message.contains("share.ordering=unordered"), message);
    }
    // Checked for any sink: the choice says the target guards by partition and offset.
    only(
        problems(
            config(FileStreamSinkConnector.class.getName(), "share.ordering", "offset-guarded")),
        "share.ordering");
  }

  @Test
  void offsetGuardedCannotOrderHardDeletes() {
    String message = only(problems(guarded(DEBEZIUM, "delete.enabled", "true")), "delete.enabled");
    assertTrue(message.contains("soft-delete"), message);
    assertTrue(message.contains("share.ordering=unordered"), message);
    only(problems(guarded(DEBEZIUM, "truncate.enabled", "true")), "truncate.enabled");
  }

  @Test
  void icebergIsRefusedWhateverTheChoice() {
    for (String sink : List.of(ICEBERG, TABULAR)) {
      for (String choice : List.of("check", "unordered", "offset-guarded")) {
        Map<String, List<String>> problems = problems(config(sink, "share.ordering", choice));
        List<String> messages = problems.get("share.sink.connector.class");
        assertEquals(1, messages.size(), problems.toString());
        String message = messages.get(0);
        assertTrue(message.contains("cannot run in share mode"), message);
        assertTrue(message.contains("commits its own offsets"), message);
        assertTrue(message.contains("classic runtime"), message);
      }
    }
  }

  @Test
  void aLoadedClassIsMatchedByItsNameNotTheAliasWritten() {
    // An alias resolves to the class through the worker's loaders; the table has full names.
    Map<String, String> props = config("FileStreamSink", "insert.mode", "upsert");
    assertEquals(Map.of(), ShareOrdering.problems(props, name -> FileStreamSinkConnector.class));
    assertTrue(KnownSinks.of(FileStreamSinkConnector.class).isEmpty());
    assertEquals("Debezium JDBC sink", KnownSinks.of(" " + DEBEZIUM + " ").orElseThrow().name());
  }

  /** A sink of the operator's own, built on a sink of the table. */
  public static final class OwnIceberg extends io.tabular.iceberg.connect.IcebergSinkConnector {}

  @Test
  void aSubclassOfASinkOfTheTableIsThatSink() {
    assertEquals("Apache Iceberg sink", KnownSinks.of(OwnIceberg.class).orElseThrow().name());
    Map<String, List<String>> problems =
        ShareOrdering.problems(
            config("OwnIceberg", "share.ordering", "unordered"), name -> OwnIceberg.class);
    assertEquals(Set.of("share.sink.connector.class"), problems.keySet(), problems.toString());
  }

  @Test
  void theConnectorsStartRefusesWhatValidationRefuses() {
    ConnectException e =
        assertThrows(
            ConnectException.class,
            () -> ShareOrdering.ensureRunnable(config(TABULAR), OwnIceberg.class));
    assertTrue(
        e.getMessage()
            .startsWith(
                "sharesink will not run connector orders in share mode: share.sink.connector.class: the Apache Iceberg sink"),
        e.getMessage());
    ShareOrdering.ensureRunnable(
        config(DEBEZIUM, "insert.mode", "upsert"), FileStreamSinkConnector.class); // not listed
  }

  @Test
  void validationReportsTheProblemOnTheKeyThatCausesIt() {
    Map<String, String> props = config(DEBEZIUM, "insert.mode", "upsert");
    props.put("share.consumer.bootstrap.servers", "127.0.0.1:1");
    Map<String, ConfigValue> values = new HashMap<>();
    new ShareSinkConnector().validate(props).configValues().forEach(v -> values.put(v.name(), v));
    List<String> errors = values.get("insert.mode").errorMessages();
    assertEquals(1, errors.size(), errors.toString());
    assertTrue(errors.get(0).contains("share.ordering=unordered"), errors.toString());
    // share.ordering itself is a key of the connector, with its choices.
    assertEquals("check", values.get("share.ordering").value());
  }
}

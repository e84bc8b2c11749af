package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.ShareModeForm.ClassKind;
import io.sharesink.connect.ShareModeForm.ClassResolver;
import io.sharesink.connect.ShareModeForm.InvalidForm;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ShareModeFormTest {

  static final String FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector";
  static final String FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector";

  static final ClassResolver CLASSES =
      name ->
          switch (name) {
            case FILE_SINK, "FileStreamSink" -> ClassKind.SINK;
            case FILE_SOURCE -> ClassKind.OTHER;
            default -> ClassKind.UNKNOWN;
          };

  private static Map<String, String> flagged(String connectorClass) {
    Map<String, String> config = new LinkedHashMap<>();
    config.put("name", "orders");
    config.put("connector.class", connectorClass);
    config.put("consumer.override.group.protocol", "share");
    config.put("topics", "orders");
    config.put("tasks.max", "4");
    config.put("file", "/tmp/out");
    config.put("share.commit.interval.ms", "1000");
    return config;
  }

  @Test
  void theFlagStoresTheShareSinkConnectorFormAndTheOperatorsFormComesBack() {
    Map<String, String> operator = flagged(FILE_SINK);
    Map<String, String> stored = ShareModeForm.toStored(operator, false, CLASSES);

    assertEquals(ShareSinkConnector.class.getName(), stored.get("connector.class"));
    assertEquals(FILE_SINK, stored.get(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG));
    assertEquals(ShareModeForm.FORM_FLAG, stored.get(ShareSinkConfig.FORM_CONFIG));
    // The switch is kept under sharesink's key only: a source connector's offsets consumer
    // would be handed consumer.override.* and refuse group.protocol=share.
    assertFalse(stored.containsKey("consumer.override.group.protocol"));
    assertEquals("share", stored.get(ShareSinkConfig.FORM_FLAG_VALUE_CONFIG));
    // Nothing else changes: the operator's own share.* key stays.
    Map<String, String> rest = new HashMap<>(stored);
    rest.remove("connector.class");
    rest.remove(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG);
    rest.remove(ShareSinkConfig.FORM_CONFIG);
    rest.remove(ShareSinkConfig.FORM_FLAG_VALUE_CONFIG);
    Map<String, String> operatorRest = new HashMap<>(operator);
    operatorRest.remove("connector.class");
    operatorRest.remove("consumer.override.group.protocol");
    assertEquals(operatorRest, rest);

    assertTrue(ShareModeForm.isStoredForm(stored));
    assertEquals(operator, ShareModeForm.toOperator(stored));
    // An alias, and the switch's spelling, are kept as the operator wrote them.
    Map<String, String> alias = flagged("FileStreamSink");
    alias.put("consumer.override.group.protocol", " Share");
    assertEquals(alias, ShareModeForm.toOperator(ShareModeForm.toStored(alias, false, CLASSES)));
  }

  @Test
  void onlyAShareSinkConnectorIsInTheStoredForm() {
    Map<String, String> stored = ShareModeForm.toStored(flagged(FILE_SINK), false, CLASSES);
    // sharesink's keys on another class (a PUT of any map may carry them) show it as it is:
    // neither the sink's class nor type sink.
    Map<String, String> other = new LinkedHashMap<>(stored);
    other.put("connector.class", FILE_SOURCE);
    assertFalse(ShareModeForm.isStoredForm(other));
    assertSame(other, ShareModeForm.toOperator(other));
    // ShareSinkConnector as Connect resolves it: class name, simple name or alias.
    for (String name :
        List.of("ShareSinkConnector", "ShareSink", " " + stored.get("connector.class"))) {
      other.put("connector.class", name);
      assertTrue(ShareModeForm.isStoredForm(other), name);
    }
  }

  @Test
  void aStoredFormGivenAgainIsKeptAsItIs() {
    Map<String, String> stored = ShareModeForm.toStored(flagged(FILE_SINK), false, CLASSES);
    // What a follower forwards to the leader after its own filter ran.
    assertSame(stored, ShareModeForm.toStored(stored, true, CLASSES));
    // The explicit form is never touched, even with the switch in it.
    Map<String, String> explicit = flagged(ShareSinkConnector.class.getName());
    explicit.put(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, FILE_SINK);
    assertSame(explicit, ShareModeForm.toStored(explicit, true, CLASSES));
    assertSame(explicit, ShareModeForm.toOperator(explicit));
  }

  @Test
  void withoutTheFlagOnlyTheWorkerDefaultSwitchesShareModeOn() {
    Map<String, String> classic = flagged(FILE_SINK);
    classic.remove("consumer.override.group.protocol");
    assertSame(classic, ShareModeForm.toStored(classic, false, CLASSES));

    Map<String, String> stored = ShareModeForm.toStored(classic, true, CLASSES);
    assertEquals(ShareModeForm.FORM_WORKER_DEFAULT, stored.get(ShareSinkConfig.FORM_CONFIG));
    assertEquals(classic, ShareModeForm.toOperator(stored));

    // A connector can stay classic on a share-by-default worker, as the runtime's own values.
    for (String protocol : List.of("classic", "consumer")) {
      Map<String, String> optOut = flagged(FILE_SINK);
      optOut.put("consumer.override.group.protocol", protocol);
      assertSame(optOut, ShareModeForm.toStored(optOut, true, CLASSES));
    }
    // The default concerns sink connectors only; unknown classes are the runtime's to report.
    Map<String, String> source = flagged(FILE_SOURCE);
    source.remove("consumer.override.group.protocol");
    assertSame(source, ShareModeForm.toStored(source, true, CLASSES));
    Map<String, String> unknown = flagged("com.example.Missing");
    assertSame(unknown, ShareModeForm.toStored(unknown, true, CLASSES));
  }

  @Test
  void theFlagOnASourceConnectorOrWithTheExplicitKeyIsRefused() {
    InvalidForm source =
        assertThrows(
            InvalidForm.class, () -> ShareModeForm.toStored(flagged(FILE_SOURCE), false, CLASSES));
    assertTrue(source.getMessage().contains("not a sink connector"), source.getMessage());

    Map<String, String> both = flagged(FILE_SINK);
    both.put(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, FILE_SINK);
    InvalidForm twice =
        assertThrows(InvalidForm.class, () -> ShareModeForm.toStored(both, false, CLASSES));
    assertTrue(
        twice.getMessage().contains(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG),
        twice.getMessage());
  }

  @Test
  void theWorkerDefaultIsShareOrClassic() {
    assertTrue(
        ShareModeForm.workerDefaultIsShare(Map.of(ShareModeForm.WORKER_DEFAULT_CONFIG, "Share")));
    assertFalse(
        ShareModeForm.workerDefaultIsShare(Map.of(ShareModeForm.WORKER_DEFAULT_CONFIG, "classic")));
    assertFalse(ShareModeForm.workerDefaultIsShare(Map.of()));
    assertThrows(
        InvalidForm.class,
        () ->
            ShareModeForm.workerDefaultIsShare(Map.of(ShareModeForm.WORKER_DEFAULT_CONFIG, "yes")));
  }

  @Test
  void aPatchIsAppliedAsTheRuntimeDoes() {
    Map<String, String> current = Map.of("a", "1", "b", "2");
    Map<String, String> patch = new HashMap<>();
    patch.put("a", null);
    patch.put("c", "3");
    assertEquals(Map.of("b", "2", "c", "3"), ShareModeForm.patched(current, patch));
  }

  @Test
  void taskConfigsShowTheLegacyTaskAsTheClassicRuntimeWould() {
    Map<String, String> task = new HashMap<>();
    task.put("task.class", ShareSinkTask.class.getName());
    task.put("topics", "orders");
    task.put("file", "/tmp/out");
    task.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
    task.put(ShareSinkConfig.ADDED_KEYS_CONFIG, "value.converter");
    task.put(
        ShareSinkConfig.SINK_TASK_CLASS_CONFIG, "org.apache.kafka.connect.file.FileStreamSinkTask");
    task.put(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, FILE_SINK);
    task.put(ShareSinkConfig.TASK_ID_CONFIG, "0");
    assertEquals(
        Map.of(
            "task.class", "org.apache.kafka.connect.file.FileStreamSinkTask",
            "topics", "orders",
            "file", "/tmp/out"),
        ShareModeForm.taskToOperator(task));
    Map<String, String> other = Map.of("task.class", "x.Y");
    assertSame(other, ShareModeForm.taskToOperator(other));
  }
}

package io.sharesink.connect.rest;

import static io.sharesink.connect.rest.FakeConnect.FILE_SINK;
import static io.sharesink.connect.rest.FakeConnect.FILE_SOURCE;
import static io.sharesink.connect.rest.FakeConnect.call;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.ShareSinkConnector;
import io.sharesink.connect.rest.FakeConnect.Answer;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.distributed.RebalanceNeededException;
import org.apache.kafka.connect.runtime.rest.ConnectRestConfigurable;
import org.apache.kafka.connect.runtime.rest.ConnectRestExtensionContextImpl;
import org.apache.kafka.connect.sink.SinkConnector;
import org.glassfish.jersey.server.ApplicationHandler;
import org.glassfish.jersey.server.ResourceConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * PATCH /connectors/{c}/config stays Connect's own PATCH (applied by the leader to what it stores):
 * only the keys of the switch are translated, so a concurrent DELETE or PUT is never undone by an
 * older read.
 */
class PatchJerseyTest {

  static final String SHARE_SINK = ShareSinkConnector.class.getName();
  static final String FLAG = "consumer.override.group.protocol";
  static final String OTHER_SINK = OtherSink.class.getName();

  /** A second sink class the extension's class loader can load. */
  public static class OtherSink extends SinkConnector {
    @Override
    public void start(Map<String, String> props) {}

    @Override
    public Class<? extends Task> taskClass() {
      return null;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
      return List.of();
    }

    @Override
    public void stop() {}

    @Override
    public ConfigDef config() {
      return new ConfigDef();
    }

    @Override
    public String version() {
      return "0";
    }
  }

  private FakeConnect connect;
  private ShareModeRestExtension extension;
  private ApplicationHandler app;

  @BeforeEach
  void start() {
    connect = new FakeConnect();
    ResourceConfig resources = connect.mainResources();
    extension = new ShareModeRestExtension();
    extension.configure(Map.of("bootstrap.servers", "127.0.0.1:9092"));
    extension.register(
        new ConnectRestExtensionContextImpl(
            new ConnectRestConfigurable(resources), connect.clusterState));
    app = new ApplicationHandler(resources);
  }

  @AfterEach
  void stop() throws Exception {
    extension.close();
  }

  static Map<String, String> operator() {
    Map<String, String> config = new LinkedHashMap<>();
    config.put("name", "orders");
    config.put("connector.class", FILE_SINK);
    config.put(FLAG, "share");
    config.put("topics", "orders");
    config.put("tasks.max", "2");
    return config;
  }

  private void put(Map<String, String> config) throws Exception {
    Answer put = call(app, "PUT", "/connectors/orders/config", config);
    assertTrue(put.status() < 300, put.text());
    connect.seen.clear();
    connect.clusterState.configCalls.set(0);
  }

  private Answer patch(Map<String, String> patch) throws Exception {
    return call(app, "PATCH", "/connectors/orders/config", patch);
  }

  private static Map<String, String> nulls(String... keys) {
    Map<String, String> patch = new HashMap<>();
    for (String key : keys) {
      patch.put(key, null);
    }
    return patch;
  }

  @Test
  void aPatchWithoutTheSwitchsKeysPassesThroughUnreadAndUnchanged() throws Exception {
    put(operator());
    Map<String, String> patch = Map.of("tasks.max", "5", "file", "/tmp/out");
    Answer answer = patch(patch);

    assertEquals(200, answer.status(), answer.text());
    assertEquals(List.of("PATCH config"), connect.seen, "sent on as Connect's own PATCH");
    assertEquals(List.of(patch), connect.patches);
    assertEquals(0, connect.clusterState.configCalls.get(), "the current config was read");
    Map<String, String> expected = operator();
    expected.put("tasks.max", "5");
    expected.put("file", "/tmp/out");
    assertEquals(FakeConnect.JSON.valueToTree(expected), answer.body().get("config"));
    assertEquals("sink", answer.body().get("type").asText());
    assertEquals(SHARE_SINK, connect.stored.get("orders").get("connector.class"));
  }

  @Test
  void aPatchRacingADeleteNeverRecreatesTheConnector() throws Exception {
    // The connector is deleted (on another worker) after any read of its config, or, for a patch
    // that reads nothing, before the write reaches Connect.
    Runnable delete = () -> connect.stored.remove("orders");
    for (Map<String, String> patch :
        List.of(Map.of("tasks.max", "5"), Map.of(FLAG, "classic"), nulls(FLAG))) {
      put(operator());
      connect.clusterState.afterRead = delete;
      connect.beforeWrite = delete;
      Answer answer = patch(patch);
      connect.clusterState.afterRead = () -> {};
      connect.beforeWrite = () -> {};
      assertEquals(404, answer.status(), patch + " answered " + answer.text());
      assertFalse(connect.stored.containsKey("orders"), patch + " re-created the connector");
    }
  }

  @Test
  void aPatchRacingAPutNeverWritesBackTheOlderKeys() throws Exception {
    put(operator());
    // Another worker stores a PUT (new topics and tasks.max) right after our read.
    connect.clusterState.afterRead =
        () -> {
          Map<String, String> newer = new LinkedHashMap<>(connect.stored.get("orders"));
          newer.put("topics", "orders-v2");
          newer.put("tasks.max", "9");
          connect.stored.put("orders", newer);
        };
    Answer answer = patch(nulls(FLAG));
    assertEquals(200, answer.status(), answer.text());

    Map<String, String> stored = connect.stored.get("orders");
    assertEquals("orders-v2", stored.get("topics"));
    assertEquals("9", stored.get("tasks.max"));
    assertEquals(FILE_SINK, stored.get("connector.class"), "the patch moved it back to classic");
    assertFalse(stored.keySet().stream().anyMatch(k -> k.startsWith("share.")), stored.toString());
    assertFalse(stored.containsKey(FLAG));
  }

  @Test
  void theSwitchsKeysAreTranslatedIntoANativePatchOfWhatDiffers() throws Exception {
    Map<String, String> classic = operator();
    classic.remove(FLAG);
    put(classic);

    // Classic -> share.
    Answer on = patch(Map.of(FLAG, "share"));
    assertEquals(200, on.status(), on.text());
    assertEquals(
        Map.of(
            "connector.class",
            SHARE_SINK,
            "share.sink.connector.class",
            FILE_SINK,
            "share.internal.form",
            "flag",
            "share.internal.form.flag",
            "share"),
        connect.patches.get(0));
    assertEquals(FakeConnect.JSON.valueToTree(operator()), on.body().get("config"));
    assertEquals("sink", on.body().get("type").asText());

    // Another sink class while in share mode.
    Answer other = patch(Map.of("connector.class", OTHER_SINK, "tasks.max", "3"));
    assertEquals(200, other.status(), other.text());
    Map<String, String> otherPatch = connect.patches.get(1);
    assertEquals("3", otherPatch.get("tasks.max"));
    assertEquals(OTHER_SINK, otherPatch.get("share.sink.connector.class"));
    assertFalse(otherPatch.containsKey("connector.class"), otherPatch.toString());
    assertEquals(SHARE_SINK, connect.stored.get("orders").get("connector.class"));

    // Share -> classic: the flag removed.
    Answer off = patch(Map.of("connector.class", FILE_SINK, FLAG, "classic"));
    assertEquals(200, off.status(), off.text());
    Map<String, String> stored = connect.stored.get("orders");
    assertEquals(FILE_SINK, stored.get("connector.class"));
    assertEquals("classic", stored.get(FLAG));
    assertFalse(stored.keySet().stream().anyMatch(k -> k.startsWith("share.")), stored.toString());
    assertEquals("3", stored.get("tasks.max"));
  }

  @Test
  void aTranslatedPatchForwardedToTheLeaderIsLeftAsItIs() throws Exception {
    Map<String, String> classic = operator();
    classic.remove(FLAG);
    put(classic);
    Map<String, String> forwarded =
        Map.of(
            "connector.class",
            SHARE_SINK,
            "share.sink.connector.class",
            FILE_SINK,
            "share.internal.form",
            "flag",
            "share.internal.form.flag",
            "share");
    Answer answer = call(app, "PATCH", "/connectors/orders/config?forward=true", forwarded);
    assertEquals(200, answer.status(), answer.text());
    assertEquals(List.of(forwarded), connect.patches);
    // The leader reads its own stored config to check it (once), and sends the patch on as it is.
    assertEquals(1, connect.clusterState.configCalls.get());

    // Back to classic, as a follower translates it: the bookkeeping removed.
    Map<String, String> off =
        new HashMap<>(nulls("share.internal.form", "share.internal.form.flag"));
    off.put("connector.class", FILE_SINK);
    off.put("share.sink.connector.class", null);
    off.put(FLAG, "classic");
    Answer classicAgain = call(app, "PATCH", "/connectors/orders/config?forward=false", off);
    assertEquals(200, classicAgain.status(), classicAgain.text());
    assertEquals(FILE_SINK, connect.stored.get("orders").get("connector.class"));
  }

  @Test
  void anOperatorsForwardParameterDoesNotSkipTheGuard() throws Exception {
    // Before: any patch with ?forward= was taken for a follower's translation and sent on, so
    // an operator could store share.internal.form.flag=classic on a connector that runs on a
    // share group, which the API then showed as a classic one.
    put(operator());
    for (String query : List.of("?forward=false", "?forward=true", "?forward=")) {
      Answer answer =
          call(
              app,
              "PATCH",
              "/connectors/orders/config" + query,
              Map.of("share.internal.form.flag", "classic"));
      assertEquals(400, answer.status(), query + " " + answer.text());
      assertTrue(
          answer.body().get("message").asText().contains("share.internal.form.flag"),
          answer.text());
      Answer unknownForm =
          call(
              app,
              "PATCH",
              "/connectors/orders/config" + query,
              Map.of("share.internal.form", "anything"));
      assertEquals(400, unknownForm.status(), query + " " + unknownForm.text());
    }
    assertEquals(List.of(), connect.patches);
    assertEquals("share", connect.stored.get("orders").get("share.internal.form.flag"));
  }

  @Test
  void aHandWrittenStoredFormMustKeepItsBookkeepingTrue() throws Exception {
    Map<String, String> stored = new LinkedHashMap<>();
    stored.put("name", "orders");
    stored.put("connector.class", SHARE_SINK);
    stored.put("share.sink.connector.class", FILE_SINK);
    stored.put("topics", "orders");
    stored.put("share.internal.form", "flag");
    stored.put("share.internal.form.flag", "classic");
    Answer lying = call(app, "PUT", "/connectors/orders/config", stored);
    assertEquals(400, lying.status(), lying.text());
    assertFalse(connect.stored.containsKey("orders"));
    stored.put("share.internal.form.flag", "share");
    Answer truthful = call(app, "PUT", "/connectors/orders/config", stored);
    assertTrue(truthful.status() < 300, truthful.text());
  }

  @Test
  void anOperatorsPatchOfSharesinksBookkeepingIsRefused() throws Exception {
    put(operator());
    Answer answer = patch(Map.of("share.internal.form.flag", "classic"));
    assertEquals(400, answer.status(), answer.text());
    assertTrue(answer.body().get("message").asText().contains("share.internal."), answer.text());
    assertEquals(List.of(), connect.seen);
  }

  @Test
  void aPatchOfTheSwitchTheHerderCannotReadForIsNotSentOn() throws Exception {
    put(operator());
    // Connect's cluster state during a rebalance, and after its timeout.
    connect.clusterState.failure =
        new ConnectException(
            "Failed to retrieve configuration for connector 'orders'",
            new ExecutionException(new RebalanceNeededException("a rebalance is expected")));
    Answer rebalancing = patch(Map.of(FLAG, "classic"));
    assertEquals(409, rebalancing.status(), rebalancing.text());
    connect.clusterState.failure =
        new ConnectException(
            "Failed to retrieve configuration for connector 'orders'", new TimeoutException());
    Answer timedOut = patch(Map.of(FLAG, "classic"));
    assertEquals(500, timedOut.status(), timedOut.text());
    assertTrue(
        timedOut
            .body()
            .get("message")
            .asText()
            .startsWith(
                "sharesink could not read the configuration of connector orders to apply a patch"
                    + " of consumer.override.group.protocol or connector.class: Failed to"
                    + " retrieve configuration for connector 'orders'"),
        timedOut.text());
    // A forwarded patch of the bookkeeping is checked against the stored config: not sent on
    // either.
    Answer forwarded =
        call(
            app,
            "PATCH",
            "/connectors/orders/config?forward=true",
            Map.of("share.internal.form.flag", "share"));
    assertEquals(500, forwarded.status(), forwarded.text());
    assertTrue(
        forwarded
            .body()
            .get("message")
            .asText()
            .startsWith(
                "sharesink could not read the configuration of connector orders to check a"
                    + " forwarded patch of its share.internal.* keys: Failed to retrieve"
                    + " configuration for connector 'orders'"),
        forwarded.text());
    assertEquals(List.of(), connect.seen);
    assertEquals(SHARE_SINK, connect.stored.get("orders").get("connector.class"));
  }

  @Test
  void theFlagOnASourceOrOnAMissingConnectorIsRefusedBeforeConnectSeesIt() throws Exception {
    connect.stored.put("orders", new HashMap<>(Map.of("connector.class", FILE_SOURCE)));
    Answer source = patch(Map.of(FLAG, "share"));
    assertEquals(400, source.status(), source.text());
    assertTrue(source.body().get("message").asText().contains("not a sink connector"));

    connect.stored.clear();
    Answer missing = patch(Map.of(FLAG, "share"));
    assertEquals(404, missing.status(), missing.text());
    assertEquals(404, missing.body().get("error_code").asInt());
    assertFalse(connect.stored.containsKey("orders"));
  }
}

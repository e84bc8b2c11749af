package io.sharesink.connect.rest;

import static io.sharesink.connect.rest.FakeConnect.FILE_SINK;
import static io.sharesink.connect.rest.FakeConnect.FILE_SOURCE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.sharesink.connect.ShareSinkConnector;
import io.sharesink.connect.rest.FakeConnect.Answer;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.runtime.rest.ConnectRestConfigurable;
import org.apache.kafka.connect.runtime.rest.ConnectRestExtensionContextImpl;
import org.apache.kafka.connect.runtime.rest.resources.ConnectorPluginsResource;
import org.glassfish.jersey.server.ApplicationHandler;
import org.glassfish.jersey.server.ResourceConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The extension registered as the worker registers it (Connect's own {@code
 * ConnectRestConfigurable} and context), run in Jersey in memory in front of {@link FakeConnect}.
 * It shows that the rewrites (bodies, and the validation answered by the matched resource) reach
 * the resources and that the answers are serialised in the operator's form.
 */
class ShareModeRestExtensionJerseyTest {

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

  private Answer call(String method, String path, Object body) throws Exception {
    return FakeConnect.call(app, method, path, body);
  }

  private static Map<String, String> flagged(String name) {
    Map<String, String> config = new LinkedHashMap<>();
    config.put("name", name);
    config.put("connector.class", FILE_SINK);
    config.put("consumer.override.group.protocol", "share");
    config.put("topics", "orders");
    config.put("tasks.max", "2");
    return config;
  }

  private static JsonNode json(Object value) {
    return FakeConnect.JSON.valueToTree(value);
  }

  @Test
  void connectsValidationResourceHasTheMethodTheExtensionCalls() throws Exception {
    Method method =
        ConnectorPluginsResource.class.getMethod(PluginValidation.METHOD, String.class, Map.class);
    assertTrue(java.lang.reflect.Modifier.isPublic(method.getModifiers()));
  }

  @Test
  void createStoresTheShareSinkFormAndAnswersWithTheOperatorsForm() throws Exception {
    Map<String, String> operator = flagged("orders");
    Answer created = call("POST", "/connectors", Map.of("name", "orders", "config", operator));

    assertEquals(201, created.status());
    assertEquals(json(operator), created.body().get("config"));
    assertEquals("sink", created.body().get("type").asText());
    Map<String, String> stored = connect.stored.get("orders");
    assertEquals(ShareSinkConnector.class.getName(), stored.get("connector.class"));
    assertEquals(FILE_SINK, stored.get("share.sink.connector.class"));
    assertEquals("flag", stored.get("share.internal.form"));
    assertFalse(stored.containsKey("consumer.override.group.protocol"));

    assertEquals(json(operator), call("GET", "/connectors/orders/config", null).body());
    assertEquals(
        "sink", call("GET", "/connectors/orders/status", null).body().get("type").asText());
  }

  @Test
  void putThenGetGivesTheSameMapAndAForwardedStoredFormIsKept() throws Exception {
    Map<String, String> operator = flagged("orders");
    Answer put = call("PUT", "/connectors/orders/config", operator);
    assertEquals(201, put.status(), "created");
    assertEquals(json(operator), put.body().get("config"));
    assertEquals(json(operator), call("GET", "/connectors/orders/config", null).body());

    // What a follower forwards to the leader: the stored form, stored as it is.
    Map<String, String> stored = new LinkedHashMap<>(connect.stored.get("orders"));
    call("PUT", "/connectors/orders/config", stored);
    assertEquals(stored, connect.stored.get("orders"));
    assertEquals(json(operator), call("GET", "/connectors/orders/config", null).body());
  }

  @Test
  void patchIsAppliedToTheOperatorsFormAndCanMoveBackToClassic() throws Exception {
    call("PUT", "/connectors/orders/config", flagged("orders"));
    connect.seen.clear();

    Answer patched = call("PATCH", "/connectors/orders/config", Map.of("tasks.max", "5"));
    assertEquals(200, patched.status());
    assertEquals(List.of("PATCH config"), connect.seen, "a PATCH stays Connect's own");
    assertEquals("5", connect.stored.get("orders").get("tasks.max"));
    assertEquals(
        ShareSinkConnector.class.getName(), connect.stored.get("orders").get("connector.class"));
    assertEquals("5", patched.body().get("config").get("tasks.max").asText());
    assertEquals(FILE_SINK, patched.body().get("config").get("connector.class").asText());

    Map<String, String> dropFlag = new HashMap<>();
    dropFlag.put("consumer.override.group.protocol", null);
    call("PATCH", "/connectors/orders/config", dropFlag);
    Map<String, String> classic = flagged("orders");
    classic.remove("consumer.override.group.protocol");
    classic.put("tasks.max", "5");
    assertEquals(classic, connect.stored.get("orders"));
    assertEquals(
        "sink", call("GET", "/connectors/orders/status", null).body().get("type").asText());
  }

  @Test
  void aStatusOfTypeUnknownOfAShareConnectorIsShownAsSink() throws Exception {
    Map<String, String> operator = flagged("orders");
    operator.put("fake.type", "unknown");
    call("PUT", "/connectors/orders/config", operator);
    assertEquals(
        "sink", call("GET", "/connectors/orders/status", null).body().get("type").asText());
    assertEquals(
        "sink",
        call("GET", "/connectors?expand=status", null)
            .body()
            .get("orders")
            .get("status")
            .get("type")
            .asText());
  }

  @Test
  void aConnectorWithoutTheFlagIsLeftAlone() throws Exception {
    Map<String, String> classic = flagged("plain");
    classic.remove("consumer.override.group.protocol");
    call("PUT", "/connectors/plain/config", classic);
    assertEquals(classic, connect.stored.get("plain"));

    // The explicit form is stored, and shown, as written (type source: it is one).
    Map<String, String> explicit = new LinkedHashMap<>(classic);
    explicit.put("name", "explicit");
    explicit.put("connector.class", ShareSinkConnector.class.getName());
    explicit.put("share.sink.connector.class", FILE_SINK);
    Answer put = call("PUT", "/connectors/explicit/config", explicit);
    assertEquals(explicit, connect.stored.get("explicit"));
    assertEquals(json(explicit), put.body().get("config"));
    assertEquals("source", put.body().get("type").asText());
  }

  @Test
  void validateIsRoutedToShareSinkConnectorAndAnsweredOnTheOperatorsKeys() throws Exception {
    Map<String, String> operator = flagged("orders");
    operator.remove("connector.class");
    // The worker's loader resolves aliases too; the test's class loader knows class names only.
    Answer result = call("PUT", "/connector-plugins/" + FILE_SINK + "/config/validate", operator);

    assertEquals(200, result.status());
    assertEquals(List.of("validate " + ShareSinkConnector.class.getName()), connect.seen);
    assertEquals(FILE_SINK, result.body().get("name").asText());
    assertEquals(1, result.body().get("error_count").asInt());
    List<String> names = new ArrayList<>();
    JsonNode connectorClass = null;
    for (JsonNode config : result.body().get("configs")) {
      names.add(config.get("value").get("name").asText());
      if (config.get("value").get("name").asText().equals("connector.class")) {
        connectorClass = config.get("value");
      }
    }
    assertEquals(List.of("connector.class", "topics"), names);
    assertEquals(FILE_SINK, connectorClass.get("value").asText());
    assertEquals("sharesink says no to " + FILE_SINK, connectorClass.get("errors").get(0).asText());
  }

  @Test
  void theFlagOnASourceConnectorIsA400ThatSaysWhy() throws Exception {
    Map<String, String> source = flagged("src");
    source.put("connector.class", FILE_SOURCE);
    Answer refused = call("PUT", "/connectors/src/config", source);
    assertEquals(400, refused.status());
    assertTrue(refused.body().get("message").asText().contains("not a sink connector"));
    assertFalse(connect.stored.containsKey("src"));
  }
}

package io.sharesink.connect.rest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.jakarta.rs.json.JacksonJsonProvider;
import io.sharesink.connect.ShareSinkConnector;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.PATCH;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.health.ConnectClusterState;
import org.apache.kafka.connect.health.ConnectorHealth;
import org.apache.kafka.connect.runtime.AbstractHerder;
import org.apache.kafka.connect.runtime.rest.ConnectRestConfigurable;
import org.apache.kafka.connect.runtime.rest.ConnectRestExtensionContextImpl;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfos;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorInfo;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorType;
import org.apache.kafka.connect.runtime.rest.entities.CreateConnectorRequest;
import org.apache.kafka.connect.util.ConnectorTaskId;
import org.glassfish.jersey.internal.MapPropertiesDelegate;
import org.glassfish.jersey.server.ApplicationHandler;
import org.glassfish.jersey.server.ContainerRequest;
import org.glassfish.jersey.server.ContainerResponse;
import org.glassfish.jersey.server.ResourceConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The extension registered as the worker registers it (Connect's own {@code
 * ConnectRestConfigurable} and context), run in Jersey in memory in front of a stand-in for
 * Connect's resources that answers with Connect's own entity classes and keeps what it was asked to
 * store. It shows that the pre-matching rewrites (body, method, path) reach the resources and that
 * the answers are serialised in the operator's form.
 */
class ShareModeRestExtensionJerseyTest {

  static final String FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector";
  static final String FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector";

  /** What the stand-in herder stores, by connector name. */
  static final Map<String, Map<String, String>> STORED = new ConcurrentHashMap<>();

  /** Every request the resources saw: method, path, plugin. */
  static final List<String> SEEN = new ArrayList<>();

  private ShareModeRestExtension extension;
  private ApplicationHandler app;

  /** A stand-in for Connect's ConnectorsResource and ConnectorPluginsResource. */
  @Path("/")
  @Produces(MediaType.APPLICATION_JSON)
  @Consumes(MediaType.APPLICATION_JSON)
  public static class FakeConnect {

    @POST
    @Path("connectors")
    public Response create(CreateConnectorRequest request) {
      SEEN.add("POST connectors");
      Map<String, String> config = new LinkedHashMap<>(request.config());
      config.put("name", request.name());
      STORED.put(request.name(), config);
      return Response.status(201).entity(info(request.name())).build();
    }

    @PUT
    @Path("connectors/{c}/config")
    public ConnectorInfo put(@PathParam("c") String connector, Map<String, String> config) {
      SEEN.add("PUT config");
      Map<String, String> stored = new LinkedHashMap<>(config);
      stored.put("name", connector);
      STORED.put(connector, stored);
      return info(connector);
    }

    @PATCH
    @Path("connectors/{c}/config")
    public ConnectorInfo patch(@PathParam("c") String connector, Map<String, String> patch) {
      SEEN.add("PATCH config");
      return info(connector);
    }

    @GET
    @Path("connectors/{c}/config")
    public Map<String, String> config(@PathParam("c") String connector) {
      return STORED.get(connector);
    }

    @GET
    @Path("connectors/{c}/status")
    public ConnectorStateInfo status(@PathParam("c") String connector) {
      return new ConnectorStateInfo(
          connector,
          new ConnectorStateInfo.ConnectorState("RUNNING", "w:8083", null, null),
          List.of(),
          type(STORED.get(connector)));
    }

    @PUT
    @Path("connector-plugins/{p}/config/validate")
    public ConfigInfos validate(@PathParam("p") String plugin, Map<String, String> config) {
      SEEN.add("validate " + plugin);
      ConfigDef def =
          new ConfigDef()
              .define("connector.class", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "")
              .define(
                  "share.sink.connector.class",
                  ConfigDef.Type.STRING,
                  ConfigDef.Importance.HIGH,
                  "")
              .define("topics", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "");
      List<ConfigValue> values = new ArrayList<>();
      for (String key : List.of("connector.class", "share.sink.connector.class", "topics")) {
        ConfigValue value = new ConfigValue(key, config.get(key), List.of(), new ArrayList<>());
        if (key.equals("share.sink.connector.class")) {
          value.addErrorMessage("sharesink says no to " + config.get(key));
        }
        values.add(value);
      }
      values.add(
          new ConfigValue(
              "share.internal.form",
              config.get("share.internal.form"),
              List.of(),
              new ArrayList<>()));
      return AbstractHerder.generateResult(
          plugin, def.configKeys(), values, List.of("Common", "share"));
    }

    private static ConnectorInfo info(String connector) {
      Map<String, String> stored = STORED.get(connector);
      return new ConnectorInfo(
          connector, stored, List.of(new ConnectorTaskId(connector, 0)), type(stored));
    }

    private static ConnectorType type(Map<String, String> stored) {
      return ShareSinkConnector.class.getName().equals(stored.get("connector.class"))
          ? ConnectorType.SOURCE
          : ConnectorType.SINK;
    }
  }

  /** Connect's cluster state as the extension sees it: the stand-in herder's stored configs. */
  static final class FakeClusterState implements ConnectClusterState {
    @Override
    public Collection<String> connectors() {
      return STORED.keySet();
    }

    @Override
    public ConnectorHealth connectorHealth(String connName) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Map<String, String> connectorConfig(String connName) {
      Map<String, String> stored = STORED.get(connName);
      if (stored == null) {
        throw new org.apache.kafka.connect.errors.NotFoundException(connName);
      }
      return new HashMap<>(stored);
    }
  }

  record Answer(int status, JsonNode body) {}

  @BeforeEach
  void start() {
    STORED.clear();
    SEEN.clear();
    ResourceConfig resources = new ResourceConfig();
    resources.register(new JacksonJsonProvider());
    resources.register(new FakeConnect());
    extension = new ShareModeRestExtension();
    extension.configure(Map.of("bootstrap.servers", "127.0.0.1:9092"));
    extension.register(
        new ConnectRestExtensionContextImpl(
            new ConnectRestConfigurable(resources), new FakeClusterState()));
    app = new ApplicationHandler(resources);
  }

  @AfterEach
  void stop() throws Exception {
    extension.close();
  }

  private Answer call(String method, String path, Object body) throws Exception {
    ContainerRequest request =
        new ContainerRequest(
            URI.create("http://127.0.0.1:8083/"),
            URI.create("http://127.0.0.1:8083" + path),
            method,
            null,
            new MapPropertiesDelegate(),
            app.getConfiguration());
    request.getHeaders().putSingle("Accept", MediaType.APPLICATION_JSON);
    if (body != null) {
      byte[] bytes = ShareModeFilter.MAPPER.writeValueAsBytes(body);
      request.getHeaders().putSingle("Content-Type", MediaType.APPLICATION_JSON);
      request.getHeaders().putSingle("Content-Length", Integer.toString(bytes.length));
      request.setEntityStream(new ByteArrayInputStream(bytes));
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ContainerResponse response = app.apply(request, out).get();
    String text = out.toString(StandardCharsets.UTF_8);
    return new Answer(
        response.getStatus(), text.isEmpty() ? null : ShareModeFilter.MAPPER.readTree(text));
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
    return ShareModeFilter.MAPPER.valueToTree(value);
  }

  @Test
  void createStoresTheShareSinkFormAndAnswersWithTheOperatorsForm() throws Exception {
    Map<String, String> operator = flagged("orders");
    Answer created = call("POST", "/connectors", Map.of("name", "orders", "config", operator));

    assertEquals(201, created.status());
    assertEquals(json(operator), created.body().get("config"));
    assertEquals("sink", created.body().get("type").asText());
    Map<String, String> stored = STORED.get("orders");
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
    assertEquals(200, put.status());
    assertEquals(json(operator), put.body().get("config"));
    assertEquals(json(operator), call("GET", "/connectors/orders/config", null).body());

    // What a follower forwards to the leader: the stored form, stored as it is.
    Map<String, String> stored = new LinkedHashMap<>(STORED.get("orders"));
    call("PUT", "/connectors/orders/config", stored);
    assertEquals(stored, STORED.get("orders"));
    assertEquals(json(operator), call("GET", "/connectors/orders/config", null).body());
  }

  @Test
  void patchIsAppliedToTheOperatorsFormAndCanMoveBackToClassic() throws Exception {
    call("PUT", "/connectors/orders/config", flagged("orders"));
    SEEN.clear();

    Answer patched = call("PATCH", "/connectors/orders/config", Map.of("tasks.max", "5"));
    assertEquals(200, patched.status());
    assertEquals(List.of("PUT config"), SEEN, "a PATCH is sent on as the PUT of the result");
    assertEquals("5", STORED.get("orders").get("tasks.max"));
    assertEquals(ShareSinkConnector.class.getName(), STORED.get("orders").get("connector.class"));
    assertEquals("5", patched.body().get("config").get("tasks.max").asText());
    assertEquals(FILE_SINK, patched.body().get("config").get("connector.class").asText());

    Map<String, String> dropFlag = new HashMap<>();
    dropFlag.put("consumer.override.group.protocol", null);
    call("PATCH", "/connectors/orders/config", dropFlag);
    Map<String, String> classic = flagged("orders");
    classic.remove("consumer.override.group.protocol");
    classic.put("tasks.max", "5");
    assertEquals(classic, STORED.get("orders"));
    assertEquals(
        "sink", call("GET", "/connectors/orders/status", null).body().get("type").asText());
  }

  @Test
  void aConnectorWithoutTheFlagIsLeftAlone() throws Exception {
    Map<String, String> classic = flagged("plain");
    classic.remove("consumer.override.group.protocol");
    call("PUT", "/connectors/plain/config", classic);
    assertEquals(classic, STORED.get("plain"));

    // The explicit form is stored, and shown, as written (type source: it is one).
    Map<String, String> explicit = new LinkedHashMap<>(classic);
    explicit.put("name", "explicit");
    explicit.put("connector.class", ShareSinkConnector.class.getName());
    explicit.put("share.sink.connector.class", FILE_SINK);
    Answer put = call("PUT", "/connectors/explicit/config", explicit);
    assertEquals(explicit, STORED.get("explicit"));
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
    assertEquals(List.of("validate " + ShareSinkConnector.class.getName()), SEEN);
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
    assertFalse(STORED.containsKey("src"));
  }
}

package io.sharesink.connect.rest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.jakarta.rs.json.JacksonJsonProvider;
import io.sharesink.connect.ShareModeForm;
import io.sharesink.connect.ShareSinkConnector;
import jakarta.ws.rs.BadRequestException;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.PATCH;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.errors.AlreadyExistsException;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.NotFoundException;
import org.apache.kafka.connect.health.ConnectClusterState;
import org.apache.kafka.connect.health.ConnectorHealth;
import org.apache.kafka.connect.runtime.AbstractHerder;
import org.apache.kafka.connect.runtime.rest.entities.ConfigInfos;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorInfo;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorStateInfo;
import org.apache.kafka.connect.runtime.rest.entities.ConnectorType;
import org.apache.kafka.connect.runtime.rest.entities.CreateConnectorRequest;
import org.apache.kafka.connect.runtime.rest.entities.TaskInfo;
import org.apache.kafka.connect.runtime.rest.errors.ConnectExceptionMapper;
import org.apache.kafka.connect.runtime.rest.errors.ConnectRestException;
import org.apache.kafka.connect.util.ConnectorTaskId;
import org.glassfish.jersey.internal.MapPropertiesDelegate;
import org.glassfish.jersey.server.ApplicationHandler;
import org.glassfish.jersey.server.ContainerRequest;
import org.glassfish.jersey.server.ContainerResponse;
import org.glassfish.jersey.server.ResourceConfig;

/**
 * A stand-in for one Connect worker's REST layer, run by Jersey in memory: resources at Connect's
 * paths answering with Connect's own entity classes, Connect's exception mapper, and an in-memory
 * herder ({@link #stored}). Requests are sent through {@link #call}.
 */
final class FakeConnect {

  static final String FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector";
  static final String FILE_SINK_TASK = "org.apache.kafka.connect.file.FileStreamSinkTask";
  static final String FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector";
  static final ObjectMapper JSON = new ObjectMapper();

  /** What the herder stores, by connector name. */
  final Map<String, Map<String, String>> stored = new ConcurrentHashMap<>();

  /** Every request the resources ran: "METHOD what", and the bodies of PATCH requests. */
  final List<String> seen = new CopyOnWriteArrayList<>();

  final List<Map<String, String>> patches = new CopyOnWriteArrayList<>();

  final ClusterState clusterState = new ClusterState();

  /** Runs when a PUT or PATCH reaches its resource, after every filter: a concurrent request. */
  volatile Runnable beforeWrite = () -> {};

  /**
   * A follower's PATCH: the leader answers, and its extension has already shown the stored form as
   * the operator's, so the answer carries no stored form.
   */
  volatile boolean patchAnsweredByLeader;

  record Answer(int status, JsonNode body, String text) {}

  /** The main listener's resources, as Connect registers them (before any extension). */
  ResourceConfig mainResources() {
    ResourceConfig resources = new ResourceConfig();
    resources.register(new JacksonJsonProvider());
    resources.register(ConnectExceptionMapper.class);
    resources.register(new Connectors(this));
    resources.register(new ConnectorPlugins(this));
    return resources;
  }

  /** The admin listener's resources ({@code admin.listeners} set): only /admin/loggers. */
  ResourceConfig adminResources() {
    ResourceConfig resources = new ResourceConfig();
    resources.register(new JacksonJsonProvider());
    resources.register(ConnectExceptionMapper.class);
    resources.register(new Loggers(this));
    return resources;
  }

  static String basic(String user, String password) {
    return "Basic "
        + Base64.getEncoder()
            .encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
  }

  static byte[] bytes(Object body) {
    try {
      return JSON.writeValueAsBytes(body);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  static Answer call(ApplicationHandler app, String method, String path, Object body)
      throws Exception {
    return call(app, method, path, body == null ? null : bytes(body), Map.of());
  }

  /**
   * One request. {@code headers} may name Authorization; a Content-Length given there replaces the
   * body's real length, and a null one leaves the header out.
   */
  static Answer call(
      ApplicationHandler app, String method, String path, byte[] body, Map<String, String> headers)
      throws Exception {
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
      request.getHeaders().putSingle("Content-Type", MediaType.APPLICATION_JSON);
      request.getHeaders().putSingle("Content-Length", Integer.toString(body.length));
      request.setEntityStream(new ByteArrayInputStream(body));
    }
    headers.forEach(
        (name, value) -> {
          if (value == null) {
            request.getHeaders().remove(name);
          } else {
            request.getHeaders().putSingle(name, value);
          }
        });
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ContainerResponse response = app.apply(request, out).get(30, TimeUnit.SECONDS);
    String text = out.toString(StandardCharsets.UTF_8);
    JsonNode json = null;
    try {
      json = text.isEmpty() ? null : JSON.readTree(text);
    } catch (Exception e) {
      // not JSON (Connect's 401 is plain text)
    }
    return new Answer(response.getStatus(), json, text);
  }

  static ConnectorType type(Map<String, String> config) {
    if ("unknown".equals(config.get("fake.type"))) {
      return ConnectorType.UNKNOWN; // Connect's answer while its snapshot lacks the config
    }
    String connectorClass = config.get("connector.class");
    return ShareSinkConnector.class.getName().equals(connectorClass)
            || FILE_SOURCE.equals(connectorClass)
        ? ConnectorType.SOURCE
        : ConnectorType.SINK;
  }

  private ConnectorInfo info(String connector) {
    Map<String, String> config = stored.get(connector);
    if (config == null) {
      throw new NotFoundException("Connector " + connector + " not found");
    }
    return new ConnectorInfo(
        connector, config, List.of(new ConnectorTaskId(connector, 0)), type(config));
  }

  private ConnectorStateInfo status(String connector) {
    Map<String, String> config = stored.get(connector);
    if (config == null) {
      throw new NotFoundException("No status found for connector " + connector);
    }
    return new ConnectorStateInfo(
        connector,
        new ConnectorStateInfo.ConnectorState("RUNNING", "w:8083", null, null),
        List.of(),
        type(config));
  }

  /**
   * A task config as a ShareSinkConnector hands it out: the legacy task's keys, every share.* key
   * of the connector, and the legacy task class.
   */
  static Map<String, String> shareTaskConfig(Map<String, String> connector) {
    Map<String, String> task = new HashMap<>();
    connector.forEach(
        (key, value) -> {
          if (key.startsWith("share.")) {
            task.put(key, value);
          }
        });
    task.put("topics", connector.get("topics"));
    task.put("task.class", "io.sharesink.connect.ShareSinkTask");
    task.put("share.sink.task.class", FILE_SINK_TASK);
    return task;
  }

  /** Connect's ConnectorsResource paths. */
  @Path("/connectors")
  @Produces(MediaType.APPLICATION_JSON)
  @Consumes(MediaType.APPLICATION_JSON)
  public static class Connectors {
    private final FakeConnect fake;

    Connectors(FakeConnect fake) {
      this.fake = fake;
    }

    @GET
    public Response list(@Context UriInfo uri) {
      List<String> expand = uri.getQueryParameters().get("expand");
      if (expand == null) {
        return Response.ok(new ArrayList<>(fake.stored.keySet())).build();
      }
      Map<String, Map<String, Object>> out = new HashMap<>();
      for (String connector : fake.stored.keySet()) {
        Map<String, Object> expansions = new HashMap<>();
        if (expand.contains("status")) {
          expansions.put("status", fake.status(connector));
        }
        if (expand.contains("info")) {
          expansions.put("info", fake.info(connector));
        }
        out.put(connector, expansions);
      }
      return Response.ok(out).build();
    }

    @POST
    public Response create(CreateConnectorRequest request) {
      fake.seen.add("POST connectors");
      if (fake.stored.containsKey(request.name())) {
        throw new AlreadyExistsException("Connector " + request.name() + " already exists");
      }
      Map<String, String> config = new LinkedHashMap<>(request.config());
      config.put("name", request.name());
      fake.stored.put(request.name(), config);
      return Response.status(201).entity(fake.info(request.name())).build();
    }

    @GET
    @Path("/{c}")
    public ConnectorInfo get(@PathParam("c") String connector) {
      return fake.info(connector);
    }

    @DELETE
    @Path("/{c}")
    public Response delete(@PathParam("c") String connector) {
      fake.seen.add("DELETE connector");
      if (fake.stored.remove(connector) == null) {
        throw new NotFoundException("Connector " + connector + " not found");
      }
      return Response.noContent().build();
    }

    @GET
    @Path("/{c}/config")
    public Map<String, String> config(@PathParam("c") String connector) {
      return fake.info(connector).config();
    }

    @PUT
    @Path("/{c}/config")
    public Response put(
        @PathParam("c") String connector,
        @QueryParam("forward") Boolean forward,
        Map<String, String> config) {
      fake.seen.add("PUT config");
      fake.beforeWrite.run();
      Map<String, String> next = new LinkedHashMap<>(config);
      next.put("name", connector);
      boolean created = fake.stored.put(connector, next) == null;
      return Response.status(created ? 201 : 200).entity(fake.info(connector)).build();
    }

    /** Connect's PATCH: the leader applies the patch to what it stores; 404 when there is none. */
    @PATCH
    @Path("/{c}/config")
    public ConnectorInfo patch(
        @PathParam("c") String connector,
        @QueryParam("forward") Boolean forward,
        Map<String, String> patch) {
      fake.seen.add("PATCH config");
      fake.patches.add(patch);
      fake.beforeWrite.run();
      Map<String, String> current = fake.stored.get(connector);
      if (current == null) {
        throw new NotFoundException("Connector " + connector + " not found");
      }
      Map<String, String> next = new LinkedHashMap<>(current);
      patch.forEach(
          (key, value) -> {
            if (value == null) {
              next.remove(key);
            } else {
              next.put(key, value);
            }
          });
      fake.stored.put(connector, next);
      ConnectorInfo info = fake.info(connector);
      if (fake.patchAnsweredByLeader && ShareModeForm.isStoredForm(next)) {
        return new ConnectorInfo(
            connector, ShareModeForm.toOperator(next), info.tasks(), ConnectorType.SINK);
      }
      return info;
    }

    @GET
    @Path("/{c}/status")
    public ConnectorStateInfo getStatus(@PathParam("c") String connector) {
      return fake.status(connector);
    }

    @POST
    @Path("/{c}/restart")
    public Response restart(@PathParam("c") String connector) {
      return Response.accepted().entity(fake.status(connector)).build();
    }

    @GET
    @Path("/{c}/tasks")
    public List<TaskInfo> tasks(@PathParam("c") String connector) {
      Map<String, String> config = fake.info(connector).config();
      Map<String, String> task =
          ShareSinkConnector.class.getName().equals(config.get("connector.class"))
              ? shareTaskConfig(config)
              : Map.of("topics", config.get("topics"), "task.class", FILE_SINK_TASK);
      return List.of(new TaskInfo(new ConnectorTaskId(connector, 0), task));
    }
  }

  /** Connect's ConnectorPluginsResource: {@code validateConfigs} has its name and parameters. */
  @Path("/connector-plugins")
  @Produces(MediaType.APPLICATION_JSON)
  @Consumes(MediaType.APPLICATION_JSON)
  public static class ConnectorPlugins {
    private final FakeConnect fake;

    ConnectorPlugins(FakeConnect fake) {
      this.fake = fake;
    }

    /** {@code fake.throw} in the config makes it fail as Connect's can. */
    @PUT
    @Path("/{pluginName}/config/validate")
    public ConfigInfos validateConfigs(
        final @PathParam("pluginName") String pluginName, final Map<String, String> config)
        throws Throwable {
      fake.seen.add("validate " + pluginName);
      String included = config.get("connector.class");
      if (included != null && !withoutSuffix(included).endsWith(withoutSuffix(pluginName))) {
        throw new BadRequestException(
            "Included connector type " + included + " does not match request type " + pluginName);
      }
      switch (config.getOrDefault("fake.throw", "")) {
        case "bad-request" -> throw new BadRequestException("bad request from validateConfigs");
        case "rest-409" -> throw new ConnectRestException(409, "conflict from validateConfigs");
        case "execution" ->
            throw new ExecutionException(new ConnectException("the herder failed to validate"));
        default -> {}
      }
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
        if (key.equals("share.sink.connector.class") && config.get(key) != null) {
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
          pluginName, def.configKeys(), values, List.of("Common", "share"));
    }
  }

  private static String withoutSuffix(String name) {
    return name.endsWith("Connector") && name.length() > "Connector".length()
        ? name.substring(0, name.length() - "Connector".length())
        : name;
  }

  /** Connect's LoggingResource, served on the admin listener. */
  @Path("/admin/loggers")
  @Produces(MediaType.APPLICATION_JSON)
  @Consumes(MediaType.APPLICATION_JSON)
  public static class Loggers {
    private final FakeConnect fake;

    Loggers(FakeConnect fake) {
      this.fake = fake;
    }

    @GET
    public Map<String, Map<String, String>> list() {
      return Map.of("root", Map.of("level", "INFO"));
    }

    @PUT
    @Path("/{logger}")
    public Map<String, Object> set(@PathParam("logger") String logger, Map<String, String> body) {
      fake.seen.add("PUT admin/loggers " + logger);
      return Map.of("logger", logger, "size", body.toString().length());
    }
  }

  /**
   * Connect's cluster state as the extension sees it: the herder's stored configs, through a call
   * that {@link #block} can hold as a busy herder does (Connect waits up to the rebalance timeout).
   */
  final class ClusterState implements ConnectClusterState {
    final AtomicInteger configCalls = new AtomicInteger();
    volatile CountDownLatch block = new CountDownLatch(0);

    /** Thrown by every read while set, as Connect's cluster state throws. */
    volatile RuntimeException failure;

    /** Runs after a read, before it returns: what another worker does meanwhile. */
    volatile Runnable afterRead = () -> {};

    void block() {
      block = new CountDownLatch(1);
    }

    void release() {
      block.countDown();
    }

    @Override
    public Collection<String> connectors() {
      return stored.keySet();
    }

    @Override
    public ConnectorHealth connectorHealth(String connName) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Map<String, String> connectorConfig(String connName) {
      configCalls.incrementAndGet();
      if (failure != null) {
        throw failure;
      }
      try {
        if (!block.await(60, TimeUnit.SECONDS)) {
          throw new ConnectException("Failed to retrieve configuration for " + connName);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new ConnectException("interrupted", e);
      }
      Map<String, String> config = stored.get(connName);
      if (config == null) {
        throw new ConnectException(
            "Failed to retrieve configuration for connector '" + connName + "'",
            new ExecutionException(new NotFoundException("Connector " + connName + " not found")));
      }
      Map<String, String> copy = new HashMap<>(config);
      afterRead.run();
      return copy;
    }
  }
}

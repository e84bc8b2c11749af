package io.sharesink.connect.rest;

import static io.sharesink.connect.rest.FakeConnect.FILE_SINK;
import static io.sharesink.connect.rest.FakeConnect.FILE_SOURCE;
import static io.sharesink.connect.rest.FakeConnect.basic;
import static io.sharesink.connect.rest.FakeConnect.bytes;
import static io.sharesink.connect.rest.FakeConnect.call;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.ShareSinkConnector;
import io.sharesink.connect.rest.FakeConnect.Answer;
import jakarta.annotation.Priority;
import jakarta.ws.rs.Priorities;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.AppConfigurationEntry.LoginModuleControlFlag;
import javax.security.auth.login.Configuration;
import org.apache.kafka.connect.rest.basic.auth.extension.JaasBasicAuthFilter;
import org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule;
import org.apache.kafka.connect.runtime.rest.ConnectRestConfigurable;
import org.apache.kafka.connect.runtime.rest.ConnectRestExtensionContextImpl;
import org.glassfish.jersey.server.ApplicationHandler;
import org.glassfish.jersey.server.ResourceConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The extension next to Connect's own basic authentication (its real {@code JaasBasicAuthFilter}
 * and {@code PropertyFileLoginModule}), registered as the worker registers REST extensions: nothing
 * of sharesink's may answer, read a body or ask the herder before the caller is authenticated; the
 * bodies it reads are bounded; it is correct when the worker registers it twice.
 */
class RestGuardsJerseyTest {

  static final int MIB = 1 << 20;

  @TempDir static Path credentialsDir;
  static Configuration jaas;

  static final String USER = basic("connect", "connect-secret");
  static final Map<String, String> AUTHORIZED = Map.of("Authorization", USER);
  static final Map<String, String> WRONG_PASSWORD =
      Map.of("Authorization", basic("connect", "nope"));

  /** Kafka 4.4's filter: the same class, its priority declared with jakarta's annotation. */
  @Priority(Priorities.AUTHENTICATION)
  static final class KafkaFourFourBasicAuth extends JaasBasicAuthFilter {
    KafkaFourFourBasicAuth(Configuration configuration) {
      super(configuration);
    }
  }

  /** Which basic authentication runs, and in which order the worker registered the extensions. */
  enum Auth {
    /** Kafka 4.4: AUTHENTICATION priority. */
    KAFKA_4_4_REGISTERED_AFTER_SHARESINK,
    /**
     * Kafka 4.2 and 4.3 (the 4.3.1 jar itself): its javax.annotation.Priority is not Jersey 3's, so
     * the filter runs at the default priority, USER; sharesink listed first in
     * rest.extension.classes.
     */
    KAFKA_4_3_REGISTERED_AFTER_SHARESINK,
    KAFKA_4_3_REGISTERED_BEFORE_SHARESINK;

    JaasBasicAuthFilter filter() {
      return this == KAFKA_4_4_REGISTERED_AFTER_SHARESINK
          ? new KafkaFourFourBasicAuth(jaas)
          : new JaasBasicAuthFilter(jaas);
    }

    boolean before() {
      return this == KAFKA_4_3_REGISTERED_BEFORE_SHARESINK;
    }
  }

  private FakeConnect connect;
  private ShareModeRestExtension extension;

  @BeforeAll
  static void credentials() throws Exception {
    Path file = credentialsDir.resolve("credentials.properties");
    Files.writeString(file, "connect=connect-secret\n");
    AppConfigurationEntry entry =
        new AppConfigurationEntry(
            PropertyFileLoginModule.class.getName(),
            LoginModuleControlFlag.REQUIRED,
            Map.of("file", file.toString()));
    jaas =
        new Configuration() {
          @Override
          public AppConfigurationEntry[] getAppConfigurationEntry(String name) {
            return name.equals("KafkaConnect") ? new AppConfigurationEntry[] {entry} : null;
          }
        };
  }

  @BeforeEach
  void start() {
    connect = new FakeConnect();
    extension = new ShareModeRestExtension();
    extension.configure(Map.of("bootstrap.servers", "127.0.0.1:9092"));
  }

  @AfterEach
  void stop() throws Exception {
    connect.clusterState.release();
    extension.close();
  }

  /** Registers the extensions on one listener's resources, as RestServer does. */
  private void register(ResourceConfig resources, Auth auth) {
    ConnectRestExtensionContextImpl context =
        new ConnectRestExtensionContextImpl(
            new ConnectRestConfigurable(resources), connect.clusterState);
    if (auth != null && auth.before()) {
      context.configurable().register(auth.filter());
    }
    extension.register(context);
    if (auth != null && !auth.before()) {
      context.configurable().register(auth.filter());
    }
  }

  private ApplicationHandler worker(Auth auth) {
    ResourceConfig resources = connect.mainResources();
    register(resources, auth);
    return new ApplicationHandler(resources);
  }

  static Map<String, String> flagged(String name, String connectorClass) {
    Map<String, String> config = new LinkedHashMap<>();
    config.put("name", name);
    config.put("connector.class", connectorClass);
    config.put("consumer.override.group.protocol", "share");
    config.put("topics", "orders");
    config.put("tasks.max", "2");
    return config;
  }

  /** A create request of exactly {@code size} bytes of JSON. */
  static byte[] createBody(String name, int size) {
    Map<String, String> config = flagged(name, FILE_SINK);
    config.put("padding", "");
    int without = bytes(Map.of("name", name, "config", config)).length;
    config.put("padding", "x".repeat(size - without));
    byte[] body = bytes(Map.of("name", name, "config", config));
    assertEquals(size, body.length);
    return body;
  }

  @ParameterizedTest
  @EnumSource(Auth.class)
  void withoutCredentialsEveryEndpointWeTouchIs401AndNothingOfOursRan(Auth auth) throws Exception {
    connect.stored.put("src", new HashMap<>(Map.of("name", "src", "connector.class", FILE_SOURCE)));
    connect.stored.put(
        "shared",
        new HashMap<>(
            Map.of(
                "name",
                "shared",
                "connector.class",
                ShareSinkConnector.class.getName(),
                "share.sink.connector.class",
                FILE_SINK,
                "share.internal.form",
                "flag",
                "topics",
                "orders")));
    ApplicationHandler app = worker(auth);
    Map<String, String> source = flagged("src", FILE_SOURCE);
    Map<String, String> sourceValidate = new LinkedHashMap<>(source);
    sourceValidate.remove("connector.class");
    Map<String, String> patch = Map.of("consumer.override.group.protocol", "share");
    byte[] huge = createBody("huge", 2 * MIB);

    record Request(String method, String path, byte[] body) {}
    List<Request> requests =
        List.of(
            new Request("POST", "/connectors", bytes(Map.of("name", "src", "config", source))),
            new Request("POST", "/connectors", huge),
            new Request("PUT", "/connectors/src/config", bytes(source)),
            new Request("PATCH", "/connectors/src/config", bytes(patch)),
            new Request(
                "PUT",
                "/connector-plugins/" + FILE_SOURCE + "/config/validate",
                bytes(sourceValidate)),
            new Request("GET", "/connectors/shared/status", null),
            new Request("GET", "/connectors/shared/tasks", null),
            new Request("GET", "/connectors/shared/config", null),
            new Request("GET", "/connectors?expand=status", null),
            new Request("GET", "/connectors?expand=info&expand=status", null));
    for (Map<String, String> headers : List.of(Map.<String, String>of(), WRONG_PASSWORD)) {
      for (Request r : requests) {
        Answer answer = call(app, r.method(), r.path(), r.body(), headers);
        assertEquals(
            401, answer.status(), r.method() + " " + r.path() + " answered " + answer.text());
        assertFalse(answer.text().contains("sink"), answer.text());
      }
    }
    assertEquals(List.of(), connect.seen);
    assertEquals(0, connect.clusterState.configCalls.get(), "the herder was asked");
  }

  /**
   * Jersey orders filters of equal priority differently from one application to the next (seen: the
   * same two filters registered the same way ran in either order across builds), so sharing USER
   * with Kafka 4.3's filter would let sharesink run first on some worker starts.
   */
  @Test
  void afterKafkaFourThreesFilterInEveryBuildOfTheApplication() throws Exception {
    Map<String, String> source = flagged("src", FILE_SOURCE);
    for (int build = 0; build < 8; build++) {
      for (Auth auth :
          List.of(
              Auth.KAFKA_4_3_REGISTERED_AFTER_SHARESINK,
              Auth.KAFKA_4_3_REGISTERED_BEFORE_SHARESINK)) {
        ApplicationHandler app = worker(auth);
        Answer answer = call(app, "PUT", "/connectors/src/config", bytes(source), Map.of());
        assertEquals(401, answer.status(), "build " + build + " " + auth + ": " + answer.text());
      }
      extension.close();
    }
  }

  @ParameterizedTest
  @EnumSource(Auth.class)
  void withCredentialsTheFlagFormWorksAsBefore(Auth auth) throws Exception {
    ApplicationHandler app = worker(auth);
    Map<String, String> operator = flagged("orders", FILE_SINK);
    Answer created =
        call(
            app,
            "POST",
            "/connectors",
            bytes(Map.of("name", "orders", "config", operator)),
            AUTHORIZED);
    assertEquals(201, created.status(), created.text());
    assertEquals(FakeConnect.JSON.valueToTree(operator), created.body().get("config"));
    assertEquals(
        ShareSinkConnector.class.getName(), connect.stored.get("orders").get("connector.class"));

    Answer patched =
        call(
            app, "PATCH", "/connectors/orders/config", bytes(Map.of("tasks.max", "5")), AUTHORIZED);
    assertEquals(200, patched.status(), patched.text());
    assertEquals("5", patched.body().get("config").get("tasks.max").asText());
    assertEquals(FILE_SINK, patched.body().get("config").get("connector.class").asText());

    Answer status = call(app, "GET", "/connectors/orders/status", null, AUTHORIZED);
    assertEquals("sink", status.body().get("type").asText());

    Map<String, String> validate = new LinkedHashMap<>(operator);
    validate.remove("connector.class");
    Answer validated =
        call(
            app,
            "PUT",
            "/connector-plugins/" + FILE_SINK + "/config/validate",
            bytes(validate),
            AUTHORIZED);
    assertEquals(200, validated.status(), validated.text());
    assertEquals(FILE_SINK, validated.body().get("name").asText());
    assertTrue(connect.seen.contains("validate " + ShareSinkConnector.class.getName()));

    Answer refused =
        call(app, "PUT", "/connectors/src/config", bytes(flagged("src", FILE_SOURCE)), AUTHORIZED);
    assertEquals(400, refused.status());
    assertTrue(refused.body().get("message").asText().contains("not a sink connector"));
  }

  @Test
  void bodiesAreBoundedToOneMebibyteCountedAsRead() throws Exception {
    ApplicationHandler app = worker(Auth.KAFKA_4_4_REGISTERED_AFTER_SHARESINK);
    byte[] exact = createBody("exact", MIB);
    Answer atTheBound = call(app, "POST", "/connectors", exact, AUTHORIZED);
    assertEquals(201, atTheBound.status(), "1 MiB is allowed");

    byte[] over = createBody("over", MIB + 1);
    Map<String, String> noLength = new HashMap<>(AUTHORIZED);
    noLength.put("Content-Length", null);
    Map<String, String> lyingLength = new HashMap<>(AUTHORIZED);
    lyingLength.put("Content-Length", "100");
    Map<String, String> badLength = new HashMap<>(AUTHORIZED);
    badLength.put("Content-Length", "a lot");
    for (Map<String, String> headers : List.of(AUTHORIZED, noLength, lyingLength, badLength)) {
      for (String[] endpoint :
          List.of(
              new String[] {"POST", "/connectors"},
              new String[] {"PUT", "/connectors/over/config"},
              new String[] {"PATCH", "/connectors/exact/config"},
              new String[] {"PUT", "/connector-plugins/" + FILE_SINK + "/config/validate"})) {
        Answer answer = call(app, endpoint[0], endpoint[1], over, headers);
        assertEquals(413, answer.status(), String.join(" ", endpoint) + " " + headers);
        assertEquals(413, answer.body().get("error_code").asInt(), answer.text());
        assertTrue(answer.body().get("message").asText().contains("1048576"), answer.text());
      }
    }
    assertFalse(connect.stored.containsKey("over"));
    assertEquals(List.of("POST connectors"), connect.seen);
  }

  @Test
  void registeredTwiceWithAnAdminListenerTheMainWorksAndAdminIsUntouched() throws Exception {
    ResourceConfig main = connect.mainResources();
    ResourceConfig admin = connect.adminResources();
    // RestServer.registerExtensionsWithConfig: every extension, once per listener.
    register(main, Auth.KAFKA_4_4_REGISTERED_AFTER_SHARESINK);
    register(admin, Auth.KAFKA_4_4_REGISTERED_AFTER_SHARESINK);
    ApplicationHandler mainApp = new ApplicationHandler(main);
    ApplicationHandler adminApp = new ApplicationHandler(admin);

    Map<String, String> operator = flagged("orders", FILE_SINK);
    Answer created =
        call(
            mainApp,
            "POST",
            "/connectors",
            bytes(Map.of("name", "orders", "config", operator)),
            AUTHORIZED);
    assertEquals(201, created.status(), created.text());
    assertEquals(FakeConnect.JSON.valueToTree(operator), created.body().get("config"));
    assertEquals(
        "sink",
        call(mainApp, "GET", "/connectors/orders/status", null, AUTHORIZED)
            .body()
            .get("type")
            .asText());
    Answer patched =
        call(
            mainApp,
            "PATCH",
            "/connectors/orders/config",
            bytes(Map.of("consumer.override.group.protocol", (Object) "classic")),
            AUTHORIZED);
    assertEquals(200, patched.status(), patched.text());
    assertEquals(FILE_SINK, connect.stored.get("orders").get("connector.class"));

    // The admin listener: a body over our bound, on a path of its own, reaches its resource.
    Map<String, String> level = Map.of("level", "DEBUG", "padding", "x".repeat(2 * MIB));
    Answer set = call(adminApp, "PUT", "/admin/loggers/io.sharesink", bytes(level), AUTHORIZED);
    assertEquals(200, set.status(), set.text());
    assertTrue(connect.seen.contains("PUT admin/loggers io.sharesink"));
    assertEquals(
        FakeConnect.JSON.readTree("{\"root\":{\"level\":\"INFO\"}}"),
        call(adminApp, "GET", "/admin/loggers", null, AUTHORIZED).body());
    // A connectors path on the admin listener stays Connect's 404.
    Answer notThere =
        call(
            adminApp,
            "POST",
            "/connectors",
            bytes(Map.of("name", "x", "config", flagged("x", FILE_SOURCE))),
            AUTHORIZED);
    assertEquals(404, notThere.status(), notThere.text());
    assertEquals(401, call(adminApp, "GET", "/admin/loggers", null, Map.of()).status());

    // One reader of stored configs for both registrations, stopped by close.
    connect.stored.put("unseen", new HashMap<>(Map.of("connector.class", FILE_SOURCE)));
    call(mainApp, "GET", "/connectors/unseen/status", null, AUTHORIZED);
    assertTrue(readerThreads() <= 1, "readers: " + readerThreads());
    extension.close();
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (readerThreads() > 0 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertEquals(0, readerThreads());
  }

  private static long readerThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("sharesink-rest-") && t.isAlive())
        .count();
  }

  @Test
  void validationFailuresAnswerAsConnectWouldForItsOwnCall() throws Exception {
    ApplicationHandler app = worker(Auth.KAFKA_4_4_REGISTERED_AFTER_SHARESINK);
    for (String failure : List.of("bad-request", "rest-409", "execution")) {
      Map<String, String> classic = new LinkedHashMap<>();
      classic.put("connector.class", FILE_SINK);
      classic.put("topics", "orders");
      classic.put("fake.throw", failure);
      Map<String, String> flag = new LinkedHashMap<>(classic);
      flag.put("consumer.override.group.protocol", "share");
      String path = "/connector-plugins/" + FILE_SINK + "/config/validate";
      Answer theirs = call(app, "PUT", path, bytes(classic), AUTHORIZED);
      Answer ours = call(app, "PUT", path, bytes(flag), AUTHORIZED);
      assertNotEquals(200, theirs.status(), failure);
      assertEquals(theirs.status(), ours.status(), failure + ": " + ours.text());
      assertEquals(theirs.body(), ours.body(), failure);
    }
    assertTrue(connect.seen.contains("validate " + ShareSinkConnector.class.getName()));
  }

  @Test
  void aValidationOfAnotherClassThanThePathsIsConnectsToRefuse() throws Exception {
    ApplicationHandler app = worker(Auth.KAFKA_4_4_REGISTERED_AFTER_SHARESINK);
    Map<String, String> flag = flagged("orders", FILE_SINK);
    Answer answer =
        call(
            app,
            "PUT",
            "/connector-plugins/FileStreamSource/config/validate",
            bytes(flag),
            AUTHORIZED);
    assertEquals(400, answer.status(), answer.text());
    assertTrue(
        answer.body().get("message").asText().contains("does not match request type"),
        answer.text());
    assertEquals(List.of("validate FileStreamSource"), connect.seen);
  }
}

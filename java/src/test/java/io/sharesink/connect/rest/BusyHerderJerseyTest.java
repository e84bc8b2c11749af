package io.sharesink.connect.rest;

import static io.sharesink.connect.rest.FakeConnect.FILE_SINK;
import static io.sharesink.connect.rest.FakeConnect.call;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.ShareModeForm;
import io.sharesink.connect.ShareSinkConnector;
import io.sharesink.connect.rest.FakeConnect.Answer;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.connect.runtime.rest.ConnectRestConfigurable;
import org.apache.kafka.connect.runtime.rest.ConnectRestExtensionContextImpl;
import org.glassfish.jersey.server.ApplicationHandler;
import org.glassfish.jersey.server.ResourceConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * /status, /tasks and ?expand=status while the herder does not answer (a rebalance holds its
 * thread; Connect's cluster state then waits up to the rebalance timeout): the answers do not wait
 * for it.
 */
class BusyHerderJerseyTest {

  /** Far below the herder's wait (60 s in the stand-in), far above the extension's own. */
  static final Duration PROMPT = Duration.ofSeconds(5);

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
    connect.clusterState.release();
    extension.close();
  }

  static Map<String, String> flagged(String name) {
    Map<String, String> config = new LinkedHashMap<>();
    config.put("name", name);
    config.put("connector.class", FILE_SINK);
    config.put("consumer.override.group.protocol", "share");
    config.put("topics", "orders");
    return config;
  }

  private Answer get(String path) {
    return assertTimeoutPreemptively(PROMPT, () -> call(app, "GET", path, null), path);
  }

  @Test
  void statusTasksAndExpandDoNotWaitForABusyHerder() throws Exception {
    // Created through this worker: what the filters saw is enough.
    Answer created =
        call(app, "POST", "/connectors", Map.of("name", "seen", "config", flagged("seen")));
    assertEquals(201, created.status(), created.text());
    // Created through another worker: this one never saw it.
    Map<String, String> stored =
        ShareModeForm.toStored(
            flagged("unseen"), false, new PluginClassResolver(getClass().getClassLoader()));
    assertEquals(ShareSinkConnector.class.getName(), stored.get("connector.class"));
    connect.stored.put("unseen", stored);

    connect.clusterState.block();
    assertEquals("sink", get("/connectors/seen/status").body().get("type").asText());
    Answer tasks = get("/connectors/unseen/tasks");
    assertEquals(
        FakeConnect.JSON.valueToTree(
            ShareModeForm.taskToOperator(FakeConnect.shareTaskConfig(stored))),
        tasks.body().get(0).get("config"));
    // Unknown, and the herder busy: shown as Connect shows it (the worst case, documented).
    assertEquals("source", get("/connectors/unseen/status").body().get("type").asText());
    Answer expanded = get("/connectors?expand=status");
    assertEquals("sink", expanded.body().get("seen").get("status").get("type").asText());

    // Once the herder answers, the unseen one is known too.
    connect.clusterState.release();
    long deadline = System.nanoTime() + PROMPT.toNanos();
    String type;
    do {
      Thread.sleep(20);
      type = get("/connectors/unseen/status").body().get("type").asText();
    } while (!type.equals("sink") && System.nanoTime() < deadline);
    assertEquals("sink", type);
    assertEquals(
        "sink",
        get("/connectors?expand=status").body().get("unseen").get("status").get("type").asText());
    assertTrue(connect.clusterState.configCalls.get() <= 2, "asked the herder again and again");
  }

  /**
   * A PATCH through a follower that leaves the switch alone (say tasks.max): the leader's answer is
   * in the operator's form already, and the form did not change, so the status that follows, while
   * the herder is busy reconfiguring the tasks, still shows type sink.
   */
  @Test
  void aPatchThatLeavesTheSwitchAloneKeepsWhatThisWorkerKnew() throws Exception {
    Answer created =
        call(app, "POST", "/connectors", Map.of("name", "seen", "config", flagged("seen")));
    assertEquals(201, created.status(), created.text());
    connect.patchAnsweredByLeader = true;
    Answer patched = call(app, "PATCH", "/connectors/seen/config", Map.of("tasks.max", "2"));
    assertEquals(200, patched.status(), patched.text());
    assertEquals("2", connect.stored.get("seen").get("tasks.max"));

    connect.clusterState.block();
    assertEquals("sink", get("/connectors/seen/status").body().get("type").asText());
  }
}

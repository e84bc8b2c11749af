package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.ShareSinkTaskLifecycleTest.IdleEngine;
import io.sharesink.connect.sink.KeeperTimer;
import io.sharesink.engine.ShareConsumerEngine;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.file.FileStreamSinkConnector;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkTask;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the starter opens and starts, with an engine opener of the test's: the request each start
 * opens its engine with, and what a start that fails leaves open. The legacy sink is Kafka's
 * FileStreamSink (its task's start creates the file, which shows it started); the clock is a {@link
 * MockTime}.
 */
class ShareMemberStarterTest {

  @TempDir Path dir;

  private final MockTime clock = new MockTime(0, 1_700_000_000_000L, 0);

  /** The requests the starter opened engines with, and the engines it got. */
  private final List<EngineRequest> requests = new ArrayList<>();

  private final List<IdleEngine> engines = new ArrayList<>();

  /** How the test's opener answers a request; by default with a new idle engine. */
  private Function<EngineRequest, ShareConsumerEngine> opener =
      request -> {
        IdleEngine engine = new IdleEngine(clock);
        engines.add(engine);
        return engine;
      };

  private final TaskWiring wiring =
      new TaskWiring(
          clock,
          KeeperTimer.none(),
          () -> WorkerDefaults.NONE,
          request -> {
            requests.add(request);
            return opener.apply(request);
          },
          (pattern, config, clients, worker, time, taskName) -> {
            throw new AssertionError("the starter follows no pattern");
          });

  /** A legacy connector whose taskClass() names no sink task. */
  public static class NoTaskConnector extends SinkConnector {
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
    public org.apache.kafka.common.config.ConfigDef config() {
      return new org.apache.kafka.common.config.ConfigDef();
    }

    @Override
    public String version() {
      return "test";
    }
  }

  /** A legacy connector whose task's start throws an Error. */
  public static class BrokenTaskConnector extends NoTaskConnector {
    @Override
    public Class<? extends Task> taskClass() {
      return BrokenTask.class;
    }
  }

  /** Misses a class of its plugin when it starts. */
  public static class BrokenTask extends SinkTask {
    @Override
    public String version() {
      return "test";
    }

    @Override
    public void start(Map<String, String> props) {
      throw new NoClassDefFoundError("com/example/Pool");
    }

    @Override
    public void put(java.util.Collection<org.apache.kafka.connect.sink.SinkRecord> records) {}

    @Override
    public void stop() {}
  }

  private Path out() {
    return dir.resolve("out.txt");
  }

  private Map<String, String> props() {
    Map<String, String> props = new HashMap<>(ShareSinkConfigTest.validConfig());
    props.put("file", out().toString());
    props.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
    props.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
    props.put(ShareSinkConfig.ENGINE_CONFIG, ShareSinkConfig.ENGINE_JAVA);
    return props;
  }

  private ShareMemberStarter starter(
      Map<String, String> props, Class<? extends SinkConnector> legacy) {
    StartChecks checked = new StartChecks(legacy, ConnectorClients.of(WorkerDefaults.NONE, props));
    return new ShareMemberStarter(
        new ShareSinkConfig(props),
        props,
        checked,
        WorkerDefaults.NONE,
        "files",
        1,
        "files-1",
        "connect-share-files",
        () -> null,
        wiring);
  }

  @Test
  void aStartOpensOneEngineForTheTopicsGivenAndStartsTheLegacyTaskOnIt() {
    Map<String, String> props = props();
    props.put("share.task.stuck.timeout.ms", "120000");
    props.put("consumer.override.max.poll.records", "42");
    ShareMemberStarter starter = starter(props, FileStreamSinkConnector.class);
    assertTrue(requests.isEmpty(), "nothing opened before a start");

    // The topics given, not the configured "orders, refunds": topics.regex starts on its match.
    ShareMember member = starter.start(List.of("orders-1"));

    assertEquals(1, requests.size());
    EngineRequest request = requests.get(0);
    assertEquals(ShareSinkConfig.ENGINE_JAVA, request.kind());
    assertEquals("connect-share-files", request.groupId());
    assertEquals("connector-share-files-1", request.clientId());
    assertEquals(List.of("orders-1"), request.topics());
    assertEquals(120_000, request.stuckTimeoutMs());
    assertEquals("files-1", request.taskName());
    assertEquals("localhost:9092", request.clientSettings().get("bootstrap.servers"));
    assertEquals("42", request.clientSettings().get("max.poll.records"));
    assertTrue(out().toFile().exists(), "the legacy task started");

    member.stop();
    assertEquals(1, engines.get(0).closes.get());
  }

  @Test
  void theMembersCyclesRunOnTheWiringsClock() {
    ShareMember member = starter(props(), FileStreamSinkConnector.class).start(List.of("orders"));
    long before = clock.milliseconds();
    member.runCycle(Duration.ofMillis(700));
    assertEquals(700, clock.milliseconds() - before);
    member.stop();
  }

  @Test
  void anEngineThatCannotOpenFailsTheStartBeforeTheLegacyTaskStarts() {
    ConnectException refused = new ConnectException("files-1: no broker answered");
    opener =
        request -> {
          throw refused;
        };
    ShareMemberStarter starter = starter(props(), FileStreamSinkConnector.class);
    ConnectException e =
        assertThrows(ConnectException.class, () -> starter.start(List.of("orders")));
    assertSame(refused, e);
    assertFalse(out().toFile().exists(), "no legacy task started without an engine");
  }

  @Test
  void aDriverThatCannotStartClosesTheEngineItOpened() {
    Map<String, String> props = props();
    props.put("value.converter", "com.example.NoSuchConverter");
    ShareMemberStarter starter = starter(props, FileStreamSinkConnector.class);
    assertThrows(RuntimeException.class, () -> starter.start(List.of("orders")));
    assertEquals(1, engines.size());
    assertEquals(1, engines.get(0).closes.get());
  }

  @Test
  void anErrorFromTheLegacyTasksStartClosesTheEngineToo() {
    ShareMemberStarter starter = starter(props(), BrokenTaskConnector.class);
    // The builder turns exceptions of the legacy task's start into a ConnectException; an Error
    // (a class missing from the legacy plugin) reaches the starter as it is.
    assertThrows(NoClassDefFoundError.class, () -> starter.start(List.of("orders")));
    assertEquals(1, engines.get(0).closes.get());
  }

  @Test
  void aConnectorWhoseTaskClassIsNoSinkTaskFailsBeforeAnythingOpens() {
    ConnectException e =
        assertThrows(ConnectException.class, () -> starter(props(), NoTaskConnector.class));
    assertEquals(
        NoTaskConnector.class.getName() + ".taskClass() returned null, not a SinkTask",
        e.getMessage());
    assertTrue(requests.isEmpty());
  }
}

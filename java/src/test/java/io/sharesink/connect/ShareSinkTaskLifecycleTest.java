package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.KeeperTimer;
import io.sharesink.connect.sink.SteppingMockTime;
import io.sharesink.connect.sink.StopBudget;
import io.sharesink.engine.AckResult;
import io.sharesink.engine.Acknowledgements;
import io.sharesink.engine.EngineMetrics;
import io.sharesink.engine.ShareBatch;
import io.sharesink.engine.ShareConsumerEngine;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The task's lifecycle with a scripted engine: stop on the task thread after the loop (Kafka 4.x),
 * stop from another thread during a blocked poll (older runtimes), a start that fails after the
 * engine exists. In each case the engine is closed exactly once and nothing runs after it.
 *
 * <p>The task runs on a mock clock (given to its constructor, handed to the driver and the
 * engines): nothing sleeps, and durations are asserted on that clock. A test whose waits happen on
 * the test thread alone uses a {@link SteppingMockTime}, which passes a wait's time as it waits;
 * one that stops the task from another thread uses a plain {@link MockTime}, whose waits last until
 * the condition holds or the test moves the clock past the deadline.
 */
class ShareSinkTaskLifecycleTest {

  @TempDir Path dir;

  /** Never has records; a poll passes its timeout on the clock, or ends at a wakeup. */
  static class IdleEngine implements ShareConsumerEngine {
    final MockTime clock;
    final AtomicInteger closes = new AtomicInteger();
    final AtomicInteger pollsAfterClose = new AtomicInteger();
    final CountDownLatch polling = new CountDownLatch(1);

    /** Opened by the first wakeup. */
    final CountDownLatch wake = new CountDownLatch(1);

    /** When set, a poll waits for a wakeup however long its timeout (the test stops the task). */
    volatile boolean untilWoken;

    /** When set, a poll ignores wakeups and blocks until this opens (a stuck cycle). */
    volatile CountDownLatch stuck;

    IdleEngine(MockTime clock) {
      this.clock = clock;
    }

    @Override
    public ShareBatch poll(Duration timeout) {
      if (closes.get() > 0) {
        pollsAfterClose.incrementAndGet();
      }
      polling.countDown();
      CountDownLatch hold = stuck;
      if (hold != null) {
        await(hold);
      } else if (untilWoken) {
        await(wake);
      } else if (wake.getCount() > 0) {
        clock.sleep(timeout.toMillis());
      }
      return EMPTY;
    }

    static void await(CountDownLatch latch) {
      try {
        latch.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    @Override
    public void acknowledge(Acknowledgements acks) {}

    @Override
    public List<AckResult> acknowledgeSync(Acknowledgements acks, Duration timeout) {
      return List.of();
    }

    @Override
    public void subscribe(Collection<String> topics) {
      subscriptions.add(List.copyOf(topics));
    }

    final List<List<String>> subscriptions = new java.util.concurrent.CopyOnWriteArrayList<>();

    @Override
    public void wakeup() {
      wake.countDown();
    }

    @Override
    public EngineMetrics metrics() {
      return new EngineMetrics(
          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }

    @Override
    public void close() {
      closes.incrementAndGet();
    }
  }

  private static final ShareBatch EMPTY =
      new ShareBatch() {
        @Override
        public int size() {
          return 0;
        }

        @Override
        public String topic(int i) {
          throw new IndexOutOfBoundsException();
        }

        @Override
        public int partition(int i) {
          throw new IndexOutOfBoundsException();
        }

        @Override
        public long offset(int i) {
          throw new IndexOutOfBoundsException();
        }

        @Override
        public long timestamp(int i) {
          throw new IndexOutOfBoundsException();
        }

        @Override
        public int timestampType(int i) {
          throw new IndexOutOfBoundsException();
        }

        @Override
        public int deliveryCount(int i) {
          throw new IndexOutOfBoundsException();
        }

        @Override
        public long lockDeadlineMs(int i) {
          throw new IndexOutOfBoundsException();
        }

        @Override
        public byte[] key(int i) {
          throw new IndexOutOfBoundsException();
        }

        @Override
        public byte[] value(int i) {
          throw new IndexOutOfBoundsException();
        }

        @Override
        public List<ShareBatch.Header> headers(int i) {
          throw new IndexOutOfBoundsException();
        }
      };

  /**
   * A broker that went down after one record was delivered: synchronous acknowledgements get no
   * answer until their timeout, and the close takes the engine's whole close budget.
   */
  static final class OutageEngine extends IdleEngine {
    private boolean delivered;
    volatile long syncWaitMs = -1;

    OutageEngine(MockTime clock) {
      super(clock);
    }

    @Override
    public ShareBatch poll(Duration timeout) {
      if (!delivered) {
        delivered = true;
        return oneRecord(clock, "orders", 0, 7);
      }
      return super.poll(Duration.ofMillis(10));
    }

    @Override
    public List<AckResult> acknowledgeSync(Acknowledgements acks, Duration timeout) {
      syncWaitMs = timeout.toMillis();
      clock.sleep(timeout.toMillis());
      return List.of();
    }

    /** The close takes the whole budget the task gives the engine's close. */
    @Override
    public void close() {
      clock.sleep(StopBudget.ENGINE_CLOSE.toMillis());
      super.close();
    }
  }

  static ShareBatch oneRecord(MockTime clock, String topic, int partition, long offset) {
    long lockDeadline = clock.milliseconds() + 60_000;
    return new ShareBatch() {
      @Override
      public int size() {
        return 1;
      }

      @Override
      public String topic(int i) {
        return topic;
      }

      @Override
      public int partition(int i) {
        return partition;
      }

      @Override
      public long offset(int i) {
        return offset;
      }

      @Override
      public long timestamp(int i) {
        return 1_700_000_000_000L;
      }

      @Override
      public int timestampType(int i) {
        return 0;
      }

      @Override
      public int deliveryCount(int i) {
        return 1;
      }

      @Override
      public long lockDeadlineMs(int i) {
        return lockDeadline;
      }

      @Override
      public byte[] key(int i) {
        return null;
      }

      @Override
      public byte[] value(int i) {
        return "during-the-outage".getBytes(java.nio.charset.StandardCharsets.UTF_8);
      }

      @Override
      public List<ShareBatch.Header> headers(int i) {
        return List.of();
      }
    };
  }

  /**
   * A task wired to the test: its engine is an {@link IdleEngine}, the worker sets nothing
   * (visibly) unless the test says otherwise, renewals run on the task thread only.
   */
  private static class ScriptedTask extends ShareSinkTask {
    final MockTime clock;
    IdleEngine engine;
    long stuckTimeoutMs;
    Map<String, Object> clientSettings;

    /** The worker's configuration this task sees; a test may change it before start(). */
    Supplier<WorkerDefaults> workerDefaults = () -> WorkerDefaults.NONE;

    /** A task whose waits all happen on the test thread. */
    ScriptedTask() {
      this(new SteppingMockTime());
    }

    ScriptedTask(MockTime clock) {
      this(clock, new AtomicReference<>());
    }

    /** The wiring reaches this task's methods through {@code self}, set once it is built. */
    private ScriptedTask(MockTime clock, AtomicReference<ScriptedTask> self) {
      super(
          new TaskWiring(
              clock,
              KeeperTimer.none(),
              () -> self.get().workerDefaults.get(),
              request -> self.get().openEngine(request),
              (pattern, config, clients, worker, time, taskName) ->
                  self.get().openTopicPattern(pattern, clients)));
      self.set(this);
      this.clock = clock;
      this.engine = new IdleEngine(clock);
    }

    ShareConsumerEngine openEngine(EngineRequest request) {
      assertEquals("connect-share-files", request.groupId());
      assertEquals("connector-share-files-1", request.clientId());
      this.stuckTimeoutMs = request.stuckTimeoutMs();
      this.clientSettings = request.clientSettings();
      return engine;
    }

    io.sharesink.connect.topics.TopicPatternSubscription openTopicPattern(
        java.util.regex.Pattern pattern, ConnectorClients clients) {
      throw new AssertionError("this task has no topics.regex");
    }
  }

  /** A task on {@code topics.regex} over a fake cluster whose topics the test changes. */
  private static class PatternTask extends ScriptedTask {
    final java.util.Set<String> clusterTopics = new java.util.concurrent.ConcurrentSkipListSet<>();
    List<String> joinedWith;
    int opened;

    @Override
    ShareConsumerEngine openEngine(EngineRequest request) {
      opened++;
      joinedWith = request.topics();
      return super.openEngine(request);
    }

    @Override
    io.sharesink.connect.topics.TopicPatternSubscription openTopicPattern(
        java.util.regex.Pattern pattern, ConnectorClients clients) {
      assertEquals(5_000, ShareConsumerSettings.metadataMaxAgeMs(clients.consumer().settings()));
      io.sharesink.connect.topics.TopicLister lister =
          new io.sharesink.connect.topics.TopicLister() {
            @Override
            public org.apache.kafka.common.KafkaFuture<java.util.Set<String>> topicNames() {
              return org.apache.kafka.common.KafkaFuture.completedFuture(
                  java.util.Set.copyOf(clusterTopics));
            }

            @Override
            public void close() {}
          };
      return new io.sharesink.connect.topics.TopicPatternSubscription(
          pattern, java.util.Set.of(), lister, clock, 5_000, "files-1");
    }
  }

  private static final SourceTaskContext CONTEXT =
      new SourceTaskContext() {
        @Override
        public Map<String, String> configs() {
          return Map.of();
        }

        @Override
        public OffsetStorageReader offsetStorageReader() {
          return null;
        }

        @Override
        public PluginMetrics pluginMetrics() {
          return null;
        }
      };

  private Map<String, String> taskProps() {
    Map<String, String> props = new HashMap<>(ShareSinkConfigTest.validConfig());
    props.put("file", dir.resolve("out.txt").toString());
    props.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
    props.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
    props.put(ShareSinkConfig.CONNECTOR_NAME_CONFIG, "files");
    props.put(ShareSinkConfig.TASK_ID_CONFIG, "1");
    props.put(ShareSinkConfig.POLL_TIMEOUT_MS_CONFIG, "2000");
    return props;
  }

  private Map<String, String> patternTaskProps() {
    Map<String, String> props = taskProps();
    props.remove(ShareSinkConfig.TOPICS_CONFIG);
    props.put(ShareSinkConfig.TOPICS_REGEX_CONFIG, "orders-.*");
    props.put("share.consumer.metadata.max.age.ms", "5000");
    // A task without a member waits up to the poll timeout for a topic: keep the test short.
    props.put(ShareSinkConfig.POLL_TIMEOUT_MS_CONFIG, "10");
    return props;
  }

  @Test
  void aPatternJoinsOnWhatMatchesAndFollowsTheCluster() {
    PatternTask task = new PatternTask();
    task.clusterTopics.addAll(List.of("orders-1", "refunds", "__orders-internal"));
    task.initialize(CONTEXT);
    task.start(patternTaskProps());
    assertEquals(List.of("orders-1"), task.joinedWith);
    task.clusterTopics.add("orders-2");
    assertNull(task.poll());
    assertEquals(List.of(), task.engine.subscriptions, "no check before metadata.max.age.ms");
    task.clock.sleep(5_000);
    assertNull(task.poll());
    assertEquals(List.of(List.of("orders-1", "orders-2")), task.engine.subscriptions);
    task.clusterTopics.remove("orders-1");
    task.clock.sleep(5_000);
    assertNull(task.poll());
    assertEquals(List.of("orders-2"), task.engine.subscriptions.get(1));
    // Nothing left: the member keeps the deleted names (the broker assigns nothing of them).
    task.clusterTopics.remove("orders-2");
    task.clock.sleep(5_000);
    assertNull(task.poll());
    assertEquals(2, task.engine.subscriptions.size());
    task.stop();
    assertEquals(1, task.opened);
    assertEquals(1, task.engine.closes.get());
  }

  @Test
  void aPatternMatchingNothingWaitsOutsideTheGroupUntilATopicAppears() {
    PatternTask task = new PatternTask();
    task.initialize(CONTEXT);
    task.start(patternTaskProps());
    assertEquals(0, task.opened, "no member without a topic");
    assertTrue(!dir.resolve("out.txt").toFile().exists(), "nor a legacy task");
    assertNull(task.poll());
    task.clusterTopics.add("orders-1");
    task.clock.sleep(5_000);
    assertNull(task.poll());
    assertEquals(List.of("orders-1"), task.joinedWith);
    assertTrue(dir.resolve("out.txt").toFile().exists(), "the legacy task started");
    task.stop();
    assertEquals(1, task.engine.closes.get());
  }

  @Test
  void stopOnTheTaskThreadAfterTheLoop() {
    ScriptedTask task = new ScriptedTask();
    task.initialize(CONTEXT);
    task.start(taskProps());
    assertTrue(dir.resolve("out.txt").toFile().exists(), "the legacy task started");
    assertNull(task.poll());
    task.stop();
    task.stop();
    assertEquals(1, task.engine.closes.get());
    assertNull(task.poll(), "a poll after stop does nothing");
    assertEquals(0, task.engine.pollsAfterClose.get());
  }

  @Test
  void stopFromAnotherThreadWakesTheCycleAndCleansUpAfterIt() throws Exception {
    MockTime clock = new MockTime(0, 1_700_000_000_000L, 0);
    ScriptedTask task = new ScriptedTask(clock);
    task.engine.untilWoken = true; // its 2 s poll ends only at the wakeup
    task.initialize(CONTEXT);
    task.start(taskProps());
    Thread poller = new Thread(task::poll);
    poller.start();
    task.engine.polling.await();
    long started = clock.milliseconds();
    task.stop(); // wakes the poll, waits for the cycle to return (on the task's clock)
    assertEquals(1, task.engine.closes.get(), "cleaned up when stop() returns");
    poller.join();
    assertEquals(started, clock.milliseconds(), "the wakeup ended the poll: no time passed");
    assertEquals(0, task.engine.pollsAfterClose.get());
  }

  @Test
  void theEngineHoldsItsBufferAsLongAsTheDriverHoldsItsRecords() {
    ScriptedTask task = new ScriptedTask();
    task.initialize(CONTEXT);
    Map<String, String> props = taskProps();
    props.put("share.task.stuck.timeout.ms", "120000");
    task.start(props);
    assertEquals(120_000, task.stuckTimeoutMs);
    task.stop();
    ScriptedTask byDefault = new ScriptedTask();
    byDefault.initialize(CONTEXT);
    byDefault.start(taskProps());
    assertEquals(15 * 60_000, byDefault.stuckTimeoutMs);
    byDefault.stop();
  }

  @Test
  void nativeSettingsBoundTheBufferByTheStuckTimeoutUnlessSetExplicitly() {
    Map<String, Object> client = Map.of("bootstrap.servers", "b:9092");
    Map<String, Object> settings = ShareEngineOpener.nativeSettings(client, 120_000);
    assertEquals("120000", settings.get("share.buffer.hold.max.ms"));
    assertEquals("b:9092", settings.get("bootstrap.servers"));
    assertEquals("3000", settings.get("share.close.timeout.ms"), "the stop budget's engine close");
    // share.consumer.share.buffer.hold.max.ms arrives without its prefix and wins.
    Map<String, Object> explicit =
        ShareEngineOpener.nativeSettings(
            Map.of("bootstrap.servers", "b:9092", "share.buffer.hold.max.ms", "5000"), 120_000);
    assertEquals("5000", explicit.get("share.buffer.hold.max.ms"));
    assertNull(client.get("share.buffer.hold.max.ms"), "the client settings are left as they are");
  }

  @Test
  void theShareConsumerGetsTheConnectorsConsumerOverrides() {
    ScriptedTask task = new ScriptedTask();
    task.initialize(CONTEXT);
    Map<String, String> props = taskProps();
    props.put("consumer.override.max.poll.records", "42");
    props.put("consumer.override.client.id", "orders");
    props.put("consumer.override.auto.offset.reset", "latest");
    task.start(props);
    assertEquals("42", task.clientSettings.get("max.poll.records"));
    assertEquals("orders", task.clientSettings.get("client.id"));
    assertNull(task.clientSettings.get("auto.offset.reset"), "a share consumer refuses it");
    task.stop();
  }

  @Test
  void aTaskOnAWorkerWhosePolicyRefusesTheOverridesDoesNotStart() throws Exception {
    Path worker = dir.resolve("worker.properties");
    Files.writeString(
        worker, "bootstrap.servers=localhost:9092\nconnector.client.config.override.policy=None\n");
    ScriptedTask task = new ScriptedTask();
    task.workerDefaults = () -> WorkerDefaults.read(worker);
    task.initialize(CONTEXT);
    Map<String, String> props = taskProps();
    props.put("consumer.override.max.poll.records", "42");
    ConnectException e = assertThrows(ConnectException.class, () -> task.start(props));
    assertTrue(e.getMessage().startsWith("Client config overrides not allowed"), e.getMessage());
    assertTrue(e.getMessage().contains("consumer.override.max.poll.records"), e.getMessage());
    assertFalse(e.getMessage().contains("42"), e.getMessage());
    assertNull(task.clientSettings, "no engine was opened");
    task.stop();
  }

  @Test
  void aTaskWhoseTruststoreIsAFifoFailsNamingTheKeyWithoutOpeningIt() throws Exception {
    try (io.sharesink.engine.HostileFiles.Fifo fifo =
        new io.sharesink.engine.HostileFiles.Fifo(dir.resolve("trust.pem"), new byte[0])) {
      ScriptedTask task = new ScriptedTask();
      task.initialize(CONTEXT);
      Map<String, String> props = taskProps();
      props.put("share.consumer.security.protocol", "SSL");
      props.put("share.consumer.ssl.truststore.type", "PEM");
      props.put("share.consumer.ssl.truststore.location", fifo.path().toString());
      org.apache.kafka.common.config.ConfigException e =
          assertThrows(
              org.apache.kafka.common.config.ConfigException.class, () -> task.start(props));
      assertTrue(
          e.getMessage()
              .startsWith(
                  "share.consumer.ssl.truststore.location: "
                      + fifo.path()
                      + " is a FIFO, not a regular file"),
          e.getMessage());
      assertNull(task.clientSettings, "no engine was opened");
      task.stop();
    }
  }

  @Test
  void settingsTheNativeEngineDoesNotUseAreNamedWhereTheyWereSet() {
    WorkerDefaults worker =
        new WorkerDefaults(
            null, Map.of("bootstrap.servers", "b:9092", "consumer.client.dns.lookup", "x"));
    ShareConsumerSettings settings =
        ShareConsumerSettings.layer(
            worker,
            Map.of(
                "consumer.override.max.partition.fetch.bytes", "1",
                "consumer.override.max.poll.records", "5"));
    String warning = ShareEngineOpener.unreadByNativeEngine(settings);
    assertTrue(
        warning.contains(
            "client.dns.lookup (worker consumer.client.dns.lookup), max.partition.fetch.bytes"
                + " (consumer.override.max.partition.fetch.bytes)"),
        warning);
    assertTrue(!warning.contains("max.poll.records"), warning);
    assertNull(
        ShareEngineOpener.unreadByNativeEngine(
            ShareConsumerSettings.layer(
                new WorkerDefaults(null, Map.of("bootstrap.servers", "b:9092")), Map.of())));
  }

  @Test
  void aFailedStartClosesTheEngine() {
    ScriptedTask task = new ScriptedTask();
    task.initialize(CONTEXT);
    Map<String, String> props = taskProps();
    props.put("value.converter", "com.example.NoSuchConverter");
    assertThrows(RuntimeException.class, () -> task.start(props));
    assertEquals(1, task.engine.closes.get());
    task.stop(); // the runtime calls stop() after a failed start
    assertEquals(1, task.engine.closes.get());
  }

  @Test
  void theLegacyTaskFailureFailsThePollAsAConnectException() {
    ScriptedTask task = new ScriptedTask();
    task.initialize(CONTEXT);
    Map<String, String> props = taskProps();
    props.put("file", dir.resolve("no-such-dir").resolve("out.txt").toString());
    // FileStreamSinkTask.start throws when it cannot open its file: the builder stops it again.
    assertThrows(ConnectException.class, () -> task.start(props));
    assertEquals(1, task.engine.closes.get());
  }

  @Test
  void aCycleThatOutlivesTheStopGraceCleansUpWhenItReturns() throws Exception {
    MockTime clock = new MockTime(0, 1_700_000_000_000L, 0);
    ScriptedTask task = new ScriptedTask(clock);
    task.initialize(CONTEXT);
    Map<String, String> props = taskProps();
    props.put(ShareSinkConfig.POLL_TIMEOUT_MS_CONFIG, "100");
    task.start(props);
    task.engine.stuck = new CountDownLatch(1);
    Thread poller = new Thread(task::poll);
    poller.start();
    task.engine.polling.await();
    Thread stopper = new Thread(task::stop);
    stopper.start();
    task.engine.wake.await(); // stop() has set its deadline and woken the engine
    // The cycle stays stuck past the poll timeout plus the stop's wait for it.
    clock.sleep(100 + StopBudget.CYCLE_WAIT_BEYOND_POLL.toMillis());
    stopper.join(); // gave up waiting
    assertEquals(0, task.engine.closes.get(), "no cleanup under a running cycle");
    task.engine.stuck.countDown();
    poller.join();
    assertEquals(1, task.engine.closes.get(), "the cycle's thread cleaned up");
    task.stop();
    assertEquals(1, task.engine.closes.get());
  }

  /**
   * Issue 14: during a broker outage Connect logged "Graceful stop of task ... failed": the final
   * synchronous acknowledgements waited 5 s for a broker that answered nothing, then the engine's
   * close took its own budget. The stop must return within Connect's 5 s shutdown grace.
   */
  @Test
  void aStopDuringABrokerOutageReturnsWithinTheShutdownGrace() {
    ScriptedTask task = new ScriptedTask();
    OutageEngine engine = new OutageEngine(task.clock);
    task.engine = engine;
    task.initialize(CONTEXT);
    task.start(taskProps());
    assertNull(task.poll()); // the record is put
    long started = task.clock.milliseconds();
    task.stop();
    long stopMs = task.clock.milliseconds() - started;
    assertEquals(
        StopBudget.FINAL_WAIT.toMillis(),
        engine.syncWaitMs,
        "the final ACCEPT is sent synchronously, waiting the driver's final wait");
    assertEquals(1, engine.closes.get());
    assertEquals(StopBudget.FINAL_WAIT.plus(StopBudget.ENGINE_CLOSE).toMillis(), stopMs);
    assertTrue(
        stopMs < StopBudget.SHUTDOWN_GRACE.toMillis(),
        "stop took " + stopMs + " ms (sync acks waited " + engine.syncWaitMs + " ms), over 5 s");
  }
}

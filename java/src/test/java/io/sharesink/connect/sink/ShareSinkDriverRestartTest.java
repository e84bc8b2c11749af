package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.InMemoryShareGroup.State;
import io.sharesink.engine.AckType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Restarts of a failed legacy task in place ({@code share.task.restart.*}), against a sink that
 * behaves as Debezium's JDBC sink 3.6 does when its database refuses connections: {@code start()}
 * fails, and {@code put()} swallows a write failure and throws it on the next put, forever.
 */
class ShareSinkDriverRestartTest {

  private final MockTime time = new SteppingMockTime();

  /**
   * A Debezium-JDBC-like sink; the driver makes new instances by reflection, so state is static.
   */
  public static class OutageSinkTask extends SinkTask {
    static final List<OutageSinkTask> instances = new CopyOnWriteArrayList<>();
    static final Set<Long> written = ConcurrentHashMap.newKeySet();
    static volatile boolean databaseDown;
    static volatile boolean failPreCommit;
    static volatile boolean reportErrant;

    /** put throws after a while (a sink that gives up on a batch). */
    static volatile boolean failPutNow;

    /** A start() that blocks this long on the test's clock (a database that does not answer). */
    static volatile long startBlocksMs;

    static volatile org.apache.kafka.common.utils.Time clock;

    final List<Collection<TopicPartition>> opens = new CopyOnWriteArrayList<>();
    final List<Collection<TopicPartition>> closes = new CopyOnWriteArrayList<>();
    final List<Long> putOffsets = new CopyOnWriteArrayList<>();
    volatile boolean started;
    volatile boolean stopped;
    volatile boolean preCommitAfterStop;
    private RuntimeException previousPutException;

    static void reset() {
      instances.clear();
      written.clear();
      databaseDown = false;
      failPreCommit = false;
      reportErrant = false;
      failPutNow = false;
      startBlocksMs = 0;
    }

    @Override
    public String version() {
      return "test";
    }

    @Override
    public void start(Map<String, String> props) {
      instances.add(this);
      if (startBlocksMs > 0 && instances.size() > 1) {
        clock.sleep(startBlocksMs);
      }
      if (databaseDown) {
        throw new ConnectException("java.net.ConnectException: Connection refused");
      }
      started = true;
    }

    @Override
    public void open(Collection<TopicPartition> partitions) {
      opens.add(List.copyOf(partitions));
    }

    @Override
    public void put(Collection<SinkRecord> records) {
      if (previousPutException != null) {
        throw new ConnectException("JDBC sink connector failure", previousPutException);
      }
      if (failPutNow && !records.isEmpty()) {
        clock.sleep(100); // longer than the commit interval: a commit is due when put returns
        throw new ConnectException("the sink gave up on this batch");
      }
      if (reportErrant && !records.isEmpty()) {
        for (SinkRecord record : records) {
          context.errantRecordReporter().report(record, new RuntimeException("bad row"));
        }
      }
      for (SinkRecord record : records) {
        putOffsets.add(record.kafkaOffset());
      }
      if (databaseDown && !records.isEmpty()) {
        previousPutException = new RuntimeException("Connection refused");
        return;
      }
      for (SinkRecord record : records) {
        written.add(record.kafkaOffset());
      }
    }

    @Override
    public Map<TopicPartition, OffsetAndMetadata> preCommit(
        Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
      preCommitAfterStop |= stopped;
      if (failPreCommit) {
        throw new ConnectException("flush failed");
      }
      return currentOffsets;
    }

    @Override
    public void close(Collection<TopicPartition> partitions) {
      closes.add(List.copyOf(partitions));
    }

    @Override
    public void stop() {
      stopped = true;
    }
  }

  private final List<DriverFixture> started = new ArrayList<>();

  @BeforeEach
  void reset() {
    OutageSinkTask.reset();
    OutageSinkTask.clock = time;
  }

  @AfterEach
  void stopAll() {
    for (DriverFixture fixture : started) {
      fixture.driver.stop();
    }
    OutageSinkTask.reset();
  }

  private DriverFixture start(InMemoryShareGroup group, String... kv) {
    Map<String, String> props = new HashMap<>();
    props.put("share.commit.interval.ms", "50");
    props.put("share.task.restart.backoff.ms", "100");
    props.put("share.task.restart.backoff.max.ms", "400");
    for (int i = 0; i < kv.length; i += 2) {
      props.put(kv[i], kv[i + 1]);
    }
    DriverFixture fixture = DriverFixture.start(new OutageSinkTask(), props, group);
    started.add(fixture);
    return fixture;
  }

  private InMemoryShareGroup group(long lockMs, int records) {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, lockMs, 100, records);
    return group;
  }

  /** Collects every record ACCEPTed before the sink wrote it. */
  private static void acceptedNotWritten(InMemoryShareGroup group, List<Long> violations) {
    group.onAccept =
        rec -> {
          if (!OutageSinkTask.written.contains(rec.offset)) {
            violations.add(rec.offset);
          }
        };
  }

  @Test
  void anOutageRestartsTheTaskInPlaceHoldingAndPuttingAgainEveryUnacceptedRecord() {
    long lockMs = 1_000;
    InMemoryShareGroup group = group(lockMs, 6);
    List<Long> acceptedUnwritten = new CopyOnWriteArrayList<>();
    acceptedNotWritten(group, acceptedUnwritten);
    DriverFixture fixture = start(group, "share.task.restart.max.attempts", "50");
    OutageSinkTask.databaseDown = true; // the first put fails (deferred), later starts fail too
    long outageEnds = time.milliseconds() + 3 * lockMs; // over several lock durations
    fixture.runUntil(
        () -> {
          if (time.milliseconds() >= outageEnds) {
            OutageSinkTask.databaseDown = false;
          }
          return group.count(State.ACCEPTED) == 6;
        },
        Duration.ofSeconds(20),
        "all accepted");

    List<OutageSinkTask> instances = OutageSinkTask.instances;
    assertTrue(instances.size() >= 3, "restarted, with starts failing meanwhile: " + instances);
    for (OutageSinkTask old : instances.subList(0, instances.size() - 1)) {
      assertTrue(old.stopped, "every failed instance is stopped");
    }
    OutageSinkTask first = instances.get(0);
    assertEquals(
        List.of(List.of(new TopicPartition("t", 0))), first.closes, "closed, then stopped");
    OutageSinkTask last = instances.get(instances.size() - 1);
    assertTrue(last.started && !last.stopped);
    assertEquals(List.of(List.of(new TopicPartition("t", 0))), last.opens, "opened lazily again");
    assertTrue(
        last.putOffsets.containsAll(List.of(0L, 1L, 2L, 3L, 4L, 5L)),
        "the new instance got every held record: " + last.putOffsets);
    assertEquals(List.of(), acceptedUnwritten, "nothing accepted that the sink did not write");
    assertEquals(0, group.expiredLocks, "locks renewed while the task was down");
    assertTrue(group.all().stream().allMatch(r -> r.deliveryCount == 1), "no redelivery");
    assertEquals(List.of(), group.received(AckType.RELEASE));
    assertFalse(group.received(AckType.RENEW).isEmpty());
    assertEquals(List.of(), group.violations);
    long restarts = fixture.driver.metrics().snapshot().taskRestarts();
    assertEquals(instances.size() - 1, restarts, "every new instance counted");
  }

  @Test
  void restartsAreBoundedAndThenTheTaskFailsAndReleases() {
    InMemoryShareGroup group = group(30_000, 3);
    DriverFixture fixture = start(group, "share.task.restart.max.attempts", "2");
    OutageSinkTask.databaseDown = true;
    ConnectException failure =
        assertThrows(
            ConnectException.class,
            () -> fixture.runUntil(() -> false, Duration.ofSeconds(10), "the task to fail"));
    assertTrue(failure.getMessage().contains("after 2 restarts"), failure.getMessage());
    assertEquals(3, OutageSinkTask.instances.size(), "the first instance and two restarts");
    assertEquals(2, fixture.driver.metrics().snapshot().taskRestarts());
    fixture.driver.stop();
    group.close(); // as the hosting task does: the engine's close releases what is left
    assertEquals(3, group.count(State.AVAILABLE), "released for another attempt");
    assertEquals(0, group.count(State.ACCEPTED));
    assertEquals(List.of(), group.violations);
  }

  @Test
  void zeroAttemptsFailsTheTaskAtTheFirstFailureAsTheRuntimeDoes() {
    InMemoryShareGroup group = group(30_000, 3);
    DriverFixture fixture = start(group, "share.task.restart.max.attempts", "0");
    OutageSinkTask.databaseDown = true;
    assertThrows(
        ConnectException.class,
        () -> fixture.runUntil(() -> false, Duration.ofSeconds(5), "the task to fail"));
    assertEquals(1, OutageSinkTask.instances.size());
    assertEquals(0, fixture.driver.metrics().snapshot().taskRestarts());
  }

  @Test
  void aRecordReportedErrantUnderToleranceNoneFailsTheTaskWithoutRestart() {
    InMemoryShareGroup group = group(30_000, 2);
    OutageSinkTask.reportErrant = true;
    DriverFixture fixture = start(group, "errors.log.enable", "true");
    ConnectException failure =
        assertThrows(
            ConnectException.class,
            () -> fixture.runUntil(() -> false, Duration.ofSeconds(5), "the task to fail"));
    assertInstanceOf(ToleranceExceededException.class, failure.getCause());
    assertEquals(1, OutageSinkTask.instances.size(), "not restarted");
  }

  @Test
  void aPreCommitFailureRestartsTheTaskInsteadOfReleasing() {
    InMemoryShareGroup group = group(30_000, 4);
    List<Long> acceptedUnwritten = new CopyOnWriteArrayList<>();
    acceptedNotWritten(group, acceptedUnwritten);
    OutageSinkTask.failPreCommit = true;
    DriverFixture fixture = start(group, "share.task.restart.max.attempts", "5");
    fixture.runUntil(
        () -> OutageSinkTask.instances.size() >= 2, Duration.ofSeconds(5), "a restart");
    OutageSinkTask.failPreCommit = false;
    fixture.runUntil(() -> group.count(State.ACCEPTED) == 4, Duration.ofSeconds(5), "accepted");
    OutageSinkTask last = OutageSinkTask.instances.get(OutageSinkTask.instances.size() - 1);
    assertTrue(last.putOffsets.containsAll(List.of(0L, 1L, 2L, 3L)), "" + last.putOffsets);
    assertEquals(List.of(), group.received(AckType.RELEASE), "held, not released");
    assertTrue(group.all().stream().allMatch(r -> r.deliveryCount == 1));
    assertEquals(List.of(), acceptedUnwritten);
    assertEquals(List.of(), group.violations);
  }

  @Test
  void aHealthyRestartedTaskGetsItsAttemptsBack() {
    InMemoryShareGroup group = group(30_000, 2);
    DriverFixture fixture = start(group, "share.task.restart.max.attempts", "1");
    // Two outages, each needing one restart: the first restart's success resets the count.
    for (int outage = 0; outage < 2; outage++) {
      OutageSinkTask current = OutageSinkTask.instances.get(OutageSinkTask.instances.size() - 1);
      OutageSinkTask.databaseDown = true;
      group.produce("t", 0, null, "outage" + outage);
      fixture.runUntil(() -> current.stopped, Duration.ofSeconds(5), "the instance to fail");
      OutageSinkTask.databaseDown = false;
      long expected = group.all().size();
      fixture.runUntil(
          () -> group.count(State.ACCEPTED) == expected, Duration.ofSeconds(5), "accepted");
      fixture.runFor(Duration.ofMillis(200));
    }
    assertEquals(2, fixture.driver.metrics().snapshot().taskRestarts());
    assertEquals(List.of(), group.violations);
  }

  @Test
  void stoppingWhileTheTaskIsDownReleasesWithoutCallingTheStoppedInstance() {
    InMemoryShareGroup group = group(30_000, 3);
    DriverFixture fixture =
        start(
            group,
            "share.task.restart.backoff.ms",
            "60000",
            "share.task.restart.backoff.max.ms",
            "60000");
    OutageSinkTask.databaseDown = true;
    fixture.runUntil(
        () -> OutageSinkTask.instances.get(0).stopped, Duration.ofSeconds(5), "the first failure");
    OutageSinkTask first = OutageSinkTask.instances.get(0);
    int closes = first.closes.size();
    fixture.driver.stop();
    assertEquals(closes, first.closes.size(), "no second close of the stopped instance");
    assertEquals(1, OutageSinkTask.instances.size());
    group.close(); // as the hosting task does: the engine's close releases what is left
    assertEquals(3, group.count(State.AVAILABLE), "released at stop");
    assertEquals(List.of(), group.violations);
  }

  @Test
  void noPreCommitReachesTheStoppedInstanceAfterAPutFailure() {
    InMemoryShareGroup group = group(30_000, 3);
    OutageSinkTask.failPutNow = true; // a commit is due when the failed put returns
    DriverFixture fixture = start(group, "share.task.restart.max.attempts", "5");
    fixture.runUntil(
        () -> OutageSinkTask.instances.get(0).stopped, Duration.ofSeconds(5), "the failure");
    OutageSinkTask.failPutNow = false;
    fixture.runUntil(() -> group.count(State.ACCEPTED) == 3, Duration.ofSeconds(5), "accepted");
    for (OutageSinkTask instance : OutageSinkTask.instances) {
      assertFalse(instance.preCommitAfterStop, "preCommit on a stopped instance");
    }
    assertEquals(List.of(), group.violations);
  }

  @Test
  void aRestartedInstanceWhoseStartBlocksPastTheLockKeepsTheRecordsRenewed() {
    long lockMs = 2_000;
    InMemoryShareGroup group = group(lockMs, 4);
    OutageSinkTask.failPutNow = true;
    OutageSinkTask.startBlocksMs = 5 * lockMs; // a new instance's start() waits for its database
    DriverFixture fixture = start(group, "share.task.restart.max.attempts", "5");
    fixture.runUntil(
        () -> OutageSinkTask.instances.get(0).stopped, Duration.ofSeconds(5), "the failure");
    OutageSinkTask.failPutNow = false;
    fixture.runUntil(() -> group.count(State.ACCEPTED) == 4, Duration.ofSeconds(60), "accepted");
    assertEquals(0, group.expiredLocks, "renewed while start() blocked");
    assertTrue(group.all().stream().allMatch(r -> r.deliveryCount == 1));
    assertEquals(List.of(), group.violations);
  }
}

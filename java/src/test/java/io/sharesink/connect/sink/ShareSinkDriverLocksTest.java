package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.InMemoryShareGroup.State;
import io.sharesink.engine.AckType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.Test;

/**
 * The records a task holds: renewed while a put retries, blocks or buffers, while the connector is
 * paused; released for other members past {@code share.task.stuck.timeout.ms}; never acknowledged
 * once their locks ran out.
 */
class ShareSinkDriverLocksTest extends DriverTestBase {

  @Test
  void retriablePutIsRetriedWithTheSameRecordsWhileLocksAreRenewed() {
    long shortLock = 1_000;
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, shortLock, 10, 4);
    ScriptedSinkTask task = new ScriptedSinkTask();
    long outageEnds = time.milliseconds() + 2_500; // over two lock durations
    task.onPut =
        records -> {
          if (!records.isEmpty() && time.milliseconds() < outageEnds) {
            task.ctx().timeout(150);
            throw new RetriableException("database unavailable");
          }
        };
    DriverFixture fixture = start(task, props("share.commit.interval.ms", "1000"), group);
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(10), "all accepted");

    List<List<SinkRecord>> nonEmpty = task.puts.stream().filter(p -> !p.isEmpty()).toList();
    assertTrue(nonEmpty.size() >= 3, "retried: " + nonEmpty.size());
    for (List<SinkRecord> attempt : nonEmpty) {
      assertEquals(4, attempt.size());
      for (int i = 0; i < 4; i++) {
        assertSame(nonEmpty.get(0).get(i), attempt.get(i), "the same SinkRecord objects");
      }
    }
    assertEquals(0, group.expiredLocks, "no lock may expire during the outage");
    assertTrue(group.all().stream().allMatch(r -> r.deliveryCount == 1));
    assertFalse(group.received(AckType.RENEW).isEmpty());
    assertEquals(List.of(), group.violations);
  }

  @Test
  void bufferedRecordsAreRenewedUntilTheSinkFlushes() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, 1_000, 10);
    group.produce("t", 0, null, "v");
    ScriptedSinkTask task = new ScriptedSinkTask();
    TopicPartition tp = new TopicPartition("t", 0);
    long flushAt = time.milliseconds() + 2_500;
    task.onPreCommit =
        offsets -> time.milliseconds() < flushAt ? Map.of(tp, new OffsetAndMetadata(0)) : offsets;
    DriverFixture fixture = start(task, props(), group);
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(10), "accepted");
    assertEquals(0, group.expiredLocks);
    assertEquals(1, group.all().get(0).deliveryCount);
    assertEquals(1, task.allPut().size(), "put once, never again");
  }

  @Test
  void pausedPartitionsAreHeldAndRenewedThenDeliveredAfterResume() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, 1_000, 10);
    ScriptedSinkTask task = new ScriptedSinkTask();
    TopicPartition paused = new TopicPartition("t", 1);
    DriverFixture fixture = start(task, props(), group);
    task.ctx().pause(paused);
    group.produce("t", 0, null, "a");
    group.produce("t", 1, null, "b");
    fixture.runFor(Duration.ofMillis(2_000));
    assertEquals(List.of("a"), task.allPut().stream().map(SinkRecord::value).toList());
    assertEquals(State.ACQUIRED, group.rec("t", 1, 0).state);
    assertEquals(0, group.expiredLocks, "held records are renewed");
    task.ctx().resume(paused);
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(5), "accepted");
    assertEquals(List.of("a", "b"), task.allPut().stream().map(SinkRecord::value).toList());
  }

  @Test
  void aPausedConnectorKeepsItsRecordsRenewedUpToTheStuckTimeoutThenReleasesThem() {
    long lock = 2_000;
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, lock, 10, 3);
    ScriptedSinkTask task = new ScriptedSinkTask();
    task.onPreCommit = offsets -> Map.of(); // buffering: nothing is accepted
    DriverFixture fixture = start(task, props("share.task.stuck.timeout.ms", "20000"), group);
    fixture.runFor(Duration.ofMillis(200));
    assertEquals(3, fixture.driver.inFlight());
    time.sleep(15_000); // PAUSE: the runtime stops calling poll(); the keeper's thread runs on
    assertEquals(0, group.expiredLocks, "renewed while paused");
    assertEquals(3, group.count(State.ACQUIRED));
    time.sleep(6_000);
    assertEquals(3, group.count(State.AVAILABLE), "released past the stuck timeout");
    assertEquals(3, fixture.driver.metrics().snapshot().recordsReleasedStuck());
    assertEquals(0, group.expiredLocks);
    assertEquals(List.of(), group.violations);
  }

  @Test
  void aPutBlockedPastTheLockKeepsItsRecordsRenewedOffTheTaskThread() {
    long lock = 1_000;
    InMemoryShareGroup group = new InMemoryShareGroup(time, lock, 3);
    for (int i = 0; i < 6; i++) {
      group.produce("t", 0, null, "a" + i);
    }
    group.produce("t", 1, null, "b0");
    ScriptedSinkTask task = new ScriptedSinkTask();
    AtomicInteger nonEmptyPuts = new AtomicInteger();
    List<Long> renewsDuringBlockedPut = new ArrayList<>();
    task.onPut =
        records -> {
          // The second batch (t-0@3..5) blocks for five locks, as a task whose client retries
          // its database inside put; time passes in steps, as it does for the keeper's thread.
          if (!records.isEmpty() && nonEmptyPuts.incrementAndGet() == 2) {
            int renewsBefore = group.received(AckType.RENEW).size();
            time.sleep(5 * lock);
            renewsDuringBlockedPut.add(
                (long) (group.received(AckType.RENEW).size() - renewsBefore));
          }
        };
    // the sink flushes nothing until its third put: the first put's records wait for a preCommit
    task.onPreCommit = offsets -> nonEmptyPuts.get() < 3 ? Map.of() : offsets;
    DriverFixture fixture = start(task, props(), group);
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(15), "all accepted");

    assertEquals(1, renewsDuringBlockedPut.size());
    assertTrue(
        renewsDuringBlockedPut.get(0) >= 5, "renewed during the put: " + renewsDuringBlockedPut);
    assertEquals(List.of(), group.violations);
    assertEquals(0, group.expiredLocks, "no lock ran out");
    assertEquals(0, fixture.driver.metrics().snapshot().recordsLockExpired());
    for (InMemoryShareGroup.Rec rec : group.all()) {
      assertEquals(1, rec.deliveryCount, rec + " delivered once: no attempt burnt");
    }
    assertEquals(7, task.allPut().size(), "each record put once");
  }

  @Test
  void aPutStuckBeyondTheStuckTimeoutReleasesItsRecordsForOthers() {
    long lock = 1_000;
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, lock, 10, 4);
    InMemoryShareGroup.Member peer = group.member("peer");
    ScriptedSinkTask task = new ScriptedSinkTask();
    List<Integer> peerGotDuringPut = new ArrayList<>();
    task.onPut =
        records -> {
          if (!records.isEmpty() && peerGotDuringPut.isEmpty()) {
            time.sleep(2_500); // past share.task.stuck.timeout.ms
            peerGotDuringPut.add(peer.poll(Duration.ZERO).size());
          }
        };
    DriverFixture fixture = start(task, props("share.task.stuck.timeout.ms", "2000"), group);
    fixture.runFor(Duration.ofMillis(200));

    assertEquals(List.of(4), peerGotDuringPut, "released while the put was stuck");
    for (InMemoryShareGroup.Rec rec : group.all()) {
      assertEquals(2, rec.deliveryCount, rec + ": released once, then delivered to the peer");
      assertEquals(State.ACQUIRED, rec.state);
    }
    assertEquals(4, fixture.driver.metrics().snapshot().recordsReleasedStuck());
    assertEquals(List.of(), group.violations, "nothing acknowledged for the released records");
    assertEquals(0, fixture.driver.inFlight());
    assertEquals(0, group.count(State.ACCEPTED));
  }

  @Test
  void aStopRequestedDuringAStuckPutReleasesTheRecordsAfterTheGrace() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 10, 3);
    ScriptedSinkTask task = new ScriptedSinkTask();
    List<Long> heldAt = new ArrayList<>();
    DriverFixture[] self = new DriverFixture[1];
    task.onPut =
        records -> {
          if (!records.isEmpty() && heldAt.isEmpty()) {
            self[0].driver.wakeup(); // the worker stops the task; put does not return
            time.sleep(StopBudget.SHUTDOWN_GRACE.toMillis() - 500);
            heldAt.add(group.count(State.ACQUIRED));
            time.sleep(1_000);
            heldAt.add(group.count(State.ACQUIRED));
          }
        };
    self[0] = start(task, props(), group);
    self[0].driver.runCycle(Duration.ofMillis(10));
    assertEquals(List.of(3L, 0L), heldAt, "held through the grace, then released");
    assertEquals(3, group.count(State.AVAILABLE), "for the task's successor");
    assertEquals(List.of(), group.violations);
  }

  @Test
  void aPutFailingRetriablyBeyondTheStuckTimeoutReleasesItsRecords() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 10, 3);
    ScriptedSinkTask task = new ScriptedSinkTask();
    task.onPut =
        records -> {
          if (!records.isEmpty() && records.iterator().next().kafkaOffset() == 0) {
            task.ctx().timeout(1_000);
            throw new RetriableException("database unavailable");
          }
        };
    DriverFixture fixture = start(task, props("share.task.stuck.timeout.ms", "5000"), group);
    fixture.runUntil(
        () -> fixture.driver.metrics().snapshot().recordsReleasedStuck() == 3,
        Duration.ofSeconds(10),
        "released");
    assertEquals(0, group.expiredLocks, "renewed until released");
    assertTrue(task.puts.stream().filter(p -> !p.isEmpty()).count() >= 5, "retried meanwhile");
    assertTrue(group.all().stream().allMatch(r -> r.state == State.AVAILABLE), "for others");
    assertEquals(List.of(), group.violations);
  }

  @Test
  void aConverterRetryingLongerThanTheLockKeepsItsBatchRenewed() {
    long lock = 1_000;
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, lock, 10, 2);
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture =
        start(
            task,
            props(
                "value.converter", FlakyConverter.class.getName(),
                "value.converter.failures", "6", // 300+600+1200+1500+1500+1500 ms of backoff
                "errors.retry.timeout", "60000",
                "errors.retry.delay.max.ms", "1500"),
            group);
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(30), "accepted");
    assertEquals(0, group.expiredLocks);
    assertTrue(group.all().stream().allMatch(r -> r.deliveryCount == 1));
    assertEquals(List.of(), group.violations);
  }

  @Test
  void aRetryBatchWhoseLocksRanOutIsNotPutAgain() {
    long lock = 1_000;
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, lock, 10, 3);
    ScriptedSinkTask task = new ScriptedSinkTask();
    AtomicInteger attempts = new AtomicInteger();
    task.onPut =
        records -> {
          if (!records.isEmpty() && attempts.incrementAndGet() == 1) {
            // One jump of the clock: the keeper's thread got no turn meanwhile (a stalled JVM),
            // so the locks are lost; the driver must notice and never acknowledge them.
            time.setCurrentTimeMs(time.milliseconds() + 1_500);
            task.ctx().timeout(10);
            throw new RetriableException("timed out waiting for a row lock");
          }
        };
    DriverFixture fixture = start(task, props(), group);
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(10), "all accepted");

    List<List<SinkRecord>> nonEmpty = task.puts.stream().filter(p -> !p.isEmpty()).toList();
    assertEquals(2, nonEmpty.size(), "the failed put, then the redelivered records once");
    assertNotSame(nonEmpty.get(0).get(0), nonEmpty.get(1).get(0), "a new delivery, not a retry");
    assertEquals(List.of(), group.violations);
    assertTrue(group.all().stream().allMatch(r -> r.deliveryCount == 2));
    assertEquals(3, fixture.driver.metrics().snapshot().recordsLockExpired());
  }
}

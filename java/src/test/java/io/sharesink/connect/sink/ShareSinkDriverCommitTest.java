package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.InMemoryShareGroup.State;
import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.file.FileStreamSinkTask;
import org.junit.jupiter.api.Test;

/**
 * What the driver ACCEPTs and when: only records a preCommit called after their put covered, on the
 * commit interval, on demand and at stop, with redeliveries below an earlier commit.
 */
class ShareSinkDriverCommitTest extends DriverTestBase {

  @Test
  void recordsPutSinceTheLastCommitAreCommittedSoonOnceNothingMoreArrives() {
    // Fewer records than share.commit.max.records, then nothing more: what a full in-flight window
    // looks like to the driver. The empty poll that asks for the commit (which lets the records be
    // ACCEPTed and frees the window) must not wait out the task's whole poll timeout.
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 100);
    for (int i = 0; i < 10; i++) {
      group.produce("t", 0, null, "v" + i);
    }
    DriverFixture fixture =
        start(
            new FileStreamSinkTask(),
            withFile(onDemandCommits(1_000, 10), dir.resolve("out.txt")),
            group);
    Duration taskPollTimeout = Duration.ofSeconds(1);
    fixture.driver.runCycle(taskPollTimeout); // acquires and puts the ten records
    long putAtMs = time.milliseconds();
    for (int cycle = 0; cycle < 20 && !allIn(group, State.ACCEPTED); cycle++) {
      fixture.driver.runCycle(taskPollTimeout);
    }
    assertTrue(allIn(group, State.ACCEPTED), group.all().toString());
    long tookMs = time.milliseconds() - putAtMs;
    assertTrue(
        tookMs <= CommitSchedule.HELD_POLL_MAX_MS + SteppingMockTime.STEP_MS,
        "ACCEPTed " + tookMs + " ms after the put; the poll waited for records that cannot come");
  }

  @Test
  void putIsCalledEmptyOnIdleCyclesAndPreCommitEveryInterval() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture = start(task, props(), group);
    fixture.runFor(Duration.ofMillis(450));
    assertTrue(task.puts.size() >= 3, "put(empty) on idle cycles: " + task.puts.size());
    assertTrue(task.puts.stream().allMatch(List::isEmpty));
    assertTrue(task.preCommits.size() >= 2, "preCommits: " + task.preCommits.size());
    assertTrue(task.opens.isEmpty(), "nothing to open before a record arrives");
  }

  @Test
  void preCommitReceivesMaxPutOffsetPlusOneAndOnlyCoveredRecordsAreAccepted() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 10, 6);
    ScriptedSinkTask task = new ScriptedSinkTask();
    TopicPartition tp = new TopicPartition("t", 0);
    // The sink has durably written offsets 0..3 only.
    task.onPreCommit = offsets -> Map.of(tp, new OffsetAndMetadata(4));
    DriverFixture fixture = start(task, props(), group);
    fixture.runUntil(() -> group.count(State.ACCEPTED) == 4, Duration.ofSeconds(5), "4 accepted");
    fixture.runFor(Duration.ofMillis(300));
    assertEquals(4, group.count(State.ACCEPTED));
    assertEquals(2, group.count(State.ACQUIRED), "offsets 4 and 5 stay held");
    assertTrue(
        task.preCommits.stream().anyMatch(m -> m.equals(Map.of(tp, new OffsetAndMetadata(6)))));
    assertEquals(List.of(), group.violations);
  }

  @Test
  void aReturnedOffsetAboveWhatWasPassedIsIgnored() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    group.produce("t", 0, null, "v");
    ScriptedSinkTask task = new ScriptedSinkTask();
    task.onPreCommit = offsets -> Map.of(new TopicPartition("t", 0), new OffsetAndMetadata(99));
    DriverFixture fixture = start(task, props(), group);
    fixture.runFor(Duration.ofMillis(400));
    assertEquals(0, group.count(State.ACCEPTED));
    assertEquals(1, group.count(State.ACQUIRED));
  }

  @Test
  void aFailureDeferredToTheNextPutIsNeverAccepted() {
    // Debezium JDBC 3.6 style: put() swallows a write error and throws it on the next put().
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 3, 3);
    ScriptedSinkTask task = new ScriptedSinkTask();
    AtomicInteger putCount = new AtomicInteger();
    task.onPut =
        records -> {
          if (putCount.incrementAndGet() == 2) {
            throw new ConnectException("write of the previous batch failed");
          }
        };
    DriverFixture fixture =
        start(
            task,
            props("share.commit.interval.ms", "10", "share.task.restart.max.attempts", "0"),
            group);
    // Cycle 1 puts 0..2 and (commit due) preCommit echoes offset 3: without the guard they would
    // be ACCEPTed here. Cycle 2's put(empty) throws the deferred failure.
    ConnectException failure =
        assertThrows(
            ConnectException.class,
            () -> fixture.runUntil(() -> false, Duration.ofSeconds(5), "failure"));
    assertNotNull(failure.getCause());
    assertEquals(0, group.count(State.ACCEPTED), "nothing of the failed put may be accepted");
    assertThrows(ConnectException.class, () -> fixture.driver.runCycle(Duration.ofMillis(10)));
    fixture.driver.stop();
    assertEquals(List.of(), group.received(AckType.RELEASE), "left to the engine's close");
    group.close(); // as the hosting task does
    assertEquals(3, group.count(State.AVAILABLE), "released for another attempt");
    assertEquals(List.of(), group.violations);
    assertTrue(task.stopped);
  }

  @Test
  void emptyPreCommitHoldsByDefaultAndAcceptsOnlyWhenConfigured() {
    // An S3-style sink: {} from preCommit while it buffers, like an empty map under the runtime.
    InMemoryShareGroup holding = new InMemoryShareGroup(time, LOCK_MS, 10);
    holding.produce("t", 0, null, "v");
    ScriptedSinkTask holder = new ScriptedSinkTask();
    holder.onPreCommit = offsets -> Map.of();
    DriverFixture held = start(holder, props(), holding);
    held.runFor(Duration.ofSeconds(90)); // three lock durations
    assertEquals(State.ACQUIRED, holding.rec("t", 0, 0).state, "held, not accepted");
    assertEquals(1, holding.rec("t", 0, 0).deliveryCount, "and renewed all along");
    assertTrue(holder.preCommits.size() > 10);
    holder.onPreCommit = offsets -> offsets; // it rolls its file
    held.runUntil(() -> allIn(holding, State.ACCEPTED), Duration.ofSeconds(5), "accepted");

    InMemoryShareGroup accepting = new InMemoryShareGroup(time, LOCK_MS, 10);
    accepting.produce("t", 0, null, "v");
    ScriptedSinkTask task = new ScriptedSinkTask();
    task.onPreCommit = offsets -> Map.of();
    DriverFixture fixture = start(task, props("share.commit.empty.precommit", "accept"), accepting);
    fixture.runUntil(() -> allIn(accepting, State.ACCEPTED), Duration.ofSeconds(5), "accepted");
  }

  @Test
  void aTaskThatOnlyEverReturnsAnEmptyMapFailsAfterTheStuckBoundAcceptingNothing() {
    // A sink that commits its own offsets (Iceberg's) returns {} from every preCommit: under
    // 'hold' nothing is ever ACCEPTed, and once nothing more is put the task must fail, naming
    // the sink's own offset management, instead of holding its records, renewed, for ever.
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 10, 20);
    ScriptedSinkTask task = new ScriptedSinkTask();
    task.onPreCommit = offsets -> Map.of();
    DriverFixture fixture =
        start(
            task,
            props("share.commit.interval.ms", "1000", "share.task.stuck.timeout.ms", "60000"),
            group);
    fixture.runUntil(() -> task.allPut().size() == 20, Duration.ofSeconds(5), "all put");
    long putAtMs = time.milliseconds();
    ConnectException failure =
        assertThrows(ConnectException.class, () -> fixture.runFor(Duration.ofMinutes(3)));
    long failedAfterMs = time.milliseconds() - putAtMs;
    assertTrue(
        failedAfterMs >= 60_000 && failedAfterMs <= 63_000,
        "failed " + failedAfterMs + " ms after the last put");
    String message = failure.getMessage();
    assertTrue(message.contains("manages its own offsets"), message);
    assertTrue(message.contains("share.task.stuck.timeout.ms=60000"), message);
    assertTrue(message.contains("none was ACCEPTed"), message);
    assertEquals(0L, group.count(State.ACCEPTED), "nothing ACCEPTed");
    assertEquals(20L, group.count(State.ACQUIRED), "held, renewed, until the task failed");
    assertEquals(1, group.rec("t", 0, 0).deliveryCount, "renewed all along");
    // As the runtime does with a failed task: stop it and close its member.
    fixture.driver.stop();
    group.close();
    assertEquals(20L, group.count(State.AVAILABLE), "released for other members");
    assertEquals(List.of(), group.violations);
  }

  @Test
  void recordsPutMeanwhileKeepABufferingTaskAlive() {
    // A sink that buffers until its file rolls returns {} while it fills the file: as long as
    // records keep being put, it is not stuck, however long the file takes.
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    ScriptedSinkTask task = new ScriptedSinkTask();
    task.onPreCommit = offsets -> Map.of();
    DriverFixture fixture =
        start(
            task,
            props("share.commit.interval.ms", "1000", "share.task.stuck.timeout.ms", "60000"),
            group);
    for (int i = 0; i < 12; i++) {
      group.produce("t", 0, null, "v" + i);
      fixture.runFor(Duration.ofSeconds(20)); // one record every 20 s: 4 minutes in all
    }
    assertEquals(12, task.allPut().size());
    task.onPreCommit = offsets -> offsets; // the file rolls
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(5), "accepted");
  }

  @Test
  void requestCommitRunsACommitCycleRightAway() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    ScriptedSinkTask task = new ScriptedSinkTask();
    task.onPut = records -> task.ctx().requestCommit();
    DriverFixture fixture = start(task, props("share.commit.interval.ms", "60000"), group);
    fixture.driver.runCycle(Duration.ofMillis(10));
    assertEquals(1, task.preCommits.size());
  }

  @Test
  void anIdlePollCommitsWhatWasPutWithoutWaitingForTheInterval() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 10, 3);
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture = start(task, props("share.commit.interval.ms", "60000"), group);
    fixture.driver.runCycle(Duration.ofMillis(10)); // puts 0..2: below share.commit.max.records
    assertEquals(0, task.preCommits.size());
    fixture.driver.runCycle(Duration.ofMillis(10)); // nothing polled: put(empty), commit
    assertEquals(1, task.preCommits.size());
    assertEquals(
        Map.of(new TopicPartition("t", 0), new OffsetAndMetadata(3)), task.preCommits.get(0));
    assertTrue(allIn(group, State.ACCEPTED), "confirmed by the put(empty) and accepted");
    // Nothing new put: further idle cycles do not commit again before the interval.
    fixture.runFor(Duration.ofMillis(300));
    assertEquals(1, task.preCommits.size());
    assertEquals(List.of(), group.violations);
  }

  @Test
  void reachingCommitMaxRecordsCommitsAndAcceptsOnlyConfirmedRecords() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 3, 30);
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture = start(task, onDemandCommits(5, 0), group);
    fixture.driver.runCycle(Duration.ofMillis(10)); // puts 0..2
    assertEquals(0, task.preCommits.size());
    fixture.driver.runCycle(Duration.ofMillis(10)); // puts 3..5: 6 put, commit
    assertEquals(1, task.preCommits.size());
    assertEquals(
        Map.of(new TopicPartition("t", 0), new OffsetAndMetadata(6)), task.preCommits.get(0));
    // 0..2 were confirmed by the second put; 3..5 wait for a later put (the deferred-failure rule).
    assertEquals(3, group.count(State.ACCEPTED));
    assertEquals(State.ACQUIRED, group.rec("t", 0, 3).state);
    fixture.driver.runCycle(Duration.ofMillis(10)); // puts 6..8, which confirms 3..5
    assertEquals(6, group.count(State.ACCEPTED));
    assertEquals(1, task.preCommits.size(), "3 put since the commit: below the threshold");
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(5), "all accepted");
    assertEquals(List.of(), group.violations);
  }

  @Test
  void acquiredRangesSpreadOverSeveralPollsAreAcceptedWhole() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 3, 25);
    group.acquiredRangeSize = 10; // 0-9, 10-19, 20-24; each reaches the driver in 3-4 polls
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture = start(task, onDemandCommits(2, 0), group);
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(10), "all accepted");
    assertFalse(group.received.isEmpty());
    for (Acknowledgements.Range range : group.received) {
      assertEquals(AckType.ACCEPT, range.type());
      assertEquals(0, range.firstOffset() % 10, "starts a range: " + range);
      assertTrue(
          (range.lastOffset() + 1) % 10 == 0 || range.lastOffset() == 24, "ends one: " + range);
    }
    assertTrue(task.preCommits.size() > 3, "commits within ranges: " + task.preCommits.size());
    assertEquals(List.of(), group.violations);
  }

  @Test
  void onDemandCommitsAreSpacedByCommitMinInterval() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 2, 40);
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture = start(task, onDemandCommits(1, 60000), group);
    for (int i = 0; i < 10; i++) {
      fixture.driver.runCycle(Duration.ofMillis(10));
    }
    assertEquals(1, task.preCommits.size(), "the first on-demand commit only");
    assertEquals(20, task.allPut().size());
  }

  @Test
  void rewindsAreIgnoredAndStopClosesCommitsAndReleases() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 10, 4);
    ScriptedSinkTask task = new ScriptedSinkTask();
    TopicPartition tp = new TopicPartition("t", 0);
    DriverFixture fixture = start(task, props("share.commit.interval.ms", "60000"), group);
    task.ctx().offset(tp, 0);
    task.ctx().offset(Map.of(tp, 1L));
    fixture.driver.runCycle(Duration.ofMillis(10)); // puts 0..3, no commit due
    task.ctx().pause(tp);
    group.produce("t", 0, null, "held back");
    fixture.driver.runCycle(Duration.ofMillis(10));
    assertEquals(0, group.count(State.ACCEPTED));
    fixture.driver.stop();
    assertEquals(4, group.count(State.ACCEPTED), "final commit after a confirming put(empty)");
    assertEquals(List.of(), group.received(AckType.RELEASE), "left to the engine's close");
    group.close(); // as the hosting task does
    assertEquals(State.AVAILABLE, group.rec("t", 0, 4).state, "never put: released");
    assertEquals(List.of(List.of(tp)), task.closes);
    assertTrue(task.stopped);
    assertEquals(List.of(), group.violations);
    fixture.driver.stop(); // idempotent
  }

  @Test
  void aRecordDeliveredAgainWhileHeldIsNotPutTwice() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    group.produce("t", 0, null, "v");
    ScriptedSinkTask task = new ScriptedSinkTask();
    task.onPreCommit = offsets -> Map.of(new TopicPartition("t", 0), new OffsetAndMetadata(0));
    DriverFixture fixture = start(task, props(), group);
    fixture.driver.runCycle(Duration.ofMillis(10));
    // Make the member see it again (as an engine may after a renewal): the ledger refuses it.
    group.rec("t", 0, 0).state = State.AVAILABLE;
    fixture.driver.runCycle(Duration.ofMillis(10));
    assertEquals(1, task.allPut().size());
    assertEquals(1, fixture.driver.metrics().snapshot().duplicatesIgnored());
  }

  @Test
  void aRecordRedeliveredBelowAnEarlierCommitIsAcceptedOnlyAfterAFlushThatFollowsItsPut() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 5, 10);
    InMemoryShareGroup.Member peer = group.member("peer");
    assertEquals(5, peer.poll(Duration.ZERO).size(), "another member holds 0..4");
    // A sink that buffers until flush (S3, HDFS, anything batching between puts).
    List<Long> buffered = new ArrayList<>();
    Set<Long> durable = new java.util.HashSet<>();
    boolean[] flushes = {true};
    ScriptedSinkTask task = new ScriptedSinkTask();
    task.onPut = records -> records.forEach(r -> buffered.add(r.kafkaOffset()));
    task.onPreCommit =
        offsets -> {
          if (!flushes[0]) {
            return Map.of(); // still buffering
          }
          durable.addAll(buffered);
          buffered.clear();
          return offsets;
        };
    List<Long> acceptedUnflushed = new ArrayList<>();
    group.onAccept =
        rec -> {
          if (!durable.contains(rec.offset)) {
            acceptedUnflushed.add(rec.offset);
          }
        };
    DriverFixture fixture = start(task, props(), group);
    fixture.runUntil(() -> group.count(State.ACCEPTED) == 5, Duration.ofSeconds(5), "5..9");
    // The peer stops and releases 0..4: they reach the driver below the offset (10) it committed.
    flushes[0] = false;
    peer.close();
    fixture.runFor(Duration.ofSeconds(10));
    assertTrue(task.allPut().stream().anyMatch(r -> r.kafkaOffset() < 5), "put again here");
    assertEquals(5, group.count(State.ACQUIRED), "held until a flush after their put");
    assertEquals(List.of(), acceptedUnflushed);
    flushes[0] = true;
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(5), "all accepted");
    assertEquals(List.of(), acceptedUnflushed);
    assertEquals(List.of(), group.violations);
  }

  @Test
  void redeliveredRecordsBelowWhatASinkCountingItsLastPutWasGivenAreAccepted() {
    // Debezium's JDBC sink (and S3-style sinks) answer preCommit with the offset after the last
    // record they were put, whatever they were passed. Records redelivered below what this task
    // was given then make that answer ambiguous; seen end to end (a worker killed -9): they stayed
    // uncovered, renewed for ever, and their partition's record-lock window stopped delivering.
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 5, 10);
    InMemoryShareGroup.Member peer = group.member("peer");
    assertEquals(5, peer.poll(Duration.ZERO).size(), "another member holds 0..4");
    Map<TopicPartition, OffsetAndMetadata> lastPut = new java.util.concurrent.ConcurrentHashMap<>();
    Set<Long> durable = java.util.concurrent.ConcurrentHashMap.newKeySet();
    ScriptedSinkTask task =
        new ScriptedSinkTask() {
          @Override
          public void close(java.util.Collection<TopicPartition> partitions) {
            super.close(partitions);
            partitions.forEach(lastPut::remove); // as Debezium's JdbcSinkConnectorTask.close
          }
        };
    task.onPut =
        records ->
            records.forEach(
                r -> {
                  durable.add(r.kafkaOffset()); // written inside put
                  lastPut.put(
                      new TopicPartition(r.topic(), r.kafkaPartition()),
                      new OffsetAndMetadata(r.kafkaOffset() + 1));
                });
    task.onPreCommit = offsets -> Map.copyOf(lastPut);
    List<Long> acceptedUnwritten = new ArrayList<>();
    group.onAccept =
        rec -> {
          if (!durable.contains(rec.offset)) {
            acceptedUnwritten.add(rec.offset);
          }
        };
    DriverFixture fixture = start(task, props(), group);
    fixture.runUntil(() -> group.count(State.ACCEPTED) == 5, Duration.ofSeconds(5), "5..9");
    int closesBefore = task.closes.size();
    peer.close(); // 0..4 come back, below the 9 this task was given
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(20), "0..4 accepted");
    assertEquals(closesBefore + 1, task.closes.size(), "the partition was closed and reopened");
    assertEquals(List.of(), acceptedUnwritten);
    assertEquals(List.of(), group.violations);
  }
}

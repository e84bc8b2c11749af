package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.InMemoryShareGroup.State;
import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.file.FileStreamSinkTask;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The driver against real Connect parts (Kafka's FileStreamSinkTask, JsonConverter,
 * StringConverter, RegexRouter, Filter + TopicNameMatches, the runtime's InternalSinkRecord) and an
 * in-memory share partition that enforces the broker's acquisition rules.
 */
class ShareSinkDriverTest {

  private final MockTime time = new SteppingMockTime();

  private static final long LOCK_MS = 30_000;

  @TempDir Path dir;
  private final List<DriverFixture> started = new ArrayList<>();

  @AfterEach
  void stopAll() {
    for (DriverFixture fixture : started) {
      fixture.driver.stop();
    }
  }

  private DriverFixture start(
      org.apache.kafka.connect.sink.SinkTask task,
      Map<String, String> props,
      InMemoryShareGroup group) {
    DriverFixture fixture = DriverFixture.start(task, props, group);
    started.add(fixture);
    return fixture;
  }

  /** errors.tolerance=all with a DLQ topic, the DLQ writes held until the test completes them. */
  private DriverFixture startTolerantWithDlq(
      ScriptedSinkTask task, InMemoryShareGroup group, HeldDeadLetterQueue dlq) {
    DriverFixture fixture =
        DriverFixture.start(
            task,
            props("errors.tolerance", "all", "errors.deadletterqueue.topic.name", "dlq"),
            group,
            dlq,
            false);
    started.add(fixture);
    return fixture;
  }

  /** Commits on demand only (the interval is out of reach), at most every minIntervalMs. */
  private static Map<String, String> onDemandCommits(int maxRecords, int minIntervalMs) {
    return props(
        "share.commit.interval.ms", "60000",
        "share.commit.max.records", String.valueOf(maxRecords),
        "share.commit.min.interval.ms", String.valueOf(minIntervalMs));
  }

  private static Map<String, String> props(String... kv) {
    Map<String, String> props = new HashMap<>();
    props.put("share.commit.interval.ms", "100");
    for (int i = 0; i < kv.length; i += 2) {
      props.put(kv[i], kv[i + 1]);
    }
    return props;
  }

  private static boolean allIn(InMemoryShareGroup group, State state) {
    return group.all().stream().allMatch(r -> r.state == state);
  }

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

  private static Map<String, String> withFile(Map<String, String> props, Path file) {
    props.put("file", file.toString());
    return props;
  }

  @Test
  void fileSinkWithJsonRoutingAndFilteringAcceptsEverythingAfterItIsWritten() throws IOException {
    Path file = dir.resolve("out.txt");
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 7);
    for (int i = 0; i < 10; i++) {
      group.produce("orders", i % 2, "k" + i, "{\"id\":" + i + "}");
    }
    for (int i = 0; i < 3; i++) {
      group.produce("audit", 0, null, "{\"audit\":" + i + "}");
    }
    // Each ACCEPT must find its record already in the file: ACK only after the sink wrote it.
    List<String> acceptedTooEarly = new ArrayList<>();
    group.onAccept =
        rec -> {
          try {
            if (rec.topic.equals("orders")
                && !Files.readString(file)
                    .contains(rec.valueString().replace("\"", "").replace(":", "="))) {
              acceptedTooEarly.add(rec.topic + "@" + rec.offset);
            }
          } catch (IOException e) {
            acceptedTooEarly.add(e.toString());
          }
        };
    DriverFixture fixture =
        start(
            new FileStreamSinkTask(),
            props(
                "file", file.toString(),
                "value.converter", "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable", "false",
                "transforms", "route,dropAudit",
                "transforms.route.type", "org.apache.kafka.connect.transforms.RegexRouter",
                "transforms.route.regex", "orders",
                "transforms.route.replacement", "orders-routed",
                "transforms.dropAudit.type", "org.apache.kafka.connect.transforms.Filter",
                "transforms.dropAudit.predicate", "isAudit",
                "predicates", "isAudit",
                "predicates.isAudit.type",
                    "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
                "predicates.isAudit.pattern", "audit"),
            group);

    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(10), "all accepted");

    List<String> lines = Files.readAllLines(file);
    assertEquals(10, lines.size(), "filtered audit records must not reach the file: " + lines);
    for (int i = 0; i < 10; i++) {
      assertTrue(lines.contains("{id=" + i + "}"), "missing " + i + " in " + lines);
    }
    assertEquals(List.of(), acceptedTooEarly);
    assertEquals(List.of(), group.violations);
    // The task saw its partitions in original coordinates, never the routed topic.
    assertEquals(
        Set.of(
            new TopicPartition("orders", 0),
            new TopicPartition("orders", 1),
            new TopicPartition("audit", 0)),
        fixture.context.assignment());
    // One contiguous ACCEPT range per partition and commit, not one per record.
    assertTrue(
        group.received(AckType.ACCEPT).size() < 13,
        "ranges not compacted: " + group.received(AckType.ACCEPT));
    assertEquals(13, fixture.driver.metrics().snapshot().recordsAccepted());
  }

  @Test
  void recordsCarryOriginalCoordinatesAndAreInternalSinkRecords() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    group.produce("orders", 3, "k", "v");
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture =
        start(
            task,
            props(
                "transforms", "route",
                "transforms.route.type", "org.apache.kafka.connect.transforms.RegexRouter",
                "transforms.route.regex", "(.*)",
                "transforms.route.replacement", "$1-copy"),
            group);
    fixture.runUntil(() -> !task.allPut().isEmpty(), Duration.ofSeconds(5), "a put");
    SinkRecord record = task.allPut().get(0);
    assertEquals("orders-copy", record.topic());
    assertEquals("orders", record.originalTopic());
    assertEquals(3, record.originalKafkaPartition());
    assertEquals(0, record.originalKafkaOffset());
    assertEquals("v", record.value());
    assertNotNull(record.timestamp());
    assertEquals(
        "org.apache.kafka.connect.runtime.InternalSinkRecord", record.getClass().getName());
    assertEquals(List.of(List.of(new TopicPartition("orders", 3))), task.opens);
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
  void converterFailureWithToleranceNoneFailsNamingTheRecordAndReleasesIt() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    group.produce("orders", 2, null, "{\"ok\":1}");
    group.produce("orders", 2, null, "{not json");
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture =
        start(
            task,
            props(
                "value.converter", "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable", "false"),
            group);
    ConnectException failure =
        assertThrows(ConnectException.class, () -> fixture.driver.runCycle(Duration.ofMillis(50)));
    assertTrue(failure.getMessage().contains("topic=orders"), failure.getMessage());
    assertTrue(failure.getMessage().contains("partition=2"), failure.getMessage());
    assertTrue(failure.getMessage().contains("offset=1"), failure.getMessage());
    assertEquals(State.AVAILABLE, group.rec("orders", 2, 1).state, "released, not rejected");
    assertEquals(List.of(), group.received(AckType.REJECT));
    assertEquals(List.of(), group.violations);
  }

  @Test
  void converterFailureWithToleranceAllIsRejectedAfterItsDlqWriteAndTheRestGoesOn() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    group.produce("orders", 0, null, "{\"ok\":1}");
    group.produce("orders", 0, null, "{not json");
    group.produce("orders", 0, null, "{\"ok\":2}");
    ScriptedSinkTask task = new ScriptedSinkTask();
    HeldDeadLetterQueue dlq = new HeldDeadLetterQueue();
    Map<String, String> props =
        props(
            "value.converter", "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable", "false",
            "errors.tolerance", "all",
            "errors.log.enable", "true",
            "errors.log.include.messages", "true",
            "errors.deadletterqueue.topic.name", "dlq");
    DriverFixture fixture = DriverFixture.start(task, props, group, dlq, false);
    started.add(fixture);
    fixture.runFor(Duration.ofMillis(400));
    assertEquals(2, task.allPut().size());
    assertEquals(1, dlq.writes.size());
    assertEquals(ErrorStage.VALUE_CONVERTER, dlq.writes.get(0).stage);
    assertEquals("{not json", new String(dlq.writes.get(0).record.value(), StandardCharsets.UTF_8));
    // The DLQ write is not acknowledged yet: no REJECT, and nothing of its partition ACCEPTed.
    assertEquals(State.ACQUIRED, group.rec("orders", 0, 1).state);
    assertEquals(0, group.count(State.ACCEPTED));
    dlq.completeAll();
    fixture.runUntil(
        () -> group.rec("orders", 0, 1).state == State.REJECTED, Duration.ofSeconds(5), "rejected");
    fixture.runUntil(() -> group.count(State.ACCEPTED) == 2, Duration.ofSeconds(5), "accepted");
    assertEquals(List.of(), group.violations);
  }

  @Test
  void retriableConverterFailuresAreRetriedWithinErrorsRetryTimeout() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    group.produce("t", 0, null, "v");
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture =
        start(
            task,
            props(
                "value.converter", FlakyConverter.class.getName(),
                "value.converter.failures", "2",
                "errors.retry.timeout", "10000",
                "errors.retry.delay.max.ms", "500"),
            group);
    long start = time.milliseconds();
    fixture.runUntil(() -> !task.allPut().isEmpty(), Duration.ofSeconds(10), "a put");
    assertTrue(
        time.milliseconds() - start >= 300,
        "backoff of 300 ms, then a random delay below the 500 ms cap");
    assertEquals("v", task.allPut().get(0).value());
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(5), "accepted");
  }

  @Test
  void aRetriableConverterFailureWithoutRetriesIsToleratedAsAFailure() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    group.produce("t", 0, null, "v");
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture =
        start(
            task,
            props(
                "value.converter", FlakyConverter.class.getName(),
                "value.converter.failures", "1",
                "errors.tolerance", "all"),
            group);
    fixture.runUntil(
        () -> group.rec("t", 0, 0).state == State.REJECTED, Duration.ofSeconds(5), "rejected");
    assertTrue(task.allPut().isEmpty());
  }

  @Test
  void brokerWrittenDlqNeedsOnlyAReject() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    group.produce("orders", 0, null, "{bad");
    ScriptedSinkTask task = new ScriptedSinkTask();
    HeldDeadLetterQueue dlq = new HeldDeadLetterQueue();
    DriverFixture fixture =
        DriverFixture.start(
            task,
            props(
                "value.converter", "org.apache.kafka.connect.json.JsonConverter",
                "errors.tolerance", "all",
                "errors.deadletterqueue.topic.name", "dlq"),
            group,
            dlq,
            true);
    started.add(fixture);
    fixture.runUntil(
        () -> group.rec("orders", 0, 0).state == State.REJECTED, Duration.ofSeconds(5), "reject");
    assertEquals(0, dlq.writes.size(), "the broker writes the DLQ record, not us");
  }

  @Test
  void errantRecordReporterFindsTheHeldRecordFromAnotherThread() throws Exception {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 10, 3);
    ScriptedSinkTask task = new ScriptedSinkTask();
    HeldDeadLetterQueue dlq = new HeldDeadLetterQueue();
    task.onPut =
        records -> {
          for (SinkRecord record : records) {
            if ("v2".equals(record.value())) {
              // A sink's own writer thread reports while put waits for it.
              Thread writer =
                  new Thread(
                      () ->
                          task.ctx()
                              .errantRecordReporter()
                              .report(record, new RuntimeException("bad")));
              writer.start();
              try {
                writer.join();
              } catch (InterruptedException e) {
                throw new RuntimeException(e);
              }
            }
          }
        };
    DriverFixture fixture = startTolerantWithDlq(task, group, dlq);
    fixture.runFor(Duration.ofMillis(200));
    assertEquals(1, dlq.writes.size(), "the raw record was found");
    dlq.completeAll();
    fixture.runUntil(
        () -> group.count(State.REJECTED) == 1, Duration.ofSeconds(5), "the record rejected");
    assertEquals(State.REJECTED, group.rec("t", 0, 2).state);
  }

  @Test
  void errantRecordReporterRejectsOnceTheWriteIsDoneAndHoldsThePartitionBack() throws Exception {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 10, 3);
    ScriptedSinkTask task = new ScriptedSinkTask();
    HeldDeadLetterQueue dlq = new HeldDeadLetterQueue();
    List<Future<Void>> futures = new ArrayList<>();
    task.onPut =
        records -> {
          for (SinkRecord record : records) {
            if ("v1".equals(record.value())) {
              futures.add(
                  task.ctx().errantRecordReporter().report(record, new RuntimeException("bad")));
            }
          }
        };
    DriverFixture fixture = startTolerantWithDlq(task, group, dlq);
    assertNotNull(task.ctx().errantRecordReporter());
    fixture.runFor(Duration.ofMillis(400));
    assertEquals(1, futures.size());
    assertFalse(futures.get(0).isDone());
    assertEquals(0, group.count(State.ACCEPTED), "partition waits for the DLQ write");
    assertEquals(ErrorStage.TASK_PUT, dlq.writes.get(0).stage);
    dlq.completeAll();
    assertNull(futures.get(0).get());
    fixture.runUntil(
        () -> group.count(State.ACCEPTED) == 2 && group.count(State.REJECTED) == 1,
        Duration.ofSeconds(5),
        "2 accepted and 1 rejected");
    assertEquals(State.REJECTED, group.rec("t", 0, 1).state);
  }

  @Test
  void reporterIsOfferedOnlyAsTheRuntimeDoesAndThrowsUnderToleranceNone() {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    ScriptedSinkTask plain = new ScriptedSinkTask();
    start(plain, props("errors.tolerance", "all"), group);
    assertNull(plain.ctx().errantRecordReporter(), "tolerance=all alone gives no reporter");

    group.produce("t", 0, null, "v");
    ScriptedSinkTask strict = new ScriptedSinkTask();
    List<Throwable> thrown = new ArrayList<>();
    strict.onPut =
        records -> {
          ErrantRecordReporter reporter = strict.ctx().errantRecordReporter();
          for (SinkRecord record : records) {
            try {
              reporter.report(record, new RuntimeException("bad"));
            } catch (ConnectException e) {
              thrown.add(e);
            }
          }
        };
    DriverFixture fixture = start(strict, props("errors.log.enable", "true"), group);
    fixture.runUntil(() -> !thrown.isEmpty(), Duration.ofSeconds(5), "report to throw");
    assertTrue(thrown.get(0).getMessage().contains("Tolerance exceeded"));
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
  void everyCallIntoPluginsRunsUnderThePluginLoader() throws Exception {
    InMemoryShareGroup group = new InMemoryShareGroup(time, LOCK_MS, 10);
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture = start(task, props(), group);
    try (URLClassLoader foreign = new URLClassLoader(new URL[0], null)) {
      Thread.currentThread().setContextClassLoader(foreign);
      try {
        fixture.driver.runCycle(Duration.ofMillis(10));
        assertSame(foreign, Thread.currentThread().getContextClassLoader(), "restored");
      } finally {
        Thread.currentThread().setContextClassLoader(ShareSinkDriverTest.class.getClassLoader());
      }
    }
    assertSame(ScriptedSinkTask.class.getClassLoader(), task.putLoaders.get(0));
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
  void aFailedEngineFailsTheTaskWithItsMessageAndTheRecordsAreReleasedAtClose() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 10, 3);
    ScriptedSinkTask task = new ScriptedSinkTask();
    task.onPreCommit = offsets -> Map.of();
    DriverFixture fixture = start(task, props(), group);
    fixture.driver.runCycle(Duration.ofMillis(10));
    assertEquals(3, fixture.driver.inFlight());
    // The native engine's member failed (a panicking fetcher): every poll reports it.
    group.pollFailure =
        new io.sharesink.engine.EngineException(
            io.sharesink.engine.EngineException.Kind.INTERNAL,
            "engine task fetcher-1 panicked: index out of bounds");
    ConnectException failure =
        assertThrows(ConnectException.class, () -> fixture.driver.runCycle(Duration.ofMillis(10)));
    assertTrue(
        String.valueOf(failure.getCause()).contains("fetcher-1 panicked: index out of bounds"),
        "the panic's message reaches the task's failure: " + failure);
    assertSame(
        failure,
        assertThrows(ConnectException.class, () -> fixture.driver.runCycle(Duration.ofMillis(10))),
        "the task stays failed");
    fixture.driver.stop();
    group.close();
    assertEquals(3, group.count(State.AVAILABLE), "released at close for other members");
    assertEquals(List.of(), group.violations);
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
  void theDeliveryCountHeaderCountsRedeliveriesAndTransformsSeeIt() {
    long lock = 1_000;
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, lock, 10, 2);
    ScriptedSinkTask task = new ScriptedSinkTask();
    AtomicInteger attempts = new AtomicInteger();
    task.onPut =
        records -> {
          if (!records.isEmpty() && attempts.incrementAndGet() == 1) {
            // The locks run out while the put fails: the broker delivers the records again.
            time.setCurrentTimeMs(time.milliseconds() + 1_500);
            task.ctx().timeout(10);
            throw new RetriableException("database busy");
          }
        };
    // A transform conditioned on the header: it only fires when the header is already there.
    DriverFixture fixture =
        start(
            task,
            props(
                "share.delivery.count.header", "x-delivery-count",
                "transforms", "seen",
                "transforms.seen.type", "org.apache.kafka.connect.transforms.RegexRouter",
                "transforms.seen.regex", "(.*)",
                "transforms.seen.replacement", "$1-counted",
                "transforms.seen.predicate", "counted",
                "predicates", "counted",
                "predicates.counted.type",
                    "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
                "predicates.counted.name", "x-delivery-count"),
            group);
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(10), "all accepted");

    List<List<SinkRecord>> nonEmpty = task.puts.stream().filter(p -> !p.isEmpty()).toList();
    assertEquals(2, nonEmpty.size(), "the failed put, then the redelivered records");
    for (int delivery = 1; delivery <= 2; delivery++) {
      for (SinkRecord record : nonEmpty.get(delivery - 1)) {
        List<org.apache.kafka.connect.header.Header> counts = new ArrayList<>();
        record.headers().allWithName("x-delivery-count").forEachRemaining(counts::add);
        assertEquals(1, counts.size(), record + ": one delivery count header");
        assertEquals(delivery, counts.get(0).value(), record + ": delivery " + delivery);
        assertEquals(org.apache.kafka.connect.data.Schema.INT32_SCHEMA, counts.get(0).schema());
        assertEquals("t-counted", record.topic(), "the transform saw the header");
      }
    }
    assertEquals(List.of(), group.violations);
  }

  @Test
  void noDeliveryCountHeaderUnlessAsked() {
    InMemoryShareGroup group = InMemoryShareGroup.withValues(time, LOCK_MS, 10, 2);
    ScriptedSinkTask task = new ScriptedSinkTask();
    DriverFixture fixture = start(task, props(), group);
    fixture.runUntil(() -> allIn(group, State.ACCEPTED), Duration.ofSeconds(10), "all accepted");
    assertTrue(
        task.puts.stream().flatMap(List::stream).allMatch(r -> r.headers().isEmpty()),
        "no header added by default");
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

  /** A DLQ whose writes complete when the test says so. */
  static final class HeldDeadLetterQueue implements DeadLetterQueue {
    record Write(RawRecord record, ErrorStage stage, CompletableFuture<Void> future) {}

    final List<Write> writes = new ArrayList<>();

    @Override
    public synchronized CompletableFuture<Void> write(
        RawRecord record, ErrorStage stage, Class<?> executingClass, Throwable error) {
      CompletableFuture<Void> future = new CompletableFuture<>();
      writes.add(new Write(record, stage, future));
      return future;
    }

    synchronized void completeAll() {
      writes.forEach(w -> w.future.complete(null));
    }

    @Override
    public void close() {}
  }
}

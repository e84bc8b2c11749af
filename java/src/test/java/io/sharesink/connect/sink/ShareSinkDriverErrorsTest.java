package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.InMemoryShareGroup.State;
import io.sharesink.engine.AckType;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.junit.jupiter.api.Test;

/**
 * Failures: converter failures under {@code errors.tolerance} and {@code errors.retry.timeout}, the
 * dead-letter queue (written by Connect or by the broker), the errant record reporter, a failed
 * engine.
 */
class ShareSinkDriverErrorsTest extends DriverTestBase {

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
    assertEquals(ErrorStage.VALUE_CONVERTER, dlq.writes.get(0).stage());
    assertEquals(
        "{not json", new String(dlq.writes.get(0).record().value(), StandardCharsets.UTF_8));
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
    assertEquals(ErrorStage.TASK_PUT, dlq.writes.get(0).stage());
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
}

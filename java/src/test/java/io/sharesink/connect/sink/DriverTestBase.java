package io.sharesink.connect.sink;

import io.sharesink.connect.sink.InMemoryShareGroup.State;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.common.utils.MockTime;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the driver's tests share: a stepping {@code MockTime}, drivers started on an in-memory share
 * group and stopped after each test, the properties they start with, a DLQ whose writes the test
 * completes. The tests, by concern: {@link ShareSinkDriverTest} (records and plugins), {@link
 * ShareSinkDriverCommitTest} (what is ACCEPTed when), {@link ShareSinkDriverLocksTest} (renewals,
 * stuck and paused tasks), {@link ShareSinkDriverErrorsTest} (converter failures, DLQ, errant
 * record reporter).
 */
abstract class DriverTestBase {

  final MockTime time = new SteppingMockTime();

  static final long LOCK_MS = 30_000;

  @TempDir Path dir;
  final List<DriverFixture> started = new ArrayList<>();

  @AfterEach
  void stopAll() {
    for (DriverFixture fixture : started) {
      fixture.driver.stop();
    }
  }

  DriverFixture start(
      org.apache.kafka.connect.sink.SinkTask task,
      Map<String, String> props,
      InMemoryShareGroup group) {
    DriverFixture fixture = DriverFixture.start(task, props, group);
    started.add(fixture);
    return fixture;
  }

  /** errors.tolerance=all with a DLQ topic, the DLQ writes held until the test completes them. */
  DriverFixture startTolerantWithDlq(
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
  static Map<String, String> onDemandCommits(int maxRecords, int minIntervalMs) {
    return props(
        "share.commit.interval.ms", "60000",
        "share.commit.max.records", String.valueOf(maxRecords),
        "share.commit.min.interval.ms", String.valueOf(minIntervalMs));
  }

  static Map<String, String> props(String... kv) {
    Map<String, String> props = new HashMap<>();
    props.put("share.commit.interval.ms", "100");
    for (int i = 0; i < kv.length; i += 2) {
      props.put(kv[i], kv[i + 1]);
    }
    return props;
  }

  static boolean allIn(InMemoryShareGroup group, State state) {
    return group.all().stream().allMatch(r -> r.state == state);
  }

  static Map<String, String> withFile(Map<String, String> props, Path file) {
    props.put("file", file.toString());
    return props;
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

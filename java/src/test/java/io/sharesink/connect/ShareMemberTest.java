package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.sharesink.connect.ShareSinkTaskLifecycleTest.IdleEngine;
import io.sharesink.connect.sink.KeeperTimer;
import io.sharesink.connect.sink.ShareSinkDriverBuilder;
import io.sharesink.engine.EngineException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.junit.jupiter.api.Test;

/**
 * A started share member on its own: a real driver hosting a recording legacy task over an {@link
 * IdleEngine}, on a {@link MockTime} that only the engine's polls move. Nothing here sleeps.
 */
class ShareMemberTest {

  private static final String TASK = "files-1";

  private final MockTime clock = new MockTime(0, 1_700_000_000_000L, 0);

  /** What the legacy task and the engine were asked to do, in order. */
  private final List<String> events = new CopyOnWriteArrayList<>();

  private final RecordingEngine engine = new RecordingEngine(clock, events);

  /** An idle engine that also records its close among the legacy task's calls. */
  static class RecordingEngine extends IdleEngine {
    private final List<String> events;

    RecordingEngine(MockTime clock, List<String> events) {
      super(clock);
      this.events = events;
    }

    @Override
    public void close() {
      events.add("engine.close");
      super.close();
    }
  }

  /** A legacy task that records its stop; {@code stopFailure}, when set, is thrown from it. */
  static class RecordingSinkTask extends SinkTask {
    final List<String> events;
    Error stopFailure;

    RecordingSinkTask(List<String> events) {
      this.events = events;
    }

    @Override
    public String version() {
      return "test";
    }

    @Override
    public void start(Map<String, String> props) {
      events.add("task.start");
    }

    @Override
    public void put(Collection<SinkRecord> records) {}

    @Override
    public void stop() {
      events.add("task.stop");
      if (stopFailure != null) {
        throw stopFailure;
      }
    }
  }

  private final RecordingSinkTask legacy = new RecordingSinkTask(events);

  private ShareMember started() {
    Map<String, String> props =
        Map.of(
            "key.converter", "org.apache.kafka.connect.storage.StringConverter",
            "value.converter", "org.apache.kafka.connect.storage.StringConverter");
    return new ShareMember(
        new ShareSinkDriverBuilder()
            .task(legacy)
            .taskProps(props)
            .taskName(TASK)
            .engine(engine)
            .time(clock)
            .keeperTimer(KeeperTimer.none())
            .start(),
        engine,
        TASK);
  }

  @Test
  void aCyclePollsTheEngineForThePollTimeoutOnTheClock() {
    ShareMember member = started();
    long before = clock.milliseconds();
    member.runCycle(Duration.ofMillis(2_000));
    assertEquals(2_000, clock.milliseconds() - before, "an idle poll waits its whole timeout");
    member.stop();
  }

  @Test
  void aWakeupFromAnotherThreadEndsARunningCycleWithoutTheClockMoving() throws Exception {
    ShareMember member = started();
    engine.untilWoken = true;
    long before = clock.milliseconds();
    BlockingCall<Boolean> cycle = BlockingCall.start(() -> member.runCycle(Duration.ofHours(1)));
    cycle.awaitBlocked();
    member.wakeup();
    assertEquals(true, cycle.result());
    assertEquals(before, clock.milliseconds());
    member.stop();
  }

  @Test
  void subscribeReplacesTheEnginesTopics() {
    ShareMember member = started();
    member.subscribe(List.of("orders-1", "orders-2"));
    assertEquals(List.of(List.of("orders-1", "orders-2")), engine.subscriptions);
    member.stop();
  }

  @Test
  void aSubscriptionTheEngineRefusesFailsNamingTheTask() {
    EngineException refused =
        new EngineException(EngineException.Kind.AUTHORIZATION, "not allowed to read orders-2");
    RecordingEngine refusing =
        new RecordingEngine(clock, events) {
          @Override
          public void subscribe(Collection<String> topics) {
            throw refused;
          }
        };
    ShareMember member = new ShareMember(null, refusing, TASK);
    ConnectException e =
        assertThrows(ConnectException.class, () -> member.subscribe(List.of("orders-2")));
    assertEquals(
        "files-1: cannot change the subscription: AUTHORIZATION: not allowed to read orders-2",
        e.getMessage());
    assertSame(refused, e.getCause());
  }

  @Test
  void stopStopsTheLegacyTaskThenClosesTheEngine() {
    ShareMember member = started();
    member.stop();
    assertEquals(List.of("task.start", "task.stop", "engine.close"), events);
  }

  @Test
  void theEngineIsClosedEvenWhenTheLegacyTasksStopThrows() {
    ShareMember member = started();
    legacy.stopFailure = new NoClassDefFoundError("com/example/Pool");
    // The driver logs an exception from the legacy task's stop; an Error passes through it.
    Error e = assertThrows(NoClassDefFoundError.class, member::stop);
    assertSame(legacy.stopFailure, e);
    assertEquals(1, engine.closes.get(), "closed in spite of the failed stop");
  }

  @Test
  void closeQuietlyLogsAFailedCloseAndSkipsAMissingEngine() {
    RecordingEngine failing =
        new RecordingEngine(clock, events) {
          @Override
          public void close() {
            super.close();
            throw new IllegalStateException("already closed by the broker's fence");
          }
        };
    assertDoesNotThrow(() -> ShareMember.closeQuietly(failing, TASK));
    assertEquals(1, failing.closes.get());
    assertEquals(List.of("engine.close"), events);
    assertDoesNotThrow(() -> ShareMember.closeQuietly(null, TASK));
  }
}

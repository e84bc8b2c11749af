package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.kafka.common.utils.MockTime;
import org.junit.jupiter.api.Test;

/** The task's poll/stop gate on a {@link MockTime}: nothing here sleeps. */
class CycleGateTest {

  private final MockTime time = new MockTime(0, 1_000_000L, 0);
  private final CycleGate gate = new CycleGate(time);

  @Test
  void aStopDoesNotEnterWhileACycleRunsPastItsDeadline() {
    gate.enter();
    assertFalse(gate.enter(time.milliseconds()), "a cycle runs and the deadline is now");
    gate.leave();
    assertTrue(gate.enter(time.milliseconds()), "free again: a stop enters at once");
    gate.leave();
  }

  @Test
  void aStopEntersWhenTheRunningCycleLeavesBeforeItsDeadline() throws Exception {
    gate.enter();
    BlockingCall<Boolean> stop = BlockingCall.start(() -> gate.enter(time.milliseconds() + 5_000));
    stop.awaitBlocked();
    gate.leave();
    assertTrue(stop.result(), "the cycle left before the deadline");
    gate.leave();
  }

  @Test
  void aStopGivesUpWhenTheTasksClockPassesItsDeadline() throws Exception {
    gate.enter();
    BlockingCall<Boolean> stop = BlockingCall.start(() -> gate.enter(time.milliseconds() + 5_000));
    stop.awaitBlocked();
    time.sleep(5_001);
    assertFalse(stop.result(), "the deadline passed on the task's clock");
    // The cycle still holds the gate; it leaves as usual and the next poll enters.
    gate.leave();
    gate.enter();
    gate.leave();
  }

  @Test
  void aPollWaitsForTheCleanupWhateverTheClockSays() throws Exception {
    assertTrue(gate.enter(time.milliseconds()), "a stop's cleanup");
    BlockingCall<Boolean> poll = BlockingCall.start((Runnable) gate::enter);
    poll.awaitBlocked();
    time.sleep(60_000);
    poll.awaitBlocked(); // a poll has no deadline: it waits its turn
    gate.leave();
    assertTrue(poll.result());
    assertFalse(gate.enter(time.milliseconds()), "the poll holds the gate now");
    gate.leave();
  }
}

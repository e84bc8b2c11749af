package io.sharesink.connect.sink;

import java.util.function.Supplier;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.utils.MockTime;

/**
 * A {@link MockTime} whose {@link #sleep} passes in steps of at most {@link #STEP_MS}, telling its
 * listeners at each: time on it moves the way real time does for another thread (the lock keeper's,
 * see {@link MockTimeKeeperTimer}) while the sleeping one waits. {@link #setCurrentTimeMs} still
 * jumps in one go, for a test that models a thread getting no turn.
 *
 * <p>A {@link #waitObject} passes time the same way, step by step, until its condition holds or its
 * deadline comes: the waiting thread is the one that drives this clock (a driver's stop waiting for
 * DLQ writes, a task waiting for a topic), and a listener or the condition's owner may meet the
 * condition at any step. {@link MockTime}'s own waitObject would wait for another thread to move
 * the clock.
 */
public final class SteppingMockTime extends MockTime {

  public static final long STEP_MS = 50;

  /** Starts at a fixed instant, so that runs replay exactly. */
  public SteppingMockTime() {
    super(0, 1_700_000_000_000L, 0);
  }

  @Override
  public void sleep(long ms) {
    for (long left = ms; left > 0; left -= STEP_MS) {
      super.sleep(Math.min(STEP_MS, left));
    }
  }

  @Override
  public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
    while (!condition.get()) {
      long left = deadlineMs - milliseconds();
      if (left <= 0) {
        throw new TimeoutException("Condition not satisfied before deadline");
      }
      super.sleep(Math.min(STEP_MS, left));
    }
  }
}

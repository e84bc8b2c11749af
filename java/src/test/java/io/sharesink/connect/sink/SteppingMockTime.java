package io.sharesink.connect.sink;

import org.apache.kafka.common.utils.MockTime;

/**
 * A {@link MockTime} whose {@link #sleep} passes in steps of at most {@link #STEP_MS}, telling its
 * listeners at each: time on it moves the way real time does for another thread (the lock keeper's,
 * see {@link MockTimeKeeperTimer}) while the sleeping one waits. {@link #setCurrentTimeMs} still
 * jumps in one go, for a test that models a thread getting no turn.
 */
final class SteppingMockTime extends MockTime {

  static final long STEP_MS = 50;

  /** Starts at a fixed instant, so that runs replay exactly. */
  SteppingMockTime() {
    super(0, 1_700_000_000_000L, 0);
  }

  @Override
  public void sleep(long ms) {
    for (long left = ms; left > 0; left -= STEP_MS) {
      super.sleep(Math.min(STEP_MS, left));
    }
  }
}

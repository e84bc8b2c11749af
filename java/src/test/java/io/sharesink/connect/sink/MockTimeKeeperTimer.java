package io.sharesink.connect.sink;

import org.apache.kafka.common.utils.MockTime;

/**
 * A {@link KeeperTimer} on a {@link MockTime}: runs the tick whenever the mock clock moves past its
 * next due time, on the thread that moved it (a poll waiting, a sink sleeping inside put), as the
 * keeper's own thread would have at that moment. Time must move in steps for that, as real time
 * does: see {@link SteppingMockTime}.
 */
final class MockTimeKeeperTimer implements KeeperTimer {

  private final MockTime time;

  MockTimeKeeperTimer(MockTime time) {
    this.time = time;
  }

  @Override
  public Scheduled every(long periodMs, Runnable tick) {
    long[] nextAtMs = {time.milliseconds() + periodMs};
    boolean[] cancelled = {false};
    time.addListener(
        () -> {
          long now = time.milliseconds();
          if (!cancelled[0] && now >= nextAtMs[0]) {
            nextAtMs[0] = now + periodMs;
            tick.run();
          }
        });
    return () -> cancelled[0] = true;
  }
}

package io.sharesink.connect;

import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.utils.Time;

/**
 * The task's poll/stop gate: one share cycle, or the cleanup, at a time. A poll waits its turn as
 * long as it takes; a stop waits until a deadline on the task's clock, so a cycle stuck in the
 * legacy task cannot hold it past Connect's shutdown grace. Whoever leaves wakes the waiters.
 */
final class CycleGate {

  private final Time time;

  /** Guards {@link #busy}; whoever ends a cycle or the cleanup notifies it. */
  private final Object monitor = new Object();

  /** A cycle or the cleanup runs; guarded by {@link #monitor}. */
  private boolean busy;

  CycleGate(Time time) {
    this.time = time;
  }

  /** Waits, as long as it takes, until no cycle or cleanup runs, and starts one (a poll). */
  void enter() {
    boolean interrupted = false;
    synchronized (monitor) {
      while (busy) {
        try {
          monitor.wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      busy = true;
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * As {@link #enter()}, waiting until {@code deadlineMs} on the task's clock at most (a stop);
   * returns whether it entered.
   */
  boolean enter(long deadlineMs) {
    synchronized (monitor) {
      try {
        time.waitObject(monitor, () -> !busy, deadlineMs);
      } catch (TimeoutException e) {
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
      busy = true;
      return true;
    }
  }

  void leave() {
    synchronized (monitor) {
      busy = false;
      monitor.notifyAll();
    }
  }
}

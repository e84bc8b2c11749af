package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * A call on a thread of its own, which a test sees block on a monitor (its thread WAITING, as in
 * {@code Object.wait} and {@code MockTime.waitObject}) and then end: no test sleeps to guess.
 */
final class BlockingCall<T> {
  private final Thread thread;
  private final AtomicReference<T> result = new AtomicReference<>();

  private BlockingCall(Supplier<T> call) {
    thread = new Thread(() -> result.set(call.get()), "blocking-call");
    thread.setDaemon(true);
  }

  static <T> BlockingCall<T> start(Supplier<T> call) {
    BlockingCall<T> blocking = new BlockingCall<>(call);
    blocking.thread.start();
    return blocking;
  }

  static BlockingCall<Boolean> start(Runnable call) {
    return start(
        () -> {
          call.run();
          return true;
        });
  }

  /** Returns once the thread waits on a monitor; fails if the call returned instead. */
  void awaitBlocked() {
    Thread.State state;
    while ((state = thread.getState()) != Thread.State.WAITING
        && state != Thread.State.TERMINATED) {
      Thread.onSpinWait();
    }
    assertEquals(Thread.State.WAITING, state, "the call returned instead of waiting");
  }

  /** The call's result once it ends (within 30 s, or the test fails). */
  T result() throws InterruptedException {
    thread.join(30_000);
    assertFalse(thread.isAlive(), "the call still waits");
    return result.get();
  }
}

package io.sharesink.connect.sink;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Runs {@link LockKeeper#tick} periodically on a thread that is not the task thread. In a worker,
 * one daemon thread serves every sharesink task of the JVM ({@link #shared()}): a tick only queues
 * renewals on the engine, which never blocks for long. Tests pass a timer driven by their mock
 * clock instead.
 */
public interface KeeperTimer {

  /** A scheduled tick; closing it cancels it. */
  interface Scheduled extends AutoCloseable {
    @Override
    void close();
  }

  /** Runs {@code tick} every {@code periodMs} until the result is closed. */
  Scheduled every(long periodMs, Runnable tick);

  /** The JVM-wide keeper thread. */
  static KeeperTimer shared() {
    return SharedKeeperThread.INSTANCE;
  }

  /** A timer that never ticks: renewals then happen on the task thread only. */
  static KeeperTimer none() {
    return (periodMs, tick) -> () -> {};
  }
}

/** The JVM-wide daemon thread behind {@link KeeperTimer#shared()}. */
final class SharedKeeperThread implements KeeperTimer {

  static final SharedKeeperThread INSTANCE = new SharedKeeperThread();

  private final ScheduledThreadPoolExecutor executor;

  private SharedKeeperThread() {
    executor =
        new ScheduledThreadPoolExecutor(
            1,
            runnable -> {
              Thread thread = new Thread(runnable, "sharesink-lock-keeper");
              thread.setDaemon(true);
              return thread;
            });
    executor.setRemoveOnCancelPolicy(true);
  }

  @Override
  public Scheduled every(long periodMs, Runnable tick) {
    ScheduledFuture<?> future =
        executor.scheduleWithFixedDelay(tick, periodMs, periodMs, TimeUnit.MILLISECONDS);
    return () -> future.cancel(false);
  }
}

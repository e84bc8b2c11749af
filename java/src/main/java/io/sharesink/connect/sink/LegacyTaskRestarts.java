package io.sharesink.connect.sink;

import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.SinkTask;

/**
 * When and how often the driver restarts a failed legacy task in place ({@code
 * share.task.restart.*}) instead of failing the Connect task.
 *
 * <p>A restartable failure is any {@link Exception} the legacy task throws from {@code put}, {@code
 * preCommit}/{@code flush}, or from {@code start} of a restarted instance, except {@link
 * RetriableException} (retried in place, as the runtime does) and a record the task reported as
 * errant under {@code errors.tolerance=none} ({@link ToleranceExceededException}: the task said the
 * record is bad, so it fails as under the runtime). {@link Error}s are never restarted. Conversion
 * and transformation failures never reach this policy: they are handled per record by {@code
 * errors.*}.
 *
 * <p>Each failure uses one attempt; the next instance starts after a backoff that doubles from
 * {@code share.task.restart.backoff.ms} up to {@code share.task.restart.backoff.max.ms}. The count
 * resets once a restarted instance has taken its first put and a later put has returned too (a
 * failure a sink defers to the next put would have surfaced by then). When a failure finds no
 * attempt left, the Connect task fails as it would without this policy.
 *
 * <p>Not thread-safe: the driver's task thread owns it.
 */
final class LegacyTaskRestarts {

  /** Makes a new legacy task instance, {@code initialize}d and {@code start}ed. */
  @FunctionalInterface
  interface TaskStarter {
    /**
     * Returns a started instance; when {@code start} throws, has already called {@code stop} on the
     * instance, and rethrows.
     */
    SinkTask start();
  }

  private final int maxAttempts;
  private final long backoffMs;
  private final long backoffMaxMs;
  private final TaskStarter starter;

  /** Restarts used since the task last ran healthily. */
  private int attempts;

  /** When the next instance is due; -1 when the legacy task is running. */
  private long restartAtMs = -1;

  /** After a restart: the put sequence of the last put before it; -1 when not watching. */
  private long watchAfterSequence = -1;

  LegacyTaskRestarts(int maxAttempts, long backoffMs, long backoffMaxMs, TaskStarter starter) {
    this.maxAttempts = starter == null ? 0 : maxAttempts;
    this.backoffMs = Math.max(0, backoffMs);
    this.backoffMaxMs = Math.max(this.backoffMs, backoffMaxMs);
    this.starter = starter;
  }

  LegacyTaskRestarts(SinkDriverConfig config, TaskStarter starter) {
    this(
        config.taskRestartMaxAttempts(),
        config.taskRestartBackoffMs(),
        config.taskRestartBackoffMaxMs(),
        starter);
  }

  /** Never restarts: every failure fails the task. */
  static LegacyTaskRestarts disabled() {
    return new LegacyTaskRestarts(0, 0, 0, null);
  }

  /** Whether {@code failure} from the legacy task may be answered with a restart at all. */
  static boolean restartable(Throwable failure) {
    if (!(failure instanceof Exception) || failure instanceof RetriableException) {
      return false;
    }
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof ToleranceExceededException) {
        return false;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return true;
  }

  int maxAttempts() {
    return maxAttempts;
  }

  /** Restarts used since the task last ran healthily. */
  int attempts() {
    return attempts;
  }

  /**
   * Takes an attempt for {@code failure} and schedules the next instance; returns the backoff in
   * ms, or -1 when the failure is not restartable or no attempt is left (the task must fail).
   */
  long onFailure(Throwable failure, long nowMs) {
    if (!restartable(failure) || attempts >= maxAttempts) {
      restartAtMs = -1;
      return -1;
    }
    attempts++;
    watchAfterSequence = -1;
    long backoff = backoffMs;
    for (int i = 1; i < attempts && backoff < backoffMaxMs; i++) {
      backoff = Math.min(backoffMaxMs, backoff * 2);
    }
    backoff = Math.min(backoff, backoffMaxMs);
    restartAtMs = nowMs + backoff;
    return backoff;
  }

  /** When the next instance is due; Long.MAX_VALUE when none is pending. */
  long restartAtMs() {
    return restartAtMs < 0 ? Long.MAX_VALUE : restartAtMs;
  }

  boolean due(long nowMs) {
    return restartAtMs >= 0 && nowMs >= restartAtMs;
  }

  /** Starts the next instance (see {@link TaskStarter}). */
  SinkTask startInstance() {
    return starter.start();
  }

  /** The new instance started; {@code lastPutSequence} is that of the last put before it. */
  void started(long lastPutSequence) {
    restartAtMs = -1;
    watchAfterSequence = lastPutSequence;
  }

  /**
   * A put returned without throwing. Returns true when this makes the restarted instance healthy
   * (its first put, and a later one, returned): the attempt count is reset.
   */
  boolean putReturned(long putSequence) {
    if (watchAfterSequence >= 0 && putSequence > watchAfterSequence + 1) {
      watchAfterSequence = -1;
      attempts = 0;
      return true;
    }
    return false;
  }
}

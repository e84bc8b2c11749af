package io.sharesink.connect.sink;

import io.sharesink.connect.sink.AckLedger.Entry;
import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import java.util.List;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the acquisition locks of every held record alive, whichever thread is free to do it: the
 * task thread calls {@link #tick} on every cycle, and a {@link KeeperTimer} calls it every {@link
 * #TICK_MS} from its own thread, so records are RENEWed also while the task thread is inside a call
 * into the legacy task that blocks (a {@code put} retrying its database internally, a {@code start}
 * that waits for a network) or sleeps in a retry backoff. Without that, each lock expiry costs a
 * delivery attempt, and after {@code share.delivery.count.limit} of them the broker archives the
 * records: a downstream outage the classic runtime rides out would lose them.
 *
 * <p>The renewal is bounded: once one call has been running for {@code share.task.stuck.timeout.ms}
 * ({@link #enter}), or no cycle has run for that long (the connector is paused, or the worker no
 * longer polls the task), every record this task holds is RELEASEd at once, so a task that is truly
 * stuck does not keep records from the rest of the group for ever. A record released that way is
 * delivered again (to any member), one delivery attempt later.
 *
 * <p>A put that keeps failing with RetriableException is bounded the same way ({@link
 * #releaseFailingPut}), and a record whose lock is lost anyway (the keeper got no turn) is
 * forgotten without any acknowledgement ({@link #forgetExpired}).
 *
 * <p>Thread-safe. Renewals and releases are taken from the ledger and queued on the engine
 * atomically with the task thread's own decisions ({@link Acknowledger}).
 */
final class LockKeeper {

  private static final Logger log = LoggerFactory.getLogger(LockKeeper.class);

  /** How often the keeper's own thread looks for locks to renew. */
  static final long TICK_MS = 250;

  /** A call into the task, or a sleep, on the task thread; closing it ends it. */
  interface Call extends AutoCloseable {
    @Override
    void close();
  }

  private final AckLedger ledger;
  private final Acknowledger acknowledger;
  private final Time time;
  private final long stuckTimeoutMs;
  private final SinkDriverMetrics metrics;
  private final String taskName;

  /** Renew this long before a lock runs out at the least (see AckLedger#renewDue). */
  private volatile long renewMarginMs;

  /** When the running call began, -1 when none runs; written by the task thread. */
  private volatile long callStartedAtMs = -1;

  private volatile String callName = "";

  /** When the task thread last finished a cycle (or the keeper was made). */
  private volatile long lastCycleAtMs;

  /** Stuck releases so far: the task thread then drops what it queued for them. */
  private volatile int releases;

  /** When the task was asked to stop, -1 before. */
  private volatile long stopRequestedAtMs = -1;

  LockKeeper(
      AckLedger ledger,
      Acknowledger acknowledger,
      Time time,
      long stuckTimeoutMs,
      SinkDriverMetrics metrics,
      String taskName) {
    this.ledger = ledger;
    this.acknowledger = acknowledger;
    this.time = time;
    this.stuckTimeoutMs = stuckTimeoutMs;
    this.metrics = metrics;
    this.taskName = taskName;
    this.lastCycleAtMs = time.milliseconds();
  }

  /** Renew at least this long before a lock runs out (the driver's cycle bound, doubled). */
  void renewMargin(long marginMs) {
    renewMarginMs = marginMs;
  }

  /**
   * How long before a lock runs out it is renewed at the latest: the driver's margin, and never
   * less than three ticks, so that a tick or two may come late (a busy keeper thread).
   */
  long renewMarginMs() {
    return Math.max(renewMarginMs, 3 * TICK_MS);
  }

  /**
   * Marks the task thread as inside {@code what} until the returned call is closed. Calls do not
   * nest: an inner one (a task's {@code stop} inside a restart) simply restarts the clock.
   */
  Call enter(String what) {
    callName = what;
    callStartedAtMs = time.milliseconds();
    return () -> callStartedAtMs = -1;
  }

  /**
   * The task is asked to stop (from any thread): a call still running {@link
   * StopBudget#SHUTDOWN_GRACE} later no longer keeps its records.
   */
  void stopRequested() {
    if (stopRequestedAtMs < 0) {
      stopRequestedAtMs = time.milliseconds();
    }
  }

  /** How many times the held records were released for a stuck task (only ever grows). */
  int releases() {
    return releases;
  }

  /** The task thread finished a cycle: it makes progress. */
  void cycled() {
    lastCycleAtMs = time.milliseconds();
  }

  /**
   * Renews what is due; past the bound of a running call, releases everything held instead.
   * Callable from any thread; never throws (a keeper thread must outlive a failing engine).
   */
  void tick() {
    try {
      long now = time.milliseconds();
      long callStarted = callStartedAtMs;
      long since = callStarted >= 0 ? callStarted : lastCycleAtMs;
      long stopAt = stopRequestedAtMs;
      if (now - since >= stuckTimeoutMs
          || (callStarted >= 0
              && stopAt >= 0
              && now - stopAt >= StopBudget.SHUTDOWN_GRACE.toMillis())) {
        releaseStuck(now - since, callStarted >= 0, stopAt >= 0);
        return;
      }
      long margin = renewMarginMs();
      acknowledger.settle(l -> l.renewDue(now, margin));
    } catch (RuntimeException e) {
      log.warn("{}: renewing acquisition locks failed; retrying", taskName, e);
    }
  }

  /**
   * A put of {@code batch} has failed with RetriableException for {@code failingMs}, beyond {@code
   * share.task.stuck.timeout.ms}: its records are released for other members (one delivery attempt
   * each) instead of being held for ever. Task thread.
   */
  void releaseFailingPut(PutQueue.PutBatch batch, long failingMs) {
    Acknowledgements released = acknowledger.settle(l -> l.take(batch.entries, AckType.RELEASE));
    metrics.recordsReleasedStuck.addAndGet(released.recordCount());
    log.warn(
        "{}: put of {} records has failed with retriable exceptions for {} ms, beyond {}={} ms:"
            + " releasing them so that other members deliver them",
        taskName,
        batch.records.size(),
        failingMs,
        SinkDriverConfig.TASK_STUCK_TIMEOUT_MS_CONFIG,
        stuckTimeoutMs);
  }

  /**
   * Forgets held records whose lock has run out or is about to (see {@link
   * AckLedger#forgetExpired}): no acknowledgement is sent for them (the broker would refuse it and
   * roll back the partition's other acknowledgements in the same request), and the engine is told
   * ({@link Acknowledger#forgotten}). Returns them; {@code lastPutMs} (how long the last put ran)
   * is for the log line. Task thread.
   */
  List<Entry> forgetExpired(long lastPutMs) {
    List<Entry> lost = ledger.forgetExpired(time.milliseconds());
    if (lost.isEmpty()) {
      return lost;
    }
    acknowledger.forgotten(lost);
    metrics.recordsLockExpired.addAndGet(lost.size());
    metrics.inFlight(ledger.size());
    log.warn(
        "{}: {} held records lost their acquisition locks before they could be acknowledged"
            + " (the last put took {} ms; {}): the broker hands them to other members, so they"
            + " are neither acknowledged nor put here",
        taskName,
        lost.size(),
        lastPutMs,
        AckLedger.describe(lost));
    return lost;
  }

  private void releaseStuck(long stuckMs, boolean inCall, boolean stopping) {
    Acknowledgements released = acknowledger.settle(l -> l.takeAll(e -> true, AckType.RELEASE));
    if (released.isEmpty()) {
      return;
    }
    metrics.recordsReleasedStuck.addAndGet(released.recordCount());
    releases++;
    log.warn(
        "{}: {} for {} ms{}: releasing the {} records it holds so that other members deliver them"
            + " (each costs one delivery attempt); they are no longer renewed",
        taskName,
        inCall
            ? "the legacy task has been inside " + callName
            : "no share cycle has run (the connector is paused, or the worker no longer polls"
                + " the task)",
        stuckMs,
        stopping
            ? ", and the task was asked to stop"
            : ", beyond "
                + SinkDriverConfig.TASK_STUCK_TIMEOUT_MS_CONFIG
                + "="
                + stuckTimeoutMs
                + " ms",
        released.recordCount());
  }
}

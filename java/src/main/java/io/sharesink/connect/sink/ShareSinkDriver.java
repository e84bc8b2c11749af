package io.sharesink.connect.sink;

import io.sharesink.connect.sink.PutQueue.Pending;
import io.sharesink.connect.sink.PutQueue.PutBatch;
import io.sharesink.engine.EngineException;
import io.sharesink.engine.ShareBatch;
import io.sharesink.engine.ShareConsumerEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.SinkTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives an unmodified legacy {@link SinkTask} from a share group, one bounded cycle per {@link
 * #runCycle} call, reproducing what the sink runtime does for the task (docs/architecture.md, "The
 * sink contract on a share group"):
 *
 * <ul>
 *   <li>poll a batch, convert and transform each record ({@link Intake}), {@code put} what the
 *       {@link PutQueue} holds next (or {@code put(empty)} on idle cycles, since some sinks flush
 *       on those), opening new original partitions lazily before the first put that holds one;
 *   <li>run a commit cycle when {@link CommitSchedule} says so and on stop: {@code preCommit} with
 *       the highest put offset + 1 per partition; ACCEPT a record only once a preCommit called
 *       after its put returned covered it ({@link AckLedger#committed}, {@link PreCommitResults})
 *       and a later put returned without throwing (a sink may report a write failure on the next
 *       put: Debezium JDBC does);
 *   <li>keep every held record's lock alive ({@link LockKeeper}): put and buffered by the sink,
 *       held back by a pause, waiting for a put retry, a restart or a DLQ write, and also while a
 *       call into the task blocks, up to {@code share.task.stuck.timeout.ms};
 *   <li>forget, without any acknowledgement, held records whose lock has run out (or has less than
 *       a second left) anyway: the broker refuses acknowledgements of records this member no longer
 *       holds (INVALID_RECORD_STATE) and rolls back every other acknowledgement of the same
 *       partition in that request, so one stale ACCEPT or RENEW would undo the good ones;
 *   <li>REJECT records that fail conversion or transformation under {@code errors.tolerance=all},
 *       or that the task reports as errant, after their DLQ write is acknowledged ({@link
 *       ErrantRecords}); restart a failing legacy task in place ({@link LegacyTaskHost}); RELEASE
 *       what is left at stop.
 * </ul>
 *
 * <p>Time comes from the given {@link Time}, so tests run the driver on a mock clock; how long its
 * stop may wait is {@link StopBudget}.
 *
 * <p>Threading: {@link #runCycle} and {@link #stop} run on the one thread that owns the engine (the
 * Connect task thread); {@link #wakeup} may be called from any thread; the lock keeper renews from
 * its own thread through the engine's thread-safe {@code acknowledge}.
 */
public final class ShareSinkDriver {

  private static final Logger log = LoggerFactory.getLogger(ShareSinkDriver.class);

  /** How often the driver wakes up to check DLQ writes while some are outstanding. */
  private static final long ERRANT_CHECK_MS = 100;

  private final ShareSinkTaskContext context;
  private final ShareConsumerEngine engine;
  private final RecordPipeline pipeline;
  private final ErrorHandling errors;
  private final SinkDriverConfig config;
  private final String taskName;
  private final Time time;

  private final AckLedger ledger = new AckLedger();
  private final SinkDriverMetrics metrics;
  private final ErrantRecords errants;
  private final Acknowledger acknowledger;
  private final LockKeeper keeper;
  private final KeeperTimer.Scheduled keeperTicks;
  private final LegacyTaskHost host;
  private final CommitSchedule commits;
  private final PreCommitResults preCommitResults;
  private final Intake intake;
  private final PutQueue queue;

  private long putSequence;

  /** A commit covered records of the last put: poll without waiting, so a put confirms them. */
  private boolean confirmSoon;

  /** How long the last put ran, for the log line about locks lost meanwhile. */
  private long lastPutMs;

  private ConnectException failure;
  private boolean stopped;
  private volatile boolean stopping;

  /** A driver of {@code parts}; see {@link ShareSinkDriverBuilder}, which makes them. */
  ShareSinkDriver(DriverParts parts) {
    this.context = parts.context();
    this.engine = parts.engine();
    this.pipeline = parts.pipeline();
    this.errors = parts.errors();
    this.config = parts.config();
    this.taskName = parts.taskName();
    this.time = parts.time();
    this.metrics = new SinkDriverMetrics(time);
    this.errants = new ErrantRecords(time);
    this.acknowledger = new Acknowledger(ledger, engine, metrics, taskName);
    this.keeper =
        new LockKeeper(ledger, acknowledger, time, config.taskStuckTimeoutMs(), metrics, taskName);
    this.host = new LegacyTaskHost(parts.task(), context, keeper, time, metrics, taskName);
    host.restartWith(parts.restarts());
    this.commits = new CommitSchedule(config, time.milliseconds());
    this.preCommitResults = new PreCommitResults(config, taskName);
    this.intake = new Intake(parts, ledger, errants, acknowledger, keeper, metrics, () -> stopping);
    this.queue = new PutQueue(ledger, intake::convert, taskName);
    context.held = (partition, offset) -> (RawRecord) ledger.attachment(partition, offset);
    this.keeperTicks = parts.keeperTimer().every(LockKeeper.TICK_MS, keeper::tick);
    log.info(
        "{}: driving {} from a share group (commit every {} ms or {} records put, {} records;"
            + " empty preCommit: {}; a stuck task's records are renewed for {} ms)",
        taskName,
        parts.task().getClass().getName(),
        config.commitIntervalMs(),
        config.commitMaxRecords(),
        pipeline.buildsInternalRecords() ? "InternalSinkRecord" : "plain SinkRecord",
        config.acceptOnEmptyPreCommit() ? "accept" : "hold",
        config.taskStuckTimeoutMs());
  }

  /** The context the task was initialized with; for tests. */
  ShareSinkTaskContext context() {
    return context;
  }

  public SinkDriverMetrics metrics() {
    return metrics;
  }

  /** Records held (acquired and not yet acknowledged); for tests. */
  int inFlight() {
    return ledger.size();
  }

  /** The state behind the held records, for a failing test's message. */
  String describeForTests() {
    return String.format(
        "ready=%d retry=%d down=%b paused=%b %d READY, %d PUT, %d CONFIRMED, %d awaiting a commit",
        queue.waiting(),
        queue.retrySize(),
        host.down(),
        context.anyPaused(),
        ledger.entries(AckLedger.State.READY).size(),
        ledger.entries(AckLedger.State.PUT).size(),
        ledger.entries(AckLedger.State.CONFIRMED).size(),
        ledger.awaitingCommit());
  }

  /**
   * Runs one bounded cycle: poll for up to {@code maxPoll} (less when a commit, a put retry or a
   * lock renewal is due sooner), convert, put, maybe commit, acknowledge. Throws {@link
   * ConnectException} when the task has failed; the caller should then stop the driver and close
   * the engine, which releases every unacknowledged record at once.
   */
  public void runCycle(Duration maxPoll) {
    if (failure != null) {
      throw failure;
    }
    if (stopped) {
      throw new IllegalStateException(taskName + ": driver is stopped");
    }
    // A cycle can take up to maxPoll plus a put; renew with at least twice that to spare.
    keeper.renewMargin(2 * maxPoll.toMillis());
    try {
      errants.collect(context.reports, ledger);
      ShareBatch batch = pollEngine(maxPoll);
      commits.polled(batch.size() == 0);
      intake.take(batch, queue);
      forgetExpiredLocks();
      if (host.down() && !restartIfDue()) {
        // No instance to put to or commit with: hold (and renew) everything until the next one.
        errants.collect(context.reports, ledger);
        acknowledge(false);
        keeper.cycled();
        return;
      }
      deliver();
      // A failed put may have stopped the instance (restart in place): no preCommit on it.
      if (!host.down()
          && commits.due(
              time.milliseconds(), context.takeCommitRequest(), ledger.waitingForRange())) {
        commit(false);
      }
      errants.collect(context.reports, ledger);
      acknowledge(false);
      keeper.cycled();
    } catch (ConnectException e) {
      throw fail(e);
    } catch (RuntimeException e) {
      throw fail(new ConnectException(taskName + ": share sink cycle failed", e));
    }
  }

  /**
   * Makes a blocked {@link #runCycle} return soon, for a stop; callable from any thread. A call
   * into the legacy task that does not return within {@link StopBudget#SHUTDOWN_GRACE} no longer
   * keeps the records held.
   */
  public void wakeup() {
    stopping = true;
    keeper.stopRequested();
    engine.wakeup();
  }

  /**
   * Stops the task as the runtime would: confirm the last put with a {@code put(empty)} (unless the
   * task failed or a put retry is pending), a final commit cycle whose ACCEPTs (and REJECTs) are
   * sent and waited for, {@code close(opened)}, then {@code task.stop()}. Closes the transforms,
   * converters and the DLQ producer; leaves the engine to the caller, whose {@code close()}
   * releases everything still held at once. Nothing is RELEASEd here: the engine would fetch
   * released records straight back until it is closed, and each such round trip costs them a
   * delivery attempt. Idempotent.
   */
  public void stop() {
    if (stopped) {
      return;
    }
    stopped = true;
    stopping = true;
    boolean live = !host.down();
    try {
      errants.collect(context.reports, ledger);
      if (live && failure == null && !queue.retryPending() && ledger.hasUnconfirmedPuts()) {
        try {
          put(PutBatch.EMPTY);
        } catch (RuntimeException e) {
          log.warn("{}: the final put(empty) failed; its predecessor is released", taskName, e);
        }
      }
      if (live) {
        commit(true);
      }
      // One deadline for the DLQ writes and the synchronous acknowledgements, see StopBudget.
      long waitUntil = time.milliseconds() + StopBudget.FINAL_WAIT.toMillis();
      errants.awaitAll(waitUntil);
      errants.collect(context.reports, ledger);
      acknowledge(true, Duration.ofMillis(Math.max(0, waitUntil - time.milliseconds())));
    } catch (RuntimeException e) {
      log.error("{}: final commit failed", taskName, e);
    } finally {
      if (live) {
        host.closeOpened();
        host.stopTask();
      }
      keeperTicks.close(); // renewed until here: the engine's close releases what is left
      queue.clear();
      errants.clear();
      pipeline.close();
      errors.close();
      // Where its time went, for operators and benchmarks.
      log.info(
          "{}: stopped; {}; SinkTaskContext calls {}",
          taskName,
          metrics.snapshot().totals(),
          context.calls());
      metrics.close();
    }
  }

  private long pollTimeoutMs(long maxPollMs) {
    long now = time.milliseconds();
    if (confirmSoon && !queue.retryPending()) {
      // Records a commit covered wait for a later put to confirm them before they are ACCEPTed;
      // they may be the whole in-flight window, so put (records or empty) without delay.
      return 0;
    }
    long until = maxPollMs;
    if (host.down()) {
      // No commit while the task is down (an overdue one must not make every poll return at once).
      until = Math.min(until, host.restartAtMs() - now);
    } else {
      until = Math.min(until, commits.pollWaitMs(now, ledger.waitingForRange()));
    }
    until = Math.min(until, queue.retryAtMs() - now);
    until = Math.min(until, ledger.nextRenewalAtMs(now, keeper.renewMarginMs()) - now);
    if (!errants.isEmpty()) {
      until = Math.min(until, ERRANT_CHECK_MS);
    }
    return Math.max(0, until);
  }

  /** Polls the engine; a transient engine error counts as an idle poll (the cycle goes on). */
  private ShareBatch pollEngine(Duration maxPoll) {
    long timeoutMs = pollTimeoutMs(maxPoll.toMillis());
    try {
      return engine.poll(Duration.ofMillis(timeoutMs));
    } catch (EngineException e) {
      if (!e.kind().retriable()) {
        throw e;
      }
      log.warn("{}: transient share consumer error; retrying next cycle", taskName, e);
      return EmptyShareBatch.INSTANCE;
    }
  }

  /** Puts what the put queue holds next, see {@link PutQueue}. */
  private void deliver() {
    queue.pruneAfterReleases(keeper.releases()); // released for a stuck call: not put (again)
    if (queue.retryPending()) {
      long now = time.milliseconds();
      switch (queue.retryState(now, config.taskStuckTimeoutMs())) {
        case BACKOFF -> {
          // No put, and no put(empty) while the task expects its batch again.
        }
        case GIVE_UP -> {
          long failingMs = queue.failingForMs(now); // then released: the task gets new records
          keeper.releaseFailingPut(queue.giveUp(), failingMs);
        }
        default -> {
          metrics.putRetries.incrementAndGet();
          put(queue.retryBatch());
        }
      }
      return;
    }
    PutBatch batch = queue.takeReady(context.anyPaused() ? context::isPaused : null);
    Set<TopicPartition> rewound = queue.rewound(batch, context.opened());
    if (!rewound.isEmpty()) {
      host.reopen(rewound);
      metrics.partitionReopens.addAndGet(rewound.size());
      batch = queue.putAgain(batch, rewound);
    }
    host.openNew(batch.lowest.keySet());
    metrics.partitions(context.opened().size());
    put(batch);
  }

  private void put(PutBatch batch) {
    long sequence = ++putSequence;
    long start = time.nanoseconds();
    try {
      host.put(new ArrayList<>(batch.records));
    } catch (RetriableException e) {
      // As the runtime: keep the same SinkRecords, try again after the task's one-shot timeout
      // (or at the next commit when it set none). Their locks are renewed meanwhile.
      long backoff = context.takeTimeout();
      long now = time.milliseconds();
      if (backoff < 0) {
        backoff = Math.max(0, commits.msUntilInterval(now));
      }
      queue.retryLater(batch, now, backoff);
      log.warn(
          "{}: put of {} records failed with a retriable exception; retrying in {} ms",
          taskName,
          batch.records.size(),
          backoff,
          e);
      return;
    } catch (RuntimeException | Error e) {
      if (!stopping && restartInPlace(e, "put", batch.items)) {
        return;
      }
      // As the runtime: anything but RetriableException fails the task (errors included).
      throw new ConnectException(
          taskName
              + ": the task threw an unrecoverable exception from put"
              + host.restartsUsed()
              + "; stopping",
          e);
    } finally {
      long took = time.nanoseconds() - start;
      lastPutMs = TimeUnit.NANOSECONDS.toMillis(took);
      metrics.recordPut(took);
    }
    queue.putReturned();
    host.putReturned(sequence);
    ledger.putReturned(batch.entries, sequence); // the ledger keeps the list: not changed after
    commits.put(batch.entries.size());
    confirmSoon = false;
    metrics.put(batch.records.size());
  }

  private void commit(boolean closing) {
    long start = time.nanoseconds();
    commits.started(time.milliseconds());
    Map<TopicPartition, Long> passed = ledger.currentOffsets(context.opened());
    Map<TopicPartition, OffsetAndMetadata> given = new HashMap<>();
    passed.forEach((tp, offset) -> given.put(tp, new OffsetAndMetadata(offset)));
    long lastPut = putSequence; // every put so far has returned (or thrown)
    Map<TopicPartition, OffsetAndMetadata> returned;
    boolean completed = false;
    try {
      returned = host.preCommit(given);
      completed = true;
    } catch (RuntimeException e) {
      if (!closing && !stopping && restartInPlace(e, "preCommit", List.of())) {
        return;
      }
      // The runtime seeks back to the last commit and redelivers; the share equivalent is to
      // RELEASE what was put and not yet ACCEPTed, so it is delivered again (maybe elsewhere).
      log.error("{}: preCommit failed; releasing records put since the last commit", taskName, e);
      if (!closing) {
        forgetExpiredLocks();
        acknowledger.releasePut();
      }
      return;
    } finally {
      metrics.recordCommit(time.nanoseconds() - start, completed);
    }
    queue.pruneUnheld();
    preCommitResults.apply(
        ledger,
        lastPut,
        passed,
        returned,
        commits.lastPollEmpty() && !ledger.isEmpty(),
        time.milliseconds(),
        metrics.recordsPut.get());
    ledger.pruneEmptyPartitions(context.opened());
    confirmSoon = !closing && ledger.hasUnconfirmedPuts();
  }

  /**
   * Forgets held records whose lock has run out or is about to ({@link LockKeeper#forgetExpired}):
   * those still waiting for a put (held back by a pause, or in a put retry) are not put. Called
   * before anything is acknowledged and before records are put, so a call into the task that
   * outlasted the locks (or records that reach us too late) never produce acknowledgements the
   * broker would refuse.
   */
  private void forgetExpiredLocks() {
    if (!keeper.forgetExpired(lastPutMs).isEmpty()) {
      queue.pruneUnheld();
    }
  }

  /**
   * Answers a failure the legacy task threw from {@code where} with a restart in place when the
   * policy allows one (see {@link LegacyTaskHost#failed}): keeps every held record (their locks are
   * renewed while the task is down) and queues those not yet ACCEPTed to be put again, before
   * anything newer, to the next instance ({@link PutQueue#requeueUnaccepted}). Returns false when
   * the task must fail instead.
   */
  private boolean restartInPlace(Throwable cause, String where, List<Pending> failedPut) {
    if (host.failed(cause, where, ledger.size()) < 0) {
      return false;
    }
    forgetExpiredLocks(); // the failed call, close and stop may have outlasted some locks
    queue.requeueUnaccepted(failedPut);
    commits.forgetPuts();
    confirmSoon = false;
    return true;
  }

  /**
   * The legacy task is down after a failure: starts the next instance once it is due. Returns
   * whether an instance runs now.
   */
  private boolean restartIfDue() {
    boolean running = host.startIfDue(putSequence, ledger.size());
    forgetExpiredLocks(); // start() may have outlasted some locks: those are not put again
    if (running) {
      log.warn(
          "{}: legacy task restarted in place (restart {} of {}); putting again the {} held"
              + " records not yet accepted",
          taskName,
          host.restartAttempts(),
          host.restartMaxAttempts(),
          queue.waiting());
    }
    return running;
  }

  /**
   * Sends what has been decided: REJECTs whose DLQ write is done, ACCEPTs of partitions with no DLQ
   * write outstanding (the runtime's promise: errant records reach the DLQ before the framework
   * commits their partition), and RENEWs of locks due.
   */
  private void acknowledge(boolean sync) {
    acknowledge(sync, StopBudget.FINAL_WAIT);
  }

  /** As {@link #acknowledge(boolean)}; a synchronous one waits at most {@code wait}. */
  private void acknowledge(boolean sync, Duration wait) {
    forgetExpiredLocks();
    ErrantRecords.Finished finished = errants.takeFinished();
    long now = time.milliseconds();
    acknowledger.sendDecisions(finished, errants::blocks, now, keeper.renewMarginMs(), sync, wait);
    if (finished.failure() != null) {
      throw new ConnectException(
          taskName + ": could not write errant records to the dead letter queue",
          finished.failure());
    }
  }

  /** Records the failure, sends what was already decided, and returns it for throwing. */
  private ConnectException fail(ConnectException e) {
    failure = e;
    try {
      errants.collect(context.reports, ledger);
      acknowledge(false);
    } catch (RuntimeException suppressed) {
      e.addSuppressed(suppressed);
    }
    log.error("{}: task failed", taskName, e);
    return e;
  }
}

package io.sharesink.connect.sink;

import io.sharesink.connect.sink.AckLedger.Entry;
import io.sharesink.connect.sink.ErrorHandling.RecordFailedException;
import io.sharesink.connect.sink.PutQueue.Pending;
import io.sharesink.connect.sink.PutQueue.PutBatch;
import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import io.sharesink.engine.EngineException;
import io.sharesink.engine.ShareBatch;
import io.sharesink.engine.ShareConsumerEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives an unmodified legacy {@link SinkTask} from a share group, one bounded cycle per {@link
 * #runCycle} call, reproducing what the sink runtime does for the task (docs/architecture.md, "The
 * sink contract on a share group"):
 *
 * <ul>
 *   <li>poll a batch, convert and transform each record ({@link RecordPipeline}), {@code put} them
 *       (or {@code put(empty)} on idle cycles, since some sinks flush on those), opening new
 *       original partitions lazily before the first put that holds one;
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
 * <p>Time comes from the given {@link Time}, so tests run the driver on a mock clock.
 *
 * <p>Threading: {@link #runCycle} and {@link #stop} run on the one thread that owns the engine (the
 * Connect task thread); {@link #wakeup} may be called from any thread; the lock keeper renews from
 * its own thread through the engine's thread-safe {@code acknowledge}.
 */
public final class ShareSinkDriver {

  private static final Logger log = LoggerFactory.getLogger(ShareSinkDriver.class);

  /**
   * How long stop() may wait in all for DLQ writes and the final synchronous acknowledgements. The
   * whole stop, the engine's close after it included ({@code share.close.timeout.ms}, 3 s), must
   * end within Connect's {@code task.shutdown.graceful.timeout.ms} (5 s) whatever the broker does:
   * a broker that is down answers nothing, and acknowledgements not confirmed by then still go out
   * with the engine's close.
   */
  static final Duration STOP_WAIT_BUDGET = Duration.ofMillis(1_000);

  /** How often the driver wakes up to check DLQ writes while some are outstanding. */
  private static final long ERRANT_CHECK_MS = 100;

  /**
   * The longest a poll waits while records put since the last commit cycle are held. They keep
   * their place in the share-partition's in-flight window until a commit lets them be ACCEPTed;
   * when that window is full (of them, of records other members hold), nothing more arrives, and
   * only the empty poll that asks for the commit frees it. A poll that waited out its full timeout
   * (a second) stalled the partition for that long: seen as one-second gaps in a FileStream sink
   * fed 110,000 records/s. This is the engine's longest pause between fetches while it holds
   * records ({@code share.fetch.max.wait.held.ms}, 50 ms): waiting longer cannot bring more. The
   * native engine ends such a poll sooner, as soon as a fetch finds nothing more for it.
   */
  static final long HELD_POLL_MAX_MS = 50;

  private final ShareSinkTaskContext context;
  private final ShareConsumerEngine engine;
  private final RecordPipeline pipeline;
  private final ErrorHandling errors;
  private final SinkDriverConfig config;
  private final String taskName;
  private final Time time;

  private final AckLedger ledger = new AckLedger();
  private final SinkDriverMetrics metrics = new SinkDriverMetrics();
  private final Acknowledger acknowledger;
  private final LockKeeper keeper;
  private final KeeperTimer.Scheduled keeperTicks;
  private final LegacyTaskHost host;
  private final CommitSchedule commits;
  private final PreCommitResults preCommitResults;
  private final ErrantRecords errants = new ErrantRecords();
  private final PutQueue queue;

  private long putSequence;

  /** The keeper's stuck releases already pruned from the put queue, see {@link #deliver}. */
  private int releasesSeen;

  /** A commit covered records of the last put: poll without waiting, so a put confirms them. */
  private boolean confirmSoon;

  /** How long the last put ran, for the log line about locks lost meanwhile. */
  private long lastPutMs;

  private ConnectException failure;
  private boolean stopped;
  private boolean lockWarned;
  // Read once: the lock check runs per record, and each AbstractConfig read is a map lookup plus
  // a write to its set of used keys (a JFR profile of a FileStream task at 900,000 records/s put
  // 3% of the task thread's samples there).
  private final long commitIntervalMs;
  private volatile boolean stopping;

  /**
   * @param task a started legacy task, initialized with {@code context}
   * @param context the context the task was initialized with
   * @param engine one share-group member, subscribed; owned (and closed) by the caller; its {@code
   *     acknowledge} must be callable from the keeper's thread
   * @param keyConverter configured key converter
   * @param valueConverter configured value converter
   * @param headerConverter configured header converter
   * @param transforms the sink's SMTs and predicates; the driver closes them, and the converters,
   *     at stop
   * @param config share.* and errors.* settings
   * @param errors error logging and DLQ (the same instance the context was built with)
   * @param internalRecords hand the task the runtime's InternalSinkRecord when it is reachable
   * @param taskName for logs, e.g. {@code orders-to-pg-3}
   * @param time the clock
   * @param keeperTimer runs the lock keeper off the task thread
   */
  public ShareSinkDriver(
      SinkTask task,
      ShareSinkTaskContext context,
      ShareConsumerEngine engine,
      Converter keyConverter,
      Converter valueConverter,
      HeaderConverter headerConverter,
      TransformChain transforms,
      SinkDriverConfig config,
      ErrorHandling errors,
      boolean internalRecords,
      String taskName,
      Time time,
      KeeperTimer keeperTimer) {
    this.context = Objects.requireNonNull(context, "context");
    this.engine = Objects.requireNonNull(engine, "engine");
    this.pipeline =
        new RecordPipeline(
            keyConverter,
            valueConverter,
            headerConverter,
            transforms,
            errors,
            internalRecords,
            config.deliveryCountHeader());
    this.errors = errors;
    this.config = config;
    this.commitIntervalMs = config.commitIntervalMs();
    this.taskName = taskName;
    this.time = Objects.requireNonNull(time, "time");
    this.acknowledger = new Acknowledger(ledger, engine, metrics, taskName);
    this.keeper =
        new LockKeeper(ledger, acknowledger, time, config.taskStuckTimeoutMs(), metrics, taskName);
    this.host = new LegacyTaskHost(task, context, keeper, time, metrics, taskName);
    this.commits = new CommitSchedule(config, time.milliseconds());
    this.preCommitResults = new PreCommitResults(config, taskName);
    this.queue = new PutQueue(ledger, this::convertHeld, taskName);
    context.held = (partition, offset) -> (RawRecord) ledger.attachment(partition, offset);
    this.keeperTicks = keeperTimer.every(LockKeeper.TICK_MS, keeper::tick);
    log.info(
        "{}: driving {} from a share group (commit every {} ms or {} records put, {} records;"
            + " empty preCommit: {}; a stuck task's records are renewed for {} ms)",
        taskName,
        task.getClass().getName(),
        config.commitIntervalMs(),
        config.commitMaxRecords(),
        pipeline.buildsInternalRecords() ? "InternalSinkRecord" : "plain SinkRecord",
        config.acceptOnEmptyPreCommit() ? "accept" : "hold",
        config.taskStuckTimeoutMs());
  }

  /** Restart a failed legacy task in place under this policy (set before the first cycle). */
  void restartWith(LegacyTaskRestarts restarts) {
    host.restartWith(restarts);
  }

  /** The context the task was initialized with. */
  public ShareSinkTaskContext context() {
    return context;
  }

  public SinkDriverMetrics metrics() {
    return metrics;
  }

  /** Records held (acquired and not yet acknowledged). */
  public int inFlight() {
    return ledger.size();
  }

  /** The state behind the held records, for a failing test's message. */
  String describeForTests() {
    return "ready="
        + queue.waiting()
        + " retry="
        + queue.retrySize()
        + " down="
        + host.down()
        + " paused="
        + context.anyPaused()
        + " "
        + ledger.entries(AckLedger.State.READY).size()
        + " READY, "
        + ledger.entries(AckLedger.State.PUT).size()
        + " PUT, "
        + ledger.entries(AckLedger.State.CONFIRMED).size()
        + " CONFIRMED, "
        + ledger.awaitingCommit()
        + " awaiting a commit";
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
      acquire(batch);
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
   * into the legacy task that does not return within {@link LockKeeper#STOP_GRACE_MS} no longer
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
      long waitUntil = System.nanoTime() + STOP_WAIT_BUDGET.toNanos();
      errants.awaitAll(STOP_WAIT_BUDGET);
      errants.collect(context.reports, ledger);
      acknowledge(true, Duration.ofNanos(Math.max(0, waitUntil - System.nanoTime())));
    } catch (RuntimeException e) {
      log.error("{}: final commit failed", taskName, e);
    } finally {
      if (live) {
        host.closeOpened();
      }
      if (live) {
        host.stopTask();
      }
      keeperTicks.close(); // renewed until here: the engine's close releases what is left
      queue.clear();
      errants.clear();
      pipeline.close();
      errors.close();
      logTotals();
    }
  }

  /** One line of this task's totals at stop: where its time went, for operators and benchmarks. */
  private void logTotals() {
    SinkDriverMetrics.Snapshot m = metrics.snapshot();
    log.info(
        "{}: stopped; {} records polled, {} put in {} puts (avg {} ms), {} commit cycles (avg {}"
            + " ms), {} accepted, {} released, {} rejected",
        taskName,
        m.recordsPolled(),
        m.recordsPut(),
        m.puts(),
        String.format("%.2f", m.putLatencyAvgMs()),
        m.commitCycles(),
        String.format("%.2f", m.commitLatencyAvgMs()),
        m.recordsAccepted(),
        m.recordsReleased(),
        m.recordsRejected());
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
      until = Math.min(until, commits.msUntilDue(now, ledger.waitingForRange()));
      if (commits.putSinceCommit() > 0) {
        until = Math.min(until, HELD_POLL_MAX_MS);
      }
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

  private void acquire(ShareBatch batch) {
    if (batch.size() == 0) {
      return;
    }
    long now = time.milliseconds();
    List<Entry> redelivered = new ArrayList<>();
    List<Entry> acquired = new ArrayList<>(batch.size());
    int maxDeliveryCount = 0;
    int duplicates = 0;
    TopicPartition tp = null;
    // Every record of the batch enters the ledger before any is converted, so the keeper renews
    // the whole batch while a converter retries (errors.retry.timeout) on one of them.
    for (int i = 0; i < batch.size(); i++) {
      RawRecord raw = RawRecord.from(batch, i);
      if (tp == null || tp.partition() != raw.partition() || !tp.topic().equals(raw.topic())) {
        tp = raw.topicPartition(); // one per run of a partition: its hash is computed once
      }
      Entry entry =
          ledger.acquire(
              tp,
              raw.offset(),
              raw.deliveryCount(),
              now,
              batch.lockDeadlineMs(i),
              batch.acquiredLastOffset(i));
      if (entry == null) {
        duplicates++;
        log.debug("{}: {} is already held; ignored", taskName, raw);
        continue;
      }
      warnIfLockTooShort(batch.lockDeadlineMs(i) - now);
      if (raw.deliveryCount() > 1) {
        redelivered.add(entry);
        maxDeliveryCount = Math.max(maxDeliveryCount, raw.deliveryCount());
      }
      entry.attachment = raw;
      acquired.add(entry);
    }
    // Counted once a batch: an atomic add per record showed in profiles of a fast sink.
    metrics.duplicatesIgnored.addAndGet(duplicates);
    metrics.recordsPolled.addAndGet(acquired.size());
    metrics.redeliveries.addAndGet(redelivered.size());
    metrics.recordsInFlight.set(ledger.size());
    if (!redelivered.isEmpty()) {
      log.info(
          "{}: {} records delivered again (up to delivery {}): {}",
          taskName,
          redelivered.size(),
          maxDeliveryCount,
          AckLedger.describe(redelivered));
    }
    try (LockKeeper.Call call = keeper.enter("conversion")) {
      for (Entry entry : acquired) {
        Pending pending = convertHeld(entry);
        if (pending != null) {
          queue.add(pending);
        }
      }
    }
  }

  /**
   * Converts a held record from its raw bytes; null when it failed under {@code
   * errors.tolerance=all} (it waits for its DLQ write, to be REJECTed); throws when it fails the
   * task. Also converts records anew for the put queue.
   */
  private Pending convertHeld(Entry entry) {
    RawRecord raw = (RawRecord) entry.attachment();
    SinkRecord record;
    try {
      record = pipeline.convert(raw, () -> stopping);
    } catch (RecordFailedException e) {
      handleConversionFailure(entry, raw, e);
      return null;
    }
    return new Pending(entry, record);
  }

  private void warnIfLockTooShort(long lockMs) {
    // The lock left at acquisition is a little under the granted duration: allow a second.
    if (!lockWarned && lockMs > 0 && commitIntervalMs > (lockMs + AckLedger.EXPIRY_MARGIN_MS) / 2) {
      lockWarned = true;
      log.warn(
          "{}: {}={} ms is not well below the acquisition lock ({} ms): records the sink buffers"
              + " will be renewed before every commit; lower it or raise the group's"
              + " share.record.lock.duration.ms",
          taskName,
          SinkDriverConfig.COMMIT_INTERVAL_MS,
          commitIntervalMs,
          lockMs);
    }
  }

  private void handleConversionFailure(Entry entry, RawRecord raw, RecordFailedException e) {
    Throwable cause = e.getCause();
    if (errors.toleranceAll()) {
      errants.add(ledger, entry, errors.report(raw, e.stage(), e.executingClass(), cause));
      return;
    }
    errors.logFailure(raw, e.stage(), e.executingClass(), cause);
    // RELEASE, not REJECT: the failure may be ours (a converter misconfigured), and the broker's
    // delivery count limit still archives a record that fails everywhere.
    acknowledger.settle(l -> l.take(List.of(entry), AckType.RELEASE));
    throw new ConnectException(
        "Tolerance exceeded in error handler: "
            + e.stage()
            + " failed for record topic="
            + raw.topic()
            + " partition="
            + raw.partition()
            + " offset="
            + raw.offset()
            + " (released for another delivery attempt)",
        cause);
  }

  /** Puts what the put queue holds next, see {@link PutQueue}. */
  private void deliver() {
    if (keeper.releases() != releasesSeen) {
      releasesSeen = keeper.releases();
      queue.pruneUnheld(); // released for a stuck call: not to be put (again)
    }
    if (queue.retryPending()) {
      long now = time.milliseconds();
      switch (queue.retryState(now, config.taskStuckTimeoutMs())) {
        case BACKOFF -> {
          // No put, and no put(empty) while the task expects its batch again.
        }
        case GIVE_UP -> giveUpRetry(now);
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
    openNewPartitions(batch);
    put(batch);
  }

  /**
   * A put has failed with RetriableException for longer than {@code share.task.stuck.timeout.ms}:
   * its records are released for other members (one delivery attempt each) instead of being held
   * for ever; the task gets new records next.
   */
  private void giveUpRetry(long now) {
    long failingMs = queue.failingForMs(now);
    PutBatch batch = queue.giveUp();
    Acknowledgements released = acknowledger.settle(l -> l.take(batch.entries, AckType.RELEASE));
    metrics.recordsReleasedStuck.addAndGet(released.recordCount());
    log.warn(
        "{}: put of {} records has failed with retriable exceptions for {} ms, beyond {}={} ms:"
            + " releasing them so that other members deliver them",
        taskName,
        batch.records.size(),
        failingMs,
        SinkDriverConfig.TASK_STUCK_TIMEOUT_MS,
        config.taskStuckTimeoutMs());
  }

  private void openNewPartitions(PutBatch batch) {
    Set<TopicPartition> opened = context.opened();
    Set<TopicPartition> fresh = new LinkedHashSet<>();
    for (TopicPartition tp : batch.lowest.keySet()) {
      if (!opened.contains(tp)) {
        fresh.add(tp);
      }
    }
    if (!fresh.isEmpty()) {
      host.open(fresh);
    }
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
    metrics.recordsPut.addAndGet(batch.records.size());
  }

  private void commit(boolean closing) {
    long start = time.nanoseconds();
    commits.started(time.milliseconds());
    Map<TopicPartition, Long> passed = ledger.currentOffsets(context.opened());
    Map<TopicPartition, OffsetAndMetadata> given = new HashMap<>();
    passed.forEach((tp, offset) -> given.put(tp, new OffsetAndMetadata(offset)));
    long lastPut = putSequence; // every put so far has returned (or thrown)
    Map<TopicPartition, OffsetAndMetadata> returned;
    try {
      returned = host.preCommit(given);
    } catch (RuntimeException e) {
      if (!closing && !stopping && restartInPlace(e, "preCommit", List.of())) {
        return;
      }
      // The runtime seeks back to the last commit and redelivers; the share equivalent is to
      // RELEASE what was put and not yet ACCEPTed, so it is delivered again (maybe elsewhere).
      log.error("{}: preCommit failed; releasing records put since the last commit", taskName, e);
      if (!closing) {
        forgetExpiredLocks();
        acknowledger.settle(
            l ->
                l.takeAll(
                    entry ->
                        entry.state() == AckLedger.State.PUT
                            || entry.state() == AckLedger.State.CONFIRMED,
                    AckType.RELEASE));
      }
      return;
    } finally {
      metrics.recordCommit(time.nanoseconds() - start);
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
   * Forgets held records whose lock has run out or is about to (see {@link
   * AckLedger#forgetExpired}): no acknowledgement is sent for them, and those still waiting for a
   * put (held back by a pause, or in a put retry) are not put. Called before anything is
   * acknowledged and before records are put, so a call into the task that outlasted the locks (or
   * records that reach us too late) never produce acknowledgements the broker would refuse.
   */
  private void forgetExpiredLocks() {
    List<Entry> lost = ledger.forgetExpired(time.milliseconds());
    if (lost.isEmpty()) {
      return;
    }
    tellEngineForgotten(lost);
    queue.pruneUnheld();
    metrics.recordsLockExpired.addAndGet(lost.size());
    metrics.recordsInFlight.set(ledger.size());
    log.warn(
        "{}: {} held records lost their acquisition locks before they could be acknowledged"
            + " (the last put took {} ms; {}): the broker hands them to other members, so they"
            + " are neither acknowledged nor put here",
        taskName,
        lost.size(),
        lastPutMs,
        AckLedger.describe(lost));
  }

  /**
   * Tells the engine which records the driver dropped, per partition: an engine that renews what it
   * handed out (the Java client's) would otherwise keep renewing them as held and never hand them
   * out again.
   */
  private void tellEngineForgotten(List<Entry> lost) {
    Map<TopicPartition, List<Long>> byPartition = new LinkedHashMap<>();
    for (Entry entry : lost) {
      byPartition.computeIfAbsent(entry.partition(), tp -> new ArrayList<>()).add(entry.offset());
    }
    byPartition.forEach((tp, offsets) -> engine.forgotten(tp.topic(), tp.partition(), offsets));
  }

  /**
   * Answers a failure the legacy task threw from {@code where} with a restart in place when the
   * policy allows one (see {@link LegacyTaskHost#failed}): keeps every held record (their locks are
   * renewed while the task is down) and queues those not yet ACCEPTed to be put again, before
   * anything newer, to the next instance. Returns false when the task must fail instead.
   */
  private boolean restartInPlace(Throwable cause, String where, List<Pending> failedPut) {
    if (host.failed(cause, where, ledger.size()) < 0) {
      return false;
    }
    requeueUnaccepted(failedPut);
    return true;
  }

  /**
   * Puts back at the head of the queue every held record a failed instance was given or was about
   * to be given and that is not ACCEPTed (see {@link PutQueue#requeueUnaccepted}).
   */
  private void requeueUnaccepted(List<Pending> failedPut) {
    forgetExpiredLocks(); // the failed call, close and stop may have outlasted some locks
    queue.requeueUnaccepted(failedPut);
    commits.forgetPuts();
    confirmSoon = false;
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
    acknowledge(sync, STOP_WAIT_BUDGET);
  }

  /** As {@link #acknowledge(boolean)}; a synchronous one waits at most {@code wait}. */
  private void acknowledge(boolean sync, Duration wait) {
    forgetExpiredLocks();
    ErrantRecords.Finished finished = errants.takeFinished();
    long now = time.milliseconds();
    long margin = keeper.renewMarginMs();
    Function<AckLedger, Acknowledgements> decision =
        l -> {
          Acknowledgements acks = new Acknowledgements();
          merge(acks, l.take(finished.rejects(), AckType.REJECT));
          merge(acks, l.take(finished.failedWrites(), AckType.RELEASE));
          merge(acks, l.takeAccepted(errants::blocks, now, margin, sync));
          if (!sync) {
            merge(acks, l.renewDue(now, margin));
          }
          return acks;
        };
    if (sync) {
      acknowledger.settleAndWait(decision, wait);
    } else {
      acknowledger.settle(decision);
    }
    if (finished.failure() != null) {
      throw new ConnectException(
          taskName + ": could not write errant records to the dead letter queue",
          finished.failure());
    }
  }

  private static void merge(Acknowledgements into, Acknowledgements from) {
    for (Acknowledgements.Range r : from.ranges()) {
      into.add(r.topic(), r.partition(), r.firstOffset(), r.lastOffset(), r.type());
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

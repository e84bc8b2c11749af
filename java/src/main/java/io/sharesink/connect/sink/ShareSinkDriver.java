package io.sharesink.connect.sink;

import io.sharesink.connect.sink.AckLedger.Entry;
import io.sharesink.connect.sink.ErrorHandling.RecordFailedException;
import io.sharesink.connect.sink.ShareSinkTaskContext.ErrantReport;
import io.sharesink.engine.AckResult;
import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import io.sharesink.engine.EngineException;
import io.sharesink.engine.ShareBatch;
import io.sharesink.engine.ShareConsumerEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
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
 * #runCycle} call, reproducing what the sink runtime does for the task (see DESIGN.md, "Mapping the
 * sink contract onto a share group"):
 *
 * <ul>
 *   <li>poll a batch, convert and transform each record, {@code put} them (or {@code put(empty)} on
 *       idle cycles, since some sinks flush on those), opening new original partitions lazily
 *       before the first put that holds one;
 *   <li>every {@code share.commit.interval.ms}, on {@code requestCommit()}, on demand (once {@code
 *       share.commit.max.records} have been put since the last commit, or when a poll returns
 *       nothing while records put since then are held; at most once per {@code
 *       share.commit.min.interval.ms}) and on stop, call {@code preCommit} with the highest put
 *       offset + 1 per original partition, and ACCEPT the put records below what it returns, but
 *       only once a later put has returned without throwing (a sink may report a write failure on
 *       the next put: Debezium JDBC does);
 *   <li>RENEW every record held between calls into the task before its lock runs out (put and
 *       buffered by the sink until a preCommit covers it, held back by a pause, waiting for a put
 *       retry or a DLQ write), so no delivery attempt is burnt while we hold it;
 *   <li>never renew during a call into the task: renewals run on the task thread, between calls. A
 *       {@code put} (or {@code preCommit}) that blocks for longer than the lock loses every record
 *       the driver holds: each one's lock was last set (acquired or renewed) before the call began,
 *       so the broker hands it to another member at most one lock duration after the call began,
 *       and a stuck task never holds records back from the others for longer;
 *   <li>forget, without any acknowledgement, held records whose lock has run out (or has less than
 *       a second left) when the task returns, or that arrive that late: the broker refuses
 *       acknowledgements of records this member no longer holds (INVALID_RECORD_STATE) and rolls
 *       back every other acknowledgement of the same partition in that request, so one stale ACCEPT
 *       or RENEW would undo the good ones; they are not put (again) either;
 *   <li>REJECT records that fail conversion or transformation under {@code errors.tolerance=all},
 *       or that the task reports as errant, after their DLQ write is acknowledged; RELEASE what is
 *       left at stop.
 * </ul>
 *
 * <p>Threading: {@link #runCycle} and {@link #stop} run on the one thread that owns the engine (the
 * Connect task thread); {@link #wakeup} may be called from any thread.
 */
public final class ShareSinkDriver {

  private static final Logger log = LoggerFactory.getLogger(ShareSinkDriver.class);

  /** How long stop() waits for DLQ writes and synchronous acknowledgements. */
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(5);

  /** An acquired, converted record waiting for a put; {@code record} null = dropped by an SMT. */
  private record Pending(Entry entry, SinkRecord record) {}

  /** A put that threw RetriableException: the same records go again at {@code retryAtMs}. */
  private record RetryBatch(List<Pending> items, List<SinkRecord> records, long retryAtMs) {}

  /** A record waiting for its DLQ write before it is REJECTed. */
  private record ErrantWait(Entry entry, CompletableFuture<Void> written) {}

  /** The legacy task instance; replaced when it is restarted in place. */
  private SinkTask task;

  private ClassLoader taskLoader;
  private final ShareSinkTaskContext context;
  private final ShareConsumerEngine engine;
  private final RecordPipeline pipeline;
  private final ErrorHandling errors;
  private final SinkDriverConfig config;
  private final String taskName;

  private final AckLedger ledger = new AckLedger();
  private final List<Pending> ready = new ArrayList<>();
  private final Map<TopicPartition, List<ErrantWait>> errantWaits = new LinkedHashMap<>();
  private final SinkDriverMetrics metrics = new SinkDriverMetrics();

  private RetryBatch retry;
  private long putSequence;
  private long nextCommitAtMs;
  private long lastCommitAtMs = Long.MIN_VALUE / 2;

  /** Records put (without throwing) since the last commit cycle: the on-demand triggers' count. */
  private long putSinceCommit;

  private boolean lastPollEmpty;

  /** A commit covered records of the last put: poll without waiting, so a put confirms them. */
  private boolean confirmSoon;

  private long renewMarginMs;

  /** How long the last put ran, for the log line about locks lost meanwhile. */
  private long lastPutMs;

  private ConnectException failure;
  private boolean stopped;
  private boolean lockWarned;
  private volatile boolean stopping;

  /** Restarts of a failed legacy task in place (share.task.restart.*); none unless configured. */
  private LegacyTaskRestarts restarts = LegacyTaskRestarts.disabled();

  /** The legacy task instance was stopped after a failure; the next one is not started yet. */
  private boolean legacyTaskDown;

  /**
   * @param task a started legacy task, initialized with {@code context}
   * @param context the context the task was initialized with
   * @param engine one share-group member, subscribed; owned (and closed) by the caller
   * @param keyConverter configured key converter
   * @param valueConverter configured value converter
   * @param headerConverter configured header converter
   * @param transforms the sink's SMTs and predicates; the driver closes them, and the converters,
   *     at stop
   * @param config share.* and errors.* settings
   * @param errors error logging and DLQ (the same instance the context was built with)
   * @param internalRecords hand the task the runtime's InternalSinkRecord when it is reachable
   * @param taskName for logs, e.g. {@code orders-to-pg-3}
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
      String taskName) {
    this.task = Objects.requireNonNull(task, "task");
    this.taskLoader = LoaderSwap.loaderOf(task);
    this.context = Objects.requireNonNull(context, "context");
    this.engine = Objects.requireNonNull(engine, "engine");
    this.pipeline =
        new RecordPipeline(
            keyConverter, valueConverter, headerConverter, transforms, errors, internalRecords);
    this.errors = errors;
    this.config = config;
    this.taskName = taskName;
    this.nextCommitAtMs = System.currentTimeMillis() + config.commitIntervalMs();
    context.taskClass = task.getClass();
    context.held = (partition, offset) -> (RawRecord) ledger.attachment(partition, offset);
    log.info(
        "{}: driving {} from a share group (commit every {} ms or {} records put, {} records)",
        taskName,
        task.getClass().getName(),
        config.commitIntervalMs(),
        config.commitMaxRecords(),
        pipeline.buildsInternalRecords() ? "InternalSinkRecord" : "plain SinkRecord");
  }

  /** Restart a failed legacy task in place under this policy (set before the first cycle). */
  void restartWith(LegacyTaskRestarts restarts) {
    this.restarts = Objects.requireNonNull(restarts, "restarts");
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
    renewMarginMs = Math.max(renewMarginMs, 2 * maxPoll.toMillis());
    try {
      collectErrantReports();
      ShareBatch batch = pollEngine(maxPoll);
      lastPollEmpty = batch.size() == 0;
      acquire(batch);
      forgetExpiredLocks();
      if (awaitingRestart()) {
        // No instance to put to or commit with: hold (and renew) everything until the next one.
        collectErrantReports();
        acknowledge(false);
        return;
      }
      deliver();
      long now = System.currentTimeMillis();
      if (context.takeCommitRequest()
          || now >= nextCommitAtMs
          || (commitWanted() && now >= lastCommitAtMs + config.commitMinIntervalMs())) {
        commit(false);
      }
      collectErrantReports();
      acknowledge(false);
    } catch (ConnectException e) {
      throw fail(e);
    } catch (RuntimeException e) {
      throw fail(new ConnectException(taskName + ": share sink cycle failed", e));
    }
  }

  /** Makes a blocked {@link #runCycle} return soon; callable from any thread. */
  public void wakeup() {
    stopping = true;
    engine.wakeup();
  }

  /**
   * Stops the task as the runtime would: confirm the last put with a {@code put(empty)} (unless the
   * task failed or a put retry is pending), a final commit cycle, {@code close(opened)}, RELEASE of
   * everything not ACCEPTed or REJECTed, then {@code task.stop()}. Closes the transforms,
   * converters and the DLQ producer; leaves the engine to the caller. Idempotent.
   */
  public void stop() {
    if (stopped) {
      return;
    }
    stopped = true;
    stopping = true;
    boolean live = !legacyTaskDown;
    try {
      collectErrantReports();
      if (live && failure == null && retry == null && ledger.hasUnconfirmedPuts()) {
        try {
          put(List.of(), List.of());
        } catch (RuntimeException e) {
          log.warn("{}: the final put(empty) failed; its predecessor is released", taskName, e);
        }
      }
      if (live) {
        commit(true);
      }
      awaitErrantWrites(STOP_TIMEOUT);
      collectErrantReports();
      acknowledge(true);
    } catch (RuntimeException e) {
      log.error("{}: final commit failed", taskName, e);
    } finally {
      if (live) {
        closePartitions();
      }
      releaseAll();
      if (live) {
        try {
          LoaderSwap.run(taskLoader, task::stop);
        } catch (RuntimeException e) {
          log.error("{}: task stop failed", taskName, e);
        }
      }
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

  /**
   * Whether an on-demand commit is wanted: enough records put since the last commit to use up a
   * good part of the broker's in-flight window, a poll that returned nothing (window used up, or
   * topic drained), or accepts waiting for the rest of their acquired range (see {@link
   * AckLedger#takeAccepted}) while records put since the last commit are held. The put that
   * preceded the commit confirms what it covers except the last put's records, which the next put
   * (a {@code put(empty)} on an idle cycle) confirms; they are ACCEPTed then.
   */
  private boolean commitWanted() {
    int max = config.commitMaxRecords();
    return max > 0
        && putSinceCommit > 0
        && (lastPollEmpty || putSinceCommit >= max || ledger.waitingForRange() > 0);
  }

  private long pollTimeoutMs(long maxPollMs) {
    long now = System.currentTimeMillis();
    long until = Math.min(maxPollMs, nextCommitAtMs - now);
    if (confirmSoon && retry == null) {
      // Records a commit covered wait for a later put to confirm them before they are ACCEPTed;
      // they may be the whole in-flight window, so put (records or empty) without delay.
      return 0;
    }
    if (commitWanted()) {
      // Held back only by share.commit.min.interval.ms: wake up for it rather than wait for
      // records the exhausted window will not lend.
      until = Math.min(until, lastCommitAtMs + config.commitMinIntervalMs() - now);
    }
    if (retry != null) {
      until = Math.min(until, retry.retryAtMs - now);
    }
    if (legacyTaskDown) {
      until = Math.min(until, restarts.restartAtMs() - now);
    }
    until = Math.min(until, ledger.nextRenewalAtMs(renewMarginMs) - now);
    if (!errantWaits.isEmpty()) {
      until = Math.min(until, 100); // check DLQ writes soon
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
      return EmptyBatch.INSTANCE;
    }
  }

  /** No records. */
  private enum EmptyBatch implements ShareBatch {
    INSTANCE;

    @Override
    public int size() {
      return 0;
    }

    @Override
    public String topic(int i) {
      throw new IndexOutOfBoundsException(i);
    }

    @Override
    public int partition(int i) {
      throw new IndexOutOfBoundsException(i);
    }

    @Override
    public long offset(int i) {
      throw new IndexOutOfBoundsException(i);
    }

    @Override
    public long timestamp(int i) {
      throw new IndexOutOfBoundsException(i);
    }

    @Override
    public int timestampType(int i) {
      throw new IndexOutOfBoundsException(i);
    }

    @Override
    public int deliveryCount(int i) {
      throw new IndexOutOfBoundsException(i);
    }

    @Override
    public long lockDeadlineMs(int i) {
      throw new IndexOutOfBoundsException(i);
    }

    @Override
    public byte[] key(int i) {
      throw new IndexOutOfBoundsException(i);
    }

    @Override
    public byte[] value(int i) {
      throw new IndexOutOfBoundsException(i);
    }

    @Override
    public List<Header> headers(int i) {
      throw new IndexOutOfBoundsException(i);
    }
  }

  private void acquire(ShareBatch batch) {
    long now = System.currentTimeMillis();
    List<Entry> redelivered = new ArrayList<>();
    int maxDeliveryCount = 0;
    TopicPartition tp = null;
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
        metrics.duplicatesIgnored.incrementAndGet();
        log.debug("{}: {} is already held; ignored", taskName, raw);
        continue;
      }
      metrics.recordsPolled.incrementAndGet();
      warnIfLockTooShort(batch.lockDeadlineMs(i) - now);
      if (raw.deliveryCount() > 1) {
        metrics.redeliveries.incrementAndGet();
        redelivered.add(entry);
        maxDeliveryCount = Math.max(maxDeliveryCount, raw.deliveryCount());
      }
      entry.attachment = raw;
      SinkRecord record;
      try {
        record = pipeline.convert(raw, () -> stopping);
      } catch (RecordFailedException e) {
        handleConversionFailure(entry, raw, e);
        continue;
      }
      ready.add(new Pending(entry, record));
    }
    metrics.recordsInFlight.set(ledger.size());
    if (!redelivered.isEmpty()) {
      log.info(
          "{}: {} records delivered again (up to delivery {}): {}",
          taskName,
          redelivered.size(),
          maxDeliveryCount,
          describe(redelivered));
    }
  }

  private void warnIfLockTooShort(long lockMs) {
    if (!lockWarned && lockMs > 0 && config.commitIntervalMs() > lockMs / 2) {
      lockWarned = true;
      log.warn(
          "{}: {}={} ms is not well below the acquisition lock ({} ms): records the sink buffers"
              + " will be renewed before every commit; lower it or raise the group's"
              + " share.record.lock.duration.ms",
          taskName,
          SinkDriverConfig.COMMIT_INTERVAL_MS,
          config.commitIntervalMs(),
          lockMs);
    }
  }

  private void handleConversionFailure(Entry entry, RawRecord raw, RecordFailedException e) {
    Throwable cause = e.getCause();
    if (errors.toleranceAll()) {
      CompletableFuture<Void> written = errors.report(raw, e.stage(), e.executingClass(), cause);
      ledger.rejecting(entry);
      errantWaits
          .computeIfAbsent(entry.partition(), p -> new ArrayList<>())
          .add(new ErrantWait(entry, written));
      return;
    }
    errors.logFailure(raw, e.stage(), e.executingClass(), cause);
    // RELEASE, not REJECT: the failure may be ours (a converter misconfigured), and the broker's
    // delivery count limit still archives a record that fails everywhere.
    Acknowledgements release = ledger.take(List.of(entry), AckType.RELEASE);
    send(release, false);
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

  private void deliver() {
    if (retry != null) {
      if (System.currentTimeMillis() < retry.retryAtMs) {
        return; // the backoff: no put, and no put(empty) while the task expects its batch again
      }
      metrics.putRetries.incrementAndGet();
      put(retry.items, retry.records);
      return;
    }
    List<Pending> items = new ArrayList<>();
    if (context.anyPaused()) {
      Iterator<Pending> it = ready.iterator();
      while (it.hasNext()) {
        Pending pending = it.next();
        if (!context.isPaused(pending.entry.partition())) {
          items.add(pending);
          it.remove();
        }
      }
    } else {
      items.addAll(ready);
      ready.clear();
    }
    List<SinkRecord> records = new ArrayList<>(items.size());
    for (Pending pending : items) {
      if (pending.record != null) {
        records.add(pending.record);
      }
    }
    openNewPartitions(items);
    put(items, records);
  }

  private void openNewPartitions(List<Pending> items) {
    Set<TopicPartition> opened = context.opened();
    Set<TopicPartition> fresh = new LinkedHashSet<>();
    TopicPartition previous = null;
    for (Pending pending : items) {
      TopicPartition tp = pending.entry.partition();
      if (tp != previous && !opened.contains(tp)) { // records of a run share one instance
        fresh.add(tp);
      }
      previous = tp;
    }
    if (fresh.isEmpty()) {
      return;
    }
    log.debug("{}: opening {}", taskName, fresh);
    LoaderSwap.run(taskLoader, () -> task.open(new ArrayList<>(fresh)));
    opened.addAll(fresh);
  }

  private void put(List<Pending> items, List<SinkRecord> records) {
    long sequence = ++putSequence;
    long start = System.nanoTime();
    try {
      LoaderSwap.run(taskLoader, () -> task.put(new ArrayList<>(records)));
    } catch (RetriableException e) {
      // As the runtime: keep the same SinkRecords, try again after the task's one-shot timeout
      // (or at the next commit when it set none). Their locks are renewed meanwhile.
      long backoff = context.takeTimeout();
      long now = System.currentTimeMillis();
      if (backoff < 0) {
        backoff = Math.max(0, nextCommitAtMs - now);
      }
      retry = new RetryBatch(items, records, now + backoff);
      log.warn(
          "{}: put of {} records failed with a retriable exception; retrying in {} ms",
          taskName,
          records.size(),
          backoff,
          e);
      return;
    } catch (RuntimeException | Error e) {
      if (!stopping && restartInPlace(e, "put", items)) {
        return;
      }
      // As the runtime: anything but RetriableException fails the task (errors included).
      throw new ConnectException(
          taskName
              + ": the task threw an unrecoverable exception from put"
              + restartsUsed()
              + "; stopping",
          e);
    } finally {
      long took = System.nanoTime() - start;
      lastPutMs = TimeUnit.NANOSECONDS.toMillis(took);
      metrics.recordPut(took);
    }
    retry = null;
    if (restarts.putReturned(sequence)) {
      log.info("{}: the restarted legacy task is writing again", taskName);
    }
    List<Entry> entries = new ArrayList<>(items.size());
    for (Pending pending : items) {
      entries.add(pending.entry);
    }
    ledger.putReturned(entries, sequence);
    putSinceCommit += entries.size();
    confirmSoon = false;
    metrics.recordsPut.addAndGet(records.size());
  }

  private void commit(boolean closing) {
    long start = System.nanoTime();
    lastCommitAtMs = System.currentTimeMillis();
    nextCommitAtMs = lastCommitAtMs + config.commitIntervalMs();
    putSinceCommit = 0;
    Map<TopicPartition, Long> passed = ledger.currentOffsets(context.opened());
    Map<TopicPartition, OffsetAndMetadata> given = new HashMap<>();
    passed.forEach((tp, offset) -> given.put(tp, new OffsetAndMetadata(offset)));
    Map<TopicPartition, OffsetAndMetadata> returned;
    try {
      returned = LoaderSwap.call(taskLoader, () -> task.preCommit(given));
    } catch (RuntimeException e) {
      if (!closing && !stopping && restartInPlace(e, "preCommit", List.of())) {
        return;
      }
      // The runtime seeks back to the last commit and redelivers; the share equivalent is to
      // RELEASE what was put and not yet ACCEPTed, so it is delivered again (maybe elsewhere).
      log.error("{}: preCommit failed; releasing records put since the last commit", taskName, e);
      if (!closing) {
        forgetExpiredLocks();
        Acknowledgements release =
            ledger.takeAll(
                entry ->
                    entry.state() == AckLedger.State.PUT
                        || entry.state() == AckLedger.State.CONFIRMED,
                AckType.RELEASE);
        send(release, false);
      }
      return;
    } finally {
      metrics.recordCommit(System.nanoTime() - start);
    }
    if (returned == null || returned.isEmpty()) {
      if (config.acceptOnEmptyPreCommit()) {
        ledger.committed(passed, passed);
      }
    } else {
      Map<TopicPartition, Long> returnedOffsets = new HashMap<>();
      returned.forEach(
          (tp, offset) -> {
            if (tp != null && offset != null) {
              returnedOffsets.put(tp, offset.offset());
            }
          });
      List<TopicPartition> ignored = ledger.committed(passed, returnedOffsets);
      if (!ignored.isEmpty()) {
        log.warn(
            "{}: preCommit returned offsets above those consumed for {}; ignored",
            taskName,
            ignored);
      }
    }
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
    List<Entry> lost = ledger.forgetExpired(System.currentTimeMillis());
    if (lost.isEmpty()) {
      return;
    }
    ready.removeIf(pending -> !ledger.holds(pending.entry));
    if (retry != null) {
      List<Pending> items = new ArrayList<>();
      List<SinkRecord> records = new ArrayList<>();
      for (Pending pending : retry.items) {
        if (ledger.holds(pending.entry)) {
          items.add(pending);
          if (pending.record != null) {
            records.add(pending.record);
          }
        }
      }
      retry = items.isEmpty() ? null : new RetryBatch(items, records, retry.retryAtMs);
    }
    metrics.recordsLockExpired.addAndGet(lost.size());
    metrics.recordsInFlight.set(ledger.size());
    log.warn(
        "{}: {} held records lost their acquisition locks before they could be acknowledged"
            + " (the last put took {} ms; {}): the broker hands them to other members, so they"
            + " are neither acknowledged nor put here",
        taskName,
        lost.size(),
        lastPutMs,
        describe(lost));
  }

  /**
   * {@code topic-partition@first..last#delivery} ranges of some entries, in the order given, for
   * logs (at most 10 ranges).
   */
  private static String describe(List<Entry> entries) {
    StringBuilder out = new StringBuilder();
    int shown = 0;
    for (int i = 0; i < entries.size(); ) {
      Entry first = entries.get(i);
      int j = i + 1;
      while (j < entries.size()
          && entries.get(j).partition().equals(first.partition())
          && entries.get(j).offset() == entries.get(j - 1).offset() + 1
          && entries.get(j).deliveryCount() == first.deliveryCount()) {
        j++;
      }
      if (shown++ == 10) {
        out.append(", ...");
        break;
      }
      out.append(shown == 1 ? "" : ", ")
          .append(first.partition())
          .append('@')
          .append(first.offset());
      if (j - 1 > i) {
        out.append("..").append(entries.get(j - 1).offset());
      }
      out.append('#').append(first.deliveryCount());
      i = j;
    }
    return out.toString();
  }

  /**
   * Answers a failure the legacy task threw from {@code where} with a restart in place when the
   * policy allows one: stops the failed instance ({@code close} of its partitions, {@code stop}),
   * keeps every held record (their locks are renewed while the task is down) and queues those not
   * yet ACCEPTed to be put again, before anything newer, to the next instance. Returns false when
   * the task must fail instead.
   */
  private boolean restartInPlace(Throwable cause, String where, List<Pending> failedPut) {
    long backoffMs = restarts.onFailure(cause, System.currentTimeMillis());
    if (backoffMs < 0) {
      return false;
    }
    log.warn(
        "{}: the legacy task threw from {}: {}; restarting it in place in {} ms (restart {} of {}),"
            + " holding its {} records",
        taskName,
        where,
        cause,
        backoffMs,
        restarts.attempts(),
        restarts.maxAttempts(),
        ledger.size(),
        cause);
    legacyTaskDown = true;
    closePartitions();
    try {
      LoaderSwap.run(taskLoader, task::stop);
    } catch (RuntimeException e) {
      log.warn("{}: stop of the failed legacy task failed", taskName, e);
    }
    context.resetForNewTask();
    requeueUnaccepted(failedPut);
    return true;
  }

  /**
   * Puts back at the head of the queue every held record a failed instance was given or was about
   * to be given: the failed put's, a pending retry's, and those put but not ACCEPTed (converted
   * again from their raw bytes), in partition then offset order.
   */
  private void requeueUnaccepted(List<Pending> failedPut) {
    forgetExpiredLocks(); // the failed call, close and stop may have outlasted some locks
    Map<Entry, Pending> requeued = new LinkedHashMap<>();
    List<Pending> unput = new ArrayList<>(failedPut);
    if (retry != null) {
      unput.addAll(retry.items);
      retry = null;
    }
    for (Pending pending : unput) {
      Entry entry = pending.entry;
      if (entry.state() == AckLedger.State.READY && ledger.holds(entry)) {
        requeued.putIfAbsent(entry, pending);
      }
    }
    for (Entry entry : ledger.forgetPuts()) {
      RawRecord raw = (RawRecord) entry.attachment();
      try {
        requeued.put(entry, new Pending(entry, pipeline.convert(raw, () -> stopping)));
      } catch (RecordFailedException e) {
        handleConversionFailure(entry, raw, e);
      }
    }
    List<Pending> ordered = new ArrayList<>(requeued.values());
    ordered.sort(
        Comparator.comparing((Pending p) -> p.entry.partition().topic())
            .thenComparingInt(p -> p.entry.partition().partition())
            .thenComparingLong(p -> p.entry.offset()));
    ready.addAll(0, ordered);
    putSinceCommit = 0;
    confirmSoon = false;
  }

  /**
   * Whether the legacy task is down after a failure: true while its restart backoff runs, and when
   * the next instance failed to start; starts that instance once it is due. Throws when no restart
   * is left.
   */
  private boolean awaitingRestart() {
    if (!legacyTaskDown) {
      return false;
    }
    if (!restarts.due(System.currentTimeMillis())) {
      return true;
    }
    metrics.taskRestarts.incrementAndGet();
    SinkTask fresh;
    try {
      fresh = restarts.startInstance();
    } catch (RuntimeException | Error e) {
      forgetExpiredLocks(); // start() may have outlasted some locks
      long backoffMs = restarts.onFailure(e, System.currentTimeMillis());
      if (backoffMs < 0) {
        throw new ConnectException(
            taskName
                + ": the restarted legacy task failed to start"
                + restartsUsed()
                + "; stopping",
            e);
      }
      log.warn(
          "{}: the restarted legacy task failed to start: {}; next restart in {} ms (restart {} of"
              + " {}), holding {} records",
          taskName,
          e,
          backoffMs,
          restarts.attempts(),
          restarts.maxAttempts(),
          ledger.size(),
          e);
      return true;
    }
    forgetExpiredLocks(); // start() may have outlasted some locks: those are not put again
    task = fresh;
    taskLoader = LoaderSwap.loaderOf(fresh);
    context.taskClass = fresh.getClass();
    legacyTaskDown = false;
    restarts.started(putSequence);
    log.warn(
        "{}: legacy task restarted in place (restart {} of {}); putting again the {} held records"
            + " not yet accepted",
        taskName,
        restarts.attempts(),
        restarts.maxAttempts(),
        ready.size());
    return false;
  }

  private String restartsUsed() {
    int used = restarts.attempts();
    return used == 0 ? "" : " after " + used + " restarts in place";
  }

  /** Moves reports made by the task (possibly on its own threads) into the ledger. */
  private void collectErrantReports() {
    ErrantReport report;
    while ((report = context.reports.poll()) != null) {
      Entry entry = ledger.get(report.partition(), report.offset());
      if (entry == null || entry.state() == AckLedger.State.REJECTING) {
        continue; // already acknowledged, or reported twice
      }
      ledger.rejecting(entry);
      errantWaits
          .computeIfAbsent(entry.partition(), p -> new ArrayList<>())
          .add(new ErrantWait(entry, report.written()));
    }
  }

  private void awaitErrantWrites(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (List<ErrantWait> waits : errantWaits.values()) {
      for (ErrantWait wait : waits) {
        try {
          wait.written.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (ExecutionException | TimeoutException e) {
          // Left for acknowledge(): failed writes are released, pending ones too at stop.
        }
      }
    }
  }

  /**
   * Sends what has been decided: REJECTs whose DLQ write is done, ACCEPTs of partitions with no DLQ
   * write outstanding (the runtime's promise: errant records reach the DLQ before the framework
   * commits their partition), and RENEWs of locks due.
   */
  private void acknowledge(boolean sync) {
    forgetExpiredLocks();
    List<Entry> rejects = new ArrayList<>();
    List<Entry> failedWrites = new ArrayList<>();
    Throwable writeFailure = null;
    for (Iterator<List<ErrantWait>> it = errantWaits.values().iterator(); it.hasNext(); ) {
      List<ErrantWait> waits = it.next();
      for (Iterator<ErrantWait> wit = waits.iterator(); wit.hasNext(); ) {
        ErrantWait wait = wit.next();
        if (!wait.written.isDone()) {
          continue;
        }
        wit.remove();
        try {
          wait.written.join();
          rejects.add(wait.entry);
        } catch (RuntimeException e) {
          failedWrites.add(wait.entry);
          writeFailure = e.getCause() != null ? e.getCause() : e;
        }
      }
      if (waits.isEmpty()) {
        it.remove();
      }
    }
    Acknowledgements acks = new Acknowledgements();
    merge(acks, ledger.take(rejects, AckType.REJECT));
    merge(acks, ledger.take(failedWrites, AckType.RELEASE));
    merge(
        acks,
        ledger.takeAccepted(
            errantWaits::containsKey, System.currentTimeMillis(), renewMarginMs, sync));
    if (!sync) {
      merge(acks, ledger.renewDue(System.currentTimeMillis(), renewMarginMs));
    }
    send(acks, sync);
    if (writeFailure != null) {
      throw new ConnectException(
          taskName + ": could not write errant records to the dead letter queue", writeFailure);
    }
  }

  private void send(Acknowledgements acks, boolean sync) {
    if (acks.isEmpty()) {
      return;
    }
    for (Acknowledgements.Range range : acks.ranges()) {
      long count = range.lastOffset() - range.firstOffset() + 1;
      switch (range.type()) {
        case ACCEPT -> metrics.recordsAccepted.addAndGet(count);
        case RELEASE -> metrics.recordsReleased.addAndGet(count);
        case REJECT -> metrics.recordsRejected.addAndGet(count);
        case RENEW -> metrics.recordsRenewed.addAndGet(count);
      }
    }
    metrics.recordsInFlight.set(ledger.size());
    if (sync) {
      for (AckResult result : engine.acknowledgeSync(acks, STOP_TIMEOUT)) {
        if (!result.ok()) {
          log.warn(
              "{}: acknowledgement {} failed: {} {}",
              taskName,
              result.range(),
              result.errorCode(),
              result.errorMessage());
        }
      }
    } else {
      engine.acknowledge(acks);
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
      collectErrantReports();
      acknowledge(false);
    } catch (RuntimeException suppressed) {
      e.addSuppressed(suppressed);
    }
    log.error("{}: task failed", taskName, e);
    return e;
  }

  private void closePartitions() {
    Set<TopicPartition> opened = context.opened();
    if (opened.isEmpty()) {
      return;
    }
    try {
      LoaderSwap.run(taskLoader, () -> task.close(new ArrayList<>(opened)));
    } catch (RuntimeException e) {
      log.error("{}: task close({}) failed", taskName, opened, e);
    }
    opened.clear();
  }

  private void releaseAll() {
    forgetExpiredLocks();
    ready.clear();
    retry = null;
    errantWaits.clear();
    Acknowledgements release = ledger.takeAll(entry -> true, AckType.RELEASE);
    try {
      send(release, true);
    } catch (RuntimeException e) {
      // The engine's close releases them as well.
      log.warn("{}: could not release {} records", taskName, release.size(), e);
    }
  }
}

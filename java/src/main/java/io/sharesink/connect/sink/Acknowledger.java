package io.sharesink.connect.sink;

import io.sharesink.connect.sink.AckLedger.Entry;
import io.sharesink.engine.AckResult;
import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import io.sharesink.engine.ShareConsumerEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the ledger's decisions into acknowledgements on the engine. A decision is taken from the
 * ledger and queued on the engine while the ledger's monitor is held, so decisions from the task
 * thread and renewals from the lock keeper's thread reach the engine in the order the ledger made
 * them: a record's RENEW is always queued before its ACCEPT (an ACCEPT followed by a RENEW of the
 * same record would make the broker refuse the RENEW and roll back the rest of that partition's
 * acknowledgements in the request).
 *
 * <p>Also tells the engine which records the driver forgot without any acknowledgement ({@link
 * #forgotten}).
 */
final class Acknowledger {

  private static final Logger log = LoggerFactory.getLogger(Acknowledger.class);

  private final AckLedger ledger;
  private final ShareConsumerEngine engine;
  private final SinkDriverMetrics metrics;
  private final String taskName;

  Acknowledger(
      AckLedger ledger, ShareConsumerEngine engine, SinkDriverMetrics metrics, String taskName) {
    this.ledger = ledger;
    this.engine = engine;
    this.metrics = metrics;
    this.taskName = taskName;
  }

  /** Takes a decision from the ledger and queues it on the engine, atomically; returns it. */
  Acknowledgements settle(Function<AckLedger, Acknowledgements> decision) {
    synchronized (ledger) {
      Acknowledgements acks = decision.apply(ledger);
      send(acks);
      return acks;
    }
  }

  /**
   * Takes a decision from the ledger and sends it now, waiting up to {@code timeout} for the
   * broker's result of each range, and logs the failures (used at stop). The wait happens outside
   * the ledger's monitor, so the keeper's thread (which serves every task of the worker) is not
   * held up: the records decided on have left the ledger, so no later RENEW can name them, and
   * every RENEW made before was queued on the engine before the monitor was let go.
   */
  void settleAndWait(Function<AckLedger, Acknowledgements> decision, Duration timeout) {
    Acknowledgements acks;
    synchronized (ledger) {
      acks = decision.apply(ledger);
      if (acks.isEmpty()) {
        return;
      }
      count(acks);
    }
    for (AckResult result : engine.acknowledgeSync(acks, timeout)) {
      if (!result.ok()) {
        log.warn(
            "{}: acknowledgement {} failed: {} {}",
            taskName,
            result.range(),
            result.errorCode(),
            result.errorMessage());
      }
    }
  }

  /**
   * Sends what the driver has decided: REJECTs of records whose DLQ write is done and RELEASEs of
   * those whose write failed ({@code finished}), ACCEPTs of partitions with no DLQ write
   * outstanding ({@code blocked}: the runtime's promise that errant records reach the DLQ before
   * the framework commits their partition), and, unless {@code sync}, RENEWs of locks due. A
   * synchronous send (at stop) waits up to {@code wait} for the broker's results.
   */
  void sendDecisions(
      ErrantRecords.Finished finished,
      Predicate<TopicPartition> blocked,
      long nowMs,
      long renewMarginMs,
      boolean sync,
      Duration wait) {
    Function<AckLedger, Acknowledgements> decision =
        l -> {
          Acknowledgements acks = new Acknowledgements();
          merge(acks, l.take(finished.rejects(), AckType.REJECT));
          merge(acks, l.take(finished.failedWrites(), AckType.RELEASE));
          merge(acks, l.takeAccepted(blocked, nowMs, renewMarginMs, sync));
          if (!sync) {
            merge(acks, l.renewDue(nowMs, renewMarginMs));
          }
          return acks;
        };
    if (sync) {
      settleAndWait(decision, wait);
    } else {
      settle(decision);
    }
  }

  private static void merge(Acknowledgements into, Acknowledgements from) {
    for (Acknowledgements.Range r : from.ranges()) {
      into.add(r.topic(), r.partition(), r.firstOffset(), r.lastOffset(), r.type());
    }
  }

  /** RELEASEs every record put and not yet ACCEPTed (PUT or CONFIRMED): a preCommit failed. */
  void releasePut() {
    settle(
        l ->
            l.takeAll(
                entry ->
                    entry.state() == AckLedger.State.PUT
                        || entry.state() == AckLedger.State.CONFIRMED,
                AckType.RELEASE));
  }

  /**
   * Tells the engine which records the driver dropped, per partition: an engine that renews what it
   * handed out (the Java client's) would otherwise keep renewing them as held and never hand them
   * out again.
   */
  void forgotten(List<Entry> lost) {
    Map<TopicPartition, List<Long>> byPartition = new LinkedHashMap<>();
    for (Entry entry : lost) {
      byPartition.computeIfAbsent(entry.partition(), tp -> new ArrayList<>()).add(entry.offset());
    }
    byPartition.forEach((tp, offsets) -> engine.forgotten(tp.topic(), tp.partition(), offsets));
  }

  private void send(Acknowledgements acks) {
    if (acks.isEmpty()) {
      return;
    }
    count(acks);
    engine.acknowledge(acks);
  }

  private void count(Acknowledgements acks) {
    for (Acknowledgements.Range range : acks.ranges()) {
      long count = range.lastOffset() - range.firstOffset() + 1;
      switch (range.type()) {
        case ACCEPT -> metrics.recordsAccepted.addAndGet(count);
        case RELEASE -> metrics.recordsReleased.addAndGet(count);
        case REJECT -> metrics.recordsRejected.addAndGet(count);
        case RENEW -> metrics.recordsRenewed.addAndGet(count);
      }
    }
    metrics.inFlight(ledger.size());
  }
}

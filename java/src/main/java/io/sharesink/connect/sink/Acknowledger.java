package io.sharesink.connect.sink;

import io.sharesink.engine.AckResult;
import io.sharesink.engine.Acknowledgements;
import io.sharesink.engine.ShareConsumerEngine;
import java.time.Duration;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the ledger's decisions into acknowledgements on the engine. A decision is taken from the
 * ledger and queued on the engine while the ledger's monitor is held, so decisions from the task
 * thread and renewals from the lock keeper's thread reach the engine in the order the ledger made
 * them: a record's RENEW is always queued before its ACCEPT (an ACCEPT followed by a RENEW of the
 * same record would make the broker refuse the RENEW and roll back the rest of that partition's
 * acknowledgements in the request).
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
    metrics.recordsInFlight.set(ledger.size());
  }
}

package io.sharesink.connect.sink;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Counters of one driver, safe to read from any thread (metrics reporters). Latencies are kept as
 * count, total and max; averages are derived.
 */
public final class SinkDriverMetrics {

  /** A point-in-time copy. */
  public record Snapshot(
      long recordsPolled,
      long recordsPut,
      long recordsAccepted,
      long recordsReleased,
      long recordsRejected,
      long recordsRenewed,
      long redeliveries,
      long duplicatesIgnored,
      long putRetries,
      long puts,
      double putLatencyAvgMs,
      double putLatencyMaxMs,
      long commitCycles,
      double commitLatencyAvgMs,
      double commitLatencyMaxMs,
      long recordsInFlight) {}

  final AtomicLong recordsPolled = new AtomicLong();
  final AtomicLong recordsPut = new AtomicLong();
  final AtomicLong recordsAccepted = new AtomicLong();
  final AtomicLong recordsReleased = new AtomicLong();
  final AtomicLong recordsRejected = new AtomicLong();
  final AtomicLong recordsRenewed = new AtomicLong();
  final AtomicLong redeliveries = new AtomicLong();
  final AtomicLong duplicatesIgnored = new AtomicLong();
  final AtomicLong putRetries = new AtomicLong();
  final AtomicLong recordsInFlight = new AtomicLong();
  private final Latency put = new Latency();
  private final Latency commit = new Latency();

  private static final class Latency {
    final AtomicLong count = new AtomicLong();
    final AtomicLong totalNanos = new AtomicLong();
    final AtomicLong maxNanos = new AtomicLong();

    void record(long nanos) {
      count.incrementAndGet();
      totalNanos.addAndGet(nanos);
      maxNanos.accumulateAndGet(nanos, Math::max);
    }

    double avgMs() {
      long n = count.get();
      return n == 0 ? 0 : totalNanos.get() / 1e6 / n;
    }

    double maxMs() {
      return maxNanos.get() / 1e6;
    }
  }

  void recordPut(long nanos) {
    put.record(nanos);
  }

  void recordCommit(long nanos) {
    commit.record(nanos);
  }

  public Snapshot snapshot() {
    return new Snapshot(
        recordsPolled.get(),
        recordsPut.get(),
        recordsAccepted.get(),
        recordsReleased.get(),
        recordsRejected.get(),
        recordsRenewed.get(),
        redeliveries.get(),
        duplicatesIgnored.get(),
        putRetries.get(),
        put.count.get(),
        put.avgMs(),
        put.maxMs(),
        commit.count.get(),
        commit.avgMs(),
        commit.maxMs(),
        recordsInFlight.get());
  }
}

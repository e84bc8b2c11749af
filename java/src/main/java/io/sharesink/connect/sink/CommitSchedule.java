package io.sharesink.connect.sink;

/**
 * When the driver runs a commit cycle ({@code preCommit}, then ACCEPT of what it covers): every
 * {@code share.commit.interval.ms}; right away after {@code requestCommit()}; and on demand, at
 * most once per {@code share.commit.min.interval.ms}, once {@code share.commit.max.records} have
 * been put since the last cycle, when a poll returned nothing while records put since then are held
 * (the topic is drained, or the broker's in-flight window is used up), or while confirmed records
 * wait for the rest of their acquired range ({@link AckLedger#waitingForRange}).
 *
 * <p>Only records put since the last cycle count: a commit cycle is what moves records towards
 * ACCEPT, so one with nothing new put is pointless. Not thread-safe: the task thread owns it.
 */
final class CommitSchedule {

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

  private final long intervalMs;
  private final int maxRecords;
  private final long minIntervalMs;

  private long nextAtMs;
  private long lastAtMs = Long.MIN_VALUE / 2;
  private long putSinceCommit;
  private boolean lastPollEmpty;

  CommitSchedule(SinkDriverConfig config, long nowMs) {
    this.intervalMs = config.commitIntervalMs();
    this.maxRecords = config.commitMaxRecords();
    this.minIntervalMs = config.commitMinIntervalMs();
    this.nextAtMs = nowMs + intervalMs;
  }

  void polled(boolean empty) {
    lastPollEmpty = empty;
  }

  boolean lastPollEmpty() {
    return lastPollEmpty;
  }

  void put(int records) {
    putSinceCommit += records;
  }

  /** A commit cycle starts now. */
  void started(long nowMs) {
    lastAtMs = nowMs;
    nextAtMs = nowMs + intervalMs;
    putSinceCommit = 0;
  }

  /** The records put since the last cycle are gone (a restart puts them again). */
  void forgetPuts() {
    putSinceCommit = 0;
  }

  /** Whether an on-demand cycle is wanted; {@code waitingForRange} from the ledger. */
  boolean wanted(int waitingForRange) {
    return maxRecords > 0
        && putSinceCommit > 0
        && (lastPollEmpty || putSinceCommit >= maxRecords || waitingForRange > 0);
  }

  /** Whether a cycle is due now. */
  boolean due(long nowMs, boolean requested, int waitingForRange) {
    return requested
        || nowMs >= nextAtMs
        || (wanted(waitingForRange) && nowMs >= lastAtMs + minIntervalMs);
  }

  /** How long until a cycle is due (0 when it is), for the poll timeout. */
  long msUntilDue(long nowMs, int waitingForRange) {
    long until = nextAtMs - nowMs;
    if (wanted(waitingForRange)) {
      // Held back only by the minimum spacing: wake up for it rather than wait for records the
      // exhausted window will not lend.
      until = Math.min(until, lastAtMs + minIntervalMs - nowMs);
    }
    return Math.max(0, until);
  }

  /**
   * How long a poll may wait for records as far as commits go: until a cycle is due, and at most
   * {@link #HELD_POLL_MAX_MS} while records put since the last cycle are held.
   */
  long pollWaitMs(long nowMs, int waitingForRange) {
    long until = msUntilDue(nowMs, waitingForRange);
    return putSinceCommit > 0 ? Math.min(until, HELD_POLL_MAX_MS) : until;
  }

  /** How long until the next interval commit; negative when it is overdue. */
  long msUntilInterval(long nowMs) {
    return nextAtMs - nowMs;
  }
}
